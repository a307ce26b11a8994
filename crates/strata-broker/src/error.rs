//! Errors of the broker's own operations (startup, config, topic store,
//! connections). Kafka protocol error codes are a different thing and live in
//! [`crate::errors`].

use std::path::PathBuf;

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
    #[error("I/O error while {op}")]
    Io {
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("topic metadata store")]
    TopicStore(#[from] TopicStoreError),
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
