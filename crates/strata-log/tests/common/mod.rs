//! Helpers shared by the engine's integration tests: an index decoder that
//! is independent of the crate's index code, Kafka's sparse-index rule
//! computed from batch sizes, and small constructors.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_log::batch::BatchBuilder;
use strata_log::{DirHealth, LoadParams, Log, LogConfig, MockClock, Offset, ReadBound, Timestamp};

/// `tests/fixtures/kafka-records` in the repository, or `$STRATA_FIXTURES`.
pub fn fixtures_dir() -> PathBuf {
    match std::env::var_os("STRATA_FIXTURES") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/kafka-records"
        )),
    }
}

/// One batch as plain byte parsing sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawBatch {
    pub position: usize,
    pub size: usize,
    pub base: i64,
    pub last: i64,
    pub epoch: i32,
    pub crc: u32,
    pub max_ts: i64,
    pub attributes: i16,
}

fn be64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}
fn be32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

/// Every batch readable from the log start to the log end, in order, with
/// its bytes (a batch's `position` is within the read that returned it).
pub fn read_all_batches(log: &Log) -> Vec<(RawBatch, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = log.log_start_offset();
    while at < log.log_end_offset() {
        let d = log.read(at, 1 << 20, ReadBound::LogEnd, false).unwrap();
        let bytes = d.read_to_vec().unwrap();
        let batches = split_batches(&bytes);
        let Some(last) = batches.last() else { break };
        at = Offset(last.last + 1);
        for b in batches {
            let own = bytes[b.position..b.position + b.size].to_vec();
            out.push((b, own));
        }
    }
    out
}

/// Split a `.log` image into v2 batches (stops at a partial or short tail).
pub fn split_batches(bytes: &[u8]) -> Vec<RawBatch> {
    let mut out = Vec::new();
    let mut p = 0;
    while p + 61 <= bytes.len() {
        let size = be32(bytes, p + 8) as usize + 12;
        if size < 61 || p + size > bytes.len() {
            break;
        }
        out.push(RawBatch {
            position: p,
            size,
            base: be64(bytes, p),
            last: be64(bytes, p) + be32(bytes, p + 23) as i64,
            epoch: be32(bytes, p + 12),
            crc: be32(bytes, p + 17) as u32,
            max_ts: be64(bytes, p + 35),
            attributes: i16::from_be_bytes([bytes[p + 21], bytes[p + 22]]),
        });
        p += size;
    }
    out
}

/// `(relative offset, position)` entries of a `.index` file; asserts the
/// length is a whole number of entries.
pub fn read_offset_index(path: &Path) -> Vec<(i32, i32)> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(b.len() % 8, 0, "{}", path.display());
    b.chunks(8).map(|c| (be32(c, 0), be32(c, 4))).collect()
}

/// `(timestamp, relative offset)` entries of a `.timeindex` file.
pub fn read_time_index(path: &Path) -> Vec<(i64, i32)> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(b.len() % 12, 0, "{}", path.display());
    b.chunks(12).map(|c| (be64(c, 0), be32(c, 8))).collect()
}

/// Offset-index and time-index entries, as decoded from the files.
pub type ExpectedEntries = (Vec<(i32, i32)>, Vec<(i64, i32)>);

/// The entries Kafka writes for one segment whose appends are `appends`
/// (each a list of batches appended together), with `interval` =
/// `index.interval.bytes`; `closed` adds the final time-index entry.
pub fn expected_entries(
    base: i64,
    appends: &[Vec<RawBatch>],
    interval: usize,
    closed: bool,
) -> ExpectedEntries {
    let mut offsets = Vec::new();
    let mut times: Vec<(i64, i32)> = Vec::new();
    let mut since = 0usize;
    let mut pos = 0usize;
    let mut max: (i64, i64) = (-1, base);
    let push_time = |times: &mut Vec<(i64, i32)>, max: (i64, i64)| {
        let last = times.last().map(|t| t.0).unwrap_or(-1);
        if max.0 > last {
            times.push((max.0, (max.1 - base) as i32));
        }
    };
    for append in appends {
        let size: usize = append.iter().map(|b| b.size).sum();
        let last = append.last().unwrap().last;
        for b in append {
            if b.max_ts > max.0 {
                max = (b.max_ts, append.last().unwrap().last.min(b.last));
            }
        }
        if since > interval {
            offsets.push(((last - base) as i32, pos as i32));
            push_time(&mut times, max);
            since = 0;
        }
        since += size;
        pos += size;
    }
    if closed {
        push_time(&mut times, max);
    }
    (offsets, times)
}

/// A client batch of `n` records with timestamps `ts, ts+1, ...`.
pub fn client_batch(n: usize, ts: i64, value_len: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0));
    let v = vec![b'x'; value_len];
    for i in 0..n {
        b.append(Timestamp(ts + i as i64), Some(b"key"), Some(&v), &[]);
    }
    b.build()
}

/// A batch carrying offsets `base..base+n` (follower append), timestamps
/// given per record.
pub fn follower_batch(base: i64, timestamps: &[i64], value_len: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(base));
    let v = vec![b'y'; value_len];
    for ts in timestamps {
        b.append(Timestamp(*ts), Some(b"k"), Some(&v), &[]);
    }
    b.build()
}

/// Open `<root>/<name>` as a log.
pub fn open_log(
    root: &Path,
    name: &str,
    cfg: LogConfig,
    clock: &Arc<MockClock>,
    params: LoadParams,
) -> Arc<Log> {
    Log::open(
        &root.join(name),
        cfg,
        params,
        clock.clone(),
        DirHealth::new(root),
    )
    .unwrap()
}

/// Sorted file names in `dir`.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// Paths of `<base>.log/.index/.timeindex` in `dir`.
pub fn seg_paths(dir: &Path, base: i64) -> (PathBuf, PathBuf, PathBuf) {
    (
        dir.join(format!("{base:020}.log")),
        dir.join(format!("{base:020}.index")),
        dir.join(format!("{base:020}.timeindex")),
    )
}
