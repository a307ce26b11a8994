//! Guards the index files against Kafka-written segments: indexes built with
//! Kafka's sparse-entry rule over the fixture `.log` files have the exact
//! bytes Kafka would write, survive a close/reopen, and every offset and
//! timestamp lookup lands on the batch Kafka's own reader reports.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use strata_log::format;
use strata_log::{AbortedTxn, OffsetIndex, TimeIndex, TransactionIndex};
use strata_log::{Offset, Position, ProducerId, Timestamp};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/kafka-records")
}

#[derive(Debug, Clone)]
struct Batch {
    position: u32,
    size: u32,
    base_offset: i64,
    last_offset: i64,
    max_timestamp: i64,
    producer_id: i64,
    transactional: bool,
    control: bool,
}

struct Fixture {
    name: String,
    base: Offset,
    log: PathBuf,
    batches: Vec<Batch>,
}

fn load(name: &str) -> Fixture {
    let dir = fixtures().join(name);
    let manifest: Value =
        serde_json::from_slice(&fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let file = manifest["file"].as_str().unwrap();
    let base = format::offset_from_file_name(file).unwrap();
    let log = dir.join(file);
    let bytes = fs::read(&log).unwrap();
    let batches: Vec<Batch> = manifest["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| Batch {
            position: b["position"].as_u64().unwrap() as u32,
            size: b["size"].as_u64().unwrap() as u32,
            base_offset: b["base_offset"].as_i64().unwrap(),
            last_offset: b["last_offset"].as_i64().unwrap(),
            max_timestamp: b["max_timestamp"].as_i64().unwrap(),
            producer_id: b["producer_id"].as_i64().unwrap(),
            transactional: b["is_transactional"].as_bool().unwrap(),
            control: b["is_control"].as_bool().unwrap(),
        })
        .collect();
    // The manifest agrees with the bytes: each batch's prefix is where it says.
    for b in &batches {
        let p = b.position as usize;
        let base_offset = i64::from_be_bytes(bytes[p..p + 8].try_into().unwrap());
        let length = i32::from_be_bytes(bytes[p + 8..p + 12].try_into().unwrap());
        assert_eq!(
            (base_offset, length as u32 + 12),
            (b.base_offset, b.size),
            "{name}"
        );
    }
    Fixture {
        name: name.to_owned(),
        base,
        log,
        batches,
    }
}

const ALL: [&str; 9] = [
    "data-none",
    "data-gzip",
    "data-snappy",
    "data-lz4",
    "data-zstd",
    "base-offset-12345678",
    "log-append-time",
    "idempotent-and-transactional",
    "delete-horizon",
];

/// Expected entries under Kafka's recovery rule (§8.6): an entry (batch
/// last offset, batch position) whenever more than `interval` bytes passed
/// since the last entry; the time index gets the running max timestamp.
/// (offset, position) entries of `.index` and (timestamp, offset) entries of `.timeindex`.
type ExpectedEntries = (Vec<(i64, u32)>, Vec<(i64, i64)>);

fn expected_entries(f: &Fixture, interval: u32) -> ExpectedEntries {
    let (mut offsets, mut times) = (Vec::new(), Vec::new());
    let (mut last_indexed, mut max_ts, mut offset_of_max) = (0u32, -1i64, f.base.get());
    for b in &f.batches {
        if b.max_timestamp > max_ts {
            max_ts = b.max_timestamp;
            offset_of_max = b.last_offset;
        }
        if b.position - last_indexed > interval {
            offsets.push((b.last_offset, b.position));
            if times.last().is_none_or(|&(t, _)| max_ts > t) && max_ts > -1 {
                times.push((max_ts, offset_of_max));
            }
            last_indexed = b.position;
        }
    }
    if times.last().is_none_or(|&(t, _)| max_ts > t) && max_ts > -1 {
        times.push((max_ts, offset_of_max)); // the final entry at close
    }
    (offsets, times)
}

fn build(f: &Fixture, dir: &Path, interval: u32) -> (PathBuf, PathBuf) {
    let index_path = format::index_file(dir, f.base, "");
    let time_path = format::time_index_file(dir, f.base, "");
    let mut index = OffsetIndex::open(
        &strata_log::fs::StdFs::shared(),
        &index_path,
        f.base,
        1 << 20,
        true,
    )
    .unwrap();
    let mut time = TimeIndex::open(
        &strata_log::fs::StdFs::shared(),
        &time_path,
        f.base,
        1 << 20,
        true,
    )
    .unwrap();
    let (mut last_indexed, mut max_ts, mut offset_of_max) = (0u32, Timestamp::NONE, f.base);
    for b in &f.batches {
        if Timestamp(b.max_timestamp) > max_ts {
            max_ts = Timestamp(b.max_timestamp);
            offset_of_max = Offset(b.last_offset);
        }
        if b.position - last_indexed > interval {
            index
                .append(Offset(b.last_offset), Position(b.position))
                .unwrap();
            time.maybe_append(max_ts, offset_of_max, false).unwrap();
            last_indexed = b.position;
        }
    }
    time.maybe_append(max_ts, offset_of_max, true).unwrap();
    index.close().unwrap();
    time.close().unwrap();
    (index_path, time_path)
}

fn expected_bytes(f: &Fixture, offsets: &[(i64, u32)], times: &[(i64, i64)]) -> (Vec<u8>, Vec<u8>) {
    let rel = |o: i64| ((o - f.base.get()) as i32).to_be_bytes();
    let index = offsets
        .iter()
        .flat_map(|&(o, p)| [rel(o), (p as i32).to_be_bytes()].concat())
        .collect();
    let time = times
        .iter()
        .flat_map(|&(t, o)| [t.to_be_bytes().to_vec(), rel(o).to_vec()].concat())
        .collect();
    (index, time)
}

/// Kafka's translateOffset: scan from the index position to the first batch
/// whose last offset is >= target.
fn batch_for(f: &Fixture, from: Position, target: i64) -> Option<usize> {
    f.batches
        .iter()
        .position(|b| b.position >= from.get() && b.last_offset >= target)
}

#[test]
fn indexes_over_kafka_segments_have_kafkas_bytes_and_answer_lookups() {
    for name in ALL {
        let f = load(name);
        for interval in [0u32, 700, 4096, u32::MAX] {
            let dir = tempfile::tempdir().unwrap();
            let (index_path, time_path) = build(&f, dir.path(), interval);
            let (offsets, times) = expected_entries(&f, interval);
            if interval == 0 {
                // Every batch after the first gets an entry.
                assert_eq!(offsets.len(), f.batches.len() - 1, "{}", f.name);
            }
            let (index_bytes, time_bytes) = expected_bytes(&f, &offsets, &times);
            let ctx = format!("{} interval {interval}", f.name);
            assert_eq!(fs::read(&index_path).unwrap(), index_bytes, "{ctx}");
            assert_eq!(fs::read(&time_path).unwrap(), time_bytes, "{ctx}");

            // Reopened as Kafka does for an inactive segment.
            let index = OffsetIndex::open(
                &strata_log::fs::StdFs::shared(),
                &index_path,
                f.base,
                1 << 20,
                false,
            )
            .unwrap();
            let time = TimeIndex::open(
                &strata_log::fs::StdFs::shared(),
                &time_path,
                f.base,
                1 << 20,
                false,
            )
            .unwrap();
            index.sanity_check().unwrap();
            time.check_all_entries().unwrap();
            assert_eq!(index.entries(), offsets.len(), "{ctx}");

            let first = f.batches[0].base_offset;
            let last = f.batches.last().unwrap().last_offset;
            for target in first - 2..=last + 2 {
                let start = index.lookup(Offset(target)).position;
                let want = f.batches.iter().position(|b| b.last_offset >= target);
                assert_eq!(batch_for(&f, start, target), want, "{ctx} offset {target}");
            }
            // §4.4: find the first batch holding a timestamp >= ts.
            for b in &f.batches {
                let ts = b.max_timestamp;
                let entry = time.lookup(Timestamp(ts));
                let pos = index.lookup(entry.offset.max(f.base)).position;
                let found = f
                    .batches
                    .iter()
                    .position(|c| c.position >= pos.get() && c.max_timestamp >= ts);
                let want = f.batches.iter().position(|c| c.max_timestamp >= ts);
                assert_eq!(found, want, "{ctx} timestamp {ts}");
            }
            assert!(f.log.exists());
        }
    }
}

#[test]
fn aborted_transaction_of_the_fixture_is_indexed_and_collected() {
    let f = load("idempotent-and-transactional");
    let markers: Vec<&Batch> = f.batches.iter().filter(|b| b.control).collect();
    assert_eq!(markers.len(), 2, "a COMMIT and an ABORT marker");
    let abort = markers
        .iter()
        .find(|m| m.producer_id == 6000)
        .expect("producer 6000 aborts");
    let first = f
        .batches
        .iter()
        .filter(|b| b.producer_id == 6000 && b.transactional && !b.control)
        .map(|b| b.base_offset)
        .min()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = format::txn_index_file(dir.path(), f.base, "");
    let mut txn = TransactionIndex::open(&strata_log::fs::StdFs::shared(), &path, f.base).unwrap();
    let record = AbortedTxn::new(
        ProducerId(6000),
        Offset(first),
        Offset(abort.last_offset),
        Offset(abort.last_offset + 1),
    );
    txn.append(&record).unwrap();
    txn.close().unwrap();
    let bytes = fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 34);
    assert_eq!(&bytes[..2], [0, 0]);
    assert_eq!(i64::from_be_bytes(bytes[2..10].try_into().unwrap()), 6000);
    let txn = TransactionIndex::open(&strata_log::fs::StdFs::shared(), &path, f.base).unwrap();
    txn.sanity_check().unwrap();
    let all = txn
        .collect_aborted_txns(Offset(0), Offset(abort.last_offset + 1))
        .unwrap();
    assert_eq!(all.aborted, [record]);
    assert!(all.is_complete);
    let after = txn
        .collect_aborted_txns(Offset(abort.last_offset + 1), Offset(i64::MAX))
        .unwrap();
    assert!(after.aborted.is_empty() && !after.is_complete);
}
