//! `__consumer_offsets` records as JSON text, in the shape Kafka's
//! `kafka-dump-log.sh --offsets-decoder` prints them (`DumpLogSegments`
//! `OffsetsMessageParser`, through the generated `*JsonConverter`s):
//!
//! ```text
//! key:     {"type":"<record type>","data":{<key fields>}}
//! payload: {"version":"<value version>","data":{<value fields>}}
//! ```
//!
//! Field names are the schemas' (camelCase), in schema order; uuids print as
//! Kafka's `Uuid.toString` (unpadded base64url), bytes as padded base64,
//! nullable fields as `null`, and a tagged field only when it differs from
//! its default (`classicMemberMetadata` only when present). Fields outside
//! the record's version are left out. In a classic group of protocol type
//! `consumer`, each member's `subscription` and `assignment` are decoded as
//! `ConsumerProtocolSubscription` / `ConsumerProtocolAssignment`, or left as
//! base64 when they do not decode, as Kafka does.
//!
//! The decoding itself is the coordinator's ([`super::records`],
//! [`super::records_consumer`]): the dump tool and the loader share one
//! reader per record type.

use base64::Engine;
use uuid::Uuid;

use super::records::{
    decode_key, GroupMetadataValue, OffsetCommitValue, Reader, RecordError, RecordKey,
};
use super::records_consumer::{
    ConsumerGroupKey, ConsumerGroupValue, CurrentMemberAssignmentValue, MemberMetadataValue,
    PartitionMetadataValue, TopicPartitions,
};

/// A `__consumer_offsets` record rendered for the dump tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OffsetsRecordText {
    /// A record of a known type.
    Decoded {
        /// The key's leading `int16` (0–8, 16).
        record_type: i16,
        /// `{"type":"N","data":{...}}`.
        key: String,
        /// `{"version":"V","data":{...}}`; `None` for a tombstone.
        value: Option<String>,
    },
    /// A record type this decoder does not know (share and streams groups);
    /// Kafka's tool prints `Unknown record type N at offset O, skipping.`.
    UnknownType { record_type: i16 },
}

/// Decode and render one `__consumer_offsets` record (key and value bytes;
/// `value` is `None` for a tombstone).
///
/// # Errors
/// Key or value bytes that do not follow their schema.
pub fn describe_record(key: &[u8], value: Option<&[u8]>) -> Result<OffsetsRecordText, RecordError> {
    let decoded = decode_key(key)?;
    let (record_type, data) = match &decoded {
        RecordKey::OffsetCommit(k) => {
            let mut o = Obj::new();
            o.str("group", &k.group);
            o.str("topic", &k.topic);
            o.num("partition", k.partition);
            // Types 0 and 1 share one schema.
            (leading_i16(key), o.end())
        }
        RecordKey::GroupMetadata(k) => {
            let mut o = Obj::new();
            o.str("group", &k.group);
            (2, o.end())
        }
        RecordKey::ConsumerGroup(k) => (k.record_type(), consumer_key(k)),
        RecordKey::Unknown { version } => {
            return Ok(OffsetsRecordText::UnknownType {
                record_type: *version,
            })
        }
    };
    let mut key_json = Obj::new();
    key_json.str("type", &record_type.to_string());
    key_json.raw("data", &data);
    let value = match value {
        None => None,
        Some(bytes) => Some(value_json(&decoded, bytes)?),
    };
    Ok(OffsetsRecordText::Decoded {
        record_type,
        key: key_json.end(),
        value,
    })
}

fn value_json(key: &RecordKey, bytes: &[u8]) -> Result<String, RecordError> {
    let (version, data) = match key {
        RecordKey::OffsetCommit(_) => {
            let v = OffsetCommitValue::decode(bytes)?;
            let version = leading_i16(bytes);
            (version, offset_commit(&v, version))
        }
        RecordKey::GroupMetadata(_) => {
            let v = GroupMetadataValue::decode(bytes)?;
            let version = leading_i16(bytes);
            (version, group_metadata(&v, version))
        }
        RecordKey::ConsumerGroup(k) => (0, consumer_value(&ConsumerGroupValue::decode(k, bytes)?)),
        RecordKey::Unknown { version } => {
            return Err(RecordError::UnsupportedVersion {
                what: "record key",
                version: *version,
            })
        }
    };
    let mut o = Obj::new();
    o.str("version", &version.to_string());
    o.raw("data", &data);
    Ok(o.end())
}

fn consumer_key(k: &ConsumerGroupKey) -> String {
    let mut o = Obj::new();
    o.str("groupId", k.group_id());
    match k {
        ConsumerGroupKey::MemberMetadata { member_id, .. }
        | ConsumerGroupKey::TargetAssignmentMember { member_id, .. }
        | ConsumerGroupKey::CurrentMemberAssignment { member_id, .. } => {
            o.str("memberId", member_id);
        }
        ConsumerGroupKey::RegularExpression { regex, .. } => o.str("regularExpression", regex),
        ConsumerGroupKey::Metadata { .. }
        | ConsumerGroupKey::PartitionMetadata { .. }
        | ConsumerGroupKey::TargetAssignmentMetadata { .. } => {}
    }
    o.end()
}

fn offset_commit(v: &OffsetCommitValue, version: i16) -> String {
    let mut o = Obj::new();
    o.num("offset", v.offset);
    if version >= 3 {
        o.num("leaderEpoch", v.leader_epoch);
    }
    o.str("metadata", &v.metadata);
    o.num("commitTimestamp", v.commit_timestamp);
    if version == 1 {
        o.num("expireTimestamp", v.expire_timestamp);
    }
    o.end()
}

fn group_metadata(v: &GroupMetadataValue, version: i16) -> String {
    let consumer = v.protocol_type == "consumer";
    let mut o = Obj::new();
    o.str("protocolType", &v.protocol_type);
    o.num("generation", v.generation);
    o.opt_str("protocol", v.protocol.as_deref());
    o.opt_str("leader", v.leader.as_deref());
    if version >= 2 {
        o.num("currentStateTimestamp", v.current_state_timestamp);
    }
    let members = v.members.iter().map(|m| {
        let mut mo = Obj::new();
        mo.str("memberId", &m.member_id);
        if version >= 3 {
            mo.opt_str("groupInstanceId", m.group_instance_id.as_deref());
        }
        mo.str("clientId", &m.client_id);
        mo.str("clientHost", &m.client_host);
        if version >= 1 {
            mo.num("rebalanceTimeout", m.rebalance_timeout);
        }
        mo.num("sessionTimeout", m.session_timeout);
        let subscription = consumer.then(|| subscription(&m.subscription)).flatten();
        mo.raw(
            "subscription",
            &subscription.unwrap_or_else(|| b64(&m.subscription)),
        );
        let assignment = consumer.then(|| assignment(&m.assignment)).flatten();
        mo.raw(
            "assignment",
            &assignment.unwrap_or_else(|| b64(&m.assignment)),
        );
        mo.end()
    });
    o.array("members", members);
    o.end()
}

/// `ConsumerProtocolSubscription` (not flexible, versions 0–3; a newer
/// version reads as 3, as Kafka's reader does), or `None` when malformed.
fn subscription(bytes: &[u8]) -> Option<String> {
    let mut r = Reader::new(bytes, "ConsumerProtocolSubscription", false);
    let version = r.i16().ok()?;
    let mut o = Obj::new();
    o.array("topics", strings(&mut r)?.into_iter());
    o.raw("userData", &nullable_bytes(&mut r)?);
    if version >= 1 {
        o.array("ownedPartitions", named_partitions(&mut r)?.into_iter());
    }
    if version >= 2 {
        o.num("generationId", r.i32().ok()?);
    }
    if version >= 3 {
        o.opt_str("rackId", r.nullable_string().ok()?.as_deref());
    }
    Some(o.end())
}

/// `ConsumerProtocolAssignment` (not flexible), or `None` when malformed.
fn assignment(bytes: &[u8]) -> Option<String> {
    let mut r = Reader::new(bytes, "ConsumerProtocolAssignment", false);
    r.i16().ok()?;
    let mut o = Obj::new();
    o.array("assignedPartitions", named_partitions(&mut r)?.into_iter());
    o.raw("userData", &nullable_bytes(&mut r)?);
    Some(o.end())
}

/// A non-nullable classic array of strings, as JSON strings.
fn strings(r: &mut Reader<'_>) -> Option<Vec<String>> {
    let n = r.count(2).ok()?;
    (0..n)
        .map(|_| r.string().ok().map(|s| json_str(&s)))
        .collect()
}

fn nullable_bytes(r: &mut Reader<'_>) -> Option<String> {
    Some(match r.nullable_bytes().ok()? {
        None => "null".to_owned(),
        Some(b) => b64(&b),
    })
}

/// `[{"topic":..,"partitions":[..]}]` of the consumer protocol.
fn named_partitions(r: &mut Reader<'_>) -> Option<Vec<String>> {
    let n = r.count(6).ok()?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let topic = r.string().ok()?;
        let count = r.count(4).ok()?;
        let partitions = (0..count)
            .map(|_| r.i32().ok().map(|p| p.to_string()))
            .collect::<Option<Vec<_>>>()?;
        let mut o = Obj::new();
        o.str("topic", &topic);
        o.array("partitions", partitions.into_iter());
        out.push(o.end());
    }
    Some(out)
}

fn consumer_value(v: &ConsumerGroupValue) -> String {
    let mut o = Obj::new();
    match v {
        ConsumerGroupValue::Metadata(v) => o.num("epoch", v.epoch),
        ConsumerGroupValue::PartitionMetadata(v) => partition_metadata(&mut o, v),
        ConsumerGroupValue::MemberMetadata(v) => member_metadata(&mut o, v),
        ConsumerGroupValue::TargetAssignmentMetadata(v) => {
            o.num("assignmentEpoch", v.assignment_epoch);
        }
        ConsumerGroupValue::TargetAssignmentMember(v) => {
            o.array("topicPartitions", topic_partitions(&v.topic_partitions));
        }
        ConsumerGroupValue::CurrentMemberAssignment(v) => current_assignment(&mut o, v),
        ConsumerGroupValue::RegularExpression(v) => {
            o.array("topics", v.topics.iter().map(|t| json_str(t)));
            o.num("version", v.version);
            o.num("timestamp", v.timestamp);
        }
    }
    o.end()
}

fn partition_metadata(o: &mut Obj, v: &PartitionMetadataValue) {
    o.array(
        "topics",
        v.topics.iter().map(|t| {
            let mut to = Obj::new();
            to.str("topicId", &uuid(t.topic_id));
            to.str("topicName", &t.topic_name);
            to.num("numPartitions", t.num_partitions);
            to.array(
                "partitionMetadata",
                t.partition_racks.iter().map(|(partition, racks)| {
                    let mut po = Obj::new();
                    po.num("partition", *partition);
                    po.array("racks", racks.iter().map(|r| json_str(r)));
                    po.end()
                }),
            );
            to.end()
        }),
    );
}

fn member_metadata(o: &mut Obj, v: &MemberMetadataValue) {
    o.opt_str("instanceId", v.instance_id.as_deref());
    o.opt_str("rackId", v.rack_id.as_deref());
    o.str("clientId", &v.client_id);
    o.str("clientHost", &v.client_host);
    o.array(
        "subscribedTopicNames",
        v.subscribed_topic_names.iter().map(|t| json_str(t)),
    );
    o.opt_str("subscribedTopicRegex", v.subscribed_topic_regex.as_deref());
    o.num("rebalanceTimeoutMs", v.rebalance_timeout_ms);
    o.opt_str("serverAssignor", v.server_assignor.as_deref());
    if let Some(c) = &v.classic_member_metadata {
        let mut co = Obj::new();
        co.num("sessionTimeoutMs", c.session_timeout_ms);
        co.array(
            "supportedProtocols",
            c.supported_protocols.iter().map(|(name, metadata)| {
                let mut po = Obj::new();
                po.str("name", name);
                po.raw("metadata", &b64(metadata));
                po.end()
            }),
        );
        o.raw("classicMemberMetadata", &co.end());
    }
}

fn current_assignment(o: &mut Obj, v: &CurrentMemberAssignmentValue) {
    o.num("memberEpoch", v.member_epoch);
    o.num("previousMemberEpoch", v.previous_member_epoch);
    o.num("state", v.state);
    o.array(
        "assignedPartitions",
        topic_partitions(&v.assigned_partitions),
    );
    o.array(
        "partitionsPendingRevocation",
        topic_partitions(&v.partitions_pending_revocation),
    );
}

fn topic_partitions(tps: &TopicPartitions) -> impl Iterator<Item = String> + '_ {
    tps.iter().map(|(topic_id, partitions)| {
        let mut o = Obj::new();
        o.str("topicId", &uuid(*topic_id));
        o.array("partitions", partitions.iter().map(ToString::to_string));
        o.end()
    })
}

/// The version or type every key and value starts with (read by a decoder
/// that succeeded, so it is there).
fn leading_i16(bytes: &[u8]) -> i16 {
    match bytes {
        [a, b, ..] => i16::from_be_bytes([*a, *b]),
        _ => -1,
    }
}

/// Kafka's `Uuid.toString`: unpadded base64url of the 16 bytes.
fn uuid(id: Uuid) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.as_bytes())
}

/// Bytes as Jackson's `BinaryNode` prints them: a padded base64 string.
fn b64(bytes: &[u8]) -> String {
    json_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn json_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// A JSON object written field by field, keeping the schema's field order
/// (a `serde_json::Map` would sort the keys).
struct Obj {
    out: String,
}

impl Obj {
    fn new() -> Obj {
        Obj {
            out: String::from("{"),
        }
    }
    fn raw(&mut self, name: &str, json: &str) {
        if self.out.len() > 1 {
            self.out.push(',');
        }
        self.out.push_str(&json_str(name));
        self.out.push(':');
        self.out.push_str(json);
    }
    fn str(&mut self, name: &str, value: &str) {
        self.raw(name, &json_str(value));
    }
    fn opt_str(&mut self, name: &str, value: Option<&str>) {
        self.raw(name, &value.map_or_else(|| "null".to_owned(), json_str));
    }
    fn num(&mut self, name: &str, value: impl Into<i64>) {
        self.raw(name, &value.into().to_string());
    }
    fn array(&mut self, name: &str, items: impl Iterator<Item = String>) {
        let items: Vec<String> = items.collect();
        self.raw(name, &format!("[{}]", items.join(",")));
    }
    fn end(mut self) -> String {
        self.out.push('}');
        self.out
    }
}

#[cfg(test)]
#[path = "records_json_tests.rs"]
mod tests;
