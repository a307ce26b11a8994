//! `strata-broker`: the Kafka protocol server.
//!
//! Real Kafka clients (the Java client, librdkafka, kafka-python) connect to
//! it as to a single-node Kafka 3.9 cluster. Requests are decoded with the
//! `kafka-protocol` crate; record batches stay opaque bytes from the socket
//! to the segment file and back (`sendfile(2)` on fetch).
//!
//! # Layout
//!
//! - [`config`](BrokerConfig): the broker's definition table; loads `server.properties`
//!   (with strata-log's one `.properties` reader) through every namespace's table, once.
//! - `server`: listener, connection limit, startup, graceful shutdown, [`serve_main`].
//! - `connection`: frames in, responses out in order; zero-copy writer; idle
//!   and frame-arrival deadlines.
//! - `connection_quotas`: per-client-address connection limits.
//! - `request_queue`: the broker-wide bound on requests in hand
//!   (`queued.max.requests`, `queued.max.request.bytes`).
//! - `protocol_log`: rate-limited INFO lines for protocol errors.
//! - `request_log`: the request logger (`kafka.request.logger`), one DEBUG line per request.
//! - `dispatch`: header decoding, version checks, routing to `apis`.
//! - `response`: the response frame (memory and `sendfile` parts) and its
//!   encoder, shared by `connection` and `apis`.
//! - `apis`: one module per Kafka API; body decoding, answer encoding.
//! - `broker`: the state handlers share.
//! - `fetch_sessions`: incremental fetch sessions (KIP-227): the session
//!   cache, its eviction and the request contexts.
//! - `cluster`: cluster mode's membership in etcd: registration, the
//!   metadata watch, the controller (`docs/cluster.md`).
//! - `cluster_admin`: topic mutations in cluster mode (through etcd).
//! - `leadership`: ElectLeaders and partition reassignment as a broker
//!   answers them (through etcd in cluster mode).
//! - `partition_sync`: applies each cluster snapshot to this broker's logs,
//!   replicas and group coordinator.
//! - `replication`: Kafka's ISR protocol between brokers: each replica's
//!   state, follower fetchers, the high watermark, ISR changes through etcd
//!   (`docs/replication.md`).
//! - `admin`: topic creation, deletion, partition growth and config changes.
//! - `placement`: Kafka's replica placement.
//! - `topics`: the persisted topic metadata store (`strata-topics.json`).
//! - `reconcile`: startup agreement between the store and the log directories.
//! - `remote_metadata`: cluster mode's replicated `__remote_log_metadata`
//!   (its creation, the writer to its leaders, the reader every broker runs).
//! - `offline`: which hosted partitions cannot be served and why.
//! - `dynamic_config`: dynamic broker configs (KIP-226), kept across restarts
//!   (`strata-broker-configs.json`).
//! - `config_entry`: one described config (DescribeConfigs, CreateTopics).
//! - `group`: the classic group coordinator and `__consumer_offsets`.
//! - `http`: the HTTP listener (`/metrics`, the console); `console`: the
//!   read-only storage console ([`ConsoleFindings`] is its findings seam).
//! - `tiered`: the broker's hooks into the remote tier (`strata-tiered`).
//! - `api_error`: why a request failed for one topic, partition or resource.
//! - `error_code`: the one mapping from errors to Kafka error codes.
//! - `error`: [`BrokerError`] and [`DispatchError`], failures of the broker
//!   itself.
//! - `stats`: counters ([`BrokerStats`]).
//!
//! Module dependencies point one way (`scripts/check-import-loops.py`).

mod admin;
mod api_error;
mod apis;
mod authentication;
mod broker;
mod cluster;
mod cluster_admin;
mod config;
mod config_entry;
mod connection;
mod connection_quotas;
mod console;
mod console_findings;
mod dispatch;
mod dynamic_config;
mod error;
mod error_code;
mod fetch_sessions;
mod group;
mod http;
mod internal_append;
mod jwks;
mod leadership;
mod listener_runtime;
mod listeners;
mod metrics;
mod offline;
mod page;
mod partition_sync;
mod placement;
mod protocol_log;
mod reconcile;
mod remote_metadata;
mod replication;
mod request_log;
mod request_queue;
mod response;
mod scrape;
mod security;
mod server;
mod stats;
mod tiered;
mod topics;
mod txn;
mod txn_markers;
mod txn_verify;

pub use config::LogFormat;
pub use config::{
    BrokerConfig, ConfigError, ConnectionLimits, Listener, Properties, SecurityProtocol,
    DEFAULT_LISTENERS, DEFAULT_LOG_DIR,
};
pub use console::{ConsoleFinding, ConsoleFindings, FindingSeverity, FindingsSource};
pub use dispatch::decode_request;
pub use dynamic_config::{DynamicConfigError, BROKER_CONFIGS_FILE};
pub use error::{BrokerError, DispatchError};
pub use group::config::GroupConfig;
#[doc(hidden)]
pub use group::records::fuzz_round_trip as fuzz_consumer_offsets_record;
pub use group::{
    records::RecordError as ConsumerOffsetsRecordError,
    records_json::{describe_record as describe_consumer_offsets_record, OffsetsRecordText},
};
#[doc(hidden)]
pub use http::fuzz_http_request;
pub use security::SecurityConfig;
pub use server::{serve_main, start, start_with_clock, start_with_fs, BrokerHandle};
pub use stats::BrokerStats;
pub use topics::{TopicStoreError, TOPICS_FILE};
pub use txn::config::TxnConfig;
