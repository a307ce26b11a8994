//! Segment recovery (§8.6) and truncation (§8.7).

use std::sync::atomic::Ordering;

use super::scan::{FileBatches, ScanError};
use super::{idx_err, Segment, SCAN_CHUNK};
use crate::batch::{BatchView, MAGIC_V2};
use crate::error::LogError;
use crate::index::{AbortedTxn, TimestampOffset};
use crate::producer_state::ProducerStateManager;
use crate::types::{LeaderEpoch, Offset, Position, Timestamp};

/// Where recovery reports the leader epochs it finds (the log's
/// leader-epoch cache).
pub trait EpochSink {
    fn latest_epoch(&self) -> Option<LeaderEpoch>;
    /// Record that `epoch` starts at `start_offset`.
    ///
    /// # Errors
    /// Failure to persist the cache.
    fn assign(&mut self, epoch: LeaderEpoch, start_offset: Offset) -> Result<(), LogError>;
}

/// What [`Segment::recover`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SegmentRecovery {
    /// Whole valid batches kept.
    pub batches: usize,
    /// Bytes cut from the end (torn or corrupt tail, preallocated zeros).
    pub truncated_bytes: u64,
    /// Next offset after the last valid batch (base when empty).
    pub next_offset: Offset,
    /// Position of the first invalid batch, when recovery stopped at one.
    pub invalid_at: Option<u64>,
}

/// Kafka `ensureValid` for any magic: v2 needs 61 bytes and a good CRC-32C;
/// v0/v1 need a good CRC-32 (IEEE) over magic..end.
fn batch_is_valid(magic: i8, bytes: &[u8]) -> bool {
    if magic >= MAGIC_V2 {
        match BatchView::parse(bytes) {
            Ok(v) => crate::batch::validate_batch(&v).is_ok(),
            Err(_) => false,
        }
    } else {
        // offset(8) size(4) crc(4) magic...
        if bytes.len() < 12 + 4 + 2 {
            return false;
        }
        let stored = u32::from_be_bytes(bytes[12..16].try_into().expect("4 bytes"));
        crc32fast::hash(&bytes[16..]) == stored
    }
}

/// Kafka `LogSegment.updateProducerState`: apply one batch to `psm` and,
/// when it completes an aborted transaction, append its entry (with the LSO
/// of that moment) to the segment's `.txnindex` before completing it.
/// Returns whether an entry was written.
fn apply_to_producers(
    st: &mut super::SegmentState,
    base: Offset,
    psm: &mut ProducerStateManager,
    bytes: &[u8],
) -> Result<bool, LogError> {
    let state_err = |psm: &ProducerStateManager, source| LogError::ProducerState {
        tp: psm.topic_partition().clone(),
        source,
    };
    let view = match BatchView::parse(bytes) {
        Ok(v) => v,
        // Validated by the caller's scan; an unparsable batch is not applied
        // (the rebuild at load skips it the same way).
        Err(_) => return Ok(false),
    };
    let completed = psm
        .apply_replicated_batch(&view)
        .map_err(|e| state_err(psm, e))?;
    let Some(txn) = completed else {
        return Ok(false);
    };
    let mut written = false;
    if txn.is_aborted {
        let lso = psm.last_stable_offset(&txn);
        let entry = AbortedTxn::new(txn.producer_id, txn.first_offset, txn.last_offset, lso);
        st.txn_index(base)
            .and_then(|i| i.append(&entry))
            .map_err(idx_err)?;
        written = true;
    }
    psm.complete_txn(&txn);
    Ok(written)
}

/// What [`Segment::check_tail`] found at the end of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TailCheck {
    /// Where the scan started: the last offset-index entry's position (0
    /// when the index is empty).
    pub from: u64,
    /// Bytes read by the scan (at most the index interval plus the batches
    /// around it, never the whole segment).
    pub scanned_bytes: u64,
    /// Position after the last whole, valid batch found by the scan.
    pub valid_end: u64,
    /// The file ends exactly on a whole, valid batch.
    pub whole: bool,
}

impl Segment {
    /// Strata's clean-start check of the active segment: scan from the last
    /// offset-index entry to the end of the file and report whether the
    /// file ends on a whole batch with a good checksum. An entry pointing
    /// past the end of the file (the file was cut before it) or a batch
    /// that does not start where the entry says is "not whole" too. The
    /// caller recovers a segment that is not whole; nothing is changed here.
    ///
    /// # Errors
    /// I/O and index errors.
    pub fn check_tail(&self) -> Result<TailCheck, LogError> {
        let from = self.last_index_position()?;
        let end = self.size();
        if from > end {
            return Ok(TailCheck {
                from,
                scanned_bytes: 0,
                valid_end: 0,
                whole: false,
            });
        }
        let mut valid_end = from;
        let file = self.file()?;
        let mut it = FileBatches::new(&file, from, end, SCAN_CHUNK);
        while let Some(item) = it.next_batch() {
            match item {
                Ok((b, bytes)) if batch_is_valid(b.magic, bytes) => valid_end = b.position + b.size,
                Ok(_) | Err(ScanError::Corrupt { .. }) => break,
                Err(ScanError::Io(e)) => return Err(LogError::io(self.log_path(), "read", e)),
            }
        }
        Ok(TailCheck {
            from,
            scanned_bytes: end - from,
            valid_end,
            whole: valid_end == end,
        })
    }

    /// Kafka `recover` (§8.6): rebuild the indexes from the `.log`, keep
    /// every valid batch up to the first invalid one and cut the rest,
    /// assigning new leader epochs on the way.
    ///
    /// With `producers` (a producer-state manager positioned at this
    /// segment's base offset) every magic-2 batch is applied to it and each
    /// aborted transaction it completes is appended to the emptied
    /// `.txnindex`, so the file comes back as the appends wrote it. Without
    /// it the `.txnindex` is only emptied.
    ///
    /// # Errors
    /// [`LogError::OffsetOverflow`] for a batch beyond the relative range;
    /// [`LogError::ProducerState`] for a log that breaks transaction rules;
    /// I/O and index errors.
    pub fn recover(
        &self,
        mut epochs: Option<&mut dyn EpochSink>,
        mut producers: Option<&mut ProducerStateManager>,
    ) -> Result<SegmentRecovery, LogError> {
        let base = self.base_offset;
        let mut st = self.lock();
        st.offset_index(base)
            .and_then(|i| i.reset())
            .map_err(idx_err)?;
        st.time_index(base)
            .and_then(|i| i.reset())
            .map_err(idx_err)?;
        st.txn_index(base)
            .and_then(|i| {
                i.reset()?;
                i.create_if_missing()
            })
            .map_err(idx_err)?;
        let mut max = TimestampOffset {
            timestamp: Timestamp::NONE,
            offset: base,
        };
        let interval = st.index_interval_bytes as u64;
        let file = st.log_file()?;
        let physical = file
            .metadata()
            .map_err(|e| LogError::io(&st.log_path, "stat segment", e))?
            .len();
        let mut valid: u64 = 0;
        let mut last_index_pos: u64 = 0;
        let mut batches = 0;
        let mut next_offset = base;
        let mut invalid_at = None;
        let mut it = FileBatches::new(&file, 0, physical, SCAN_CHUNK);
        while let Some(item) = it.next_batch() {
            let (b, bytes) = match item {
                Ok(x) => x,
                Err(ScanError::Corrupt { position }) => {
                    invalid_at = Some(position);
                    break;
                }
                Err(ScanError::Io(e)) => return Err(LogError::io(&st.log_path, "read", e)),
            };
            if !batch_is_valid(b.magic, bytes) {
                invalid_at = Some(b.position);
                break;
            }
            if b.last_offset.relative_to(base).is_none() {
                return Err(LogError::OffsetOverflow {
                    path: st.log_path.clone(),
                    base_offset: base,
                    largest: b.last_offset,
                });
            }
            if b.max_timestamp > max.timestamp {
                max = TimestampOffset {
                    timestamp: b.max_timestamp,
                    offset: b.last_offset,
                };
            }
            if valid - last_index_pos > interval {
                st.offset_index(base)
                    .and_then(|i| i.append(b.last_offset, Position(valid as u32)))
                    .map_err(idx_err)?;
                st.time_index(base)
                    .and_then(|i| i.maybe_append(max.timestamp, max.offset, false))
                    .map_err(idx_err)?;
                last_index_pos = valid;
            }
            if b.magic >= MAGIC_V2 {
                if let Some(psm) = producers.as_deref_mut() {
                    apply_to_producers(&mut st, base, psm, bytes)?;
                }
            }
            valid += b.size;
            batches += 1;
            next_offset = b.next_offset();
            if b.magic >= MAGIC_V2 && b.partition_leader_epoch.0 >= 0 {
                if let Some(cache) = epochs.as_deref_mut() {
                    let newer = cache
                        .latest_epoch()
                        .is_none_or(|e| b.partition_leader_epoch > e);
                    if newer {
                        cache.assign(b.partition_leader_epoch, b.base_offset)?;
                    }
                }
            }
        }
        let truncated = physical - valid;
        if truncated > 0 {
            self.fs
                .set_len(&file, &st.log_path, valid)
                .map_err(|e| LogError::io(&st.log_path, "truncate segment", e))?;
        }
        st.physical_len = valid;
        self.size.store(valid, Ordering::Release);
        self.end_mark.store(super::END_UNKNOWN, Ordering::Release);
        st.max_timestamp = Some(max);
        st.rolling_based_timestamp = None;
        st.offset_index(base)
            .and_then(|i| i.trim_to_valid_size())
            .map_err(idx_err)?;
        st.time_index(base)
            .and_then(|i| i.maybe_append(max.timestamp, max.offset, true))
            .map_err(idx_err)?;
        st.time_index(base)
            .and_then(|i| i.trim_to_valid_size())
            .map_err(idx_err)?;
        Ok(SegmentRecovery {
            batches,
            truncated_bytes: truncated,
            next_offset,
            invalid_at,
        })
    }

    /// Rebuild only the `.txnindex` (a lost file): empty it (creating it),
    /// then apply every magic-2 batch to `producers`, positioned at this
    /// segment's base offset, appending each aborted transaction it
    /// completes. The `.log` and the other indexes are not touched. Returns
    /// the entries written.
    ///
    /// # Errors
    /// [`LogError::ProducerState`] for a log that breaks transaction rules;
    /// I/O and index errors.
    pub fn rebuild_txn_index(
        &self,
        producers: &mut ProducerStateManager,
    ) -> Result<usize, LogError> {
        let base = self.base_offset;
        let mut st = self.lock();
        st.txn_index(base)
            .and_then(|i| {
                i.reset()?;
                i.create_if_missing()
            })
            .map_err(idx_err)?;
        let mut written = 0;
        let file = st.log_file()?;
        let mut it = FileBatches::new(&file, 0, self.size(), SCAN_CHUNK);
        while let Some(item) = it.next_batch() {
            let (b, bytes) = match item {
                Ok(x) => x,
                Err(ScanError::Corrupt { .. }) => break,
                Err(ScanError::Io(e)) => return Err(LogError::io(&st.log_path, "read", e)),
            };
            if b.magic >= MAGIC_V2 && apply_to_producers(&mut st, base, producers, bytes)? {
                written += 1;
            }
        }
        st.txn_index(base)
            .and_then(|i| i.flush())
            .map_err(idx_err)?;
        Ok(written)
    }

    /// Kafka `truncateTo` (§8.7): drop every batch whose last offset is
    /// `>= offset` (whole batches only), truncate the indexes and resize them
    /// back to the maximum. Returns the bytes removed.
    ///
    /// # Errors
    /// I/O and index errors.
    pub fn truncate_to(&self, offset: Offset, now_ms: i64) -> Result<u64, LogError> {
        let found = self.translate_offset(offset, 0)?;
        let base = self.base_offset;
        let mut st = self.lock();
        let max_size = st.max_index_size;
        st.active_index_size = Some(max_size);
        st.offset_index(base)
            .and_then(|i| {
                i.truncate_to(offset)?;
                i.resize(max_size).map(|_| ())
            })
            .map_err(idx_err)?;
        st.time_index(base)
            .and_then(|i| {
                i.truncate_to(offset)?;
                i.resize(max_size).map(|_| ())
            })
            .map_err(idx_err)?;
        st.txn_index(base)
            .and_then(|i| i.truncate_to(offset))
            .map_err(idx_err)?;
        let Some(found) = found else {
            return Ok(0);
        };
        let old = self.size();
        let file = st.log_file()?;
        self.fs
            .set_len(&file, &st.log_path, found.position)
            .map_err(|e| LogError::io(&st.log_path, "truncate segment", e))?;
        st.physical_len = found.position;
        self.size.store(found.position, Ordering::Release);
        self.end_mark.store(super::END_UNKNOWN, Ordering::Release);
        if found.position == 0 {
            st.created_ms = now_ms;
            st.rolling_based_timestamp = None;
        }
        st.bytes_since_last_index_entry = 0;
        st.max_timestamp = None;
        drop(st);
        self.max_timestamp_so_far()?;
        Ok(old - found.position)
    }
}
