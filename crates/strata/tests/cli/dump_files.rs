//! `strata log dump` on index, time-index, transaction-index, snapshot and
//! checkpoint files, in Kafka's line formats: directories written by Strata's
//! own log engine, plus hand-made files for the cases a healthy log never has.

use std::path::Path;

use crate::common::*;
use strata_log::AbortedTxn;
use strata_log::{Offset, ProducerId};

/// (offset, position) pairs of an `.index` file, decoded independently.
fn raw_index(path: &Path) -> Vec<(i64, i32)> {
    let base: i64 = path.file_name().unwrap().to_str().unwrap()[..20]
        .parse()
        .unwrap();
    std::fs::read(path)
        .unwrap()
        .chunks_exact(8)
        .map(|c| {
            (
                base + i32::from_be_bytes([c[0], c[1], c[2], c[3]]) as i64,
                i32::from_be_bytes([c[4], c[5], c[6], c[7]]),
            )
        })
        .collect()
}

fn raw_time_index(path: &Path) -> Vec<(i64, i64)> {
    let base: i64 = path.file_name().unwrap().to_str().unwrap()[..20]
        .parse()
        .unwrap();
    std::fs::read(path)
        .unwrap()
        .chunks_exact(12)
        .map(|c| {
            (
                i64::from_be_bytes(c[..8].try_into().unwrap()),
                base + i32::from_be_bytes(c[8..].try_into().unwrap()) as i64,
            )
        })
        .collect()
}

#[test]
fn index_and_time_index_of_a_strata_log() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_strata_partition(tmp.path(), "orders", 40, 5, 300, 4000);
    let indexes = files_with(&dir, ".index");
    assert!(indexes.len() >= 2, "expected several segments: {indexes:?}");
    let mut entries_seen = 0;
    for index in &indexes {
        let raw = raw_index(index);
        entries_seen += raw.len();
        let (code, out, err) = run(["log", "dump", "--files", index.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        let mut expected = vec![format!("Dumping {}", index.display())];
        if raw.is_empty() {
            expected.push(format!("{} is empty.", index.display()));
        }
        expected.extend(
            raw.iter()
                .map(|(o, p)| format!("offset: {o} position: {p}")),
        );
        assert_eq!(out.lines().collect::<Vec<_>>(), expected);
        assert!(!err.contains("Mismatches"), "{err}");

        let time = index.with_extension("timeindex");
        let raw_t = raw_time_index(&time);
        let (code, out, err) = run(["log", "dump", "--files", time.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        let mut expected = vec![format!("Dumping {}", time.display())];
        expected.extend(
            raw_t
                .iter()
                .map(|(t, o)| format!("timestamp: {t} offset: {o}")),
        );
        assert_eq!(out.lines().collect::<Vec<_>>(), expected);
        assert!(err.is_empty(), "{err}");
    }
    assert!(
        entries_seen > 0,
        "the interval should have produced index entries"
    );
}

#[test]
fn verify_index_only_and_sanity_check() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_strata_partition(tmp.path(), "t", 30, 5, 300, 1 << 20);
    let index = &files_with(&dir, ".index")[0];
    let path = index.to_str().unwrap();
    let (code, out, _) = run(["log", "dump", "--verify-index-only", "--files", path]);
    assert_eq!(code, 0);
    assert_eq!(out, format!("Dumping {path}\n"));
    let (code, out, _) = run(["log", "dump", "--index-sanity-check", "--files", path]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        format!("Dumping {path}\n{path} passed sanity check.\n")
    );

    // Point the second entry at the wrong batch: its offset no longer matches.
    let raw = raw_index(index);
    assert!(raw.len() >= 2);
    let mut bytes = std::fs::read(index).unwrap();
    bytes[12..16].copy_from_slice(&raw[0].1.to_be_bytes());
    std::fs::write(index, &bytes).unwrap();
    let (code, _, err) = run(["log", "dump", "--verify-index-only", "--files", path]);
    assert_eq!(code, 1);
    let abs = std::path::absolute(index).unwrap();
    let batch_last = raw[0].0;
    assert!(
        err.contains(&format!(
            "Mismatches in :{}\n  Index offset: {}, log offset: {batch_last}\n",
            abs.display(),
            raw[1].0
        )),
        "{err}"
    );

    // A length that is not a whole number of entries fails the sanity check.
    bytes.push(0);
    std::fs::write(index, &bytes).unwrap();
    let (code, _, err) = run(["log", "dump", "--index-sanity-check", "--files", path]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
        "Index file {} is corrupt, found {} bytes which is neither positive nor a multiple of 8",
        abs.display(),
        bytes.len()
    )),
        "{err}"
    );
}

#[test]
fn time_index_errors_are_reported_like_kafka() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_strata_partition(tmp.path(), "t", 30, 5, 300, 1 << 20);
    let time = files_with(&dir, ".timeindex")[0].clone();
    let raw = raw_time_index(&time);
    assert!(raw.len() >= 2, "{raw:?}");
    let mut bytes = std::fs::read(&time).unwrap();
    // Entry 1 gets entry 0's timestamp minus one: out of order and mismatched.
    let ts = raw[0].0 - 1;
    bytes[12..20].copy_from_slice(&ts.to_be_bytes());
    std::fs::write(&time, &bytes).unwrap();
    let (code, out, err) = run(["log", "dump", "--files", time.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.contains(&format!("timestamp: {ts} offset: {}\n", raw[1].1)));
    let abs = std::path::absolute(&time).unwrap();
    assert!(
        err.contains(&format!(
            "Found timestamp mismatch in :{}\n  Index timestamp: {ts}, log timestamp: {}\n",
            abs.display(),
            raw[1].0
        )),
        "{err}"
    );
    assert!(err.contains(&format!(
        "Found out of order timestamp in :{}\n  Index timestamp: {ts}, Previously indexed timestamp: {}\n",
        abs.display(),
        raw[0].0
    )), "{err}");
}

#[test]
fn empty_index_prints_is_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("00000000000000000000.index");
    std::fs::write(&index, b"").unwrap();
    std::fs::write(tmp.path().join("00000000000000000000.log"), b"").unwrap();
    let (code, out, _) = run(["log", "dump", "--files", index.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        format!("Dumping {0}\n{0} is empty.\n", index.display())
    );
}

#[test]
fn txn_index_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("00000000000000000000.txnindex");
    let mut bytes = AbortedTxn::new(ProducerId(6000), Offset(21), Offset(25), Offset(26))
        .encode()
        .to_vec();
    bytes.extend(AbortedTxn::new(ProducerId(7000), Offset(30), Offset(40), Offset(35)).encode());
    std::fs::write(&path, &bytes).unwrap();
    let (code, out, _) = run(["log", "dump", "--files", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        format!(
            "Dumping {}\n\
             version: 0 producerId: 6000 firstOffset: 21 lastOffset: 25 lastStableOffset: 26\n\
             version: 0 producerId: 7000 firstOffset: 30 lastOffset: 40 lastStableOffset: 35\n",
            path.display()
        )
    );
}

/// The snapshot test vector of `docs/kafka-behaviour.md` §6.2.
const SNAPSHOT: &str = "0001b3fd6df500000001000000000000000700010000000400000000000000090000000400000000000003e8ffffffffffffffffffffffff";

#[test]
fn producer_snapshot_lines_and_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("00000000000000000010.snapshot");
    std::fs::write(&path, hex::decode(SNAPSHOT).unwrap()).unwrap();
    let (code, out, _) = run(["log", "dump", "--files", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        format!(
            "Dumping {}\nproducerId: 7 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty \
             lastTimestamp: 1000 firstSequence: 0 lastSequence: 4 lastOffset: 9 offsetDelta: 4 timestamp: 1000\n",
            path.display()
        )
    );
    let mut bad = hex::decode(SNAPSHOT).unwrap();
    bad[20] ^= 0xff;
    std::fs::write(&path, &bad).unwrap();
    let (code, _, err) = run(["log", "dump", "--files", path.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "Snapshot is corrupt (CRC is no longer valid). Stored crc: {}. Computed crc: ",
            0xb3fd6df5u32
        )),
        "{err}"
    );
}

#[test]
fn checkpoints_metadata_and_unknown_files() {
    let tmp = tempfile::tempdir().unwrap();
    let rp = tmp.path().join("recovery-point-offset-checkpoint");
    std::fs::write(&rp, "0\n2\norders 0 1532\norders 1 977\n").unwrap();
    let epochs = tmp.path().join("leader-epoch-checkpoint");
    std::fs::write(&epochs, "0\n2\n0 0\n3 120\n").unwrap();
    let unknown = tmp.path().join("00000000000000000000.log.deleted");
    std::fs::write(&unknown, b"x").unwrap();
    // Kafka's stderr exactly: without Strata's progress lines.
    let (code, out, err) = run([
        "log",
        "dump",
        "--no-progress",
        "--files",
        &format!(
            "{},{},{}",
            rp.display(),
            epochs.display(),
            unknown.display()
        ),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "Dumping {}\ntopic: orders partition: 0 offset: 1532\ntopic: orders partition: 1 offset: 977\n\
             Dumping {}\nepoch: 0 startOffset: 0\nepoch: 3 startOffset: 120\nDumping {}\n",
            rp.display(),
            epochs.display(),
            unknown.display()
        )
    );
    assert_eq!(
        err,
        format!("Ignoring unknown file {}\n", unknown.display())
    );

    std::fs::write(&rp, "0\n3\norders 0 1532\n").unwrap();
    let (code, _, err) = run(["log", "dump", "--files", rp.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("expected 3 entries"), "{err}");
}

#[test]
fn max_bytes_and_trailing_bytes() {
    let (m, file) = manifest(&fixtures().join("data-none"));
    let batches = m["batches"].as_array().unwrap();
    let two = batches[0]["size"].as_u64().unwrap() + batches[1]["size"].as_u64().unwrap();
    let (code, out, _) = run([
        "log",
        "dump",
        "--max-bytes",
        &(two + 10).to_string(),
        "--files",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("baseOffset:")).count(),
        2
    );
    assert!(
        !out.contains("invalid bytes"),
        "--max-bytes hides the trailing-bytes line, as in Kafka"
    );

    // A batch cut short at the end of the file.
    let tmp = tempfile::tempdir().unwrap();
    let cut = tmp.path().join(file.file_name().unwrap());
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&cut, &bytes[..two as usize + 100]).unwrap();
    let (code, out, _) = run(["log", "dump", "--files", cut.to_str().unwrap()]);
    assert_eq!(
        code, 0,
        "a partial last batch is what Kafka reports, not a failure"
    );
    assert!(
        out.ends_with(&format!(
            "Found 100 invalid bytes at the end of {}\n",
            cut.file_name().unwrap().to_str().unwrap()
        )),
        "{out}"
    );
}

#[test]
fn flipped_crc_byte_prints_isvalid_false_and_fails() {
    let (_, file) = manifest(&fixtures().join("data-zstd"));
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join(file.file_name().unwrap());
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[17] ^= 0x01;
    std::fs::write(&copy, &bytes).unwrap();
    let (code, out, _) = run(["log", "dump", "--files", copy.to_str().unwrap()]);
    assert_eq!(code, 1);
    let first = out.lines().nth(2).unwrap();
    assert!(
        first.starts_with("baseOffset: 0 lastOffset: 24 "),
        "{first}"
    );
    assert!(first.ends_with(" isvalid: false"), "{first}");
}

#[test]
fn missing_files_and_usage_errors_exit_2() {
    let (code, _, err) = run([
        "log",
        "dump",
        "--files",
        "/nonexistent/00000000000000000000.log",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("/nonexistent/00000000000000000000.log"),
        "{err}"
    );
    let (code, _, err) = run(["log", "dump"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("Missing required argument \"[files]\""),
        "{err}"
    );
    let (code, _, _) = run(["log", "dump", "--no-such-flag"]);
    assert_eq!(code, 2);
}

#[test]
fn json_for_index_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_strata_partition(tmp.path(), "t", 30, 5, 300, 1 << 20);
    let index = files_with(&dir, ".index").remove(0);
    let time = files_with(&dir, ".timeindex").remove(0);
    let (code, out, err) = run([
        "log",
        "dump",
        "--json",
        "--files",
        &format!("{},{}", index.display(), time.display()),
    ]);
    assert_eq!(code, 0, "{err}");
    let objs: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objs.len(), 2);
    assert_eq!(objs[0]["kind"], "index");
    let entries = objs[0]["entries"].as_array().unwrap();
    let raw = raw_index(&index);
    assert_eq!(entries.len(), raw.len());
    for (e, (o, p)) in entries.iter().zip(&raw) {
        assert_eq!(e["offset"], *o);
        assert_eq!(e["position"], *p);
    }
    assert_eq!(objs[0]["mismatches"], serde_json::json!([]));
    assert_eq!(objs[1]["kind"], "timeindex");
    let raw_t = raw_time_index(&time);
    let t = objs[1]["entries"].as_array().unwrap();
    assert_eq!(t.len(), raw_t.len());
    assert_eq!(t[0]["timestamp"], raw_t[0].0);
    assert_eq!(t[0]["offset"], raw_t[0].1);
    assert_eq!(objs[1]["timestamp_mismatches"], serde_json::json!([]));
}

#[test]
fn kraft_and_leader_change_control_records() {
    use strata_log::batch::BatchBuilder;
    use strata_log::Timestamp;
    let mut header = 0i16.to_be_bytes().to_vec();
    header.extend_from_slice(&1234i64.to_be_bytes());
    header.push(0);
    let mut b = BatchBuilder::new(Offset(0)).control(true);
    b.append(Timestamp(1000), Some(&[0, 0, 0, 3]), Some(&header), &[]);
    b.append(
        Timestamp(1000),
        Some(&[0, 0, 0, 5]),
        Some(&[0, 0, 0, 1, 0]),
        &[],
    );
    b.append(Timestamp(1000), Some(&[0, 0, 0, 2]), Some(&[0, 0]), &[]);
    b.append(Timestamp(1000), Some(&[0, 0, 0, 4]), Some(&[0, 0, 0]), &[]);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp
        .path()
        .join("00000000000000000000-0000000001.checkpoint");
    std::fs::write(&path, b.build()).unwrap();
    let (code, out, err) = run([
        "log",
        "dump",
        "--deep-iteration",
        "--files",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1], "Snapshot end offset: 0, epoch: 1");
    assert!(
        lines[2].starts_with("baseOffset: 0 lastOffset: 3 count: 4 "),
        "{}",
        lines[2]
    );
    let meta = "CreateTime: 1000 keySize: 4";
    assert_eq!(
        lines[3],
        format!("| offset: 0 {meta} valueSize: 11 sequence: -1 headerKeys: [] SnapshotHeader {{\"version\":0,\"lastContainedLogTimestamp\":1234}}")
    );
    assert_eq!(
        lines[4],
        format!("| offset: 1 {meta} valueSize: 5 sequence: -1 headerKeys: [] KRaftVersion {{\"version\":0,\"kRaftVersion\":1}}")
    );
    assert_eq!(
        lines[5],
        format!("| offset: 2 {meta} valueSize: 2 sequence: -1 headerKeys: [] controlType: LEADER_CHANGE(2)")
    );
    assert_eq!(
        lines[6],
        format!("| offset: 3 {meta} valueSize: 3 sequence: -1 headerKeys: [] SnapshotFooter {{\"version\":0}}")
    );
}
