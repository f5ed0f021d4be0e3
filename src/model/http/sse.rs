//! Server-sent events, decoded from bytes as they arrive: a line or a UTF-8
//! character may be split across reads, events end at a blank line, and
//! only `data:` fields matter here (several join with a newline).

/// The largest event taken from a stream (32 MiB, as an answer): a line
/// or an event that grows past it is an error, not an allocation.
pub(crate) const MAX_EVENT_BYTES: usize = 32 * 1024 * 1024;

/// Turns a byte stream into the data of each complete event. Every byte is
/// looked at a bounded number of times however long its line: decoding is
/// linear in the stream's length.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    /// Bytes of an unfinished line (never holds a newline).
    pending: Vec<u8>,
    /// `data:` lines of the event being read.
    data: Vec<String>,
    /// Bytes held in `data`.
    data_len: usize,
    /// Bytes scanned for line ends so far (to prove linearity in tests).
    scanned: u64,
}

impl SseDecoder {
    /// Feeds the next bytes; returns the data of every event they complete.
    ///
    /// # Errors
    ///
    /// A line or an event larger than [`MAX_EVENT_BYTES`].
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        let mut rest = bytes;
        // Only the new bytes are searched: `pending` holds no newline.
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            self.scanned += pos as u64 + 1;
            let mut line = std::mem::take(&mut self.pending);
            line.extend_from_slice(&rest[..pos]);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            self.line(&String::from_utf8_lossy(&line), &mut out)?;
            rest = &rest[pos + 1..];
        }
        self.scanned += rest.len() as u64;
        self.pending.extend_from_slice(rest);
        if self.pending.len() + self.data_len > MAX_EVENT_BYTES {
            return Err(too_large());
        }
        Ok(out)
    }

    /// The end of the stream: the last event, if it was not closed by a
    /// blank line.
    ///
    /// # Errors
    ///
    /// As [`SseDecoder::push`].
    pub(crate) fn finish(&mut self) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        if !self.pending.is_empty() {
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
            self.line(line.trim_end_matches('\r'), &mut out)?;
        }
        self.line("", &mut out)?;
        Ok(out)
    }

    /// Bytes looked at so far.
    #[cfg(test)]
    pub(crate) fn scanned(&self) -> u64 {
        self.scanned
    }

    fn line(&mut self, line: &str, out: &mut Vec<String>) -> Result<(), String> {
        if line.is_empty() {
            if !self.data.is_empty() {
                out.push(self.data.join("\n"));
                self.data.clear();
                self.data_len = 0;
            }
            return Ok(());
        }
        if line.starts_with(':') {
            return Ok(()); // a comment (keep-alive)
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        if field == "data" {
            let value = value.strip_prefix(' ').unwrap_or(value);
            self.data_len += value.len() + 1;
            if self.data_len > MAX_EVENT_BYTES {
                return Err(too_large());
            }
            self.data.push(value.to_string());
        }
        Ok(())
    }
}

fn too_large() -> String {
    format!(
        "a server-sent event larger than {} MiB",
        MAX_EVENT_BYTES >> 20
    )
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
                got.extend(d.push(chunk).unwrap());
            }
            got.extend(d.finish().unwrap());
            assert_eq!(got, want, "chunk size {size}");
        }
    }

    #[test]
    fn unterminated_last_event() {
        let mut d = SseDecoder::default();
        assert!(d.push(b"data: tail").unwrap().is_empty());
        assert_eq!(d.finish().unwrap(), vec!["tail"]);
    }

    /// Issue 8, finding 7: one 16 MiB line in 8 KiB reads is decoded by
    /// looking at each byte once (the old decoder rescanned the whole
    /// pending line on every read: quadratic), and a line past the cap is
    /// an error, not an allocation.
    #[test]
    fn a_huge_line_is_linear_and_capped() {
        let mut d = SseDecoder::default();
        let line_len = 16 * 1024 * 1024;
        let mut fed = 0u64;
        let head = b"data: \"";
        fed += head.len() as u64;
        d.push(head).unwrap();
        let chunk = vec![b'x'; 8192];
        for _ in 0..line_len / chunk.len() {
            assert!(d.push(&chunk).unwrap().is_empty());
            fed += chunk.len() as u64;
        }
        let got = d.push(b"\"\n\n").unwrap();
        fed += 3;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].len(), line_len + 2);
        assert_eq!(d.scanned(), fed, "every byte looked at once");

        let mut d = SseDecoder::default();
        let mut err = None;
        for _ in 0..(MAX_EVENT_BYTES / chunk.len() + 2) {
            if let Err(e) = d.push(&chunk) {
                err = Some(e);
                break;
            }
        }
        assert_eq!(
            err.as_deref(),
            Some("a server-sent event larger than 32 MiB")
        );
    }

    mod props {
        use super::super::SseDecoder;
        use proptest::prelude::*;

        fn decode(chunks: &[&[u8]]) -> Vec<String> {
            let mut d = SseDecoder::default();
            let mut got = Vec::new();
            for c in chunks {
                got.extend(d.push(c).unwrap());
            }
            got.extend(d.finish().unwrap());
            got
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 10_000, ..ProptestConfig::default() })]

            /// Any bytes (event-shaped or not, invalid UTF-8 included), cut
            /// anywhere: no panic, and the same events however it is cut.
            #[test]
            fn any_stream_decodes_the_same_however_cut(
                parts in prop::collection::vec(
                    prop_oneof![
                        Just(b"data: ".to_vec()),
                        Just(b"\n".to_vec()),
                        Just(b"\r\n".to_vec()),
                        Just(b":keep\n".to_vec()),
                        Just("é".as_bytes().to_vec()),
                        prop::collection::vec(any::<u8>(), 0..8),
                    ],
                    0..24,
                ),
                cut in any::<prop::sample::Index>(),
            ) {
                let bytes: Vec<u8> = parts.concat();
                let at = cut.index(bytes.len() + 1);
                let whole = decode(&[&bytes]);
                let (a, b) = bytes.split_at(at);
                prop_assert_eq!(decode(&[a, b]), whole);
            }
        }
    }
}
