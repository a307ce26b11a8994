//! Micro-benchmark: what producer-state work adds to the cost of a leader
//! append of idempotent batches.
//!
//! Baseline per batch: the shallow validation every append does (header,
//! CRC-32C) and copying the batch into an in-memory "segment" (the page-cache
//! write). Measured: the same plus `find_duplicate_batch`, `validate_batch`,
//! `apply_updates` and `update_map_end_offset` for one known producer.
//! Prints ns/batch for both and their ratio (the budget is <= 1.10),
//! median of several runs in this one process.
//!
//! Run: `cargo run --release -p strata-log --example producer_state_bench [records_per_batch]`

use std::hint::black_box;
use std::time::Instant;

use strata_log::batch::{validate_batch, BatchBuilder, BatchView};
use strata_log::producer_state::{AppendOrigin, ProducerStateManager, ProducerUpdates};
use strata_log::{Offset, ProducerEpoch, ProducerId, Timestamp, TopicPartition};

const BATCHES: usize = 20_000;
const RUNS: usize = 7;

fn build(records: i32) -> Vec<Vec<u8>> {
    let value = [b'x'; 100];
    (0..BATCHES as i32)
        .map(|i| {
            let mut b = BatchBuilder::new(Offset(i as i64 * records as i64)).producer(
                ProducerId(42),
                ProducerEpoch(0),
                i * records,
            );
            for _ in 0..records {
                b.append(Timestamp(1_700_000_000_000), None, Some(&value), &[]);
            }
            b.build()
        })
        .collect()
}

fn baseline(batches: &[Vec<u8>], segment: &mut Vec<u8>) -> f64 {
    segment.clear();
    let start = Instant::now();
    for bytes in batches {
        let view = BatchView::parse(bytes).expect("batch");
        validate_batch(&view).expect("valid");
        segment.extend_from_slice(bytes);
    }
    black_box(&segment);
    start.elapsed().as_nanos() as f64 / batches.len() as f64
}

fn with_producer_state(batches: &[Vec<u8>], segment: &mut Vec<u8>, dir: &std::path::Path) -> f64 {
    let mut psm = ProducerStateManager::new(dir, TopicPartition::new("bench", 0), 86_400_000)
        .expect("manager");
    segment.clear();
    let start = Instant::now();
    for bytes in batches {
        let view = BatchView::parse(bytes).expect("batch");
        validate_batch(&view).expect("valid");
        assert!(psm.find_duplicate_batch(&view).is_none());
        let mut updates = ProducerUpdates::new();
        psm.validate_batch(&mut updates, &view, AppendOrigin::Client)
            .expect("in sequence");
        segment.extend_from_slice(bytes);
        black_box(psm.apply_updates(updates));
        psm.update_map_end_offset(view.next_offset());
    }
    black_box(&segment);
    start.elapsed().as_nanos() as f64 / batches.len() as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let records: i32 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("records per batch"))
        .unwrap_or(10);
    let batches = build(records);
    let dir = std::env::temp_dir().join(format!("strata-psm-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut segment = Vec::with_capacity(batches.iter().map(Vec::len).sum());
    // Warm up both paths once.
    baseline(&batches, &mut segment);
    with_producer_state(&batches, &mut segment, &dir);
    let (mut base, mut ps) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        base.push(baseline(&batches, &mut segment));
        ps.push(with_producer_state(&batches, &mut segment, &dir));
    }
    let (base, ps) = (median(base), median(ps));
    let size = batches[0].len();
    println!("batches: {BATCHES} x {records} records ({size} bytes each), median of {RUNS} runs");
    println!("baseline (validate + copy):      {base:8.1} ns/batch");
    println!("with producer state:             {ps:8.1} ns/batch");
    println!("ratio:                           {:8.3}", ps / base);
    let _ = std::fs::remove_dir_all(&dir);
}
