//! The fast path (walk + splice) against the exact path (record iterator +
//! `BatchBuilder`) on random uncompressed batches: the same output bytes
//! and the same counters, for every retention decision.

use std::collections::HashMap;

use crate::batch::{BatchBuilder, Compression, RecordHeader};
use crate::batch::{BatchScanner, BatchView};
use crate::cleaner::filter::{filter_chunk, FilterContext, EXACT_ONLY};
use crate::cleaner::offset_map::OffsetMap;
use crate::cleaner::superseded::Superseded;
use crate::cleaner::txn::CleanedTxnMetadata;
use crate::producer_state::LastRecord;
use crate::types::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Timestamp};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A random batch at `base`; returns it and its next offset.
fn random_batch(rng: &mut Rng, base: i64) -> (Vec<u8>, i64) {
    let mut b = BatchBuilder::new(Offset(base)).partition_leader_epoch(LeaderEpoch(3));
    if rng.chance(20) {
        b = b.compression(Compression::Gzip);
    }
    if rng.chance(30) {
        b = b.producer(ProducerId(7 + rng.below(2) as i64), ProducerEpoch(1), 5);
    }
    if rng.chance(15) {
        b = b.log_append_time(Timestamp(5_000 + rng.below(100) as i64));
    }
    if rng.chance(15) {
        b = b.delete_horizon(Timestamp(2_000 + rng.below(2_000) as i64));
    }
    let n = 1 + rng.below(20);
    let mut offset = base;
    for i in 0..n {
        let key = format!("k{}", rng.below(10));
        let value = vec![b'v'; rng.below(300) as usize];
        let headers: Vec<RecordHeader> = (0..rng.below(3))
            .map(|h| RecordHeader::new(format!("h{h}"), rng.chance(70).then_some(&b"x"[..])))
            .collect();
        let ts = match rng.below(10) {
            0 => -1,
            1 => 0,
            _ => 1_000 + rng.below(3_000) as i64,
        };
        if i > 0 {
            offset += 1 + rng.below(3) as i64;
        }
        b.append_with_offset(
            Offset(offset),
            Timestamp(ts),
            (!rng.chance(8)).then_some(key.as_bytes()),
            (!rng.chance(25)).then_some(&value[..]),
            &headers,
        )
        .unwrap();
    }
    if rng.chance(20) {
        offset += 2;
        b.override_last_offset(Offset(offset)).unwrap();
    }
    (b.build(), offset + 1)
}

#[allow(clippy::too_many_arguments)]
fn filter(
    map: &mut OffsetMap,
    producers: &HashMap<ProducerId, LastRecord>,
    upper: Offset,
    now_ms: i64,
    input: &[u8],
    exact: bool,
    superseded: Option<&Superseded>,
) -> (String, Vec<u8>) {
    EXACT_ONLY.with(|e| e.set(exact));
    let mut txn = CleanedTxnMetadata::new();
    let mut ctx = FilterContext {
        map,
        txn: &mut txn,
        active_producers: producers,
        upper_bound: upper,
        now_ms,
        delete_retention_ms: 500,
        retain_legacy_deletes: true,
        superseded,
    };
    let mut out = Vec::new();
    let r = filter_chunk(&mut ctx, input, &mut out).unwrap();
    EXACT_ONLY.with(|e| e.set(false));
    (format!("{r:?}"), out)
}

#[test]
fn fast_path_writes_what_the_exact_path_writes() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut rebuilt = 0;
    for case in 0..600 {
        let mut input = Vec::new();
        let mut next = rng.below(1_000) as i64;
        let mut ends = Vec::new();
        for _ in 0..1 + rng.below(5) {
            let (b, n) = random_batch(&mut rng, next);
            input.extend_from_slice(&b);
            ends.push(n);
            next = n;
        }
        let mut map = OffsetMap::new(24 * 64);
        for k in 0..10 {
            if rng.chance(80) {
                let o = Offset(rng.below(next as u64 + 5) as i64);
                map.put(format!("k{k}").as_bytes(), o).unwrap();
            }
        }
        map.update_latest_offset(Offset(rng.below(next as u64 + 5) as i64));
        let mut producers = HashMap::new();
        if rng.chance(50) {
            let last = ends[rng.below(ends.len() as u64) as usize] - 1;
            producers.insert(
                ProducerId(7),
                LastRecord {
                    last_data_offset: Some(Offset(last)),
                    producer_epoch: ProducerEpoch(1),
                },
            );
        }
        let upper = if rng.chance(50) {
            Offset(ends[rng.below(ends.len() as u64) as usize])
        } else {
            Offset(next + 10)
        };
        let now = 1_000 + rng.below(4_000) as i64;
        let fast = filter(&mut map, &producers, upper, now, &input, false, None);
        let exact = filter(&mut map, &producers, upper, now, &input, true, None);
        assert_eq!(fast, exact, "case {case}");
        rebuilt += usize::from(!exact.1.is_empty() && exact.1 != input);
    }
    assert!(rebuilt > 300, "most cases rewrite something ({rebuilt})");
}

/// A map phase over `input` from `start`, stopping after `budget` keys
/// (a full map): the map, and the offsets its puts replaced.
fn map_phase(input: &[u8], start: Offset, budget: u64) -> (OffsetMap, Superseded) {
    let mut map = OffsetMap::new(24 * 64);
    let mut superseded = Superseded::default();
    superseded.reset(start);
    let mut put = 0;
    for item in BatchScanner::new(input) {
        let b = BatchView::parse(&input[item.unwrap().0..]).unwrap();
        for r in b.records().unwrap() {
            let Some(key) = r.key.as_deref().filter(|_| r.offset >= start) else {
                continue;
            };
            if put == budget {
                return (map, superseded);
            }
            put += 1;
            if let Some(old) = map
                .put_hashed_replacing(&OffsetMap::hash(key), r.offset)
                .unwrap()
            {
                superseded.mark(old);
            }
        }
        if b.last_offset() >= start {
            map.update_latest_offset(b.last_offset());
        }
    }
    (map, superseded)
}

#[test]
fn the_superseded_set_answers_as_the_map_would() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for case in 0..600 {
        let mut input = Vec::new();
        let first = rng.below(1_000) as i64;
        let mut next = first;
        for _ in 0..1 + rng.below(5) {
            let (b, n) = random_batch(&mut rng, next);
            input.extend_from_slice(&b);
            next = n;
        }
        let start = Offset(first + rng.below((next - first) as u64) as i64);
        let (mut map, superseded) = map_phase(&input, start, rng.below(60));
        let upper = Offset(next + 10);
        let now = 1_000 + rng.below(4_000) as i64;
        let producers = HashMap::new();
        let fast = filter(
            &mut map,
            &producers,
            upper,
            now,
            &input,
            false,
            Some(&superseded),
        );
        let exact = filter(&mut map, &producers, upper, now, &input, true, None);
        assert_eq!(fast, exact, "case {case}");
    }
}
