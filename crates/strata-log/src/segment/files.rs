//! A segment's files as a group: suffix renames, deletion, and the cheap
//! load-time check of its index files.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{idx_err, Lazy, Segment};
use crate::codec::index::{check_length, sanity_check, IndexSlot, OffsetSlot, TimeSlot};
use crate::error::LogError;
use crate::fs::FileSystem;
use crate::types::Offset;

impl Segment {
    /// Strata's load-time index check (a safe superset of Kafka, §3.7),
    /// done with `stat` and two small `pread`s so loading never maps an
    /// index: Kafka's sanity checks (whole entries, last offset ≥ base, time
    /// index last timestamp ≥ first) plus "the last two entries strictly
    /// increase", which catches a preallocated zero-filled tail left by a
    /// crash.
    pub fn check_index_files(&self) -> (IndexFileState, IndexFileState) {
        let (o, t) = self.index_paths();
        let base = self.base_offset();
        (
            check_index_file::<OffsetSlot>(&o, base),
            check_index_file::<TimeSlot>(&t, base),
        )
    }

    /// Rename every file of the segment from `old_suffix` to `new_suffix`
    /// (e.g. `""` → `.deleted`). Index files never materialised are not
    /// created (§13.6). Order: .log, .index, .timeindex, .txnindex.
    ///
    /// # Errors
    /// The first rename error.
    pub fn change_suffix(&self, old_suffix: &str, new_suffix: &str) -> Result<(), LogError> {
        let mut st = self.lock();
        let swap = |p: &Path| -> PathBuf {
            let s = p.to_string_lossy();
            let stem = s.strip_suffix(old_suffix).unwrap_or(&s);
            PathBuf::from(format!("{stem}{new_suffix}"))
        };
        let new_log = swap(&st.log_path);
        self.fs
            .rename(&st.log_path, &new_log)
            .map_err(|e| LogError::io(&st.log_path, "rename segment", e))?;
        st.log_path = new_log;
        match &mut st.offset_index {
            Lazy::Unopened(p) => {
                let np = swap(p);
                rename_if_exists(self.fs.as_ref(), p, &np)?;
                *p = np;
            }
            Lazy::Open(i) => {
                let np = swap(i.path());
                i.rename_to(&np).map_err(idx_err)?;
            }
        }
        match &mut st.time_index {
            Lazy::Unopened(p) => {
                let np = swap(p);
                rename_if_exists(self.fs.as_ref(), p, &np)?;
                *p = np;
            }
            Lazy::Open(i) => {
                let np = swap(i.path());
                i.rename_to(&np).map_err(idx_err)?;
            }
        }
        match &mut st.txn_index {
            Lazy::Unopened(p) => {
                let np = swap(p);
                rename_if_exists(self.fs.as_ref(), p, &np)?;
                *p = np;
            }
            Lazy::Open(i) => {
                let np = swap(i.path());
                i.rename_to(&np).map_err(idx_err)?;
            }
        }
        Ok(())
    }

    /// Delete every file of the segment (missing files are fine).
    ///
    /// # Errors
    /// The first delete error other than "not found".
    pub fn delete_files(&self) -> Result<(), LogError> {
        let mut st = self.lock();
        let paths = [
            Some(st.log_path.clone()),
            match &st.offset_index {
                Lazy::Unopened(p) => Some(p.clone()),
                Lazy::Open(i) => Some(i.path().to_path_buf()),
            },
            match &st.time_index {
                Lazy::Unopened(p) => Some(p.clone()),
                Lazy::Open(i) => Some(i.path().to_path_buf()),
            },
            Some(st.txn_path()),
        ];
        // Drop the mappings first. The `.log` handle stays until the
        // segment is dropped: a read that found this segment just before
        // still gets its bytes.
        let held = st.open_handles() - usize::from(st.log.is_some());
        let op = std::mem::replace(&mut st.offset_index, Lazy::Unopened(PathBuf::new()));
        let tp = std::mem::replace(&mut st.time_index, Lazy::Unopened(PathBuf::new()));
        let xp = std::mem::replace(&mut st.txn_index, Lazy::Unopened(PathBuf::new()));
        drop(op);
        drop(tp);
        drop(xp);
        st.cache.closed(held);
        for p in paths.into_iter().flatten() {
            match self.fs.remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io(&p, "delete segment file", e)),
            }
        }
        Ok(())
    }
}

/// What [`Segment::check_index_files`] found for one index file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexFileState {
    Missing,
    Valid,
    Invalid,
}

/// Check one index file by its length, first entry and last two entries,
/// with the codec's [`sanity_check`].
fn check_index_file<S: IndexSlot>(path: &Path, base: Offset) -> IndexFileState {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return IndexFileState::Missing,
        Err(_) => return IndexFileState::Invalid,
    };
    let Ok(len) = file.metadata().map(|m| m.len() as usize) else {
        return IndexFileState::Invalid;
    };
    let entry = S::SIZE;
    let n = len / entry;
    if n == 0 {
        return match check_length(len as u64, entry) {
            Ok(()) => IndexFileState::Valid,
            Err(_) => IndexFileState::Invalid,
        };
    }
    let mut first = vec![0u8; entry];
    let mut tail = vec![0u8; 2 * entry];
    let two = n >= 2;
    let tail_at = (if two { n - 2 } else { n - 1 } * entry) as u64;
    let tail_len = if two { 2 * entry } else { entry };
    if file.read_exact_at(&mut first, 0).is_err()
        || file.read_exact_at(&mut tail[..tail_len], tail_at).is_err()
    {
        return IndexFileState::Invalid;
    }
    // Only slots 0, n - 2 and n - 1 are read by the check.
    let slot = |i: usize| match i {
        0 => S::decode(&first),
        i if i + 1 == n => S::decode(&tail[tail_len - entry..]),
        _ => S::decode(&tail),
    };
    match sanity_check(len as u64, n, base, slot) {
        Ok(()) => IndexFileState::Valid,
        Err(_) => IndexFileState::Invalid,
    }
}

fn rename_if_exists(fs: &dyn FileSystem, from: &Path, to: &Path) -> Result<(), LogError> {
    match fs.rename(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(LogError::io(from, "rename index", e)),
    }
}
