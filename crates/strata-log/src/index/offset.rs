//! The offset index (`.index`, Kafka `OffsetIndex`): a sparse map from offsets
//! to byte positions in the segment's `.log`.

use std::path::Path;

use super::search::{entries_below, search, warm_entries, Bound};
use super::{IndexError, IndexFile};
use crate::codec::index::{IndexSlot, OffsetSlot};
use crate::fs::SharedFs;
use crate::types::{Offset, Position};

const ENTRY_SIZE: usize = OffsetSlot::SIZE;
const WARM: usize = warm_entries(ENTRY_SIZE);

/// An offset-index entry: offset `offset` is found by scanning the `.log`
/// from byte `position`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetPosition {
    pub offset: Offset,
    pub position: Position,
}

/// A segment's offset index, memory-mapped.
///
/// Format: a headerless array of 8-byte [`OffsetSlot`]s, big-endian
/// (`relative offset i32 | position i32`; see [`crate::codec::index`]).
///
/// Entry (O, P) is written by an append that started at position P and whose
/// largest offset is O; every batch before P holds only offsets < O.
/// Offsets strictly increase, positions never decrease. A new file is
/// preallocated to `segment.index.bytes` rounded down to 8 and zero-filled;
/// it is trimmed to `entries * 8` bytes when the segment is rolled or closed.
/// On open every whole slot of an existing file counts as an entry, so an
/// untrimmed file looks full of `(base, 0)` entries; [`Self::sanity_check`]
/// detects that.
pub struct OffsetIndex {
    file: IndexFile,
    last_offset: Offset,
}

impl OffsetIndex {
    /// Open `path`, creating and preallocating it if missing and `writable`.
    ///
    /// # Errors
    ///
    /// I/O errors, or [`IndexError::InvalidMaxIndexSize`] when a new file
    /// would hold no entry.
    pub fn open(
        fs: &SharedFs,
        path: &Path,
        base_offset: Offset,
        max_index_size: usize,
        writable: bool,
    ) -> Result<OffsetIndex, IndexError> {
        let file = IndexFile::open(fs, path, base_offset, max_index_size, writable, ENTRY_SIZE)?;
        let mut index = OffsetIndex {
            file,
            last_offset: base_offset,
        };
        index.last_offset = index.last_entry().offset;
        Ok(index)
    }

    #[inline]
    fn slot(&self, n: usize) -> OffsetSlot {
        OffsetSlot::decode(self.file.slot(n))
    }

    #[inline]
    fn raw_position(&self, n: usize) -> i32 {
        self.slot(n).position
    }

    #[inline]
    fn offset_at(&self, n: usize) -> Offset {
        self.slot(n).offset(self.file.base_offset())
    }

    #[inline]
    fn parse(&self, n: usize) -> OffsetPosition {
        OffsetPosition {
            offset: self.offset_at(n),
            position: Position(self.raw_position(n) as u32),
        }
    }

    fn last_entry(&self) -> OffsetPosition {
        match self.file.entries() {
            0 => OffsetPosition {
                offset: self.file.base_offset(),
                position: Position(0),
            },
            n => self.parse(n - 1),
        }
    }

    /// The entry with the largest offset `<= target`, or `(base, 0)` when the
    /// index is empty or `target` is below the first entry.
    pub fn lookup(&self, target: Offset) -> OffsetPosition {
        let slot = search(
            self.file.entries(),
            WARM,
            target.get(),
            Bound::LargestLower,
            |n| self.offset_at(n).get(),
        );
        match slot {
            Some(n) => self.parse(n),
            None => OffsetPosition {
                offset: self.file.base_offset(),
                position: Position(0),
            },
        }
    }

    /// The first entry whose position is `>= fetch.position + fetch_size`
    /// (Kafka `fetchUpperBoundOffset`), used to bound aborted-transaction
    /// lookups for a fetch.
    pub fn fetch_upper_bound_offset(
        &self,
        fetch: OffsetPosition,
        fetch_size: usize,
    ) -> Option<OffsetPosition> {
        let target = fetch.position.get() as i64 + fetch_size as i64;
        search(
            self.file.entries(),
            WARM,
            target,
            Bound::SmallestUpper,
            |n| self.raw_position(n) as i64,
        )
        .map(|n| self.parse(n))
    }

    /// Entry `n`.
    ///
    /// # Panics
    ///
    /// If `n >= self.entries()` (Kafka throws IllegalArgumentException).
    pub fn entry(&self, n: usize) -> OffsetPosition {
        assert!(
            n < self.file.entries(),
            "entry {n} requested from index {} which has {} entries",
            self.file.path().display(),
            self.file.entries()
        );
        self.parse(n)
    }

    /// Append an entry.
    ///
    /// # Errors
    ///
    /// [`IndexError::Full`]; [`IndexError::InvalidOffset`] if the index is
    /// not empty and `offset` is not above the last offset;
    /// [`IndexError::OffsetOverflow`] / [`IndexError::PositionOverflow`] if
    /// a field does not fit; [`IndexError::ReadOnly`].
    pub fn append(&mut self, offset: Offset, position: Position) -> Result<(), IndexError> {
        if self.is_full() {
            return Err(IndexError::Full {
                path: self.file.path().to_path_buf(),
                entries: self.file.entries(),
            });
        }
        if self.file.entries() != 0 && offset <= self.last_offset {
            return Err(IndexError::InvalidOffset {
                path: self.file.path().to_path_buf(),
                offset,
                last: self.last_offset,
            });
        }
        let relative = self.file.relative_offset(offset)?;
        let pos = i32::try_from(position.get()).map_err(|_| IndexError::PositionOverflow {
            path: self.file.path().to_path_buf(),
            position,
        })?;
        let slot = OffsetSlot {
            relative,
            position: pos,
        };
        self.file.push(&slot.encode())?;
        self.last_offset = offset;
        Ok(())
    }

    /// Remove every entry with offset `>= offset`. Truncating past the end
    /// changes nothing.
    pub fn truncate_to(&mut self, offset: Offset) -> Result<(), IndexError> {
        let keep = entries_below(self.file.entries(), WARM, offset.get(), |n| {
            self.offset_at(n).get()
        });
        self.truncate_to_entries(keep);
        Ok(())
    }

    /// Remove all entries.
    pub fn truncate(&mut self) -> Result<(), IndexError> {
        self.truncate_to_entries(0);
        Ok(())
    }

    fn truncate_to_entries(&mut self, entries: usize) {
        self.file.truncate_to_entries(entries);
        self.last_offset = self.last_entry().offset;
    }

    /// Shrink the file to the valid entries (done at roll and close).
    pub fn trim_to_valid_size(&mut self) -> Result<(), IndexError> {
        self.file.trim_to_valid_size().map(|_| ())
    }

    /// Set the file length to `new_size` rounded down to whole entries,
    /// keeping the entries. Returns whether the length changed.
    ///
    /// # Errors
    ///
    /// I/O errors; [`IndexError::ResizeBelowEntries`].
    pub fn resize(&mut self, new_size: usize) -> Result<bool, IndexError> {
        self.file.resize(new_size)
    }

    /// Remove all entries and grow the file back to the maximum size (used
    /// by recovery before rebuilding).
    pub fn reset(&mut self) -> Result<(), IndexError> {
        self.truncate()?;
        self.file.resize(self.file.max_index_size())?;
        Ok(())
    }

    /// Check for corruption: Kafka's `sanityCheck` plus Strata's rule on the
    /// last two entries ([`crate::codec::index::sanity_check`]), which a preallocated file
    /// left untrimmed by a crash fails.
    ///
    /// # Errors
    ///
    /// [`IndexError::Corrupt`] with the [`super::IndexCorruption`].
    pub fn sanity_check(&self) -> Result<(), IndexError> {
        self.file.check::<OffsetSlot>(false)
    }

    /// Kafka's checks, then every adjacent pair of entries (a full scan, for
    /// tools), naming the first bad slot.
    ///
    /// # Errors
    ///
    /// As [`Self::sanity_check`].
    pub fn check_all_entries(&self) -> Result<(), IndexError> {
        self.file.check::<OffsetSlot>(true)
    }

    /// msync the mapping.
    pub fn flush(&self) -> Result<(), IndexError> {
        self.file.flush()
    }

    /// Trim to the valid entries and unmap.
    pub fn close(self) -> Result<(), IndexError> {
        self.file.close()
    }

    /// Unmap and delete the file; `false` if it was already gone.
    pub fn delete(self) -> Result<bool, IndexError> {
        self.file.delete()
    }

    /// Rename the file (e.g. adding `.deleted` or removing `.swap`).
    pub fn rename_to(&mut self, new_path: &Path) -> Result<(), IndexError> {
        self.file.rename_to(new_path)
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    pub fn base_offset(&self) -> Offset {
        self.file.base_offset()
    }

    /// The last entry's offset, or the base offset when empty.
    pub fn last_offset(&self) -> Offset {
        self.last_offset
    }

    pub fn entries(&self) -> usize {
        self.file.entries()
    }

    pub fn max_entries(&self) -> usize {
        self.file.max_entries()
    }

    /// `entries >= max_entries`; a full offset index forces a roll.
    pub fn is_full(&self) -> bool {
        self.file.entries() >= self.file.max_entries()
    }

    /// Bytes used by the entries (`entries * 8`).
    pub fn size_in_bytes(&self) -> usize {
        self.file.entries() * ENTRY_SIZE
    }

    /// Current file length in bytes.
    pub fn length(&self) -> usize {
        self.file.length()
    }

    /// The configured maximum size (`segment.index.bytes`).
    pub fn max_index_size(&self) -> usize {
        self.file.max_index_size()
    }

    /// Whether `offset` can be stored relative to the base offset.
    pub fn can_append_offset(&self, offset: Offset) -> bool {
        offset.relative_to(self.file.base_offset()).is_some()
    }
}
