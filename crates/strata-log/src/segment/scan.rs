//! Reading batches out of a `.log` file with Kafka's scan rules (§1.10).
//!
//! [`FileBatches`] reads whole batches through a reusable buffer with
//! positioned reads (`pread`), so scanning never moves a shared file cursor
//! and readers never contend with the appender.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::batch::{
    BatchPrefix, HEADER_SIZE_UP_TO_MAGIC, LAST_OFFSET_DELTA_POS, MAGIC_V2, MAX_TIMESTAMP_POS,
    RECORD_BATCH_OVERHEAD,
};
use crate::types::{LeaderEpoch, Offset, Timestamp};

/// Why a scan stopped early.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// A `Length` field below the minimum (e.g. a zero-filled tail).
    Corrupt {
        position: u64,
    },
    Io(io::Error),
}

/// What the segment code needs to know about one batch, any magic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchSummary {
    pub position: u64,
    pub size: u64,
    pub magic: i8,
    pub base_offset: Offset,
    pub last_offset: Offset,
    pub max_timestamp: Timestamp,
    pub partition_leader_epoch: LeaderEpoch,
}

impl BatchSummary {
    /// Summarise the complete batch `bytes` stored at `position`.
    ///
    /// Legacy (v0/v1) entries carry their last offset in the offset field
    /// and, for v1, their timestamp at byte 18.
    pub fn of(position: u64, prefix: &BatchPrefix, bytes: &[u8]) -> BatchSummary {
        let size = prefix.total_size() as u64;
        if prefix.magic >= MAGIC_V2 && bytes.len() >= RECORD_BATCH_OVERHEAD {
            let delta = i32::from_be_bytes(
                bytes[LAST_OFFSET_DELTA_POS..LAST_OFFSET_DELTA_POS + 4]
                    .try_into()
                    .expect("4 bytes"),
            );
            let max_ts = i64::from_be_bytes(
                bytes[MAX_TIMESTAMP_POS..MAX_TIMESTAMP_POS + 8]
                    .try_into()
                    .expect("8 bytes"),
            );
            BatchSummary {
                position,
                size,
                magic: prefix.magic,
                base_offset: Offset(prefix.base_offset),
                last_offset: Offset(prefix.base_offset + delta as i64),
                max_timestamp: Timestamp(max_ts),
                partition_leader_epoch: LeaderEpoch(prefix.partition_leader_epoch),
            }
        } else {
            let ts = if prefix.magic == 1 && bytes.len() >= 26 {
                i64::from_be_bytes(bytes[18..26].try_into().expect("8 bytes"))
            } else {
                -1
            };
            BatchSummary {
                position,
                size,
                magic: prefix.magic,
                base_offset: Offset(prefix.base_offset),
                last_offset: Offset(prefix.base_offset),
                max_timestamp: Timestamp(ts),
                partition_leader_epoch: LeaderEpoch::NONE,
            }
        }
    }

    pub fn next_offset(&self) -> Offset {
        self.last_offset.plus(1)
    }
}

/// A cursor over the batches of `file` in `[start, end)`.
pub(crate) struct FileBatches<'f> {
    file: &'f File,
    pos: u64,
    end: u64,
    buf: Vec<u8>,
    /// File position of `buf[0]`.
    buf_pos: u64,
    chunk: usize,
}

impl<'f> FileBatches<'f> {
    /// Scan from `start` to `end` reading `chunk` bytes at a time.
    pub fn new(file: &'f File, start: u64, end: u64, chunk: usize) -> Self {
        FileBatches {
            file,
            pos: start,
            end,
            buf: Vec::new(),
            buf_pos: start,
            chunk: chunk.max(RECORD_BATCH_OVERHEAD),
        }
    }

    fn ensure(&mut self, len: u64) -> io::Result<()> {
        let have_from = self.buf_pos;
        let have_to = self.buf_pos + self.buf.len() as u64;
        if self.pos >= have_from && self.pos + len <= have_to {
            return Ok(());
        }
        let want = (len.max(self.chunk as u64)).min(self.end - self.pos) as usize;
        self.buf.resize(want, 0);
        self.file.read_exact_at(&mut self.buf, self.pos)?;
        self.buf_pos = self.pos;
        Ok(())
    }

    /// The next whole batch: its summary and bytes. `None` at the end, at a
    /// partial tail, or when 17 or fewer bytes remain.
    pub fn next_batch(&mut self) -> Option<Result<(BatchSummary, &[u8]), ScanError>> {
        if self.pos + HEADER_SIZE_UP_TO_MAGIC as u64 >= self.end {
            return None;
        }
        if let Err(e) = self.ensure(HEADER_SIZE_UP_TO_MAGIC as u64) {
            return Some(Err(ScanError::Io(e)));
        }
        let at = (self.pos - self.buf_pos) as usize;
        let prefix = match BatchPrefix::parse(&self.buf[at..]) {
            Ok(p) => p,
            Err(_) => return Some(Err(ScanError::Corrupt { position: self.pos })),
        };
        let size = prefix.total_size() as u64;
        if self.pos + size > self.end {
            return None;
        }
        if let Err(e) = self.ensure(size) {
            return Some(Err(ScanError::Io(e)));
        }
        let at = (self.pos - self.buf_pos) as usize;
        let bytes = &self.buf[at..at + size as usize];
        let summary = BatchSummary::of(self.pos, &prefix, bytes);
        self.pos += size;
        Some(Ok((summary, bytes)))
    }

    /// Like [`Self::next_batch`] but reads only the header (61 bytes) of
    /// each batch: for lookups that skip over batches.
    pub fn next_header(&mut self) -> Option<Result<BatchSummary, ScanError>> {
        if self.pos + HEADER_SIZE_UP_TO_MAGIC as u64 >= self.end {
            return None;
        }
        let want = (RECORD_BATCH_OVERHEAD as u64).min(self.end - self.pos);
        if let Err(e) = self.ensure(want) {
            return Some(Err(ScanError::Io(e)));
        }
        let at = (self.pos - self.buf_pos) as usize;
        let head = &self.buf[at..at + want as usize];
        let prefix = match BatchPrefix::parse(head) {
            Ok(p) => p,
            Err(_) => return Some(Err(ScanError::Corrupt { position: self.pos })),
        };
        let size = prefix.total_size() as u64;
        if self.pos + size > self.end {
            return None;
        }
        let summary = BatchSummary::of(self.pos, &prefix, head);
        self.pos += size;
        Some(Ok(summary))
    }
}
