//! Checks of one segment `.log`: every batch's header and CRC (and with
//! `--deep` its records), offsets strictly increasing, the file's tail.
//!
//! The result, [`SegmentScan`], lists every whole batch's position, offsets
//! and max timestamp: the index checks and the partition-level checks work
//! from it without reading the `.log` again.

use std::path::Path;

use strata_log::batch::{validate_batch, validate_batch_deep, LENGTH_POS, LOG_OVERHEAD};
use strata_log::codec::be_i32;

use super::findings::{Finding, Problem};
use crate::read::records::{scan, Scanned};

/// One whole batch (or legacy entry) of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchInfo {
    pub position: u64,
    pub size: u64,
    /// For a legacy entry, its (last) offset.
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    /// The partition leader epoch (-1 for legacy entries).
    pub leader_epoch: i32,
}

/// What a segment holds.
#[derive(Clone, Debug, Default)]
pub struct SegmentScan {
    pub base: i64,
    pub batches: Vec<BatchInfo>,
}

impl SegmentScan {
    pub fn last_offset(&self) -> Option<i64> {
        self.batches.last().map(|b| b.last_offset)
    }

    /// The batch starting exactly at `position`.
    pub fn batch_at(&self, position: u64) -> Option<(usize, &BatchInfo)> {
        self.batches
            .binary_search_by_key(&position, |b| b.position)
            .ok()
            .map(|i| (i, &self.batches[i]))
    }
}

/// Check the segment file `path` whose name says it starts at `base`.
pub fn check_segment(
    path: &Path,
    base: i64,
    bytes: &[u8],
    deep: bool,
    out: &mut Vec<Finding>,
) -> SegmentScan {
    let (items, valid_end) = scan(bytes);
    let mut seg = SegmentScan {
        base,
        batches: Vec::with_capacity(items.len()),
    };
    let mut tail_reported = false;
    for item in &items {
        let info = match item {
            Scanned::V2 { position, batch } => {
                let check = if deep {
                    validate_batch_deep(batch).map(|_| ())
                } else {
                    validate_batch(batch)
                };
                if let Err(e) = check {
                    out.push(Finding::error(
                        path,
                        Some(*position as u64),
                        Problem::CorruptBatch {
                            base_offset: Some(batch.base_offset().get()),
                            error: e,
                        },
                    ));
                }
                if batch.last_offset_delta() < 0 {
                    out.push(Finding::error(
                        path,
                        Some(*position as u64),
                        Problem::LastOffsetBelowBase {
                            base_offset: batch.base_offset().get(),
                            last_offset: batch.last_offset().get(),
                        },
                    ));
                }
                BatchInfo {
                    position: *position as u64,
                    size: batch.size() as u64,
                    base_offset: batch.base_offset().get(),
                    last_offset: batch.last_offset().get(),
                    max_timestamp: batch.max_timestamp().0,
                    leader_epoch: batch.partition_leader_epoch().0,
                }
            }
            Scanned::Legacy { position, entry } => {
                if let Err(e) = entry.validate() {
                    out.push(Finding::error(
                        path,
                        Some(*position as u64),
                        Problem::CorruptBatch {
                            base_offset: Some(entry.offset.get()),
                            error: e,
                        },
                    ));
                }
                if deep {
                    if let Err(e) = entry.records() {
                        out.push(Finding::error(
                            path,
                            Some(*position as u64),
                            Problem::CorruptBatch {
                                base_offset: Some(entry.offset.get()),
                                error: e,
                            },
                        ));
                    }
                }
                BatchInfo {
                    position: *position as u64,
                    size: entry.size() as u64,
                    base_offset: entry.offset.get(),
                    last_offset: entry.offset.get(),
                    max_timestamp: entry.timestamp.0,
                    leader_epoch: -1,
                }
            }
            Scanned::Corrupt {
                position,
                size,
                error,
            } => {
                let rest = &bytes[*position..];
                if size.is_none() && rest.iter().all(|b| *b == 0) {
                    out.push(Finding::warning(
                        path,
                        Some(*position as u64),
                        Problem::ZeroTail {
                            bytes: rest.len() as u64,
                        },
                    ));
                } else {
                    out.push(Finding::error(
                        path,
                        Some(*position as u64),
                        Problem::CorruptBatch {
                            base_offset: None,
                            error: error.clone(),
                        },
                    ));
                }
                tail_reported = size.is_none();
                continue;
            }
        };
        if let Some(prev) = seg.batches.last() {
            if info.base_offset <= prev.last_offset {
                out.push(Finding::error(
                    path,
                    Some(info.position),
                    Problem::OffsetNotIncreasing {
                        base_offset: info.base_offset,
                        previous_last_offset: prev.last_offset,
                    },
                ));
            }
        } else if info.base_offset < base {
            out.push(Finding::error(
                path,
                Some(info.position),
                Problem::SegmentBaseAboveFirstBatch {
                    segment_base: base,
                    first_base: info.base_offset,
                },
            ));
        }
        seg.batches.push(info);
    }
    if !tail_reported && valid_end < bytes.len() {
        let rest = &bytes[valid_end..];
        let finding = if rest.iter().all(|b| *b == 0) {
            Finding::warning(
                path,
                Some(valid_end as u64),
                Problem::ZeroTail {
                    bytes: rest.len() as u64,
                },
            )
        } else {
            // Enough bytes for the size field: report what the batch needs.
            let needed = if rest.len() >= LOG_OVERHEAD {
                i64::from(be_i32(rest, LENGTH_POS)) + LOG_OVERHEAD as i64
            } else {
                LOG_OVERHEAD as i64
            };
            Finding::error(
                path,
                Some(valid_end as u64),
                Problem::TruncatedBatch {
                    needed: needed.max(0) as u64,
                    available: rest.len() as u64,
                },
            )
        };
        out.push(finding);
    }
    seg
}
