//! Object names of the remote tier, in one place (Kafka `LocalTieredStorage`
//! layout, reference §10), shared by every back end:
//!
//! ```text
//! <root>/<topic>-<partition>-<topicIdBase64url22>/
//!     <20-digit startOffset>-<segmentIdBase64url22>.log
//!     ...same prefix....index | .timeindex | .txnindex | .snapshot | .leader_epoch_checkpoint
//! ```
//!
//! Several copies of the same offset range (different segment ids)
//! coexist; the metadata says which one is live.

use strata_log::{Offset, TopicPartition};
use uuid::Uuid;

use super::IndexType;
use crate::metadata::{uuid_base64, uuid_from_base64, RemoteLogSegmentId, TopicIdPartition};

/// Suffix of the segment data object.
pub const LOG_SUFFIX: &str = ".log";

/// The suffix of each companion object.
pub fn index_suffix(kind: IndexType) -> &'static str {
    match kind {
        IndexType::Offset => ".index",
        IndexType::Timestamp => ".timeindex",
        IndexType::Transaction => ".txnindex",
        IndexType::ProducerSnapshot => ".snapshot",
        IndexType::LeaderEpoch => ".leader_epoch_checkpoint",
    }
}

/// Every suffix a segment id may own, `.log` first.
pub fn all_suffixes() -> [&'static str; 6] {
    [
        LOG_SUFFIX,
        index_suffix(IndexType::Offset),
        index_suffix(IndexType::Timestamp),
        index_suffix(IndexType::Transaction),
        index_suffix(IndexType::ProducerSnapshot),
        index_suffix(IndexType::LeaderEpoch),
    ]
}

/// `<topic>-<partition>-<topicId22>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionDirName(pub String);

impl PartitionDirName {
    pub fn of(partition: &TopicIdPartition) -> PartitionDirName {
        PartitionDirName(format!(
            "{}-{}-{}",
            partition.tp.topic,
            partition.tp.partition,
            uuid_base64(partition.topic_id)
        ))
    }
}

/// Key (relative to the root) of one object of a segment.
pub fn object_key(id: &RemoteLogSegmentId, start: Offset, suffix: &str) -> String {
    format!(
        "{}/{:020}-{}{}",
        PartitionDirName::of(&id.partition).0,
        start.0,
        uuid_base64(id.id),
        suffix
    )
}

/// Key of one object of the segment `md` (relative to the store root).
pub fn object_key_for(md: &crate::metadata::RemoteLogSegmentMetadata, suffix: &str) -> String {
    object_key(&md.segment_id, md.start_offset, suffix)
}

/// A parsed object key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectKey {
    pub partition: TopicIdPartition,
    pub start_offset: Offset,
    pub segment_id: Uuid,
    pub suffix: String,
}

/// Parse `<topic>-<partition>-<id22>/<20 digits>-<id22><suffix>`; `None`
/// for anything else (an orphan of unknown shape).
pub fn parse_object_key(key: &str) -> Option<ObjectKey> {
    let (dir, file) = key.rsplit_once('/')?;
    let dir = dir.rsplit('/').next()?;
    // The id is the last 22 characters; base64url may itself contain '-'.
    let split = dir.len().checked_sub(23)?;
    let (rest, topic_id) = (dir.get(..split)?, dir.get(split..)?.strip_prefix('-')?);
    let topic_id = uuid_from_base64(topic_id)?;
    let (topic, partition) = rest.rsplit_once('-')?;
    let partition: i32 = partition.parse().ok()?;
    let (offset, tail) = file.split_once('-')?;
    if offset.len() != 20 || tail.len() < 23 {
        return None;
    }
    let start: i64 = offset.parse().ok()?;
    let segment_id = uuid_from_base64(&tail[..22])?;
    let suffix = &tail[22..];
    if !all_suffixes().contains(&suffix) {
        return None;
    }
    Some(ObjectKey {
        partition: TopicIdPartition::new(topic_id, TopicPartition::new(topic, partition)),
        start_offset: Offset(start),
        segment_id,
        suffix: suffix.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_kafka_layout_and_parse_back() {
        let topic_id = uuid_from_base64("LWgrMmVrT0a__7a4SasuPA").unwrap();
        let tp = TopicIdPartition::new(topic_id, TopicPartition::new("topic-A", 0));
        let id = RemoteLogSegmentId {
            partition: tp.clone(),
            id: Uuid::from_u64_pair(1, 2),
        };
        let key = object_key(&id, Offset(42), ".timeindex");
        assert_eq!(
            key,
            "topic-A-0-LWgrMmVrT0a__7a4SasuPA/00000000000000000042-AAAAAAAAAAEAAAAAAAAAAg.timeindex"
        );
        let parsed = parse_object_key(&format!("kafka-tiered-storage/{key}")).unwrap();
        assert_eq!(parsed.partition, tp);
        assert_eq!(parsed.start_offset, Offset(42));
        assert_eq!(parsed.segment_id, id.id);
        assert_eq!(parsed.suffix, ".timeindex");
    }

    #[test]
    fn ids_containing_dashes_parse_back() {
        // base64url uses '-': the topic id and the segment id may hold it
        // (as may the topic name), so the key is split by length, not by '-'.
        let topic_id = uuid_from_base64("H04sN5eNRj-CR0ynh1yzyA").unwrap();
        let tp = TopicIdPartition::new(topic_id, TopicPartition::new("tiered-crash", 3));
        let id = RemoteLogSegmentId {
            partition: tp.clone(),
            id: uuid_from_base64("03Ocu-4wSECVgv15186nBg").unwrap(),
        };
        let key = object_key(&id, Offset(417), ".leader_epoch_checkpoint");
        let parsed = parse_object_key(&key).unwrap();
        assert_eq!(parsed.partition, tp);
        assert_eq!(parsed.start_offset, Offset(417));
        assert_eq!(parsed.segment_id, id.id);
        assert_eq!(parsed.suffix, ".leader_epoch_checkpoint");
        assert_eq!(parse_object_key("-LWgrMmVrT0a__7a4SasuPA/x"), None);
        assert_eq!(parse_object_key("LWgrMmVrT0a__7a4SasuPA/x"), None);
    }

    #[test]
    fn foreign_keys_are_not_parsed() {
        for key in [
            "junk",
            "t-0-LWgrMmVrT0a__7a4SasuPA/00000000000000000042-AAAAAAAAAAEAAAAAAAAAAg.exe",
            "t-0-LWgrMmVrT0a__7a4SasuPA/42-AAAAAAAAAAEAAAAAAAAAAg.log",
            "t-x-LWgrMmVrT0a__7a4SasuPA/00000000000000000042-AAAAAAAAAAEAAAAAAAAAAg.log",
        ] {
            assert_eq!(parse_object_key(key), None, "{key}");
        }
    }
}
