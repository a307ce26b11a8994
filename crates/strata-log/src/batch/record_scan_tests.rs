//! The fast pass must agree with the exact record iterator on every input:
//! same acceptance, same max timestamp and offset delta.

use proptest::prelude::*;

use super::*;
use crate::batch::record::{RecordContext, RecordIter};
use crate::batch::validate::exact_scan;
use crate::batch::varint::{write_varint, write_varlong};
use crate::batch::{AppendValidation, TimestampType};
use crate::types::Timestamp;

const BASE_TS: i64 = 1_700_000_000_000;

/// One record to encode; `offset_delta` is usually its index.
#[derive(Clone, Debug)]
struct Rec {
    ts_delta: i64,
    offset_delta: i32,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// Bytes left inside the declared length after the headers (invalid).
    pad: usize,
}

fn put_bytes(out: &mut Vec<u8>, b: &Option<Vec<u8>>) {
    match b {
        None => write_varint(out, -1),
        Some(b) => {
            write_varint(out, b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}

fn encode(recs: &[Rec]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in recs {
        let mut body = vec![0u8];
        write_varlong(&mut body, r.ts_delta);
        write_varint(&mut body, r.offset_delta);
        put_bytes(&mut body, &r.key);
        put_bytes(&mut body, &r.value);
        write_varint(&mut body, r.headers.len() as i32);
        for (k, v) in &r.headers {
            put_bytes(&mut body, &Some(k.clone()));
            put_bytes(&mut body, v);
        }
        body.resize(body.len() + r.pad, 0);
        write_varint(&mut out, body.len() as i32);
        out.extend_from_slice(&body);
    }
    out
}

#[derive(Clone, Copy, Debug)]
struct Setup {
    compacted: bool,
    create_time: bool,
    before_ms: i64,
    after_ms: i64,
}

fn cfg(s: Setup) -> AppendValidation {
    AppendValidation {
        max_message_bytes: 1 << 20,
        compacted: s.compacted,
        timestamp_type: if s.create_time {
            TimestampType::CreateTime
        } else {
            TimestampType::LogAppendTime
        },
        timestamp_before_max_ms: s.before_ms,
        timestamp_after_max_ms: s.after_ms,
        now: Timestamp(BASE_TS),
    }
}

/// Both passes over `data` declared to hold `count` records.
fn both(data: &[u8], count: usize, s: Setup) -> (Option<ScanSummary>, Option<ScanSummary>) {
    let c = cfg(s);
    let (min_ts, max_ts) = (
        BASE_TS.saturating_sub(s.before_ms),
        BASE_TS.saturating_add(s.after_ms),
    );
    let rules = ScanRules {
        base_timestamp: Timestamp(BASE_TS),
        check_timestamps: s.create_time,
        min_ts,
        max_ts,
        require_key: s.compacted,
    };
    let fast = scan_client_records(data, count, &rules);
    let ctx = RecordContext {
        base_offset: 0,
        base_timestamp: BASE_TS,
        base_sequence: -1,
        log_append_time: None,
    };
    let exact = exact_scan(RecordIter::new(data, count, ctx), &c, min_ts, max_ts, false)
        .ok()
        .map(|(ts, delta)| ScanSummary {
            max_timestamp: ts,
            offset_delta_of_max: delta,
        });
    (fast, exact)
}

const OPEN: Setup = Setup {
    compacted: false,
    create_time: true,
    before_ms: i64::MAX,
    after_ms: i64::MAX,
};

fn rec(i: i32, ts_delta: i64, key: Option<&[u8]>, value_len: usize) -> Rec {
    Rec {
        ts_delta,
        offset_delta: i,
        key: key.map(<[u8]>::to_vec),
        value: Some(vec![b'v'; value_len]),
        headers: Vec::new(),
        pad: 0,
    }
}

#[test]
fn valid_records_pass_with_the_exact_summary() {
    // One-, two- and three-byte lengths, a large timestamp delta, a header.
    let mut recs: Vec<Rec> = (0..40)
        .map(|i| {
            rec(
                i,
                (i as i64 * 7919) % 100_000,
                Some(b"key"),
                i as usize * 300,
            )
        })
        .collect();
    recs[3].headers = vec![(b"h".to_vec(), None), (vec![b'x'; 200], Some(vec![1; 70]))];
    recs[5].ts_delta = 900_000;
    let data = encode(&recs);
    let (fast, exact) = both(&data, recs.len(), OPEN);
    let fast = fast.expect("valid records take the fast pass");
    assert_eq!(Some(fast), exact);
    assert_eq!(fast.max_timestamp, Timestamp(BASE_TS + 900_000));
    assert_eq!(fast.offset_delta_of_max, 5);
}

#[test]
fn each_rule_sends_the_batch_to_the_exact_path() {
    let good: Vec<Rec> = (0..5).map(|i| rec(i, i as i64, Some(b"k"), 100)).collect();
    let mut cases: Vec<(&str, Vec<u8>, usize, Setup)> = Vec::new();
    let mut r = good.clone();
    r[2].offset_delta = 3;
    cases.push(("offset delta", encode(&r), 5, OPEN));
    let mut r = good.clone();
    r[2].pad = 1;
    cases.push(("declared size past the fields", encode(&r), 5, OPEN));
    let mut r = good.clone();
    r[1].key = None;
    let compacted = Setup {
        compacted: true,
        ..OPEN
    };
    cases.push(("missing key", encode(&r), 5, compacted));
    let late = Setup {
        after_ms: 2,
        ..OPEN
    };
    cases.push(("timestamp window", encode(&good), 5, late));
    let mut trailing = encode(&good);
    trailing.push(0);
    cases.push(("trailing byte", trailing, 5, OPEN));
    cases.push(("too few records", encode(&good), 6, OPEN));
    let mut r = good.clone();
    r[4].headers = vec![(b"k".to_vec(), None)];
    let mut bad_header = encode(&r);
    // The header key length byte sits right before its key: make it -1.
    let at = bad_header.len() - 3;
    assert_eq!(bad_header[at], 2, "header key length 1");
    bad_header[at] = 1;
    cases.push(("null header key", bad_header, 5, OPEN));
    for (what, data, count, setup) in cases {
        assert_eq!(both(&data, count, setup), (None, None), "{what}");
    }
    // The same records pass with an open window and no key rule.
    assert!(both(&encode(&good), 5, compacted).0.is_some());
}

fn bytes_strategy(max: usize) -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        1 => Just(None),
        6 => proptest::collection::vec(any::<u8>(), 0..max).prop_map(Some),
    ]
}

type RawRec = (i64, Option<Vec<u8>>, Option<Vec<u8>>, usize, usize);

fn rec_strategy() -> impl Strategy<Value = RawRec> {
    (
        prop_oneof![3 => -5i64..200, 1 => any::<i64>(), 1 => -100_000i64..100_000],
        bytes_strategy(90),
        bytes_strategy(300),
        0usize..3,
        prop_oneof![12 => Just(0usize), 1 => 1usize..3],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn fast_pass_agrees_with_exact_path(
        raw in proptest::collection::vec(rec_strategy(), 1..12),
        header in bytes_strategy(70),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
        cut in proptest::option::of(any::<prop::sample::Index>()),
        count_skew in -1i64..2,
        compacted in any::<bool>(),
        create_time in any::<bool>(),
        window in prop_oneof![Just(i64::MAX), 0i64..300],
    ) {
        let recs: Vec<Rec> = raw
            .into_iter()
            .enumerate()
            .map(|(i, (ts_delta, key, value, headers, pad))| Rec {
                ts_delta,
                offset_delta: i as i32,
                key,
                value,
                headers: (0..headers).map(|h| (vec![b'h'; h * 40], header.clone())).collect(),
                pad,
            })
            .collect();
        let mut data = encode(&recs);
        for (at, byte) in &edits {
            let i = at.index(data.len());
            data[i] = *byte;
        }
        if let Some(c) = cut {
            data.truncate(c.index(data.len() + 1));
        }
        // A batch declaring no records is rejected before either pass runs.
        let count = (recs.len() as i64 + count_skew).max(1) as usize;
        let setup = Setup { compacted, create_time, before_ms: window, after_ms: window };
        let (fast, exact) = both(&data, count, setup);
        prop_assert_eq!(fast, exact);
    }
}

#[test]
fn non_canonical_varints_decode_as_java_does() {
    // Offset delta 0 written in five bytes whose surplus high bits Java
    // drops; a null key and value; no headers.
    let data = [
        0x14, 0x00, 0x00, 0x80, 0x80, 0x80, 0x80, 0x70, 0x01, 0x01, 0x00,
    ];
    let (fast, exact) = both(&data, 1, OPEN);
    assert_eq!(fast, exact);
    assert_eq!(
        fast,
        Some(ScanSummary {
            max_timestamp: Timestamp(BASE_TS),
            offset_delta_of_max: 0
        })
    );
    // The same record claiming to be the second one fails both ways.
    let mut second = data;
    second[7] = 0x72;
    assert_eq!(both(&second, 1, OPEN), (None, None));
}
