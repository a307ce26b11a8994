//! `__remote_log_metadata` record values (Kafka `RemoteLogMetadataSerde`,
//! reference §4.3), so Kafka's tooling can decode what Strata writes.
//!
//! /// Format:
//! ```text
//! value   = uvarint frame_version (1) · uvarint api_key · uvarint message_version (0) · body
//! api 0   RemoteLogSegmentMetadataRecord:
//!           SegmentId · start:i64 · end:i64 · broker:i32 · max_ts:i64 · event_ts:i64
//!           · epochs:[ {epoch:i32 · offset:i64 · tags} ] · size:i32 · custom:nbytes · state:i8 · tags
//! api 1   RemoteLogSegmentMetadataUpdateRecord:
//!           SegmentId · broker:i32 · event_ts:i64 · custom:nbytes · state:i8 · tags
//! api 2   RemotePartitionDeleteMetadataRecord:
//!           TopicIdPartition · broker:i32 · event_ts:i64 · state:i8 · tags
//! SegmentId        = TopicIdPartition · id:uuid · tags
//! TopicIdPartition = name:compact string · id:uuid · partition:i32 · tags
//! compact string   = uvarint (len+1) · UTF-8      compact array = uvarint (n+1) · items
//! nbytes           = uvarint 0 (null) | uvarint (len+1) · bytes
//! uuid             = 16 bytes (msb BE, lsb BE)    ints big-endian
//! tags             = uvarint count · (uvarint tag · uvarint size · bytes)*   (written as 0)
//! ```
//! The record key is null; the value alone carries everything. Trailing
//! bytes, frame version ≠ 1 and unknown api keys are errors.

use std::collections::BTreeMap;

use strata_log::{LeaderEpoch, Offset, Timestamp, TopicPartition};
use uuid::Uuid;

use super::MetadataEvent;
use crate::error::SerdeError;
use crate::metadata::{
    RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState, RemotePartitionDeleteMetadata, RemotePartitionDeleteState,
    TopicIdPartition,
};

const FRAME_VERSION: u64 = 1;
const MESSAGE_VERSION: u64 = 0;

/// Encode one event as a record value.
pub fn encode(event: &MetadataEvent) -> Vec<u8> {
    let mut w = Vec::with_capacity(128);
    put_uvarint(&mut w, FRAME_VERSION);
    match event {
        MetadataEvent::Add(md) => {
            put_uvarint(&mut w, 0);
            put_uvarint(&mut w, MESSAGE_VERSION);
            put_segment_id(&mut w, &md.segment_id);
            w.extend_from_slice(&md.start_offset.0.to_be_bytes());
            w.extend_from_slice(&md.end_offset.0.to_be_bytes());
            w.extend_from_slice(&md.broker_id.to_be_bytes());
            w.extend_from_slice(&md.max_timestamp.0.to_be_bytes());
            w.extend_from_slice(&md.event_timestamp_ms.to_be_bytes());
            put_uvarint(&mut w, md.segment_leader_epochs.len() as u64 + 1);
            for (epoch, offset) in &md.segment_leader_epochs {
                w.extend_from_slice(&epoch.0.to_be_bytes());
                w.extend_from_slice(&offset.0.to_be_bytes());
                put_uvarint(&mut w, 0);
            }
            w.extend_from_slice(&md.segment_size_in_bytes.to_be_bytes());
            put_nullable_bytes(&mut w, md.custom_metadata.as_deref());
            w.push(md.state.id() as u8);
        }
        MetadataEvent::Update(u) => {
            put_uvarint(&mut w, 1);
            put_uvarint(&mut w, MESSAGE_VERSION);
            put_segment_id(&mut w, &u.segment_id);
            w.extend_from_slice(&u.broker_id.to_be_bytes());
            w.extend_from_slice(&u.event_timestamp_ms.to_be_bytes());
            put_nullable_bytes(&mut w, u.custom_metadata.as_deref());
            w.push(u.state.id() as u8);
        }
        MetadataEvent::PartitionDelete(d) => {
            put_uvarint(&mut w, 2);
            put_uvarint(&mut w, MESSAGE_VERSION);
            put_topic_id_partition(&mut w, &d.partition);
            w.extend_from_slice(&d.broker_id.to_be_bytes());
            w.extend_from_slice(&d.event_timestamp_ms.to_be_bytes());
            w.push(d.state as u8);
        }
    }
    put_uvarint(&mut w, 0);
    w
}

/// Decode one record value.
///
/// # Errors
/// Any deviation from the format above.
pub fn decode(value: &[u8]) -> Result<MetadataEvent, SerdeError> {
    let mut r = Reader { buf: value, pos: 0 };
    let version = r.uvarint()?;
    if version != FRAME_VERSION {
        return Err(SerdeError::FrameVersion { version });
    }
    let api_key = r.uvarint()?;
    if api_key > 2 {
        return Err(SerdeError::ApiKey { api_key });
    }
    let message_version = r.uvarint()?;
    if message_version != MESSAGE_VERSION {
        return Err(SerdeError::MessageVersion {
            api_key,
            version: message_version,
        });
    }
    let event = match api_key {
        0 => {
            let segment_id = r.segment_id()?;
            let start_offset = Offset(r.i64("StartOffset")?);
            let end_offset = Offset(r.i64("EndOffset")?);
            let broker_id = r.i32("BrokerId")?;
            let max_timestamp = Timestamp(r.i64("MaxTimestampMs")?);
            let event_timestamp_ms = r.i64("EventTimestampMs")?;
            let n = r.compact_len("SegmentLeaderEpochs")?.unwrap_or(0);
            let mut segment_leader_epochs = BTreeMap::new();
            for _ in 0..n {
                let epoch = LeaderEpoch(r.i32("LeaderEpoch")?);
                let offset = Offset(r.i64("Offset")?);
                r.skip_tags()?;
                segment_leader_epochs.insert(epoch, offset);
            }
            let segment_size_in_bytes = r.i32("SegmentSizeInBytes")?;
            let custom_metadata = r.nullable_bytes("CustomMetadata")?;
            let state = r.state()?;
            MetadataEvent::Add(RemoteLogSegmentMetadata {
                segment_id,
                start_offset,
                end_offset,
                max_timestamp,
                broker_id,
                event_timestamp_ms,
                segment_leader_epochs,
                segment_size_in_bytes,
                custom_metadata,
                state,
            })
        }
        1 => {
            let segment_id = r.segment_id()?;
            let broker_id = r.i32("BrokerId")?;
            let event_timestamp_ms = r.i64("EventTimestampMs")?;
            let custom_metadata = r.nullable_bytes("CustomMetadata")?;
            let state = r.state()?;
            MetadataEvent::Update(RemoteLogSegmentMetadataUpdate {
                segment_id,
                event_timestamp_ms,
                custom_metadata,
                state,
                broker_id,
            })
        }
        _ => {
            let partition = r.topic_id_partition()?;
            let broker_id = r.i32("BrokerId")?;
            let event_timestamp_ms = r.i64("EventTimestampMs")?;
            let raw = r.i8("RemotePartitionDeleteState")?;
            let state =
                RemotePartitionDeleteState::from_id(raw).ok_or(SerdeError::InvalidValue {
                    field: "RemotePartitionDeleteState",
                    value: raw.into(),
                })?;
            MetadataEvent::PartitionDelete(RemotePartitionDeleteMetadata {
                partition,
                state,
                event_timestamp_ms,
                broker_id,
            })
        }
    };
    r.skip_tags()?;
    if r.pos != value.len() {
        return Err(SerdeError::TrailingBytes {
            len: value.len() - r.pos,
        });
    }
    Ok(event)
}

fn put_uvarint(w: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        w.push((v as u8) | 0x80);
        v >>= 7;
    }
    w.push(v as u8);
}

fn put_uuid(w: &mut Vec<u8>, id: Uuid) {
    w.extend_from_slice(id.as_bytes());
}

fn put_topic_id_partition(w: &mut Vec<u8>, p: &TopicIdPartition) {
    put_uvarint(w, p.tp.topic.len() as u64 + 1);
    w.extend_from_slice(p.tp.topic.as_bytes());
    put_uuid(w, p.topic_id);
    w.extend_from_slice(&p.tp.partition.to_be_bytes());
    put_uvarint(w, 0);
}

fn put_segment_id(w: &mut Vec<u8>, id: &RemoteLogSegmentId) {
    put_topic_id_partition(w, &id.partition);
    put_uuid(w, id.id);
    put_uvarint(w, 0);
}

fn put_nullable_bytes(w: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => put_uvarint(w, 0),
        Some(b) => {
            put_uvarint(w, b.len() as u64 + 1);
            w.extend_from_slice(b);
        }
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&[u8], SerdeError> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.buf.len());
        let end = end.ok_or(SerdeError::Truncated {
            field,
            at: self.pos,
        })?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn uvarint(&mut self) -> Result<u64, SerdeError> {
        let start = self.pos;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or(SerdeError::Truncated {
                field: "varint",
                at: self.pos,
            })?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(SerdeError::Varint { at: start })
    }

    fn i8(&mut self, field: &'static str) -> Result<i8, SerdeError> {
        Ok(self.take(1, field)?[0] as i8)
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, SerdeError> {
        let b = self.take(4, field)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i64(&mut self, field: &'static str) -> Result<i64, SerdeError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8, field)?);
        Ok(i64::from_be_bytes(a))
    }

    fn uuid(&mut self, field: &'static str) -> Result<Uuid, SerdeError> {
        let mut a = [0u8; 16];
        a.copy_from_slice(self.take(16, field)?);
        Ok(Uuid::from_bytes(a))
    }

    /// `None` for a null (0) compact length.
    fn compact_len(&mut self, field: &'static str) -> Result<Option<usize>, SerdeError> {
        let at = self.pos;
        match self.uvarint()? {
            0 => Ok(None),
            n => {
                let n = usize::try_from(n - 1).map_err(|_| SerdeError::Truncated { field, at })?;
                if n > self.buf.len() - self.pos {
                    return Err(SerdeError::Truncated { field, at });
                }
                Ok(Some(n))
            }
        }
    }

    fn nullable_bytes(&mut self, field: &'static str) -> Result<Option<Vec<u8>>, SerdeError> {
        match self.compact_len(field)? {
            None => Ok(None),
            Some(n) => Ok(Some(self.take(n, field)?.to_vec())),
        }
    }

    fn string(&mut self, field: &'static str) -> Result<String, SerdeError> {
        let n = self
            .compact_len(field)?
            .ok_or(SerdeError::InvalidValue { field, value: -1 })?;
        let bytes = self.take(n, field)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| SerdeError::Utf8 { field })
    }

    fn skip_tags(&mut self) -> Result<(), SerdeError> {
        let count = self.uvarint()?;
        for _ in 0..count {
            self.uvarint()?;
            let size = self.uvarint()?;
            let size = usize::try_from(size).map_err(|_| SerdeError::Truncated {
                field: "tag",
                at: self.pos,
            })?;
            self.take(size, "tag")?;
        }
        Ok(())
    }

    fn topic_id_partition(&mut self) -> Result<TopicIdPartition, SerdeError> {
        let name = self.string("Name")?;
        let id = self.uuid("Id")?;
        let partition = self.i32("Partition")?;
        self.skip_tags()?;
        Ok(TopicIdPartition::new(
            id,
            TopicPartition::new(name, partition),
        ))
    }

    fn segment_id(&mut self) -> Result<RemoteLogSegmentId, SerdeError> {
        let partition = self.topic_id_partition()?;
        let id = self.uuid("Id")?;
        self.skip_tags()?;
        Ok(RemoteLogSegmentId { partition, id })
    }

    fn state(&mut self) -> Result<RemoteLogSegmentState, SerdeError> {
        let raw = self.i8("RemoteLogSegmentState")?;
        RemoteLogSegmentState::from_id(raw).ok_or(SerdeError::InvalidValue {
            field: "RemoteLogSegmentState",
            value: raw.into(),
        })
    }
}

#[cfg(test)]
#[path = "serde_tests.rs"]
mod tests;
