//! Legacy message formats, magic 0 and 1 (§1.11): read-only, for dumping and
//! verifying segments written before Kafka 0.11.
//!
//! Format of one entry (a "log entry" wrapping one record):
//!
//! ```text
//!  0  Offset      i64   absolute; for a compressed v1 wrapper, the last inner offset
//!  8  Size        i32   bytes of the record below
//! 12  CRC         u32   CRC-32 (IEEE) over [16, 12 + Size)
//! 16  Magic       i8    0 or 1
//! 17  Attributes  i8    codec 0x07, timestamp type 0x08 (v1 only)
//! 18  Timestamp   i64   v1 only
//!     KeyLength   i32   -1 = null, then Key bytes
//!     ValueLength i32   -1 = null, then Value bytes
//! ```
//!
//! A compressed entry is a wrapper whose value is a compressed stream of
//! inner entries of the same magic. In v1 the inner offsets are relative
//! (the last inner offset maps to the wrapper's offset); in v0 they are
//! absolute. A LogAppendTime v1 wrapper gives every inner record its own
//! timestamp. Kafka 0.8-0.9 wrote v0 LZ4 frames with a header checksum that
//! covered the frame magic too; that checksum is not checked, as in Kafka.

use crc32fast::Hasher;

use super::compression::{decompress_into, DEFAULT_MAX_DECOMPRESSED};
use super::error::{BatchError, DecompressionFault, RecordFault};
use super::{Compression, TimestampType, LOG_OVERHEAD, MAGIC_V0, MAGIC_V1};
use crate::types::{Offset, Timestamp};

/// Record overhead of magic 0: crc, magic, attributes, key and value lengths.
pub const LEGACY_V0_OVERHEAD: usize = 14;
/// Record overhead of magic 1: v0 plus the timestamp.
pub const LEGACY_V1_OVERHEAD: usize = 22;

/// One magic 0/1 entry, borrowed from the segment bytes.
///
/// Format: `Offset i64 | Size i32 | CRC u32 | Magic i8 | Attributes i8 |
/// [Timestamp i64, v1] | KeyLength i32, Key | ValueLength i32, Value`
/// (module docs have the diagram).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LegacyEntry<'a> {
    pub offset: Offset,
    pub crc: u32,
    pub magic: i8,
    pub attributes: i8,
    /// -1 for magic 0, which has no timestamp.
    pub timestamp: Timestamp,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    bytes: &'a [u8],
}

/// One record inside (or being) a legacy entry, with its absolute offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LegacyRecord {
    pub offset: Offset,
    pub magic: i8,
    pub crc: u32,
    pub crc_valid: bool,
    pub timestamp: Timestamp,
    /// `None` for magic 0.
    pub timestamp_type: Option<TimestampType>,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
}

fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn read_field<'a>(record: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>, BatchError> {
    let overrun = BatchError::InvalidRecord {
        index: 0,
        reason: RecordFault::FieldOverrun,
    };
    let len = be_i32(record, *pos).ok_or(overrun.clone())?;
    *pos += 4;
    if len < 0 {
        return Ok(None);
    }
    let end = pos
        .checked_add(len as usize)
        .filter(|&e| e <= record.len())
        .ok_or(overrun)?;
    let field = &record[*pos..end];
    *pos = end;
    Ok(Some(field))
}

/// Parse the legacy entry at the start of `bytes` (which may extend past it).
/// The CRC is read but not checked; see [`LegacyEntry::validate`].
///
/// # Errors
/// [`BatchError::Truncated`], [`BatchError::UnsupportedMagic`] (magic ≥ 2),
/// [`BatchError::LengthTooSmall`] below the magic's overhead, or a key/value
/// running past the record ([`RecordFault::FieldOverrun`], [`RecordFault::SizeMismatch`]).
pub fn read_legacy_entry(bytes: &[u8]) -> Result<LegacyEntry<'_>, BatchError> {
    const HEADER: usize = LOG_OVERHEAD + 6; // through attributes
    if bytes.len() < HEADER {
        return Err(BatchError::Truncated {
            needed: HEADER,
            available: bytes.len(),
        });
    }
    let offset = i64::from_be_bytes(bytes[0..8].try_into().expect("8 bytes"));
    let size = be_i32(bytes, 8).expect("12 bytes present");
    let magic = bytes[16] as i8;
    let overhead = match magic {
        MAGIC_V0 => LEGACY_V0_OVERHEAD,
        MAGIC_V1 => LEGACY_V1_OVERHEAD,
        other => return Err(BatchError::UnsupportedMagic { magic: other }),
    };
    if size < overhead as i32 {
        return Err(BatchError::LengthTooSmall { length: size });
    }
    let total = LOG_OVERHEAD + size as usize;
    if bytes.len() < total {
        return Err(BatchError::Truncated {
            needed: total,
            available: bytes.len(),
        });
    }
    let entry = &bytes[..total];
    let record = &entry[LOG_OVERHEAD..];
    let crc = u32::from_be_bytes(record[0..4].try_into().expect("4 bytes"));
    let attributes = record[5] as i8;
    let mut pos = 6;
    let timestamp = if magic == MAGIC_V1 {
        pos += 8;
        Timestamp(i64::from_be_bytes(
            record[6..14].try_into().expect("8 bytes"),
        ))
    } else {
        Timestamp::NONE
    };
    let key = read_field(record, &mut pos)?;
    let value = read_field(record, &mut pos)?;
    if pos != record.len() {
        return Err(BatchError::InvalidRecord {
            index: 0,
            reason: RecordFault::SizeMismatch {
                declared: size,
                consumed: pos,
            },
        });
    }
    Ok(LegacyEntry {
        offset: Offset(offset),
        crc,
        magic,
        attributes,
        timestamp,
        key,
        value,
        bytes: entry,
    })
}

impl<'a> LegacyEntry<'a> {
    /// The entry's bytes, offset and size fields included.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Total entry size (`Size + 12`).
    pub fn size(&self) -> usize {
        self.bytes.len()
    }

    /// CRC-32 (IEEE) over magic..end.
    pub fn compute_crc(&self) -> u32 {
        let mut h = Hasher::new();
        h.update(&self.bytes[LOG_OVERHEAD + 4..]);
        h.finalize()
    }

    pub fn is_crc_valid(&self) -> bool {
        self.crc == self.compute_crc()
    }

    /// Check the CRC.
    ///
    /// # Errors
    /// [`BatchError::ChecksumMismatch`].
    pub fn validate(&self) -> Result<(), BatchError> {
        let computed = self.compute_crc();
        if computed != self.crc {
            return Err(BatchError::ChecksumMismatch {
                stored: self.crc,
                computed,
            });
        }
        Ok(())
    }

    /// The codec of a wrapper (`None` codec for a plain record).
    ///
    /// # Errors
    /// [`BatchError::InvalidCompression`] for ids above 4.
    pub fn compression(&self) -> Result<Compression, BatchError> {
        let id = self.attributes as u8 & 0x07;
        Compression::from_id(id).ok_or(BatchError::InvalidCompression { id })
    }

    /// `None` for magic 0.
    pub fn timestamp_type(&self) -> Option<TimestampType> {
        if self.magic != MAGIC_V1 {
            None
        } else if self.attributes & 0x08 != 0 {
            Some(TimestampType::LogAppendTime)
        } else {
            Some(TimestampType::CreateTime)
        }
    }

    fn as_record(&self) -> LegacyRecord {
        LegacyRecord {
            offset: self.offset,
            magic: self.magic,
            crc: self.crc,
            crc_valid: self.is_crc_valid(),
            timestamp: self.timestamp,
            timestamp_type: self.timestamp_type(),
            key: self.key.map(<[u8]>::to_vec),
            value: self.value.map(<[u8]>::to_vec),
        }
    }

    /// The records this entry holds: itself when uncompressed, else the
    /// decompressed inner records with absolute offsets.
    ///
    /// # Errors
    /// Invalid or unsupported codec (zstd needs magic 2), a corrupt stream,
    /// an unparsable or compressed inner entry, or an inner magic that
    /// differs from the wrapper's.
    pub fn records(&self) -> Result<Vec<LegacyRecord>, BatchError> {
        self.records_with_limit(DEFAULT_MAX_DECOMPRESSED)
    }

    /// [`Self::records`] with an explicit decompressed-size cap.
    ///
    /// # Errors
    /// As [`Self::records`].
    pub fn records_with_limit(
        &self,
        max_decompressed: usize,
    ) -> Result<Vec<LegacyRecord>, BatchError> {
        let codec = self.compression()?;
        if codec == Compression::None {
            return Ok(vec![self.as_record()]);
        }
        if codec == Compression::Zstd {
            return Err(BatchError::Decompression {
                codec: codec.name(),
                reason: DecompressionFault::UnsupportedCodec,
            });
        }
        let value = self.value.unwrap_or_default();
        let mut data = Vec::new();
        if codec == Compression::Lz4 && self.magic == MAGIC_V0 {
            let fixed = fix_v0_lz4_header_checksum(value);
            decompress_into(codec, &fixed, &mut data, max_decompressed)?;
        } else {
            decompress_into(codec, value, &mut data, max_decompressed)?;
        }
        let mut inner = Vec::new();
        let mut pos = 0;
        while pos < data.len() {
            let e = read_legacy_entry(&data[pos..]).map_err(|e| e.at(pos as u64))?;
            if e.magic != self.magic {
                return Err(BatchError::UnsupportedMagic { magic: e.magic }.at(pos as u64));
            }
            let inner_codec = e.attributes as u8 & 0x07;
            if inner_codec != 0 {
                return Err(BatchError::NestedCompression {
                    codec_id: inner_codec,
                }
                .at(pos as u64));
            }
            pos += e.size();
            inner.push(e.as_record());
        }
        if self.magic == MAGIC_V1 {
            // Relative inner offsets: the last one maps to the wrapper offset.
            let last_relative = inner.last().map_or(0, |r| r.offset.0);
            let base = self.offset.0.wrapping_sub(last_relative);
            let log_append = self.timestamp_type() == Some(TimestampType::LogAppendTime);
            for r in &mut inner {
                r.offset = Offset(base.wrapping_add(r.offset.0));
                if log_append {
                    r.timestamp = self.timestamp;
                    r.timestamp_type = Some(TimestampType::LogAppendTime);
                }
            }
        }
        Ok(inner)
    }
}

/// Kafka's v0 LZ4 frames put xxHash32(magic + descriptor) in the header
/// checksum byte; rewrite it to the standard checksum over the descriptor so
/// a standard frame reader accepts the stream. Input too short to hold a
/// frame header is returned unchanged (the decoder will reject it).
fn fix_v0_lz4_header_checksum(frame: &[u8]) -> Vec<u8> {
    let mut out = frame.to_vec();
    if out.len() < 7 {
        return out;
    }
    let flg = out[4];
    let mut hc_at = 6;
    if flg & 0x08 != 0 {
        hc_at += 8; // content size
    }
    if flg & 0x01 != 0 {
        hc_at += 4; // dictionary id
    }
    if hc_at < out.len() {
        out[hc_at] = (xxh32_short(&out[4..hc_at]) >> 8) as u8;
    }
    out
}

/// xxHash32 with seed 0 for inputs shorter than 16 bytes (frame descriptors).
fn xxh32_short(input: &[u8]) -> u32 {
    const P1: u32 = 0x9E37_79B1;
    const P2: u32 = 0x85EB_CA77;
    const P3: u32 = 0xC2B2_AE3D;
    const P4: u32 = 0x27D4_EB2F;
    const P5: u32 = 0x1656_67B1;
    debug_assert!(input.len() < 16);
    let mut h = P5.wrapping_add(input.len() as u32);
    let mut words = input.chunks_exact(4);
    for w in &mut words {
        let v = u32::from_le_bytes(w.try_into().expect("4 bytes"));
        h = h
            .wrapping_add(v.wrapping_mul(P3))
            .rotate_left(17)
            .wrapping_mul(P4);
    }
    for &b in words.remainder() {
        h = h
            .wrapping_add((b as u32).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^ (h >> 16)
}

#[cfg(test)]
#[path = "legacy_tests.rs"]
mod tests;
