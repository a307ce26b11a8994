//! Benchmark: what producer state (idempotence) adds to a leader append —
//! the budget is at most 10%.
//!
//! Same process, same run: `Log::append_as_leader` of client batches
//! without a producer id (the log's producer-state step is a header read
//! and an early return) against the same batches carrying producer id 42
//! with consecutive sequences (duplicate check, validation, commit of the
//! producer entry, map end). The batches have the same size, records and
//! codec, so the difference is the producer-state work. Each figure is the
//! fastest of several passes, alternating which kind goes first (on a shared
//! machine other processes only ever add time).
//!
//! Run: `cargo bench -p strata-log --bench producer_state [-- records_per_batch...]`
//! (default: 1 and 10 records per batch).

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use strata_log::batch::{BatchBuilder, BatchViewMut};
use strata_log::{
    DirHealth, LeaderEpoch, LoadParams, Log, LogConfig, Offset, ProducerEpoch, ProducerId,
    SystemClock, Timestamp,
};

const BATCHES: usize = 20_000;
const RUNS: usize = 12;
const NOW: i64 = 1_700_000_000_000;

/// Client batches as a producer sends them: base offset 0; with
/// `idempotent`, producer 42 epoch 0 and consecutive sequences.
fn build(records: i32, idempotent: bool) -> Vec<Vec<u8>> {
    let value = [b'x'; 100];
    (0..BATCHES as i32)
        .map(|i| {
            let mut b = BatchBuilder::new(Offset(0));
            if idempotent {
                b = b.producer(ProducerId(42), ProducerEpoch(0), i * records);
            }
            for _ in 0..records {
                b.append(Timestamp(NOW), None, Some(&value), &[]);
            }
            b.build()
        })
        .collect()
}

/// One pass of `Log::append_as_leader` (page-cache writes, no fsync) into a
/// fresh partition directory; ns per batch.
fn run_log(batches: &mut [Vec<u8>], root: &Path, pass: usize) -> f64 {
    let dir = root.join(format!("bench-{pass}"));
    let log = Log::open(
        &dir,
        LogConfig::default(),
        LoadParams::default(),
        SystemClock::shared(),
        DirHealth::new(root),
    )
    .expect("open log");
    let start = Instant::now();
    for bytes in batches.iter_mut() {
        let info = log.append_as_leader(bytes, LeaderEpoch(0)).expect("append");
        debug_assert!(!info.duplicate);
        black_box(info);
        // Back to a client batch for the next pass (same cost on both kinds).
        BatchViewMut::parse(bytes)
            .expect("batch")
            .set_base_offset(Offset(0));
    }
    let elapsed = start.elapsed().as_nanos() as f64 / batches.len() as f64;
    log.close().expect("close");
    let _ = std::fs::remove_dir_all(&dir);
    elapsed
}

/// The fastest run: the least disturbed measurement.
fn fastest(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn bench(records: i32, root: &Path) {
    let mut plain = build(records, false);
    let mut idem = build(records, true);
    assert_eq!(plain[0].len(), idem[0].len(), "same batch size");
    let (mut p, mut i) = (Vec::new(), Vec::new());
    // Round 0 warms up both paths and is discarded.
    for round in 0..=RUNS {
        let (a, b) = if round % 2 == 0 {
            let a = run_log(&mut plain, root, 2 * round);
            (a, run_log(&mut idem, root, 2 * round + 1))
        } else {
            let b = run_log(&mut idem, root, 2 * round + 1);
            (run_log(&mut plain, root, 2 * round), b)
        };
        if round > 0 {
            p.push(a);
            i.push(b);
        }
    }
    let size = plain[0].len();
    println!(
        "{BATCHES} batches x {records} records ({size} bytes each), {RUNS} runs, fastest / median:"
    );
    println!(
        "  append_as_leader, no producer id:   {:8.1} / {:8.1} ns/batch",
        fastest(&p),
        median(&p)
    );
    println!(
        "  append_as_leader, idempotent:       {:8.1} / {:8.1} ns/batch",
        fastest(&i),
        median(&i)
    );
    println!(
        "  producer-state overhead:            {:+7.1}% / {:+7.1}%",
        100.0 * (fastest(&i) / fastest(&p) - 1.0),
        100.0 * (median(&i) / median(&p) - 1.0)
    );
}

fn main() {
    let args: Vec<i32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if args.is_empty() { vec![1, 10] } else { args };
    let root = std::env::temp_dir().join(format!("strata-psm-bench-{}", std::process::id()));
    std::fs::create_dir_all(&root).expect("temp dir");
    for records in sizes {
        bench(records, &root);
    }
    let _ = std::fs::remove_dir_all(&root);
}
