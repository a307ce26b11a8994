//! The remote read path (Kafka `RemoteLogManager.read` and the remote
//! ListOffsets lookup, reference §8.3 and §8.5).
//!
//! A read below the local log start finds the FINISHED segment holding the
//! offset, turns the offset into a byte position with the segment's offset
//! index (from the [`crate::index_cache`]), fetches a window from there,
//! skips batches that end before the offset, and returns whole batches
//! within the byte budget (the first batch whole even past the budget when
//! `min_one_message`). A segment with nothing at or after the offset hands
//! over to the next one.

use std::sync::Arc;

use bytes::Bytes;
use strata_log::batch::{BatchPrefix, BatchView, LAST_OFFSET_DELTA_POS};
use strata_log::codec::be_i32;
use strata_log::{
    AbortedTxn, LeaderEpoch, Log, Offset, Timestamp, TimestampAndOffset, TopicPartition,
};

use crate::error::TieredError;
use crate::manager::{RemoteLogManager, TieredPartition};
use crate::metadata::{RemoteLogSegmentMetadata, RemoteLogSegmentState};
use crate::metrics::TieredMetrics;

/// Bytes fetched beyond the budget, so the batch holding the offset (within
/// one index interval of the indexed position) and the answer come in one request.
const SCAN_WINDOW: u64 = 64 * 1024;
/// Bytes of a batch header that hold its last offset (magic v2).
const V2_LAST_OFFSET_END: usize = LAST_OFFSET_DELTA_POS + 4;

/// What a remote read returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteRead {
    /// Whole record batches, as stored (empty when the budget does not fit
    /// the first batch and `min_one_message` is false, or past the end).
    pub records: Bytes,
    /// Start offset of the remote segment served from.
    pub segment_start: Offset,
    /// Upper bound of this read's aborted-transaction lookup
    /// ([`RemoteLogManager::collect_aborted_transactions`]), as Kafka's
    /// `RemoteLogManager.addAbortedTransactions` computes it: the first
    /// remote offset-index entry at or past the end of the returned bytes,
    /// else the segment's end offset + 1; the requested offset when nothing
    /// was returned.
    pub aborted_upper_bound: Offset,
}

/// Base offset, total size and last offset of the batch at `buf[at..]`, or
/// `None` when `buf` does not hold enough of its header.
fn batch_at(buf: &[u8], at: usize) -> Option<Result<(Offset, usize, Offset), ()>> {
    let rest = buf.get(at..)?;
    let prefix = match BatchPrefix::parse(rest) {
        Ok(p) => p,
        Err(_) if rest.len() < V2_LAST_OFFSET_END => return None,
        Err(_) => return Some(Err(())),
    };
    let base = Offset(prefix.base_offset);
    let last = if prefix.magic >= 2 {
        let b = rest.get(..V2_LAST_OFFSET_END)?;
        base.plus(i64::from(be_i32(b, LAST_OFFSET_DELTA_POS)))
    } else {
        base // legacy: the wrapper's offset is its last offset
    };
    Some(Ok((base, prefix.total_size(), last)))
}

impl RemoteLogManager {
    fn tiered(&self, tp: &TopicPartition) -> Result<Arc<TieredPartition>, TieredError> {
        self.partition(tp)
            .ok_or_else(|| TieredError::NotTiered { tp: tp.clone() })
    }

    /// The live (FINISHED) segment holding `offset`, asked the catalogue's
    /// way: by the epoch the segment says is in force at `offset`.
    fn segment_for(
        &self,
        p: &TieredPartition,
        offset: Offset,
    ) -> Result<Option<RemoteLogSegmentMetadata>, TieredError> {
        let tp = &p.tip.tp;
        let all = self
            .rlmm
            .list_remote_log_segments(&p.tip)
            .map_err(Self::metadata_err(tp))?;
        for md in all.iter().rev() {
            if md.state != RemoteLogSegmentState::CopySegmentFinished
                || md.start_offset > offset
                || md.end_offset < offset
            {
                continue;
            }
            let epoch = md
                .segment_leader_epochs
                .range(..=LeaderEpoch(i32::MAX))
                .filter(|(_, start)| **start <= offset)
                .map(|(e, _)| *e)
                .next_back();
            if let Some(epoch) = epoch {
                if let Some(found) = self
                    .rlmm
                    .remote_log_segment_metadata(&p.tip, epoch, offset)
                    .map_err(Self::metadata_err(tp))?
                {
                    return Ok(Some(found));
                }
            }
        }
        Ok(None)
    }

    /// Read from the remote tier at `offset`, at most `max_bytes` (but one
    /// whole batch when `min_one_message`).
    ///
    /// # Errors
    /// [`TieredError::OffsetOutOfRange`] when no remote segment holds
    /// `offset` (or it is below the log start), storage/metadata errors.
    pub fn read_remote(
        &self,
        tp: &TopicPartition,
        offset: Offset,
        max_bytes: usize,
        min_one_message: bool,
    ) -> Result<RemoteRead, TieredError> {
        TieredMetrics::add(&self.metrics.remote_fetch_requests, 1);
        let result = self.read_remote_inner(tp, offset, max_bytes, min_one_message);
        match &result {
            Ok(r) => TieredMetrics::add(&self.metrics.remote_fetch_bytes, r.records.len() as u64),
            Err(TieredError::OffsetOutOfRange { .. }) => {}
            Err(_) => TieredMetrics::add(&self.metrics.remote_fetch_errors, 1),
        }
        result
    }

    fn read_remote_inner(
        &self,
        tp: &TopicPartition,
        offset: Offset,
        max_bytes: usize,
        min_one_message: bool,
    ) -> Result<RemoteRead, TieredError> {
        let p = self.tiered(tp)?;
        if offset < p.log_start_offset() {
            return Err(TieredError::OffsetOutOfRange {
                tp: tp.clone(),
                offset,
            });
        }
        let mut md =
            self.segment_for(&p, offset)?
                .ok_or_else(|| TieredError::OffsetOutOfRange {
                    tp: tp.clone(),
                    offset,
                })?;
        let mut target = offset;
        loop {
            if let Some(read) = self.read_segment(tp, &md, target, max_bytes, min_one_message)? {
                return Ok(read);
            }
            // Nothing at or after `target` here (compaction gaps): next segment.
            target = md.end_offset.plus(1);
            match self.segment_for(&p, target)? {
                Some(next) => md = next,
                None => {
                    return Ok(RemoteRead {
                        records: Bytes::new(),
                        segment_start: md.start_offset,
                        aborted_upper_bound: offset,
                    })
                }
            }
        }
    }

    /// `None` when the segment holds no batch ending at or after `target`.
    fn read_segment(
        &self,
        tp: &TopicPartition,
        md: &RemoteLogSegmentMetadata,
        target: Offset,
        max_bytes: usize,
        min_one_message: bool,
    ) -> Result<Option<RemoteRead>, TieredError> {
        let size = md.segment_size_in_bytes.max(0) as u64;
        let indexes = self
            .index_cache
            .get(md, self.rsm.as_ref())
            .map_err(Self::storage_err(tp))?;
        let mut pos = u64::from(indexes.position_for(target).0);
        let corrupt = |at: u64| TieredError::CorruptSegment {
            tp: tp.clone(),
            segment: md.segment_id.to_string(),
            position: at,
        };
        // Phase 1: find the first batch whose last offset >= target.
        let (found, window, window_start) = loop {
            if pos >= size {
                return Ok(None);
            }
            // Budget plus slack: the first wanted batch is usually within one index
            // interval of `pos`, so one request covers the whole answer.
            let end = (pos + max_bytes as u64 + SCAN_WINDOW).min(size);
            let buf = self
                .rsm
                .fetch_log_segment(md, pos, Some(end))
                .map_err(Self::storage_err(tp))?;
            let mut at = 0usize;
            let mut next_pos = None;
            while at < buf.len() {
                match batch_at(&buf, at) {
                    None => break,
                    Some(Err(())) => return Err(corrupt(pos + at as u64)),
                    Some(Ok((_, total, last))) => {
                        if last >= target {
                            next_pos = Some(at);
                            break;
                        }
                        at += total;
                    }
                }
            }
            match next_pos {
                Some(at) => break (pos + at as u64, buf, pos),
                None if at == 0 && end == size => return Err(corrupt(pos)),
                None => pos += at as u64,
            }
        };
        // Phase 2: whole batches from `found` within the budget.
        let first_size = match batch_at(&window, (found - window_start) as usize) {
            Some(Ok((_, total, _))) => total,
            _ => return Err(corrupt(found)),
        };
        if first_size > max_bytes && !min_one_message {
            return Ok(Some(RemoteRead {
                records: Bytes::new(),
                segment_start: md.start_offset,
                aborted_upper_bound: target,
            }));
        }
        let budget = max_bytes.max(first_size) as u64;
        let end = (found + budget).min(size);
        let window_end = window_start + window.len() as u64;
        let bytes = if end <= window_end {
            window.slice((found - window_start) as usize..(end - window_start) as usize)
        } else {
            self.rsm
                .fetch_log_segment(md, found, Some(end))
                .map_err(Self::storage_err(tp))?
        };
        let mut keep = 0usize;
        while let Some(Ok((_, total, _))) = batch_at(&bytes, keep) {
            if keep + total > bytes.len() {
                break;
            }
            keep += total;
        }
        let aborted_upper_bound = if keep == 0 {
            target
        } else {
            indexes
                .fetch_upper_bound_offset(found, keep as u64)
                .unwrap_or(md.end_offset.plus(1))
        };
        Ok(Some(RemoteRead {
            records: bytes.slice(..keep),
            segment_start: md.start_offset,
            aborted_upper_bound,
        }))
    }

    /// The aborted transactions a READ_COMMITTED read from the remote tier
    /// at `fetch_offset` must report (Kafka
    /// `RemoteLogManager.collectAbortedTransactions`, reference §8): the
    /// remote `.txnindex` of the segment holding `fetch_offset`, then of the
    /// following remote segments, then the local segments of `log` after
    /// the last remote one, with the local rule ([`Log::collect_aborted_transactions`]):
    /// entries with `last_offset >= fetch_offset` and `first_offset <
    /// upper_bound`, stopping at the first entry whose LSO is `>=
    /// upper_bound`. `upper_bound` is [`RemoteRead::aborted_upper_bound`].
    /// The answer equals a local read's over the same segments.
    ///
    /// # Errors
    /// Storage/metadata errors, a corrupt remote or local transaction index.
    pub fn collect_aborted_transactions(
        &self,
        log: &Log,
        fetch_offset: Offset,
        upper_bound: Offset,
    ) -> Result<Vec<AbortedTxn>, TieredError> {
        let tp = log.topic_partition();
        let p = self.tiered(tp)?;
        let mut out = Vec::new();
        let mut next = self.segment_for(&p, fetch_offset)?;
        let mut searched_end = fetch_offset;
        while let Some(md) = next {
            let indexes = self
                .index_cache
                .get(&md, self.rsm.as_ref())
                .map_err(Self::storage_err(tp))?;
            let found = indexes
                .collect_aborted_txns(fetch_offset, upper_bound)
                .map_err(|source| TieredError::CorruptTxnIndex {
                    tp: tp.clone(),
                    segment: md.segment_id.to_string(),
                    source,
                })?;
            out.extend(found.aborted);
            if found.is_complete {
                return Ok(out);
            }
            searched_end = md.end_offset.plus(1);
            next = self.segment_for(&p, searched_end)?;
        }
        // Local segments: markers at or after the last remote offset (so an
        // entry of a segment in both tiers is not reported twice).
        let local = log
            .collect_aborted_transactions(searched_end.max(fetch_offset), upper_bound)
            .map_err(|e| TieredError::Log {
                tp: tp.clone(),
                source: Box::new(e),
            })?;
        out.extend(local);
        Ok(out)
    }

    /// A read on the bounded reader pool (`remote.log.reader.threads`,
    /// `remote.log.reader.max.pending.tasks`); await the receiver from async
    /// code without blocking other fetches.
    ///
    /// # Errors
    /// [`TieredError::PoolFull`] when the queue is full.
    pub fn submit_read(
        self: &Arc<Self>,
        tp: TopicPartition,
        offset: Offset,
        max_bytes: usize,
        min_one_message: bool,
    ) -> Result<tokio::sync::oneshot::Receiver<Result<RemoteRead, TieredError>>, TieredError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let me = Arc::clone(self);
        self.reader.try_submit(move || {
            let _ = tx.send(me.read_remote(&tp, offset, max_bytes, min_one_message));
        })?;
        Ok(rx)
    }

    /// Queue length of the reader pool (Kafka `RemoteLogReaderTaskQueueSize`).
    pub fn reader_queue_size(&self) -> usize {
        self.reader.queue_size()
    }

    /// First offset with timestamp >= `ts` among remote segments (ListOffsets
    /// by timestamp across tiers: the caller falls back to the local log on
    /// `None`).
    ///
    /// # Errors
    /// Storage/metadata errors, a corrupt remote segment.
    pub fn offset_for_timestamp(
        &self,
        tp: &TopicPartition,
        ts: Timestamp,
    ) -> Result<Option<TimestampAndOffset>, TieredError> {
        let p = self.tiered(tp)?;
        let start = p.log_start_offset();
        let mut segments: Vec<_> = self
            .rlmm
            .list_remote_log_segments(&p.tip)
            .map_err(Self::metadata_err(tp))?
            .into_iter()
            .filter(|m| {
                m.state == RemoteLogSegmentState::CopySegmentFinished
                    && m.end_offset >= start
                    && m.max_timestamp >= ts
            })
            .collect();
        segments.sort_by_key(|m| m.start_offset);
        for md in segments {
            let indexes = self
                .index_cache
                .get(&md, self.rsm.as_ref())
                .map_err(Self::storage_err(tp))?;
            let from = indexes.offset_for_timestamp(ts).max(start);
            let pos = u64::from(indexes.position_for(from).0);
            let data = self
                .rsm
                .fetch_log_segment(&md, pos, None)
                .map_err(Self::storage_err(tp))?;
            let mut at = 0usize;
            while let Some(Ok((_, total, last))) = batch_at(&data, at) {
                let Some(bytes) = data.get(at..at + total) else {
                    break;
                };
                at += total;
                if last < start {
                    continue;
                }
                let Ok(view) = BatchView::parse(bytes) else {
                    continue;
                };
                if view.max_timestamp() < ts {
                    continue;
                }
                let records = view.records().map_err(|_| TieredError::CorruptSegment {
                    tp: tp.clone(),
                    segment: md.segment_id.to_string(),
                    position: pos + (at - total) as u64,
                })?;
                if let Some(r) = records
                    .iter()
                    .find(|r| r.timestamp >= ts && r.offset >= start)
                {
                    return Ok(Some(TimestampAndOffset {
                        timestamp: r.timestamp,
                        offset: r.offset,
                        leader_epoch: Some(view.partition_leader_epoch()),
                    }));
                }
            }
        }
        Ok(None)
    }
}
