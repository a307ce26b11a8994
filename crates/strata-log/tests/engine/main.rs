//! The engine's integration tests, as one test binary (one link instead of
//! one per file: the gate's build time). `batch_props` and
//! `producer_state_alloc` stay binaries of their own because each installs a
//! counting global allocator.

#[path = "../cleaner_util/mod.rs"]
mod cleaner_util;
#[path = "../common/mod.rs"]
mod common;

mod clean_restart;
mod clean_tail;
mod cleaner;
mod cleaner_history;
mod cleaner_kafka;
mod cleaner_producers;
mod cleaner_service;
mod crash_kill;
mod disk_full;
mod fixtures;
mod handle_limit;
mod high_watermark;
mod idempotence;
mod index_layout;
mod io_faults;
mod log_dir_move;
mod log_layout;
mod manager;
mod producer_snapshot;
mod recovery;
mod recovery_warnings;
mod replica_files;
mod retention;
mod retention_crash;
mod roll;
mod transactions;
