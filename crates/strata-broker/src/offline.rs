//! Which partitions this broker hosts but cannot serve, and why (Kafka
//! `HostedPartition.Offline` / `ReplicaManager.markPartitionOffline`).
//!
//! A partition is offline when
//! - its log dir went offline (an I/O error such as ENOSPC or EMFILE, see
//!   `strata_log::DirHealth`; restart required), or
//! - it was refused at startup because its `partition.metadata` names
//!   another topic id than the topic store (Kafka's
//!   `InconsistentTopicIdException`); the directory is left untouched, or
//! - the store knows it but no dir holds it while some log dir is offline:
//!   it may live on that dir, so it is not recreated empty elsewhere
//!   (Kafka's `LogManager.getOrCreateLog` with `isNew = false`).
//!
//! Every offline partition answers the same way: Metadata gives leader -1,
//! LEADER_NOT_AVAILABLE and this broker in `offline_replicas`; Produce,
//! Fetch and DeleteTopics answer KAFKA_STORAGE_ERROR.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use strata_log::TopicPartition;
use uuid::Uuid;

/// Why a hosted partition is not served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum OfflineReason {
    /// Its log dir is offline.
    DirOffline { dir: PathBuf },
    /// Refused at startup: `partition.metadata` disagrees with the store.
    InconsistentTopicId {
        dir: PathBuf,
        stored: Uuid,
        on_disk: Uuid,
    },
    /// Not found in any online dir while these dirs are offline.
    NotLoaded { offline_dirs: Vec<PathBuf> },
}

impl fmt::Display for OfflineReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OfflineReason::DirOffline { dir } => {
                write!(f, "log directory {} is offline", dir.display())
            }
            OfflineReason::InconsistentTopicId {
                dir,
                stored,
                on_disk,
            } => write!(
                f,
                "{} holds topic id {on_disk} but the topic store says {stored}",
                dir.display()
            ),
            OfflineReason::NotLoaded { offline_dirs } => {
                let dirs: Vec<_> = offline_dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect();
                write!(
                    f,
                    "not loaded; log directories offline: {}",
                    dirs.join(", ")
                )
            }
        }
    }
}

/// Partitions refused at startup (fixed until restart).
pub(crate) type RefusedPartitions = BTreeMap<TopicPartition, OfflineReason>;
