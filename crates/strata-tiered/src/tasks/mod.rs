//! The remote log manager's work: pure plans ([`plan`]) and bounded pools
//! ([`pool`]). The copy and expiration runs that act on them are
//! `RemoteLogManager` methods in `manager/copy.rs` and `manager/expire.rs`.

pub mod plan;
pub mod pool;
