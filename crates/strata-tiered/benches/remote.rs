//! Remote-tier throughput against a real S3-API server (moto on loopback):
//!
//! - copy: segments uploaded by the copy task (MB/s of segment bytes);
//! - catch-up read: a consumer reading the whole partition from offset 0
//!   through `RemoteLogManager::read_remote` (1 MiB fetches), compared with
//!   a plain `object_store` ranged read of the same bytes in the same
//!   chunk size from the same server, in the same process (the ratio is
//!   the number that matters; moto itself is slow).
//!
//! Run: `cargo bench -p strata-tiered --bench remote` (needs `moto_server`
//! on PATH: scripts/install-test-deps.sh).

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Instant;

use object_store::ObjectStoreExt;
use strata_log::batch::BatchBuilder;
use strata_log::{
    LeaderEpoch, LogConfig, LogManager, LogManagerConfig, Offset, SharedClock, SystemClock,
    Timestamp, TopicPartition,
};
use strata_tiered::config::{build_rsm, parse_uri};
use strata_tiered::rlmm::MemoryRlmm;
use strata_tiered::{
    Bridge, RemoteLogManager, RemoteLogMetadataManager, RemoteLogSegmentState, TieredConfig,
    TopicIdPartition,
};
use uuid::Uuid;

const TOTAL_BYTES: usize = 64 << 20;
const FETCH_BYTES: usize = 1 << 20;
const ROUNDS: usize = 5;

fn mbps(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / (1 << 20) as f64 / secs
}

fn main() {
    let moto = common::Moto::start();
    moto.create_bucket("bench");
    let dir = tempfile::tempdir().unwrap();
    let clock: SharedClock = Arc::new(SystemClock);
    let logs = LogManager::open(
        LogManagerConfig::new(vec![dir.path().join("logs")]),
        clock.clone(),
    )
    .unwrap();
    let tp = TopicPartition::new("bench", 0);
    let config = LogConfig {
        segment_bytes: 8 << 20,
        remote_storage_enable: true,
        retention_ms: -1,
        ..LogConfig::default()
    };
    let log = logs
        .get_or_create_log(&tp, config, Some(Uuid::from_u64_pair(1, 1)))
        .unwrap();
    let value = vec![b'x'; 1000];
    let now = clock.now_ms();
    while (log.size_in_bytes() as usize) < TOTAL_BYTES {
        let mut b = BatchBuilder::new(Offset(0));
        for _ in 0..16 {
            b.append(Timestamp(now), None, Some(&value), &[]);
        }
        let mut bytes = b.build();
        log.append_as_leader(&mut bytes, LeaderEpoch(0)).unwrap();
    }
    log.roll().unwrap();
    log.update_high_watermark(log.log_end_offset());

    let bridge = Arc::new(Bridge::new(2).unwrap());
    let location = parse_uri("s3://bench/tier", &moto.props()).unwrap();
    let rsm = Arc::new(build_rsm(&location, bridge).unwrap());
    let rlmm = Arc::new(MemoryRlmm::new());
    let mut tc = TieredConfig::from_broker_properties(&Default::default(), dir.path()).unwrap();
    tc.enabled = true;
    let rlm = RemoteLogManager::new(
        tc,
        0,
        &dir.path().join("logs"),
        rsm.clone(),
        rlmm.clone(),
        clock.clone(),
    )
    .unwrap();
    rlm.register(Arc::clone(&log), Uuid::from_u64_pair(1, 1));

    let t = Instant::now();
    let copied = rlm.copy_once(&tp).unwrap();
    let copy_secs = t.elapsed().as_secs_f64();
    let tip = TopicIdPartition::new(Uuid::from_u64_pair(1, 1), tp.clone());
    let segments: Vec<_> = rlmm
        .list_remote_log_segments(&tip)
        .unwrap()
        .into_iter()
        .filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished)
        .collect();
    let copied_bytes: u64 = segments
        .iter()
        .map(|m| m.segment_size_in_bytes as u64)
        .sum();
    println!(
        "copy: {copied} segments, {:.1} MiB in {copy_secs:.2}s = {:.1} MiB/s",
        copied_bytes as f64 / 1048576.0,
        mbps(copied_bytes, copy_secs)
    );

    // Alternate the two readers a few rounds (the machine is shared; one
    // round of each is noise) and report the median ratio.
    let store = rsm.store().clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let end = segments.last().unwrap().end_offset;
    let mut ratios = Vec::new();
    for round in 0..ROUNDS {
        // Remote catch-up read through the manager.
        let t = Instant::now();
        let mut next = Offset(0);
        let mut read = 0u64;
        while next <= end {
            let r = rlm.read_remote(&tp, next, FETCH_BYTES, true).unwrap();
            assert!(!r.records.is_empty());
            // The next offset after the last batch: walk the batch headers.
            let mut at = 0;
            while at + 61 <= r.records.len() {
                let base = i64::from_be_bytes(r.records[at..at + 8].try_into().unwrap());
                let len = i32::from_be_bytes(r.records[at + 8..at + 12].try_into().unwrap())
                    as usize
                    + 12;
                let delta =
                    i32::from_be_bytes(r.records[at + 23..at + 27].try_into().unwrap()) as i64;
                next = Offset(base + delta + 1);
                at += len;
            }
            read += r.records.len() as u64;
        }
        let read_secs = t.elapsed().as_secs_f64();

        // Baseline: the same bytes, same chunk size, straight from object_store.
        let t = Instant::now();
        let mut raw = 0u64;
        for m in &segments {
            let key = rsm.path(&strata_tiered::rsm::object_key_for(m, ".log"));
            let size = m.segment_size_in_bytes as u64;
            let mut pos = 0;
            while pos < size {
                let end = (pos + FETCH_BYTES as u64).min(size);
                raw += rt.block_on(store.get_range(&key, pos..end)).unwrap().len() as u64;
                pos = end;
            }
        }
        let raw_secs = t.elapsed().as_secs_f64();
        let ratio = mbps(read, read_secs) / mbps(raw, raw_secs);
        println!(
            "round {round}: remote catch-up read {:.1} MiB/s, plain object_store read {:.1} MiB/s ({:.1} MiB each), ratio {ratio:.2}",
            mbps(read, read_secs),
            mbps(raw, raw_secs),
            raw as f64 / 1048576.0
        );
        ratios.push(ratio);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "median ratio remote read / plain read: {:.2}",
        ratios[ratios.len() / 2]
    );
    rlm.shutdown();
    logs.shutdown().unwrap();
}
