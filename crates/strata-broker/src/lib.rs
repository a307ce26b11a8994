//! `strata-broker`: the Kafka protocol server.
//!
//! Real Kafka clients (the Java client, librdkafka, kafka-python) connect to
//! it as to a single-node Kafka 3.9 cluster. Requests are decoded with the
//! `kafka-protocol` crate; record batches stay opaque bytes from the socket
//! to the segment file and back (`sendfile(2)` on fetch).
//!
//! # Layout
//!
//! - [`config`](BrokerConfig): `server.properties` names and defaults, one pass.
//! - `properties`: the `.properties` file syntax.
//! - `server`: listener, connection limit, startup, graceful shutdown, [`serve_main`].
//! - `connection`: frames in, responses out in order; zero-copy writer; idle
//!   and frame-arrival deadlines.
//! - `connection_quotas`: per-client-address connection limits.
//! - `protocol_log`: rate-limited INFO lines for protocol errors.
//! - `dispatch`: header decoding, version checks, response encoding.
//! - `apis`: one module per Kafka API.
//! - `admin`: topic creation, deletion, partition growth and config changes.
//! - `dynamic_config`: dynamic broker configs (KIP-226), kept across restarts.
//! - `group`: the classic group coordinator and `__consumer_offsets`.
//! - `placement`: Kafka's replica placement.
//! - `tiered`: the broker's hooks into the remote tier (`strata-tiered`).
//! - `broker`: the state handlers share.
//! - `topics`: the persisted topic metadata store (`strata-topics.json`).
//! - `reconcile`: startup agreement between the store and the log directories.
//! - `offline`: which hosted partitions cannot be served and why.
//! - `errors`: the one mapping from engine errors to Kafka error codes.
//! - `error`: [`BrokerError`], failures of the broker itself.
//! - `stats`: counters ([`BrokerStats`]).

mod admin;
mod apis;
mod broker;
mod config;
mod connection;
mod connection_quotas;
mod dispatch;
mod dynamic_config;
mod error;
mod errors;
mod group;
mod offline;
mod placement;
mod properties;
mod protocol_log;
mod reconcile;
mod server;
mod stats;
mod tiered;
mod topics;

pub use config::{
    BrokerConfig, ConfigError, ConnectionLimits, Listener, DEFAULT_LISTENERS, DEFAULT_LOG_DIR,
};
pub use dispatch::{decode_request, DispatchError};
pub use dynamic_config::{DynamicConfigError, BROKER_CONFIGS_FILE};
pub use error::BrokerError;
#[doc(hidden)]
pub use group::records::fuzz_round_trip as fuzz_consumer_offsets_record;
pub use server::{serve_main, start, start_with_clock, BrokerHandle};
pub use stats::BrokerStats;
pub use topics::{TopicStoreError, TOPICS_FILE};
