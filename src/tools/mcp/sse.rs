//! Server-sent events as MCP's Streamable HTTP uses them: besides `data:`,
//! the event `id:` (to resume with `Last-Event-ID`) and the `retry:` delay
//! (how long to wait before reconnecting) matter.
//!
//! The model client's decoder (`model::openai::sse`) keeps only `data:`;
//! this one reads from a blocking reader, line by line with the
//! [`MAX_LINE`](super::lines::MAX_LINE) cap, in linear time.

use std::io::{self, BufRead};
use std::time::Duration;

use super::lines::{Read, read_line};

/// One event: its data lines joined with `\n`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// The `data:` lines, joined (empty for a priming event).
    pub(crate) data: String,
}

/// Why reading an event stream stopped.
#[derive(Debug)]
pub(crate) enum SseError {
    /// A line passed the cap.
    TooLong(usize),
    /// The connection failed.
    Io(io::Error),
}

/// Reads events from a stream, remembering the last event id and the
/// last `retry:` delay the server gave.
#[derive(Debug)]
pub(crate) struct SseReader<R> {
    reader: R,
    cap: usize,
    line: Vec<u8>,
    /// The id of the last event seen (carried across reconnections).
    pub(crate) last_id: Option<String>,
    /// The last `retry:` the server sent.
    pub(crate) retry: Option<Duration>,
}

impl<R: BufRead> SseReader<R> {
    /// Reads `reader`, with lines capped at `cap` bytes.
    pub(crate) fn new(reader: R, cap: usize) -> Self {
        SseReader {
            reader,
            cap,
            line: Vec::new(),
            last_id: None,
            retry: None,
        }
    }

    /// The next complete event; `Ok(None)` at the end of the stream.
    pub(crate) fn next_event(&mut self) -> Result<Option<Event>, SseError> {
        let mut data: Option<String> = None;
        let mut has_data = false;
        loop {
            match read_line(&mut self.reader, &mut self.line, self.cap).map_err(SseError::Io)? {
                Read::TooLong => return Err(SseError::TooLong(self.cap)),
                // An event not closed by a blank line at the end of the
                // stream is dropped, as the SSE spec says.
                Read::Eof => return Ok(None),
                Read::Line => {}
            }
            if self.line.is_empty() {
                match data.take() {
                    Some(d) => return Ok(Some(Event { data: d })),
                    // A blank line that ends nothing.
                    None => continue,
                }
            }
            let text = String::from_utf8_lossy(&self.line);
            if text.starts_with(':') {
                continue;
            }
            let (field, value) = text.split_once(':').unwrap_or((&text, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "data" => {
                    let d = data.get_or_insert_with(String::new);
                    if has_data {
                        d.push('\n');
                    }
                    has_data = true;
                    d.push_str(value);
                    if d.len() > self.cap {
                        return Err(SseError::TooLong(self.cap));
                    }
                }
                "id" if !value.contains('\0') => {
                    self.last_id = Some(value.to_string());
                    // An event with only an id still ends at the blank line.
                    data.get_or_insert_with(String::new);
                }
                "retry" => {
                    if let Ok(ms) = value.trim().parse::<u64>() {
                        self.retry = Some(Duration::from_millis(ms));
                    }
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> (Vec<String>, Option<String>, Option<Duration>) {
        let mut r = SseReader::new(io::BufReader::with_capacity(3, text.as_bytes()), 1024);
        let mut out = Vec::new();
        while let Some(e) = r.next_event().unwrap() {
            out.push(e.data);
        }
        (out, r.last_id, r.retry)
    }

    #[test]
    fn data_ids_and_retry() {
        let (events, id, retry) = all(
            "id: e1\nretry: 500\ndata: \n\n: keep-alive\n\nevent: message\nid: e2\ndata: {\"a\":1}\r\n\r\ndata: x\ndata: y\n\n",
        );
        assert_eq!(events, ["", "{\"a\":1}", "x\ny"]);
        assert_eq!(id.as_deref(), Some("e2"));
        assert_eq!(retry, Some(Duration::from_millis(500)));
    }

    #[test]
    fn a_long_line_is_an_error() {
        let text = format!("data: {}\n\n", "x".repeat(2000));
        let mut r = SseReader::new(text.as_bytes(), 1024);
        assert!(matches!(r.next_event(), Err(SseError::TooLong(1024))));
    }
}
