//! The remote log manager's work: pure plans ([`plan`]), bounded pools
//! ([`pool`]), and the copy ([`copy`]) and expiration ([`expire`]) runs
//! that act on them.

pub mod copy;
pub mod expire;
pub mod plan;
pub mod pool;
