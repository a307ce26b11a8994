//! Startup reconciliation of the topic store with the partition directories
//! the log manager loaded.
//!
//! - A partition directory whose topic the store does not know (a log
//!   directory written by Kafka, or a lost `strata-topics.json`) adds the
//!   topic, keeping the topic id from its `partition.metadata` so ids stay
//!   stable, with as many partitions as directories name. Its config
//!   overrides lived only in the store: they are lost, and a WARN says so.
//! - Producer ids found in any log's producer state stay reserved, so a
//!   rebuilt store never hands them out again.
//! - A partition whose `partition.metadata` names another topic id than the
//!   store is refused (Kafka's `InconsistentTopicIdException`): an ERROR
//!   names the directory and both ids, the log manager never opens it
//!   ([`topic_id_filter`]), so nothing in the directory changes, and the
//!   partition is served as offline (see `offline`).
//! - A topic whose partition directories are missing (crash during
//!   CreateTopics/CreatePartitions) gets them created — unless a log dir is
//!   offline, since the partition may live there (Kafka's
//!   `getOrCreateLog(isNew = false)` refuses the same way); it is then
//!   served as offline.
//! - A partition whose leader-epoch cache is ahead of the stored epoch
//!   raises the stored epoch, so new appends never go back in epoch.
//! - Every loaded log gets its topic's effective config.
//! - Every log's high watermark moves to its log end offset: this broker is
//!   the only replica, so the ISR is itself and everything it holds is
//!   committed (Kafka's leader does the same once the ISR has caught up).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use strata_log::PartitionMetadata;
use strata_log::{LoadFilter, LogManager, TopicPartition};
use uuid::Uuid;

use crate::broker::effective_config;
use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::offline::{OfflineReason, RefusedPartitions};
use crate::topics::TopicStore;

/// What the loaded logs say about one topic.
#[derive(Default)]
struct Seen {
    max_partition: i32,
    epoch: i32,
}

/// Partition count and leader epoch of `topic` over the loaded logs that
/// `keep` accepts.
fn seen(logs: &LogManager, topic: &str, keep: impl Fn(&TopicPartition) -> bool) -> Option<Seen> {
    let mut out: Option<Seen> = None;
    for log in logs.all_logs() {
        let tp = log.topic_partition();
        if tp.topic != topic || !keep(tp) {
            continue;
        }
        let s = out.get_or_insert_with(Seen::default);
        s.max_partition = s.max_partition.max(tp.partition);
        if let Some(e) = log.latest_epoch() {
            s.epoch = s.epoch.max(e.0);
        }
    }
    out
}

/// The log manager's load filter: a partition directory whose
/// `partition.metadata` names another topic id than the store is not
/// opened at all (so nothing in it changes) and lands in the returned map.
pub(crate) fn topic_id_filter(
    store: Arc<TopicStore>,
) -> (LoadFilter, Arc<Mutex<RefusedPartitions>>) {
    let refused = Arc::new(Mutex::new(RefusedPartitions::new()));
    let out = refused.clone();
    let filter: LoadFilter = Arc::new(move |dir: &Path, tp: &TopicPartition| {
        let (Some(info), Some(on_disk)) = (store.get(&tp.topic), read_partition_topic_id(dir))
        else {
            return true;
        };
        if info.id == on_disk {
            return true;
        }
        refuse(&refused, tp, dir.to_path_buf(), info.id, on_disk);
        false
    });
    (filter, out)
}

fn refuse(
    refused: &Mutex<RefusedPartitions>,
    tp: &TopicPartition,
    dir: PathBuf,
    stored: Uuid,
    on_disk: Uuid,
) {
    tracing::error!(
        %tp,
        dir = %dir.display(),
        store_topic_id = %stored,
        partition_metadata_topic_id = %on_disk,
        "refusing to serve a partition whose partition.metadata names another topic id than \
         the topic store (Kafka: InconsistentTopicIdException); the directory is left as it \
         is and the partition is offline until an operator resolves it"
    );
    refused.lock().unwrap_or_else(|p| p.into_inner()).insert(
        tp.clone(),
        OfflineReason::InconsistentTopicId {
            dir,
            stored,
            on_disk,
        },
    );
}

/// Make the store and the loaded logs agree. `refused` holds the
/// partitions the load filter refused; returned with any refused here
/// (partitions of an adopted topic that disagree with its first id).
///
/// # Errors
/// A store write or a partition creation failed.
pub(crate) fn reconcile(
    config: &BrokerConfig,
    store: &TopicStore,
    logs: &LogManager,
    refused: RefusedPartitions,
) -> Result<RefusedPartitions, BrokerError> {
    // Topic ids on disk, in partition order (so partition 0 names an adopted topic's id).
    let mut on_disk_ids: BTreeMap<TopicPartition, Uuid> = BTreeMap::new();
    let mut topics_on_disk: BTreeMap<String, Option<Uuid>> = BTreeMap::new();
    for log in logs.all_logs() {
        let tp = log.topic_partition().clone();
        let id = read_partition_topic_id(&log.dir());
        let first_id = topics_on_disk.entry(tp.topic.clone()).or_default();
        if first_id.is_none() {
            *first_id = id;
        }
        if let Some(id) = id {
            on_disk_ids.insert(tp, id);
        }
    }
    // Producer ids in use must stay reserved (a lost store restarts at 0).
    if let Some(max) = logs
        .all_logs()
        .iter()
        .filter_map(|l| l.max_producer_id())
        .max()
    {
        store.reserve_producer_ids_through(max.0)?;
    }
    // Adopt the topics the store does not know.
    for (topic, id) in &topics_on_disk {
        if store.get(topic).is_some() {
            continue;
        }
        let same_topic = |tp: &TopicPartition| on_disk_ids.get(tp).is_none_or(|d| Some(*d) == *id);
        let Some(s) = seen(logs, topic, same_topic) else {
            continue;
        };
        let info = store.create(topic, s.max_partition + 1, BTreeMap::new(), *id)?;
        tracing::warn!(
            topic,
            id = %info.id,
            partitions = info.partitions,
            "adopted a topic the topic store does not know from its partition directories \
             (lost or foreign strata-topics.json); its topic config overrides are lost and \
             it runs on the broker defaults until they are set again"
        );
    }
    // Partitions of an adopted topic that name another id than the one
    // adopted (the store's own topics were filtered before loading).
    let refused = Mutex::new(refused);
    for (tp, on_disk) in &on_disk_ids {
        let Some(info) = store.get(&tp.topic) else {
            continue;
        };
        if info.id == *on_disk {
            continue;
        }
        if let Some(log) = logs.unload(tp) {
            refuse(&refused, tp, log.dir(), info.id, *on_disk);
        }
    }
    let refused = refused.into_inner().unwrap_or_else(|p| p.into_inner());
    // Partition counts and epochs from the logs being served.
    for topic in topics_on_disk.keys() {
        let (Some(info), Some(s)) = (store.get(topic), seen(logs, topic, |_| true)) else {
            continue;
        };
        if info.partitions <= s.max_partition || info.leader_epoch < s.epoch {
            store.update(topic, |t| {
                t.partitions = t.partitions.max(s.max_partition + 1);
                t.leader_epoch = t.leader_epoch.max(s.epoch);
            })?;
        }
    }
    let offline_dirs = logs.offline_dirs();
    for info in store.list() {
        let cfg = effective_config(&config.log_config, &info);
        for p in 0..info.partitions {
            let tp = TopicPartition::new(info.name.clone(), p);
            if refused.contains_key(&tp) {
                continue;
            }
            match logs.get_log(&tp) {
                Some(log) => {
                    if log.config() != cfg {
                        log.update_config(cfg.clone());
                    }
                    log.update_high_watermark(log.log_end_offset());
                }
                None if !offline_dirs.is_empty() => {
                    tracing::warn!(
                        %tp,
                        offline_dirs = ?offline_dirs,
                        "partition not found in an online log dir while a log dir is offline: \
                         not recreating it, serving it as offline"
                    );
                }
                None => {
                    logs.get_or_create_log(&tp, cfg.clone(), Some(info.id))?;
                }
            }
        }
    }
    Ok(refused)
}

/// The topic id in a partition's `partition.metadata`, if readable
/// (a missing or unreadable file gives `None`: nothing to compare).
pub(crate) fn read_partition_topic_id(dir: &Path) -> Option<Uuid> {
    match PartitionMetadata::read(dir) {
        Ok(m) => Some(m.topic_id),
        Err(error) => {
            tracing::debug!(dir = %dir.display(), %error, "no usable partition.metadata");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use strata_log::format::PARTITION_METADATA;

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
