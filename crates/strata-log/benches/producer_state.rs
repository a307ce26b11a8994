//! Benchmark: what producer state (idempotence) adds to a leader append —
//! the budget is at most 10%.
//!
//! Same process, same run: `Log::append_as_leader` of client batches
//! without a producer id (the log's producer-state step is a header read
//! and an early return) against the same batches carrying producer id 42
//! with consecutive sequences (duplicate check, validation, commit of the
//! producer entry, map end). The batches have the same size, records and
//! codec, so the difference is the producer-state work. The two kinds are
//! appended in alternating blocks of 250 batches to two partitions of the
//! same process, so machine noise (other processes only ever add time)
//! falls on both alike; the report compares the fastest block, the 10th
//! percentile and the median block of each kind.
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
const BLOCK: usize = 250;
const PASSES: usize = 5;
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

/// Two fresh partitions in `root`, one per kind.
fn open_log(root: &Path, name: &str) -> std::sync::Arc<Log> {
    Log::open(
        &root.join(name),
        LogConfig::default(),
        LoadParams::default(),
        SystemClock::shared(),
        DirHealth::new(root),
    )
    .expect("open log")
}

/// Append `batches` (page-cache writes, no fsync); ns per batch.
fn append_block(log: &Log, batches: &mut [Vec<u8>]) -> f64 {
    let start = Instant::now();
    for bytes in batches.iter_mut() {
        let info = log.append_as_leader(bytes, LeaderEpoch(0)).expect("append");
        debug_assert!(!info.duplicate);
        black_box(info);
    }
    let elapsed = start.elapsed().as_nanos() as f64 / batches.len() as f64;
    // Back to client batches for the next pass (outside the timing).
    for bytes in batches.iter_mut() {
        BatchViewMut::parse(bytes)
            .expect("batch")
            .set_base_offset(Offset(0));
    }
    elapsed
}

fn percentile(v: &[f64], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p) as usize]
}

/// Blocks of the two kinds alternate (order flipped every block) into two
/// partitions of the same process, so both see the same machine noise; the
/// figures are per-block ns/batch over all passes.
fn bench(records: i32, root: &Path) {
    let mut plain = build(records, false);
    let mut idem = build(records, true);
    assert_eq!(plain[0].len(), idem[0].len(), "same batch size");
    let (mut p, mut i) = (Vec::new(), Vec::new());
    // Pass 0 warms up both paths and is discarded.
    for pass in 0..=PASSES {
        let log_p = open_log(root, &format!("plain-{pass}"));
        let log_i = open_log(root, &format!("idem-{pass}"));
        for block in 0..BATCHES / BLOCK {
            let range = block * BLOCK..(block + 1) * BLOCK;
            let (a, b) = if block % 2 == 0 {
                let a = append_block(&log_p, &mut plain[range.clone()]);
                (a, append_block(&log_i, &mut idem[range]))
            } else {
                let b = append_block(&log_i, &mut idem[range.clone()]);
                (append_block(&log_p, &mut plain[range]), b)
            };
            if pass > 0 {
                p.push(a);
                i.push(b);
            }
        }
        for (log, name) in [(log_p, "plain"), (log_i, "idem")] {
            log.close().expect("close");
            let _ = std::fs::remove_dir_all(root.join(format!("{name}-{pass}")));
        }
    }
    let size = plain[0].len();
    println!(
        "{records} record(s) per batch ({size} bytes), {} blocks of {BLOCK} batches per kind:",
        p.len()
    );
    for (label, q) in [
        ("fastest block", 0.0),
        ("10th percentile", 0.1),
        ("median", 0.5),
    ] {
        let (a, b) = (percentile(&p, q), percentile(&i, q));
        println!(
            "  {label:16} no producer id {a:7.1} ns/batch, idempotent {b:7.1} ns/batch: {:+5.1}%",
            100.0 * (b / a - 1.0)
        );
    }
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
