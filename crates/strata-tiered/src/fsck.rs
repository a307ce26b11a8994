//! `strata tier fsck`: reconcile the segment catalogue with the bucket.
//!
//! Findings:
//! - **orphan objects**: objects no catalogue entry owns (a copy whose
//!   STARTED record never got written, a delete whose FINISHED record was
//!   written before a crash left files, foreign keys under the root);
//! - **half-finished copies**: COPY_SEGMENT_STARTED entries (a crash
//!   between STARTED and FINISHED);
//! - **unfinished deletes**: DELETE_SEGMENT_STARTED entries;
//! - **missing objects**: a COPY_SEGMENT_FINISHED entry whose `.log`,
//!   `.index` or `.timeindex` object is gone (data loss: reported, never
//!   "repaired").
//!
//! `--repair` deletes orphans and drives half-finished copies and unfinished
//! deletes to DELETE_SEGMENT_FINISHED (objects first, then the metadata),
//! exactly as the expiration task would.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use crate::error::{MetadataError, RemoteStorageError};
use crate::metadata::{
    RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate, RemoteLogSegmentState,
};
use crate::rlmm::RemoteLogMetadataManager;
use crate::rsm::{parse_object_key, RemoteObject, RemoteStorageManager};

/// What fsck found (and, with repair, fixed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FsckReport {
    pub segments: usize,
    pub objects: usize,
    pub orphans: Vec<RemoteObject>,
    pub half_copies: Vec<RemoteLogSegmentMetadata>,
    pub unfinished_deletes: Vec<RemoteLogSegmentMetadata>,
    /// FINISHED segments and the suffixes of their missing objects.
    pub missing: Vec<(RemoteLogSegmentMetadata, Vec<&'static str>)>,
    pub repaired: usize,
}

impl FsckReport {
    /// Nothing to report.
    pub fn is_clean(&self) -> bool {
        self.orphans.is_empty()
            && self.half_copies.is_empty()
            && self.unfinished_deletes.is_empty()
            && self.missing.is_empty()
    }
}

/// A failed fsck.
#[derive(Debug, thiserror::Error)]
pub enum FsckError {
    #[error("remote storage")]
    Storage(#[from] RemoteStorageError),
    #[error("remote log metadata")]
    Metadata(#[from] MetadataError),
}

/// A step of [`fsck_with_progress`], for a progress report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsckStep {
    /// The catalogue is read: `segments` to reconcile, of `bytes` in all.
    Planned { segments: u64, bytes: u64 },
    /// One catalogue segment, of `bytes`, was reconciled with the store.
    Checked { bytes: u64 },
}

/// Check (and with `repair`, fix) the catalogue against the store.
///
/// # Errors
/// Listing, deleting or metadata updates failed.
pub fn fsck(
    rsm: &dyn RemoteStorageManager,
    rlmm: &dyn RemoteLogMetadataManager,
    repair: bool,
    now_ms: i64,
    broker_id: i32,
) -> Result<FsckReport, FsckError> {
    fsck_with_progress(rsm, rlmm, repair, now_ms, broker_id, &mut |_| {})
}

/// [`fsck`], telling `progress` what it plans and each segment it has
/// reconciled.
///
/// # Errors
/// As [`fsck`].
pub fn fsck_with_progress(
    rsm: &dyn RemoteStorageManager,
    rlmm: &dyn RemoteLogMetadataManager,
    repair: bool,
    now_ms: i64,
    broker_id: i32,
    progress: &mut dyn FnMut(FsckStep),
) -> Result<FsckReport, FsckError> {
    let mut report = FsckReport::default();
    let mut segments: BTreeMap<Uuid, RemoteLogSegmentMetadata> = BTreeMap::new();
    for p in rlmm.partitions() {
        for md in rlmm.list_remote_log_segments(&p)? {
            segments.insert(md.segment_id.id, md);
        }
    }
    report.segments = segments.len();
    let size = |md: &RemoteLogSegmentMetadata| u64::try_from(md.segment_size_in_bytes).unwrap_or(0);
    progress(FsckStep::Planned {
        segments: segments.len() as u64,
        bytes: segments.values().map(size).sum(),
    });
    let objects = rsm.list_objects()?;
    report.objects = objects.len();
    let mut present: BTreeMap<Uuid, BTreeSet<String>> = BTreeMap::new();
    for o in objects {
        match parse_object_key(&o.key) {
            Some(k) if segments.contains_key(&k.segment_id) => {
                present.entry(k.segment_id).or_default().insert(k.suffix);
            }
            _ => report.orphans.push(o),
        }
    }
    for md in segments.values() {
        match md.state {
            RemoteLogSegmentState::CopySegmentStarted => report.half_copies.push(md.clone()),
            RemoteLogSegmentState::DeleteSegmentStarted => {
                report.unfinished_deletes.push(md.clone())
            }
            RemoteLogSegmentState::CopySegmentFinished => {
                let have = present.get(&md.segment_id.id);
                let missing: Vec<&'static str> = [".log", ".index", ".timeindex"]
                    .into_iter()
                    .filter(|s| !have.is_some_and(|h| h.contains(*s)))
                    .collect();
                if !missing.is_empty() {
                    report.missing.push((md.clone(), missing));
                }
            }
            RemoteLogSegmentState::DeleteSegmentFinished => {}
        }
        progress(FsckStep::Checked { bytes: size(md) });
    }
    if repair {
        for o in &report.orphans {
            rsm.delete_object(&o.key)?;
            report.repaired += 1;
        }
        for md in report.half_copies.iter().chain(&report.unfinished_deletes) {
            let update = |state| RemoteLogSegmentMetadataUpdate {
                segment_id: md.segment_id.clone(),
                event_timestamp_ms: now_ms,
                custom_metadata: md.custom_metadata.clone(),
                state,
                broker_id,
            };
            if md.state == RemoteLogSegmentState::CopySegmentStarted {
                rlmm.update_remote_log_segment_metadata(update(
                    RemoteLogSegmentState::DeleteSegmentStarted,
                ))?;
            }
            rsm.delete_log_segment_data(md)?;
            rlmm.update_remote_log_segment_metadata(update(
                RemoteLogSegmentState::DeleteSegmentFinished,
            ))?;
            report.repaired += 1;
        }
    }
    Ok(report)
}
