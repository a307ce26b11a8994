//! Cleaner benchmark: MB/s of dirty log cleaned with the offset map at its
//! configured size, against a plain read-and-rewrite of the same segment
//! bytes in the same run; peak memory; and append throughput with and
//! without a concurrent cleaning.
//!
//! Run: `cargo bench -p strata-log --bench cleaner` (env `CLEANER_BENCH_MB`
//! sets the dirty log size, default 64).

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_log::batch::BatchBuilder;
use strata_log::cleaner::{Cleaner, CleanerConfig};
use strata_log::{
    CleanupPolicy, DirHealth, LoadParams, Log, LogConfig, Offset, SystemClock, Timestamp,
};

fn vm_hwm_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 16 << 20,
        cleanup_policy: CleanupPolicy::COMPACT,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

fn open(root: &Path) -> Arc<Log> {
    let log = Log::open(
        &root.join("t-0"),
        config(),
        LoadParams::default(),
        SystemClock::shared(),
        DirHealth::new(root),
    )
    .unwrap();
    log
}

/// Batches of 50 records, 100-byte values, keys over `keys` values.
fn fill(log: &Log, bytes: u64, keys: u64, seed: u64) {
    let value = [b'v'; 100];
    let mut n = seed;
    while log.size_in_bytes() < bytes {
        let mut b = BatchBuilder::new(log.log_end_offset());
        for _ in 0..50 {
            n = n
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let key = format!("key-{:08}", (n >> 33) % keys);
            b.append(
                Timestamp(1_700_000_000_000),
                Some(key.as_bytes()),
                Some(&value),
                &[],
            );
        }
        log.append_as_follower(&b.build()).unwrap();
    }
    log.roll().unwrap();
    log.update_high_watermark(log.log_end_offset());
}

/// Read every inactive segment in 256 KiB chunks and write it to a new file.
fn plain_rewrite(log: &Log, out: &Path) -> u64 {
    let mut f = std::fs::File::create(out).unwrap();
    let mut buf = vec![0u8; 256 << 10];
    let mut total = 0;
    let segs = log.segments();
    for s in &segs[..segs.len() - 1] {
        let src = std::fs::File::open(&s.log_path).unwrap();
        let mut pos = 0;
        while pos < s.size {
            let n = (s.size - pos).min(buf.len() as u64) as usize;
            src.read_exact_at(&mut buf[..n], pos).unwrap();
            f.write_all(&buf[..n]).unwrap();
            pos += n as u64;
        }
        total += s.size;
    }
    f.sync_all().unwrap();
    total
}

fn appends_per_sec(log: &Log, dur: Duration) -> f64 {
    let value = [b'a'; 100];
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < dur {
        let mut b = BatchBuilder::new(log.log_end_offset());
        for i in 0..10 {
            b.append(
                Timestamp(1_700_000_000_000),
                Some(format!("x{i}").as_bytes()),
                Some(&value),
                &[],
            );
        }
        log.append_as_follower(&b.build()).unwrap();
        n += 1;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let mb: u64 = std::env::var("CLEANER_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let root = tempfile::tempdir().unwrap();
    let log = open(root.path());
    fill(&log, mb << 20, 100_000, 7);
    let dirty: u64 = log.size_in_bytes();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;

    let t = Instant::now();
    let copied = plain_rewrite(&log, &root.path().join("plain.copy"));
    let plain = mib(copied) / t.elapsed().as_secs_f64();
    std::fs::remove_file(root.path().join("plain.copy")).unwrap();

    let cfg = CleanerConfig::default();
    let hwm_before = vm_hwm_kib();
    let mut w = Cleaner::new(&cfg, SystemClock::shared()).unwrap();
    let t = Instant::now();
    let o = w.clean(&log).unwrap();
    let secs = t.elapsed().as_secs_f64();
    let cleaned_mb = mib(o.stats.bytes_read);
    let rate = cleaned_mb / secs;
    let hwm_after = vm_hwm_kib();
    println!(
        "dirty log: {:.1} MiB, {} -> {} bytes, passes {}",
        mib(dirty),
        o.size_before,
        o.size_after,
        o.stats.passes
    );
    println!("plain read+rewrite: {plain:.1} MiB/s");
    println!(
        "cleaner:            {rate:.1} MiB/s of dirty log ({:.0}% of plain)",
        100.0 * rate / plain
    );
    println!(
        "offset map: {} MiB configured, {} slots, utilisation {:.3}; peak RSS grew {:.1} MiB during the clean",
        cfg.map_memory_per_thread() >> 20,
        w.offset_map().slots(),
        o.stats.map_utilization,
        (hwm_after.saturating_sub(hwm_before)) as f64 / 1024.0
    );

    // Append throughput alone and with a cleaning running on another log.
    let other_root = tempfile::tempdir().unwrap();
    let busy = open(other_root.path());
    fill(&busy, mb << 20, 100_000, 11);
    let target_root = tempfile::tempdir().unwrap();
    let target = open(target_root.path());
    let alone = appends_per_sec(&target, Duration::from_secs(2));
    let done = AtomicBool::new(false);
    let with = std::thread::scope(|s| {
        s.spawn(|| {
            let mut w = Cleaner::new(&cfg, SystemClock::shared()).unwrap();
            while !done.load(Ordering::Acquire) {
                w.clean_range(
                    &busy,
                    Offset(0),
                    busy.segments().last().unwrap().base_offset,
                )
                .unwrap();
            }
        });
        let r = appends_per_sec(&target, Duration::from_secs(2));
        done.store(true, Ordering::Release);
        r
    });
    println!(
        "appends (10 x 100 B batches): {alone:.0}/s alone, {with:.0}/s during cleaning ({:.0}%)",
        100.0 * with / alone
    );
}
