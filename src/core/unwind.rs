//! Panics, in one place: a panic caught at a boundary (a pool's job, a
//! tool call, a model call on the run's thread, the run's thread itself)
//! becomes text here, and nothing downstream reads thread names or
//! matches that text to learn what failed.

/// The message of a panic's payload.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".into()
    }
}
