//! Startup reconciliation of the topic store with the partition directories
//! the log manager loaded.
//!
//! - A partition directory whose topic the store does not know (a log
//!   directory written by Kafka, or a store lost with its disk) adds the topic,
//!   keeping the topic id from its `partition.metadata` so ids stay stable.
//! - A topic whose partition directories are missing (crash during
//!   CreateTopics/CreatePartitions) gets them created.
//! - A partition whose leader-epoch cache is ahead of the stored epoch raises
//!   the stored epoch, so new appends never go back in epoch.
//! - Every loaded log gets its topic's effective config.
//! - Every log's high watermark moves to its log end offset: this broker is
//!   the only replica, so the ISR is itself and everything it holds is
//!   committed (Kafka's leader does the same once the ISR has caught up).

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use strata_log::format::PARTITION_METADATA;
use strata_log::{LogManager, TopicPartition};
use uuid::Uuid;

use crate::broker::effective_config;
use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::topics::TopicStore;

#[derive(Default)]
struct Seen {
    max_partition: i32,
    id: Option<Uuid>,
    epoch: i32,
}

pub(crate) fn reconcile(
    config: &BrokerConfig,
    store: &TopicStore,
    logs: &LogManager,
) -> Result<(), BrokerError> {
    let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
    for log in logs.all_logs() {
        let tp = log.topic_partition().clone();
        let entry = seen.entry(tp.topic.clone()).or_default();
        entry.max_partition = entry.max_partition.max(tp.partition);
        if entry.id.is_none() {
            entry.id = read_partition_topic_id(&log.dir());
        }
        if let Some(e) = log.latest_epoch() {
            entry.epoch = entry.epoch.max(e.0);
        }
    }
    for (topic, s) in &seen {
        match store.get(topic) {
            None => {
                tracing::info!(
                    topic,
                    partitions = s.max_partition + 1,
                    "adopting topic found on disk"
                );
                store.create(topic, s.max_partition + 1, BTreeMap::new(), s.id)?;
                if s.epoch > 0 {
                    store.update(topic, |t| t.leader_epoch = s.epoch)?;
                }
            }
            Some(info) => {
                if info.partitions <= s.max_partition || info.leader_epoch < s.epoch {
                    store.update(topic, |t| {
                        t.partitions = t.partitions.max(s.max_partition + 1);
                        t.leader_epoch = t.leader_epoch.max(s.epoch);
                    })?;
                }
            }
        }
    }
    for info in store.list() {
        let cfg = effective_config(&config.log_config, &info);
        for p in 0..info.partitions {
            let tp = TopicPartition::new(info.name.clone(), p);
            match logs.get_log(&tp) {
                Some(log) => {
                    if log.config() != cfg {
                        log.update_config(cfg.clone());
                    }
                    log.update_high_watermark(log.log_end_offset());
                }
                None => {
                    logs.get_or_create_log(&tp, cfg.clone(), Some(info.id))?;
                }
            }
        }
    }
    Ok(())
}

/// The topic id in a partition's `partition.metadata`
/// (`version: 0` / `topic_id: <base64url uuid>`), if readable.
fn read_partition_topic_id(dir: &Path) -> Option<Uuid> {
    let text = std::fs::read_to_string(dir.join(PARTITION_METADATA)).ok()?;
    let value = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("topic_id:"))?
        .trim();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(value)
        .ok()?;
    Uuid::from_slice(&bytes).ok().filter(|u| !u.is_nil())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kafka_partition_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let id = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.as_bytes());
        std::fs::write(
            dir.path().join(PARTITION_METADATA),
            format!("version: 0\ntopic_id: {b64}\n"),
        )
        .unwrap();
        assert_eq!(read_partition_topic_id(dir.path()), Some(id));
        std::fs::write(dir.path().join(PARTITION_METADATA), "garbage").unwrap();
        assert_eq!(read_partition_topic_id(dir.path()), None);
    }
}
