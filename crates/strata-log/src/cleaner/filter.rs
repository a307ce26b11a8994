//! Filtering one chunk of a source segment into the cleaned segment
//! (Kafka `cleanInto`'s `RecordFilter` + `MemoryRecords.filterTo`, §11.7).
//!
//! Per batch, first match wins: the active producer's last batch and the
//! last batch of the cleaning round are kept at least as an empty header
//! (RETAIN_EMPTY); a discardable batch (aborted data, or a marker whose
//! transaction is gone and whose delete horizon passed) is deleted whole;
//! otherwise records are filtered and the batch disappears if none is left.
//!
//! A batch whose records all survive is copied byte for byte unless it
//! needs a delete horizon; otherwise it is rebuilt with
//! [`BatchBuilder`], keeping its codec, base offset, last offset, base
//! sequence, producer fields, flags and partition leader epoch.

use std::collections::HashMap;

use crate::batch::{
    build_empty_batch_like, BatchBuilder, BatchError, BatchScanner, BatchView, BuildError,
    ControlRecordType, Record, RecordHeader, TimestampType, MAGIC_V2, MAX_TIMESTAMP_POS,
};
use crate::producer_state::LastRecord;
use crate::types::{Offset, ProducerId, Timestamp};

use super::offset_map::{OffsetMap, HASH_SIZE};
use super::records::{splice_batch, walk_records, WalkedRecord};
use super::superseded::Superseded;
use super::txn::CleanedTxnMetadata;

/// Kafka `BatchRetention`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchRetention {
    Delete,
    DeleteEmpty,
    RetainEmpty,
}

/// Everything the filter reads or updates while cleaning one log.
pub struct FilterContext<'a> {
    pub map: &'a mut OffsetMap,
    pub txn: &'a mut CleanedTxnMetadata,
    pub active_producers: &'a HashMap<ProducerId, LastRecord>,
    /// First uncleanable offset of this round.
    pub upper_bound: Offset,
    /// Wall-clock time at the start of the cleaning.
    pub now_ms: i64,
    pub delete_retention_ms: i64,
    /// Legacy (v0/v1) tombstones: kept when the segment is newer than the
    /// legacy horizon.
    pub retain_legacy_deletes: bool,
    /// The map phase's superseded offsets, which answer for the records it
    /// put without a map lookup (`None`: every record asks the map).
    pub superseded: Option<&'a Superseded>,
}

/// Kafka `FilterResult` for one chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkResult {
    /// Bytes of whole batches consumed from the chunk.
    pub bytes_read: usize,
    /// Largest offset written (last offset of copied/empty batches, largest
    /// surviving record offset of rebuilt ones); -1 when nothing.
    pub max_offset: Offset,
    pub max_timestamp: Timestamp,
    pub shallow_offset_of_max_timestamp: Offset,
    pub messages_read: u64,
    pub messages_retained: u64,
    pub bytes_retained: u64,
    /// Keyless records dropped (Kafka's "invalid messages").
    pub invalid_records: u64,
}

impl ChunkResult {
    fn new() -> Self {
        ChunkResult {
            bytes_read: 0,
            max_offset: Offset(-1),
            max_timestamp: Timestamp::NONE,
            shallow_offset_of_max_timestamp: Offset(-1),
            messages_read: 0,
            messages_retained: 0,
            bytes_retained: 0,
            invalid_records: 0,
        }
    }

    fn retained(
        &mut self,
        max_ts: Timestamp,
        shallow: Offset,
        max_offset: Offset,
        n: u64,
        bytes: u64,
    ) {
        if max_ts > self.max_timestamp {
            self.max_timestamp = max_ts;
            self.shallow_offset_of_max_timestamp = shallow;
        }
        self.max_offset = self.max_offset.max(max_offset);
        self.messages_retained += n;
        self.bytes_retained += bytes;
    }
}

/// A batch that failed to parse or rebuild, at `position` within the chunk.
#[derive(Debug, thiserror::Error)]
pub enum FilterFault {
    #[error("batch at chunk position {position}: {source}")]
    Batch {
        position: usize,
        #[source]
        source: BatchError,
    },
    #[error("rebuilding the batch at chunk position {position}: {source}")]
    Rebuild {
        position: usize,
        #[source]
        source: BuildError,
    },
}

enum Fault {
    Batch(BatchError),
    Build(BuildError),
}

impl From<BatchError> for Fault {
    fn from(e: BatchError) -> Self {
        Fault::Batch(e)
    }
}

impl Fault {
    fn at(self, position: usize) -> FilterFault {
        match self {
            Fault::Batch(source) => FilterFault::Batch { position, source },
            Fault::Build(source) => FilterFault::Rebuild { position, source },
        }
    }
}

/// Filter the whole batches of `chunk` into `out` (appending).
///
/// # Errors
/// [`FilterFault`] for a batch whose header or records do not parse.
pub fn filter_chunk(
    ctx: &mut FilterContext<'_>,
    chunk: &[u8],
    out: &mut Vec<u8>,
) -> Result<ChunkResult, FilterFault> {
    let mut result = ChunkResult::new();
    let mut scratch = Vec::new();
    let mut fast = FastScratch::default();
    let mut scanner = BatchScanner::new(chunk);
    while let Some(item) = scanner.next() {
        let (pos, prefix) = item.map_err(|source| FilterFault::Batch {
            position: scanner.position(),
            source,
        })?;
        let bytes = &chunk[pos..pos + prefix.total_size()];
        if prefix.magic < MAGIC_V2 {
            // Legacy entries are copied as they are (see docs/compaction.md).
            let summary = crate::segment::BatchSummary::of(pos as u64, &prefix, bytes);
            result.bytes_read += bytes.len();
            result.messages_read += 1;
            out.extend_from_slice(bytes);
            result.retained(
                summary.max_timestamp,
                summary.last_offset,
                summary.last_offset,
                1,
                bytes.len() as u64,
            );
            continue;
        }
        let batch = BatchView::parse(bytes).map_err(|source| FilterFault::Batch {
            position: pos,
            source,
        })?;
        filter_batch(ctx, &batch, &mut scratch, &mut fast, out, &mut result)
            .map_err(|f| f.at(pos))?;
    }
    Ok(result)
}

pub(crate) fn control_type(
    batch: &BatchView<'_>,
    scratch: &mut Vec<u8>,
) -> Result<Option<ControlRecordType>, BatchError> {
    let mut it = batch.record_iter(scratch)?;
    match it.next() {
        None => Ok(None),
        Some(r) => Ok(Some(ControlRecordType::parse_key(r?.key)?)),
    }
}

fn is_last_of_producer(ctx: &FilterContext<'_>, batch: &BatchView<'_>) -> bool {
    batch.has_producer_id()
        && ctx
            .active_producers
            .get(&batch.producer_id())
            .is_some_and(|last| match last.last_data_offset {
                Some(o) => batch.last_offset() == o,
                None => batch.is_control() && batch.producer_epoch() == last.producer_epoch,
            })
}

fn should_retain_record(
    ctx: &mut FilterContext<'_>,
    batch: &BatchView<'_>,
    record: &Record<'_>,
    hash: Option<&[u8; HASH_SIZE]>,
    result: &mut ChunkResult,
) -> bool {
    if record.offset > ctx.map.latest_offset() {
        return true;
    }
    let Some(hash) = hash else {
        result.invalid_records += 1;
        return false;
    };
    let latest = record.offset >= ctx.map.get_hashed(hash);
    let retain_deletes = batch.delete_horizon().is_none_or(|h| ctx.now_ms < h.0);
    latest && (record.value.is_some() || retain_deletes)
}

#[cfg(test)]
thread_local! {
    /// Tests compare the fast path with the exact one.
    pub(super) static EXACT_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[inline(always)]
fn exact_only() -> bool {
    #[cfg(test)]
    return EXACT_ONLY.with(std::cell::Cell::get);
    #[cfg(not(test))]
    false
}

/// Reused buffers of the fast path (uncompressed data batches).
#[derive(Default)]
struct FastScratch<'c> {
    walked: Vec<WalkedRecord<'c>>,
    latest: Vec<Latest>,
    kept: Vec<WalkedRecord<'c>>,
}

/// How the fast path decides whether a record is its key's latest.
#[derive(Clone, Copy)]
enum Latest {
    /// Past the mapped range: kept.
    Beyond,
    /// No key: dropped (Kafka's invalid record).
    NoKey,
    /// The superseded set knows (true: latest).
    Known(bool),
    /// Ask the map with this digest.
    Ask([u8; HASH_SIZE]),
}

fn filter_batch<'c>(
    ctx: &mut FilterContext<'_>,
    batch: &BatchView<'c>,
    scratch: &mut Vec<u8>,
    fast: &mut FastScratch<'c>,
    out: &mut Vec<u8>,
    result: &mut ChunkResult,
) -> Result<(), Fault> {
    let control = batch.is_control();
    let can_discard = if control {
        let t = control_type(batch, scratch)?;
        ctx.txn.on_control_batch_read(batch, t)
    } else {
        ctx.txn.on_batch_read(batch)
    };
    let discard_records = if control {
        can_discard && batch.delete_horizon().is_some_and(|h| h.0 <= ctx.now_ms)
    } else {
        can_discard
    };
    let retention = if is_last_of_producer(ctx, batch) || batch.next_offset() == ctx.upper_bound {
        BatchRetention::RetainEmpty
    } else if discard_records {
        BatchRetention::Delete
    } else {
        BatchRetention::DeleteEmpty
    };
    let marker_for_empty_txn = can_discard && control;
    result.bytes_read += batch.size();
    if retention == BatchRetention::Delete {
        result.messages_read += batch.records_count().max(0) as u64;
        return Ok(());
    }
    if !control && !discard_records && !exact_only() && walk_records(batch, &mut fast.walked) {
        filter_walked(ctx, batch, retention, fast, out, result);
        return Ok(());
    }
    let mut records: Vec<Record<'_>> = Vec::with_capacity(batch.records_count().max(0) as usize);
    for r in batch.record_iter(scratch)? {
        records.push(r?);
    }
    // Digests of the keys the map will be asked about, prefetched together.
    let lookups = !discard_records && !control;
    let latest = ctx.map.latest_offset();
    let hashes: Vec<Option<[u8; HASH_SIZE]>> = if lookups {
        records
            .iter()
            .map(|r| {
                r.key.filter(|_| r.offset <= latest).map(|k| {
                    let h = OffsetMap::hash(k);
                    ctx.map.prefetch(&h);
                    h
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut retained: Vec<Record<'_>> = Vec::with_capacity(records.len());
    let mut write_original = true;
    let mut tombstones = false;
    let mut max_offset = Offset(-1);
    for (i, r) in records.into_iter().enumerate() {
        result.messages_read += 1;
        let keep = if discard_records {
            false
        } else if control {
            true
        } else {
            should_retain_record(ctx, batch, &r, hashes[i].as_ref(), result)
        };
        if keep {
            max_offset = max_offset.max(r.offset);
            tombstones |= r.value.is_none();
            retained.push(r);
        } else {
            write_original = false;
        }
    }
    if !retained.is_empty() {
        let need_horizon = (tombstones || marker_for_empty_txn) && batch.delete_horizon().is_none();
        if write_original && !need_horizon {
            out.extend_from_slice(batch.as_bytes());
            result.retained(
                batch.max_timestamp(),
                batch.last_offset(),
                batch.last_offset(),
                retained.len() as u64,
                batch.size() as u64,
            );
        } else {
            let horizon = if need_horizon {
                Some(Timestamp(
                    ctx.now_ms.saturating_add(ctx.delete_retention_ms),
                ))
            } else {
                batch.delete_horizon()
            };
            let start = out.len();
            rebuild(batch, &retained, horizon, out)?;
            let max_ts = i64::from_be_bytes(
                out[start + MAX_TIMESTAMP_POS..start + MAX_TIMESTAMP_POS + 8]
                    .try_into()
                    .expect("8 bytes"),
            );
            result.retained(
                Timestamp(max_ts),
                batch.last_offset(),
                max_offset,
                retained.len() as u64,
                (out.len() - start) as u64,
            );
        }
    } else if retention == BatchRetention::RetainEmpty {
        out.extend_from_slice(&build_empty_batch_like(batch));
        result.retained(
            batch.max_timestamp(),
            batch.last_offset(),
            batch.last_offset(),
            0,
            crate::batch::RECORD_BATCH_OVERHEAD as u64,
        );
    }
    Ok(())
}

/// [`filter_batch`] for an uncompressed data batch whose records
/// [`walk_records`] read: the same decisions, records spliced instead of
/// rebuilt (see [`super::records`]).
fn filter_walked<'c>(
    ctx: &mut FilterContext<'_>,
    batch: &BatchView<'c>,
    retention: BatchRetention,
    fast: &mut FastScratch<'c>,
    out: &mut Vec<u8>,
    result: &mut ChunkResult,
) {
    let latest = ctx.map.latest_offset();
    fast.latest.clear();
    for r in &fast.walked {
        let l = match r.key {
            _ if r.offset > latest => Latest::Beyond,
            None => Latest::NoKey,
            Some(key) => match ctx.superseded.and_then(|s| s.is_superseded(r.offset)) {
                Some(superseded) => Latest::Known(!superseded),
                None => {
                    let h = OffsetMap::hash(key);
                    ctx.map.prefetch(&h);
                    Latest::Ask(h)
                }
            },
        };
        fast.latest.push(l);
    }
    let retain_deletes = batch.delete_horizon().is_none_or(|h| ctx.now_ms < h.0);
    fast.kept.clear();
    let mut tombstones = false;
    let mut max_offset = Offset(-1);
    for (r, l) in fast.walked.iter().zip(&fast.latest) {
        result.messages_read += 1;
        let keep = match *l {
            Latest::Beyond => true,
            Latest::NoKey => {
                result.invalid_records += 1;
                false
            }
            Latest::Known(is_latest) => is_latest && (!r.null_value || retain_deletes),
            Latest::Ask(h) => {
                r.offset >= ctx.map.get_hashed(&h) && (!r.null_value || retain_deletes)
            }
        };
        if keep {
            max_offset = max_offset.max(r.offset);
            tombstones |= r.null_value;
            fast.kept.push(*r);
        }
    }
    if fast.kept.is_empty() {
        if retention == BatchRetention::RetainEmpty {
            out.extend_from_slice(&build_empty_batch_like(batch));
            result.retained(
                batch.max_timestamp(),
                batch.last_offset(),
                batch.last_offset(),
                0,
                crate::batch::RECORD_BATCH_OVERHEAD as u64,
            );
        }
        return;
    }
    let need_horizon = tombstones && batch.delete_horizon().is_none();
    if fast.kept.len() == fast.walked.len() && !need_horizon {
        out.extend_from_slice(batch.as_bytes());
        result.retained(
            batch.max_timestamp(),
            batch.last_offset(),
            batch.last_offset(),
            fast.kept.len() as u64,
            batch.size() as u64,
        );
        return;
    }
    let horizon = if need_horizon {
        Some(Timestamp(
            ctx.now_ms.saturating_add(ctx.delete_retention_ms),
        ))
    } else {
        batch.delete_horizon()
    };
    let start = out.len();
    let max_ts = splice_batch(batch, &fast.kept, horizon, out);
    result.retained(
        max_ts,
        batch.last_offset(),
        max_offset,
        fast.kept.len() as u64,
        (out.len() - start) as u64,
    );
}

/// Kafka `buildRetainedRecordsInto`: the surviving records in a batch like
/// the original, last offset preserved.
fn rebuild(
    batch: &BatchView<'_>,
    records: &[Record<'_>],
    horizon: Option<Timestamp>,
    out: &mut Vec<u8>,
) -> Result<(), Fault> {
    let codec = batch.compression().ok_or(BatchError::InvalidCompression {
        id: batch.compression_id(),
    })?;
    let mut b = BatchBuilder::new(batch.base_offset())
        .compression(codec)
        .partition_leader_epoch(batch.partition_leader_epoch())
        .producer(
            batch.producer_id(),
            batch.producer_epoch(),
            batch.base_sequence(),
        )
        .transactional(batch.is_transactional())
        .control(batch.is_control());
    if batch.timestamp_type() == TimestampType::LogAppendTime {
        b = b.log_append_time(batch.max_timestamp());
    }
    if let Some(h) = horizon {
        b = b.delete_horizon(h);
    }
    // The builder takes owned headers: their strings and buffers are
    // reused from record to record instead of allocated per header.
    let mut headers: Vec<RecordHeader> = Vec::new();
    for r in records {
        let mut n = 0;
        for h in r.headers {
            if n == headers.len() {
                headers.push(h.to_owned_header());
            } else {
                let slot = &mut headers[n];
                slot.key.clear();
                slot.key.push_str(&h.key_str());
                match (&mut slot.value, h.value) {
                    (Some(buf), Some(v)) => {
                        buf.clear();
                        buf.extend_from_slice(v);
                    }
                    (value, v) => *value = v.map(<[u8]>::to_vec),
                }
            }
            n += 1;
        }
        b.append_with_offset(r.offset, r.timestamp, r.key, r.value, &headers[..n])
            .map_err(Fault::Build)?;
    }
    b.override_last_offset(batch.last_offset())
        .map_err(Fault::Build)?;
    b.build_into(out);
    Ok(())
}
