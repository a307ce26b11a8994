//! The per-segment index files: `.index`, `.timeindex` and `.txnindex`.
//!
//! The offset and time indexes are Kafka's `AbstractIndex` family: fixed-size
//! big-endian entries in a memory-mapped file that is preallocated to
//! `segment.index.bytes` while the segment is active and trimmed to the valid
//! entries when it is rolled or closed. `IndexFile` is the shared part (file
//! sizing, mapping, entry count); [`OffsetIndex`] and [`TimeIndex`] give the
//! entries meaning; `search` holds the cache-friendly ("warm section")
//! binary search both use, so lookups read the mapping without allocating.
//! The transaction index ([`TransactionIndex`]) is a plain append-only file.
//!
//! None of these types lock internally: reads take `&self`, mutations
//! `&mut self`, and the owning segment decides how to share them.

mod offset;
pub(crate) mod search;
mod time;
mod txn;

#[cfg(test)]
mod tests;

use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use memmap2::{Mmap, MmapMut, MmapOptions};
use thiserror::Error;

use crate::codec::index::{self as codec, IndexSlot};
use crate::fs::{FileSystem, OpenMode, SharedFs};
use crate::types::{Offset, Position, Timestamp};

pub use crate::codec::index::IndexCorruption;
pub use offset::{OffsetIndex, OffsetPosition};
pub use time::{TimeIndex, TimestampOffset};
pub use txn::{AbortedTxn, TransactionIndex, TxnIndexSearchResult};

/// What an index was doing when an I/O error struck.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexOp {
    Open,
    Map,
    Resize,
    Flush,
    Rename,
    Delete,
    Read,
    Write,
    Truncate,
    Reserve,
}

impl fmt::Display for IndexOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            IndexOp::Open => "open",
            IndexOp::Map => "memory-map",
            IndexOp::Resize => "resize",
            IndexOp::Reserve => "reserve disk space for",
            IndexOp::Flush => "flush",
            IndexOp::Rename => "rename",
            IndexOp::Delete => "delete",
            IndexOp::Read => "read",
            IndexOp::Write => "write",
            IndexOp::Truncate => "truncate",
        };
        f.write_str(s)
    }
}

/// Errors from the index files. Every variant names the file.
#[derive(Debug, Error)]
pub enum IndexError {
    #[error("cannot {op} index {path}")]
    Io {
        path: PathBuf,
        op: IndexOp,
        #[source]
        source: io::Error,
    },
    /// Kafka: IllegalArgumentException "Attempt to append to a full index".
    #[error("index {path} is full ({entries} entries)")]
    Full { path: PathBuf, entries: usize },
    /// Kafka: InvalidOffsetException.
    #[error("offset {offset} is not larger than the last offset {last} in index {path}")]
    InvalidOffset {
        path: PathBuf,
        offset: Offset,
        last: Offset,
    },
    /// Kafka: IllegalStateException from `TimeIndex.maybeAppend`.
    #[error("timestamp {timestamp:?} is below the last timestamp {last:?} in time index {path}")]
    TimestampRegression {
        path: PathBuf,
        timestamp: Timestamp,
        last: Timestamp,
    },
    /// Kafka: IndexOffsetOverflowException.
    #[error("offset {offset} cannot be stored relative to base offset {base_offset} in {path}")]
    OffsetOverflow {
        path: PathBuf,
        offset: Offset,
        base_offset: Offset,
    },
    /// A `.log` position beyond Kafka's int32 range.
    #[error("position {position} does not fit an index entry in {path}")]
    PositionOverflow { path: PathBuf, position: Position },
    /// `segment.index.bytes` smaller than one entry when creating the file.
    #[error(
        "max index size {max_index_size} for {path} is smaller than one {entry_size}-byte entry"
    )]
    InvalidMaxIndexSize {
        path: PathBuf,
        max_index_size: usize,
        entry_size: usize,
    },
    #[error("index {path} was opened read-only")]
    ReadOnly { path: PathBuf },
    #[error("cannot resize index {path} to {new_size} bytes while it holds {entries} entries")]
    ResizeBelowEntries {
        path: PathBuf,
        new_size: usize,
        entries: usize,
    },
    /// Kafka: IllegalArgumentException from `TransactionIndex.append`.
    #[error("aborted transaction ending at {last_offset} is not after {previous} in {path}")]
    TxnOutOfOrder {
        path: PathBuf,
        last_offset: Offset,
        previous: Offset,
    },
    /// Kafka: CorruptIndexException.
    #[error("corrupt index {path}: {reason}")]
    Corrupt {
        path: PathBuf,
        reason: IndexCorruption,
    },
}

impl IndexError {
    pub(crate) fn io(path: &Path, op: IndexOp, source: io::Error) -> IndexError {
        IndexError::Io {
            path: path.to_path_buf(),
            op,
            source,
        }
    }

    /// The corruption reason, if this is [`IndexError::Corrupt`].
    pub fn corruption(&self) -> Option<IndexCorruption> {
        match self {
            IndexError::Corrupt { reason, .. } => Some(*reason),
            _ => None,
        }
    }
}

/// Disk space reserved ahead of the entries written, per `fallocate(2)`
/// (a power of two).
const RESERVE_STEP: usize = 64 * 1024;

enum Map {
    Rw(MmapMut),
    Ro(Mmap),
}

/// The memory-mapped file behind an offset or time index (Kafka
/// `AbstractIndex`): sizing, the mapping and the entry count.
///
/// Invariants: `length` is the file length; the mapping covers exactly
/// `length` bytes; `max_entries = length / entry_size`; `entries <=
/// max_entries`; entries occupy bytes `[0, entries * entry_size)`;
/// `reserved <= length` and bytes `[0, reserved)` have disk blocks.
///
/// Why `reserved`: the file is preallocated sparse (as Kafka's), so the
/// first store into a hole allocates a block inside a page fault, and on a
/// full disk that fault is SIGBUS, which kills the process. `push` first
/// reserves the blocks with `fallocate(2)`, where ENOSPC is an ordinary
/// error that takes the log directory offline.
pub(crate) struct IndexFile {
    fs: SharedFs,
    path: PathBuf,
    /// Kept open for `fallocate` (the mapping alone cannot reserve blocks).
    file: File,
    reserved: usize,
    base_offset: Offset,
    max_index_size: usize,
    writable: bool,
    entry_size: usize,
    map: Map,
    length: usize,
    max_entries: usize,
    entries: usize,
}

impl IndexFile {
    /// Open or create the file as Kafka does.
    ///
    /// A missing file is created (when `writable`) with length
    /// `max_index_size` rounded down to whole entries and 0 entries. An
    /// existing file is taken as it is: every whole slot counts as an entry,
    /// including a zero-filled preallocated tail (see `sanity_check`).
    pub(crate) fn open(
        fs: &SharedFs,
        path: &Path,
        base_offset: Offset,
        max_index_size: usize,
        writable: bool,
        entry_size: usize,
    ) -> Result<IndexFile, IndexError> {
        let (file, newly_created) = if writable {
            match fs.open(path, OpenMode::CreateNew) {
                Ok(f) => (f, true),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => (
                    fs.open(path, OpenMode::ReadWrite)
                        .map_err(|e| IndexError::io(path, IndexOp::Open, e))?,
                    false,
                ),
                Err(e) => return Err(IndexError::io(path, IndexOp::Open, e)),
            }
        } else {
            let f = File::open(path).map_err(|e| IndexError::io(path, IndexOp::Open, e))?;
            (f, false)
        };
        if newly_created {
            if max_index_size < entry_size {
                let _ = fs.remove_file(path);
                return Err(IndexError::InvalidMaxIndexSize {
                    path: path.to_path_buf(),
                    max_index_size,
                    entry_size,
                });
            }
            let len = round_down(max_index_size, entry_size);
            fs.set_len(&file, path, len as u64)
                .map_err(|e| IndexError::io(path, IndexOp::Resize, e))?;
        }
        let length = file
            .metadata()
            .map_err(|e| IndexError::io(path, IndexOp::Open, e))?
            .len() as usize;
        let map = map_file(&file, path, length, writable)?;
        let max_entries = length / entry_size;
        let entries = if newly_created { 0 } else { max_entries };
        Ok(IndexFile {
            fs: fs.clone(),
            path: path.to_path_buf(),
            file,
            reserved: 0,
            base_offset,
            max_index_size,
            writable,
            entry_size,
            map,
            length,
            max_entries,
            entries,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn base_offset(&self) -> Offset {
        self.base_offset
    }

    pub(crate) fn entries(&self) -> usize {
        self.entries
    }

    pub(crate) fn max_entries(&self) -> usize {
        self.max_entries
    }

    pub(crate) fn length(&self) -> usize {
        self.length
    }

    pub(crate) fn max_index_size(&self) -> usize {
        self.max_index_size
    }

    /// The mapped bytes (the whole file).
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        match &self.map {
            Map::Rw(m) => m,
            Map::Ro(m) => m,
        }
    }

    /// Bytes of slot `n`.
    #[inline]
    pub(crate) fn slot(&self, n: usize) -> &[u8] {
        let start = n * self.entry_size;
        &self.bytes()[start..start + self.entry_size]
    }

    /// Relative form of `offset`, or [`IndexError::OffsetOverflow`].
    pub(crate) fn relative_offset(&self, offset: Offset) -> Result<i32, IndexError> {
        match offset.relative_to(self.base_offset) {
            Some(r) => Ok(r.0 as i32),
            None => Err(IndexError::OffsetOverflow {
                path: self.path.clone(),
                offset,
                base_offset: self.base_offset,
            }),
        }
    }

    /// Write `entry` into the next slot and count it.
    pub(crate) fn push(&mut self, entry: &[u8]) -> Result<(), IndexError> {
        debug_assert_eq!(entry.len(), self.entry_size);
        if self.entries >= self.max_entries {
            return Err(IndexError::Full {
                path: self.path.clone(),
                entries: self.entries,
            });
        }
        let start = self.entries * self.entry_size;
        self.reserve_to(start + entry.len())?;
        match &mut self.map {
            Map::Rw(m) => m[start..start + entry.len()].copy_from_slice(entry),
            Map::Ro(_) => {
                return Err(IndexError::ReadOnly {
                    path: self.path.clone(),
                })
            }
        }
        self.entries += 1;
        Ok(())
    }

    /// Make sure bytes `[0, end)` have disk blocks, reserving
    /// [`RESERVE_STEP`] at a time (a no-op for blocks already there).
    fn reserve_to(&mut self, end: usize) -> Result<(), IndexError> {
        if end <= self.reserved || !self.writable {
            return Ok(());
        }
        let from = self.reserved & !(RESERVE_STEP - 1);
        let to = (from + RESERVE_STEP).max(end).min(self.length);
        // The range lies within the file, so its length does not change.
        match self
            .fs
            .allocate(&self.file, &self.path, from as u64, (to - from) as u64)
        {
            Ok(()) => {
                self.reserved = to;
                Ok(())
            }
            // A file system without fallocate: keep Kafka's behaviour.
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                self.reserved = self.length;
                Ok(())
            }
            Err(e) => Err(IndexError::io(&self.path, IndexOp::Reserve, e)),
        }
    }

    /// Forget entries past `entries` (the bytes stay until overwritten).
    pub(crate) fn truncate_to_entries(&mut self, entries: usize) {
        self.entries = entries.min(self.entries);
    }

    /// Kafka `resize`: set the file length to `new_size` rounded down to
    /// whole entries and remap, keeping the entry count. Returns whether the
    /// length changed.
    pub(crate) fn resize(&mut self, new_size: usize) -> Result<bool, IndexError> {
        let rounded = round_down(new_size, self.entry_size);
        if rounded == self.length {
            return Ok(false);
        }
        if rounded < self.entries * self.entry_size {
            return Err(IndexError::ResizeBelowEntries {
                path: self.path.clone(),
                new_size: rounded,
                entries: self.entries,
            });
        }
        let file = self
            .fs
            .open(&self.path, OpenMode::ReadWrite)
            .map_err(|e| IndexError::io(&self.path, IndexOp::Resize, e))?;
        self.fs
            .set_len(&file, &self.path, rounded as u64)
            .map_err(|e| IndexError::io(&self.path, IndexOp::Resize, e))?;
        // Linux lets a mapped file change length; the old mapping is dropped
        // here, before anything reads through it again.
        self.map = map_file(&file, &self.path, rounded, self.writable)?;
        self.file = file;
        self.reserved = self.reserved.min(rounded);
        self.length = rounded;
        self.max_entries = rounded / self.entry_size;
        Ok(true)
    }

    /// Kafka `trimToValidSize`: shrink the file to the valid entries.
    pub(crate) fn trim_to_valid_size(&mut self) -> Result<bool, IndexError> {
        self.resize(self.entries * self.entry_size)
    }

    /// msync the mapping (Kafka `flush`, `MappedByteBuffer.force`), then
    /// tell the seam, so that it sees the point where the entries become
    /// durable (no second system call in production).
    pub(crate) fn flush(&self) -> Result<(), IndexError> {
        match &self.map {
            Map::Rw(m) => m
                .flush()
                .and_then(|()| self.fs.sync_mapped(&self.file, &self.path))
                .map_err(|e| IndexError::io(&self.path, IndexOp::Flush, e)),
            Map::Ro(_) => Ok(()),
        }
    }

    /// Rename the file. Like Kafka, the new path is adopted even if the
    /// rename fails, so later operations address the intended name.
    pub(crate) fn rename_to(&mut self, new_path: &Path) -> Result<(), IndexError> {
        let result = self.fs.rename(&self.path, new_path);
        let old = std::mem::replace(&mut self.path, new_path.to_path_buf());
        result.map_err(|e| IndexError::io(&old, IndexOp::Rename, e))
    }

    /// Unmap and delete the file; `false` if it did not exist.
    pub(crate) fn delete(self) -> Result<bool, IndexError> {
        let path = self.path.clone();
        let fs = self.fs.clone();
        drop(self);
        delete_if_exists(fs.as_ref(), &path)
    }

    /// Trim and unmap (Kafka `close`).
    pub(crate) fn close(mut self) -> Result<(), IndexError> {
        self.trim_to_valid_size()?;
        Ok(())
    }

    /// The codec's checks on this file's entries: Kafka's `sanityCheck`
    /// plus Strata's rule on the last pair, or on every pair when `full`.
    pub(crate) fn check<S: IndexSlot>(&self, full: bool) -> Result<(), IndexError> {
        let (length, base) = (self.length as u64, self.base_offset);
        let slot = |n| S::decode(self.slot(n));
        let result = if full {
            codec::check_all_entries(length, self.entries, base, slot)
        } else {
            codec::sanity_check(length, self.entries, base, slot)
        };
        result.map_err(|reason| self.corrupt(reason))
    }

    pub(crate) fn corrupt(&self, reason: IndexCorruption) -> IndexError {
        IndexError::Corrupt {
            path: self.path.clone(),
            reason,
        }
    }
}

pub(crate) fn delete_if_exists(fs: &dyn FileSystem, path: &Path) -> Result<bool, IndexError> {
    match fs.remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(IndexError::io(path, IndexOp::Delete, e)),
    }
}

fn round_down(n: usize, factor: usize) -> usize {
    factor * (n / factor)
}

fn map_file(file: &File, path: &Path, length: usize, writable: bool) -> Result<Map, IndexError> {
    let opts = {
        let mut o = MmapOptions::new();
        o.len(length);
        o
    };
    // SAFETY: the index file belongs to a partition directory of a log dir
    // this process has locked (`.lock`); nothing else resizes or rewrites it
    // while mapped, and this type never reads past `length`, the size the
    // file was just set to or found at.
    let map = unsafe {
        if writable {
            opts.map_mut(file).map(Map::Rw)
        } else {
            opts.map(file).map(Map::Ro)
        }
    }
    .map_err(|e| IndexError::io(path, IndexOp::Map, e))?;
    // No readahead on faults: lookups are binary searches and appends touch
    // one new page at a time, while a new index is a sparse file of
    // `segment.index.bytes` (10 MiB). With the kernel's default, the first
    // entry written to each page faulted in up to megabytes of zeroes
    // around it, which cost ~10 ms of CPU per partition when a Produce
    // request spread over 1,000 partitions (bench/scale_bench.py).
    // Advice is a hint: a kernel that refuses it only costs speed.
    let advised = match &map {
        Map::Rw(m) => m.advise(memmap2::Advice::Random),
        Map::Ro(m) => m.advise(memmap2::Advice::Random),
    };
    if let Err(e) = advised {
        tracing::debug!(path = %path.display(), error = %e, "madvise(MADV_RANDOM) on an index failed");
    }
    Ok(map)
}
