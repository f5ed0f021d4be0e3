//! Server-sent events, decoded from bytes as they arrive: a line or a UTF-8
//! character may be split across reads, events end at a blank line, and
//! only `data:` fields matter here (several join with a newline).

/// Turns a byte stream into the data of each complete event.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    /// Bytes of an unfinished line.
    pending: Vec<u8>,
    /// `data:` lines of the event being read.
    data: Vec<String>,
}

impl SseDecoder {
    /// Feeds the next bytes; returns the data of every event they complete.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        self.pending.extend_from_slice(bytes);
        while let Some(pos) = self.pending.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.pending.drain(..=pos).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            self.line(&String::from_utf8_lossy(&line), &mut out);
        }
        out
    }

    /// The end of the stream: the last event, if it was not closed by a
    /// blank line.
    pub(crate) fn finish(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.pending.is_empty() {
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
            self.line(line.trim_end_matches('\r'), &mut out);
        }
        self.line("", &mut out);
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<String>) {
        if line.is_empty() {
            if !self.data.is_empty() {
                out.push(self.data.join("\n"));
                self.data.clear();
            }
            return;
        }
        if line.starts_with(':') {
            return; // a comment (keep-alive)
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        if field == "data" {
            self.data
                .push(value.strip_prefix(' ').unwrap_or(value).to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = "data: {\"a\":1}\n\n: keep-alive\n\ndata: {\"b\":\"é\"}\r\n\r\nevent: x\ndata: one\ndata: two\n\ndata: [DONE]\n\n";

    #[test]
    fn events_survive_any_split() {
        let want = vec!["{\"a\":1}", "{\"b\":\"é\"}", "one\ntwo", "[DONE]"];
        let bytes = STREAM.as_bytes();
        for size in 1..=bytes.len() {
            let mut d = SseDecoder::default();
            let mut got = Vec::new();
            for chunk in bytes.chunks(size) {
                got.extend(d.push(chunk));
            }
            got.extend(d.finish());
            assert_eq!(got, want, "chunk size {size}");
        }
    }

    #[test]
    fn unterminated_last_event() {
        let mut d = SseDecoder::default();
        assert!(d.push(b"data: tail").is_empty());
        assert_eq!(d.finish(), vec!["tail"]);
    }
}
