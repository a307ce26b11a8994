//! [`FaultFs`]: a [`FileSystem`] that injects I/O errors, for tests.
//!
//! It wraps [`StdFs`] (every operation that is not failed really happens),
//! numbers each operation, keeps a log of the operations seen, and can be
//! armed to fail
//!
//! - the N-th operation ([`FaultFs::fail_nth`]),
//! - the N-th operation and every later one ([`FaultFs::fail_from`]: a
//!   crash at operation N, nothing after it reaches the disk),
//! - the next operation matching a predicate on (operation, path)
//!   ([`FaultFs::fail_next`]), or
//! - every operation matching a predicate until disarmed
//!   ([`FaultFs::fail_all`]: a full or broken disk),
//!
//! with EIO, ENOSPC, or a short write (a prefix of the buffer is written,
//! then ENOSPC, as a write that ran out of space part way). It can also
//! make every fsync slow ([`FaultFs::set_sync_delay`]). Public and not
//! behind `cfg(test)` so integration tests of this crate and of the broker
//! can use it.
//!
//! ```
//! use std::path::Path;
//! use strata_log::fs::{Fault, FaultFs, FileSystem, FsOp, OpenMode};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let faults = FaultFs::new();
//! faults.fail_next(Fault::Enospc, |op, p: &Path| {
//!     op == FsOp::WriteAt && p.extension().is_some_and(|e| e == "log")
//! });
//! let path = dir.path().join("0.log");
//! let file = faults.open(&path, OpenMode::Create).unwrap();
//! let err = faults.write_at(&file, &path, b"abc", 0).unwrap_err();
//! assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
//! faults.write_at(&file, &path, b"abc", 0).unwrap(); // fired once
//! assert_eq!(faults.op_count(), 3);
//! ```

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{FileSystem, OpenMode, SharedFs, StdFs};

/// One operation of the seam, as [`FaultFs`] sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsOp {
    Open(OpenMode),
    WriteAt,
    Sync,
    SetLen,
    Allocate,
    Rename,
    RemoveFile,
    CreateDirAll,
    RemoveDirAll,
    SyncDir,
}

impl FsOp {
    /// Whether the operation can change what is on disk (every one except
    /// a read-only open).
    pub fn mutates(self) -> bool {
        self != FsOp::Open(OpenMode::Read)
    }
}

/// The error an armed [`FaultFs`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// `EIO`: the device failed.
    Eio,
    /// `ENOSPC`: the disk is full.
    Enospc,
    /// For [`FsOp::WriteAt`]: the first half of the buffer is written, then
    /// `ENOSPC`. Any other operation fails with plain `ENOSPC`.
    ShortWrite,
}

impl Fault {
    /// The `io::Error` this fault returns.
    pub fn error(self) -> io::Error {
        match self {
            Fault::Eio => io::Error::from_raw_os_error(libc::EIO),
            Fault::Enospc | Fault::ShortWrite => io::Error::from_raw_os_error(libc::ENOSPC),
        }
    }
}

/// One operation in [`FaultFs::ops`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpRecord {
    /// 0-based number of the operation (its value of [`FaultFs::op_count`]
    /// before it ran).
    pub index: u64,
    pub op: FsOp,
    /// The path operated on (for a rename, the source).
    pub path: PathBuf,
    /// The fault injected, if any.
    pub fault: Option<Fault>,
}

type Predicate = Box<dyn Fn(FsOp, &Path) -> bool + Send + Sync>;

enum Trigger {
    Nth(u64),
    From(u64),
    Next(Predicate),
    All(Predicate),
}

struct Armed {
    trigger: Trigger,
    fault: Fault,
}

#[derive(Default)]
struct State {
    count: u64,
    ops: Vec<OpRecord>,
    armed: Vec<Armed>,
}

/// A fault-injecting [`FileSystem`] over [`StdFs`]. See the module docs.
///
/// Thread-safe: one mutex guards the counter, the log and the armed
/// faults; it is never held across a real system call.
#[derive(Default)]
pub struct FaultFs {
    inner: StdFs,
    state: Mutex<State>,
    /// Microseconds every [`FsOp::Sync`] sleeps before it runs (a slow
    /// disk); 0: none.
    sync_delay_us: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for FaultFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.lock();
        f.debug_struct("FaultFs")
            .field("ops", &st.count)
            .field("armed", &st.armed.len())
            .finish()
    }
}

impl FaultFs {
    /// A new, disarmed instance.
    pub fn new() -> Arc<FaultFs> {
        Arc::new(FaultFs::default())
    }

    /// `self` as the engine holds a file system.
    pub fn shared(self: &Arc<Self>) -> SharedFs {
        self.clone()
    }

    /// Make every later file fsync ([`FsOp::Sync`]) take at least `delay`
    /// (a slow disk: tests of work that must overlap or share fsyncs).
    pub fn set_sync_delay(&self, delay: std::time::Duration) {
        let us = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.sync_delay_us
            .store(us, std::sync::atomic::Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fail the operation numbered `n` (0-based, counting every operation
    /// since creation) with `fault`.
    pub fn fail_nth(&self, n: u64, fault: Fault) {
        self.lock().armed.push(Armed {
            trigger: Trigger::Nth(n),
            fault,
        });
    }

    /// Fail the operation numbered `n` and every later one until
    /// [`Self::disarm`] (a crash at operation `n`).
    pub fn fail_from(&self, n: u64, fault: Fault) {
        self.lock().armed.push(Armed {
            trigger: Trigger::From(n),
            fault,
        });
    }

    /// Fail the next operation for which `pred(op, path)` holds, once.
    pub fn fail_next(
        &self,
        fault: Fault,
        pred: impl Fn(FsOp, &Path) -> bool + Send + Sync + 'static,
    ) {
        self.lock().armed.push(Armed {
            trigger: Trigger::Next(Box::new(pred)),
            fault,
        });
    }

    /// Fail every operation for which `pred(op, path)` holds until
    /// [`Self::disarm`].
    pub fn fail_all(
        &self,
        fault: Fault,
        pred: impl Fn(FsOp, &Path) -> bool + Send + Sync + 'static,
    ) {
        self.lock().armed.push(Armed {
            trigger: Trigger::All(Box::new(pred)),
            fault,
        });
    }

    /// Remove every armed fault.
    pub fn disarm(&self) {
        self.lock().armed.clear();
    }

    /// Operations seen so far (failed ones included).
    pub fn op_count(&self) -> u64 {
        self.lock().count
    }

    /// Every operation seen so far, in order.
    pub fn ops(&self) -> Vec<OpRecord> {
        self.lock().ops.clone()
    }

    /// The operations that were failed.
    pub fn injected(&self) -> Vec<OpRecord> {
        self.lock()
            .ops
            .iter()
            .filter(|r| r.fault.is_some())
            .cloned()
            .collect()
    }

    /// Count and log `op`; the fault to inject, if one is armed for it.
    fn check(&self, op: FsOp, path: &Path) -> Option<Fault> {
        let mut st = self.lock();
        let index = st.count;
        st.count += 1;
        let hit = st.armed.iter().position(|a| match &a.trigger {
            Trigger::Nth(n) => *n == index,
            Trigger::From(n) => *n <= index,
            Trigger::Next(p) | Trigger::All(p) => p(op, path),
        });
        let fault = hit.map(|i| {
            let fault = st.armed[i].fault;
            if matches!(st.armed[i].trigger, Trigger::Nth(_) | Trigger::Next(_)) {
                st.armed.remove(i);
            }
            fault
        });
        st.ops.push(OpRecord {
            index,
            op,
            path: path.to_path_buf(),
            fault,
        });
        fault
    }

    fn guard(&self, op: FsOp, path: &Path) -> io::Result<()> {
        match self.check(op, path) {
            Some(fault) => Err(fault.error()),
            None => Ok(()),
        }
    }
}

impl FileSystem for FaultFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<File> {
        self.guard(FsOp::Open(mode), path)?;
        self.inner.open(path, mode)
    }

    fn write_at(&self, file: &File, path: &Path, buf: &[u8], pos: u64) -> io::Result<()> {
        match self.check(FsOp::WriteAt, path) {
            None => self.inner.write_at(file, path, buf, pos),
            Some(Fault::ShortWrite) => {
                self.inner
                    .write_at(file, path, &buf[..buf.len() / 2], pos)?;
                Err(Fault::ShortWrite.error())
            }
            Some(fault) => Err(fault.error()),
        }
    }

    fn sync(&self, file: &File, path: &Path) -> io::Result<()> {
        self.guard(FsOp::Sync, path)?;
        let delay = self
            .sync_delay_us
            .load(std::sync::atomic::Ordering::Relaxed);
        if delay > 0 {
            std::thread::sleep(std::time::Duration::from_micros(delay));
        }
        self.inner.sync(file, path)
    }

    fn set_len(&self, file: &File, path: &Path, len: u64) -> io::Result<()> {
        self.guard(FsOp::SetLen, path)?;
        self.inner.set_len(file, path, len)
    }

    fn allocate(&self, file: &File, path: &Path, offset: u64, len: u64) -> io::Result<()> {
        self.guard(FsOp::Allocate, path)?;
        self.inner.allocate(file, path, offset, len)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.guard(FsOp::Rename, from)?;
        self.inner.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.guard(FsOp::RemoveFile, path)?;
        self.inner.remove_file(path)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.guard(FsOp::CreateDirAll, path)?;
        self.inner.create_dir_all(path)
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.guard(FsOp::RemoveDirAll, path)?;
        self.inner.remove_dir_all(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.guard(FsOp::SyncDir, dir)?;
        self.inner.sync_dir(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_operation_fails_once_and_is_logged() {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultFs::new();
        fs.fail_nth(1, Fault::Eio);
        let p = dir.path().join("a");
        let f = fs.open(&p, OpenMode::Create).unwrap();
        let e = fs.write_at(&f, &p, b"xyz", 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO));
        fs.write_at(&f, &p, b"xyz", 0).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"xyz");
        let ops = fs.ops();
        assert_eq!(ops.len(), 3);
        assert_eq!(ops[1].op, FsOp::WriteAt);
        assert_eq!(ops[1].fault, Some(Fault::Eio));
        assert_eq!(fs.injected().len(), 1);
    }

    #[test]
    fn short_write_leaves_a_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultFs::new();
        fs.fail_next(Fault::ShortWrite, |op, _| op == FsOp::WriteAt);
        let p = dir.path().join("a");
        let f = fs.open(&p, OpenMode::Create).unwrap();
        let e = fs.write_at(&f, &p, b"abcdef", 0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(std::fs::read(&p).unwrap(), b"abc");
    }

    #[test]
    fn fail_all_persists_until_disarmed_and_matches_paths() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad");
        let good = dir.path().join("good");
        let fs = FaultFs::new();
        let prefix = bad.clone();
        fs.fail_all(Fault::Enospc, move |_, p| p.starts_with(&prefix));
        for _ in 0..3 {
            assert!(fs.create_dir_all(&bad.join("x")).is_err());
        }
        fs.create_dir_all(&good).unwrap();
        fs.disarm();
        fs.create_dir_all(&bad.join("x")).unwrap();
        assert_eq!(fs.injected().len(), 3);
        assert_eq!(fs.op_count(), 5);
    }
}
