//! The broker's integration tests over the wire, as one test binary (one
//! link instead of one per file: the gate's build time). Each module guards
//! one area; `hostile_requests` stays a binary of its own because it installs
//! a counting global allocator.

#[path = "../common/mod.rs"]
mod common;

/// A real etcd on loopback (shared with the cluster unit tests).
#[path = "../../src/cluster/etcd_harness.rs"]
#[allow(dead_code)]
mod etcd;

mod admin;
mod api_versions;
mod authorization;
mod back_pressure;
mod bad_requests;
mod broker_configs;
mod cluster;
mod configs;
mod console;
mod decompressed_cap;
mod fetch_sessions;
mod groups;
mod http_listener;
mod io_faults;
mod leadership;
mod list_offsets;
mod metadata;
mod metrics;
mod offline_dir;
mod offsets_compaction;
mod produce_errors;
mod produce_fetch;
mod restart;
mod topic_store_recovery;
mod transactions;
