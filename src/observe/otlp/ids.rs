//! Span and trace ids, derived from the run (and the stream's start) so
//! exporting a run twice gives the same ones.

use std::hash::{DefaultHasher, Hash, Hasher};

use super::groups::SpanId;

fn hash(run_id: &str, key: &str) -> u64 {
    let mut h = DefaultHasher::new();
    run_id.hash(&mut h);
    key.hash(&mut h);
    h.finish()
}

pub(super) fn trace_id(run_id: &str) -> [u8; 16] {
    let mut id = [0; 16];
    id[..8].copy_from_slice(&hash(run_id, "trace-1").to_be_bytes());
    id[8..].copy_from_slice(&hash(run_id, "trace-2").to_be_bytes());
    if id == [0; 16] {
        id[15] = 1;
    }
    id
}

pub(super) fn span_id(run_id: &str, key: &str) -> SpanId {
    let h = hash(run_id, key).max(1);
    h.to_be_bytes()
}
