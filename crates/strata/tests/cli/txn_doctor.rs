//! `strata log doctor` finds a hanging transaction — from the producer
//! snapshot, from the log alone, and from an older snapshot plus the log
//! after it — and names the `kafka-transactions.sh abort` command for it,
//! while a partition whose transactions all ended (Kafka-written fixture
//! included) reports none.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::*;
use serde_json::Value;
use strata_log::batch::{build_end_txn_marker, BatchBuilder, EndTransactionMarker};
use strata_log::{
    DirHealth, LeaderEpoch, LoadParams, Log, LogConfig, MockClock, Offset, ProducerEpoch,
    ProducerId, Timestamp,
};

const T0: i64 = 1_700_000_000_000;
const MINUTE: i64 = 60_000;

fn open_log(root: &Path, name: &str, cfg: LogConfig) -> Arc<Log> {
    Log::open(
        &root.join(name),
        cfg,
        LoadParams::default(),
        MockClock::new(T0),
        DirHealth::new(root),
    )
    .unwrap()
}

// ---- doctor: hanging transactions ----

fn txn_batch(offset: i64, pid: i64, epoch: i16, seq: i32, ts: i64, n: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(offset))
        .producer(ProducerId(pid), ProducerEpoch(epoch), seq)
        .transactional(true);
    for i in 0..n {
        b.append(Timestamp(ts + i as i64), Some(b"k"), Some(&[b'v'; 40]), &[]);
    }
    b.build()
}

fn marker(offset: i64, pid: i64, epoch: i16, ts: i64, m: EndTransactionMarker) -> Vec<u8> {
    build_end_txn_marker(
        Offset(offset),
        LeaderEpoch(0),
        ProducerId(pid),
        ProducerEpoch(epoch),
        Timestamp(ts),
        m,
    )
}

/// `orders-0`: producer 2000 commits a transaction and producer 2500 aborts
/// one; producer 3000 (epoch 5) opens one at offset 6 and writes into it
/// again later (crossing a segment roll), never ending it; a plain batch
/// follows. Returns the directory and the bytes from offset 6 to the end.
fn partition_with_open_txn(root: &Path) -> (PathBuf, u64) {
    let log = open_log(
        root,
        "orders-0",
        LogConfig {
            segment_bytes: 400,
            ..LogConfig::default()
        },
    );
    let batches = vec![
        txn_batch(0, 2000, 1, 0, T0, 3),
        marker(3, 2000, 1, T0 + 100, EndTransactionMarker::commit(4)),
        txn_batch(4, 2500, 0, 0, T0 + 150, 1),
        marker(5, 2500, 0, T0 + 160, EndTransactionMarker::abort(4)),
        txn_batch(6, 3000, 5, 0, T0 + 200, 2),
        txn_batch(8, 3000, 5, 2, T0 + 300, 2),
        {
            let mut b = BatchBuilder::new(Offset(10));
            b.append(Timestamp(T0 + 400), None, Some(b"plain"), &[]);
            b.build()
        },
    ];
    for b in &batches {
        log.append_as_follower(b).unwrap();
    }
    log.close().unwrap();
    let behind: usize = batches[4..].iter().map(Vec::len).sum();
    (root.join("orders-0"), behind as u64)
}

fn doctor(path: &Path, now: i64, extra: &[&str]) -> Value {
    let now = now.to_string();
    let mut args = vec![
        "log",
        "doctor",
        "--json",
        "--now-ms",
        now.as_str(),
        path.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"))
}

/// The partition's findings about transactions.
fn txn_findings(report: &Value) -> Vec<Value> {
    report["partitions"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["symptom"] == "last_stable_offset_stuck")
        .cloned()
        .collect()
}

fn assert_hanging(f: &Value, pid: i64, epoch: i64, coord: i64, first: i64, last_ts: i64) {
    assert_eq!(f["cause"], "hanging_transaction", "{f}");
    assert_eq!(f["severity"], "warning");
    let n = &f["numbers"];
    assert_eq!(n["producer_id"], pid, "{f}");
    assert_eq!(n["producer_epoch"], epoch, "{f}");
    assert_eq!(n["coordinator_epoch"], coord, "{f}");
    assert_eq!(n["first_offset"], first, "{f}");
    assert_eq!(n["last_timestamp"], last_ts, "{f}");
    assert_eq!(n["last_stable_offset"], first, "{f}");
    assert!(f["settings"]
        .as_array()
        .unwrap()
        .contains(&Value::from("transaction.max.timeout.ms")));
}

#[test]
fn doctor_reports_a_hanging_transaction_with_the_abort_command() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, behind) = partition_with_open_txn(tmp.path());
    assert!(
        files_with(&dir, ".log").len() >= 2,
        "the open transaction should cross a roll"
    );
    let last_write = T0 + 301;

    let report = doctor(&dir, last_write + 16 * MINUTE, &[]);
    let found = txn_findings(&report);
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    assert_hanging(f, 3000, 5, -1, 6, last_write);
    let command = "kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic orders \
                   --partition 0 --start-offset 6";
    assert_eq!(f["numbers"]["abort_command"], command);
    assert!(f["message"].as_str().unwrap().contains(command), "{f}");
    assert_eq!(f["numbers"]["offsets_behind_log_end"], 5);
    assert_eq!(f["numbers"]["bytes_behind_log_end"], behind);
    assert_eq!(f["numbers"]["age_ms"], 16 * MINUTE);
    assert_eq!(report["settings"]["max_transaction_timeout_ms"], 900_000);

    // Younger than transaction.max.timeout.ms: open, not hanging ...
    let report = doctor(&dir, last_write + 14 * MINUTE, &[]);
    let found = txn_findings(&report);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["cause"], "open_transaction");
    assert_eq!(found[0]["severity"], "info");
    assert!(found[0]["numbers"].get("abort_command").is_none());
    // ... unless the flag lowers the limit.
    let report = doctor(
        &dir,
        last_write + 14 * MINUTE,
        &["--max-transaction-timeout-ms", "600000"],
    );
    assert_hanging(&txn_findings(&report)[0], 3000, 5, -1, 6, last_write);

    // The text report carries the command too.
    let now = (last_write + 16 * MINUTE).to_string();
    let (code, out, err) = run(["log", "doctor", "--now-ms", &now, dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("[WARN] last_stable_offset_stuck / hanging_transaction: orders-0: hanging transaction: producer 3000 (epoch 5, coordinator epoch -1) has a transaction open since offset 6"),
        "{out}"
    );
    assert!(out.contains(command), "{out}");
}

#[test]
fn the_same_answer_from_the_log_alone_and_from_an_older_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, behind) = partition_with_open_txn(tmp.path());
    let last_write = T0 + 301;
    let now = last_write + 16 * MINUTE;
    let snapshots = files_with(&dir, ".snapshot");
    // Rolls at offsets 5 and 10, the close at 11: the snapshot at 10 was
    // taken while the transaction (from 6) was open.
    let names: Vec<String> = snapshots
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "00000000000000000005.snapshot",
            "00000000000000000010.snapshot",
            "00000000000000000011.snapshot"
        ],
    );

    // Drop the newest snapshot: an older one (written at a roll, after the
    // transaction opened) plus the log after it.
    let older = copy_dir(&dir, tmp.path(), "older-0");
    std::fs::remove_file(older.join(snapshots.last().unwrap().file_name().unwrap())).unwrap();
    // No snapshot at all: the whole log is replayed.
    let none = copy_dir(&dir, tmp.path(), "none-0");
    for s in &snapshots {
        std::fs::remove_file(none.join(s.file_name().unwrap())).unwrap();
    }
    for (d, topic) in [(&older, "older"), (&none, "none")] {
        let found = txn_findings(&doctor(d, now, &[]));
        assert_eq!(found.len(), 1, "{topic}: {found:?}");
        assert_hanging(&found[0], 3000, 5, -1, 6, last_write);
        assert_eq!(found[0]["numbers"]["bytes_behind_log_end"], behind);
        assert_eq!(
            found[0]["numbers"]["abort_command"],
            format!(
                "kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic {topic} \
                 --partition 0 --start-offset 6"
            )
        );
    }
    // The doctor wrote nothing: the removed snapshots stay removed.
    assert!(files_with(&none, ".snapshot").is_empty());
    assert_eq!(files_with(&older, ".snapshot").len(), snapshots.len() - 1);
}

#[test]
fn ended_transactions_report_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let log = open_log(tmp.path(), "done-0", LogConfig::default());
    for b in [
        txn_batch(0, 2000, 1, 0, T0, 3),
        marker(3, 2000, 1, T0 + 100, EndTransactionMarker::commit(4)),
        txn_batch(4, 2500, 0, 0, T0 + 150, 1),
        marker(5, 2500, 0, T0 + 160, EndTransactionMarker::abort(4)),
    ] {
        log.append_as_follower(&b).unwrap();
    }
    log.close().unwrap();
    let report = doctor(&tmp.path().join("done-0"), T0 + 30 * 24 * 60 * MINUTE, &[]);
    assert!(txn_findings(&report).is_empty(), "{report}");
}

/// The Kafka-written fixture: producer 5000 commits (offset 24) and 6000
/// aborts (offset 25) — nothing hangs. Without the ABORT marker, 6000's
/// transaction (epoch 0, from offset 15, last write at ...023) hangs.
#[test]
fn kafka_written_transactions() {
    let tmp = tempfile::tempdir().unwrap();
    let (m, file) = manifest(&fixtures().join("idempotent-and-transactional"));
    let batches = m["batches"].as_array().unwrap();
    let now = 1_700_000_000_000 + 60 * MINUTE;

    let whole = tmp.path().join("t-0");
    std::fs::create_dir_all(&whole).unwrap();
    std::fs::copy(&file, whole.join(file.file_name().unwrap())).unwrap();
    assert!(txn_findings(&doctor(&whole, now, &[])).is_empty());

    let cut = tmp.path().join("t-1");
    std::fs::create_dir_all(&cut).unwrap();
    let abort = batches.last().unwrap();
    assert_eq!(abort["producer_id"], 6000);
    assert_eq!(abort["is_control"], true);
    let end = abort["position"].as_u64().unwrap() as usize;
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(cut.join(file.file_name().unwrap()), &bytes[..end]).unwrap();
    let found = txn_findings(&doctor(&cut, now, &[]));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_hanging(&found[0], 6000, 0, -1, 15, 1_700_000_000_023);
    let data = &batches[4];
    assert_eq!(
        (data["base_offset"].as_i64(), data["producer_id"].as_i64()),
        (Some(15), Some(6000))
    );
    let from = data["position"].as_u64().unwrap();
    assert_eq!(
        found[0]["numbers"]["bytes_behind_log_end"],
        end as u64 - from
    );
    assert_eq!(found[0]["numbers"]["offsets_behind_log_end"], 10);
    assert_eq!(
        found[0]["numbers"]["abort_command"],
        "kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic t --partition 1 --start-offset 15"
    );
}
