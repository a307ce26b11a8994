//! [`TopicRlmm`]: the catalogue kept in the internal topic
//! `__remote_log_metadata` (Kafka `TopicBasedRemoteLogMetadataManager`,
//! reference §4), with Kafka's partitioning and record format.
//!
//! Every event is checked against the state machine, appended to its
//! metadata partition (null key, value from [`super::serde`]) and only then
//! applied to the in-memory catalogue — so what is in memory is always a
//! prefix-consistent replay of the topic. At start the catalogue is rebuilt
//! by replaying every metadata partition from its log start; an event the
//! state machine rejects on replay (e.g. an update whose add was retained
//! away) is skipped with a warning, as Kafka does.
//!
//! Strata is a single broker, so the "topic" is written straight into the
//! local log of each metadata partition through [`MetadataLog`]; the bytes
//! on disk are what Kafka's producer would have written.

use std::sync::Arc;

use strata_log::batch::BatchBuilder;
use strata_log::{LeaderEpoch, LogManager, Offset, ReadBound, Timestamp, TopicPartition};

use super::cache::MemoryRlmm;
use super::{partitioner, serde, MetadataEvent, RemoteLogMetadataManager};
use crate::error::MetadataError;
use crate::metadata::{
    RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata,
    TopicIdPartition,
};

/// Name of the internal metadata topic.
pub const REMOTE_LOG_METADATA_TOPIC: &str = "__remote_log_metadata";

/// Where metadata records go: one append-only log per metadata partition.
pub trait MetadataLog: Send + Sync + std::fmt::Debug {
    fn num_partitions(&self) -> i32;

    /// Durably append one record value to `partition`.
    ///
    /// # Errors
    /// The log's failure.
    fn append(
        &self,
        partition: i32,
        value: &[u8],
        timestamp: Timestamp,
    ) -> Result<(), MetadataError>;

    /// Every record value of `partition`, oldest first, with its offset.
    ///
    /// # Errors
    /// The log's failure.
    fn read_all(&self, partition: i32) -> Result<Vec<(Offset, Vec<u8>)>, MetadataError>;
}

/// [`MetadataLog`] over the partitions `__remote_log_metadata-N` of a
/// [`LogManager`].
#[derive(Debug)]
pub struct LogManagerMetadataLog {
    manager: Arc<LogManager>,
    partitions: i32,
}

impl LogManagerMetadataLog {
    /// Open (creating if needed) every metadata partition. Their config:
    /// unlimited retention, delete policy, no tiering (reference §4.1).
    ///
    /// # Errors
    /// The log manager's failure to create a partition.
    pub fn open(
        manager: Arc<LogManager>,
        partitions: i32,
    ) -> Result<LogManagerMetadataLog, MetadataError> {
        let me = LogManagerMetadataLog {
            manager,
            partitions,
        };
        for p in 0..partitions {
            me.log(p)?;
        }
        Ok(me)
    }

    fn log(&self, partition: i32) -> Result<Arc<strata_log::Log>, MetadataError> {
        let tp = TopicPartition::new(REMOTE_LOG_METADATA_TOPIC, partition);
        if let Some(log) = self.manager.get_log(&tp) {
            return Ok(log);
        }
        self.manager
            .get_or_create_log(&tp, metadata_topic_config(), None)
            .map_err(|source| MetadataError::Log {
                op: "create",
                source,
            })
    }
}

/// The metadata topic's config: unlimited retention (the catalogue is
/// rebuilt from offset 0), delete policy, never tiered itself.
pub fn metadata_topic_config() -> strata_log::LogConfig {
    strata_log::LogConfig {
        retention_ms: -1,
        retention_bytes: -1,
        remote_storage_enable: false,
        ..strata_log::LogConfig::default()
    }
}

impl MetadataLog for LogManagerMetadataLog {
    fn num_partitions(&self) -> i32 {
        self.partitions
    }

    fn append(
        &self,
        partition: i32,
        value: &[u8],
        timestamp: Timestamp,
    ) -> Result<(), MetadataError> {
        let log = self.log(partition)?;
        let mut builder = BatchBuilder::new(Offset(0));
        builder.append(timestamp, None, Some(value), &[]);
        let mut batch = builder.build();
        let info = log
            .append_as_leader(&mut batch, LeaderEpoch(0))
            .map_err(|source| MetadataError::Log {
                op: "append",
                source,
            })?;
        // acks=all on a single broker: committed once written and flushed.
        log.flush_up_to(info.last_offset.plus(1))
            .map_err(|source| MetadataError::Log {
                op: "flush",
                source,
            })?;
        log.update_high_watermark(log.log_end_offset());
        Ok(())
    }

    fn read_all(&self, partition: i32) -> Result<Vec<(Offset, Vec<u8>)>, MetadataError> {
        let log = self.log(partition)?;
        let mut out = Vec::new();
        let mut next = log.log_start_offset();
        let end = log.log_end_offset();
        while next < end {
            let data = log
                .read(next, 1 << 20, ReadBound::LogEnd, true)
                .map_err(|source| MetadataError::Log { op: "read", source })?;
            let bytes = data.read_to_vec().map_err(|source| MetadataError::Log {
                op: "read",
                source: strata_log::LogError::Io {
                    path: log.dir(),
                    op: "read metadata",
                    source,
                },
            })?;
            if bytes.is_empty() {
                break;
            }
            let mut pos = 0;
            let before = next;
            while pos < bytes.len() {
                let Ok(view) = strata_log::batch::BatchView::parse(&bytes[pos..]) else {
                    break;
                };
                pos += view.size();
                let records = view.records().map_err(|source| MetadataError::Log {
                    op: "decode",
                    source: strata_log::LogError::Batch {
                        tp: log.topic_partition().clone(),
                        source,
                    },
                })?;
                for r in records {
                    if r.offset >= next {
                        if let Some(v) = r.value {
                            out.push((r.offset, v));
                        }
                    }
                }
                next = view.next_offset();
            }
            if next == before {
                break;
            }
        }
        Ok(out)
    }
}

/// The topic-based catalogue.
#[derive(Debug)]
pub struct TopicRlmm {
    log: Arc<dyn MetadataLog>,
    cache: MemoryRlmm,
    clock: strata_log::SharedClock,
}

/// What a replay at start found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayStats {
    pub applied: usize,
    /// Records the state machine rejected or that failed to decode.
    pub skipped: usize,
}

impl TopicRlmm {
    /// Rebuild the catalogue from every metadata partition.
    ///
    /// # Errors
    /// Reading a metadata partition failed.
    pub fn open(
        log: Arc<dyn MetadataLog>,
        clock: strata_log::SharedClock,
    ) -> Result<(TopicRlmm, ReplayStats), MetadataError> {
        let cache = MemoryRlmm::new();
        let mut stats = ReplayStats::default();
        for p in 0..log.num_partitions() {
            for (offset, value) in log.read_all(p)? {
                let applied = serde::decode(&value)
                    .map_err(|source| MetadataError::Decode {
                        partition: p,
                        offset: offset.0,
                        source,
                    })
                    .and_then(|event| cache.apply(&event));
                match applied {
                    Ok(()) => stats.applied += 1,
                    Err(error) => {
                        tracing::warn!(partition = p, offset = offset.0, %error, "skipping remote log metadata record");
                        stats.skipped += 1;
                    }
                }
            }
        }
        Ok((TopicRlmm { log, cache, clock }, stats))
    }

    fn publish(&self, event: MetadataEvent) -> Result<(), MetadataError> {
        let partition =
            partitioner::metadata_partition(event.partition(), self.log.num_partitions());
        let value = serde::encode(&event);
        let now = Timestamp(self.clock.now_ms());
        self.cache
            .apply_with(&event, || self.log.append(partition, &value, now))
    }
}

impl RemoteLogMetadataManager for TopicRlmm {
    cached_catalogue_methods!();
}
