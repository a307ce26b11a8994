//! Unit tests of the cleaner's filter over hand-built batches (§11.7).

use std::collections::HashMap;

use super::*;
use crate::batch::{BatchBuilder, BatchScanner, BatchView};
use crate::types::Offset;
use crate::types::{ProducerEpoch, ProducerId, Timestamp};

fn batch(base: i64, recs: &[(Option<&str>, Option<&str>)]) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(base));
    for (k, v) in recs {
        b.append(
            Timestamp(100),
            k.map(str::as_bytes),
            v.map(str::as_bytes),
            &[],
        );
    }
    b.build()
}

fn run(
    map: &mut OffsetMap,
    producers: &HashMap<ProducerId, LastRecord>,
    upper: i64,
    input: &[u8],
) -> (ChunkResult, Vec<u8>) {
    let mut txn = CleanedTxnMetadata::new();
    let mut ctx = FilterContext {
        map,
        txn: &mut txn,
        active_producers: producers,
        upper_bound: Offset(upper),
        now_ms: 1_000,
        delete_retention_ms: 50,
        retain_legacy_deletes: true,
        superseded: None,
    };
    let mut out = Vec::new();
    let r = filter_chunk(&mut ctx, input, &mut out).unwrap();
    (r, out)
}

fn views(bytes: &[u8]) -> Vec<BatchView<'_>> {
    BatchScanner::new(bytes)
        .map(|i| BatchView::parse(&bytes[i.unwrap().0..]).unwrap())
        .collect()
}

#[test]
fn superseded_batches_go_and_the_round_keeps_its_last_batch() {
    let mut map = OffsetMap::new(24 * 100);
    map.put(b"a", Offset(2)).unwrap();
    map.put(b"b", Offset(3)).unwrap();
    let mut input = batch(0, &[(Some("a"), Some("1")), (Some("b"), Some("1"))]);
    input.extend(batch(2, &[(Some("a"), Some("2")), (Some("b"), Some("2"))]));
    let (r, out) = run(&mut map, &HashMap::new(), 4, &input);
    let v = views(&out);
    assert_eq!(v.len(), 1);
    assert_eq!(
        v[0].as_bytes(),
        &input[input.len() - v[0].size()..],
        "copied unchanged"
    );
    assert_eq!(
        (r.messages_read, r.messages_retained, r.max_offset),
        (4, 2, Offset(3))
    );
    // Everything superseded but the batch ends the round: an empty header.
    map.put(b"a", Offset(10)).unwrap();
    map.put(b"b", Offset(11)).unwrap();
    let (_, out) = run(&mut map, &HashMap::new(), 4, &input);
    let v = views(&out);
    assert_eq!(
        (
            v.len(),
            v[0].records_count(),
            v[0].base_offset(),
            v[0].last_offset()
        ),
        (1, 0, Offset(2), Offset(3))
    );
}

#[test]
fn keyless_records_are_dropped_and_the_last_offset_is_kept() {
    let mut map = OffsetMap::new(24 * 100);
    map.put(b"a", Offset(0)).unwrap();
    map.update_latest_offset(Offset(5));
    let input = batch(0, &[(Some("a"), Some("1")), (None, Some("x"))]);
    let (r, out) = run(&mut map, &HashMap::new(), 100, &input);
    assert_eq!(r.invalid_records, 1);
    let v = views(&out);
    assert_eq!(
        (v[0].records_count(), v[0].last_offset()),
        (1, Offset(1)),
        "rebuilt, lastOffset kept"
    );
    assert!(v[0].is_crc_valid());
}

#[test]
fn a_producers_last_batch_survives_as_an_empty_header() {
    let mut map = OffsetMap::new(24 * 100);
    map.put(b"a", Offset(9)).unwrap();
    let mut b = BatchBuilder::new(Offset(0)).producer(ProducerId(7), ProducerEpoch(2), 40);
    b.append(Timestamp(100), Some(b"a"), Some(b"old"), &[]);
    let input = b.build();
    let mut producers = HashMap::new();
    producers.insert(
        ProducerId(7),
        LastRecord {
            last_data_offset: Some(Offset(0)),
            producer_epoch: ProducerEpoch(2),
        },
    );
    let (_, out) = run(&mut map, &producers, 100, &input);
    let v = views(&out);
    assert_eq!(v.len(), 1);
    assert_eq!(
        (
            v[0].records_count(),
            v[0].producer_id(),
            v[0].base_sequence()
        ),
        (0, ProducerId(7), 40)
    );
    // Without the producer entry it simply disappears.
    let (_, out) = run(&mut map, &HashMap::new(), 100, &input);
    assert!(out.is_empty());
}

#[test]
fn a_surviving_tombstone_gets_the_horizon_once() {
    let mut map = OffsetMap::new(24 * 100);
    map.put(b"a", Offset(0)).unwrap();
    let input = batch(0, &[(Some("a"), None)]);
    let (_, out) = run(&mut map, &HashMap::new(), 100, &input);
    let v = views(&out);
    assert_eq!(v[0].delete_horizon(), Some(Timestamp(1_050)));
    assert_eq!(
        v[0].records().unwrap()[0].timestamp,
        Timestamp(100),
        "record timestamp kept"
    );
    // Recopied before the horizon: unchanged bytes.
    let again = out.clone();
    let (_, out2) = run(&mut map, &HashMap::new(), 100, &again);
    assert_eq!(out2, again);
}

#[test]
fn rebuilt_records_keep_their_own_headers() {
    use crate::batch::RecordHeader;
    let h = |k: &str, v: Option<&str>| RecordHeader::new(k, v.map(str::as_bytes));
    let per_record = [
        vec![h("h1", Some("one")), h("h2", None)],
        vec![],
        vec![h("h3", None), h("h4", Some("four")), h("h5", Some("five"))],
        vec![h("h6", Some("six"))],
    ];
    let mut b = BatchBuilder::new(Offset(0));
    for (i, hs) in per_record.iter().enumerate() {
        b.append(
            Timestamp(100),
            Some(format!("k{i}").as_bytes()),
            Some(b"v"),
            hs,
        );
    }
    b.append(
        Timestamp(100),
        Some(b"gone"),
        Some(b"v"),
        &[h("x", Some("x"))],
    );
    let input = b.build();
    let mut map = OffsetMap::new(24 * 100);
    for i in 0..4i64 {
        map.put(format!("k{i}").as_bytes(), Offset(i)).unwrap();
    }
    map.put(b"gone", Offset(50)).unwrap();
    let (r, out) = run(&mut map, &HashMap::new(), 100, &input);
    assert_eq!(r.messages_retained, 4);
    let v = views(&out);
    assert_eq!(v.len(), 1, "one rebuilt batch");
    let records = v[0].records().unwrap();
    let headers: Vec<Vec<RecordHeader>> = records.into_iter().map(|r| r.headers).collect();
    assert_eq!(headers, per_record.to_vec(), "headers are not carried over");
}
