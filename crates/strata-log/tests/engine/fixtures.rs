//! Guards byte compatibility with Apache Kafka: every segment that Kafka's own
//! record builder wrote (`tests/fixtures/kafka-records/*`) must read back
//! exactly as its `manifest.json` says (every batch field, every record), must
//! pass validation, and uncompressed batches rebuilt with `BatchBuilder` must
//! equal Kafka's bytes.
//!
//! The fixtures live in `tests/fixtures/` at the repository root; set
//! `STRATA_FIXTURES` to point elsewhere. A missing fixture fails the test.

use std::path::{Path, PathBuf};

use serde_json::Value;
use strata_log::batch::{
    validate_batch, validate_batch_deep, BatchBuilder, BatchScanner, BatchView, Compression,
    ControlRecordType, EndTransactionMarker, RecordHeader, TimestampType,
};
use strata_log::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Timestamp};

/// Every fixture directory the suite must find.
const EXPECTED: [&str; 9] = [
    "base-offset-12345678",
    "data-gzip",
    "data-lz4",
    "data-none",
    "data-snappy",
    "data-zstd",
    "delete-horizon",
    "idempotent-and-transactional",
    "log-append-time",
];

fn fixtures_dir() -> PathBuf {
    match std::env::var_os("STRATA_FIXTURES") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/kafka-records"
        )),
    }
}

fn hex_opt(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(hex::decode(s).expect("hex in manifest")),
        other => panic!("expected hex string or null, got {other}"),
    }
}

fn int(v: &Value, field: &str) -> i64 {
    v[field]
        .as_i64()
        .unwrap_or_else(|| panic!("manifest field {field} missing or not an integer: {v}"))
}

fn flag(v: &Value, field: &str) -> bool {
    v[field]
        .as_bool()
        .unwrap_or_else(|| panic!("manifest field {field} missing or not a bool"))
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("manifest field {field} missing or not a string"))
}

/// What the fixture suite saw, to prove the coverage it claims.
#[derive(Default)]
struct Seen {
    codecs: Vec<Compression>,
    log_append_time: bool,
    delete_horizon: bool,
    commit: bool,
    abort: bool,
    tombstones: usize,
    null_header_values: usize,
    rebuilt_exactly: usize,
}

fn check_fixture(dir: &Path, seen: &mut Seen) {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(dir.join("manifest.json"))
            .unwrap_or_else(|e| panic!("{name}: manifest.json: {e}")),
    )
    .unwrap_or_else(|e| panic!("{name}: manifest.json: {e}"));
    let file = text(&manifest, "file");
    let bytes = std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{name}/{file}: {e}"));
    assert_eq!(
        bytes.len() as i64,
        int(&manifest, "size_in_bytes"),
        "{name}: file size"
    );

    let expected_batches = manifest["batches"].as_array().expect("batches");
    let mut scanner = BatchScanner::new(&bytes);
    let found: Vec<_> = scanner
        .by_ref()
        .map(|r| r.unwrap_or_else(|e| panic!("{name}: scan: {e}")))
        .collect();
    assert_eq!(scanner.position(), bytes.len(), "{name}: scan reaches EOF");
    assert_eq!(found.len(), expected_batches.len(), "{name}: batch count");
    // The file name is the base offset of the first batch (20 digits).
    if let Some(first) = expected_batches.first() {
        assert_eq!(
            file,
            format!("{:020}.log", int(first, "base_offset")),
            "{name}"
        );
    }

    for (i, (eb, (pos, _prefix))) in expected_batches.iter().zip(&found).enumerate() {
        let ctx = format!("{name} batch {i}");
        let view = BatchView::parse(&bytes[*pos..]).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        check_batch_header(&ctx, eb, *pos, &view, seen);
        validate_batch(&view).unwrap_or_else(|e| panic!("{ctx}: validate: {e}"));
        let deep = validate_batch_deep(&view).unwrap_or_else(|e| panic!("{ctx}: deep: {e}"));
        assert_eq!(deep as i64, int(eb, "count"), "{ctx}: deep count");
        check_records(&ctx, eb, &view, seen);
        check_rebuild(&ctx, &view, seen);
    }
}

fn check_batch_header(ctx: &str, eb: &Value, pos: usize, view: &BatchView<'_>, seen: &mut Seen) {
    assert_eq!(pos as i64, int(eb, "position"), "{ctx}: position");
    assert_eq!(view.size() as i64, int(eb, "size"), "{ctx}: size");
    assert_eq!(
        view.base_offset().0,
        int(eb, "base_offset"),
        "{ctx}: base_offset"
    );
    assert_eq!(
        view.last_offset().0,
        int(eb, "last_offset"),
        "{ctx}: last_offset"
    );
    assert_eq!(
        view.records_count() as i64,
        int(eb, "count"),
        "{ctx}: count"
    );
    assert_eq!(
        view.partition_leader_epoch().0 as i64,
        int(eb, "partition_leader_epoch"),
        "{ctx}: partition_leader_epoch"
    );
    assert_eq!(view.crc() as i64, int(eb, "crc"), "{ctx}: crc");
    assert!(view.is_crc_valid(), "{ctx}: crc valid");
    let codec = view.compression().expect("known codec");
    assert_eq!(codec.name(), text(eb, "compression"), "{ctx}: compression");
    if !seen.codecs.contains(&codec) {
        seen.codecs.push(codec);
    }
    assert_eq!(
        view.timestamp_type().name(),
        text(eb, "timestamp_type"),
        "{ctx}: timestamp_type"
    );
    seen.log_append_time |= view.timestamp_type() == TimestampType::LogAppendTime;
    assert_eq!(
        view.max_timestamp().0,
        int(eb, "max_timestamp"),
        "{ctx}: max_timestamp"
    );
    assert_eq!(
        view.producer_id().0,
        int(eb, "producer_id"),
        "{ctx}: producer_id"
    );
    assert_eq!(
        view.producer_epoch().0 as i64,
        int(eb, "producer_epoch"),
        "{ctx}: producer_epoch"
    );
    assert_eq!(
        view.base_sequence() as i64,
        int(eb, "base_sequence"),
        "{ctx}: base_sequence"
    );
    assert_eq!(
        view.is_transactional(),
        flag(eb, "is_transactional"),
        "{ctx}: txn"
    );
    assert_eq!(view.is_control(), flag(eb, "is_control"), "{ctx}: control");
    let horizon = view.delete_horizon().map_or(-1, |t| t.0);
    assert_eq!(
        horizon,
        int(eb, "delete_horizon_ms"),
        "{ctx}: delete_horizon_ms"
    );
    seen.delete_horizon |= horizon >= 0;
}

fn check_records(ctx: &str, eb: &Value, view: &BatchView<'_>, seen: &mut Seen) {
    let expected = eb["records"].as_array().expect("records");
    let mut scratch = Vec::new();
    let records: Vec<_> = view
        .record_iter(&mut scratch)
        .unwrap_or_else(|e| panic!("{ctx}: records: {e}"))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{ctx}: records: {e}"));
    assert_eq!(records.len(), expected.len(), "{ctx}: record count");
    for (j, (er, r)) in expected.iter().zip(&records).enumerate() {
        let rctx = format!("{ctx} record {j}");
        assert_eq!(r.offset.0, int(er, "offset"), "{rctx}: offset");
        assert_eq!(r.timestamp.0, int(er, "timestamp"), "{rctx}: timestamp");
        assert_eq!(
            r.key.map(<[u8]>::to_vec),
            hex_opt(&er["key_hex"]),
            "{rctx}: key"
        );
        assert_eq!(
            r.value.map(<[u8]>::to_vec),
            hex_opt(&er["value_hex"]),
            "{rctx}: value"
        );
        seen.tombstones += usize::from(r.value.is_none());
        let eh = er["headers"].as_array().expect("headers");
        let headers: Vec<_> = r.headers.collect();
        assert_eq!(headers.len(), eh.len(), "{rctx}: header count");
        for (h, e) in headers.iter().zip(eh) {
            assert_eq!(h.key_str(), text(e, "key"), "{rctx}: header key");
            assert_eq!(
                h.value.map(<[u8]>::to_vec),
                hex_opt(&e["value_hex"]),
                "{rctx}: header value"
            );
            seen.null_header_values += usize::from(h.value.is_none());
        }
        let expected_seq = if view.base_sequence() >= 0 {
            view.base_sequence() + r.offset_delta
        } else {
            -1
        };
        assert_eq!(r.sequence, expected_seq, "{rctx}: sequence");
        if view.is_control() {
            let kind = ControlRecordType::parse_key(r.key).unwrap();
            let marker = EndTransactionMarker::from_record(r).unwrap();
            assert_eq!(marker.control_type, kind);
            seen.commit |= kind == ControlRecordType::Commit;
            seen.abort |= kind == ControlRecordType::Abort;
        }
    }
}

/// Re-encode the batch with `BatchBuilder` from what was read: uncompressed
/// batches must come out identical to Kafka's bytes; compressed ones must
/// decode to the same records.
fn check_rebuild(ctx: &str, view: &BatchView<'_>, seen: &mut Seen) {
    let codec = view.compression().unwrap();
    let mut b = BatchBuilder::new(view.base_offset())
        .compression(codec)
        .partition_leader_epoch(LeaderEpoch(view.partition_leader_epoch().0))
        .producer(
            ProducerId(view.producer_id().0),
            ProducerEpoch(view.producer_epoch().0),
            view.base_sequence(),
        )
        .transactional(view.is_transactional())
        .control(view.is_control());
    if let Some(h) = view.delete_horizon() {
        b = b.delete_horizon(h);
    }
    if view.timestamp_type() == TimestampType::LogAppendTime {
        b = b.log_append_time(view.max_timestamp());
    }
    let mut scratch = Vec::new();
    for r in view.record_iter(&mut scratch).unwrap() {
        let r = r.unwrap();
        let headers: Vec<RecordHeader> = r.headers.map(|h| h.to_owned_header()).collect();
        // The stored timestamp (LogAppendTime batches report MaxTimestamp instead).
        let ts = Timestamp(view.base_timestamp().0 + r.timestamp_delta);
        b.append_with_offset(Offset(r.offset.0), ts, r.key, r.value, &headers)
            .unwrap();
    }
    let rebuilt = b.build();
    let again = BatchView::parse(&rebuilt).unwrap();
    if codec == Compression::None && again.last_offset() == view.last_offset() {
        assert_eq!(
            rebuilt,
            view.as_bytes(),
            "{ctx}: rebuilt bytes differ from Kafka's"
        );
        seen.rebuilt_exactly += 1;
    } else {
        assert_eq!(
            again.records().unwrap(),
            view.records().unwrap(),
            "{ctx}: rebuilt records"
        );
    }
}

#[test]
fn kafka_written_segments_match_their_manifests() {
    let root = fixtures_dir();
    assert!(root.is_dir(), "fixtures not found at {}", root.display());
    for name in EXPECTED {
        assert!(
            root.join(name).join("manifest.json").is_file(),
            "fixture {name} is missing"
        );
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut seen = Seen::default();
    for dir in &dirs {
        check_fixture(dir, &mut seen);
    }
    assert!(dirs.len() >= EXPECTED.len());
    // The suite really covered what it claims.
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        assert!(
            seen.codecs.contains(&codec),
            "no {} batch seen",
            codec.name()
        );
    }
    assert!(seen.log_append_time && seen.delete_horizon && seen.commit && seen.abort);
    assert!(seen.tombstones > 0 && seen.null_header_values > 0);
    assert!(
        seen.rebuilt_exactly > 10,
        "{} batches rebuilt",
        seen.rebuilt_exactly
    );
}
