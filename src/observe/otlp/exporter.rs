//! The exporter's two threads: one turns events into spans, one sends
//! them. A bounded queue sits between them; the run never waits on it.

use std::io::{BufRead, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};
use parking_lot::Mutex;
use prost::Message as _;

use crate::event::Event;
use crate::record::Turn;

use super::config::{OtlpConfig, OtlpError};
use super::proto::{
    ExportTraceServiceRequest, InstrumentationScope, KeyValue, Resource, ResourceSpans, ScopeSpans,
    Span,
};
use super::spans::SpanBuilder;

/// What an exporter delivered, and what it had to drop.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportReport {
    /// The traces URL (a password in it masked).
    pub endpoint: String,
    /// Spans the collector accepted.
    pub exported: u64,
    /// Spans dropped: the queue was full, or the collector was down, slow
    /// or answered an error.
    pub dropped: u64,
    /// Why the first span was lost.
    pub first_error: Option<String>,
}

impl std::fmt::Display for ExportReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "otlp: {} of {} spans dropped for {}",
            self.dropped,
            self.dropped + self.exported,
            self.endpoint
        )?;
        if let Some(e) = &self.first_error {
            write!(f, " (first: {e})")?;
        }
        Ok(())
    }
}

#[derive(Debug, Default)]
struct Stats {
    exported: AtomicU64,
    dropped: AtomicU64,
    first_error: Mutex<Option<String>>,
    /// Set once no more spans will come: the sender stops retrying.
    closing: AtomicBool,
    /// Set when a request to the collector failed.
    post_failed: AtomicBool,
}

impl Stats {
    fn drop_spans(&self, n: usize, why: impl FnOnce() -> String) {
        self.dropped.fetch_add(n as u64, Ordering::Relaxed);
        let mut first = self.first_error.lock();
        if first.is_none() {
            let why = why();
            log::debug!("otlp: {n} spans dropped: {why}");
            *first = Some(why);
        }
    }
}

/// Sends a run's spans to an OTLP/HTTP collector from background threads.
///
/// # Examples
///
/// ```no_run
/// use boardroom::{Runtime, Team};
/// use boardroom::otlp::{OtlpConfig, OtlpExporter};
/// use boardroom::testing::Sim;
///
/// let exporter = OtlpExporter::start(OtlpConfig::new("http://127.0.0.1:6006")?)?;
/// let run = Runtime::new(Team::builtin()?, Sim::new())
///     .events(exporter.events())
///     .run("Plan a picnic")?;
/// let report = exporter.finish();               // waits at most about one request timeout
/// if report.dropped > 0 {
///     eprintln!("{report}");
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct OtlpExporter {
    events: Option<Sender<Event>>,
    builder: Option<JoinHandle<()>>,
    sender: Option<JoinHandle<()>>,
    stats: Arc<Stats>,
    endpoint: String,
}

impl OtlpExporter {
    /// Starts the exporter's threads.
    ///
    /// # Errors
    ///
    /// [`OtlpError::Thread`] when a thread cannot be spawned.
    pub fn start(config: OtlpConfig) -> Result<Self, OtlpError> {
        Self::start_with_turns(config, None)
    }

    /// Like [`start`](Self::start); with content on, prompts and answers
    /// are read from `runs_dir/<run id>/turns.jsonl` as the run writes it.
    ///
    /// # Errors
    ///
    /// [`OtlpError::Thread`] when a thread cannot be spawned.
    pub fn start_with_turns(
        config: OtlpConfig,
        runs_dir: Option<PathBuf>,
    ) -> Result<Self, OtlpError> {
        let stats = Arc::new(Stats::default());
        let (events_tx, events_rx) = crossbeam_channel::unbounded::<Event>();
        let (spans_tx, spans_rx) = crossbeam_channel::bounded::<Span>(config.queue);
        let endpoint = config.shown_endpoint();
        let post = Poster::new(&config);
        let s = Arc::clone(&stats);
        let batch = config.batch;
        let sender = std::thread::Builder::new()
            .name("boardroom-otlp-send".into())
            .spawn(move || send_loop(&spans_rx, &post, batch, &s))
            .map_err(|e| OtlpError::Thread(std::sync::Arc::new(e)))?;
        let s = Arc::clone(&stats);
        let content = config.content;
        let builder = std::thread::Builder::new()
            .name("boardroom-otlp-spans".into())
            .spawn(move || build_loop(&events_rx, &spans_tx, content, runs_dir, &s))
            .map_err(|e| OtlpError::Thread(std::sync::Arc::new(e)))?;
        Ok(OtlpExporter {
            events: Some(events_tx),
            builder: Some(builder),
            sender: Some(sender),
            stats,
            endpoint,
        })
    }

    /// A sender for the run's events (never blocks: the channel is
    /// unbounded and drained at once into spans).
    #[must_use]
    pub fn events(&self) -> Sender<Event> {
        self.events
            .clone()
            .unwrap_or_else(|| crossbeam_channel::unbounded().0)
    }

    /// What was delivered and dropped so far (the run may still be going).
    #[must_use]
    pub fn report(&self) -> ExportReport {
        report(&self.stats, &self.endpoint)
    }

    /// Waits for the spans in flight once every event sender is dropped,
    /// and says what was delivered. When the collector has failed,
    /// what is still queued is dropped rather than waited for; a slow
    /// collector holds this up by at most about one request timeout.
    #[must_use]
    pub fn finish(mut self) -> ExportReport {
        self.events = None;
        if let Some(b) = self.builder.take() {
            let _ = b.join();
        }
        if let Some(s) = self.sender.take() {
            let _ = s.join();
        }
        report(&self.stats, &self.endpoint)
    }
}

fn report(stats: &Stats, endpoint: &str) -> ExportReport {
    ExportReport {
        endpoint: endpoint.to_string(),
        exported: stats.exported.load(Ordering::Relaxed),
        dropped: stats.dropped.load(Ordering::Relaxed),
        first_error: stats.first_error.lock().clone(),
    }
}

fn build_loop(
    events: &Receiver<Event>,
    spans: &Sender<Span>,
    content: bool,
    runs_dir: Option<PathBuf>,
    stats: &Stats,
) {
    let mut builder = SpanBuilder::new(content);
    let mut turns = runs_dir.filter(|_| content).map(TurnTail::new);
    let queue = |out: Vec<Span>| {
        for span in out {
            match spans.try_send(span) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    stats.drop_spans(1, || "the export queue is full (collector too slow)".into());
                }
                Err(TrySendError::Disconnected(_)) => stats.drop_spans(1, || "sender ended".into()),
            }
        }
    };
    for event in events {
        if let (Some(tail), crate::event::EventKind::TurnCompleted { .. }) =
            (&mut turns, &event.kind)
        {
            for turn in tail.read(&event.run_id) {
                builder.add_turn(turn);
            }
        }
        queue(builder.push(&event));
    }
    queue(builder.finish());
    stats.closing.store(true, Ordering::Relaxed);
}

/// How long the sender waits for more spans to join a batch.
const GATHER: Duration = Duration::from_millis(100);

fn send_loop(spans: &Receiver<Span>, post: &Poster, batch: usize, stats: &Stats) {
    let mut closing_since: Option<Instant> = None;
    loop {
        let Ok(first) = spans.recv() else { return };
        let mut chunk = vec![first];
        // Gather what comes within a moment, up to a batch.
        let until = Instant::now() + GATHER;
        while chunk.len() < batch {
            match spans.recv_deadline(until) {
                Ok(s) => chunk.push(s),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        if stats.closing.load(Ordering::Relaxed) {
            let since = *closing_since.get_or_insert_with(Instant::now);
            // Shutting down: after a failed request, or once a request's
            // time is spent, what is left is dropped instead of waited for.
            if stats.post_failed.load(Ordering::Relaxed) || since.elapsed() > post.timeout {
                stats.drop_spans(chunk.len(), || "shut down before delivery".into());
                continue;
            }
        }
        match post.send(chunk) {
            Ok(n) => {
                stats.exported.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err((n, why)) => {
                stats.post_failed.store(true, Ordering::Relaxed);
                stats.drop_spans(n, || why);
            }
        }
    }
}

/// One POST of protobuf spans.
struct Poster {
    agent: ureq::Agent,
    endpoint: String,
    headers: Vec<(String, String)>,
    service_name: String,
    timeout: Duration,
}

impl Poster {
    fn new(config: &OtlpConfig) -> Self {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        Poster {
            agent,
            endpoint: config.endpoint.clone(),
            headers: config.headers.clone(),
            service_name: config.service_name.clone(),
            timeout: config.timeout,
        }
    }

    /// Sends the spans; the count sent, or the count lost and why.
    fn send(&self, spans: Vec<Span>) -> Result<usize, (usize, String)> {
        let n = spans.len();
        let body = encode(&self.service_name, spans);
        let mut req = self
            .agent
            .post(&self.endpoint)
            .header("Content-Type", "application/x-protobuf");
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        match req.send(&body[..]) {
            Ok(resp) if resp.status().is_success() => Ok(n),
            Ok(resp) => Err((
                n,
                format!("collector answered http {}", resp.status().as_u16()),
            )),
            Err(e) => Err((n, e.to_string())),
        }
    }
}

/// `s` with every known secret masked (issue 28).
fn mask_string(s: &mut String) {
    if let std::borrow::Cow::Owned(m) = crate::util::secrets::mask(s) {
        *s = m;
    }
}

fn mask_any(v: &mut super::proto::AnyValue) {
    use super::proto::Value;
    match &mut v.value {
        Some(Value::String(s)) => mask_string(s),
        Some(Value::Array(a)) => a.values.iter_mut().for_each(mask_any),
        _ => {}
    }
}

/// Every text of a span (its name, attributes and status) with every known
/// secret masked: a key an endpoint echoed into an answer is not exported
/// with the content (issue 28).
fn mask_span(span: &mut Span) {
    mask_string(&mut span.name);
    for kv in &mut span.attributes {
        if let Some(v) = &mut kv.value {
            mask_any(v);
        }
    }
    if let Some(status) = &mut span.status {
        mask_string(&mut status.message);
    }
}

fn encode(service_name: &str, mut spans: Vec<Span>) -> Vec<u8> {
    if crate::util::secrets::any() {
        spans.iter_mut().for_each(mask_span);
    }
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![
                    KeyValue::str("service.name", service_name),
                    KeyValue::str("telemetry.sdk.name", "boardroom"),
                    KeyValue::str("telemetry.sdk.language", "rust"),
                    KeyValue::str("telemetry.sdk.version", env!("CARGO_PKG_VERSION")),
                ],
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "boardroom".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }),
                spans,
            }],
        }],
    }
    .encode_to_vec()
}

/// Reads `turns.jsonl` of a live run from where it stopped last time.
struct TurnTail {
    runs_dir: PathBuf,
    offset: u64,
}

impl TurnTail {
    fn new(runs_dir: PathBuf) -> Self {
        TurnTail {
            runs_dir,
            offset: 0,
        }
    }

    fn read(&mut self, run_id: &str) -> Vec<Turn> {
        let path = self.runs_dir.join(run_id).join("turns.jsonl");
        let Ok(mut file) = std::fs::File::open(&path) else {
            return Vec::new();
        };
        if file.seek(SeekFrom::Start(self.offset)).is_err() {
            return Vec::new();
        }
        let mut reader = std::io::BufReader::new(file);
        let mut out = Vec::new();
        let mut line = String::new();
        while let Ok(n) = reader.read_line(&mut line) {
            if n == 0 || !line.ends_with('\n') {
                break;
            }
            self.offset += n as u64;
            if let Ok(turn) = serde_json::from_str::<Turn>(&line) {
                out.push(turn);
            }
            line.clear();
        }
        out
    }
}

/// Sends the trace of the saved run in `dir` (its `events.jsonl`, and
/// `turns.jsonl` for content), synchronously.
///
/// # Errors
///
/// [`OtlpError::Store`] when the run's files cannot be read,
/// [`OtlpError::NoEvents`] when it has no events. A collector
/// that fails is not an error here: the report counts what was dropped.
pub fn export_run(dir: &Path, config: &OtlpConfig) -> Result<ExportReport, OtlpError> {
    let events =
        crate::store::read_events(dir).map_err(|e| OtlpError::Store(std::sync::Arc::new(e)))?;
    if events.items.is_empty() {
        return Err(OtlpError::NoEvents {
            dir: dir.to_path_buf(),
        });
    }
    let mut builder = SpanBuilder::new(config.content);
    if builder.content() {
        let turns =
            crate::store::read_turns(dir).map_err(|e| OtlpError::Store(std::sync::Arc::new(e)))?;
        for t in turns.items {
            builder.add_turn(t);
        }
    }
    let mut spans = Vec::new();
    for e in &events.items {
        spans.extend(builder.push(e));
    }
    spans.extend(builder.finish());
    debug_assert!(builder.run_id().is_some());
    let post = Poster::new(config);
    let stats = Stats::default();
    while !spans.is_empty() {
        let rest = spans.split_off(spans.len().min(config.batch));
        let chunk = std::mem::replace(&mut spans, rest);
        match post.send(chunk) {
            Ok(n) => {
                stats.exported.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err((n, why)) => {
                stats.drop_spans(n, || why);
                // The collector failed: do not try the rest one by one.
                stats.drop_spans(spans.len(), String::new);
                spans.clear();
            }
        }
    }
    Ok(report(&stats, &config.shown_endpoint()))
}
