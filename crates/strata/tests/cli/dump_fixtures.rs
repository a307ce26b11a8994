//! `strata log dump` on every Kafka-written fixture prints exactly the lines
//! Kafka 3.9's `kafka-dump-log` would, checked value by value against each
//! fixture's manifest (batches, records, payloads, control markers, JSON).

use crate::common::*;
use serde_json::Value;

fn lines(s: &str) -> Vec<&str> {
    s.lines().collect()
}

#[test]
fn shallow_dump_prints_every_batch_line() {
    for dir in fixture_dirs() {
        let (m, file) = manifest(&dir);
        let (code, out, err) = run(["log", "dump", "--files", file.to_str().unwrap()]);
        assert_eq!(code, 0, "{}: {err}", file.display());
        let l = lines(&out);
        let base = file.file_name().unwrap().to_str().unwrap()[..20]
            .parse::<i64>()
            .unwrap();
        assert_eq!(l[0], format!("Dumping {}", file.display()));
        assert_eq!(l[1], format!("Log starting offset: {base}"));
        let batches = m["batches"].as_array().unwrap();
        assert_eq!(l.len(), 2 + batches.len(), "{}", file.display());
        for (line, b) in l[2..].iter().zip(batches) {
            assert_eq!(*line, expected_batch_line(b), "{}", file.display());
        }
    }
}

#[test]
fn deep_iteration_prints_every_record() {
    for dir in fixture_dirs() {
        let (m, file) = manifest(&dir);
        let (code, out, err) = run([
            "log",
            "dump",
            "--deep-iteration",
            "--files",
            file.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{}: {err}", file.display());
        let mut expected = vec![
            format!("Dumping {}", file.display()),
            format!(
                "Log starting offset: {}",
                &file.file_name().unwrap().to_str().unwrap()[..20]
                    .parse::<i64>()
                    .unwrap()
            ),
        ];
        for b in m["batches"].as_array().unwrap() {
            expected.push(expected_batch_line(b));
            for r in b["records"].as_array().unwrap() {
                let mut line = expected_record_line(b, r);
                if b["is_control"].as_bool().unwrap() {
                    let key = hex_bytes(&r["key_hex"]).unwrap();
                    let value = hex_bytes(&r["value_hex"]).unwrap();
                    let kind = match i16::from_be_bytes([key[2], key[3]]) {
                        0 => "ABORT",
                        1 => "COMMIT",
                        other => panic!("unexpected control type {other}"),
                    };
                    let epoch = i32::from_be_bytes([value[2], value[3], value[4], value[5]]);
                    line.push_str(&format!(" endTxnMarker: {kind} coordinatorEpoch: {epoch}"));
                }
                expected.push(line);
            }
        }
        assert_eq!(lines(&out), expected, "{}", file.display());
    }
}

#[test]
fn print_data_log_prints_keys_and_payloads() {
    for dir in fixture_dirs() {
        let (m, file) = manifest(&dir);
        let (code, out, err) = run([
            "log",
            "dump",
            "--print-data-log",
            "--files",
            file.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{}: {err}", file.display());
        let records: Vec<&str> = out.lines().filter(|l| l.starts_with("| ")).collect();
        let mut i = 0;
        for b in m["batches"].as_array().unwrap() {
            for r in b["records"].as_array().unwrap() {
                let mut line = expected_record_line(b, r);
                if b["is_control"].as_bool().unwrap() {
                    assert!(records[i].starts_with(&line), "{}", records[i]);
                    assert!(
                        !records[i].contains("payload:"),
                        "control records print no payload"
                    );
                } else {
                    if let Some(k) = hex_bytes(&r["key_hex"]) {
                        line.push_str(&format!(" key: {}", String::from_utf8_lossy(&k)));
                    }
                    if let Some(v) = hex_bytes(&r["value_hex"]) {
                        line.push_str(&format!(" payload: {}", String::from_utf8_lossy(&v)));
                    }
                    assert_eq!(records[i], line, "{}", file.display());
                }
                i += 1;
            }
        }
        assert_eq!(i, records.len());
    }
}

#[test]
fn skip_record_metadata_prints_only_data() {
    let (_, file) = manifest(&fixtures().join("log-append-time"));
    let (code, out, _) = run([
        "log",
        "dump",
        "--print-data-log",
        "--skip-record-metadata",
        "--files",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let first = out.lines().find(|l| l.starts_with('|')).unwrap();
    assert_eq!(first, "| key: k0 payload: v0");
}

#[test]
fn control_markers_and_transactional_batches() {
    let (_, file) = manifest(&fixtures().join("idempotent-and-transactional"));
    let (code, out, _) = run([
        "log",
        "dump",
        "--deep-iteration",
        "--files",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("| offset: 24 CreateTime: 1700000005000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 9\n"));
    assert!(out.contains("| offset: 25 CreateTime: 1700000005001 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 9\n"));
    assert!(out.contains(" producerId: 4000 producerEpoch: 0 partitionLeaderEpoch: 1 isTransactional: false isControl: false "));
}

#[test]
fn json_matches_the_manifest() {
    for dir in fixture_dirs() {
        let (m, file) = manifest(&dir);
        let (code, out, err) = run([
            "log",
            "dump",
            "--json",
            "--print-data-log",
            file.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let objs: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(objs.len(), 1);
        let o = &objs[0];
        assert_eq!(o["kind"], "log");
        assert_eq!(o["file"], file.to_str().unwrap());
        assert_eq!(o["trailing_invalid_bytes"], 0);
        let got = o["batches"].as_array().unwrap();
        let want = m["batches"].as_array().unwrap();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            for k in [
                "position",
                "size",
                "base_offset",
                "last_offset",
                "count",
                "partition_leader_epoch",
                "crc",
                "max_timestamp",
                "producer_id",
                "producer_epoch",
                "base_sequence",
                "is_transactional",
                "is_control",
                "timestamp_type",
            ] {
                assert_eq!(g[k], w[k], "{k} in {}", file.display());
            }
            assert_eq!(g["compresscodec"], w["compression"]);
            assert_eq!(g["is_valid"], true);
            let horizon = w["delete_horizon_ms"].as_i64().unwrap();
            assert_eq!(
                g["delete_horizon_ms"],
                if horizon < 0 {
                    Value::Null
                } else {
                    w["delete_horizon_ms"].clone()
                }
            );
            let (gr, wr) = (
                g["records"].as_array().unwrap(),
                w["records"].as_array().unwrap(),
            );
            assert_eq!(gr.len(), wr.len());
            for (a, e) in gr.iter().zip(wr) {
                assert_eq!(a["offset"], e["offset"]);
                assert_eq!(a["timestamp"], e["timestamp"]);
                let keys: Vec<Value> = e["headers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|h| h["key"].clone())
                    .collect();
                assert_eq!(a["header_keys"], Value::Array(keys));
                if !w["is_control"].as_bool().unwrap() {
                    let key =
                        hex_bytes(&e["key_hex"]).map(|k| String::from_utf8_lossy(&k).into_owned());
                    assert_eq!(a["key"].as_str().map(str::to_owned), key);
                    let value = hex_bytes(&e["value_hex"])
                        .map(|v| String::from_utf8_lossy(&v).into_owned());
                    assert_eq!(a["payload"].as_str().map(str::to_owned), value);
                }
            }
        }
    }
}

#[test]
fn non_consecutive_offsets_are_reported_like_kafka() {
    let (_, file) = manifest(&fixtures().join("delete-horizon"));
    let (code, out, err) = run([
        "log",
        "dump",
        "--deep-iteration",
        "--files",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "a compacted gap is not a failure");
    assert!(out.contains("deleteHorizonMs: OptionalLong[1700086400000] position: 0 "));
    let abs = std::path::absolute(&file).unwrap();
    assert!(
        err.contains(&format!(
            "Non-consecutive offsets in {}\n  100 is followed by 103\n",
            abs.display()
        )),
        "{err}"
    );
}
