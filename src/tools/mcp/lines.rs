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
}
