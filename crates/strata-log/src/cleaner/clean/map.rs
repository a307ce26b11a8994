//! Building the offset map over the dirty section (Kafka `buildOffsetMap`,
//! §11.4), and the worker's read-buffer growth.

use std::path::PathBuf;
use std::sync::Arc;

use super::{aborted, read_chunk, CleanStats, Cleaner};
use crate::batch::{BatchScanner, BatchView, MAGIC_V2};
use crate::cleaner::filter::control_type;
use crate::cleaner::offset_map::{OffsetMap, HASH_SIZE};
use crate::cleaner::records::walk_records;
use crate::cleaner::txn::CleanedTxnMetadata;
use crate::cleaner::CleanerError;
use crate::error::LogError;
use crate::segment::Segment;
use crate::types::{Offset, TopicPartition};

impl Cleaner {
    /// Kafka `buildOffsetMap` (§11.4). The map uses only the slots
    /// `max_keys` can need (Strata: less memory touched; the same keys fit).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn build_offset_map(
        &mut self,
        tp: &TopicPartition,
        fs: &crate::fs::SharedFs,
        segs: &[Arc<Segment>],
        start: Offset,
        end: Offset,
        txn_paths: &[(Offset, PathBuf)],
        max_keys: u64,
        stats: &mut CleanStats,
    ) -> Result<(), CleanerError> {
        self.superseded.reset(start);
        let slots = self.map.clear_for(
            usize::try_from(max_keys).unwrap_or(usize::MAX),
            self.load_factor,
        );
        self.max_desired = if slots == self.map.allocated_slots() {
            self.configured_max_desired
        } else {
            ((slots as f64 * self.load_factor) as usize).min(self.configured_max_desired)
        };
        let from = segs
            .iter()
            .rposition(|s| s.base_offset() <= start)
            .unwrap_or(0);
        let dirty: Vec<&Arc<Segment>> = segs[from..]
            .iter()
            .take_while(|s| s.base_offset() < end)
            .collect();
        let mut txn = CleanedTxnMetadata::new();
        txn.add_aborted(aborted(fs, txn_paths, start, end)?);
        for (i, seg) in dirty.iter().enumerate() {
            let next_start = dirty.get(i + 1).map_or(end, |s| s.base_offset());
            if self.map_segment(tp, seg, start, next_start, &mut txn, stats)? {
                break;
            }
        }
        Ok(())
    }

    /// Map one segment; true when the map filled (mid-segment is fine).
    fn map_segment(
        &mut self,
        tp: &TopicPartition,
        seg: &Segment,
        start: Offset,
        next_start: Offset,
        txn: &mut CleanedTxnMetadata,
        stats: &mut CleanStats,
    ) -> Result<bool, CleanerError> {
        let lerr = |e: LogError| CleanerError::log(tp, e);
        let size = seg.size();
        let mut pos = seg
            .translate_offset(start, 0)
            .map_err(lerr)?
            .map_or(size, |p| p.position);
        let mut scratch = Vec::new();
        let mut keyed: Vec<([u8; HASH_SIZE], Offset, u64)> = Vec::new();
        while pos < size {
            self.check_done(tp)?;
            let file = seg.file().map_err(lerr)?;
            let n = read_chunk(&file, pos, size, &mut self.buf)
                .map_err(|e| lerr(LogError::io(seg.log_path(), "read segment", e)))?;
            self.throttler.maybe_throttle(n as u64);
            let mut consumed = 0;
            let corrupt = |at: usize, source| CleanerError::CorruptBatch {
                path: seg.log_path(),
                position: pos + at as u64,
                source: Box::new(source),
            };
            let mut walked = Vec::new();
            for item in BatchScanner::new(&self.buf[..n]) {
                let (at, prefix) = item.map_err(|e| corrupt(consumed, e))?;
                consumed = at + prefix.total_size();
                if prefix.magic < MAGIC_V2 {
                    let s = crate::segment::BatchSummary::of(0, &prefix, &self.buf[at..consumed]);
                    if s.last_offset >= start {
                        self.map.update_latest_offset(s.last_offset);
                    }
                    continue;
                }
                let b = BatchView::parse(&self.buf[at..consumed]).map_err(|e| corrupt(at, e))?;
                if b.is_control() {
                    let t = control_type(&b, &mut scratch).map_err(|e| corrupt(at, e))?;
                    txn.on_control_batch_read(&b, t);
                    stats.map_messages_read += 1;
                } else if txn.on_batch_read(&b) {
                    stats.map_messages_read += b.records_count().max(0) as u64;
                } else {
                    // Hash and prefetch the batch's keys, then put them in
                    // order (the map may fill at any record).
                    keyed.clear();
                    let mut n = 0u64;
                    if walk_records(&b, &mut walked) {
                        for r in &walked {
                            n += 1;
                            if let (Some(key), true) = (r.key, r.offset >= start) {
                                let h = OffsetMap::hash(key);
                                self.map.prefetch(&h);
                                keyed.push((h, r.offset, n));
                            }
                        }
                    } else {
                        // Compressed, or something the exact parser must judge.
                        for r in b.record_iter(&mut scratch).map_err(|e| corrupt(at, e))? {
                            let r = r.map_err(|e| corrupt(at, e))?;
                            n += 1;
                            if let (Some(key), true) = (r.key, r.offset >= start) {
                                let h = OffsetMap::hash(key);
                                self.map.prefetch(&h);
                                keyed.push((h, r.offset, n));
                            }
                        }
                    }
                    for (h, offset, read) in &keyed {
                        if self.map.len() >= self.max_desired {
                            stats.map_messages_read += read - 1;
                            return Ok(true);
                        }
                        let replaced = self
                            .map
                            .put_hashed_replacing(h, *offset)
                            .expect("the load factor keeps free slots");
                        if let Some(old) = replaced {
                            self.superseded.mark(old);
                        }
                    }
                    stats.map_messages_read += n;
                }
                if b.last_offset() >= start {
                    self.map.update_latest_offset(b.last_offset());
                }
            }
            stats.map_bytes_read += consumed as u64;
            if consumed == 0 {
                if !self.grow(tp, seg, pos, size)? {
                    break;
                }
                continue;
            }
            pos += consumed as u64;
        }
        self.map.update_latest_offset(Offset(next_start.0 - 1));
        self.restore_buffer();
        Ok(false)
    }

    /// Double the read buffer for a batch that does not fit; false when the
    /// rest of the file is a partial batch (nothing more to read).
    pub(super) fn grow(
        &mut self,
        tp: &TopicPartition,
        seg: &Segment,
        pos: u64,
        size: u64,
    ) -> Result<bool, CleanerError> {
        let _ = tp;
        if self.buf.len() as u64 >= size - pos {
            return Ok(false);
        }
        if self.buf.len() >= self.max_buffer {
            return Err(CleanerError::BatchTooLarge {
                path: seg.log_path(),
                position: pos,
                limit: self.max_buffer,
            });
        }
        let n = (self.buf.len() * 2).min(self.max_buffer);
        self.buf.resize(n, 0);
        Ok(true)
    }

    pub(super) fn restore_buffer(&mut self) {
        if self.buf.len() > self.io_buffer {
            self.buf = vec![0; self.io_buffer];
        }
    }
}
