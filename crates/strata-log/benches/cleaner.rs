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
    Log::open(
        &root.join("t-0"),
        config(),
        LoadParams::default(),
        SystemClock::shared(),
        DirHealth::new(root),
    )
    .unwrap()
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

/// CPU time (user + system) of the calling thread, in seconds.
fn thread_cpu_s() -> f64 {
    // SAFETY: getrusage fills the zeroed struct it is given; nothing is retained.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Copy the partition dir `from` into `<to>/t-0`.
fn copy_log(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("t-0")).unwrap();
    for e in std::fs::read_dir(from.join("t-0")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join("t-0").join(e.file_name())).unwrap();
    }
}

fn main() {
    let mb: u64 = std::env::var("CLEANER_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let source = tempfile::tempdir().unwrap();
    {
        let log = open(source.path());
        fill(&log, mb << 20, 100_000, 7);
        log.close().unwrap();
    }
    let cfg = CleanerConfig::default();
    // Best of three rounds, each on a fresh copy (the machine is shared:
    // wall time is noisy, thread CPU time much less so). One worker serves
    // every round, as a broker's cleaner thread keeps its worker (and its
    // map memory) from one cleaning to the next; the first round also
    // pays for the first touch of the map.
    let (mut plain_wall, mut plain_cpu, mut clean_wall, mut clean_cpu) = (0f64, 0f64, 0f64, 0f64);
    let mut last = None;
    let mut first_hwm_growth = None;
    let mut first_round = None;
    let mut w = Cleaner::new(&cfg, SystemClock::shared()).unwrap();
    for _ in 0..3 {
        let root = tempfile::tempdir().unwrap();
        copy_log(source.path(), root.path());
        let log = open(root.path());
        log.update_high_watermark(log.log_end_offset());
        let (t, c) = (Instant::now(), thread_cpu_s());
        let copied = plain_rewrite(&log, &root.path().join("plain.copy"));
        plain_wall = plain_wall.max(mib(copied) / t.elapsed().as_secs_f64());
        plain_cpu = plain_cpu.max(mib(copied) / (thread_cpu_s() - c));
        std::fs::remove_file(root.path().join("plain.copy")).unwrap();
        let hwm_before = vm_hwm_kib();
        let (t, c) = (Instant::now(), thread_cpu_s());
        let o = w.clean(&log).unwrap();
        let cleaned = mib(o.stats.bytes_read);
        let (wall, cpu) = (
            cleaned / t.elapsed().as_secs_f64(),
            cleaned / (thread_cpu_s() - c),
        );
        first_round.get_or_insert((wall, cpu));
        clean_wall = clean_wall.max(wall);
        clean_cpu = clean_cpu.max(cpu);
        first_hwm_growth.get_or_insert(vm_hwm_kib().saturating_sub(hwm_before));
        last = Some((o, w.offset_map().slots()));
    }
    let (o, slots) = last.unwrap();
    let hwm_growth = first_hwm_growth.unwrap_or(0);
    println!(
        "dirty log: {:.1} MiB, {} -> {} bytes, passes {}",
        mib(o.size_before),
        o.size_before,
        o.size_after,
        o.stats.passes
    );
    println!("plain read+rewrite: {plain_wall:.1} MiB/s wall, {plain_cpu:.1} MiB/s per CPU-second");
    println!(
        "cleaner:            {clean_wall:.1} MiB/s wall ({:.0}% of plain), {clean_cpu:.1} MiB/s per CPU-second ({:.0}% of plain)",
        100.0 * clean_wall / plain_wall,
        100.0 * clean_cpu / plain_cpu
    );
    if let Some((wall, cpu)) = first_round {
        println!(
            "cleaner, first round (fresh map memory): {wall:.1} MiB/s wall, {cpu:.1} MiB/s per CPU-second ({:.0}% of the best plain)",
            100.0 * cpu / plain_cpu
        );
    }
    println!(
        "offset map: {} MiB configured ({} slots), {} slots used by the pass, utilisation {:.3}; peak RSS of the first clean grew by {:.1} MiB",
        cfg.map_memory_per_thread() >> 20,
        cfg.map_memory_per_thread() / strata_log::cleaner::BYTES_PER_ENTRY,
        slots,
        o.stats.map_utilization,
        hwm_growth as f64 / 1024.0
    );
    let busy_root = tempfile::tempdir().unwrap();
    copy_log(source.path(), busy_root.path());
    let busy = open(busy_root.path());
    busy.update_high_watermark(busy.log_end_offset());
    if std::env::var_os("CLEANER_BENCH_SKIP_APPENDS").is_some() {
        return;
    }
    let target_root = tempfile::tempdir().unwrap();
    let target = open(target_root.path());
    // Alternate one-second windows alone and during cleaning (the load of
    // a shared machine drifts; adjacent windows see about the same), and
    // report the median of the pairs' ratios.
    let mut w = Cleaner::new(&cfg, SystemClock::shared()).unwrap();
    let mut ratios = Vec::new();
    let (mut alone_sum, mut with_sum) = (0f64, 0f64);
    for _ in 0..5 {
        let alone = appends_per_sec(&target, Duration::from_secs(1));
        let done = AtomicBool::new(false);
        let with = std::thread::scope(|s| {
            s.spawn(|| {
                while !done.load(Ordering::Acquire) {
                    w.clean_range(
                        &busy,
                        Offset(0),
                        busy.segments().last().unwrap().base_offset,
                    )
                    .unwrap();
                }
            });
            let r = appends_per_sec(&target, Duration::from_secs(1));
            done.store(true, Ordering::Release);
            r
        });
        alone_sum += alone;
        with_sum += with;
        ratios.push(with / alone);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "appends (10 x 100 B batches), 5 alternated 1 s windows: {:.0}/s alone, {:.0}/s during cleaning; median ratio {:.0}% (range {:.0}-{:.0}%)",
        alone_sum / 5.0,
        with_sum / 5.0,
        100.0 * ratios[2],
        100.0 * ratios[0],
        100.0 * ratios[4]
    );
}
