//! The last batch of every producer in a log (Kafka
//! `lastRecordsOfActiveProducers`), which the cleaner keeps at least as an
//! empty header so that sequence and epoch checks survive compaction.
//!
//! Strata's log does not hold a producer-state table, so the cleaner derives
//! the same facts from the batch headers, applying Kafka's entry rules: a
//! data batch records its last offset (a new epoch first clears it); a
//! marker with a new epoch clears it. Producer expiration is not applied:
//! an idle producer's last batch stays until the producer writes again.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::batch::{BatchScanner, BatchView, MAGIC_V2};
use crate::producer_state::LastRecord;
use crate::types::{Offset, ProducerId};

const CHUNK: usize = 1 << 20;

/// Fold the batches of `file[..size]` into `producers`.
///
/// # Errors
/// The read error. A corrupt batch ends the scan of that file.
pub fn scan_producers(
    file: &File,
    size: u64,
    producers: &mut HashMap<ProducerId, LastRecord>,
) -> std::io::Result<()> {
    scan_producers_counting(file, size, producers, None)
}

/// [`scan_producers`], also adding to `count.2` the record count of every
/// batch ending at or after `count.0` and starting before `count.1`.
///
/// # Errors
/// As [`scan_producers`].
pub fn scan_producers_counting(
    file: &File,
    size: u64,
    producers: &mut HashMap<ProducerId, LastRecord>,
    count: Option<(Offset, Offset, &mut u64)>,
) -> std::io::Result<()> {
    scan_with_buffer(file, size, producers, count, &mut Vec::new())
}

/// [`scan_producers_counting`] reading through `buf` (grown to at least
/// [`CHUNK`] and kept, so one buffer serves every segment of a log).
fn scan_with_buffer(
    file: &File,
    size: u64,
    producers: &mut HashMap<ProducerId, LastRecord>,
    mut count: Option<(Offset, Offset, &mut u64)>,
    buf: &mut Vec<u8>,
) -> std::io::Result<()> {
    if buf.len() < CHUNK {
        buf.resize(CHUNK, 0);
    }
    let mut pos = 0u64;
    while pos < size {
        let want = (size - pos).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..want], pos)?;
        let mut scanner = BatchScanner::new(&buf[..want]);
        let mut consumed = 0;
        for item in scanner.by_ref() {
            let Ok((at, prefix)) = item else {
                return Ok(());
            };
            consumed = at + prefix.total_size();
            if prefix.magic < MAGIC_V2 {
                if let Some((from, to, n)) = count.as_mut() {
                    if prefix.base_offset >= from.0 && prefix.base_offset < to.0 {
                        **n += 1;
                    }
                }
                continue;
            }
            let Ok(b) = BatchView::parse(&buf[at..consumed]) else {
                return Ok(());
            };
            if let Some((from, to, n)) = count.as_mut() {
                if b.last_offset() >= *from && b.base_offset() < *to {
                    **n += b.records_count().max(0) as u64;
                }
            }
            if !b.has_producer_id() {
                continue;
            }
            let e = producers.entry(b.producer_id()).or_insert(LastRecord {
                last_data_offset: None,
                producer_epoch: b.producer_epoch(),
            });
            if e.producer_epoch != b.producer_epoch() {
                e.producer_epoch = b.producer_epoch();
                e.last_data_offset = None;
            }
            if !b.is_control() {
                e.last_data_offset = Some(b.last_offset());
            }
        }
        if consumed == 0 {
            // One batch larger than the buffer: grow and retry.
            if buf.len() as u64 >= size - pos {
                return Ok(());
            }
            let n = buf.len() * 2;
            buf.resize(n, 0);
            continue;
        }
        pos += consumed as u64;
    }
    Ok(())
}

/// The last record of every producer over `segments` (oldest first).
///
/// # Errors
/// The first read error.
pub fn active_producers(
    segments: &[std::sync::Arc<crate::segment::Segment>],
) -> Result<HashMap<ProducerId, LastRecord>, crate::error::LogError> {
    Ok(active_producers_and_records(segments, Offset(0), Offset(0))?.0)
}

/// [`active_producers`] plus the number of records in batches overlapping
/// `[from, to)` (an upper bound on the distinct keys there).
///
/// # Errors
/// The first read error.
pub fn active_producers_and_records(
    segments: &[std::sync::Arc<crate::segment::Segment>],
    from: Offset,
    to: Offset,
) -> Result<(HashMap<ProducerId, LastRecord>, u64), crate::error::LogError> {
    let mut producers = HashMap::new();
    let mut n = 0u64;
    let mut buf = Vec::new();
    for s in segments {
        scan_with_buffer(
            &*s.file()?,
            s.size(),
            &mut producers,
            Some((from, to, &mut n)),
            &mut buf,
        )
        .map_err(|e| crate::error::LogError::io(s.log_path(), "scan producers", e))?;
    }
    Ok((producers, n))
}
