//! The `strata` binary's integration tests, as one test binary (one release
//! link instead of one per file: the gate's build time; `docs/testing.md`).
//! Each module guards one command or concern. `power_loss` stays a binary of
//! its own: it reopens a locked log dir thousands of times, and a child process
//! another test spawns holds an inherited copy of that `flock` between its fork
//! and exec, which makes a reopen fail with "locked by another process".

#[path = "../common/mod.rs"]
mod common;

mod config;
mod doctor;
mod doctor_cleaner;
mod dump_files;
mod dump_fixtures;
mod dump_legacy;
mod offsets_dump;
mod progress;
mod serve;
mod txn_doctor;
mod txn_dump;
mod verify;
