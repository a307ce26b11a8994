//! `strata log dump --transaction-log-decoder` prints a real
//! `__transaction_state` segment's records in the exact text of Kafka's
//! `kafka-dump-log.sh --transaction-log-decoder` (and in `--json`), and
//! keeps going past an undecodable record, reporting it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::*;
use serde_json::Value;
use strata_log::batch::BatchBuilder;
use strata_log::codec::transaction_log::{encode_key, encode_value, TxnLogValue, TxnStatus};
use strata_log::{DirHealth, LoadParams, Log, LogConfig, MockClock, Offset, Timestamp};

const T0: i64 = 1_700_000_000_000;

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

// ---- dump --transaction-log-decoder ----

/// One `__transaction_state` record per batch, as the coordinator writes them.
fn txn_state_batch(offset: i64, ts: i64, key: &[u8], value: Option<&[u8]>) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(offset));
    b.append(Timestamp(ts), Some(key), value, &[]);
    b.build()
}

fn value(status: TxnStatus, partitions: &[(&str, &[i32])], updated: i64, start: i64) -> Vec<u8> {
    encode_value(&TxnLogValue {
        producer_id: 1000,
        producer_epoch: 3,
        timeout_ms: 60_000,
        status,
        partitions: partitions
            .iter()
            .map(|(t, p)| (t.to_string(), p.to_vec()))
            .collect(),
        last_update_timestamp_ms: updated,
        start_timestamp_ms: start,
    })
}

/// Write `records` (key, value) into `<root>/__transaction_state-<n>` and
/// return the segment's path.
fn txn_state_segment(root: &Path, n: i32, records: &[(Vec<u8>, Option<Vec<u8>>)]) -> PathBuf {
    let name = format!("__transaction_state-{n}");
    let log = open_log(
        root,
        &name,
        LogConfig {
            cleanup_policy: strata_log::CleanupPolicy {
                delete: false,
                compact: true,
            },
            ..LogConfig::default()
        },
    );
    for (i, (k, v)) in records.iter().enumerate() {
        let batch = txn_state_batch(i as i64, T0 + i as i64, k, v.as_deref());
        log.append_as_follower(&batch).unwrap();
    }
    log.close().unwrap();
    files_with(&root.join(name), ".log").remove(0)
}

fn record_prefix(offset: i64, key: &[u8], value: Option<&[u8]>) -> String {
    format!(
        "| offset: {offset} CreateTime: {} keySize: {} valueSize: {} sequence: -1 headerKeys: []",
        T0 + offset,
        key.len(),
        value.map_or(-1, |v| v.len() as i64)
    )
}

#[test]
fn transaction_state_segment_is_printed_like_kafkas_decoder() {
    let tmp = tempfile::tempdir().unwrap();
    let orders: &[(&str, &[i32])] = &[("orders", &[0, 1]), ("payments", &[2])];
    let records: Vec<(Vec<u8>, Option<Vec<u8>>)> = vec![
        (
            encode_key("txn-1"),
            Some(value(TxnStatus::Empty, &[], T0, -1)),
        ),
        (
            encode_key("txn-1"),
            Some(value(TxnStatus::Ongoing, orders, T0 + 10, T0 + 10)),
        ),
        (
            encode_key("txn-1"),
            Some(value(TxnStatus::PrepareCommit, orders, T0 + 20, T0 + 10)),
        ),
        (
            encode_key("txn-1"),
            Some(value(TxnStatus::CompleteCommit, &[], T0 + 30, T0 + 10)),
        ),
        (encode_key("expired-id"), None),
        // A key version Kafka 3.9 does not know: printed, value not read.
        (vec![0, 1, 0, 1, b'x'], Some(b"whatever".to_vec())),
    ];
    let seg = txn_state_segment(tmp.path(), 0, &records);
    let path = seg.to_str().unwrap();

    let (code, plain, err) = run(["log", "dump", "--files", path]);
    assert_eq!(code, 0, "{err}");
    let batch_lines: Vec<&str> = plain.lines().skip(2).collect();
    assert_eq!(batch_lines.len(), records.len(), "{plain}");

    let (code, out, err) = run(["log", "dump", "--transaction-log-decoder", "--files", path]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    let payloads = [
        Some("producerId:1000,producerEpoch:3,state=Empty,partitions=[],txnLastUpdateTimestamp=1700000000000,txnTimeoutMs=60000"),
        Some("producerId:1000,producerEpoch:3,state=Ongoing,partitions=[orders-0,orders-1,payments-2],txnLastUpdateTimestamp=1700000000010,txnTimeoutMs=60000"),
        Some("producerId:1000,producerEpoch:3,state=PrepareCommit,partitions=[orders-0,orders-1,payments-2],txnLastUpdateTimestamp=1700000000020,txnTimeoutMs=60000"),
        Some("producerId:1000,producerEpoch:3,state=CompleteCommit,partitions=[],txnLastUpdateTimestamp=1700000000030,txnTimeoutMs=60000"),
        Some("<DELETE>"),
        None,
    ];
    let keys = [
        "transaction_metadata::transactionalId=txn-1",
        "transaction_metadata::transactionalId=txn-1",
        "transaction_metadata::transactionalId=txn-1",
        "transaction_metadata::transactionalId=txn-1",
        "transaction_metadata::transactionalId=expired-id",
        "unknown::version=1",
    ];
    let mut expected = vec![
        format!("Dumping {path}"),
        "Log starting offset: 0".to_owned(),
    ];
    for (i, (k, v)) in records.iter().enumerate() {
        expected.push(batch_lines[i].to_owned());
        let mut line = format!(
            "{} key: {}",
            record_prefix(i as i64, k, v.as_deref()),
            keys[i]
        );
        if let Some(p) = payloads[i] {
            line.push_str(&format!(" payload: {p}"));
        }
        expected.push(line);
    }
    assert_eq!(out.lines().collect::<Vec<_>>(), expected);

    // --skip-record-metadata leaves only the decoded texts.
    let (code, out, _) = run([
        "log",
        "dump",
        "--transaction-log-decoder",
        "--skip-record-metadata",
        "--files",
        path,
    ]);
    assert_eq!(code, 0);
    assert_eq!(
        out.lines().nth(3),
        Some(
            "| key: transaction_metadata::transactionalId=txn-1 payload: producerId:1000,producerEpoch:3,state=Empty,partitions=[],txnLastUpdateTimestamp=1700000000000,txnTimeoutMs=60000"
        )
    );

    // JSON: the same texts plus the decoded fields.
    let (code, out, err) = run([
        "log",
        "dump",
        "--json",
        "--transaction-log-decoder",
        "--files",
        path,
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let rec = |i: usize| v["batches"][i]["records"][0].clone();
    assert_eq!(rec(1)["key"], keys[1]);
    assert_eq!(rec(1)["payload"], payloads[1].unwrap());
    let t = &rec(1)["transaction_log"];
    assert_eq!(t["transactional_id"], "txn-1");
    assert_eq!(t["tombstone"], false);
    assert_eq!(t["value"]["state"], "Ongoing");
    assert_eq!(t["value"]["producer_id"], 1000);
    assert_eq!(t["value"]["txn_start_timestamp"], T0 + 10);
    assert_eq!(
        t["value"]["partitions"],
        serde_json::json!(["orders-0", "orders-1", "payments-2"])
    );
    assert_eq!(rec(4)["transaction_log"]["tombstone"], true);
    assert!(rec(4)["transaction_log"].get("value").is_none());
    assert_eq!(rec(5)["transaction_log"]["key_version"], 1);
    assert!(rec(5).get("payload").is_none());
}

#[test]
fn an_undecodable_record_is_reported_and_the_dump_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    // 20 bytes: cut inside the partition count, which starts at byte 17.
    let good = value(TxnStatus::Ongoing, &[("t", &[0])], T0, T0);
    let records: Vec<(Vec<u8>, Option<Vec<u8>>)> = vec![
        (encode_key("a"), Some(good[..20].to_vec())),
        (vec![0], Some(good.clone())),
        (encode_key("b"), Some(good.clone())),
    ];
    let seg = txn_state_segment(tmp.path(), 7, &records);
    let path = seg.to_str().unwrap();
    let (code, out, err) = run(["log", "dump", "--transaction-log-decoder", "--files", path]);
    assert_eq!(code, 1, "undecodable records are problems: {out}{err}");
    let records_out: Vec<&str> = out.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(records_out.len(), 3, "{out}");
    // The key decoded: printed; the value did not: no payload.
    assert_eq!(
        records_out[0],
        format!(
            "{} key: transaction_metadata::transactionalId=a",
            record_prefix(0, &records[0].0, records[0].1.as_deref())
        )
    );
    // Nothing decoded: the metadata only.
    assert_eq!(records_out[1], record_prefix(1, &[0], Some(&good)));
    // The next record is decoded as usual.
    assert!(records_out[2].ends_with(
        " key: transaction_metadata::transactionalId=b payload: producerId:1000,producerEpoch:3,state=Ongoing,partitions=[t-0],txnLastUpdateTimestamp=1700000000000,txnTimeoutMs=60000"
    ));
    let errors: Vec<&str> = err.lines().collect();
    assert_eq!(errors.len(), 2, "{err}");
    assert_eq!(
        errors[0],
        format!(
            "{path}: __transaction_state record at offset 0 (batch at position 0): cannot decode \
             the value of transactional id \"a\": TransactionLogValue truncated at byte 17"
        )
    );
    assert!(
        errors[1].starts_with(&format!(
            "{path}: __transaction_state record at offset 1 (batch at position "
        )) && errors[1].contains("): cannot decode the key: TransactionLogKey truncated at byte 0"),
        "{err}"
    );
}
