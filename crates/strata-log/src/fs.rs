//! Small file-system helpers shared by every writer of metadata files.
//!
//! Kafka replaces checkpoint, `partition.metadata` and `meta.properties` files
//! with the same four steps (`CheckpointFile.write`,
//! `Utils.atomicMoveWithFallback`): write `<path>.tmp`, fsync it, rename it over
//! `<path>`, fsync the parent directory. After a crash the reader sees either
//! the old or the new content, never a mix, and the rename itself is durable.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::format::TMP_SUFFIX;

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
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = tmp_path(path);
    let result = write_and_rename(&tmp, path, bytes);
    if result.is_err() {
        // Best effort: a stale `.tmp` is harmless (the next write truncates
        // it) but tidier gone.
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn write_and_rename(tmp: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    fs::rename(tmp, path)?;
    fsync_parent(path)
}

/// fsync the directory `dir` so that creations, renames and deletions of its
/// entries survive a crash.
///
/// # Errors
///
/// The error from opening or syncing the directory.
pub fn fsync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// fsync the directory containing `path` (the current directory for a bare
/// file name).
///
/// # Errors
///
/// The error from opening or syncing the directory.
pub fn fsync_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => fsync_dir(parent),
        _ => fsync_dir(Path::new(".")),
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
        write_atomically(&path, b"first").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"first");
        write_atomically(&path, b"2").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"2");
        assert_eq!(names(dir.path()), vec!["recovery-point-offset-checkpoint"]);
    }

    #[test]
    fn stale_tmp_from_a_crash_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta.properties");
        fs::write(tmp_path(&path), b"garbage from a crashed write, longer").unwrap();
        write_atomically(&path, b"ok").unwrap();
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
        assert!(write_atomically(&path, b"new").is_err());
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
