//! Reads: fetch slices for sendfile, timestamp lookups.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use super::Log;
use crate::batch::BatchView;
use crate::error::LogError;
use crate::segment::{floor_segment, Segment};
use crate::types::{LeaderEpoch, Offset, Timestamp};

/// The upper bound of a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadBound {
    HighWatermark,
    LogEnd,
    Offset(Offset),
}

/// Bytes `[position, position + len)` of a `.log` file.
#[derive(Clone, Debug)]
pub struct FileSlice {
    pub file: Arc<File>,
    pub position: u64,
    pub len: u64,
}

/// The result of [`Log::read`].
#[derive(Clone, Debug)]
pub struct FetchData {
    /// Base offset of the first batch in the slices (the requested offset
    /// when nothing was found).
    pub first_offset_in_slice: Offset,
    /// Usually 0 or 1 slice.
    pub slices: Vec<FileSlice>,
    pub high_watermark: Offset,
    pub log_start_offset: Offset,
    pub log_end_offset: Offset,
    /// The upper bound of this read's aborted-transaction lookup
    /// ([`Log::collect_aborted_transactions`]), as Kafka computes it: the
    /// first offset-index entry at or past the end of the returned bytes,
    /// else the next segment's base, else the log end. The requested
    /// offset when nothing was returned.
    pub aborted_upper_bound: Offset,
}

impl FetchData {
    pub fn total_len(&self) -> u64 {
        self.slices.iter().map(|s| s.len).sum()
    }

    /// Copy the slices into memory with positioned reads (when sendfile is
    /// not possible, e.g. TLS).
    ///
    /// # Errors
    /// Read errors.
    pub fn read_to_vec(&self) -> std::io::Result<Vec<u8>> {
        let mut out = vec![0u8; self.total_len() as usize];
        let mut at = 0usize;
        for s in &self.slices {
            let end = at + s.len as usize;
            s.file.read_exact_at(&mut out[at..end], s.position)?;
            at = end;
        }
        Ok(out)
    }
}

/// A timestamp lookup result (ListOffsets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimestampAndOffset {
    pub timestamp: Timestamp,
    pub offset: Offset,
    pub leader_epoch: Option<LeaderEpoch>,
}

impl Log {
    /// Read from the batch holding `start`: at most `max_bytes` (at least
    /// one whole batch with `min_one_message`), never past `upper_bound`.
    /// Never waits for an appender: works on a snapshot of the segments.
    ///
    /// # Errors
    /// [`LogError::OffsetOutOfRange`] below the log start or above the log
    /// end; storage errors.
    pub fn read(
        &self,
        start: Offset,
        max_bytes: usize,
        upper_bound: ReadBound,
        min_one_message: bool,
    ) -> Result<FetchData, LogError> {
        self.check_usable()?;
        let leo = self.log_end_offset();
        let hw = self.high_watermark();
        let segs = self.snapshot();
        let local_start = self.local_log_start_offset();
        let mut data = FetchData {
            first_offset_in_slice: start,
            slices: Vec::new(),
            high_watermark: hw,
            log_start_offset: self.log_start_offset(),
            log_end_offset: leo,
            aborted_upper_bound: start,
        };
        if start > leo || start < local_start {
            // Below the local start: `log_start` names the local bound, so
            // a tiered caller can tell "remote" from "really out of range"
            // by comparing with `log_start_offset()`.
            return Err(LogError::OffsetOutOfRange {
                tp: self.tp.clone(),
                requested: start,
                log_start: local_start,
                log_end: leo,
            });
        }
        let upper = match upper_bound {
            ReadBound::HighWatermark => hw,
            ReadBound::LogEnd => leo,
            ReadBound::Offset(o) => o.min(leo),
        };
        if start >= upper {
            return Ok(data);
        }
        let mut i = floor_segment(&segs, start).unwrap_or(0);
        let r = (|| {
            while i < segs.len() {
                let seg = &segs[i];
                let next_base = segs.get(i + 1).map(|s| s.base_offset());
                // The bound's byte position, if it falls in this segment:
                // the end of the last append when that ended at the bound
                // (no scan), else a search within the bytes present before
                // it (an append racing this read must not add batches at or
                // past the bound: read_committed would return an open
                // transaction, read_uncommitted data above the HW).
                let max_position = if next_base.is_none_or(|n| upper < n) {
                    match seg.end_mark() {
                        Some((next, size)) if next == upper => size,
                        _ => {
                            let end = seg.size();
                            seg.position_of_offset_within(upper, end)?
                        }
                    }
                } else {
                    seg.size()
                };
                if let Some(slice) =
                    seg.read(start, max_bytes as u64, max_position, min_one_message)?
                {
                    if slice.len > 0 {
                        let mut b = [0u8; 8];
                        slice
                            .file
                            .read_exact_at(&mut b, slice.position)
                            .map_err(|e| LogError::io(seg.log_path(), "read", e))?;
                        data.first_offset_in_slice = Offset(i64::from_be_bytes(b));
                        data.aborted_upper_bound = seg
                            .fetch_upper_bound_offset(slice.position, slice.len)?
                            .or(next_base)
                            .unwrap_or(leo);
                        data.slices.push(FileSlice {
                            file: slice.file,
                            position: slice.position,
                            len: slice.len,
                        });
                        return Ok(());
                    }
                }
                if next_base.is_none_or(|n| n > upper) {
                    return Ok(());
                }
                i += 1;
            }
            Ok(())
        })();
        self.fail(r)?;
        Ok(data)
    }

    /// The first offset whose record timestamp is `>= ts` (ListOffsets by
    /// time), searching from the log start.
    ///
    /// # Errors
    /// Storage errors.
    pub fn fetch_offset_for_timestamp(
        &self,
        ts: Timestamp,
    ) -> Result<Option<TimestampAndOffset>, LogError> {
        self.check_usable()?;
        let segs = self.snapshot();
        let log_start = self.local_log_start_offset();
        let r = (|| {
            for seg in segs.iter() {
                if seg.max_timestamp_so_far()?.timestamp < ts {
                    continue;
                }
                let Some((_, _, batch)) = seg.find_offset_by_timestamp(ts, log_start)? else {
                    continue;
                };
                let mut buf = vec![0u8; batch.size as usize];
                seg.file()?
                    .read_exact_at(&mut buf, batch.position)
                    .map_err(|e| LogError::io(seg.log_path(), "read", e))?;
                if let Some(found) = first_record_at_or_after(&buf, ts, log_start) {
                    return Ok(Some(found));
                }
            }
            Ok(None)
        })();
        self.fail(r)
    }

    /// The record with the largest timestamp (ListOffsets `MAX_TIMESTAMP`).
    pub fn latest_timestamp_and_offset(&self) -> Option<TimestampAndOffset> {
        let segs = self.snapshot();
        let mut best: Option<(Timestamp, Offset, &Arc<Segment>)> = None;
        for seg in segs.iter() {
            let m = seg.max_timestamp_so_far().ok()?;
            if m.timestamp.0 >= 0 && best.is_none_or(|(t, _, _)| m.timestamp > t) {
                best = Some((m.timestamp, m.offset, seg));
            }
        }
        let (ts, shallow, seg) = best?;
        // The time index holds the batch's last offset; find the record.
        let found = seg
            .translate_offset(shallow, 0)
            .ok()
            .flatten()
            .and_then(|p| {
                let mut buf = vec![0u8; p.size as usize];
                seg.file().ok()?.read_exact_at(&mut buf, p.position).ok()?;
                first_record_at_or_after(&buf, ts, Offset(0))
            });
        Some(found.unwrap_or(TimestampAndOffset {
            timestamp: ts,
            offset: shallow,
            leader_epoch: None,
        }))
    }
}

/// The first record of the v2 batch `bytes` with timestamp `>= ts` and offset
/// `>= min_offset`. Legacy batches: the batch's own offset and timestamp.
fn first_record_at_or_after(
    bytes: &[u8],
    ts: Timestamp,
    min_offset: Offset,
) -> Option<TimestampAndOffset> {
    let view = BatchView::parse(bytes).ok()?;
    let epoch = view.partition_leader_epoch();
    let leader_epoch = (epoch.0 >= 0).then_some(epoch);
    let mut scratch = Vec::new();
    let iter = view.record_iter(&mut scratch).ok()?;
    for rec in iter {
        let rec = rec.ok()?;
        if rec.timestamp >= ts && rec.offset >= min_offset {
            return Some(TimestampAndOffset {
                timestamp: rec.timestamp,
                offset: rec.offset,
                leader_epoch,
            });
        }
    }
    None
}
