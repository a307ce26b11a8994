//! The KIP-848 consumer-group records of `__consumer_offsets` (record types
//! 3–8 of Kafka 3.9 and type 16 of Kafka 4.0), byte-compatible with the
//! group coordinator's `ConsumerGroup*Key.json` / `ConsumerGroup*Value.json`
//! schemas (group-coordinator `common/message/`).
//!
//! Keys are **not** flexible: an `int16` record type (the key "version"),
//! then `int16`-length strings. Values are version 0 and **flexible**: an
//! `int16` version (0), then compact strings and arrays (length + 1 as an
//! unsigned varint, 0 = null), 16-byte uuids, and a tagged-field section at
//! the end of every struct, nested ones included. Unknown tagged fields are
//! skipped on read and bytes after the last field are ignored, as Kafka's
//! generated readers do. Every array count is checked against the bytes left
//! before anything is allocated, so no input can make the decoder allocate
//! out of proportion or panic.
//!
//! | type | key | value |
//! |---|---|---|
//! | 3 | `ConsumerGroupMetadataKey` (group) | [`ConsumerGroupMetadataValue`] |
//! | 4 | `ConsumerGroupPartitionMetadataKey` (group) | [`PartitionMetadataValue`] |
//! | 5 | `ConsumerGroupMemberMetadataKey` (group, member) | [`MemberMetadataValue`] |
//! | 6 | `ConsumerGroupTargetAssignmentMetadataKey` (group) | [`TargetAssignmentMetadataValue`] |
//! | 7 | `ConsumerGroupTargetAssignmentMemberKey` (group, member) | [`TargetAssignmentMemberValue`] |
//! | 8 | `ConsumerGroupCurrentMemberAssignmentKey` (group, member) | [`CurrentMemberAssignmentValue`] |
//! | 16 | `ConsumerGroupRegularExpressionKey` (group, regex) | [`RegularExpressionValue`] |
//!
//! A null value is a tombstone. The classic record types 0–2 live in
//! [`super::records`], whose reader and writer this module shares.

use bytes::Bytes;
use uuid::Uuid;

use super::records::{Reader, RecordError, Writer};

/// The only value version of every consumer-group record.
pub(crate) const CONSUMER_GROUP_VALUE_VERSION: i16 = 0;

/// Record type of `ConsumerGroupMetadata`.
pub(crate) const METADATA_TYPE: i16 = 3;
/// Record type of `ConsumerGroupPartitionMetadata`.
pub(crate) const PARTITION_METADATA_TYPE: i16 = 4;
/// Record type of `ConsumerGroupMemberMetadata`.
pub(crate) const MEMBER_METADATA_TYPE: i16 = 5;
/// Record type of `ConsumerGroupTargetAssignmentMetadata`.
pub(crate) const TARGET_ASSIGNMENT_METADATA_TYPE: i16 = 6;
/// Record type of `ConsumerGroupTargetAssignmentMember`.
pub(crate) const TARGET_ASSIGNMENT_MEMBER_TYPE: i16 = 7;
/// Record type of `ConsumerGroupCurrentMemberAssignment`.
pub(crate) const CURRENT_MEMBER_ASSIGNMENT_TYPE: i16 = 8;
/// Record type of `ConsumerGroupRegularExpression` (Kafka 4.0).
pub(crate) const REGULAR_EXPRESSION_TYPE: i16 = 16;

/// The tag of `ConsumerGroupMemberMetadataValue.ClassicMemberMetadata`.
const CLASSIC_MEMBER_METADATA_TAG: u64 = 0;

/// The key of a consumer-group record.
///
/// Format (not flexible):
/// ```text
/// int16  type               3..=8 or 16
/// string groupId            int16 length + UTF-8
/// string memberId           types 5, 7, 8
/// string regularExpression  type 16
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ConsumerGroupKey {
    /// 3: the group epoch.
    Metadata { group_id: String },
    /// 4: the metadata of the subscribed topics.
    PartitionMetadata { group_id: String },
    /// 5: one member's subscription and client data.
    MemberMetadata { group_id: String, member_id: String },
    /// 6: the epoch of the target assignment.
    TargetAssignmentMetadata { group_id: String },
    /// 7: one member's target assignment.
    TargetAssignmentMember { group_id: String, member_id: String },
    /// 8: one member's current assignment and epoch.
    CurrentMemberAssignment { group_id: String, member_id: String },
    /// 16: the topics a subscribed regular expression resolved to (4.0).
    RegularExpression { group_id: String, regex: String },
}

impl ConsumerGroupKey {
    /// The record type (the key's leading `int16`).
    pub(crate) fn record_type(&self) -> i16 {
        match self {
            ConsumerGroupKey::Metadata { .. } => METADATA_TYPE,
            ConsumerGroupKey::PartitionMetadata { .. } => PARTITION_METADATA_TYPE,
            ConsumerGroupKey::MemberMetadata { .. } => MEMBER_METADATA_TYPE,
            ConsumerGroupKey::TargetAssignmentMetadata { .. } => TARGET_ASSIGNMENT_METADATA_TYPE,
            ConsumerGroupKey::TargetAssignmentMember { .. } => TARGET_ASSIGNMENT_MEMBER_TYPE,
            ConsumerGroupKey::CurrentMemberAssignment { .. } => CURRENT_MEMBER_ASSIGNMENT_TYPE,
            ConsumerGroupKey::RegularExpression { .. } => REGULAR_EXPRESSION_TYPE,
        }
    }

    /// The group the record belongs to.
    pub(crate) fn group_id(&self) -> &str {
        match self {
            ConsumerGroupKey::Metadata { group_id }
            | ConsumerGroupKey::PartitionMetadata { group_id }
            | ConsumerGroupKey::MemberMetadata { group_id, .. }
            | ConsumerGroupKey::TargetAssignmentMetadata { group_id }
            | ConsumerGroupKey::TargetAssignmentMember { group_id, .. }
            | ConsumerGroupKey::CurrentMemberAssignment { group_id, .. }
            | ConsumerGroupKey::RegularExpression { group_id, .. } => group_id,
        }
    }

    /// The second key string: the member id (types 5, 7, 8) or the regular
    /// expression (type 16).
    fn second(&self) -> Option<&str> {
        match self {
            ConsumerGroupKey::MemberMetadata { member_id, .. }
            | ConsumerGroupKey::TargetAssignmentMember { member_id, .. }
            | ConsumerGroupKey::CurrentMemberAssignment { member_id, .. } => Some(member_id),
            ConsumerGroupKey::RegularExpression { regex, .. } => Some(regex),
            _ => None,
        }
    }

    /// Encode as Kafka writes the key.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new(false);
        w.i16(self.record_type());
        w.string(self.group_id());
        if let Some(s) = self.second() {
            w.string(s);
        }
        w.out
    }

    /// Decode the body of a key whose type (`record_type`, already read) is
    /// a consumer-group type; `None` for any other type.
    pub(super) fn decode_body(
        record_type: i16,
        r: &mut Reader<'_>,
    ) -> Result<Option<ConsumerGroupKey>, RecordError> {
        let key = match record_type {
            METADATA_TYPE => ConsumerGroupKey::Metadata {
                group_id: r.string()?,
            },
            PARTITION_METADATA_TYPE => ConsumerGroupKey::PartitionMetadata {
                group_id: r.string()?,
            },
            MEMBER_METADATA_TYPE => ConsumerGroupKey::MemberMetadata {
                group_id: r.string()?,
                member_id: r.string()?,
            },
            TARGET_ASSIGNMENT_METADATA_TYPE => ConsumerGroupKey::TargetAssignmentMetadata {
                group_id: r.string()?,
            },
            TARGET_ASSIGNMENT_MEMBER_TYPE => ConsumerGroupKey::TargetAssignmentMember {
                group_id: r.string()?,
                member_id: r.string()?,
            },
            CURRENT_MEMBER_ASSIGNMENT_TYPE => ConsumerGroupKey::CurrentMemberAssignment {
                group_id: r.string()?,
                member_id: r.string()?,
            },
            REGULAR_EXPRESSION_TYPE => ConsumerGroupKey::RegularExpression {
                group_id: r.string()?,
                regex: r.string()?,
            },
            _ => return Ok(None),
        };
        Ok(Some(key))
    }
}

/// Type 3: the group epoch.
///
/// Format:
/// ```text
/// int16  version  0
/// int32  epoch
/// tagged fields
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConsumerGroupMetadataValue {
    pub epoch: i32,
}

/// One subscribed topic inside [`PartitionMetadataValue`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TopicMetadataEntry {
    pub topic_id: Uuid,
    pub topic_name: String,
    pub num_partitions: i32,
    /// `(partition, racks)`; empty when no partition has rack information.
    pub partition_racks: Vec<(i32, Vec<String>)>,
}

/// Type 4: the metadata of the topics the group subscribes to.
///
/// Format:
/// ```text
/// int16  version  0
/// compact array topics:
///   uuid   topicId
///   compact string topicName
///   int32  numPartitions
///   compact array partitionMetadata:
///     int32  partition
///     compact array of compact string racks
///     tagged fields
///   tagged fields
/// tagged fields
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PartitionMetadataValue {
    pub topics: Vec<TopicMetadataEntry>,
}

/// What a member that joined with the classic protocol supports, inside
/// [`MemberMetadataValue`] (tagged field 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClassicMemberMetadata {
    pub session_timeout_ms: i32,
    /// `(protocol name, protocol metadata)`.
    pub supported_protocols: Vec<(String, Bytes)>,
}

/// Type 5: one member's subscription and client data.
///
/// Format:
/// ```text
/// int16  version  0
/// compact nullable string instanceId
/// compact nullable string rackId
/// compact string clientId
/// compact string clientHost
/// compact array of compact string subscribedTopicNames
/// compact nullable string subscribedTopicRegex
/// int32  rebalanceTimeoutMs            (default -1)
/// compact nullable string serverAssignor
/// tagged fields; tag 0 = classicMemberMetadata (absent = null):
///   uvarint 1 (non-null marker; 0 = null)
///   int32  sessionTimeoutMs
///   compact array supportedProtocols:
///     compact string name
///     compact bytes  metadata
///     tagged fields
///   tagged fields
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MemberMetadataValue {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
    /// `None` for members using the consumer protocol.
    pub classic_member_metadata: Option<ClassicMemberMetadata>,
}

/// Type 6: the epoch of the group's target assignment.
///
/// Format:
/// ```text
/// int16  version  0
/// int32  assignmentEpoch
/// tagged fields
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TargetAssignmentMetadataValue {
    pub assignment_epoch: i32,
}

/// Partitions by topic id, as both assignment values store them:
/// a compact array of `{uuid topicId, compact array of int32 partitions,
/// tagged fields}`.
pub(crate) type TopicPartitions = Vec<(Uuid, Vec<i32>)>;

/// Type 7: one member's target assignment.
///
/// Format:
/// ```text
/// int16  version  0
/// topicPartitions   (see TopicPartitions)
/// tagged fields
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TargetAssignmentMemberValue {
    pub topic_partitions: TopicPartitions,
}

/// Type 8: one member's current assignment and epochs.
///
/// Format:
/// ```text
/// int16  version  0
/// int32  memberEpoch
/// int32  previousMemberEpoch
/// int8   state   (0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS, 127 UNKNOWN)
/// assignedPartitions            (see TopicPartitions)
/// partitionsPendingRevocation   (see TopicPartitions)
/// tagged fields
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CurrentMemberAssignmentValue {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: i8,
    pub assigned_partitions: TopicPartitions,
    pub partitions_pending_revocation: TopicPartitions,
}

/// Type 16 (Kafka 4.0): the topics a regular expression resolved to.
///
/// Format:
/// ```text
/// int16  version  0
/// compact array of compact string topics
/// int64  version    (the metadata image version it was resolved against)
/// int64  timestamp  (ms)
/// tagged fields
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RegularExpressionValue {
    pub topics: Vec<String>,
    pub version: i64,
    pub timestamp: i64,
}

/// A reader positioned after the value version, which must be 0.
fn value_reader<'a>(bytes: &'a [u8], what: &'static str) -> Result<Reader<'a>, RecordError> {
    let mut r = Reader::new(bytes, what, true);
    let version = r.i16()?;
    if version != CONSUMER_GROUP_VALUE_VERSION {
        return Err(RecordError::UnsupportedVersion { what, version });
    }
    Ok(r)
}

/// A flexible writer with the value version written.
fn value_writer() -> Writer {
    let mut w = Writer::new(true);
    w.i16(CONSUMER_GROUP_VALUE_VERSION);
    w
}

fn read_strings(r: &mut Reader<'_>) -> Result<Vec<String>, RecordError> {
    let n = r.count(1)?;
    (0..n).map(|_| r.string()).collect()
}

fn write_strings(w: &mut Writer, strings: &[String]) {
    w.array_len(strings.len());
    for s in strings {
        w.string(s);
    }
}

fn read_topic_partitions(r: &mut Reader<'_>) -> Result<TopicPartitions, RecordError> {
    // uuid (16) + partitions length (1) + tagged fields (1).
    let n = r.count(18)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let topic_id = r.uuid()?;
        let count = r.count(4)?;
        let partitions = (0..count).map(|_| r.i32()).collect::<Result<_, _>>()?;
        r.skip_tagged_fields()?;
        out.push((topic_id, partitions));
    }
    Ok(out)
}

fn write_topic_partitions(w: &mut Writer, topics: &[(Uuid, Vec<i32>)]) {
    w.array_len(topics.len());
    for (topic_id, partitions) in topics {
        w.uuid(*topic_id);
        w.array_len(partitions.len());
        for p in partitions {
            w.i32(*p);
        }
        w.tagged_fields();
    }
}

impl ConsumerGroupMetadataValue {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = value_writer();
        w.i32(self.epoch);
        w.tagged_fields();
        w.out
    }

    /// # Errors
    /// Truncated bytes or a version other than 0.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let mut r = value_reader(bytes, "ConsumerGroupMetadataValue")?;
        let epoch = r.i32()?;
        r.skip_tagged_fields()?;
        Ok(ConsumerGroupMetadataValue { epoch })
    }
}

impl PartitionMetadataValue {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = value_writer();
        w.array_len(self.topics.len());
        for t in &self.topics {
            w.uuid(t.topic_id);
            w.string(&t.topic_name);
            w.i32(t.num_partitions);
            w.array_len(t.partition_racks.len());
            for (partition, racks) in &t.partition_racks {
                w.i32(*partition);
                write_strings(&mut w, racks);
                w.tagged_fields();
            }
            w.tagged_fields();
        }
        w.tagged_fields();
        w.out
    }

    /// # Errors
    /// Truncated or malformed bytes, or a version other than 0.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let mut r = value_reader(bytes, "ConsumerGroupPartitionMetadataValue")?;
        // uuid + name + int32 + array + tagged fields.
        let n = r.count(23)?;
        let mut topics = Vec::with_capacity(n);
        for _ in 0..n {
            let topic_id = r.uuid()?;
            let topic_name = r.string()?;
            let num_partitions = r.i32()?;
            // int32 + racks array + tagged fields.
            let count = r.count(6)?;
            let mut partition_racks = Vec::with_capacity(count);
            for _ in 0..count {
                let partition = r.i32()?;
                let racks = read_strings(&mut r)?;
                r.skip_tagged_fields()?;
                partition_racks.push((partition, racks));
            }
            r.skip_tagged_fields()?;
            topics.push(TopicMetadataEntry {
                topic_id,
                topic_name,
                num_partitions,
                partition_racks,
            });
        }
        r.skip_tagged_fields()?;
        Ok(PartitionMetadataValue { topics })
    }
}

impl ClassicMemberMetadata {
    /// The tagged field's payload: the non-null marker, then the struct.
    fn encode_tagged(&self) -> Vec<u8> {
        let mut w = Writer::new(true);
        w.uvarint(1);
        w.i32(self.session_timeout_ms);
        w.array_len(self.supported_protocols.len());
        for (name, metadata) in &self.supported_protocols {
            w.string(name);
            w.bytes(metadata);
            w.tagged_fields();
        }
        w.tagged_fields();
        w.out
    }

    /// Read the tagged field's payload (Kafka's nullable tagged struct: a
    /// marker varint, 0 for null, then the struct).
    fn decode_tagged(r: &mut Reader<'_>) -> Result<Option<Self>, RecordError> {
        if r.uvarint()? == 0 {
            return Ok(None);
        }
        let session_timeout_ms = r.i32()?;
        // name + bytes + tagged fields.
        let n = r.count(3)?;
        let mut supported_protocols = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.string()?;
            let metadata = r.non_null_bytes()?;
            r.skip_tagged_fields()?;
            supported_protocols.push((name, metadata));
        }
        r.skip_tagged_fields()?;
        Ok(Some(ClassicMemberMetadata {
            session_timeout_ms,
            supported_protocols,
        }))
    }
}

impl MemberMetadataValue {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = value_writer();
        w.nullable_string(self.instance_id.as_deref());
        w.nullable_string(self.rack_id.as_deref());
        w.string(&self.client_id);
        w.string(&self.client_host);
        write_strings(&mut w, &self.subscribed_topic_names);
        w.nullable_string(self.subscribed_topic_regex.as_deref());
        w.i32(self.rebalance_timeout_ms);
        w.nullable_string(self.server_assignor.as_deref());
        // A null tagged field equal to its default (null) is not written.
        match &self.classic_member_metadata {
            None => w.tagged_fields(),
            Some(classic) => {
                let payload = classic.encode_tagged();
                w.uvarint(1);
                w.uvarint(CLASSIC_MEMBER_METADATA_TAG);
                w.uvarint(payload.len() as u64);
                w.raw(&payload);
            }
        }
        w.out
    }

    /// # Errors
    /// Truncated or malformed bytes, or a version other than 0.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let mut r = value_reader(bytes, "ConsumerGroupMemberMetadataValue")?;
        let instance_id = r.nullable_string()?;
        let rack_id = r.nullable_string()?;
        let client_id = r.string()?;
        let client_host = r.string()?;
        let subscribed_topic_names = read_strings(&mut r)?;
        let subscribed_topic_regex = r.nullable_string()?;
        let rebalance_timeout_ms = r.i32()?;
        let server_assignor = r.nullable_string()?;
        let mut classic_member_metadata = None;
        for (tag, mut field) in r.tagged_fields()? {
            if tag == CLASSIC_MEMBER_METADATA_TAG {
                classic_member_metadata = ClassicMemberMetadata::decode_tagged(&mut field)?;
            }
        }
        Ok(MemberMetadataValue {
            instance_id,
            rack_id,
            client_id,
            client_host,
            subscribed_topic_names,
            subscribed_topic_regex,
            rebalance_timeout_ms,
            server_assignor,
            classic_member_metadata,
        })
    }
}

impl TargetAssignmentMetadataValue {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = value_writer();
        w.i32(self.assignment_epoch);
        w.tagged_fields();
        w.out
    }

    /// # Errors
    /// Truncated bytes or a version other than 0.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let mut r = value_reader(bytes, "ConsumerGroupTargetAssignmentMetadataValue")?;
        let assignment_epoch = r.i32()?;
        r.skip_tagged_fields()?;
        Ok(TargetAssignmentMetadataValue { assignment_epoch })
    }
}

impl TargetAssignmentMemberValue {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = value_writer();
        write_topic_partitions(&mut w, &self.topic_partitions);
        w.tagged_fields();
        w.out
    }

    /// # Errors
    /// Truncated or malformed bytes, or a version other than 0.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let mut r = value_reader(bytes, "ConsumerGroupTargetAssignmentMemberValue")?;
        let topic_partitions = read_topic_partitions(&mut r)?;
        r.skip_tagged_fields()?;
        Ok(TargetAssignmentMemberValue { topic_partitions })
    }
}

impl CurrentMemberAssignmentValue {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = value_writer();
        w.i32(self.member_epoch);
        w.i32(self.previous_member_epoch);
        w.i8(self.state);
        write_topic_partitions(&mut w, &self.assigned_partitions);
        write_topic_partitions(&mut w, &self.partitions_pending_revocation);
        w.tagged_fields();
        w.out
    }

    /// # Errors
    /// Truncated or malformed bytes, or a version other than 0.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let mut r = value_reader(bytes, "ConsumerGroupCurrentMemberAssignmentValue")?;
        let member_epoch = r.i32()?;
        let previous_member_epoch = r.i32()?;
        let state = r.i8()?;
        let assigned_partitions = read_topic_partitions(&mut r)?;
        let partitions_pending_revocation = read_topic_partitions(&mut r)?;
        r.skip_tagged_fields()?;
        Ok(CurrentMemberAssignmentValue {
            member_epoch,
            previous_member_epoch,
            state,
            assigned_partitions,
            partitions_pending_revocation,
        })
    }
}

impl RegularExpressionValue {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = value_writer();
        write_strings(&mut w, &self.topics);
        w.i64(self.version);
        w.i64(self.timestamp);
        w.tagged_fields();
        w.out
    }

    /// # Errors
    /// Truncated or malformed bytes, or a version other than 0.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let mut r = value_reader(bytes, "ConsumerGroupRegularExpressionValue")?;
        let topics = read_strings(&mut r)?;
        let version = r.i64()?;
        let timestamp = r.i64()?;
        r.skip_tagged_fields()?;
        Ok(RegularExpressionValue {
            topics,
            version,
            timestamp,
        })
    }
}

/// A decoded consumer-group value, for callers that dispatch on the key's
/// type (the dump tool, the fuzz target).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ConsumerGroupValue {
    Metadata(ConsumerGroupMetadataValue),
    PartitionMetadata(PartitionMetadataValue),
    MemberMetadata(MemberMetadataValue),
    TargetAssignmentMetadata(TargetAssignmentMetadataValue),
    TargetAssignmentMember(TargetAssignmentMemberValue),
    CurrentMemberAssignment(CurrentMemberAssignmentValue),
    RegularExpression(RegularExpressionValue),
}

impl ConsumerGroupValue {
    /// Decode `bytes` as the value of a record of `key`'s type.
    ///
    /// # Errors
    /// Bytes that do not follow that type's value schema.
    pub(crate) fn decode(key: &ConsumerGroupKey, bytes: &[u8]) -> Result<Self, RecordError> {
        Self::decode_type(key.record_type(), bytes).unwrap_or(Err(
            RecordError::UnsupportedVersion {
                what: "consumer group record type",
                version: key.record_type(),
            },
        ))
    }

    /// Decode as the value of record type `record_type`; `None` for a type
    /// that is not a consumer-group type.
    fn decode_type(record_type: i16, bytes: &[u8]) -> Option<Result<Self, RecordError>> {
        Some(match record_type {
            METADATA_TYPE => ConsumerGroupMetadataValue::decode(bytes).map(Self::Metadata),
            PARTITION_METADATA_TYPE => {
                PartitionMetadataValue::decode(bytes).map(Self::PartitionMetadata)
            }
            MEMBER_METADATA_TYPE => MemberMetadataValue::decode(bytes).map(Self::MemberMetadata),
            TARGET_ASSIGNMENT_METADATA_TYPE => {
                TargetAssignmentMetadataValue::decode(bytes).map(Self::TargetAssignmentMetadata)
            }
            TARGET_ASSIGNMENT_MEMBER_TYPE => {
                TargetAssignmentMemberValue::decode(bytes).map(Self::TargetAssignmentMember)
            }
            CURRENT_MEMBER_ASSIGNMENT_TYPE => {
                CurrentMemberAssignmentValue::decode(bytes).map(Self::CurrentMemberAssignment)
            }
            REGULAR_EXPRESSION_TYPE => {
                RegularExpressionValue::decode(bytes).map(Self::RegularExpression)
            }
            _ => return None,
        })
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        match self {
            Self::Metadata(v) => v.encode(),
            Self::PartitionMetadata(v) => v.encode(),
            Self::MemberMetadata(v) => v.encode(),
            Self::TargetAssignmentMetadata(v) => v.encode(),
            Self::TargetAssignmentMember(v) => v.encode(),
            Self::CurrentMemberAssignment(v) => v.encode(),
            Self::RegularExpression(v) => v.encode(),
        }
    }

    /// The fuzzing half for these values: `bytes` through every value
    /// decoder; whatever decodes must encode to bytes that decode to itself.
    ///
    /// # Panics
    /// When a decoded value does not decode again to itself.
    pub(super) fn fuzz_round_trip(bytes: &[u8]) {
        for record_type in [3, 4, 5, 6, 7, 8, 16] {
            if let Some(Ok(v)) = Self::decode_type(record_type, bytes) {
                let again = Self::decode_type(record_type, &v.encode());
                assert_eq!(again, Some(Ok(v)), "record type {record_type}");
            }
        }
    }
}

#[cfg(test)]
#[path = "records_consumer_tests.rs"]
mod tests;
