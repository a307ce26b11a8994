//! `strata log compact --dry-run PATH`: what cleaning a partition directory
//! would reclaim, computed read-only from its files with the cleaner's own
//! filter (nothing is created, renamed or locked; index files are not
//! opened).
//!
//! The dirty section runs from the `cleaner-offset-checkpoint` entry (or the
//! first segment) to the active (last) segment; offline, the last stable
//! offset is taken to be the log end. Unlike a real cleaning, the key map
//! is sized to hold every dirty key, so the estimate is one full pass.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::filter::{control_type, filter_chunk, FilterContext};
use super::offset_map::{OffsetMap, BYTES_PER_ENTRY};
use super::producers::scan_producers;
use super::txn::{collect_aborted, CleanedTxnMetadata};
use crate::batch::{BatchScanner, BatchView, MAGIC_V2};
use crate::checkpoint::CleanerCheckpoints;
use crate::format;
use crate::types::{Offset, TopicPartition};

/// Why a dry run could not complete.
#[derive(Debug, thiserror::Error)]
pub enum DryRunError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a <topic>-<partition> directory")]
    NotAPartition { path: PathBuf },
    #[error("{path}: no segments")]
    Empty { path: PathBuf },
    #[error("corrupt data in {path}: {detail}")]
    Corrupt { path: PathBuf, detail: String },
}

/// The estimate.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DryRunReport {
    pub topic: String,
    pub partition: i32,
    pub segments: usize,
    pub total_bytes: u64,
    pub first_dirty_offset: i64,
    pub first_uncleanable_offset: i64,
    pub dirty_bytes: u64,
    pub distinct_dirty_keys: usize,
    /// Bytes of the segments a cleaning would rewrite (below the dirty end).
    pub rewritten_bytes: u64,
    /// What those segments would shrink to.
    pub bytes_after: u64,
    pub reclaimable_bytes: u64,
    pub records_read: u64,
    pub records_kept: u64,
    /// Map memory a single-pass cleaning needs (24 bytes per key / load factor).
    pub dedupe_memory_needed: u64,
}

struct Seg {
    base: Offset,
    path: PathBuf,
    file: File,
    size: u64,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DryRunError + '_ {
    move |source| DryRunError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn batches(
    seg: &Seg,
    mut f: impl FnMut(&[u8], u8) -> Result<(), DryRunError>,
) -> Result<(), DryRunError> {
    let mut buf = vec![0u8; 1 << 20];
    let mut pos = 0u64;
    while pos < seg.size {
        let want = (seg.size - pos).min(buf.len() as u64) as usize;
        seg.file
            .read_exact_at(&mut buf[..want], pos)
            .map_err(io(&seg.path))?;
        let mut consumed = 0;
        for item in BatchScanner::new(&buf[..want]) {
            let (at, prefix) = item.map_err(|e| DryRunError::Corrupt {
                path: seg.path.clone(),
                detail: e.to_string(),
            })?;
            consumed = at + prefix.total_size();
            f(&buf[at..consumed], prefix.magic as u8)?;
        }
        if consumed == 0 {
            if want as u64 >= seg.size - pos {
                break;
            }
            let n = buf.len() * 2;
            buf.resize(n, 0);
            continue;
        }
        pos += consumed as u64;
    }
    Ok(())
}

/// Estimate what cleaning the partition directory `dir` would reclaim at
/// `now_ms` with `delete_retention_ms` and the map `load_factor`.
///
/// # Errors
/// [`DryRunError`] for unreadable files or a directory that is not a partition.
pub fn dry_run(
    dir: &Path,
    now_ms: i64,
    delete_retention_ms: i64,
    load_factor: f64,
) -> Result<DryRunReport, DryRunError> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tp: TopicPartition = format::parse_partition_dir_name(&name)
        .map_err(|_| DryRunError::NotAPartition {
            path: dir.to_path_buf(),
        })?
        .tp;
    let mut segs = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let n = entry.file_name().to_string_lossy().into_owned();
        if !format::is_log_file(&n) {
            continue;
        }
        let Some(base) = format::offset_from_file_name(&n) else {
            continue;
        };
        let path = entry.path();
        let file = File::open(&path).map_err(io(&path))?;
        let size = file.metadata().map_err(io(&path))?.len();
        segs.push(Seg {
            base,
            path,
            file,
            size,
        });
    }
    segs.sort_by_key(|s| s.base);
    let active = segs
        .last()
        .ok_or_else(|| DryRunError::Empty {
            path: dir.to_path_buf(),
        })?
        .base;
    // Read-only: the production seam is only needed to name the files.
    let fs = crate::fs::StdFs::shared();
    let checkpoint = CleanerCheckpoints::for_partition_dir(&fs, dir)
        .get(&tp)
        .ok()
        .flatten();
    let first = segs[0].base;
    let first_dirty = checkpoint.filter(|c| *c >= first).unwrap_or(first);
    let upper = active.max(first_dirty);
    let txn_paths: Vec<(Offset, PathBuf)> = segs
        .iter()
        .map(|s| (s.base, format::txn_index_file(dir, s.base, "")))
        .collect();
    let txn_refs: Vec<(Offset, &Path)> = txn_paths.iter().map(|(b, p)| (*b, p.as_path())).collect();
    let aborted = |start, end| {
        collect_aborted(&fs, &txn_refs, start, end).map_err(|e| DryRunError::Corrupt {
            path: dir.to_path_buf(),
            detail: e.to_string(),
        })
    };
    // Pass 1: distinct dirty keys (exact, by digest) and their latest offsets.
    let mut latest: HashMap<[u8; 16], Offset> = HashMap::new();
    let mut txn = CleanedTxnMetadata::new();
    txn.add_aborted(aborted(first_dirty, upper)?);
    let mut scratch = Vec::new();
    let mut dirty_bytes = 0;
    for s in segs.iter().filter(|s| s.base < upper) {
        if segs
            .iter()
            .any(|n| n.base > s.base && n.base <= first_dirty)
        {
            continue;
        }
        dirty_bytes += s.size;
        batches(s, |bytes, magic| {
            if magic as i8 != MAGIC_V2 {
                return Ok(());
            }
            let corrupt = |e: crate::batch::BatchError| DryRunError::Corrupt {
                path: s.path.clone(),
                detail: e.to_string(),
            };
            let b = BatchView::parse(bytes).map_err(corrupt)?;
            if b.is_control() {
                let t = control_type(&b, &mut scratch).map_err(corrupt)?;
                txn.on_control_batch_read(&b, t);
            } else if !txn.on_batch_read(&b) {
                for r in b.record_iter(&mut scratch).map_err(corrupt)? {
                    let r = r.map_err(corrupt)?;
                    if let (Some(k), true) = (r.key, r.offset >= first_dirty && r.offset < upper) {
                        latest.insert(super::offset_map::OffsetMap::hash(k), r.offset);
                    }
                }
            }
            Ok(())
        })?;
    }
    let keys = latest.len();
    let mut map =
        OffsetMap::new(((keys as f64 / load_factor.max(0.01)) as usize + 2) * BYTES_PER_ENTRY);
    // Re-insert through the real map so lookups behave exactly as a clean's.
    let mut txn = CleanedTxnMetadata::new();
    txn.add_aborted(aborted(first_dirty, upper)?);
    for s in segs.iter().filter(|s| s.base < upper) {
        if segs
            .iter()
            .any(|n| n.base > s.base && n.base <= first_dirty)
        {
            continue;
        }
        batches(s, |bytes, magic| {
            if magic as i8 != MAGIC_V2 {
                return Ok(());
            }
            let b = BatchView::parse(bytes).map_err(|e| DryRunError::Corrupt {
                path: s.path.clone(),
                detail: e.to_string(),
            })?;
            if b.is_control() {
                let t = control_type(&b, &mut scratch).ok().flatten();
                txn.on_control_batch_read(&b, t);
            } else if !txn.on_batch_read(&b) {
                for r in b.record_iter(&mut scratch).into_iter().flatten().flatten() {
                    if let (Some(k), true) = (r.key, r.offset >= first_dirty && r.offset < upper) {
                        let _ = map.put(k, r.offset);
                    }
                }
            }
            Ok(())
        })?;
    }
    map.update_latest_offset(Offset(upper.0 - 1));
    let mut producers = HashMap::new();
    for s in &segs {
        scan_producers(&s.file, s.size, &mut producers).map_err(io(&s.path))?;
    }
    // Pass 2: the filter over everything below the dirty end.
    let mut ftxn = CleanedTxnMetadata::new();
    let (mut rewritten, mut after, mut read, mut kept) = (0u64, 0u64, 0u64, 0u64);
    let mut out = Vec::new();
    let to_clean: Vec<&Seg> = segs
        .iter()
        .filter(|s| s.base < upper && s.base != active)
        .collect();
    for (i, s) in to_clean.iter().enumerate() {
        rewritten += s.size;
        let next = to_clean.get(i + 1).map_or(upper, |n| n.base);
        ftxn.add_aborted(aborted(s.base, next)?);
        batches(s, |bytes, _| {
            out.clear();
            let mut ctx = FilterContext {
                map: &mut map,
                txn: &mut ftxn,
                active_producers: &producers,
                upper_bound: upper,
                now_ms,
                delete_retention_ms,
                retain_legacy_deletes: true,
                superseded: None,
            };
            let r = filter_chunk(&mut ctx, bytes, &mut out).map_err(|e| DryRunError::Corrupt {
                path: s.path.clone(),
                detail: e.to_string(),
            })?;
            ftxn.take_retained_aborts();
            after += out.len() as u64;
            read += r.messages_read;
            kept += r.messages_retained;
            Ok(())
        })?;
    }
    let total: u64 = segs.iter().map(|s| s.size).sum();
    Ok(DryRunReport {
        topic: tp.topic.clone(),
        partition: tp.partition,
        segments: segs.len(),
        total_bytes: total,
        first_dirty_offset: first_dirty.0,
        first_uncleanable_offset: upper.0,
        dirty_bytes,
        distinct_dirty_keys: keys,
        rewritten_bytes: rewritten,
        bytes_after: after,
        reclaimable_bytes: rewritten.saturating_sub(after),
        records_read: read,
        records_kept: kept,
        dedupe_memory_needed: ((keys as f64 / load_factor.max(0.01)).ceil() as u64)
            * BYTES_PER_ENTRY as u64,
    })
}
