//! The cleaner on Kafka-written data: fixture segments compacted by Strata
//! keep Kafka's batch layout (offsets, last offset delta, leader epoch,
//! producer fields, codec; delete-horizon bit and base timestamp as Kafka's
//! `filterTo` sets them), and transactional data with COMMIT and ABORT
//! markers is filtered as Kafka's `CleanedTransactionMetadata` does.

use std::collections::HashMap;

use crate::cleaner_util::*;
use serde_json::Value;
use strata_log::batch::{build_end_txn_marker, BatchBuilder, EndTransactionMarker};
use strata_log::cleaner::{Cleaner, CleanerConfig};
use strata_log::{AbortedTxn, TransactionIndex};
use strata_log::{Clock, LeaderEpoch, MockClock, Offset, ProducerEpoch, ProducerId, Timestamp};

fn fixtures() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/kafka-records"
    ))
}

fn hex(v: &Value) -> Option<Vec<u8>> {
    v.as_str().map(|s| {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    })
}

fn worker(clock: &std::sync::Arc<MockClock>) -> Cleaner {
    let cfg = CleanerConfig {
        dedupe_buffer_size: 1 << 16,
        io_buffer_size: 64 << 10,
        ..CleanerConfig::default()
    };
    Cleaner::new(&cfg, clock.clone()).unwrap()
}

#[test]
fn kafka_fixture_segments_compact_to_kafkas_layout() {
    for name in [
        "data-none",
        "data-gzip",
        "data-zstd",
        "data-lz4",
        "data-snappy",
    ] {
        let src = fixtures().join(name);
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(src.join("manifest.json")).unwrap()).unwrap();
        let original = std::fs::read(src.join("00000000000000000000.log")).unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(partition_dir(root.path())).unwrap();
        // A copy: fixtures are never modified.
        std::fs::write(
            partition_dir(root.path()).join("00000000000000000000.log"),
            &original,
        )
        .unwrap();
        let clock = MockClock::new(T0 + 5_000_000);
        let cfg = compact_config(1 << 20);
        let log = open(root.path(), &cfg, &clock);
        let end = log.log_end_offset();
        log.roll().unwrap();
        append(&log, clock.now_ms(), &[("not-in-fixture", Some("x"))]);
        // Latest offset per key over the fixture.
        let batches = manifest["batches"].as_array().unwrap();
        let mut latest: HashMap<Vec<u8>, i64> = HashMap::new();
        for b in batches {
            for r in b["records"].as_array().unwrap() {
                latest.insert(hex(&r["key_hex"]).unwrap(), r["offset"].as_i64().unwrap());
            }
        }
        let o = worker(&clock).clean(&log).unwrap();
        assert_eq!(o.end_offset, end, "{name}");
        let horizon = clock.now_ms() + cfg.delete_retention_ms;
        let bytes = read_bytes(&log);
        let (hdrs, _) = parse(&bytes);
        let mut got = hdrs.iter().filter(|h| h.base < end).peekable();
        for b in batches {
            let base = b["base_offset"].as_i64().unwrap();
            let recs = b["records"].as_array().unwrap();
            let kept: Vec<&Value> = recs
                .iter()
                .filter(|r| latest[&hex(&r["key_hex"]).unwrap()] == r["offset"].as_i64().unwrap())
                .collect();
            let last_of_round = b["last_offset"].as_i64().unwrap() + 1 == end.0;
            if kept.is_empty() && !last_of_round {
                assert!(
                    got.peek().is_none_or(|h| h.base.0 != base),
                    "{name}: batch {base} should be gone"
                );
                continue;
            }
            let h = got
                .next()
                .unwrap_or_else(|| panic!("{name}: batch {base} missing"));
            assert_eq!(h.base.0, base, "{name}");
            assert_eq!(
                h.last.0,
                b["last_offset"].as_i64().unwrap(),
                "{name}: last offset delta kept"
            );
            assert_eq!(h.producer_id, b["producer_id"].as_i64().unwrap());
            assert_eq!(h.base_sequence, b["base_sequence"].as_i64().unwrap() as i32);
            assert_eq!(h.count as usize, kept.len(), "{name}: batch {base}");
            let codec = h.attributes & 0x07;
            let want_codec = match b["compression"].as_str().unwrap() {
                "none" => 0,
                "gzip" => 1,
                "snappy" => 2,
                "lz4" => 3,
                _ => 4,
            };
            if !kept.is_empty() {
                assert_eq!(codec, want_codec, "{name}: codec kept");
            }
            let tombstone = kept.iter().any(|r| r["value_hex"].is_null());
            if tombstone {
                assert_eq!(
                    h.delete_horizon,
                    Some(Timestamp(horizon)),
                    "{name}: batch {base}"
                );
                assert_eq!(h.base_timestamp.0, horizon);
            } else {
                assert_eq!(h.delete_horizon, None);
            }
            if kept.len() == recs.len() && !tombstone {
                assert_eq!(
                    h.max_timestamp.0,
                    b["max_timestamp"].as_i64().unwrap(),
                    "{name}: copied as is"
                );
            } else if !kept.is_empty() {
                let max = kept
                    .iter()
                    .map(|r| r["timestamp"].as_i64().unwrap())
                    .max()
                    .unwrap();
                assert_eq!(h.max_timestamp.0, max, "{name}: CreateTime max recomputed");
            }
            // The records: offsets, timestamps, keys, values, headers.
            let view_at = hdrs.iter().take_while(|x| x.base < h.base).count();
            let mut p = 0;
            for _ in 0..view_at {
                let len =
                    i32::from_be_bytes(bytes[p + 8..p + 12].try_into().unwrap()) as usize + 12;
                p += len;
            }
            let view = strata_log::batch::BatchView::parse(&bytes[p..]).unwrap();
            assert_eq!(
                view.partition_leader_epoch(),
                LeaderEpoch(b["partition_leader_epoch"].as_i64().unwrap() as i32)
            );
            let recs_got = view.records().unwrap();
            for (g, w) in recs_got.iter().zip(&kept) {
                assert_eq!(g.offset.0, w["offset"].as_i64().unwrap());
                assert_eq!(
                    g.timestamp.0,
                    w["timestamp"].as_i64().unwrap(),
                    "{name}: record timestamps kept"
                );
                assert_eq!(g.key, hex(&w["key_hex"]));
                assert_eq!(g.value, hex(&w["value_hex"]));
                let hs: Vec<(String, Option<Vec<u8>>)> = w["headers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| (x["key"].as_str().unwrap().to_string(), hex(&x["value_hex"])))
                    .collect();
                let gh: Vec<(String, Option<Vec<u8>>)> = g
                    .headers
                    .iter()
                    .map(|x| (x.key.clone(), x.value.clone()))
                    .collect();
                assert_eq!(gh, hs);
            }
        }
        // The source fixture is untouched.
        assert_eq!(
            std::fs::read(src.join("00000000000000000000.log")).unwrap(),
            original
        );
        // A second clean after the horizon removes the tombstones.
        clock.advance(cfg.delete_retention_ms + 1);
        append(&log, clock.now_ms(), &[("more", Some("y"))]);
        log.roll().unwrap();
        worker(&clock).clean(&log).unwrap();
        let (_, recs) = read_all(&log);
        assert!(
            recs.iter().all(|r| r.value.is_some()),
            "{name}: tombstones gone after the horizon"
        );
    }
}

fn txn_batch(base: i64, pid: i64, keys: &[(&str, &str)]) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(base))
        .producer(ProducerId(pid), ProducerEpoch(0), 0)
        .transactional(true);
    for (k, v) in keys {
        b.append(Timestamp(T0), Some(k.as_bytes()), Some(v.as_bytes()), &[]);
    }
    b.build()
}

#[test]
fn aborted_data_goes_markers_stay_while_their_data_does() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let cfg = compact_config(1 << 20);
    let log = open(root.path(), &cfg, &clock);
    append_raw(
        &log,
        &txn_batch(0, 5000, &[("a", "committed"), ("b", "committed")]),
    );
    append_raw(
        &log,
        &txn_batch(2, 6000, &[("a", "aborted"), ("c", "aborted")]),
    );
    let marker = |o: i64, pid: i64, m| {
        build_end_txn_marker(
            Offset(o),
            LeaderEpoch(0),
            ProducerId(pid),
            ProducerEpoch(0),
            Timestamp(T0),
            m,
        )
    };
    append_raw(&log, &marker(4, 5000, EndTransactionMarker::commit(0)));
    append_raw(&log, &marker(5, 6000, EndTransactionMarker::abort(0)));
    append(&log, T0, &[("d", Some("plain"))]);
    log.roll().unwrap();
    append(&log, T0, &[("e", Some("active"))]);
    let txn_path = partition_dir(root.path()).join("00000000000000000000.txnindex");
    if !txn_path.exists() {
        let mut idx =
            TransactionIndex::open(&strata_log::fs::StdFs::shared(), &txn_path, Offset(0)).unwrap();
        idx.append(&AbortedTxn::new(
            ProducerId(6000),
            Offset(2),
            Offset(5),
            Offset(5),
        ))
        .unwrap();
        idx.flush().unwrap();
    }
    worker(&clock).clean(&log).unwrap();
    let (hdrs, recs) = read_all(&log);
    let data: Vec<(i64, String)> = recs
        .iter()
        .filter(|r| !r.control)
        .map(|r| {
            (
                r.offset.0,
                String::from_utf8(r.value.clone().unwrap()).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        data,
        vec![
            (0, "committed".into()),
            (1, "committed".into()),
            (6, "plain".into()),
            (7, "active".into())
        ],
        "aborted records are removed regardless of keys"
    );
    // The aborted batch is producer 6000's last data batch: kept as an
    // empty header with its offsets.
    let empty = hdrs
        .iter()
        .find(|h| h.base == Offset(2))
        .expect("empty header kept");
    assert_eq!(
        (empty.count, empty.last, empty.producer_id),
        (0, Offset(3), 6000)
    );
    assert_eq!(empty.base_timestamp, Timestamp::NONE);
    // Both markers stay: their transactions' batches were seen this pass.
    assert!(hdrs.iter().any(|h| h.base == Offset(4) && h.count == 1));
    assert!(hdrs.iter().any(|h| h.base == Offset(5) && h.count == 1));
    // The kept ABORT marker's entry is in the cleaned segment's .txnindex.
    let idx =
        TransactionIndex::open(&strata_log::fs::StdFs::shared(), &txn_path, Offset(0)).unwrap();
    let entries = idx.all_aborted_txns().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (entries[0].producer_id, entries[0].last_offset),
        (ProducerId(6000), Offset(5))
    );
}

#[test]
fn dry_run_predicts_what_the_clean_then_does_without_writing() {
    let src = fixtures().join("data-gzip");
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(partition_dir(root.path())).unwrap();
    std::fs::copy(
        src.join("00000000000000000000.log"),
        partition_dir(root.path()).join("00000000000000000000.log"),
    )
    .unwrap();
    let clock = MockClock::new(T0 + 5_000_000);
    let cfg = compact_config(1 << 20);
    {
        let log = open(root.path(), &cfg, &clock);
        log.roll().unwrap();
        append(&log, clock.now_ms(), &[("not-in-fixture", Some("x"))]);
        log.close().unwrap();
    }
    let listing = names(&partition_dir(root.path()));
    let r = strata_log::cleaner::dry_run(
        &partition_dir(root.path()),
        clock.now_ms(),
        cfg.delete_retention_ms,
        0.9,
    )
    .unwrap();
    assert_eq!(
        names(&partition_dir(root.path())),
        listing,
        "nothing written"
    );
    assert_eq!((r.first_dirty_offset, r.first_uncleanable_offset), (0, 300));
    assert_eq!(r.distinct_dirty_keys, 37);
    assert_eq!(r.records_read, 300);
    let log = open(root.path(), &cfg, &clock);
    let o = worker(&clock).clean(&log).unwrap();
    let below: u64 = log
        .segments()
        .iter()
        .filter(|s| s.base_offset < o.end_offset)
        .map(|s| s.size)
        .sum();
    assert_eq!(r.bytes_after, below, "the estimate is the cleaned size");
    assert_eq!(r.records_kept, o.stats.messages_written);
    assert_eq!(r.reclaimable_bytes, o.bytes_reclaimed());
}
