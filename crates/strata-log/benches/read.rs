//! Sequential read throughput through `Log::read` + pread of the returned
//! slices vs a plain sequential read of the segment file (same run).
//! `cargo bench -p strata-log --bench read`; `STRATA_BENCH_MB` (default 256).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;
mod support;

use support::{mbps, Stamp, Times};

use strata_log::batch::BatchBuilder;
use strata_log::{
    DirHealth, LoadParams, Log, LogConfig, Offset, ReadBound, SystemClock, Timestamp,
};

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let total: u64 = std::env::var("STRATA_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256u64)
        << 20;
    let tmp = tempfile::tempdir_in(
        std::env::var("STRATA_BENCH_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|_| std::env::temp_dir()),
    )
    .unwrap();
    let dir = tmp.path().join("read-0");
    let log = Log::open(
        &dir,
        LogConfig::default(),
        LoadParams::default(),
        SystemClock::shared(),
        DirHealth::new(tmp.path()),
    )
    .unwrap();
    let mut next = 0i64;
    let value = vec![b'v'; 1000];
    while log.size_in_bytes() < total {
        let mut b = BatchBuilder::new(Offset(next));
        for _ in 0..16 {
            b.append(Timestamp(1), Some(b"k"), Some(&value), &[]);
        }
        next = b.next_offset().0;
        log.append_as_follower(&b.build()).unwrap();
    }
    log.flush().unwrap();
    let bytes = log.size_in_bytes();
    let seg_paths: Vec<_> = log.segments().iter().map(|s| s.log_path.clone()).collect();
    println!("sequential read of {} MiB, page cache warm", bytes >> 20);
    println!(
        "{:<28} {:>10} {:>8} {:>10} {:>8}",
        "reader", "MiB/s", "% plain", "MiB/cpu-s", "% plain"
    );
    let mut plain_best = Times::MAX;
    let mut log_best = Times::MAX;
    for _ in 0..3 {
        plain_best = plain_best.min(plain_read(&seg_paths));
        log_best = log_best.min(log_read(&log, bytes));
    }
    let (p, pc) = (mbps(bytes, plain_best.wall), mbps(bytes, plain_best.cpu));
    let (l, lc) = (mbps(bytes, log_best.wall), mbps(bytes, log_best.cpu));
    println!(
        "{:<28} {:>10.0} {:>7.0}% {:>10.0} {:>7.0}%",
        "plain read(1 MiB buffer)", p, 100.0, pc, 100.0
    );
    println!(
        "{:<28} {:>10.0} {:>7.0}% {:>10.0} {:>7.0}%",
        "Log::read + pread(1 MiB)",
        l,
        100.0 * l / p,
        lc,
        100.0 * lc / pc
    );
    log.close().unwrap();
}

fn plain_read(paths: &[impl AsRef<Path>]) -> Times {
    let mut buf = vec![0u8; 1 << 20];
    let start = Stamp::now();
    let mut n = 0u64;
    for p in paths {
        let mut f = File::open(p).unwrap();
        loop {
            let r = f.read(&mut buf).unwrap();
            if r == 0 {
                break;
            }
            n += r as u64;
        }
    }
    assert!(n > 0);
    start.elapsed()
}

fn log_read(log: &Log, expect: u64) -> Times {
    let mut buf = vec![0u8; 2 << 20];
    let start = Stamp::now();
    let mut at = Offset(0);
    let mut n = 0u64;
    while at < log.log_end_offset() {
        let d = log.read(at, 1 << 20, ReadBound::LogEnd, true).unwrap();
        let mut last_end = at;
        for s in &d.slices {
            let len = s.len as usize;
            s.file.read_exact_at(&mut buf[..len], s.position).unwrap();
            n += s.len;
            // Find the next offset from the last whole batch in the slice.
            let mut p = 0;
            while p + 61 <= len {
                let size = i32::from_be_bytes(buf[p + 8..p + 12].try_into().unwrap()) as usize + 12;
                if p + size > len {
                    break;
                }
                let base = i64::from_be_bytes(buf[p..p + 8].try_into().unwrap());
                let delta = i32::from_be_bytes(buf[p + 23..p + 27].try_into().unwrap()) as i64;
                last_end = Offset(base + delta + 1);
                p += size;
            }
        }
        assert!(last_end > at, "no progress at {at:?}");
        at = last_end;
    }
    assert!(n >= expect * 9 / 10, "{n} of {expect}");
    start.elapsed()
}
