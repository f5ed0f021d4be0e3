//! Reading a streamed body to its end after `[DONE]`, so that its
//! connection can serve the next call, bounded in bytes and in time.
//!
//! ureq puts a connection back in the pool only when its response body was
//! read to the end: a body dropped at `[DONE]` closes it, and every call
//! would open a new one (a TCP, and for real servers a TLS, handshake per
//! call). So the rest of a framed body is read after `[DONE]` (the end of
//! the chunked body, usually in the same packet). A server that sends
//! `[DONE]` and then never ends the body must not hold the call: the drain
//! stops after [`MAX_DRAIN`] bytes or [`DRAIN_TIME`], whichever comes
//! first, and the connection is then dropped instead of reused.
//!
//! ureq's socket timeouts are set per request, from the call's deadline;
//! the drain's shorter bound reaches the socket through [`DrainBound`], a
//! connector that wraps every transport an endpoint's agents open and caps
//! each read's timeout while the reading thread drains (ureq reads on the
//! caller's thread, so a thread-local deadline is the drain's own).

use std::cell::Cell;
use std::io::Read;
use std::time::{Duration, Instant};

use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, NextTimeout, Transport};

/// The most bytes read past `[DONE]` to reach the end of a body.
pub(crate) const MAX_DRAIN: usize = 64 * 1024;

/// The longest wait for the end of a body after `[DONE]`.
pub(crate) const DRAIN_TIME: Duration = Duration::from_millis(100);

thread_local! {
    /// While this thread drains a body: when it must stop.
    static DRAIN_UNTIL: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Whether a response's connection can serve another request once its body
/// is read: a body of known length or chunked, and no `Connection: close`.
/// A body that ends when the server closes the connection is not read past
/// `[DONE]` (the server may hold it open; the connection is spent anyway).
pub(crate) fn reusable(headers: &ureq::http::HeaderMap) -> bool {
    let has = |name: &str, value: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.to_ascii_lowercase().contains(value))
    };
    let framed = headers.contains_key("content-length") || has("transfer-encoding", "chunked");
    framed && !has("connection", "close")
}

/// Reads what is left of a streamed body after `[DONE]`, for at most
/// [`MAX_DRAIN`] bytes and [`DRAIN_TIME`]; errors, a cut and either bound
/// only cost the connection (ureq closes a body not read to its end).
pub(crate) fn drain(reader: &mut impl Read) {
    struct Until;
    impl Drop for Until {
        fn drop(&mut self) {
            DRAIN_UNTIL.with(|d| d.set(None));
        }
    }
    DRAIN_UNTIL.with(|d| d.set(Some(Instant::now() + DRAIN_TIME)));
    let _until = Until;
    let mut buf = [0u8; 1024];
    let mut total = 0;
    while total <= MAX_DRAIN {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => total += n,
        }
    }
}

/// Wraps every transport an agent opens in [`Bounded`].
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct DrainBound;

impl Connector<Box<dyn Transport>> for DrainBound {
    type Out = Bounded;

    fn connect(
        &self,
        _details: &ConnectionDetails,
        chained: Option<Box<dyn Transport>>,
    ) -> Result<Option<Bounded>, ureq::Error> {
        Ok(chained.map(Bounded))
    }
}

/// A transport whose reads give up at the drain's deadline while its
/// thread drains; otherwise the transport it wraps, unchanged.
#[derive(Debug)]
pub(crate) struct Bounded(Box<dyn Transport>);

impl Transport for Bounded {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.0.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.0.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, mut timeout: NextTimeout) -> Result<bool, ureq::Error> {
        if let Some(until) = DRAIN_UNTIL.with(Cell::get) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ureq::Error::Timeout(ureq::Timeout::PerRead));
            }
            let left = ureq::unversioned::transport::time::Duration::from(left);
            if timeout.per_read.is_none_or(|p| left < p) {
                timeout.per_read = Some(left);
            }
        }
        self.0.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.0.is_open()
    }

    fn is_tls(&self) -> bool {
        self.0.is_tls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_framed_kept_alive_body_is_read_past_done() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut h = ureq::http::HeaderMap::new();
            for (k, v) in pairs {
                h.append(*k, ureq::http::HeaderValue::from_static(v));
            }
            h
        };
        assert!(reusable(&headers(&[("transfer-encoding", "chunked")])));
        assert!(reusable(&headers(&[("content-length", "42")])));
        assert!(!reusable(&headers(&[])), "ends when the server closes");
        assert!(!reusable(&headers(&[
            ("content-length", "42"),
            ("connection", "Close")
        ])));
        // A cut body or an error ends the drain; it never reads past its cap.
        let mut endless = std::io::repeat(b'x');
        drain(&mut endless);
        let mut short: &[u8] = b"0\r\n\r\n";
        drain(&mut short);
        assert!(short.is_empty());
        assert_eq!(DRAIN_UNTIL.with(Cell::get), None, "the bound is lifted");
    }
}
