//! Append throughput vs a plain buffered sequential write of the same bytes
//! (baseline measured in the same run). `cargo bench -p strata-log --bench append`.
//! `STRATA_BENCH_MB` sets the bytes per case (default 256).
//!
//! The baseline of record is `BufWriter::new(file)`: std's default buffer
//! (8 KiB) writing the same ~16 KiB batches, i.e. a plain buffered
//! sequential write. A batch larger than the buffer goes straight to
//! `write(2)`, so this is one write per batch, which is also what the log
//! must do (no user-space buffering across appends, so acknowledged data
//! survives a SIGKILL). A 64 KiB buffer (four batches per `write(2)`) is
//! printed as extra information; the log cannot batch writes that way.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
mod support;

use support::{mbps, Stamp, Times};

use strata_log::batch::{validate_client_records, AppendValidation, BatchBuilder};
use strata_log::{
    DirHealth, LeaderEpoch, LoadParams, Log, LogConfig, Offset, SystemClock, Timestamp,
};

/// A client batch of ~16 KiB with `record` byte values.
fn client_batch(record: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0));
    let value = vec![b'v'; record];
    let now = SystemClock::shared().now_ms();
    while b.uncompressed_size() + record + 16 < 16 * 1024 {
        b.append(Timestamp(now), Some(b"key-0001"), Some(&value), &[]);
    }
    b.build()
}

fn mb_per_case() -> usize {
    std::env::var("STRATA_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// Plain sequential writes of the same bytes through a `BufWriter`:
/// `BufWriter::new` (std's default capacity) when `buffer` is `None`, else
/// one of `buffer` bytes.
fn baseline(dir: &Path, batch: &[u8], total: usize, buffer: Option<usize>) -> Times {
    let path = dir.join("plain.bin");
    let start = Stamp::now();
    let file = File::create(&path).unwrap();
    let mut w = match buffer {
        None => BufWriter::new(file),
        Some(n) => BufWriter::with_capacity(n, file),
    };
    let mut written = 0;
    while written < total {
        w.write_all(batch).unwrap();
        written += batch.len();
    }
    w.flush().unwrap();
    let t = start.elapsed();
    std::fs::remove_file(path).unwrap();
    t
}

fn open_log(dir: &Path, name: &str) -> std::sync::Arc<Log> {
    Log::open(
        &dir.join(name),
        LogConfig::default(),
        LoadParams::default(),
        SystemClock::shared(),
        DirHealth::new(dir),
    )
    .unwrap()
}

/// Leader appends of the same client batch. The leader rewrites only header
/// fields in place (BaseOffset, PartitionLeaderEpoch, and for LogAppendTime
/// MaxTimestamp, attributes and CRC), so each round restores the 61-byte
/// batch header rather than copying the whole batch again.
fn leader(dir: &Path, batch: &[u8], total: usize) -> Times {
    let log = open_log(dir, "leader-0");
    let mut buf = batch.to_vec();
    let header = strata_log::batch::RECORD_BATCH_OVERHEAD;
    let start = Stamp::now();
    let mut written = 0;
    while written < total {
        buf[..header].copy_from_slice(&batch[..header]);
        log.append_as_leader(&mut buf, LeaderEpoch(0)).unwrap();
        written += batch.len();
    }
    let t = start.elapsed();
    assert_eq!(
        buf[header..],
        batch[header..],
        "records are never rewritten"
    );
    log.close().unwrap();
    std::fs::remove_dir_all(dir.join("leader-0")).unwrap();
    t
}

fn follower(dir: &Path, batch: &[u8], total: usize) -> Times {
    let log = open_log(dir, "follower-0");
    let mut buf = batch.to_vec();
    let count = strata_log::batch::BatchView::parse(batch)
        .unwrap()
        .records_count() as i64;
    let start = Stamp::now();
    let mut written = 0;
    let mut next = 0i64;
    while written < total {
        buf[..8].copy_from_slice(&next.to_be_bytes());
        log.append_as_follower(&buf).unwrap();
        next += count;
        written += batch.len();
    }
    let t = start.elapsed();
    log.close().unwrap();
    std::fs::remove_dir_all(dir.join("follower-0")).unwrap();
    t
}

/// Seconds per call of `f`: the fastest of many short timed rounds, so a
/// loaded machine inflates it less.
fn fastest(mut f: impl FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..2000 {
        let start = std::time::Instant::now();
        for _ in 0..10 {
            f();
        }
        best = best.min(start.elapsed().as_secs_f64() / 10.0);
    }
    best
}

/// Durable mode: `threads` producers each make `per_thread` acknowledged
/// appends of a small batch; returns (appends per second, fsync rounds).
fn durable(dir: &Path, threads: usize, per_thread: usize) -> (f64, u64) {
    let cfg = LogConfig {
        durable_append: true,
        ..LogConfig::default()
    };
    let name = format!("durable{threads}-0");
    let log = Log::open(
        &dir.join(&name),
        cfg,
        LoadParams::default(),
        SystemClock::shared(),
        DirHealth::new(dir),
    )
    .unwrap();
    let mut b = BatchBuilder::new(Offset(0));
    b.append(Timestamp(1), Some(b"k"), Some(&[b'v'; 100]), &[]);
    let batch = b.build();
    let start = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut buf = batch.clone();
                for _ in 0..per_thread {
                    buf.copy_from_slice(&batch);
                    log.append_as_leader(&mut buf, LeaderEpoch(0)).unwrap();
                }
            });
        }
    });
    let rate = (threads * per_thread) as f64 / start.elapsed().as_secs_f64();
    let syncs = log.durable_sync_count();
    log.close().unwrap();
    std::fs::remove_dir_all(dir.join(name)).unwrap();
    (rate, syncs)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let tmp = tempfile::tempdir_in(
        std::env::var("STRATA_BENCH_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|_| std::env::temp_dir()),
    )
    .unwrap();
    let total = mb_per_case() * 1024 * 1024;
    println!(
        "append throughput, {} MiB per case, ~16 KiB batches, page cache (no fsync); MiB per wall second, then per CPU second",
        total >> 20
    );
    println!(
        "baseline = BufWriter::new (std default 8 KiB buffer; each 16 KiB batch is one write(2)); plain64K = 64 KiB BufWriter, for information"
    );
    println!(
        "{:<8} {:>13} {:>13} {:>13} {:>13} {:>13} {:>13}",
        "record",
        "baseline MiB/s",
        "plain64K",
        "leader MiB/s",
        "follower",
        "leader/base",
        "follower/base"
    );
    for record in [100usize, 1024] {
        let batch = client_batch(record);
        // Warm up the page cache and allocator once.
        baseline(tmp.path(), &batch, total / 8, None);
        let mut best = [Times::MAX; 4];
        for _ in 0..3 {
            best[0] = best[0].min(baseline(tmp.path(), &batch, total, None));
            best[1] = best[1].min(baseline(tmp.path(), &batch, total, Some(64 * 1024)));
            best[2] = best[2].min(leader(tmp.path(), &batch, total));
            best[3] = best[3].min(follower(tmp.path(), &batch, total));
        }
        let total = total as u64;
        for (label, clock) in [("", false), ("  (cpu)", true)] {
            let [b, p, l, f] = best.map(|t| mbps(total, if clock { t.cpu } else { t.wall }));
            let label = if clock {
                label.to_string()
            } else {
                format!("{record} B")
            };
            println!(
                "{:<8} {:>13.0} {:>13.0} {:>13.0} {:>13.0} {:>12.0}% {:>12.0}%",
                label,
                b,
                p,
                l,
                f,
                100.0 * l / b,
                100.0 * f / b
            );
        }
    }
    println!("leader validation alone (validate_client_records, default topic config; fastest of 2000 rounds)");
    let cfg = LogConfig::default();
    let validation = AppendValidation {
        max_message_bytes: cfg.max_message_bytes.max(0) as usize,
        compacted: cfg.cleanup_policy.compact,
        timestamp_type: cfg.message_timestamp_type,
        timestamp_before_max_ms: cfg.message_timestamp_before_max_ms,
        timestamp_after_max_ms: cfg.message_timestamp_after_max_ms,
        now: Timestamp(SystemClock::shared().now_ms()),
    };
    for record in [100usize, 1024] {
        let batch = client_batch(record);
        let records = strata_log::batch::BatchView::parse(&batch)
            .unwrap()
            .records_count();
        let all = fastest(|| {
            let v = validate_client_records(std::hint::black_box(&batch), &validation);
            std::hint::black_box(v.unwrap());
        });
        let crc = fastest(|| {
            std::hint::black_box(strata_log::batch::crc32c(std::hint::black_box(
                &batch[21..],
            )));
        });
        println!(
            "{:<8} {:>9.2} us/batch, of which CRC-32C {:.2} us; records {:.1} ns each",
            format!("{record} B"),
            all * 1e6,
            crc * 1e6,
            (all - crc) * 1e9 / records as f64
        );
    }
    println!("durable appends (strata.durable.append=true, fsync before ack, group commit)");
    println!(
        "{:<10} {:>10} {:>12} {:>14}",
        "producers", "appends", "appends/s", "fsync rounds"
    );
    for threads in [1usize, 4, 16] {
        let per = 800 / threads;
        let (rate, syncs) = durable(tmp.path(), threads, per);
        println!(
            "{:<10} {:>10} {:>12.0} {:>14}",
            threads,
            threads * per,
            rate,
            syncs
        );
    }
}
