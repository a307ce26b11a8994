//! Micro-benchmark: what producer-state work adds to a leader append of
//! idempotent batches (the budget: at most 10%).
//!
//! Four measurements per run, each the fastest of several passes in this one
//! process (on a shared machine other processes only ever add time):
//!
//! - `Log::append_as_leader` of client batches into a fresh partition
//!   (page-cache writes, no fsync), with and without the producer-state work
//!   done around each call, as the log will do it;
//! - an in-memory append (client-batch validation of every record, offset
//!   assignment in place, copy into a buffer), with and without it.
//!
//! The in-memory pair isolates the producer-state cost with little noise;
//! dividing that difference by the real append gives its share of an append.
//! The producer-state work is `find_duplicate_batch`, `validate_batch`,
//! `apply_updates` and `update_map_end_offset` for one known producer.
//!
//! Run: `cargo run --release -p strata-log --example producer_state_bench [records_per_batch]`

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use strata_log::batch::{
    validate_client_records, AppendValidation, BatchBuilder, BatchView, BatchViewMut, TimestampType,
};
use strata_log::producer_state::{AppendOrigin, ProducerStateManager, ProducerUpdates};
use strata_log::{
    DirHealth, LeaderEpoch, LoadParams, Log, LogConfig, Offset, ProducerEpoch, ProducerId,
    SystemClock, Timestamp, TopicPartition,
};

const BATCHES: usize = 20_000;
const RUNS: usize = 15;
const NOW: i64 = 1_700_000_000_000;

/// Client batches as a producer sends them: base offset 0, consecutive sequences.
fn build(records: i32) -> Vec<Vec<u8>> {
    let value = [b'x'; 100];
    (0..BATCHES as i32)
        .map(|i| {
            let mut b = BatchBuilder::new(Offset(0)).producer(
                ProducerId(42),
                ProducerEpoch(0),
                i * records,
            );
            for _ in 0..records {
                b.append(Timestamp(NOW), None, Some(&value), &[]);
            }
            b.build()
        })
        .collect()
}

fn config() -> AppendValidation {
    AppendValidation {
        max_message_bytes: 1 << 20,
        compacted: false,
        timestamp_type: TimestampType::CreateTime,
        timestamp_before_max_ms: i64::MAX,
        timestamp_after_max_ms: i64::MAX,
        now: Timestamp(NOW),
    }
}

/// One pass of leader appends without I/O: validate the client batch (every
/// record), assign its offset in place, copy it into the "segment". With
/// `psm`, also the producer-state work of an append.
fn run_in_memory(
    batches: &mut [Vec<u8>],
    segment: &mut Vec<u8>,
    mut psm: Option<&mut ProducerStateManager>,
) -> f64 {
    let cfg = config();
    segment.clear();
    let mut next = Offset(0);
    let start = Instant::now();
    for bytes in batches.iter_mut() {
        let validated = validate_client_records(bytes, &cfg).expect("valid client batch");
        black_box(&validated);
        if let Some(psm) = psm.as_deref() {
            let view = BatchView::parse(bytes).expect("batch");
            assert!(psm.find_duplicate_batch(&view).is_none());
        }
        let mut batch = BatchViewMut::parse(bytes).expect("batch");
        batch.set_base_offset(next);
        next = batch.view().next_offset();
        producer_state_work(psm.as_deref_mut(), &batch.view());
        segment.extend_from_slice(batch.view().as_bytes());
        // Back to a client batch for the next pass (same cost on both paths).
        batch.set_base_offset(Offset(0));
    }
    black_box(&segment);
    start.elapsed().as_nanos() as f64 / batches.len() as f64
}

/// One pass of real `Log::append_as_leader` calls (page-cache writes, no
/// fsync) into a fresh partition directory, with the producer-state work
/// done around each call when `psm` is given.
fn run_log(
    batches: &mut [Vec<u8>],
    root: &Path,
    pass: usize,
    mut psm: Option<&mut ProducerStateManager>,
) -> f64 {
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
        if let Some(psm) = psm.as_deref() {
            let view = BatchView::parse(bytes).expect("batch");
            assert!(psm.find_duplicate_batch(&view).is_none());
        }
        log.append_as_leader(bytes, LeaderEpoch(0)).expect("append");
        let mut batch = BatchViewMut::parse(bytes).expect("batch");
        producer_state_work(psm.as_deref_mut(), &batch.view());
        batch.set_base_offset(Offset(0));
    }
    let elapsed = start.elapsed().as_nanos() as f64 / batches.len() as f64;
    log.close().expect("close");
    let _ = std::fs::remove_dir_all(&dir);
    elapsed
}

/// Validation and commit of one batch whose offsets are assigned.
fn producer_state_work(psm: Option<&mut ProducerStateManager>, view: &BatchView<'_>) {
    if let Some(psm) = psm {
        let mut updates = ProducerUpdates::new();
        psm.validate_batch(&mut updates, view, AppendOrigin::Client)
            .expect("in sequence");
        black_box(psm.apply_updates(updates));
        psm.update_map_end_offset(view.next_offset());
    }
}

fn fresh_manager(dir: &Path) -> ProducerStateManager {
    ProducerStateManager::new(dir, TopicPartition::new("bench", 0), 86_400_000).expect("manager")
}

/// The fastest run: on a shared machine other processes only ever add time,
/// so the minimum is the least disturbed measurement.
fn fastest(v: Vec<f64>) -> f64 {
    v.into_iter().fold(f64::INFINITY, f64::min)
}

fn main() {
    let records: i32 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("records per batch"))
        .unwrap_or(10);
    let mut batches = build(records);
    let root = std::env::temp_dir().join(format!("strata-psm-bench-{}", std::process::id()));
    std::fs::create_dir_all(&root).expect("temp dir");
    let psm_dir = root.join("psm-0");
    std::fs::create_dir_all(&psm_dir).expect("temp dir");
    let mut segment = Vec::with_capacity(batches.iter().map(Vec::len).sum());
    let (mut mem, mut mem_ps, mut log, mut log_ps) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // The first round warms up every path and is discarded.
    for round in 0..=RUNS {
        let a = run_in_memory(&mut batches, &mut segment, None);
        let b = run_in_memory(
            &mut batches,
            &mut segment,
            Some(&mut fresh_manager(&psm_dir)),
        );
        let c = run_log(&mut batches, &root, 2 * round, None);
        let d = run_log(
            &mut batches,
            &root,
            2 * round + 1,
            Some(&mut fresh_manager(&psm_dir)),
        );
        if round > 0 {
            mem.push(a);
            mem_ps.push(b);
            log.push(c);
            log_ps.push(d);
        }
    }
    let (mem, mem_ps, log, log_ps) = (fastest(mem), fastest(mem_ps), fastest(log), fastest(log_ps));
    let size = batches[0].len();
    println!("batches: {BATCHES} x {records} records ({size} bytes each), fastest of {RUNS} runs");
    println!("Log::append_as_leader:                {log:8.1} ns/batch");
    println!(
        "... plus producer state:              {log_ps:8.1} ns/batch   ratio {:.3}",
        log_ps / log
    );
    println!("in-memory append (validate + copy):   {mem:8.1} ns/batch");
    println!(
        "... plus producer state:              {mem_ps:8.1} ns/batch   ratio {:.3}",
        mem_ps / mem
    );
    println!(
        "producer-state work / real append:    {:8.1} %",
        100.0 * (mem_ps - mem) / log
    );
    let _ = std::fs::remove_dir_all(&root);
}
