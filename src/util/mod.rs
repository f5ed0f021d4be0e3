//! The ground floor: small helpers every layer may use, importing nothing
//! else from the crate.

pub(crate) mod duration;
pub(crate) mod fs;
#[cfg(feature = "view")]
pub(crate) mod httpd;
pub(crate) mod secrets;
pub(crate) mod shard;
pub(crate) mod text;
pub(crate) mod vars;
