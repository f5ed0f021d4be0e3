//! Reading an MCP server's event streams: a request's stream until its
//! response, resumed after a cut, and the session's listening stream.

use super::*;

impl Inner {
    /// Reads an event stream until the expected response (or its end, or
    /// `deadline`: then a request's stream is cut as a timeout, another
    /// one ends as if closed).
    pub(super) fn read_stream<R: std::io::BufRead>(
        &self,
        events: &mut SseReader<R>,
        session: &Session,
        expect: Option<u64>,
        method: &str,
        within: Within,
    ) -> Result<Outcome, McpError> {
        loop {
            if Instant::now() >= within.deadline {
                return match expect {
                    Some(_) => Err(self.unreachable(&format!("{method}: the time is up"))),
                    None => Ok(Outcome::Done),
                };
            }
            let end = events.next_event();
            match end {
                Ok(Some(ref event)) => {
                    if event.data.trim().is_empty() {
                        continue; // a priming event: only its id matters
                    }
                    // At most MAX_VALUES parsed values, as on stdio.
                    let msg: Value = match super::super::lines::parse_message(event.data.as_bytes())
                    {
                        Ok(v) => v,
                        Err(e) => {
                            log::debug!("mcp '{}': an event that is not JSON ({e})", self.server);
                            continue;
                        }
                    };
                    let delivered = self.route(msg, session, within);
                    if expect.is_some() && delivered == expect {
                        return Ok(Outcome::Done);
                    }
                }
                Ok(None) | Err(SseError::Io(_))
                    if expect.is_none_or(|id| !session.is_waiting(id)) =>
                {
                    return Ok(Outcome::Done);
                }
                Ok(None) | Err(SseError::Io(_)) => {
                    if let Err(SseError::Io(e)) = &end {
                        log::debug!("mcp '{}': {method}: the stream broke: {e}", self.server);
                    }
                    return match events.last_id.take() {
                        Some(id) => Ok(Outcome::Resume(id, events.retry)),
                        None => Err(self.unreachable(&format!(
                            "{method}: the server closed the stream before answering"
                        ))),
                    };
                }
                Err(SseError::TooLong(limit)) => {
                    return Err(McpError::LineTooLong {
                        stream: "the event stream",
                        limit,
                    });
                }
            }
        }
    }

    /// Polls for the rest of a cut stream: GET with `Last-Event-ID` after
    /// the server's `retry:` delay, a bounded number of times.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn resume(
        &self,
        session: &Session,
        expect: Option<u64>,
        method: &str,
        mut last_id: String,
        mut retry: Option<Duration>,
        within: Within,
        timeout: Duration,
    ) -> Result<(), McpError> {
        let deadline = within.deadline;
        for _ in 0..RESUMES {
            let wait = retry.unwrap_or(DEFAULT_RETRY).min(MAX_RETRY);
            if Instant::now() + wait >= deadline {
                break;
            }
            std::thread::sleep(wait);
            let left = deadline.saturating_duration_since(Instant::now());
            let req = self.with_session(
                self.agent
                    .get(&self.url)
                    .config()
                    .timeout_global(Some(left.max(Duration::from_millis(1))))
                    .build()
                    .header("Accept", "text/event-stream")
                    .header("Last-Event-ID", &last_id),
            );
            let response = match req.call() {
                Ok(r) if r.status().as_u16() == 200 => r,
                Ok(r) => {
                    return Err(McpError::Http {
                        status: r.status().as_u16(),
                        detail: format!("{method}: resuming the stream with a GET"),
                    });
                }
                Err(ureq::Error::Timeout(_)) => break,
                Err(e) => return Err(self.unreachable_from(&e.to_string(), Some(e))),
            };
            let reader = BufReader::new(response.into_body().into_reader());
            let mut events = SseReader::new(reader, MAX_LINE);
            events.last_id = Some(last_id.clone());
            events.retry = retry;
            match self.read_stream(&mut events, session, expect, method, within)? {
                Outcome::Done => return Ok(()),
                Outcome::Resume(id, r) => {
                    last_id = id;
                    retry = r;
                }
            }
        }
        Err(McpError::Timeout {
            method: method.to_string(),
            after: timeout,
        })
    }

    /// The listener thread: keeps a GET stream open for messages the server
    /// sends on its own, reconnecting with `Last-Event-ID`, until `stop`
    /// is dropped.
    pub(super) fn listen(
        &self,
        first: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
        session: &Session,
        stop: &Receiver<()>,
    ) {
        let mut last_id: Option<String> = None;
        let mut retry: Option<Duration> = None;
        let mut failures = 0;
        let stopped = |wait: Duration| {
            matches!(
                stop.recv_timeout(wait),
                Err(RecvTimeoutError::Disconnected) | Ok(())
            )
        };
        let mut next = Some(first);
        loop {
            if matches!(stop.try_recv(), Err(TryRecvError::Disconnected)) || !session.is_alive() {
                return;
            }
            let opened = match next.take() {
                Some(r) => r,
                None => self.open_stream(last_id.as_deref()),
            };
            match opened {
                Ok(r) if r.status().as_u16() == 200 => {
                    failures = 0;
                    let reader = BufReader::new(r.into_body().into_reader());
                    let mut events = SseReader::new(reader, MAX_LINE);
                    events.last_id = last_id.take();
                    events.retry = retry;
                    let window = Within {
                        deadline: Instant::now() + LISTEN_WINDOW,
                        answer: true,
                    };
                    if let Err(e) = self.read_stream(&mut events, session, None, "GET", window) {
                        log::warn!("mcp '{}': the listening stream: {e}", self.server);
                        return;
                    }
                    last_id = events.last_id;
                    retry = events.retry;
                }
                Ok(r) if r.status().as_u16() == 405 => {
                    log::debug!("mcp '{}': the server offers no GET stream", self.server);
                    return;
                }
                Ok(r) => {
                    failures += 1;
                    log::debug!(
                        "mcp '{}': GET stream: http {}",
                        self.server,
                        r.status().as_u16()
                    );
                }
                Err(ureq::Error::Timeout(_)) => continue,
                Err(e) => {
                    failures += 1;
                    log::debug!(
                        "mcp '{}': GET stream: {}",
                        self.server,
                        self.mask(&e.to_string())
                    );
                }
            }
            if failures >= LISTEN_FAILURES {
                log::debug!("mcp '{}': giving up the GET stream", self.server);
                return;
            }
            if stopped(retry.unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)) {
                return;
            }
        }
    }
}
