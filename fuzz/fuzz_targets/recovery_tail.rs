//! A segment holding a valid prefix of batches followed by arbitrary bytes
//! (a torn write, a preallocated tail, garbage) must open without panicking,
//! and the recovered log must still hold the whole valid prefix.

#![no_main]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use libfuzzer_sys::fuzz_target;
use strata_log::batch::BatchBuilder;
use strata_log::{
    DirHealth, LoadParams, Log, LogConfig, Offset, ReadBound, SystemClock, Timestamp,
};

static RUN: AtomicU64 = AtomicU64::new(0);

fn scratch_dir() -> PathBuf {
    let n = RUN.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("strata-fuzz-recovery-{}-{n}", std::process::id()))
}

fn prefix(batches: u8) -> (Vec<u8>, i64) {
    let mut out = Vec::new();
    let mut next = 0i64;
    for i in 0..batches as i64 {
        let mut b = BatchBuilder::new(Offset(next));
        for k in 0..=(i % 3) {
            b.append(Timestamp(1_000 + next + k), Some(b"k"), Some(b"value"), &[]);
        }
        next = b.next_offset().0;
        out.extend(b.build());
    }
    (out, next)
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, tail)) = data.split_first() else {
        return;
    };
    let (mut image, next) = prefix(n % 8);
    image.extend_from_slice(tail);
    let root = scratch_dir();
    let dir = root.join("fuzz-0");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{:020}.log", 0)), &image).unwrap();
    let cfg = LogConfig {
        index_interval_bytes: 64,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    };
    let opened = Log::open(
        &dir,
        cfg,
        LoadParams::default(),
        SystemClock::shared(),
        DirHealth::new(&root),
    );
    let log = opened.expect("a segment with a garbage tail must open");
    assert!(log.log_end_offset().0 >= next, "valid prefix lost");
    let mut at = 0i64;
    while at < next {
        let before = at;
        let d = log
            .read(Offset(at), 1 << 20, ReadBound::LogEnd, false)
            .unwrap();
        let bytes = d.read_to_vec().unwrap();
        assert!(
            !bytes.is_empty(),
            "offset {at} of the valid prefix unreadable"
        );
        let mut p = 0;
        while p + 61 <= bytes.len() {
            let base = i64::from_be_bytes(bytes[p..p + 8].try_into().unwrap());
            let size = i32::from_be_bytes(bytes[p + 8..p + 12].try_into().unwrap()) as usize + 12;
            let delta = i32::from_be_bytes(bytes[p + 23..p + 27].try_into().unwrap()) as i64;
            if base == at {
                at = base + delta + 1;
            }
            p += size;
        }
        assert!(at > before, "no progress reading the valid prefix at {at}");
    }
    drop(log);
    let _ = std::fs::remove_dir_all(&root);
});
