//! Produce (leader append) throughput with retention deleting segments
//! continuously vs without retention, measured in the same run and
//! interleaved (A, B, A, B, ...) so machine noise hits both alike.
//!
//! `cargo bench -p strata-log --bench retention_produce`.
//! `STRATA_BENCH_MB` sets the bytes per run (default 128), `STRATA_BENCH_ROUNDS`
//! the rounds (default 5). Segments are 4 MiB and `retention.bytes` 16 MiB,
//! so with retention on a segment is deleted (renamed, then removed with
//! `file.delete.delay.ms = 0`) every 4 MiB appended, by a separate thread
//! running a pass every 10 ms (the broker's default is every 5 minutes).
//! The headline is the median of the per-round ratios: each round runs both
//! cases back to back, so slow drifts of a shared machine cancel out.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_log::batch::BatchBuilder;
use strata_log::{
    DirHealth, LeaderEpoch, LoadParams, Log, LogConfig, Offset, SystemClock, Timestamp,
};

const SEGMENT: i32 = 4 << 20;

/// A client batch of ~16 KiB of 1 KiB records.
fn client_batch() -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0));
    let value = vec![b'v'; 1024];
    let now = SystemClock::shared().now_ms();
    while b.uncompressed_size() + 1024 + 16 < 16 * 1024 {
        b.append(Timestamp(now), Some(b"key-0001"), Some(&value), &[]);
    }
    b.build()
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Run {
    elapsed: Duration,
    /// CPU time of the appending thread (less noisy on a shared machine).
    cpu: Duration,
    segments_deleted: usize,
    max_segments: usize,
}

/// Append `total` bytes to a fresh log; with `retention`, a thread runs
/// retention passes and removes expired files until the appends finish.
fn run(dir: &Path, name: &str, template: &[u8], total: usize, retention: bool) -> Run {
    let cfg = LogConfig {
        segment_bytes: SEGMENT,
        retention_bytes: if retention { 4 * SEGMENT as i64 } else { -1 },
        retention_ms: -1,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    };
    let log = Log::open(
        &dir.join(name),
        cfg,
        LoadParams::default(),
        SystemClock::shared(),
        DirHealth::new(dir),
    )
    .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let deleted = Arc::new(AtomicUsize::new(0));
    let worker = retention.then(|| {
        let (log, done, deleted) = (log.clone(), done.clone(), deleted.clone());
        std::thread::Builder::new()
            .name("bench-retention".into())
            .spawn(move || {
                while !done.load(Ordering::Acquire) {
                    let out = log.delete_old_segments().unwrap();
                    deleted.fetch_add(out.decision.deletions.len(), Ordering::Relaxed);
                    log.delete_expired_files().unwrap();
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
            .unwrap()
    });
    let mut batch = template.to_vec();
    let mut max_segments = 0;
    let start = Instant::now();
    let cpu0 = thread_cpu();
    let mut written = 0;
    while written < total {
        batch.copy_from_slice(template);
        log.append_as_leader(&mut batch, LeaderEpoch(0)).unwrap();
        log.update_high_watermark(log.log_end_offset());
        written += batch.len();
        max_segments = max_segments.max(log.num_segments());
    }
    let elapsed = start.elapsed();
    let cpu = thread_cpu() - cpu0;
    done.store(true, Ordering::Release);
    if let Some(w) = worker {
        w.join().unwrap();
    }
    log.close().unwrap();
    std::fs::remove_dir_all(dir.join(name)).unwrap();
    Run {
        elapsed,
        cpu,
        segments_deleted: deleted.load(Ordering::Relaxed),
        max_segments,
    }
}

/// CPU time consumed by the calling thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; no other memory.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; ignore arguments.
    let total = env_or("STRATA_BENCH_MB", 128) << 20;
    let rounds = env_or("STRATA_BENCH_ROUNDS", 5).max(1);
    let tmp = tempfile::tempdir().unwrap();
    let template = client_batch();
    let mbs = |r: &Run| total as f64 / (1 << 20) as f64 / r.elapsed.as_secs_f64();
    let (mut without, mut with, mut ratios, mut cpu_ratios) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut deleted = 0;
    let mut peak = 0;
    for i in 0..rounds {
        let a = run(tmp.path(), &format!("plain-{i}"), &template, total, false);
        let b = run(tmp.path(), &format!("retained-{i}"), &template, total, true);
        println!(
            "round {i}: without retention {:.1} MB/s, with retention {:.1} MB/s ({} segments deleted, at most {} live)",
            mbs(&a),
            mbs(&b),
            b.segments_deleted,
            b.max_segments
        );
        deleted += b.segments_deleted;
        peak = peak.max(b.max_segments);
        ratios.push(mbs(&b) / mbs(&a));
        cpu_ratios.push(a.cpu.as_secs_f64() / b.cpu.as_secs_f64());
        without.push(mbs(&a));
        with.push(mbs(&b));
    }
    let (a, b) = (median(without), median(with));
    println!(
        "retention_produce: {} MiB x {rounds} rounds, 16 KiB batches, 4 MiB segments, retention.bytes 16 MiB"
        , total >> 20
    );
    println!("  median without retention: {a:.1} MB/s");
    println!(
        "  median with retention:    {b:.1} MB/s ({deleted} segments deleted, at most {peak} live)"
    );
    println!("  ratio of medians:         {:.3}", b / a);
    println!("  median per-round ratio:   {:.3}", median(ratios));
    println!(
        "  appender CPU-time ratio:  {:.3} (without/with: 1.0 = retention adds no CPU to produce)",
        median(cpu_ratios)
    );
}
