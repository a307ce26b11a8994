//! `strata log verify` passes on Kafka-written fixtures and Strata-written
//! directories, and fails (exit 1) naming the file and byte position on each
//! kind of damage: a flipped CRC byte, a batch truncated mid-file, an index
//! entry inside a batch, a non-monotonic index, bad checkpoints.

use std::path::{Path, PathBuf};

use crate::common::*;
use serde_json::Value;

/// A copy of a fixture segment in a partition directory `<tmp>/<name>-0`.
fn fixture_partition(tmp: &Path, fixture: &str) -> (PathBuf, PathBuf, Value) {
    let (m, file) = manifest(&fixtures().join(fixture));
    let dir = tmp.join(format!("{fixture}-0"));
    std::fs::create_dir_all(&dir).unwrap();
    let seg = dir.join(file.file_name().unwrap());
    std::fs::write(&seg, std::fs::read(&file).unwrap()).unwrap();
    (dir, seg, m)
}

fn verify(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["log", "verify"];
    all.extend_from_slice(args);
    run(all)
}

fn findings(dir: &Path) -> (i32, Vec<Value>) {
    let (code, out, err) = verify(&["--json", dir.to_str().unwrap()]);
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, report["findings"].as_array().unwrap().clone())
}

#[test]
fn every_fixture_verifies_deeply() {
    for dir in fixture_dirs() {
        let (code, out, err) = verify(&["--deep", dir.to_str().unwrap()]);
        assert_eq!(code, 0, "{}: {out}{err}", dir.display());
        assert!(out.contains("verified 1 partitions, 1 segments,"), "{out}");
        assert!(out.contains(" 0 errors"), "{out}");
        // manifest.json is not a Kafka file: a warning, which --strict turns into a failure.
        assert!(
            out.contains("manifest.json: file not written by Kafka"),
            "{out}"
        );
        let (code, _, _) = verify(&["--strict", dir.to_str().unwrap()]);
        assert_eq!(code, 1);
    }
}

#[test]
fn strata_written_log_dir_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    write_strata_partition(tmp.path(), "orders", 40, 5, 300, 4000);
    write_strata_partition(tmp.path(), "payments", 10, 3, 200, 1 << 20);
    std::fs::create_dir_all(
        tmp.path()
            .join("old-0.0123456789abcdef0123456789abcdef-delete"),
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("recovery-point-offset-checkpoint"),
        "0\n2\norders 0 200\npayments 0 30\n",
    )
    .unwrap();
    let (code, out, err) = verify(&["--deep", "--strict", tmp.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("verified 2 partitions, "), "{out}");
    let (code, report) = findings(tmp.path());
    assert_eq!(code, 0);
    assert!(report.is_empty(), "{report:?}");
}

#[test]
fn flipped_crc_byte_fails_with_position() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, seg, m) = fixture_partition(tmp.path(), "data-gzip");
    let third = m["batches"][2]["position"].as_u64().unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[third as usize + 30] ^= 0x10; // inside the CRC-covered header
    std::fs::write(&seg, &bytes).unwrap();
    let (code, out, _) = verify(&[dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains(&format!(
            "error: {} at position {third}: corrupt batch (base offset 50): checksum mismatch",
            seg.display()
        )),
        "{out}"
    );
    let (_, f) = findings(&dir);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0]["severity"], "error");
    assert_eq!(f[0]["problem"], "corrupt_batch");
    assert_eq!(f[0]["position"], third);
    assert_eq!(f[0]["base_offset"], 50);
    assert!(
        f[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("checksum mismatch: stored 0x"),
        "{f:?}"
    );
    assert_eq!(f[0]["file"], seg.to_str().unwrap());
}

#[test]
fn truncated_batch_mid_file_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, seg, m) = fixture_partition(tmp.path(), "data-none");
    let b = &m["batches"][5];
    let (pos, size) = (b["position"].as_u64().unwrap(), b["size"].as_u64().unwrap());
    let bytes = std::fs::read(&seg).unwrap();
    std::fs::write(&seg, &bytes[..(pos + size / 2) as usize]).unwrap();
    let (code, out, _) = verify(&[dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains(&format!(
            "error: {} at position {pos}: truncated batch: {} bytes left in the file, the batch needs {size}",
            seg.display(),
            size / 2
        )),
        "{out}"
    );
}

#[test]
fn zero_filled_tail_is_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, seg, _) = fixture_partition(tmp.path(), "log-append-time");
    let mut bytes = std::fs::read(&seg).unwrap();
    let len = bytes.len();
    bytes.extend(std::iter::repeat_n(0u8, 4096));
    std::fs::write(&seg, &bytes).unwrap();
    let (code, out, _) = verify(&[dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "warning: {} at position {len}: 4096 zero bytes at the end",
            seg.display()
        )),
        "{out}"
    );
}

/// A Strata-written partition whose first segment has an index with ≥ 3 entries.
fn strata_partition(tmp: &Path) -> (PathBuf, PathBuf) {
    let dir = write_strata_partition(tmp, "orders", 30, 5, 300, 1 << 20);
    let index = files_with(&dir, ".index").remove(0);
    assert!(std::fs::metadata(&index).unwrap().len() >= 24);
    (dir, index)
}

#[test]
fn index_entry_inside_a_batch_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, index) = strata_partition(tmp.path());
    let mut bytes = std::fs::read(&index).unwrap();
    let pos = i32::from_be_bytes(bytes[12..16].try_into().unwrap());
    let rel = i32::from_be_bytes(bytes[8..12].try_into().unwrap());
    bytes[12..16].copy_from_slice(&(pos + 7).to_be_bytes());
    std::fs::write(&index, &bytes).unwrap();
    let (code, out, _) = verify(&[dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains(&format!(
            "error: {} at position 8: offset index entry 1 (offset {rel}) points at position {}, which is not the start of a batch",
            index.display(),
            pos + 7
        )),
        "{out}"
    );
}

#[test]
fn non_monotonic_index_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, index) = strata_partition(tmp.path());
    let mut bytes = std::fs::read(&index).unwrap();
    let (a, b) = (bytes[0..8].to_vec(), bytes[8..16].to_vec());
    bytes[0..8].copy_from_slice(&b);
    bytes[8..16].copy_from_slice(&a);
    std::fs::write(&index, &bytes).unwrap();
    let (code, f) = findings(&dir);
    assert_eq!(code, 1);
    assert!(
        f.iter()
            .any(|x| x["problem"] == "index_offset_not_increasing"
                && x["position"] == 8
                && x["file"] == index.to_str().unwrap()),
        "{f:?}"
    );
    assert!(
        f.iter()
            .any(|x| x["problem"] == "index_position_decreasing"),
        "{f:?}"
    );

    // Same for the time index: repeat the first timestamp.
    let (dir2, _) = strata_partition(&tmp.path().join("again"));
    let time = files_with(&dir2, ".timeindex").remove(0);
    let mut t = std::fs::read(&time).unwrap();
    let first = t[0..8].to_vec();
    t[12..20].copy_from_slice(&first);
    std::fs::write(&time, &t).unwrap();
    let (code, out, _) = verify(&[dir2.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains(&format!(
            "error: {} at position 12: time index entry 1: timestamp",
            time.display()
        )),
        "{out}"
    );
}

#[test]
fn bad_checkpoints_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_strata_partition(tmp.path(), "orders", 4, 5, 300, 1 << 20);
    let rp = tmp.path().join("recovery-point-offset-checkpoint");

    std::fs::write(&rp, "0\n1\norders 0 21\n").unwrap();
    let (code, out, _) = verify(&[tmp.path().to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains(&format!(
            "error: {}: recovery point for orders-0 is 21, beyond the log end offset 20",
            rp.display()
        )),
        "{out}"
    );
    // The partition alone: its parent's checkpoints are still checked.
    let (code, _, _) = verify(&[dir.to_str().unwrap()]);
    assert_eq!(code, 1);

    std::fs::write(&rp, "0\n2\norders 0 20\n").unwrap();
    let (code, out, _) = verify(&[tmp.path().to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains(&format!(
            "error: {}: malformed checkpoint: expected 2 entries",
            rp.display()
        )),
        "{out}"
    );

    std::fs::write(&rp, "0\n1\norders 0 20\n").unwrap();
    std::fs::write(
        tmp.path().join("log-start-offset-checkpoint"),
        "0\n1\norders 0 25\n",
    )
    .unwrap();
    let (code, out, _) = verify(&[tmp.path().to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains("log start offset for orders-0 is 25, beyond the log end offset 20"),
        "{out}"
    );
    std::fs::remove_file(tmp.path().join("log-start-offset-checkpoint")).unwrap();

    let epochs = dir.join("leader-epoch-checkpoint");
    std::fs::write(&epochs, "0\n2\n3 10\n2 15\n").unwrap();
    let (code, out, _) = verify(&[dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains(&format!(
            "error: {}: leader epoch entry 1 (epoch 2, start offset 15) does not increase",
            epochs.display()
        )),
        "{out}"
    );
    std::fs::write(&epochs, "0\n2\n0 0\n1 10\n").unwrap();
    let (code, out, _) = verify(&[dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    // All four batches were written in epoch 0: the cache's epoch 1 at 10 disagrees.
    assert!(
        out.contains(&format!(
            "warning: {}: 2 batches disagree with the leader epoch cache; the first, at offset 10, has epoch 0 but the cache says 1",
            epochs.display()
        )),
        "{out}"
    );
    std::fs::write(&epochs, "0\n1\n0 0\n").unwrap();
    let (code, out, _) = verify(&["--strict", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");

    let meta = dir.join("partition.metadata");
    std::fs::write(&meta, "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA").unwrap();
    let (code, out, _) = verify(&[dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains(&format!(
            "error: {}: malformed partition.metadata",
            meta.display()
        )),
        "{out}"
    );
}

#[test]
fn leftovers_and_orphans() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, seg, _) = fixture_partition(tmp.path(), "delete-horizon");
    std::fs::write(dir.join("00000000000000000000.log.deleted"), b"").unwrap();
    std::fs::write(dir.join("00000000000000000050.index"), b"").unwrap();
    let (code, out, _) = verify(&[dir.to_str().unwrap()]);
    assert_eq!(code, 0, "warnings only: {out}");
    assert!(
        out.contains("00000000000000000000.log.deleted: file scheduled for deletion"),
        "{out}"
    );
    assert!(
        out.contains("00000000000000000050.index: offset index file without a segment .log"),
        "{out}"
    );
    let (code, _, _) = verify(&["--strict", dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    std::fs::write(dir.join("00000000000000000100.log.swap"), b"").unwrap();
    let (code, out, _) = verify(&[dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains(
            "00000000000000000100.log.swap: leftover .swap file from an interrupted segment swap"
        ),
        "{out}"
    );
    let _ = seg;
}

#[test]
fn offsets_must_increase_across_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, seg, _) = fixture_partition(tmp.path(), "idempotent-and-transactional");
    // The same batches again as a later segment: they overlap the first one.
    let second = dir.join("00000000000000000020.log");
    std::fs::copy(&seg, &second).unwrap();
    let (code, out, _) = verify(&[dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains(&format!(
            "error: {}: segment overlaps the previous segment, whose last offset is 25",
            second.display()
        )),
        "{out}"
    );
}

#[test]
fn empty_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, _) = verify(&[tmp.path().to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains("not a partition directory and holds no partition directories"),
        "{out}"
    );
    std::fs::write(tmp.path().join("meta.properties"), "#\nversion=1\n").unwrap();
    let (code, out, _) = verify(&[tmp.path().to_str().unwrap()]);
    assert_eq!(code, 0, "an empty log dir is fine: {out}");
}

#[test]
fn unreadable_target_exits_2() {
    let (code, out, _) = verify(&["/nonexistent-strata-dir"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("/nonexistent-strata-dir: cannot read: not a directory"),
        "{out}"
    );
}

#[test]
fn log_manager_dir_with_checkpoints_verifies() {
    use strata_log::batch::BatchBuilder;
    use strata_log::{
        LeaderEpoch, LogConfig, LogManager, LogManagerConfig, Offset, Timestamp, TopicPartition,
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut config = LogManagerConfig::new(vec![tmp.path().to_path_buf()]);
    config.default_config = LogConfig {
        index_interval_bytes: 200,
        segment_bytes: 3000,
        ..LogConfig::default()
    };
    let manager = LogManager::open(config.clone(), clock(1_700_000_100_000)).unwrap();
    for (topic, n) in [("orders", 30), ("audit", 5)] {
        let tp = TopicPartition::new(topic, 0);
        let log = manager
            .get_or_create_log(
                &tp,
                config.default_config.clone(),
                Some(uuid::Uuid::new_v4()),
            )
            .unwrap();
        for i in 0..n {
            let mut b = BatchBuilder::new(Offset(0));
            b.append(
                Timestamp(1_700_000_000_000 + i),
                Some(b"key"),
                Some(&[b'v'; 100]),
                &[],
            );
            let mut bytes = b.build();
            log.append_as_leader(&mut bytes, LeaderEpoch(i as i32 / 10))
                .unwrap();
        }
        log.update_high_watermark(log.log_end_offset());
    }
    manager.shutdown().unwrap();
    let (code, out, err) = verify(&["--deep", "--strict", tmp.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("verified 2 partitions, "), "{out}");
    // The checkpoints were looked at: a recovery point beyond the LEO is caught.
    let rp = tmp.path().join("recovery-point-offset-checkpoint");
    let text = std::fs::read_to_string(&rp).unwrap();
    assert!(text.contains("orders 0 30"), "{text}");
    std::fs::write(&rp, text.replace("orders 0 30", "orders 0 31")).unwrap();
    let (code, out, _) = verify(&[tmp.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
}

#[test]
fn inactive_segment_time_index_must_end_at_its_max_timestamp() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_strata_partition(tmp.path(), "orders", 40, 5, 300, 4000);
    let time = files_with(&dir, ".timeindex").remove(0);
    let bytes = std::fs::read(&time).unwrap();
    assert!(bytes.len() >= 24);
    let last_ts = i64::from_be_bytes(bytes[bytes.len() - 12..bytes.len() - 4].try_into().unwrap());
    let prev_ts = i64::from_be_bytes(
        bytes[bytes.len() - 24..bytes.len() - 16]
            .try_into()
            .unwrap(),
    );
    std::fs::write(&time, &bytes[..bytes.len() - 12]).unwrap();
    let (code, out, _) = verify(&[dir.to_str().unwrap()]);
    assert_eq!(code, 0, "a warning: {out}");
    assert!(
        out.contains(&format!(
            "warning: {}: inactive segment's time index ends at timestamp {prev_ts}, but its largest batch timestamp is {last_ts}",
            time.display()
        )),
        "{out}"
    );
}

/// `strata-topics.json` as the broker writes it, with one topic.
fn write_topic_store(log_dir: &Path, topic: &str, id: uuid::Uuid) {
    std::fs::write(
        log_dir.join("strata-topics.json"),
        format!(
            r#"{{"version":1,"cluster_id":"abc","next_producer_id":0,"topics":{{"{topic}":{{"id":"{}","partitions":1,"leader_epoch":0,"configs":{{}}}}}}}}"#,
            id.hyphenated()
        ),
    )
    .unwrap();
}

#[test]
fn partition_metadata_topic_id_must_match_the_topic_store() {
    use strata_log::{uuid_to_kafka_string, PartitionMetadata};
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_strata_partition(tmp.path(), "orders", 10, 3, 300, 1 << 20);
    let ours = uuid::Uuid::from_u128(0x0fed_cba9_8765_4321_0fed_cba9_8765_4321);
    let other = uuid::Uuid::from_u128(0x1111_2222_3333_4444_5555_6666_7777_8888);
    PartitionMetadata::new(ours)
        .write(&strata_log::fs::StdFs, &dir)
        .unwrap();

    // Agreeing ids: clean, whether the log dir or the partition dir is given.
    write_topic_store(tmp.path(), "orders", ours);
    for target in [tmp.path(), dir.as_path()] {
        let (code, out, err) = verify(&["--strict", target.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}{err}");
    }

    // The store names another id (topic deleted and re-created): damage.
    write_topic_store(tmp.path(), "orders", other);
    for target in [tmp.path(), dir.as_path()] {
        let (code, out, err) = verify(&[target.to_str().unwrap()]);
        assert_eq!(code, 1, "{out}{err}");
        let (ours_text, other_text) = (uuid_to_kafka_string(&ours), uuid_to_kafka_string(&other));
        let line = out
            .lines()
            .find(|l| l.contains("topic id"))
            .unwrap_or_else(|| panic!("no topic id finding: {out}"));
        assert!(line.starts_with("error: "), "{line}");
        assert!(
            line.contains(&dir.join("partition.metadata").display().to_string()),
            "{line}"
        );
        assert!(
            line.contains(&ours_text) && line.contains(&other_text),
            "{line}"
        );
        let (code, all) = findings(target);
        assert_eq!(code, 1);
        let f: Vec<&Value> = all
            .iter()
            .filter(|f| f["problem"] == "topic_id_mismatch")
            .collect();
        assert_eq!(f.len(), 1, "{all:?}");
        assert_eq!(f[0]["topic"], "orders");
        assert_eq!(f[0]["partition_metadata_id"], ours_text.as_str());
        assert_eq!(f[0]["topic_store_id"], other_text.as_str());
    }

    // A topic the store does not know and a Kafka dir without a store are
    // not judged by this check.
    write_topic_store(tmp.path(), "payments", other);
    let (code, out, err) = verify(&[tmp.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");

    // An unreadable store is reported, not ignored.
    std::fs::write(tmp.path().join("strata-topics.json"), "{not json").unwrap();
    let (code, out, _) = verify(&[tmp.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("unreadable topic store"), "{out}");
}
