//! The record keys and values of `__consumer_offsets`, byte-compatible with
//! Kafka 3.9's `OffsetCommitKey`/`OffsetCommitValue` and
//! `GroupMetadataKey`/`GroupMetadataValue` schemas (group-coordinator
//! `common/message/*.json`).
//!
//! Every key and value starts with an `int16` version. The key version
//! doubles as the record type: 0 and 1 are offset commits, 2 is group
//! metadata, 3–8 and 16 are the KIP-848 consumer-group records
//! ([`RecordKey::ConsumerGroup`], codecs in [`super::records_consumer`]);
//! any other type (share and streams groups) is [`RecordKey::Unknown`]. A
//! null value is a tombstone.
//!
//! Kafka 3.9 writes OffsetCommitKey v1, OffsetCommitValue v3 (v1 when the
//! commit carried an explicit expire timestamp), GroupMetadataKey v2 and
//! GroupMetadataValue v3. Values of versions 0–4 are read; v4 is the first
//! flexible version (compact strings, tagged fields). Bytes after the last
//! field are ignored, as Kafka's generated readers ignore them.

use bytes::Bytes;
use thiserror::Error;

use super::records_consumer::{ConsumerGroupKey, ConsumerGroupValue};

/// Key version Kafka 3.9 writes for offset commits.
pub(crate) const OFFSET_COMMIT_KEY_VERSION: i16 = 1;
/// Key version of group metadata records.
pub(crate) const GROUP_METADATA_KEY_VERSION: i16 = 2;
/// OffsetCommitValue version Kafka 3.9 writes without an expire timestamp.
pub(crate) const OFFSET_COMMIT_VALUE_VERSION: i16 = 3;
/// OffsetCommitValue version that carries an expire timestamp.
pub(crate) const OFFSET_COMMIT_VALUE_EXPIRE_VERSION: i16 = 1;
/// GroupMetadataValue version Kafka 3.9 writes.
pub(crate) const GROUP_METADATA_VALUE_VERSION: i16 = 3;
/// Highest value version of either value schema.
const MAX_VALUE_VERSION: i16 = 4;
/// First flexible value version.
const FIRST_FLEXIBLE: i16 = 4;

/// Bytes of a `__consumer_offsets` record that do not follow the schemas.
///
/// Public (as `strata_broker::ConsumerOffsetsRecordError`) for the dump tool.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RecordError {
    #[error("{what} truncated at byte {position}")]
    Truncated { what: &'static str, position: usize },
    #[error("{what} has unsupported version {version}")]
    UnsupportedVersion { what: &'static str, version: i16 },
    #[error("{what} has a negative length {length} at byte {position}")]
    NegativeLength {
        what: &'static str,
        length: i64,
        position: usize,
    },
    #[error("{what} is a null string where the schema forbids null, at byte {position}")]
    UnexpectedNull { what: &'static str, position: usize },
    #[error("{what} is not valid UTF-8 at byte {position}")]
    InvalidUtf8 { what: &'static str, position: usize },
}

/// The key of an offset commit record.
///
/// Format (v0 and v1 are identical):
/// ```text
/// int16  version      0 or 1 (3.9 writes 1)
/// string group        int16 length + UTF-8
/// string topic        int16 length + UTF-8
/// int32  partition
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct OffsetCommitKey {
    pub group: String,
    pub topic: String,
    pub partition: i32,
}

/// The value of an offset commit record.
///
/// Format (`vN+` = present from version N; v4+ flexible: compact strings and a
/// trailing tagged-field section):
/// ```text
/// int16  version          0..=4 (3.9 writes 3, or 1 with an expire timestamp)
/// int64  offset
/// int32  leaderEpoch      v3+ (-1 = none)
/// string metadata
/// int64  commitTimestamp
/// int64  expireTimestamp  v1 only (-1 = none)
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OffsetCommitValue {
    pub offset: i64,
    /// -1 when unknown.
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
    /// -1 when absent (only v1 stores it).
    pub expire_timestamp: i64,
}

/// The key of a group metadata record.
///
/// Format:
/// ```text
/// int16  version  2
/// string group
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct GroupMetadataKey {
    pub group: String,
}

/// The value of a group metadata record: the group's generation and members
/// with their subscription and assignment for the chosen protocol.
///
/// Format:
/// ```text
/// int16  version                 0..=4 (3.9 writes 3)
/// string protocolType
/// int32  generation
/// nullable string protocol
/// nullable string leader
/// int64  currentStateTimestamp   v2+ (-1 = none)
/// int32  member count, then per member:
///   string memberId
///   nullable string groupInstanceId  v3+
///   string clientId
///   string clientHost
///   int32  rebalanceTimeout          v1+ (v0: equal to sessionTimeout)
///   int32  sessionTimeout
///   bytes  subscription              int32 length
///   bytes  assignment                int32 length
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GroupMetadataValue {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    /// -1 when unknown.
    pub current_state_timestamp: i64,
    pub members: Vec<MemberMetadataValue>,
}

/// One member inside [`GroupMetadataValue`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MemberMetadataValue {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout: i32,
    pub session_timeout: i32,
    pub subscription: Bytes,
    pub assignment: Bytes,
}

/// A decoded record key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RecordKey {
    OffsetCommit(OffsetCommitKey),
    GroupMetadata(GroupMetadataKey),
    /// Types 3–8 and 16: KIP-848 consumer-group records.
    ConsumerGroup(ConsumerGroupKey),
    /// A record type this coordinator does not know (share, streams groups).
    Unknown {
        version: i16,
    },
}

impl OffsetCommitKey {
    /// Encode with the version Kafka 3.9 writes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new(false);
        w.i16(OFFSET_COMMIT_KEY_VERSION);
        w.string(&self.group);
        w.string(&self.topic);
        w.i32(self.partition);
        w.out
    }
}

impl GroupMetadataKey {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new(false);
        w.i16(GROUP_METADATA_KEY_VERSION);
        w.string(&self.group);
        w.out
    }
}

/// Decode any `__consumer_offsets` key.
///
/// # Errors
/// Truncated or malformed keys of a known type, or a negative type.
pub(crate) fn decode_key(bytes: &[u8]) -> Result<RecordKey, RecordError> {
    const WHAT: &str = "record key";
    let mut r = Reader::new(bytes, WHAT, false);
    let version = r.i16()?;
    let key = match version {
        0 | 1 => RecordKey::OffsetCommit(OffsetCommitKey {
            group: r.string()?,
            topic: r.string()?,
            partition: r.i32()?,
        }),
        2 => RecordKey::GroupMetadata(GroupMetadataKey { group: r.string()? }),
        v if v < 0 => {
            return Err(RecordError::UnsupportedVersion {
                what: WHAT,
                version,
            })
        }
        _ => match ConsumerGroupKey::decode_body(version, &mut r)? {
            Some(k) => RecordKey::ConsumerGroup(k),
            None => RecordKey::Unknown { version },
        },
    };
    Ok(key)
}

impl OffsetCommitValue {
    /// The version Kafka 3.9 picks: v1 when an expire timestamp is set, else v3.
    pub(crate) fn write_version(&self) -> i16 {
        if self.expire_timestamp >= 0 {
            OFFSET_COMMIT_VALUE_EXPIRE_VERSION
        } else {
            OFFSET_COMMIT_VALUE_VERSION
        }
    }

    /// Encode with [`Self::write_version`].
    pub(crate) fn encode(&self) -> Vec<u8> {
        self.encode_version(self.write_version())
    }

    /// Encode with an explicit version (0..=4).
    ///
    /// # Panics
    /// On a version outside 0..=4.
    pub(crate) fn encode_version(&self, version: i16) -> Vec<u8> {
        assert!(
            (0..=MAX_VALUE_VERSION).contains(&version),
            "OffsetCommitValue v{version}"
        );
        let mut w = Writer::new(version >= FIRST_FLEXIBLE);
        w.i16(version);
        w.i64(self.offset);
        if version >= 3 {
            w.i32(self.leader_epoch);
        }
        w.string(&self.metadata);
        w.i64(self.commit_timestamp);
        if version == 1 {
            w.i64(self.expire_timestamp);
        }
        w.tagged_fields();
        w.out
    }

    /// # Errors
    /// Truncated bytes, an unknown version, or bytes left over.
    pub(crate) fn decode(bytes: &[u8]) -> Result<OffsetCommitValue, RecordError> {
        const WHAT: &str = "OffsetCommitValue";
        let version = Reader::new(bytes, WHAT, false).i16()?;
        if !(0..=MAX_VALUE_VERSION).contains(&version) {
            return Err(RecordError::UnsupportedVersion {
                what: WHAT,
                version,
            });
        }
        let mut r = Reader::new(bytes, WHAT, version >= FIRST_FLEXIBLE);
        r.i16()?;
        let offset = r.i64()?;
        let leader_epoch = if version >= 3 { r.i32()? } else { -1 };
        let metadata = r.string()?;
        let commit_timestamp = r.i64()?;
        let expire_timestamp = if version == 1 { r.i64()? } else { -1 };
        r.skip_tagged_fields()?;
        Ok(OffsetCommitValue {
            offset,
            leader_epoch,
            metadata,
            commit_timestamp,
            expire_timestamp,
        })
    }
}

impl GroupMetadataValue {
    /// Encode with the version Kafka 3.9 writes (v3).
    pub(crate) fn encode(&self) -> Vec<u8> {
        self.encode_version(GROUP_METADATA_VALUE_VERSION)
    }

    /// Encode with an explicit version (0..=4).
    ///
    /// # Panics
    /// On a version outside 0..=4.
    pub(crate) fn encode_version(&self, version: i16) -> Vec<u8> {
        assert!(
            (0..=MAX_VALUE_VERSION).contains(&version),
            "GroupMetadataValue v{version}"
        );
        let mut w = Writer::new(version >= FIRST_FLEXIBLE);
        w.i16(version);
        w.string(&self.protocol_type);
        w.i32(self.generation);
        w.nullable_string(self.protocol.as_deref());
        w.nullable_string(self.leader.as_deref());
        if version >= 2 {
            w.i64(self.current_state_timestamp);
        }
        w.array_len(self.members.len());
        for m in &self.members {
            w.string(&m.member_id);
            if version >= 3 {
                w.nullable_string(m.group_instance_id.as_deref());
            }
            w.string(&m.client_id);
            w.string(&m.client_host);
            if version >= 1 {
                w.i32(m.rebalance_timeout);
            }
            w.i32(m.session_timeout);
            w.bytes(&m.subscription);
            w.bytes(&m.assignment);
            w.tagged_fields();
        }
        w.tagged_fields();
        w.out
    }

    /// # Errors
    /// Truncated bytes, an unknown version, or bytes left over.
    pub(crate) fn decode(bytes: &[u8]) -> Result<GroupMetadataValue, RecordError> {
        const WHAT: &str = "GroupMetadataValue";
        let version = Reader::new(bytes, WHAT, false).i16()?;
        if !(0..=MAX_VALUE_VERSION).contains(&version) {
            return Err(RecordError::UnsupportedVersion {
                what: WHAT,
                version,
            });
        }
        let mut r = Reader::new(bytes, WHAT, version >= FIRST_FLEXIBLE);
        r.i16()?;
        let protocol_type = r.string()?;
        let generation = r.i32()?;
        let protocol = r.nullable_string()?;
        let leader = r.nullable_string()?;
        let current_state_timestamp = if version >= 2 { r.i64()? } else { -1 };
        let count = r.array_len()?;
        let mut members = Vec::with_capacity(count.min(1024));
        for _ in 0..count {
            let member_id = r.string()?;
            let group_instance_id = if version >= 3 {
                r.nullable_string()?
            } else {
                None
            };
            let client_id = r.string()?;
            let client_host = r.string()?;
            let rebalance_timeout = if version >= 1 { Some(r.i32()?) } else { None };
            let session_timeout = r.i32()?;
            let subscription = r.bytes()?;
            let assignment = r.bytes()?;
            r.skip_tagged_fields()?;
            members.push(MemberMetadataValue {
                member_id,
                group_instance_id,
                client_id,
                client_host,
                // Kafka reads v0's missing rebalance timeout as the session timeout.
                rebalance_timeout: rebalance_timeout.unwrap_or(session_timeout),
                session_timeout,
                subscription,
                assignment,
            });
        }
        r.skip_tagged_fields()?;
        Ok(GroupMetadataValue {
            protocol_type,
            generation,
            protocol,
            leader,
            current_state_timestamp,
            members,
        })
    }
}

/// The fuzzing entry point (`fuzz/fuzz_targets/consumer_offsets.rs`), public
/// only for it: `bytes` through [`decode_key`] and every value decoder (the
/// classic ones and the seven consumer-group ones), and whatever decodes
/// through its encoder (at the version it was read with) and back.
///
/// # Panics
/// When a decoded key or value does not decode again to itself.
#[doc(hidden)]
pub fn fuzz_round_trip(bytes: &[u8]) {
    match decode_key(bytes) {
        Ok(RecordKey::OffsetCommit(k)) => {
            assert_eq!(decode_key(&k.encode()), Ok(RecordKey::OffsetCommit(k)));
        }
        Ok(RecordKey::GroupMetadata(k)) => {
            assert_eq!(decode_key(&k.encode()), Ok(RecordKey::GroupMetadata(k)));
        }
        Ok(RecordKey::ConsumerGroup(k)) => {
            assert_eq!(decode_key(&k.encode()), Ok(RecordKey::ConsumerGroup(k)));
        }
        Ok(RecordKey::Unknown { .. }) | Err(_) => {}
    }
    ConsumerGroupValue::fuzz_round_trip(bytes);
    // Both decoders checked the version, so it is in 0..=4 when they succeed.
    let version = || i16::from_be_bytes([bytes[0], bytes[1]]);
    if let Ok(v) = OffsetCommitValue::decode(bytes) {
        let again = OffsetCommitValue::decode(&v.encode_version(version()));
        assert_eq!(again, Ok(v));
    }
    if let Ok(v) = GroupMetadataValue::decode(bytes) {
        let again = GroupMetadataValue::decode(&v.encode_version(version()));
        assert_eq!(again, Ok(v));
    }
}

/// Big-endian writer for the classic and flexible encodings (shared with
/// [`super::records_consumer`]).
pub(super) struct Writer {
    pub(super) out: Vec<u8>,
    flexible: bool,
}

impl Writer {
    pub(super) fn new(flexible: bool) -> Writer {
        Writer {
            out: Vec::with_capacity(64),
            flexible,
        }
    }
    pub(super) fn i8(&mut self, v: i8) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }
    pub(super) fn i16(&mut self, v: i16) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }
    pub(super) fn uuid(&mut self, v: uuid::Uuid) {
        self.out.extend_from_slice(v.as_bytes());
    }
    pub(super) fn raw(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }
    pub(super) fn i32(&mut self, v: i32) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }
    pub(super) fn i64(&mut self, v: i64) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }
    pub(super) fn uvarint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }
    pub(super) fn string(&mut self, s: &str) {
        self.nullable_string(Some(s));
    }
    pub(super) fn nullable_string(&mut self, s: Option<&str>) {
        match (s, self.flexible) {
            (None, false) => self.i16(-1),
            (None, true) => self.uvarint(0),
            (Some(s), false) => {
                self.i16(s.len() as i16);
                self.out.extend_from_slice(s.as_bytes());
            }
            (Some(s), true) => {
                self.uvarint(s.len() as u64 + 1);
                self.out.extend_from_slice(s.as_bytes());
            }
        }
    }
    pub(super) fn bytes(&mut self, b: &[u8]) {
        if self.flexible {
            self.uvarint(b.len() as u64 + 1);
        } else {
            self.i32(b.len() as i32);
        }
        self.out.extend_from_slice(b);
    }
    pub(super) fn array_len(&mut self, n: usize) {
        if self.flexible {
            self.uvarint(n as u64 + 1);
        } else {
            self.i32(n as i32);
        }
    }
    pub(super) fn tagged_fields(&mut self) {
        if self.flexible {
            self.uvarint(0);
        }
    }
}

/// Bounds-checked reader; every error names the structure and position
/// (shared with [`super::records_consumer`]).
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    what: &'static str,
    flexible: bool,
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8], what: &'static str, flexible: bool) -> Reader<'a> {
        Reader {
            bytes,
            pos: 0,
            what,
            flexible,
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.bytes.len());
        match end {
            Some(end) => {
                let s = &self.bytes[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(RecordError::Truncated {
                what: self.what,
                position: self.pos,
            }),
        }
    }
    pub(super) fn i8(&mut self) -> Result<i8, RecordError> {
        let b = self.take(1)?;
        Ok(i8::from_be_bytes([b[0]]))
    }
    pub(super) fn i16(&mut self) -> Result<i16, RecordError> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    pub(super) fn i32(&mut self) -> Result<i32, RecordError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(super) fn i64(&mut self) -> Result<i64, RecordError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }
    pub(super) fn uvarint(&mut self) -> Result<u64, RecordError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(RecordError::Truncated {
            what: self.what,
            position: self.pos,
        })
    }
    /// Length of a string/bytes/array: `None` for null.
    fn length(&mut self, classic_i32: bool) -> Result<Option<usize>, RecordError> {
        let at = self.pos;
        let len: i64 = if self.flexible {
            // Stored plus one (0 is null). Subtract before the cast: 2^63 as
            // i64 is i64::MIN, and MIN - 1 overflows.
            self.uvarint()?.wrapping_sub(1) as i64
        } else if classic_i32 {
            i64::from(self.i32()?)
        } else {
            i64::from(self.i16()?)
        };
        match len {
            -1 => Ok(None),
            l if l < 0 => Err(RecordError::NegativeLength {
                what: self.what,
                length: l,
                position: at,
            }),
            l => Ok(Some(l as usize)),
        }
    }
    pub(super) fn nullable_string(&mut self) -> Result<Option<String>, RecordError> {
        let Some(len) = self.length(false)? else {
            return Ok(None);
        };
        let at = self.pos;
        let raw = self.take(len)?;
        std::str::from_utf8(raw)
            .map(|s| Some(s.to_string()))
            .map_err(|_| RecordError::InvalidUtf8 {
                what: self.what,
                position: at,
            })
    }
    pub(super) fn string(&mut self) -> Result<String, RecordError> {
        let at = self.pos;
        self.nullable_string()?.ok_or(RecordError::UnexpectedNull {
            what: self.what,
            position: at,
        })
    }
    pub(super) fn bytes(&mut self) -> Result<Bytes, RecordError> {
        let len = self.length(true)?.unwrap_or(0);
        Ok(Bytes::copy_from_slice(self.take(len)?))
    }
    pub(super) fn array_len(&mut self) -> Result<usize, RecordError> {
        Ok(self.length(true)?.unwrap_or(0))
    }
    pub(super) fn uuid(&mut self) -> Result<uuid::Uuid, RecordError> {
        let b = self.take(16)?;
        let mut a = [0u8; 16];
        a.copy_from_slice(b);
        Ok(uuid::Uuid::from_bytes(a))
    }
    /// Nullable bytes (`None` for null).
    pub(super) fn nullable_bytes(&mut self) -> Result<Option<Bytes>, RecordError> {
        match self.length(true)? {
            None => Ok(None),
            Some(len) => Ok(Some(Bytes::copy_from_slice(self.take(len)?))),
        }
    }
    /// Bytes that the schema does not allow to be null.
    pub(super) fn non_null_bytes(&mut self) -> Result<Bytes, RecordError> {
        let at = self.pos;
        let len = self.length(true)?.ok_or(RecordError::UnexpectedNull {
            what: self.what,
            position: at,
        })?;
        Ok(Bytes::copy_from_slice(self.take(len)?))
    }
    /// The element count of a non-nullable array whose elements take at
    /// least `min_item` bytes each: a count the bytes left cannot hold is
    /// truncation, found before anything is allocated for it.
    pub(super) fn count(&mut self, min_item: usize) -> Result<usize, RecordError> {
        let at = self.pos;
        let n = self.length(true)?.ok_or(RecordError::UnexpectedNull {
            what: self.what,
            position: at,
        })?;
        let left = self.bytes.len().saturating_sub(self.pos);
        if n.checked_mul(min_item.max(1))
            .is_none_or(|need| need > left)
        {
            return Err(RecordError::Truncated {
                what: self.what,
                position: self.pos,
            });
        }
        Ok(n)
    }
    /// The tagged-field section (flexible versions only): each field's tag
    /// and a reader over exactly its bytes, positions kept absolute.
    pub(super) fn tagged_fields(&mut self) -> Result<Vec<(u64, Reader<'a>)>, RecordError> {
        let count = self.uvarint()?;
        let mut fields = Vec::new();
        for _ in 0..count {
            let tag = self.uvarint()?;
            let size = usize::try_from(self.uvarint()?).unwrap_or(usize::MAX);
            let start = self.pos;
            self.take(size)?;
            fields.push((
                tag,
                Reader {
                    bytes: &self.bytes[..self.pos],
                    pos: start,
                    what: self.what,
                    flexible: true,
                },
            ));
        }
        Ok(fields)
    }
    pub(super) fn skip_tagged_fields(&mut self) -> Result<(), RecordError> {
        if !self.flexible {
            return Ok(());
        }
        let count = self.uvarint()?;
        for _ in 0..count {
            self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.take(size)?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "records_tests.rs"]
mod tests;
