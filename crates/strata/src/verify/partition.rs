//! Checks of one partition directory: its files, segments in offset order,
//! indexes, producer snapshots, `leader-epoch-checkpoint` and
//! `partition.metadata`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use strata_log::format as f;

use super::findings::{Finding, Problem};
use super::index::{check_offset_index, check_time_index, check_txn_index};
use super::segment::check_segment;
use strata_log::codec::snapshot::decode_snapshot;
use strata_log::PartitionMetadata;

use crate::read::checkpoint::read_epoch_checkpoint;
use crate::read::read_all;

/// What was learned about a partition, for the log-dir checkpoint checks.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PartitionSummary {
    pub dir: PathBuf,
    pub segments: usize,
    pub batches: usize,
    /// The offset after the last batch; the last segment's base when it is empty.
    pub log_end: i64,
    /// The topic id in `partition.metadata`, when it parsed.
    #[serde(skip)]
    pub topic_id: Option<uuid::Uuid>,
}

/// The files of a partition directory, by role.
#[derive(Default)]
struct Listing {
    segments: BTreeMap<i64, PathBuf>,
    indexes: BTreeMap<i64, PathBuf>,
    time_indexes: BTreeMap<i64, PathBuf>,
    txn_indexes: BTreeMap<i64, PathBuf>,
    snapshots: BTreeMap<i64, PathBuf>,
    epoch_checkpoint: Option<PathBuf>,
    partition_metadata: Option<PathBuf>,
}

fn offset_of(name: &str) -> Option<i64> {
    f::offset_from_file_name(name).map(|o| o.get())
}

fn list(dir: &Path, out: &mut Vec<Finding>) -> Option<Listing> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            out.push(Finding::error(
                dir,
                None,
                Problem::Unreadable {
                    detail: e.to_string(),
                },
            ));
            return None;
        }
    };
    let mut l = Listing::default();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            continue;
        }
        let slot = |map: &mut BTreeMap<i64, PathBuf>, out: &mut Vec<Finding>| match offset_of(&name)
        {
            Some(o) => {
                map.insert(o, path.clone());
            }
            None => out.push(Finding::warning(&path, None, Problem::UnknownFile)),
        };
        if name.ends_with(f::DELETED_SUFFIX) {
            out.push(Finding::warning(&path, None, Problem::DeletedFile));
        } else if name.ends_with(f::CLEANED_SUFFIX) {
            out.push(Finding::error(
                &path,
                None,
                Problem::LeftoverFile {
                    suffix: f::CLEANED_SUFFIX,
                    operation: "log cleaning or segment split",
                },
            ));
        } else if name.ends_with(f::SWAP_SUFFIX) {
            out.push(Finding::error(
                &path,
                None,
                Problem::LeftoverFile {
                    suffix: f::SWAP_SUFFIX,
                    operation: "segment swap",
                },
            ));
        } else if name.ends_with(f::TMP_SUFFIX) {
            out.push(Finding::warning(
                &path,
                None,
                Problem::LeftoverFile {
                    suffix: f::TMP_SUFFIX,
                    operation: "checkpoint or metadata write",
                },
            ));
        } else if name == f::LEADER_EPOCH_CHECKPOINT {
            l.epoch_checkpoint = Some(path);
        } else if name == f::PARTITION_METADATA {
            l.partition_metadata = Some(path);
        } else if name.ends_with(f::LOG_SUFFIX) {
            slot(&mut l.segments, out);
        } else if name.ends_with(f::INDEX_SUFFIX) {
            slot(&mut l.indexes, out);
        } else if name.ends_with(f::TIME_INDEX_SUFFIX) {
            slot(&mut l.time_indexes, out);
        } else if name.ends_with(f::TXN_INDEX_SUFFIX) {
            slot(&mut l.txn_indexes, out);
        } else if name.ends_with(f::SNAPSHOT_SUFFIX) {
            slot(&mut l.snapshots, out);
        } else if !name.ends_with(".checkpoint") && name != "quorum-state" {
            // `<offset>-<epoch>.checkpoint` (snapshots) and `quorum-state`
            // belong to KRaft's `__cluster_metadata-0`.
            out.push(Finding::warning(&path, None, Problem::UnknownFile));
        }
    }
    Some(l)
}

fn read_or_report(path: &Path, out: &mut Vec<Finding>) -> Option<Vec<u8>> {
    match read_all(path) {
        Ok(b) => Some(b),
        Err(e) => {
            out.push(Finding::error(
                path,
                None,
                Problem::Unreadable {
                    detail: e.source.to_string(),
                },
            ));
            None
        }
    }
}

/// Verify one partition directory; findings are appended to `out`.
pub fn verify_partition(dir: &Path, deep: bool, out: &mut Vec<Finding>) -> PartitionSummary {
    let mut summary = PartitionSummary {
        dir: dir.to_path_buf(),
        segments: 0,
        batches: 0,
        log_end: 0,
        topic_id: None,
    };
    let Some(l) = list(dir, out) else {
        return summary;
    };
    let mut previous_last: Option<i64> = None;
    // (base offset, leader epoch) of every v2 batch, for the epoch-cache check.
    let mut batch_epochs: Vec<(i64, i32)> = Vec::new();
    for (&base, path) in &l.segments {
        let Some(bytes) = read_or_report(path, out) else {
            continue;
        };
        let seg = check_segment(path, base, &bytes, deep, out);
        if let Some(prev) = previous_last {
            if base <= prev {
                out.push(Finding::error(
                    path,
                    None,
                    Problem::SegmentOverlap {
                        segment_base: base,
                        previous_last_offset: prev,
                    },
                ));
            } else if let Some(first) = seg.batches.first() {
                if first.base_offset <= prev {
                    out.push(Finding::error(
                        path,
                        Some(first.position),
                        Problem::OffsetNotIncreasing {
                            base_offset: first.base_offset,
                            previous_last_offset: prev,
                        },
                    ));
                }
            }
        }
        if let Some(p) = l.indexes.get(&base) {
            if let Some(b) = read_or_report(p, out) {
                check_offset_index(p, &b, &seg, out);
            }
        }
        let is_last = l.segments.keys().next_back() == Some(&base);
        let seg_max = seg
            .batches
            .iter()
            .map(|b| b.max_timestamp)
            .max()
            .unwrap_or(-1);
        if let Some(p) = l.time_indexes.get(&base) {
            if let Some(b) = read_or_report(p, out) {
                let last = check_time_index(p, &b, &seg, out);
                // Kafka appends the segment's max timestamp when a segment
                // becomes inactive (roll) so that retention can read it.
                let last_ts = last.map_or(-1, |(t, _)| t);
                if !is_last && seg_max >= 0 && last_ts != seg_max {
                    out.push(Finding::warning(
                        p,
                        None,
                        Problem::TimeIndexMissesSegmentMax {
                            last_entry_timestamp: last_ts,
                            segment_max_timestamp: seg_max,
                        },
                    ));
                }
            }
        }
        if let Some(p) = l.txn_indexes.get(&base) {
            if let Some(b) = read_or_report(p, out) {
                check_txn_index(p, &b, &seg, out);
            }
        }
        batch_epochs.extend(
            seg.batches
                .iter()
                .filter(|b| b.leader_epoch >= 0)
                .map(|b| (b.base_offset, b.leader_epoch)),
        );
        summary.segments += 1;
        summary.batches += seg.batches.len();
        summary.log_end = seg.last_offset().map_or(base, |o| o + 1);
        previous_last = seg.last_offset().or(previous_last);
    }
    let bases: BTreeSet<i64> = l.segments.keys().copied().collect();
    for (kind, map) in [
        ("offset index", &l.indexes),
        ("time index", &l.time_indexes),
        ("transaction index", &l.txn_indexes),
    ] {
        for (base, path) in map {
            if !bases.contains(base) {
                out.push(Finding::warning(path, None, Problem::OrphanIndex { kind }));
            }
        }
    }
    for (&offset, path) in &l.snapshots {
        let Some(bytes) = read_or_report(path, out) else {
            continue;
        };
        if let Err(e) = decode_snapshot(&bytes) {
            out.push(Finding::error(
                path,
                None,
                Problem::CorruptSnapshot { error: e },
            ));
        } else if offset > summary.log_end {
            out.push(Finding::warning(
                path,
                None,
                Problem::SnapshotBeyondLogEnd {
                    offset,
                    log_end: summary.log_end,
                },
            ));
        }
    }
    if let Some(path) = &l.epoch_checkpoint {
        check_epochs(path, summary.log_end, &batch_epochs, out);
    }
    if let Some(path) = &l.partition_metadata {
        if let Some(bytes) = read_or_report(path, out) {
            let text = String::from_utf8_lossy(&bytes);
            match PartitionMetadata::parse(&text, path) {
                Ok(m) => summary.topic_id = Some(m.topic_id),
                Err(e) => out.push(Finding::error(
                    path,
                    None,
                    Problem::MalformedPartitionMetadata {
                        detail: e.to_string(),
                    },
                )),
            }
        }
    }
    summary
}

/// The checkpoint parses, is monotonic, and agrees with the batches: a batch
/// at or after the first entry's start offset carries the epoch of the last
/// entry starting at or before it (batches below the first entry may predate
/// a truncation from the start).
fn check_epochs(path: &Path, log_end: i64, batches: &[(i64, i32)], out: &mut Vec<Finding>) {
    let entries = match read_epoch_checkpoint(path) {
        Ok(c) => c,
        Err(e) => {
            out.push(Finding::error(
                path,
                None,
                Problem::MalformedCheckpoint {
                    detail: e.to_string(),
                },
            ));
            return;
        }
    };
    for (i, e) in entries.iter().enumerate() {
        let (epoch, start) = (e.epoch.0, e.start_offset.get());
        if epoch < 0 || start < 0 {
            out.push(Finding::error(
                path,
                None,
                Problem::EpochNegative {
                    entry: i,
                    epoch,
                    start_offset: start,
                },
            ));
        }
        if i > 0 {
            let p = entries[i - 1];
            if epoch <= p.epoch.0 || start <= p.start_offset.get() {
                out.push(Finding::error(
                    path,
                    None,
                    Problem::EpochNotIncreasing {
                        entry: i,
                        epoch,
                        start_offset: start,
                        previous_epoch: p.epoch.0,
                        previous_start_offset: p.start_offset.get(),
                    },
                ));
            }
        }
        if start > log_end {
            out.push(Finding::warning(
                path,
                None,
                Problem::EpochBeyondLogEnd {
                    epoch,
                    start_offset: start,
                    log_end,
                },
            ));
        }
    }
    let Some(first) = entries.first() else {
        return;
    };
    let mut mismatches = 0;
    let mut first_mismatch = None;
    for &(offset, epoch) in batches
        .iter()
        .filter(|(o, _)| *o >= first.start_offset.get())
    {
        let idx = entries.partition_point(|e| e.start_offset.get() <= offset);
        let cache_epoch = entries[idx - 1].epoch.0;
        if cache_epoch != epoch {
            mismatches += 1;
            first_mismatch.get_or_insert((offset, epoch, cache_epoch));
        }
    }
    if let Some((offset, batch_epoch, cache_epoch)) = first_mismatch {
        out.push(Finding::warning(
            path,
            None,
            Problem::EpochCacheMismatch {
                mismatches,
                offset,
                batch_epoch,
                cache_epoch,
            },
        ));
    }
}
