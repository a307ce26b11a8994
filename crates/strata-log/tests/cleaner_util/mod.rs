//! Helpers for the cleaner's integration tests: a compacted log in a temp
//! dir (optionally on a fault-injecting file system), keyed appends and a
//! full read-back.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_log::batch::{BatchBuilder, BatchScanner, BatchView};
use strata_log::fs::SharedFs;
use strata_log::{
    CleanupPolicy, DirHealth, LoadParams, Log, LogConfig, MockClock, Offset, ReadBound, Timestamp,
};

pub const T0: i64 = 1_700_000_000_000;

/// A compacted topic config with small segments.
pub fn compact_config(segment_bytes: i32) -> LogConfig {
    LogConfig {
        segment_bytes,
        cleanup_policy: CleanupPolicy::COMPACT,
        delete_retention_ms: 10_000,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

/// Open (or reopen after a simulated crash) `<root>/t-0`.
pub fn open(root: &Path, cfg: &LogConfig, clock: &Arc<MockClock>) -> Arc<Log> {
    open_on(root, cfg, clock, strata_log::fs::StdFs::shared())
}

/// [`open`] with every file mutation of the log going through `fs`.
pub fn open_on(root: &Path, cfg: &LogConfig, clock: &Arc<MockClock>, fs: SharedFs) -> Arc<Log> {
    let dir = root.join("t-0");
    let log = Log::open(
        &dir,
        cfg.clone(),
        LoadParams {
            fs,
            ..LoadParams::default()
        },
        clock.clone(),
        DirHealth::new(root),
    )
    .expect("open log");
    log.update_high_watermark(log.log_end_offset());
    log
}

pub fn partition_dir(root: &Path) -> PathBuf {
    root.join("t-0")
}

/// Append one uncompressed batch of `records` at the log end; the high
/// watermark follows (everything is committed).
pub fn append(log: &Log, ts: i64, records: &[(&str, Option<&str>)]) -> Offset {
    let base = log.log_end_offset();
    let mut b = BatchBuilder::new(base);
    for (k, v) in records {
        b.append(Timestamp(ts), Some(k.as_bytes()), v.map(str::as_bytes), &[]);
    }
    log.append_as_follower(&b.build()).expect("append");
    log.update_high_watermark(log.log_end_offset());
    base
}

/// Append prebuilt batch bytes (offsets already assigned).
pub fn append_raw(log: &Log, bytes: &[u8]) {
    log.append_as_follower(bytes).expect("append raw");
    log.update_high_watermark(log.log_end_offset());
}

/// One record as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rec {
    pub offset: Offset,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub control: bool,
}

/// One batch header as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hdr {
    pub base: Offset,
    pub last: Offset,
    pub count: i32,
    pub attributes: i16,
    pub base_timestamp: Timestamp,
    pub max_timestamp: Timestamp,
    pub delete_horizon: Option<Timestamp>,
    pub producer_id: i64,
    pub base_sequence: i32,
}

/// Every batch and record of `bytes`.
pub fn parse(bytes: &[u8]) -> (Vec<Hdr>, Vec<Rec>) {
    let mut hdrs = Vec::new();
    let mut recs = Vec::new();
    for item in BatchScanner::new(bytes) {
        let (pos, _) = item.expect("batch");
        let b = BatchView::parse(&bytes[pos..]).expect("view");
        assert!(b.is_crc_valid(), "CRC of batch at {}", b.base_offset());
        hdrs.push(Hdr {
            base: b.base_offset(),
            last: b.last_offset(),
            count: b.records_count(),
            attributes: b.attributes(),
            base_timestamp: b.base_timestamp(),
            max_timestamp: b.max_timestamp(),
            delete_horizon: b.delete_horizon(),
            producer_id: b.producer_id().0,
            base_sequence: b.base_sequence(),
        });
        for r in b.records().expect("records") {
            recs.push(Rec {
                offset: r.offset,
                key: r.key,
                value: r.value,
                control: b.is_control(),
            });
        }
    }
    (hdrs, recs)
}

/// The whole log from its start, as bytes (a read returns one segment's
/// data at most, so this reads on until the log end).
pub fn read_bytes(log: &Log) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = log.log_start_offset();
    while at < log.log_end_offset() {
        let d = log
            .read(at, usize::MAX / 2, ReadBound::LogEnd, true)
            .expect("read");
        let bytes = d.read_to_vec().expect("slices");
        let Some(last) = parse(&bytes).0.last().map(|h| h.last) else {
            break;
        };
        out.extend_from_slice(&bytes);
        at = last.plus(1);
    }
    out
}

pub fn read_all(log: &Log) -> (Vec<Hdr>, Vec<Rec>) {
    parse(&read_bytes(log))
}

/// The latest write per key, as a compacted log must answer.
#[derive(Clone, Debug, Default)]
pub struct Model {
    pub latest: BTreeMap<Vec<u8>, (Offset, Option<Vec<u8>>)>,
    /// Every record ever written, by offset.
    pub history: BTreeMap<Offset, (Vec<u8>, Option<Vec<u8>>)>,
}

impl Model {
    pub fn write(&mut self, base: Offset, records: &[(&str, Option<&str>)]) {
        for (i, (k, v)) in records.iter().enumerate() {
            let o = base.plus(i as i64);
            let v = v.map(|v| v.as_bytes().to_vec());
            self.latest.insert(k.as_bytes().to_vec(), (o, v.clone()));
            self.history.insert(o, (k.as_bytes().to_vec(), v));
        }
    }

    /// Check the log's data records against the model: nothing invented,
    /// offsets strictly increasing, and the latest record of every key is
    /// the model's (a deleted key may also be gone entirely).
    pub fn check(&self, recs: &[Rec]) {
        let mut last = Offset(-1);
        let mut seen: BTreeMap<Vec<u8>, (Offset, Option<Vec<u8>>)> = BTreeMap::new();
        for r in recs.iter().filter(|r| !r.control) {
            assert!(
                r.offset > last,
                "offsets increase: {} after {}",
                r.offset,
                last
            );
            last = r.offset;
            let key = r.key.clone().expect("keyed");
            let (hk, hv) = self
                .history
                .get(&r.offset)
                .unwrap_or_else(|| panic!("record at {} was never written", r.offset));
            assert_eq!((&key, &r.value), (hk, hv), "record at {} changed", r.offset);
            seen.insert(key, (r.offset, r.value.clone()));
        }
        for (k, (o, v)) in &self.latest {
            match (seen.get(k), v) {
                (Some(got), _) => assert_eq!(
                    got,
                    &(*o, v.clone()),
                    "latest of key {:?}",
                    String::from_utf8_lossy(k)
                ),
                (None, None) => {}
                (None, Some(_)) => {
                    panic!("key {:?} lost (latest at {o})", String::from_utf8_lossy(k))
                }
            }
        }
    }
}

/// Names of the files in a directory, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
