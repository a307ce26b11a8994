//! The file-system seam, and the helpers every writer of metadata files uses.
//!
//! Every file operation of the engine that changes what is on disk — open
//! or create, positional write, fsync, truncate, block reservation, rename,
//! removal, directory creation and directory fsync — goes through a
//! [`FileSystem`] (the seam of raft-engine's `FileSystem` trait). Production
//! uses [`StdFs`], plain system calls. Tests use [`FaultFs`] (`faults.rs`),
//! which injects EIO, ENOSPC or a short write at a chosen operation, and
//! [`sim::SimFs`], which also simulates a power loss: data not fsynced is
//! dropped or torn, and directory entries not made durable by a directory
//! fsync may be undone.
//!
//! The seam is injected, never global: [`crate::LogManagerConfig::fs`] and
//! [`crate::LoadParams::fs`] carry it to every log, segment, index,
//! checkpoint, snapshot and the cleaner.
//!
//! Handles are plain [`File`]s, so reads, `mmap` and `sendfile` work on them
//! directly; only the mutations above must go through the seam.
//!
//! Kafka replaces checkpoint, `partition.metadata` and `meta.properties` files
//! with the same four steps (`CheckpointFile.write`,
//! `Utils.atomicMoveWithFallback`): write `<path>.tmp`, fsync it, rename it over
//! `<path>`, fsync the parent directory. After a crash the reader sees either
//! the old or the new content, never a mix, and the rename itself is durable.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::format::TMP_SUFFIX;

mod faults;
pub mod sim;

pub use faults::{Fault, FaultFs, FsOp, OpRecord};

/// How a file is opened through the seam.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Read only; the file must exist.
    Read,
    /// Read and write; the file must exist.
    ReadWrite,
    /// Read and write; created empty when missing, kept otherwise.
    Create,
    /// Read and write; created when missing, truncated to zero otherwise.
    CreateTruncate,
    /// Read and write; fails with `AlreadyExists` when the file exists.
    CreateNew,
}

impl OpenMode {
    fn options(self) -> OpenOptions {
        let mut o = OpenOptions::new();
        o.read(true);
        match self {
            OpenMode::Read => {}
            OpenMode::ReadWrite => {
                o.write(true);
            }
            OpenMode::Create => {
                o.write(true).create(true);
            }
            OpenMode::CreateTruncate => {
                o.write(true).create(true).truncate(true);
            }
            OpenMode::CreateNew => {
                o.write(true).create_new(true);
            }
        }
        o
    }

    /// Whether opening in this mode may create a directory entry.
    pub fn creates(self) -> bool {
        matches!(
            self,
            OpenMode::Create | OpenMode::CreateTruncate | OpenMode::CreateNew
        )
    }
}

/// The operations that change what is on disk. `path` arguments next to a
/// `file` name the file the handle was opened from; implementations use it
/// for bookkeeping and error injection only.
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// Open `path` in `mode`.
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<File>;
    /// Write all of `buf` at byte `pos` of `file`.
    fn write_at(&self, file: &File, path: &Path, buf: &[u8], pos: u64) -> io::Result<()>;
    /// fsync `file`: its data and size are durable afterwards.
    fn sync(&self, file: &File, path: &Path) -> io::Result<()>;
    /// A mapping of `file` was just written back with `msync(MS_SYNC)`:
    /// make the mapped pages durable. On Linux that msync already did it
    /// (it runs `fdatasync` over the range), so the production seam does
    /// nothing more; a simulating seam treats it as [`FileSystem::sync`].
    fn sync_mapped(&self, file: &File, path: &Path) -> io::Result<()> {
        self.sync(file, path)
    }
    /// Truncate or extend `file` to `len` bytes.
    fn set_len(&self, file: &File, path: &Path, len: u64) -> io::Result<()>;
    /// Reserve disk blocks for bytes `[offset, offset + len)` of `file`
    /// (`fallocate` mode 0) so a later write through a mapping cannot hit a
    /// full disk. `Unsupported` when the file system cannot.
    fn allocate(&self, file: &File, path: &Path, offset: u64, len: u64) -> io::Result<()>;
    /// Rename `from` to `to`, replacing a file at `to`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Remove the file `path`.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Create `path` and its missing parents.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Remove the directory `path` with everything in it.
    fn remove_dir_all(&self, path: &Path) -> io::Result<()>;
    /// fsync the directory `dir` so that creations, renames and removals of
    /// its entries are durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The seam as the engine holds it.
pub type SharedFs = Arc<dyn FileSystem>;

/// The production file system: plain system calls.
#[derive(Debug, Default, Clone, Copy)]
pub struct StdFs;

impl StdFs {
    /// A shared handle to the production file system.
    pub fn shared() -> SharedFs {
        Arc::new(StdFs)
    }
}

impl FileSystem for StdFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<File> {
        mode.options().open(path)
    }

    fn write_at(&self, file: &File, _path: &Path, buf: &[u8], pos: u64) -> io::Result<()> {
        file.write_all_at(buf, pos)
    }

    /// `fdatasync`: the data and the size, not the timestamps (Kafka
    /// forces metadata too; nothing Strata recovers depends on them).
    fn sync(&self, file: &File, _path: &Path) -> io::Result<()> {
        file.sync_data()
    }

    fn sync_mapped(&self, _file: &File, _path: &Path) -> io::Result<()> {
        Ok(())
    }

    fn set_len(&self, file: &File, _path: &Path, len: u64) -> io::Result<()> {
        file.set_len(len)
    }

    fn allocate(&self, file: &File, _path: &Path, offset: u64, len: u64) -> io::Result<()> {
        let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len))
        else {
            return Err(io::Error::from_raw_os_error(libc::EFBIG));
        };
        loop {
            // SAFETY: the descriptor is owned by `file`, which outlives the call.
            let r = unsafe { libc::fallocate(file.as_raw_fd(), 0, offset, len) };
            if r == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EOPNOTSUPP) => {
                    return Err(io::Error::new(io::ErrorKind::Unsupported, e))
                }
                _ => return Err(e),
            }
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::create_dir_all(path)
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir_all(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// The temporary sibling `<path>.tmp` used while `path` is being replaced.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(TMP_SUFFIX);
    PathBuf::from(name)
}

/// Replace `path` with `bytes` atomically and durably.
///
/// Steps: write `<path>.tmp` (created or truncated), fsync it, rename it over
/// `path`, fsync the parent directory. On failure the temporary file is
/// removed on a best-effort basis and `path` keeps its previous content.
///
/// # Errors
///
/// Any I/O error from the write, fsync or rename steps.
pub fn write_atomically(fs: &dyn FileSystem, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = tmp_path(path);
    let result = write_and_rename(fs, &tmp, path, bytes);
    if result.is_err() {
        // Best effort: a stale `.tmp` is harmless (the next write truncates
        // it) but tidier gone.
        let _ = fs.remove_file(&tmp);
    }
    result
}

fn write_and_rename(fs: &dyn FileSystem, tmp: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    {
        let file = fs.open(tmp, OpenMode::CreateTruncate)?;
        fs.write_at(&file, tmp, bytes, 0)?;
        fs.sync(&file, tmp)?;
    }
    fs.rename(tmp, path)?;
    fsync_parent(fs, path)
}

/// fsync the directory `dir` so that creations, renames and deletions of its
/// entries survive a crash.
///
/// # Errors
///
/// The error from opening or syncing the directory.
pub fn fsync_dir(fs: &dyn FileSystem, dir: &Path) -> io::Result<()> {
    fs.sync_dir(dir)
}

/// fsync the directory containing `path` (the current directory for a bare
/// file name).
///
/// # Errors
///
/// The error from opening or syncing the directory.
pub fn fsync_parent(fs: &dyn FileSystem, path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => fs.sync_dir(parent),
        _ => fs.sync_dir(Path::new(".")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn atomic_write_replaces_content_and_leaves_no_tmp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recovery-point-offset-checkpoint");
        write_atomically(&StdFs, &path, b"first").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"first");
        write_atomically(&StdFs, &path, b"2").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"2");
        assert_eq!(names(dir.path()), vec!["recovery-point-offset-checkpoint"]);
    }

    #[test]
    fn stale_tmp_from_a_crash_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta.properties");
        fs::write(tmp_path(&path), b"garbage from a crashed write, longer").unwrap();
        write_atomically(&StdFs, &path, b"ok").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"ok");
        assert!(!tmp_path(&path).exists());
    }

    #[test]
    fn failed_write_keeps_old_content() {
        let dir = tempfile::tempdir().unwrap();
        // The target is a non-empty directory: rename over it must fail.
        let path = dir.path().join("target");
        fs::create_dir(&path).unwrap();
        fs::write(path.join("inner"), b"x").unwrap();
        assert!(write_atomically(&StdFs, &path, b"new").is_err());
        assert!(path.is_dir());
        assert!(!tmp_path(&path).exists());
    }

    #[test]
    fn tmp_path_appends_suffix() {
        assert_eq!(
            tmp_path(Path::new("/d/partition.metadata")),
            PathBuf::from("/d/partition.metadata.tmp")
        );
    }
}
