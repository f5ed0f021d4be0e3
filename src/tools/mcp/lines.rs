//! Reading lines with a cap: a server that writes an endless line (say
//! `cat /dev/zero`) must not make us allocate until the process aborts.

use std::io::{self, BufRead};

/// The longest line (a JSON-RPC message on stdio, an SSE line over HTTP) a
/// server may write: 16 MiB.
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// A whole line is in the buffer (without its `\n` or `\r\n`).
    Line,
    /// The line passed the cap; the buffer holds its first `cap` bytes and
    /// the rest of the line was not read.
    TooLong,
    /// The end of the input, with no bytes of an unfinished line (a last
    /// line without `\n` comes back as [`Read::Line`] first).
    Eof,
}

/// Reads one line into `buf` (cleared first), keeping at most `cap` bytes.
///
/// # Errors
///
/// The reader's I/O error.
pub(crate) fn read_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Read> {
    buf.clear();
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(if buf.is_empty() {
                Read::Eof
            } else {
                Read::Line
            });
        }
        let (chunk, found) = match available.iter().position(|&b| b == b'\n') {
            Some(pos) => (&available[..pos], Some(pos + 1)),
            None => (available, None),
        };
        if buf.len() + chunk.len() > cap {
            let room = cap - buf.len();
            buf.extend_from_slice(&chunk[..room]);
            let used = room;
            reader.consume(used);
            return Ok(Read::TooLong);
        }
        buf.extend_from_slice(chunk);
        let used = found.unwrap_or(chunk.len());
        reader.consume(used);
        if found.is_some() {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Read::Line);
        }
    }
}

/// Skips the rest of the current line; `false` at the end of the input.
///
/// # Errors
///
/// The reader's I/O error.
pub(crate) fn skip_line(reader: &mut impl BufRead) -> io::Result<bool> {
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(false);
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(pos) => {
                reader.consume(pos + 1);
                return Ok(true);
            }
            None => {
                let n = available.len();
                reader.consume(n);
            }
        }
    }
}

/// JSON values one message from a server may hold (issue 28: 500,000
/// small items in one 12 MB line took 808 MB as parsed values). Far above
/// a listing of a few thousand files with their fields.
pub(crate) const MAX_VALUES: usize = 200_000;

/// Tools one server may list (a model takes far fewer in one request).
pub(crate) const MAX_TOOLS: usize = 1000;

/// The JSON-RPC error code of the answer [`parse_message`] puts in place of
/// a message of more than [`MAX_VALUES`] values (one of the codes JSON-RPC
/// leaves to implementations).
pub(crate) const TOO_MANY_VALUES: i64 = -32099;

/// Whether `text` holds more than [`MAX_VALUES`] JSON values.
pub(crate) fn too_many_values(text: &[u8]) -> bool {
    values_in(text, MAX_VALUES) > MAX_VALUES
}

/// How many JSON values `line` holds, about: the opening brackets and
/// separators outside strings, plus one. Stops counting past `cap`.
fn values_in(line: &[u8], cap: usize) -> usize {
    let (mut n, mut in_string, mut escaped) = (1usize, false, false);
    for &b in line {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else if matches!(b, b'{' | b'[' | b',') {
            n += 1;
            if n > cap {
                break;
            }
        }
    }
    n
}

/// Parses one JSON-RPC message, holding at most [`MAX_VALUES`] parsed
/// values: a message with more becomes an error answer to its request (its
/// `id` read without building the rest), so the call fails with a message
/// that says why instead of taking the memory.
///
/// # Errors
///
/// What `serde_json` says of a line that is not JSON.
pub(crate) fn parse_message(line: &[u8]) -> serde_json::Result<serde_json::Value> {
    if !too_many_values(line) {
        return serde_json::from_slice(line);
    }
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(default)]
        id: serde_json::Value,
    }
    let head: Head = serde_json::from_slice(line)?;
    Ok(serde_json::json!({
        "jsonrpc": "2.0",
        "id": head.id,
        "error": {
            "code": TOO_MANY_VALUES,
            "message": format!(
                "the server's answer holds more than {MAX_VALUES} JSON values \
                 ({} bytes); boardroom keeps at most {MAX_VALUES}",
                line.len()
            ),
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_up_to_the_cap() {
        let mut r = io::BufReader::with_capacity(4, &b"ab\r\ncdefgh\nij\nlast"[..]);
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut r, &mut buf, 5).unwrap(), Read::Line);
        assert_eq!(buf, b"ab");
        assert_eq!(read_line(&mut r, &mut buf, 5).unwrap(), Read::TooLong);
        assert_eq!(buf, b"cdefg");
        assert!(skip_line(&mut r).unwrap());
        assert_eq!(read_line(&mut r, &mut buf, 5).unwrap(), Read::Line);
        assert_eq!(buf, b"ij");
        assert_eq!(read_line(&mut r, &mut buf, 5).unwrap(), Read::Line);
        assert_eq!(buf, b"last");
        assert_eq!(read_line(&mut r, &mut buf, 5).unwrap(), Read::Eof);
    }

    #[test]
    fn an_endless_line_stops_at_the_cap() {
        let mut r = io::BufReader::new(io::repeat(b'x'));
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut r, &mut buf, 1 << 20).unwrap(), Read::TooLong);
        assert_eq!(buf.len(), 1 << 20);
    }

    /// Issue 28 (5): 500,000 small items are an error answer to their
    /// request, not 800 MB of parsed values.
    #[test]
    fn a_message_of_too_many_values_becomes_an_error_answer() {
        let items = vec!["{\"a\":1}"; 500_000].join(",");
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"content\":[{items}]}}}}");
        let msg = parse_message(line.as_bytes()).unwrap();
        assert_eq!(msg["id"], 7);
        assert!(msg.get("result").is_none());
        let text = msg["error"]["message"].as_str().unwrap();
        assert!(
            text.starts_with("the server's answer holds more than 200000 JSON values"),
            "{text}"
        );
        // Commas inside strings do not count; an ordinary answer parses.
        let ok = format!(
            "{{\"id\":1,\"result\":{{\"text\":\"{}\"}}}}",
            ",".repeat(300_000)
        );
        assert_eq!(parse_message(ok.as_bytes()).unwrap()["id"], 1);
    }
}
