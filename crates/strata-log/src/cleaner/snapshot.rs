//! Gathering a [`CleanerLogSnapshot`] from a live log: the only I/O behind
//! the cleaner's pure choice (segment sizes, largest and first-batch
//! timestamps, index fill).

use std::os::unix::fs::FileExt;

use super::policy::{CleanerLogSnapshot, SegmentFacts};
use crate::batch::{MAGIC_V2, MAX_TIMESTAMP_POS, RECORD_BATCH_OVERHEAD};
use crate::error::LogError;
use crate::log::Log;
use crate::segment::Segment;
use crate::types::{Offset, Timestamp};

/// MaxTimestamp of the first batch (Kafka `getFirstBatchTimestamp`), -1
/// when the segment is empty or starts with a legacy entry.
fn first_batch_timestamp(seg: &Segment) -> Result<Timestamp, LogError> {
    if seg.size() < RECORD_BATCH_OVERHEAD as u64 {
        return Ok(Timestamp::NONE);
    }
    let mut head = [0u8; RECORD_BATCH_OVERHEAD];
    seg.file()?
        .read_exact_at(&mut head, 0)
        .map_err(|e| LogError::io(seg.log_path(), "read first batch", e))?;
    if head[16] as i8 != MAGIC_V2 {
        return Ok(Timestamp::NONE);
    }
    let ts = i64::from_be_bytes(
        head[MAX_TIMESTAMP_POS..MAX_TIMESTAMP_POS + 8]
            .try_into()
            .expect("8 bytes"),
    );
    Ok(Timestamp(ts))
}

/// The facts of one segment.
///
/// # Errors
/// I/O and index errors.
pub(crate) fn segment_facts(seg: &Segment) -> Result<SegmentFacts, LogError> {
    let max = seg.max_timestamp_so_far()?.timestamp;
    let largest = if max.0 >= 0 {
        max
    } else {
        Timestamp(seg.last_modified_ms()?)
    };
    let (oe, _, te, _) = seg.index_fill()?;
    Ok(SegmentFacts {
        base_offset: seg.base_offset(),
        size: seg.size(),
        largest_timestamp: largest,
        first_batch_timestamp: first_batch_timestamp(seg)?,
        offset_index_entries: oe,
        time_index_entries: te,
    })
}

/// The log as the cleaner's policy sees it now.
///
/// # Errors
/// I/O and index errors reading segment facts.
pub fn cleaner_snapshot(
    log: &Log,
    checkpoint: Option<Offset>,
) -> Result<CleanerLogSnapshot, LogError> {
    let segs = log.snapshot();
    let mut segments = Vec::with_capacity(segs.len());
    for s in segs.iter() {
        segments.push(segment_facts(s)?);
    }
    Ok(CleanerLogSnapshot {
        tp: log.topic_partition().clone(),
        segments,
        log_start_offset: log.log_start_offset(),
        log_end_offset: log.log_end_offset(),
        last_stable_offset: log.last_stable_offset(),
        checkpoint,
    })
}
