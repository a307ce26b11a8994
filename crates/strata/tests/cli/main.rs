//! The `strata` binary's integration tests, as one test binary (one release
//! link instead of one per file: the gate's build time; `docs/testing.md`).
//! Each module guards one command or concern.

#[path = "../common/mod.rs"]
mod common;

mod config;
mod doctor;
mod dump_files;
mod dump_fixtures;
mod dump_legacy;
mod power_loss;
mod serve;
mod verify;
