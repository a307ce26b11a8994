//! Errors of the broker's own operations: [`BrokerError`] (startup, config,
//! topic store, shutdown) and [`DispatchError`] (a request that closes its
//! connection). What a client is answered for a failed request is a
//! different thing: `api_error` says why, `error_code` which Kafka code.

use std::path::PathBuf;

use kafka_protocol::messages::ApiKey;
use thiserror::Error;

use crate::config::ConfigError;
use crate::topics::TopicStoreError;

/// Why the broker could not start, serve or stop.
#[derive(Debug, Error)]
pub enum BrokerError {
    #[error("invalid broker configuration")]
    Config(#[from] ConfigError),
    #[error("cannot bind listener {addr}")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the security store")]
    SecurityStore(#[from] crate::security::store::SecurityStoreError),
    #[error("listener {listener}: {reason}")]
    Security { listener: String, reason: String },
    #[error("I/O error while {op}")]
    Io {
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("topic metadata store")]
    TopicStore(#[from] TopicStoreError),
    #[error("cluster membership")]
    Cluster(#[from] crate::cluster::ClusterError),
    #[error("dynamic broker config store")]
    DynamicConfig(#[from] crate::dynamic_config::DynamicConfigError),
    #[error("log manager")]
    Log(#[from] strata_log::LogError),
    #[error("tiered storage")]
    Tiered(#[from] strata_tiered::StartError),
    #[error("background task {task} failed")]
    Task {
        task: &'static str,
        #[source]
        source: tokio::task::JoinError,
    },
    #[error("log directory {path} is not usable")]
    LogDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Kafka's `LogConfig.validateRemoteStorageOnlyIfSystemEnabled` for
    /// configs read from the store at start.
    #[error(
        "You have to delete all topics with the property remote.storage.enable=true before \
         disabling tiered storage cluster-wide (remote.log.storage.system.enable=false; \
         topics with remote.storage.enable=true: {})",
        topics.join(", ")
    )]
    TieredTopicsWithoutTieredStorage { topics: Vec<String> },
}

/// Why a request closed its connection.
#[derive(Debug, Error)]
pub enum DispatchError {
    #[error("request of {len} bytes is too short for a request header")]
    Truncated { len: usize },
    #[error("unknown API key {key}")]
    UnknownApiKey { key: i16 },
    #[error("{api:?} version {version} is not supported")]
    UnsupportedVersion { api: ApiKey, version: i16 },
    #[error("cannot decode {api:?} v{version} request")]
    Decode {
        api: ApiKey,
        version: i16,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("produce with acks=0 failed; closing the connection to tell the client")]
    ProduceFailedWithoutAcks,
    #[error("cannot encode {api:?} v{version} response")]
    Encode {
        api: ApiKey,
        version: i16,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}
