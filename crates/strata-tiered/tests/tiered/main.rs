//! The remote tier's integration tests, as one test binary (one release link
//! instead of one per file: the gate's build time; `docs/testing.md`). Each
//! module guards one concern.

#[path = "../common/mod.rs"]
mod common;

mod backends;
mod fsck;
mod log_start;
mod manager;
mod retention_gate;
mod transactions;
