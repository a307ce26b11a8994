//! The remote-tier data model (KIP-405, reference §3): segment ids, segment
//! metadata, updates, partition-deletion events and the two state machines.
//!
//! The state machines are enforced here, once: every metadata store calls
//! [`RemoteLogSegmentState::check_transition`] before applying an event, so
//! an out-of-order event is a typed [`InvalidTransition`] and never silently
//! changes the catalogue.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use strata_log::{LeaderEpoch, Offset, Timestamp, TopicPartition};
use uuid::Uuid;

/// A topic partition plus its topic id (Kafka `TopicIdPartition`): remote
/// data is keyed by both so a re-created topic never sees old segments.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicIdPartition {
    pub topic_id: Uuid,
    pub tp: TopicPartition,
}

impl TopicIdPartition {
    pub fn new(topic_id: Uuid, tp: TopicPartition) -> TopicIdPartition {
        TopicIdPartition { topic_id, tp }
    }
}

impl fmt::Display for TopicIdPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}-{}",
            uuid_base64(self.topic_id),
            self.tp.topic,
            self.tp.partition
        )
    }
}

/// Kafka's 22-character base64url (no padding) form of a UUID.
pub fn uuid_base64(id: Uuid) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.as_bytes())
}

/// Parse Kafka's 22-character base64url UUID form.
pub fn uuid_from_base64(s: &str) -> Option<Uuid> {
    if s.len() != 22 {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .ok()?;
    Uuid::from_slice(&bytes).ok()
}

/// Identity of one copy attempt of one segment (Kafka `RemoteLogSegmentId`).
/// A fresh id is generated for every attempt, even a retry.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RemoteLogSegmentId {
    pub partition: TopicIdPartition,
    pub id: Uuid,
}

impl RemoteLogSegmentId {
    /// A new random id (Kafka `generateNew`).
    pub fn generate(partition: TopicIdPartition) -> RemoteLogSegmentId {
        RemoteLogSegmentId {
            partition,
            id: Uuid::new_v4(),
        }
    }
}

impl fmt::Display for RemoteLogSegmentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.partition, uuid_base64(self.id))
    }
}

/// Life cycle of a remote segment; the byte is the value on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RemoteLogSegmentState {
    CopySegmentStarted = 0,
    CopySegmentFinished = 1,
    DeleteSegmentStarted = 2,
    DeleteSegmentFinished = 3,
}

/// A state change the machine forbids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid remote segment state transition {from:?} -> {to:?}")]
pub struct InvalidTransition {
    /// `None` = the segment is not known yet.
    pub from: Option<RemoteLogSegmentState>,
    pub to: RemoteLogSegmentState,
}

impl RemoteLogSegmentState {
    pub fn id(self) -> i8 {
        self as i8
    }

    pub fn from_id(id: i8) -> Option<RemoteLogSegmentState> {
        Some(match id {
            0 => RemoteLogSegmentState::CopySegmentStarted,
            1 => RemoteLogSegmentState::CopySegmentFinished,
            2 => RemoteLogSegmentState::DeleteSegmentStarted,
            3 => RemoteLogSegmentState::DeleteSegmentFinished,
            _ => return None,
        })
    }

    /// Kafka's transition table: only STARTED may begin a life; a state may
    /// repeat (idempotent retries); STARTED → FINISHED | DELETE_STARTED;
    /// FINISHED → DELETE_STARTED; DELETE_STARTED → DELETE_FINISHED.
    pub fn check_transition(
        from: Option<RemoteLogSegmentState>,
        to: RemoteLogSegmentState,
    ) -> Result<(), InvalidTransition> {
        use RemoteLogSegmentState::*;
        let ok = match from {
            None => to == CopySegmentStarted,
            Some(f) if f == to => true,
            Some(CopySegmentStarted) => matches!(to, CopySegmentFinished | DeleteSegmentStarted),
            Some(CopySegmentFinished) => to == DeleteSegmentStarted,
            Some(DeleteSegmentStarted) => to == DeleteSegmentFinished,
            Some(DeleteSegmentFinished) => false,
        };
        if ok {
            Ok(())
        } else {
            Err(InvalidTransition { from, to })
        }
    }
}

/// Partition-deletion events (Kafka `RemotePartitionDeleteState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RemotePartitionDeleteState {
    DeletePartitionMarked = 0,
    DeletePartitionStarted = 1,
    DeletePartitionFinished = 2,
}

impl RemotePartitionDeleteState {
    pub fn from_id(id: i8) -> Option<RemotePartitionDeleteState> {
        Some(match id {
            0 => RemotePartitionDeleteState::DeletePartitionMarked,
            1 => RemotePartitionDeleteState::DeletePartitionStarted,
            2 => RemotePartitionDeleteState::DeletePartitionFinished,
            _ => return None,
        })
    }

    /// MARKED → STARTED → FINISHED, self transitions allowed, MARKED first.
    pub fn is_valid_transition(from: Option<Self>, to: Self) -> bool {
        match from {
            None => to == RemotePartitionDeleteState::DeletePartitionMarked,
            Some(f) => (to as i8) == (f as i8) || (to as i8) == (f as i8) + 1,
        }
    }
}

/// One remote segment's catalogue entry (Kafka `RemoteLogSegmentMetadata`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteLogSegmentMetadata {
    pub segment_id: RemoteLogSegmentId,
    /// First offset, inclusive.
    pub start_offset: Offset,
    /// Last offset, inclusive (next segment's base − 1).
    pub end_offset: Offset,
    pub max_timestamp: Timestamp,
    pub broker_id: i32,
    pub event_timestamp_ms: i64,
    /// Epoch → first offset of that epoch inside the segment, non-empty; the
    /// first entry starts at `start_offset`.
    pub segment_leader_epochs: BTreeMap<LeaderEpoch, Offset>,
    /// Size of the `.log` in bytes.
    pub segment_size_in_bytes: i32,
    /// Opaque bytes returned by the storage plug-in's copy.
    pub custom_metadata: Option<Vec<u8>>,
    pub state: RemoteLogSegmentState,
}

impl RemoteLogSegmentMetadata {
    /// Apply an update (Kafka `createWithUpdates`): broker, time, custom
    /// metadata and state come from the update.
    pub fn with_update(&self, update: &RemoteLogSegmentMetadataUpdate) -> RemoteLogSegmentMetadata {
        RemoteLogSegmentMetadata {
            broker_id: update.broker_id,
            event_timestamp_ms: update.event_timestamp_ms,
            custom_metadata: update.custom_metadata.clone(),
            state: update.state,
            ..self.clone()
        }
    }

    /// `(epoch, first offset, last offset)` for every epoch in the segment.
    pub fn epoch_ranges(&self) -> Vec<(LeaderEpoch, Offset, Offset)> {
        let entries: Vec<_> = self.segment_leader_epochs.iter().collect();
        entries
            .iter()
            .enumerate()
            .map(|(i, (e, start))| {
                let end = entries
                    .get(i + 1)
                    .map_or(self.end_offset, |(_, next)| Offset(next.0 - 1));
                (**e, **start, end)
            })
            .collect()
    }

    /// The last epoch in the segment.
    pub fn last_epoch(&self) -> Option<LeaderEpoch> {
        self.segment_leader_epochs.keys().next_back().copied()
    }
}

/// A state change of an existing segment (Kafka `RemoteLogSegmentMetadataUpdate`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteLogSegmentMetadataUpdate {
    pub segment_id: RemoteLogSegmentId,
    pub event_timestamp_ms: i64,
    pub custom_metadata: Option<Vec<u8>>,
    pub state: RemoteLogSegmentState,
    pub broker_id: i32,
}

/// Partition-deletion event (Kafka `RemotePartitionDeleteMetadata`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemotePartitionDeleteMetadata {
    pub partition: TopicIdPartition,
    pub state: RemotePartitionDeleteState,
    pub event_timestamp_ms: i64,
    pub broker_id: i32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use RemoteLogSegmentState::*;

    #[test]
    fn transition_table_matches_kafka() {
        let all = [
            CopySegmentStarted,
            CopySegmentFinished,
            DeleteSegmentStarted,
            DeleteSegmentFinished,
        ];
        let allowed = |from: Option<RemoteLogSegmentState>, to| {
            RemoteLogSegmentState::check_transition(from, to).is_ok()
        };
        for to in all {
            assert_eq!(
                allowed(None, to),
                to == CopySegmentStarted,
                "none -> {to:?}"
            );
        }
        let valid: &[(RemoteLogSegmentState, RemoteLogSegmentState)] = &[
            (CopySegmentStarted, CopySegmentFinished),
            (CopySegmentStarted, DeleteSegmentStarted),
            (CopySegmentFinished, DeleteSegmentStarted),
            (DeleteSegmentStarted, DeleteSegmentFinished),
        ];
        for from in all {
            for to in all {
                let expect = from == to || valid.contains(&(from, to));
                assert_eq!(allowed(Some(from), to), expect, "{from:?} -> {to:?}");
            }
        }
        let err = RemoteLogSegmentState::check_transition(
            Some(DeleteSegmentFinished),
            CopySegmentStarted,
        )
        .unwrap_err();
        assert_eq!(
            err,
            InvalidTransition {
                from: Some(DeleteSegmentFinished),
                to: CopySegmentStarted
            }
        );
    }

    #[test]
    fn state_ids_round_trip_and_reject_unknown() {
        for s in [
            CopySegmentStarted,
            CopySegmentFinished,
            DeleteSegmentStarted,
            DeleteSegmentFinished,
        ] {
            assert_eq!(RemoteLogSegmentState::from_id(s.id()), Some(s));
        }
        assert_eq!(RemoteLogSegmentState::from_id(4), None);
        assert_eq!(RemoteLogSegmentState::from_id(-1), None);
    }

    #[test]
    fn base64_ids_match_kafka_form() {
        let id = Uuid::from_u64_pair(0x0123456789abcdef, 0x0fedcba987654321);
        assert_eq!(uuid_base64(id), "ASNFZ4mrze8P7cuph2VDIQ");
        assert_eq!(uuid_from_base64("ASNFZ4mrze8P7cuph2VDIQ"), Some(id));
        assert_eq!(uuid_from_base64("short"), None);
    }

    #[test]
    fn epoch_ranges_split_at_epoch_starts() {
        let tp = TopicIdPartition::new(Uuid::nil(), TopicPartition::new("t", 0));
        let md = RemoteLogSegmentMetadata {
            segment_id: RemoteLogSegmentId::generate(tp),
            start_offset: Offset(10),
            end_offset: Offset(29),
            max_timestamp: Timestamp(5),
            broker_id: 0,
            event_timestamp_ms: 0,
            segment_leader_epochs: [(LeaderEpoch(1), Offset(10)), (LeaderEpoch(3), Offset(20))]
                .into(),
            segment_size_in_bytes: 100,
            custom_metadata: None,
            state: CopySegmentStarted,
        };
        assert_eq!(
            md.epoch_ranges(),
            vec![
                (LeaderEpoch(1), Offset(10), Offset(19)),
                (LeaderEpoch(3), Offset(20), Offset(29))
            ]
        );
        assert_eq!(md.last_epoch(), Some(LeaderEpoch(3)));
    }
}
