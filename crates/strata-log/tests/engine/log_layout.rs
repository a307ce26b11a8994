//! Guards the on-disk layout: Kafka-written batches appended through the log
//! land byte-for-byte in `.log` (offsets reassigned, CRCs unchanged) and the
//! `.index`/`.timeindex` entries sit exactly where Kafka's sparse rule puts
//! them, with files trimmed after roll and close. Files are decoded here
//! with plain byte parsing, not with the crate's index code.

use std::path::Path;

use crate::common::*;
use strata_log::batch::{validate_client_records, AppendValidation, TimestampType};
use strata_log::{LeaderEpoch, LoadParams, LogConfig, MockClock, Offset, ReadBound, Timestamp};

fn fixture_logs() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let root = fixtures_dir();
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("fixtures at {}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        for f in std::fs::read_dir(&d).unwrap() {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|e| e == "log") {
                out.push((
                    d.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    assert!(
        out.len() >= 9,
        "expected every fixture folder, found {}",
        out.len()
    );
    out
}

fn check_segment_files(dir: &Path, base: i64, appends: &[Vec<RawBatch>], interval: usize) {
    let (log, index, time) = seg_paths(dir, base);
    let bytes = std::fs::read(&log).unwrap();
    let total: usize = appends.iter().flatten().map(|b| b.size).sum();
    assert_eq!(bytes.len(), total, "{}", log.display());
    let (want_idx, want_time) = expected_entries(base, appends, interval, true);
    assert_eq!(read_offset_index(&index), want_idx, "{}", index.display());
    assert_eq!(read_time_index(&time), want_time, "{}", time.display());
    // Trimmed: exactly entries * size.
    assert_eq!(
        std::fs::metadata(&index).unwrap().len(),
        want_idx.len() as u64 * 8
    );
    assert_eq!(
        std::fs::metadata(&time).unwrap().len(),
        want_time.len() as u64 * 12
    );
}

#[test]
fn follower_appends_of_every_fixture_keep_bytes_and_kafkas_index_layout() {
    for interval in [0usize, 600, 4096] {
        for (name, image) in fixture_logs() {
            let batches = split_batches(&image);
            assert!(!batches.is_empty(), "{name}");
            let tmp = tempfile::tempdir().unwrap();
            let clock = MockClock::new(1_700_000_000_000);
            let cfg = LogConfig {
                index_interval_bytes: interval as i32,
                ..LogConfig::default()
            };
            let base = batches[0].base;
            let params = LoadParams {
                log_start_offset: Offset(base),
                ..LoadParams::default()
            };
            let log = open_log(tmp.path(), "fx-0", cfg, &clock, params);
            for b in &batches {
                let info = log
                    .append_as_follower(&image[b.position..b.position + b.size])
                    .unwrap();
                assert_eq!(info.first_offset, Offset(b.base));
                assert_eq!(info.last_offset, Offset(b.last));
            }
            assert_eq!(
                log.log_end_offset(),
                Offset(batches.last().unwrap().last + 1)
            );
            log.close().unwrap();
            let dir = tmp.path().join("fx-0");
            let (log_path, _, _) = seg_paths(&dir, base);
            // Follower appends keep every byte, so the segment is the fixture.
            assert_eq!(std::fs::read(&log_path).unwrap(), image, "{name}");
            let appends: Vec<Vec<RawBatch>> = batches.iter().map(|b| vec![b.clone()]).collect();
            check_segment_files(&dir, base, &appends, interval);
        }
    }
}

#[test]
fn leader_appends_reassign_offsets_and_keep_crcs() {
    let validation = |now| AppendValidation {
        max_message_bytes: 1 << 20,
        compacted: false,
        timestamp_type: TimestampType::CreateTime,
        timestamp_before_max_ms: i64::MAX,
        timestamp_after_max_ms: i64::MAX,
        now: Timestamp(now),
    };
    let mut accepted = 0;
    for (name, image) in fixture_logs() {
        let tmp = tempfile::tempdir().unwrap();
        let clock = MockClock::new(1_700_000_000_000);
        let cfg = LogConfig {
            index_interval_bytes: 1000,
            ..LogConfig::default()
        };
        let log = open_log(tmp.path(), "lead-0", cfg, &clock, LoadParams::default());
        let mut expected = Vec::new();
        for b in split_batches(&image) {
            let mut bytes = image[b.position..b.position + b.size].to_vec();
            bytes[..8].copy_from_slice(&0i64.to_be_bytes());
            if validate_client_records(&bytes, &validation(clock.now())).is_err() {
                continue;
            }
            let info = log.append_as_leader(&mut bytes, LeaderEpoch(9)).unwrap();
            assert_eq!(
                info.last_offset.0 - info.first_offset.0,
                b.last - b.base,
                "{name}"
            );
            let create_time = b.attributes & 0x08 == 0;
            expected.push((
                info.first_offset.0,
                b.size,
                create_time.then_some(b.crc),
                bytes,
            ));
        }
        accepted += expected.len();
        log.close().unwrap();
        let dir = tmp.path().join("lead-0");
        let on_disk = std::fs::read(seg_paths(&dir, 0).0).unwrap();
        let read = split_batches(&on_disk);
        assert_eq!(read.len(), expected.len(), "{name}");
        let mut next = 0;
        for (got, (first, size, crc, bytes)) in read.iter().zip(&expected) {
            assert_eq!(got.base, *first);
            assert_eq!(got.base, next, "offsets are contiguous from 0");
            assert_eq!(got.size, *size);
            assert_eq!(got.epoch, 9);
            match crc {
                Some(crc) => {
                    assert_eq!(got.crc, *crc, "CreateTime batches keep their CRC ({name})")
                }
                // A LogAppendTime-flagged client batch on a CreateTime topic
                // is restamped CreateTime, so its CRC is recomputed.
                None => assert_eq!(got.attributes & 0x08, 0, "{name}"),
            }
            assert_eq!(&on_disk[got.position..got.position + got.size], &bytes[..]);
            next = got.last + 1;
        }
        let appends: Vec<Vec<RawBatch>> = read.iter().map(|b| vec![b.clone()]).collect();
        if !appends.is_empty() {
            check_segment_files(&dir, 0, &appends, 1000);
        }
    }
    assert!(
        accepted >= 60,
        "most fixture batches are valid client batches ({accepted})"
    );
}

trait Now {
    fn now(&self) -> i64;
}
impl Now for MockClock {
    fn now(&self) -> i64 {
        use strata_log::Clock;
        self.now_ms()
    }
}

#[test]
fn thirty_equal_appends_with_interval_2s_minus_1_make_14_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let one = follower_batch(0, &[10], 50);
    let s = one.len() as i32;
    let cfg = LogConfig {
        index_interval_bytes: 2 * s - 1,
        ..LogConfig::default()
    };
    let log = open_log(tmp.path(), "t-0", cfg, &clock, LoadParams::default());
    for i in 0..30i64 {
        log.append_as_follower(&follower_batch(i, &[i * 10], 50))
            .unwrap();
    }
    let info = &log.segments()[0];
    assert_eq!(info.offset_index_entries, 14);
    assert_eq!(info.time_index_entries, 14);
    log.close().unwrap();
    let dir = tmp.path().join("t-0");
    let (_, index, time) = seg_paths(&dir, 0);
    let idx = read_offset_index(&index);
    assert_eq!(idx.len(), 14);
    // Entries on appends #3, #5, ...: offset 2 at position 2s, etc.
    for (k, (rel, pos)) in idx.iter().enumerate() {
        let append_no = 2 * k as i32 + 2;
        assert_eq!((*rel, *pos), (append_no, append_no * s));
    }
    // 14 sparse entries; close adds (290, 29) as the final one.
    assert_eq!(read_time_index(&time).len(), 15);
}

#[test]
fn rolled_segments_are_trimmed_and_indexed_per_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let cfg = LogConfig {
        index_interval_bytes: 300,
        segment_bytes: 4000,
        ..LogConfig::default()
    };
    let log = open_log(tmp.path(), "r-0", cfg, &clock, LoadParams::default());
    let mut all = Vec::new();
    for i in 0..60i64 {
        let b = follower_batch(i * 3, &[i * 5, i * 5 + 2, i * 5 + 1], 30);
        log.append_as_follower(&b).unwrap();
        all.push(split_batches(&b).remove(0));
    }
    let segs = log.segments();
    assert!(segs.len() >= 3, "{segs:?}");
    let dir = tmp.path().join("r-0");
    // Inactive segments were trimmed at roll, before any close.
    for w in segs.windows(2) {
        let base = w[0].base_offset.0;
        let next = w[1].base_offset.0;
        let mine: Vec<Vec<RawBatch>> = all
            .iter()
            .filter(|b| b.base >= base && b.base < next)
            .map(|b| {
                let mut b = b.clone();
                b.position = 0;
                vec![b]
            })
            .collect();
        check_segment_files(&dir, base, &mine, 300);
    }
    // The active segment's index is still preallocated until close.
    let active = segs.last().unwrap();
    assert_eq!(
        std::fs::metadata(&active.index_path).unwrap().len(),
        LogConfig::default().segment_index_bytes as u64
    );
    log.close().unwrap();
    let base = active.base_offset.0;
    let mine: Vec<Vec<RawBatch>> = all
        .iter()
        .filter(|b| b.base >= base)
        .map(|b| vec![b.clone()])
        .collect();
    check_segment_files(&dir, base, &mine, 300);
}

#[test]
fn offset_and_time_lookups_through_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let cfg = LogConfig {
        index_interval_bytes: 100,
        segment_bytes: 3000,
        ..LogConfig::default()
    };
    let log = open_log(tmp.path(), "l-0", cfg, &clock, LoadParams::default());
    // Out-of-order timestamps inside and across batches.
    let ts = |i: i64| [1000 + (i * 37) % 500, 900 + i * 3, 1000 + (i * 53) % 700];
    for i in 0..40i64 {
        log.append_as_follower(&follower_batch(i * 3, &ts(i), 20))
            .unwrap();
    }
    log.update_high_watermark(Offset(120));
    for target in [0i64, 1, 2, 3, 59, 60, 61, 100, 119] {
        let d = log
            .read(Offset(target), 1, ReadBound::HighWatermark, true)
            .unwrap();
        let bytes = d.read_to_vec().unwrap();
        let b = &split_batches(&bytes)[0];
        assert!(
            b.base <= target && target <= b.last,
            "target {target} in {b:?}"
        );
        assert_eq!(d.first_offset_in_slice, Offset(b.base));
    }
    let end = log.read(Offset(120), 100, ReadBound::LogEnd, true).unwrap();
    assert_eq!(end.total_len(), 0);
    assert!(log.read(Offset(121), 100, ReadBound::LogEnd, true).is_err());
    // Time lookups: the first offset whose record timestamp >= target.
    let all: Vec<(i64, i64)> = (0..40i64)
        .flat_map(|i| {
            ts(i)
                .into_iter()
                .enumerate()
                .map(move |(k, t)| (i * 3 + k as i64, t))
        })
        .collect();
    for target in [0i64, 900, 950, 1000, 1234, 1499, 1500, 1699, 1700] {
        let want = all
            .iter()
            .find(|(_, t)| *t >= target)
            .map(|(o, t)| (*o, *t));
        let got = log
            .fetch_offset_for_timestamp(Timestamp(target))
            .unwrap()
            .map(|r| (r.offset.0, r.timestamp.0));
        assert_eq!(got, want, "target {target}");
    }
    let max = all.iter().map(|(_, t)| *t).max().unwrap();
    let first_max = all.iter().find(|(_, t)| *t == max).unwrap().0;
    let latest = log.latest_timestamp_and_offset().unwrap();
    assert_eq!((latest.timestamp.0, latest.offset.0), (max, first_max));
}

#[test]
fn truncate_at_every_boundary() {
    let build = |log: &strata_log::Log| {
        for i in 0..30i64 {
            log.append_as_follower(&follower_batch(i * 2, &[i, i + 1], 40))
                .unwrap();
        }
    };
    let cfg = LogConfig {
        index_interval_bytes: 50,
        segment_bytes: 1200,
        ..LogConfig::default()
    };
    let probe = {
        let tmp = tempfile::tempdir().unwrap();
        let log = open_log(
            tmp.path(),
            "p-0",
            cfg.clone(),
            &MockClock::new(0),
            LoadParams::default(),
        );
        build(&log);
        log.segments()
            .iter()
            .map(|s| s.base_offset.0)
            .collect::<Vec<_>>()
    };
    assert!(probe.len() >= 3);
    let mid_segment = probe[1] + 2;
    let mid_batch = probe[1] + 3;
    // (target, log end after, last offset kept on disk + 1). As in Kafka the
    // log end becomes the target even when the batch holding it is removed.
    for (target, want_leo, want_data_end) in [
        (probe[1], probe[1], probe[1]),
        (mid_batch, mid_batch, mid_batch - 1),
        (mid_segment, mid_segment, mid_segment),
        (60, 60, 60),
        (61, 60, 60),
        (1, 1, 0),
        (0, 0, 0),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let log = open_log(
            tmp.path(),
            "p-0",
            cfg.clone(),
            &MockClock::new(0),
            LoadParams::default(),
        );
        build(&log);
        log.truncate_to(Offset(target)).unwrap();
        assert_eq!(
            log.log_end_offset(),
            Offset(want_leo),
            "truncate_to({target})"
        );
        let mut data_end = 0;
        while data_end < want_leo {
            let d = log
                .read(Offset(data_end), 1 << 20, ReadBound::LogEnd, false)
                .unwrap();
            match split_batches(&d.read_to_vec().unwrap()).last() {
                Some(b) => data_end = b.last + 1,
                None => break,
            }
        }
        assert_eq!(data_end, want_data_end, "truncate_to({target})");
        let segs = log.segments();
        assert!(segs.iter().all(|s| s.base_offset.0 <= want_leo.max(0)));
        let active = segs.last().unwrap();
        assert_eq!(
            active.offset_index_max_entries,
            cfg.segment_index_bytes as usize / 8
        );
        // Appends continue at the new end.
        let info = log
            .append_as_follower(&follower_batch(want_leo, &[5], 1))
            .unwrap();
        assert_eq!(info.first_offset, Offset(want_leo));
    }
    // Below the first segment: full truncation restarts the log there.
    let tmp = tempfile::tempdir().unwrap();
    let params = LoadParams {
        log_start_offset: Offset(100),
        ..LoadParams::default()
    };
    let log = open_log(tmp.path(), "q-0", cfg.clone(), &MockClock::new(0), params);
    for i in 0..5i64 {
        log.append_as_follower(&follower_batch(100 + i, &[i], 10))
            .unwrap();
    }
    log.truncate_to(Offset(50)).unwrap();
    assert_eq!(log.log_end_offset(), Offset(50));
    assert_eq!(log.log_start_offset(), Offset(50));
    assert_eq!(log.segments().len(), 1);
    assert_eq!(log.segments()[0].base_offset, Offset(50));
}
