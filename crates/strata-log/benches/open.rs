//! Opening a partition of 10,000 segments: after a clean shutdown (target
//! < 1 s) and after an unclean one, where only the segments from the
//! recovery point are re-read. `cargo bench -p strata-log --bench open`;
//! `STRATA_BENCH_SEGMENTS` (default 10000).

use std::path::Path;
mod support;

use support::Stamp;

use strata_log::batch::BatchBuilder;
use strata_log::{DirHealth, LoadParams, Log, LogConfig, Offset, SystemClock, Timestamp};

/// Write `n` segments of 4 batches each as a cleanly closed log leaves them:
/// `.log`, trimmed `.index` (every batch after the first indexed, interval 0)
/// and `.timeindex`.
fn write_segments(dir: &Path, n: i64) -> Offset {
    std::fs::create_dir_all(dir).unwrap();
    let mut next = 0i64;
    for _ in 0..n {
        let base = next;
        let mut log = Vec::new();
        let mut index = Vec::new();
        let mut time = Vec::new();
        for k in 0..4 {
            let mut b = BatchBuilder::new(Offset(next));
            b.append(Timestamp(1_000 + next), Some(b"k"), Some(&[b'v'; 200]), &[]);
            let bytes = b.build();
            if k > 0 {
                index.extend(((next - base) as i32).to_be_bytes());
                index.extend((log.len() as i32).to_be_bytes());
                time.extend((1_000 + next).to_be_bytes());
                time.extend(((next - base) as i32).to_be_bytes());
            }
            log.extend(bytes);
            next += 1;
        }
        std::fs::write(dir.join(format!("{base:020}.log")), &log).unwrap();
        std::fs::write(dir.join(format!("{base:020}.index")), &index).unwrap();
        std::fs::write(dir.join(format!("{base:020}.timeindex")), &time).unwrap();
    }
    Offset(next)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let n: i64 = std::env::var("STRATA_BENCH_SEGMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let tmp = tempfile::tempdir_in(
        std::env::var("STRATA_BENCH_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|_| std::env::temp_dir()),
    )
    .unwrap();
    let dir = tmp.path().join("open-0");
    let leo = write_segments(&dir, n);
    let cfg = LogConfig {
        index_interval_bytes: 0,
        ..LogConfig::default()
    };
    println!("open of a partition with {n} segments (4 batches each)");
    println!(
        "{:<34} {:>10} {:>10} {:>12} {:>10}",
        "case", "wall ms", "cpu ms", "re-read segs", "LEO"
    );
    let open = |params: LoadParams| {
        let start = Stamp::now();
        let log = Log::open(
            &dir,
            cfg.clone(),
            params,
            SystemClock::shared(),
            DirHealth::new(tmp.path()),
        )
        .unwrap();
        let t = start.elapsed();
        assert_eq!(log.log_end_offset(), leo);
        let recovered = log.recovery_stats().recovered_segments.len();
        log.close().unwrap();
        (t, recovered)
    };
    // The first open finds the files right after they were written (dentries
    // and pages cached, as after a quick restart); the second repeats it.
    let cases = [
        (
            "clean shutdown (cold-ish)",
            LoadParams {
                had_clean_shutdown: true,
                ..LoadParams::default()
            },
        ),
        (
            "clean shutdown",
            LoadParams {
                had_clean_shutdown: true,
                ..LoadParams::default()
            },
        ),
        (
            "unclean, recovery point = last 10",
            LoadParams {
                recovery_point: Offset(leo.0 - 40),
                ..LoadParams::default()
            },
        ),
        ("unclean, recovery point = 0", LoadParams::default()),
    ];
    for (name, params) in cases {
        let (t, recovered) = open(params);
        println!(
            "{:<34} {:>10.1} {:>10.1} {:>12} {:>10}",
            name,
            t.wall.as_secs_f64() * 1000.0,
            t.cpu.as_secs_f64() * 1000.0,
            recovered,
            leo.0
        );
    }
}
