//! The transaction index (`.txnindex`, Kafka `TransactionIndex`): the aborted
//! transactions whose ABORT marker landed in a segment, for READ_COMMITTED
//! fetches and the cleaner.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{delete_if_exists, IndexError, IndexOp};
use crate::codec::txn::{check_not_below_base, decode_records, ABORTED_TXN_SIZE};
use crate::fs::{OpenMode, SharedFs};
use crate::types::Offset;

pub use crate::codec::txn::AbortedTxn;

/// The answer to [`TransactionIndex::collect_aborted_txns`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnIndexSearchResult {
    pub aborted: Vec<AbortedTxn>,
    /// True once an entry's LSO reached the upper bound: later segments
    /// cannot hold more relevant entries.
    pub is_complete: bool,
}

/// A segment's `.txnindex`: [`AbortedTxn`] records appended in
/// last-offset order, no header. The file is created on the first append;
/// a trailing partial record is ignored when reading.
pub struct TransactionIndex {
    fs: SharedFs,
    base_offset: Offset,
    path: PathBuf,
    file: Option<File>,
    /// Last offset appended since opening; ordering is checked only against
    /// these, as in Kafka.
    last_offset: Option<Offset>,
}

impl TransactionIndex {
    /// Open `path` if it exists; otherwise nothing is created until the
    /// first append.
    ///
    /// # Errors
    ///
    /// I/O errors opening an existing file.
    pub fn open(
        fs: &SharedFs,
        path: &Path,
        base_offset: Offset,
    ) -> Result<TransactionIndex, IndexError> {
        let mut index = TransactionIndex {
            fs: fs.clone(),
            base_offset,
            path: path.to_path_buf(),
            file: None,
            last_offset: None,
        };
        if path.exists() {
            index.open_file()?;
        }
        Ok(index)
    }

    fn open_file(&mut self) -> Result<&File, IndexError> {
        let file = self
            .fs
            .open(&self.path, OpenMode::Create)
            .map_err(|e| self.io(IndexOp::Open, e))?;
        Ok(self.file.insert(file))
    }

    fn io(&self, op: IndexOp, e: io::Error) -> IndexError {
        IndexError::io(&self.path, op, e)
    }

    fn len(&self, file: &File) -> Result<u64, IndexError> {
        Ok(file
            .metadata()
            .map_err(|e| self.io(IndexOp::Read, e))?
            .len())
    }

    /// Append `txn` at the end of the file, creating it if needed.
    ///
    /// # Errors
    ///
    /// [`IndexError::TxnOutOfOrder`] if `txn.last_offset` is not above the
    /// last offset appended since opening; I/O errors.
    pub fn append(&mut self, txn: &AbortedTxn) -> Result<(), IndexError> {
        if let Some(previous) = self.last_offset {
            if previous >= txn.last_offset {
                return Err(IndexError::TxnOutOfOrder {
                    path: self.path.clone(),
                    last_offset: txn.last_offset,
                    previous,
                });
            }
        }
        if self.file.is_none() {
            self.open_file()?;
        }
        let file = self.file.as_ref().expect("opened above");
        let end = self.len(file)?;
        self.fs
            .write_at(file, &self.path, &txn.encode(), end)
            .map_err(|e| self.io(IndexOp::Write, e))?;
        self.last_offset = Some(txn.last_offset);
        Ok(())
    }

    /// Every whole record in the file with its byte position.
    fn read_all(&self) -> Result<Vec<(u64, AbortedTxn)>, IndexError> {
        let Some(file) = &self.file else {
            return Ok(Vec::new());
        };
        let len = self.len(file)?;
        let whole = (len / ABORTED_TXN_SIZE as u64) as usize * ABORTED_TXN_SIZE;
        let mut buf = vec![0u8; whole];
        file.read_exact_at(&mut buf, 0)
            .map_err(|e| self.io(IndexOp::Read, e))?;
        let records = decode_records(&buf).map_err(|e| IndexError::Corrupt {
            path: self.path.clone(),
            reason: e.into(),
        })?;
        Ok(records
            .into_iter()
            .enumerate()
            .map(|(i, t)| ((i * ABORTED_TXN_SIZE) as u64, t))
            .collect())
    }

    /// All records, in file order.
    ///
    /// # Errors
    ///
    /// I/O errors; [`super::IndexCorruption::UnsupportedTxnVersion`].
    pub fn all_aborted_txns(&self) -> Result<Vec<AbortedTxn>, IndexError> {
        Ok(self.read_all()?.into_iter().map(|(_, t)| t).collect())
    }

    /// The aborted transactions overlapping a fetch from `fetch_offset` up to
    /// `upper_bound_offset`: every record with `last_offset >= fetch_offset`
    /// and `first_offset < upper_bound_offset`, stopping (complete) at the
    /// first record whose LSO is `>= upper_bound_offset`.
    ///
    /// # Errors
    ///
    /// As [`Self::all_aborted_txns`].
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: Offset,
        upper_bound_offset: Offset,
    ) -> Result<TxnIndexSearchResult, IndexError> {
        let mut aborted = Vec::new();
        for (_, txn) in self.read_all()? {
            if txn.last_offset >= fetch_offset && txn.first_offset < upper_bound_offset {
                aborted.push(txn);
            }
            if txn.last_stable_offset >= upper_bound_offset {
                return Ok(TxnIndexSearchResult {
                    aborted,
                    is_complete: true,
                });
            }
        }
        Ok(TxnIndexSearchResult {
            aborted,
            is_complete: false,
        })
    }

    /// Cut the file at the first record whose last offset is `>= offset`.
    ///
    /// # Errors
    ///
    /// I/O errors; corrupt records before the cut.
    pub fn truncate_to(&mut self, offset: Offset) -> Result<(), IndexError> {
        let mut new_last = None;
        for (position, txn) in self.read_all()? {
            if txn.last_offset >= offset {
                let file = self.file.as_ref().expect("records imply an open file");
                self.fs
                    .set_len(file, &self.path, position)
                    .map_err(|e| self.io(IndexOp::Truncate, e))?;
                self.last_offset = new_last;
                return Ok(());
            }
            new_last = Some(txn.last_offset);
        }
        Ok(())
    }

    /// Create the file, empty, if it does not exist yet.
    ///
    /// # Errors
    ///
    /// I/O errors.
    pub fn create_if_missing(&mut self) -> Result<(), IndexError> {
        if self.file.is_none() {
            self.open_file()?;
        }
        Ok(())
    }

    /// Empty the file (it is kept) and forget the last offset.
    ///
    /// # Errors
    ///
    /// I/O errors.
    pub fn reset(&mut self) -> Result<(), IndexError> {
        if let Some(file) = &self.file {
            self.fs
                .set_len(file, &self.path, 0)
                .map_err(|e| self.io(IndexOp::Truncate, e))?;
        }
        self.last_offset = None;
        Ok(())
    }

    /// Kafka's check: no record ends below the segment's base offset.
    ///
    /// # Errors
    ///
    /// [`super::IndexCorruption::AbortedTxnBelowBase`] or a read failure.
    pub fn sanity_check(&self) -> Result<(), IndexError> {
        for (_, txn) in self.read_all()? {
            check_not_below_base(self.base_offset, &txn).map_err(|reason| IndexError::Corrupt {
                path: self.path.clone(),
                reason,
            })?;
        }
        Ok(())
    }

    /// fsync the file if it exists.
    ///
    /// # Errors
    ///
    /// I/O errors.
    pub fn flush(&self) -> Result<(), IndexError> {
        match &self.file {
            Some(file) => self
                .fs
                .sync(file, &self.path)
                .map_err(|e| self.io(IndexOp::Flush, e)),
            None => Ok(()),
        }
    }

    /// Close the file handle.
    pub fn close(self) -> Result<(), IndexError> {
        Ok(())
    }

    /// Close and delete the file; `false` if it did not exist.
    ///
    /// # Errors
    ///
    /// I/O errors other than "not found".
    pub fn delete(self) -> Result<bool, IndexError> {
        let path = self.path.clone();
        let fs = self.fs.clone();
        drop(self);
        delete_if_exists(fs.as_ref(), &path)
    }

    /// Rename the file if it exists; the new path is adopted either way (so
    /// a never-materialised index is later created under the new name).
    ///
    /// # Errors
    ///
    /// The rename's I/O error.
    pub fn rename_to(&mut self, new_path: &Path) -> Result<(), IndexError> {
        let result = if self.path.exists() {
            self.fs
                .rename(&self.path, new_path)
                .map_err(|e| self.io(IndexOp::Rename, e))
        } else {
            Ok(())
        };
        self.path = new_path.to_path_buf();
        result
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn base_offset(&self) -> Offset {
        self.base_offset
    }

    /// True when no whole record is stored (including a missing file).
    ///
    /// # Errors
    ///
    /// I/O errors reading the file length.
    pub fn is_empty(&self) -> Result<bool, IndexError> {
        match &self.file {
            Some(file) => Ok(self.len(file)? < ABORTED_TXN_SIZE as u64),
            None => Ok(true),
        }
    }

    /// Whether the file has been created.
    pub fn exists(&self) -> bool {
        self.file.is_some()
    }
}
