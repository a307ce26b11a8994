//! The time index (`.timeindex`, Kafka `TimeIndex`): a sparse map from the
//! largest timestamp seen so far to the offset where it was seen.

use std::path::Path;

use super::search::{entries_below, search, warm_entries, Bound};
use super::{IndexError, IndexFile};
use crate::codec::index::{IndexSlot, TimeSlot};
use crate::fs::SharedFs;
use crate::types::{Offset, Timestamp};

const ENTRY_SIZE: usize = TimeSlot::SIZE;
const WARM: usize = warm_entries(ENTRY_SIZE);

/// A time-index entry: the largest timestamp among batches up to and
/// including offset `offset` is `timestamp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimestampOffset {
    pub timestamp: Timestamp,
    pub offset: Offset,
}

/// A segment's time index, memory-mapped.
///
/// Format: a headerless array of 12-byte [`TimeSlot`]s, big-endian
/// (`timestamp i64 | relative offset i32`; see [`crate::codec::index`]).
///
/// Timestamps strictly increase; offsets never decrease. Sizing, trimming
/// and the "every slot of an existing file is an entry" rule are those of
/// the offset index ([`super::OffsetIndex`]), with 12-byte slots. One slot
/// is reserved: the index reports full at `max_entries - 1` entries so the
/// final entry written at roll or close always fits.
pub struct TimeIndex {
    file: IndexFile,
    last_entry: TimestampOffset,
}

impl TimeIndex {
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
    ) -> Result<TimeIndex, IndexError> {
        let file = IndexFile::open(fs, path, base_offset, max_index_size, writable, ENTRY_SIZE)?;
        let mut index = TimeIndex {
            file,
            last_entry: empty_entry(base_offset),
        };
        index.last_entry = index.last_entry_from_file();
        Ok(index)
    }

    #[inline]
    fn slot(&self, n: usize) -> TimeSlot {
        TimeSlot::decode(self.file.slot(n))
    }

    #[inline]
    fn timestamp_at(&self, n: usize) -> i64 {
        self.slot(n).timestamp.0
    }

    #[inline]
    fn offset_at(&self, n: usize) -> Offset {
        self.slot(n).offset(self.file.base_offset())
    }

    #[inline]
    fn parse(&self, n: usize) -> TimestampOffset {
        TimestampOffset {
            timestamp: Timestamp(self.timestamp_at(n)),
            offset: self.offset_at(n),
        }
    }

    fn last_entry_from_file(&self) -> TimestampOffset {
        match self.file.entries() {
            0 => empty_entry(self.file.base_offset()),
            n => self.parse(n - 1),
        }
    }

    /// The last entry, or `(-1, base)` when empty.
    pub fn last_entry(&self) -> TimestampOffset {
        self.last_entry
    }

    /// The entry with the largest timestamp `<= target`, or `(-1, base)`.
    pub fn lookup(&self, target: Timestamp) -> TimestampOffset {
        let slot = search(
            self.file.entries(),
            WARM,
            target.0,
            Bound::LargestLower,
            |n| self.timestamp_at(n),
        );
        match slot {
            Some(n) => self.parse(n),
            None => empty_entry(self.file.base_offset()),
        }
    }

    /// Entry `n`.
    ///
    /// # Panics
    ///
    /// If `n >= self.entries()` (Kafka throws IllegalArgumentException).
    pub fn entry(&self, n: usize) -> TimestampOffset {
        assert!(
            n < self.file.entries(),
            "entry {n} requested from time index {} which has {} entries",
            self.file.path().display(),
            self.file.entries()
        );
        self.parse(n)
    }

    /// Append `(timestamp, offset)` if `timestamp` is above the last entry's
    /// (Kafka `maybeAppend`). An entry equal to the last one, as written
    /// again at roll and close, is silently skipped; so is any timestamp of
    /// an empty index that is not above -1.
    ///
    /// # Errors
    ///
    /// [`IndexError::Full`] when full and `!skip_full_check` (or when no
    /// slot is left at all); [`IndexError::InvalidOffset`] if `offset` is
    /// below the last entry's; [`IndexError::TimestampRegression`] if
    /// `timestamp` is below the last entry's; [`IndexError::OffsetOverflow`].
    pub fn maybe_append(
        &mut self,
        timestamp: Timestamp,
        offset: Offset,
        skip_full_check: bool,
    ) -> Result<(), IndexError> {
        if !skip_full_check && self.is_full() {
            return Err(IndexError::Full {
                path: self.file.path().to_path_buf(),
                entries: self.file.entries(),
            });
        }
        let non_empty = self.file.entries() != 0;
        if non_empty && offset < self.last_entry.offset {
            return Err(IndexError::InvalidOffset {
                path: self.file.path().to_path_buf(),
                offset,
                last: self.last_entry.offset,
            });
        }
        if non_empty && timestamp < self.last_entry.timestamp {
            return Err(IndexError::TimestampRegression {
                path: self.file.path().to_path_buf(),
                timestamp,
                last: self.last_entry.timestamp,
            });
        }
        if timestamp > self.last_entry.timestamp {
            let relative = self.file.relative_offset(offset)?;
            let slot = TimeSlot {
                timestamp,
                relative,
            };
            self.file.push(&slot.encode())?;
            self.last_entry = TimestampOffset { timestamp, offset };
        }
        Ok(())
    }

    /// Remove every entry with offset `>= offset` (compares offsets, not
    /// timestamps). Truncating past the end changes nothing.
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
        self.last_entry = self.last_entry_from_file();
    }

    /// Shrink the file to the valid entries (done at roll and close).
    pub fn trim_to_valid_size(&mut self) -> Result<(), IndexError> {
        self.resize(self.file.entries() * ENTRY_SIZE).map(|_| ())
    }

    /// Set the file length to `new_size` rounded down to whole entries,
    /// keeping the entries; the last entry is re-read afterwards. Returns
    /// whether the length changed.
    ///
    /// # Errors
    ///
    /// I/O errors; [`IndexError::ResizeBelowEntries`].
    pub fn resize(&mut self, new_size: usize) -> Result<bool, IndexError> {
        let changed = self.file.resize(new_size)?;
        if changed {
            self.last_entry = self.last_entry_from_file();
        }
        Ok(changed)
    }

    /// Remove all entries and grow the file back to the maximum size.
    pub fn reset(&mut self) -> Result<(), IndexError> {
        self.truncate()?;
        self.resize(self.file.max_index_size())?;
        Ok(())
    }

    /// Check for corruption: Kafka's `sanityCheck` plus Strata's rule on the
    /// last two entries ([`crate::codec::index::sanity_check`]), which a zero-filled,
    /// untrimmed preallocated tail fails.
    ///
    /// # Errors
    ///
    /// [`IndexError::Corrupt`] with the [`super::IndexCorruption`].
    pub fn sanity_check(&self) -> Result<(), IndexError> {
        self.file.check::<TimeSlot>(false)
    }

    /// Kafka's checks, then every adjacent pair of entries (a full scan, for
    /// tools), naming the first bad slot.
    ///
    /// # Errors
    ///
    /// As [`Self::sanity_check`].
    pub fn check_all_entries(&self) -> Result<(), IndexError> {
        self.file.check::<TimeSlot>(true)
    }

    /// msync the mapping.
    pub fn flush(&self) -> Result<(), IndexError> {
        self.file.flush()
    }

    /// Trim to the valid entries and unmap.
    pub fn close(mut self) -> Result<(), IndexError> {
        self.trim_to_valid_size()?;
        self.file.close()
    }

    /// Unmap and delete the file; `false` if it was already gone.
    pub fn delete(self) -> Result<bool, IndexError> {
        self.file.delete()
    }

    /// Rename the file.
    pub fn rename_to(&mut self, new_path: &Path) -> Result<(), IndexError> {
        self.file.rename_to(new_path)
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    pub fn base_offset(&self) -> Offset {
        self.file.base_offset()
    }

    pub fn entries(&self) -> usize {
        self.file.entries()
    }

    pub fn max_entries(&self) -> usize {
        self.file.max_entries()
    }

    /// `entries >= max_entries - 1`: the last slot is reserved for the final
    /// entry at roll or close. A 0-byte index is always full.
    pub fn is_full(&self) -> bool {
        self.file.entries() as i64 >= self.file.max_entries() as i64 - 1
    }

    /// Bytes used by the entries (`entries * 12`).
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
}

fn empty_entry(base_offset: Offset) -> TimestampOffset {
    TimestampOffset {
        timestamp: Timestamp::NONE,
        offset: base_offset,
    }
}
