//! Kafka's text checkpoint files (`CheckpointFile`, `OffsetCheckpointFile`).
//!
//! The log-dir files `recovery-point-offset-checkpoint`,
//! `log-start-offset-checkpoint`, `replication-offset-checkpoint` and
//! `cleaner-offset-checkpoint` map partitions to offsets;
//! `leader-epoch-checkpoint` (see [`crate::leader_epoch`]) uses the same
//! framing with other entry lines. A malformed file is an error, never a
//! guess: each way of being malformed is its own [`CheckpointError`] variant
//! carrying the path and, where there is one, the 1-based line number.
//!
//! `cleaner` holds [`CleanerCheckpoints`], the cleaner's
//! `cleaner-offset-checkpoint` with its process-wide update lock; it lives
//! here, below both, because the cleaner writes it and `Log` lowers it
//! after a truncation.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::codec::checkpoint::{decode_checkpoint, CheckpointFormatError};
use crate::codec::checkpoint::{decode_offset_entry, encode_offset_checkpoint};
use crate::fs::{write_atomically, FileSystem, OpenMode, SharedFs};
use crate::types::{Offset, TopicPartition};

mod cleaner;

pub use crate::codec::checkpoint::CHECKPOINT_VERSION;
pub(crate) use crate::codec::java_text::{java_lines, parse_java_int};
pub use cleaner::CleanerCheckpoints;

/// Errors reading or writing a checkpoint file.
#[derive(Debug, Error)]
pub enum CheckpointError {
    #[error("I/O error on checkpoint file {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("checkpoint file {path} is not valid UTF-8")]
    InvalidUtf8 { path: PathBuf },
    #[error("unrecognised version {found} (expected {expected}) in checkpoint file {path}")]
    UnsupportedVersion {
        path: PathBuf,
        found: i32,
        expected: i32,
    },
    /// A version or count line that is not a decimal `i32`, or an entry line
    /// that does not parse.
    #[error("malformed line {line_number} in checkpoint file {path}: {line:?}")]
    MalformedLine {
        path: PathBuf,
        line_number: usize,
        line: String,
    },
    #[error("negative entry count {count} in checkpoint file {path}")]
    NegativeCount { path: PathBuf, count: i32 },
    #[error("expected {expected} entries in checkpoint file {path}, found {found}")]
    CountMismatch {
        path: PathBuf,
        expected: usize,
        found: usize,
    },
}

/// Read a checkpoint file's entries (Kafka `CheckpointReadBuffer.read`).
///
/// A missing or empty file, or one with only a version line, has no
/// entries (Kafka creates the file empty when it first opens it, so
/// "missing" and "empty" are one state). `parse` turns the whitespace
/// fields of an entry line into an entry, or `None` if malformed.
///
/// # Errors
///
/// Each malformation as its own [`CheckpointError`] variant.
pub fn read_checkpoint<T>(
    path: &Path,
    expected_version: i32,
    parse: impl Fn(&[&str]) -> Option<T>,
) -> Result<Vec<T>, CheckpointError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(CheckpointError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    decode_checkpoint(&bytes, expected_version, parse).map_err(|e| CheckpointError::at(path, e))
}

impl CheckpointError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            CheckpointError::Io { path, .. }
            | CheckpointError::InvalidUtf8 { path }
            | CheckpointError::UnsupportedVersion { path, .. }
            | CheckpointError::MalformedLine { path, .. }
            | CheckpointError::NegativeCount { path, .. }
            | CheckpointError::CountMismatch { path, .. } => path,
        }
    }

    /// The reader's error for a file at `path` whose text is malformed.
    pub fn at(path: &Path, e: CheckpointFormatError) -> CheckpointError {
        let path = path.to_path_buf();
        match e {
            CheckpointFormatError::InvalidUtf8 => CheckpointError::InvalidUtf8 { path },
            CheckpointFormatError::UnsupportedVersion { found, expected } => {
                CheckpointError::UnsupportedVersion {
                    path,
                    found,
                    expected,
                }
            }
            CheckpointFormatError::MalformedLine { line_number, line } => {
                CheckpointError::MalformedLine {
                    path,
                    line_number,
                    line,
                }
            }
            CheckpointFormatError::NegativeCount { count } => {
                CheckpointError::NegativeCount { path, count }
            }
            CheckpointFormatError::CountMismatch { expected, found } => {
                CheckpointError::CountMismatch {
                    path,
                    expected,
                    found,
                }
            }
        }
    }
}

/// Write a checkpoint file atomically (tmp, fsync, rename, fsync dir).
///
/// # Errors
///
/// [`CheckpointError::Io`].
pub fn write_checkpoint(
    fs: &dyn FileSystem,
    path: &Path,
    text: &str,
) -> Result<(), CheckpointError> {
    write_atomically(fs, path, text.as_bytes()).map_err(|source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// A log-dir checkpoint mapping partitions to offsets.
///
/// Format: UTF-8 text, `\n` line ends:
///
/// ```text
/// 0                               version
/// <count>                         number of entry lines
/// <topic> <partition> <offset>    count lines, e.g. "orders 3 1532"
/// ```
///
/// Readers split entry lines on runs of whitespace and do not assume any
/// order (Kafka writes hash-map order); this writer sorts by partition.
#[derive(Clone, Debug)]
pub struct OffsetCheckpointFile {
    /// The seam writes go through.
    fs: SharedFs,
    path: PathBuf,
}

impl OffsetCheckpointFile {
    /// A checkpoint at `path` (nothing is touched on disk).
    pub fn new(fs: &SharedFs, path: impl Into<PathBuf>) -> OffsetCheckpointFile {
        OffsetCheckpointFile {
            fs: fs.clone(),
            path: path.into(),
        }
    }

    /// The checkpoint named `name` (e.g. [`crate::format::RECOVERY_POINT_CHECKPOINT`])
    /// in log directory `log_dir`.
    pub fn in_dir(fs: &SharedFs, log_dir: &Path, name: &str) -> OffsetCheckpointFile {
        OffsetCheckpointFile::new(fs, log_dir.join(name))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Create an empty file if none exists, as Kafka does when it first
    /// opens a checkpoint.
    ///
    /// # Errors
    ///
    /// [`CheckpointError::Io`].
    pub fn ensure_exists(&self) -> Result<(), CheckpointError> {
        match self.fs.open(&self.path, OpenMode::CreateNew) {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            Err(source) => Err(CheckpointError::Io {
                path: self.path.clone(),
                source,
            }),
        }
    }

    /// Read all entries. A later line for the same partition wins.
    ///
    /// # Errors
    ///
    /// See [`read_checkpoint`].
    pub fn read(&self) -> Result<BTreeMap<TopicPartition, Offset>, CheckpointError> {
        Ok(self.read_in_file_order()?.into_iter().collect())
    }

    /// Read all entries in file order, duplicates kept (for tools).
    ///
    /// # Errors
    ///
    /// See [`read_checkpoint`].
    pub fn read_in_file_order(&self) -> Result<Vec<(TopicPartition, Offset)>, CheckpointError> {
        read_checkpoint(&self.path, CHECKPOINT_VERSION, decode_offset_entry)
    }

    /// Replace the file with `offsets`, atomically.
    ///
    /// # Errors
    ///
    /// [`CheckpointError::Io`].
    pub fn write(&self, offsets: &BTreeMap<TopicPartition, Offset>) -> Result<(), CheckpointError> {
        write_checkpoint(
            self.fs.as_ref(),
            &self.path,
            &encode_offset_checkpoint(offsets.iter()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::RECOVERY_POINT_CHECKPOINT;

    fn setup(content: &str) -> (tempfile::TempDir, OffsetCheckpointFile) {
        let dir = tempfile::tempdir().unwrap();
        let file = OffsetCheckpointFile::in_dir(
            &crate::fs::StdFs::shared(),
            dir.path(),
            RECOVERY_POINT_CHECKPOINT,
        );
        fs::write(file.path(), content).unwrap();
        (dir, file)
    }

    fn read(content: &str) -> Result<BTreeMap<TopicPartition, Offset>, CheckpointError> {
        setup(content).1.read()
    }

    #[test]
    fn round_trip_writes_kafkas_text() {
        let dir = tempfile::tempdir().unwrap();
        let file = OffsetCheckpointFile::in_dir(
            &crate::fs::StdFs::shared(),
            dir.path(),
            RECOVERY_POINT_CHECKPOINT,
        );
        let offsets: BTreeMap<_, _> = [
            (TopicPartition::new("orders", 1), Offset(977)),
            (TopicPartition::new("orders", 0), Offset(1532)),
            (TopicPartition::new("a.b-c_d", 12), Offset(0)),
        ]
        .into_iter()
        .collect();
        file.write(&offsets).unwrap();
        assert_eq!(
            fs::read_to_string(file.path()).unwrap(),
            "0\n3\na.b-c_d 12 0\norders 0 1532\norders 1 977\n"
        );
        assert_eq!(file.read().unwrap(), offsets);
        file.write(&BTreeMap::new()).unwrap();
        assert_eq!(fs::read_to_string(file.path()).unwrap(), "0\n0\n");
        assert!(file.read().unwrap().is_empty());
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [RECOVERY_POINT_CHECKPOINT], "no .tmp left behind");
    }

    #[test]
    fn reads_what_kafka_tolerates() {
        let tp = |p| TopicPartition::new("orders", p);
        // Spec example; order is not significant.
        let m = read("0\n2\norders 1 977\norders 0 1532\n").unwrap();
        assert_eq!(
            m,
            [(tp(0), Offset(1532)), (tp(1), Offset(977))]
                .into_iter()
                .collect()
        );
        // Runs of whitespace, tabs, CRLF and no final newline are fine.
        let m = read("0\r\n1\r\norders \t 0   5  ").unwrap();
        assert_eq!(m, [(tp(0), Offset(5))].into_iter().collect());
        // Empty file, missing file, version without count: no entries.
        assert!(read("").unwrap().is_empty());
        assert!(read("0\n").unwrap().is_empty());
        let dir = tempfile::tempdir().unwrap();
        let missing = OffsetCheckpointFile::in_dir(&crate::fs::StdFs::shared(), dir.path(), "x");
        assert!(missing.read().unwrap().is_empty());
        missing.ensure_exists().unwrap();
        assert_eq!(fs::read(missing.path()).unwrap(), b"");
        fs::write(missing.path(), "0\n0\n").unwrap();
        missing.ensure_exists().unwrap();
        assert_eq!(fs::read(missing.path()).unwrap(), b"0\n0\n", "kept");
    }

    fn malformed_line(content: &str) -> (usize, String) {
        match read(content) {
            Err(CheckpointError::MalformedLine {
                line_number, line, ..
            }) => (line_number, line),
            other => panic!("{content:?}: {other:?}"),
        }
    }

    #[test]
    fn each_malformation_is_reported_distinctly() {
        assert!(matches!(
            read("1\n0\n"),
            Err(CheckpointError::UnsupportedVersion {
                found: 1,
                expected: 0,
                ..
            })
        ));
        assert_eq!(malformed_line("zero\n0\n"), (1, "zero".into()));
        assert_eq!(malformed_line(" 0\n0\n"), (1, " 0".into()));
        assert_eq!(malformed_line("0\ntwo\n"), (2, "two".into()));
        assert_eq!(
            malformed_line("0\n2\norders 0 1\norders 1\n"),
            (4, "orders 1".into())
        );
        assert_eq!(
            malformed_line("0\n1\norders x 1\n"),
            (3, "orders x 1".into())
        );
        assert_eq!(
            malformed_line("0\n1\norders 0 1x\n"),
            (3, "orders 0 1x".into())
        );
        assert_eq!(
            malformed_line("0\n1\n orders 0 1\n"),
            (3, " orders 0 1".into())
        );
        assert_eq!(
            malformed_line("0\n1\norders 0 1 2\n"),
            (3, "orders 0 1 2".into())
        );
        assert_eq!(malformed_line("0\n1\norders 0 1\n\n"), (4, "".into()));
        assert!(matches!(
            read("0\n-1\n"),
            Err(CheckpointError::NegativeCount { count: -1, .. })
        ));
        assert!(matches!(
            read("0\n3\norders 0 1\norders 1 2\n"),
            Err(CheckpointError::CountMismatch {
                expected: 3,
                found: 2,
                ..
            })
        ));
        assert!(matches!(
            read("0\n0\norders 0 1\n"),
            Err(CheckpointError::CountMismatch {
                expected: 0,
                found: 1,
                ..
            })
        ));
        let (_dir, file) = setup("");
        fs::write(file.path(), b"0\n1\n\xff 0 1\n").unwrap();
        assert!(matches!(
            file.read(),
            Err(CheckpointError::InvalidUtf8 { .. })
        ));
        // The path is part of every error.
        let (_dir, file) = setup("x\n");
        let err = file.read().unwrap_err();
        assert!(err.to_string().contains(RECOVERY_POINT_CHECKPOINT), "{err}");
    }
}
