//! "Compaction uses a lot of CPU" (the operations table's 9th row): from the
//! cleaner's statistics the broker keeps in each log dir
//! (`cleaner-statistics.json`, `strata_log::cleaner::CleaningRecord`, the
//! figures of Kafka's `log-cleaner.log` summaries), name what makes the
//! cleaner work hard and the setting to change:
//!
//! - `dirty_ratio_set_too_low`: cleanings start at a small dirty fraction,
//!   so most of the bytes each reads are clean data it recopies
//!   (`min.cleanable.dirty.ratio`);
//! - `segments_too_small`: many small segments per cleaning (`segment.bytes`);
//! - `huge_key_space`: the offset map fills (`log.cleaner.dedupe.buffer.size`);
//! - `cleaner_threads`: `log.cleaner.threads` against the cores;
//! - `io_throttle_unset_or_high`: `log.cleaner.io.max.bytes.per.second`
//!   never slows the cleaner down.
//!
//! Each rule is a pure function of the records with its threshold here.

use strata_log::cleaner::CleaningRecord;
use strata_log::TopicPartition;

use super::diagnosis::{human_bytes, human_ms, Cause, Finding, Severity, Symptom};

/// The cleaner's CPU over all cores above which the symptom is a warning.
pub const HIGH_CPU_SHARE: f64 = 0.20;
/// Kafka's default `min.cleanable.dirty.ratio`: cleanings starting below it
/// recopy more clean bytes than they remove.
pub const LOW_DIRTY_RATIO: f64 = 0.5;
/// Bytes written per byte read (percent) from which a cleaning mostly
/// recopies.
pub const HIGH_RECOPY_PERCENT: f64 = 50.0;
/// Segments per cleaning from which per-segment costs dominate.
pub const MANY_SEGMENTS_PER_CLEANING: f64 = 8.0;
/// `segment.bytes` below which segments count as small (Kafka default 1 GiB).
pub const SMALL_SEGMENT_BYTES: i64 = 16 << 20;
/// Map utilization, relative to the load factor, from which the map is full.
pub const MAP_FULL_FRACTION: f64 = 0.8;
/// Share of the recorded window a thread spent cleaning from which it is
/// busy all the time.
pub const BUSY_FRACTION: f64 = 0.8;

/// CPU figures over a set of cleanings.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuFigures {
    pub cleanings: usize,
    /// CPU time of the cleanings (elapsed time where CPU was not measured).
    pub cpu_ms: u64,
    pub elapsed_ms: u64,
    /// From the first start to the last end (at least the time spent).
    pub window_ms: u64,
    pub cores: usize,
    pub threads: usize,
    /// `cpu_ms / window_ms`: cores' worth the cleaner used.
    pub cores_used: f64,
    /// `cores_used / cores`.
    pub share_of_cores: f64,
    /// `elapsed_ms / (window_ms * threads)`.
    pub busy_fraction: f64,
}

/// The figures of `records` (`None` when empty).
pub fn cpu_figures(records: &[CleaningRecord]) -> Option<CpuFigures> {
    let first = records.iter().map(|r| r.start_ms).min()?;
    let last = records.iter().map(|r| r.end_ms).max()?;
    let cpu_ms: u64 = records
        .iter()
        .map(|r| r.cpu_ms.unwrap_or(r.elapsed_ms))
        .sum();
    let elapsed_ms: u64 = records.iter().map(|r| r.elapsed_ms).sum();
    let latest = records.iter().max_by_key(|r| r.end_ms)?;
    let threads = latest.config.threads.max(1);
    let cores = latest.config.available_cores.max(1);
    let span = u64::try_from(last.saturating_sub(first)).unwrap_or(0);
    // Cleanings of several threads overlap; one thread's never do.
    let window_ms = span.max(elapsed_ms.div_ceil(threads as u64)).max(1);
    let cores_used = cpu_ms as f64 / window_ms as f64;
    Some(CpuFigures {
        cleanings: records.len(),
        cpu_ms,
        elapsed_ms,
        window_ms,
        cores,
        threads,
        cores_used,
        share_of_cores: cores_used / cores as f64,
        busy_fraction: elapsed_ms as f64 / (window_ms as f64 * threads as f64),
    })
}

/// Whether the cleaner's CPU share makes the symptom a warning.
pub fn is_high_share(share_of_cores: f64) -> bool {
    share_of_cores >= HIGH_CPU_SHARE
}

/// Evidence for `dirty_ratio_set_too_low`.
#[derive(Clone, Debug, PartialEq)]
pub struct LowDirtyRatio {
    /// Cleanings that started below [`LOW_DIRTY_RATIO`].
    pub low_cleanings: usize,
    pub cleanings: usize,
    pub mean_dirty_ratio: f64,
    /// Bytes written per byte read over those cleanings, percent.
    pub recopy_percent: f64,
    pub min_cleanable_dirty_ratio: f64,
}

/// Most cleanings start below [`LOW_DIRTY_RATIO`] and recopy at least
/// [`HIGH_RECOPY_PERCENT`] of what they read.
pub fn dirty_ratio_too_low(records: &[CleaningRecord]) -> Option<LowDirtyRatio> {
    let low: Vec<&CleaningRecord> = records
        .iter()
        .filter(|r| r.dirty_ratio < LOW_DIRTY_RATIO)
        .collect();
    if low.is_empty() || low.len() * 2 < records.len() {
        return None;
    }
    let read: u64 = low.iter().map(|r| r.bytes_read).sum();
    let written: u64 = low.iter().map(|r| r.bytes_written).sum();
    let recopy = strata_log::cleaner::recopy_percent(read, written);
    (recopy >= HIGH_RECOPY_PERCENT).then(|| LowDirtyRatio {
        low_cleanings: low.len(),
        cleanings: records.len(),
        mean_dirty_ratio: low.iter().map(|r| r.dirty_ratio).sum::<f64>() / low.len() as f64,
        recopy_percent: recopy,
        min_cleanable_dirty_ratio: latest(records).config.min_cleanable_dirty_ratio,
    })
}

/// Evidence for `segments_too_small`.
#[derive(Clone, Debug, PartialEq)]
pub struct SmallSegments {
    pub mean_segments_per_cleaning: f64,
    pub mean_segment_bytes: u64,
    pub segment_bytes: i64,
}

/// Cleanings read many segments and `segment.bytes` is small.
pub fn segments_too_small(records: &[CleaningRecord]) -> Option<SmallSegments> {
    let n = records.len().max(1) as f64;
    let segs: usize = records.iter().map(|r| r.segments_cleaned).sum();
    let mean = segs as f64 / n;
    let segment_bytes = latest(records).config.segment_bytes;
    if mean < MANY_SEGMENTS_PER_CLEANING || segment_bytes >= SMALL_SEGMENT_BYTES {
        return None;
    }
    let bytes: u64 = records.iter().map(|r| r.size_before).sum();
    let all_segs: usize = records.iter().map(|r| r.segments_before).sum();
    Some(SmallSegments {
        mean_segments_per_cleaning: mean,
        mean_segment_bytes: bytes / all_segs.max(1) as u64,
        segment_bytes,
    })
}

/// Evidence for `huge_key_space`.
#[derive(Clone, Debug, PartialEq)]
pub struct FullMap {
    pub max_passes: usize,
    pub max_buffer_utilization: f64,
    pub load_factor: f64,
    pub map_capacity: u64,
    pub max_keys_indexed: u64,
    pub dedupe_buffer_size: u64,
}

/// A cleaning needed more than one pass, or the map came within
/// [`MAP_FULL_FRACTION`] of its load factor.
pub fn huge_key_space(records: &[CleaningRecord]) -> Option<FullMap> {
    let max_passes = records.iter().map(|r| r.passes).max()?;
    let max_util = records
        .iter()
        .map(|r| r.buffer_utilization)
        .fold(0.0, f64::max);
    let cfg = &latest(records).config;
    if max_passes <= 1 && max_util < MAP_FULL_FRACTION * cfg.io_buffer_load_factor {
        return None;
    }
    Some(FullMap {
        max_passes,
        max_buffer_utilization: max_util,
        load_factor: cfg.io_buffer_load_factor,
        map_capacity: cfg.map_capacity,
        max_keys_indexed: records
            .iter()
            .map(|r| r.map_messages_read)
            .max()
            .unwrap_or(0),
        dedupe_buffer_size: cfg.dedupe_buffer_size,
    })
}

/// `log.cleaner.threads` takes half the cores or more, or the threads are
/// busy cleaning nearly all the time.
pub fn threads_matter(threads: usize, cores: usize, busy_fraction: f64) -> bool {
    threads * 2 >= cores.max(1) || busy_fraction >= BUSY_FRACTION
}

/// The I/O throttle is unlimited, or never slept, while the CPU share is high.
pub fn throttle_unset_or_high(
    io_max_bytes_per_second: Option<f64>,
    throttle_ms: u64,
    high_share: bool,
) -> bool {
    high_share && (io_max_bytes_per_second.is_none() || throttle_ms == 0)
}

fn latest(records: &[CleaningRecord]) -> &CleaningRecord {
    records
        .iter()
        .max_by_key(|r| r.end_ms)
        .expect("callers pass at least one record")
}

/// Findings about `tp` from `all`, the cleanings recorded in its log dir.
pub fn diagnose(all: &[CleaningRecord], tp: &TopicPartition, out: &mut Vec<Finding>) {
    let mine: Vec<CleaningRecord> = all
        .iter()
        .filter(|r| r.topic == tp.topic && r.partition == tp.partition)
        .cloned()
        .collect();
    let (Some(broker), Some(part)) = (cpu_figures(all), cpu_figures(&mine)) else {
        return;
    };
    let high = is_high_share(broker.share_of_cores);
    let severity = if high {
        Severity::Warning
    } else {
        Severity::Info
    };
    let f = |cause, message: String| {
        Finding::new(Symptom::CompactionUsesMuchCpu, cause, severity, message)
    };
    let read: u64 = mine.iter().map(|r| r.bytes_read + r.map_bytes_read).sum();
    out.push(
        f(
            Cause::CleanerCpuShare,
            format!(
                "the cleaner used {} of CPU in {} cleaning(s) over {} ({:.2} of {} core(s), {:.0}%); \
                 this partition: {} cleaning(s), {} of CPU, {} read",
                human_ms(broker.cpu_ms as i64),
                broker.cleanings,
                human_ms(broker.window_ms as i64),
                broker.cores_used,
                broker.cores,
                100.0 * broker.share_of_cores,
                part.cleanings,
                human_ms(part.cpu_ms as i64),
                human_bytes(read),
            ),
        )
        .num("cleanings", broker.cleanings as u64)
        .num("cpu_ms", broker.cpu_ms)
        .num("window_ms", broker.window_ms)
        .num("cpu_share_percent", 100.0 * broker.share_of_cores)
        .num("cores", broker.cores as u64)
        .num("partition_cleanings", part.cleanings as u64)
        .num("partition_cpu_ms", part.cpu_ms)
        .num("partition_bytes_read", read),
    );
    if let Some(d) = dirty_ratio_too_low(&mine) {
        out.push(
            f(
                Cause::DirtyRatioSetTooLow,
                format!(
                    "{} of {} cleanings started at a dirty ratio of {:.1}% on average \
                     (min.cleanable.dirty.ratio = {}), so {:.0}% of the bytes they read were \
                     written back unchanged; raise min.cleanable.dirty.ratio (Kafka's default \
                     is 0.5) so each cleaning removes more per byte it recopies",
                    d.low_cleanings,
                    d.cleanings,
                    100.0 * d.mean_dirty_ratio,
                    d.min_cleanable_dirty_ratio,
                    d.recopy_percent
                ),
            )
            .settings(&["min.cleanable.dirty.ratio"])
            .num("low_ratio_cleanings", d.low_cleanings as u64)
            .num("mean_dirty_ratio", d.mean_dirty_ratio)
            .num("recopy_percent", d.recopy_percent)
            .num("min_cleanable_dirty_ratio", d.min_cleanable_dirty_ratio),
        );
    }
    if let Some(s) = segments_too_small(&mine) {
        out.push(
            f(
                Cause::SegmentsTooSmall,
                format!(
                    "each cleaning read {:.1} segments on average, of {} each \
                     (segment.bytes = {}); every segment costs its own files, indexes and swap: \
                     raise segment.bytes",
                    s.mean_segments_per_cleaning,
                    human_bytes(s.mean_segment_bytes),
                    s.segment_bytes
                ),
            )
            .settings(&["segment.bytes"])
            .num("segments_per_cleaning", s.mean_segments_per_cleaning)
            .num("mean_segment_bytes", s.mean_segment_bytes)
            .num("segment_bytes", s.segment_bytes),
        );
    }
    if let Some(m) = huge_key_space(&mine) {
        out.push(
            f(
                Cause::HugeKeySpace,
                format!(
                    "the offset map filled: up to {} pass(es) per cleaning, buffer utilization up \
                     to {:.0}% (full at the load factor {:.0}%), {} keys per pass of {} indexed; \
                     each extra pass rereads the clean section: raise \
                     log.cleaner.dedupe.buffer.size (now {})",
                    m.max_passes,
                    100.0 * m.max_buffer_utilization,
                    100.0 * m.load_factor,
                    m.map_capacity,
                    m.max_keys_indexed,
                    human_bytes(m.dedupe_buffer_size)
                ),
            )
            .settings(&["log.cleaner.dedupe.buffer.size"])
            .num("max_passes", m.max_passes as u64)
            .num("max_buffer_utilization", m.max_buffer_utilization)
            .num("map_capacity", m.map_capacity)
            .num("dedupe_buffer_size", m.dedupe_buffer_size),
        );
    }
    if threads_matter(broker.threads, broker.cores, broker.busy_fraction) {
        out.push(
            f(
                Cause::CleanerThreads,
                format!(
                    "log.cleaner.threads = {} on {} core(s), busy {:.0}% of the recorded window: \
                     each thread can take a whole core; fewer threads bound the cleaner's CPU \
                     (more only help when one thread cannot keep up)",
                    broker.threads,
                    broker.cores,
                    100.0 * broker.busy_fraction
                ),
            )
            .settings(&["log.cleaner.threads"])
            .num("threads", broker.threads as u64)
            .num("busy_percent", 100.0 * broker.busy_fraction),
        );
    }
    let last = latest(all);
    let throttled: u64 = all.iter().map(|r| r.throttle_ms).sum();
    if throttle_unset_or_high(last.config.io_max_bytes_per_second, throttled, high) {
        let rate = match last.config.io_max_bytes_per_second {
            Some(r) => format!("{}/s, never reached", human_bytes(r as u64)),
            None => "unlimited".to_owned(),
        };
        out.push(
            f(
                Cause::IoThrottleUnsetOrHigh,
                format!(
                    "log.cleaner.io.max.bytes.per.second is {rate} while the cleaner uses {:.0}% \
                     of the CPU: a limit spreads the same work over more time",
                    100.0 * broker.share_of_cores
                ),
            )
            .settings(&["log.cleaner.io.max.bytes.per.second"])
            .num("throttle_ms", throttled),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_log::cleaner::CleanerSettingsInForce;

    fn rec(
        start_ms: i64,
        elapsed: u64,
        cpu: u64,
        ratio: f64,
        read: u64,
        written: u64,
    ) -> CleaningRecord {
        CleaningRecord {
            topic: "t".into(),
            partition: 0,
            thread: 0,
            start_ms,
            end_ms: start_ms + elapsed as i64,
            elapsed_ms: elapsed,
            cpu_ms: Some(cpu),
            map_elapsed_ms: 0,
            first_dirty_offset: 0,
            end_offset: 10,
            first_uncleanable_offset: 10,
            dirty_ratio: ratio,
            dirty_bytes: 0,
            clean_bytes: 0,
            compaction_delay_ms: 0,
            map_messages_read: 10,
            map_bytes_read: 0,
            messages_read: 10,
            bytes_read: read,
            messages_written: 5,
            bytes_written: written,
            passes: 1,
            groups: 1,
            buffer_utilization: 0.1,
            segments_cleaned: 2,
            segments_before: 3,
            segments_after: 3,
            size_before: 3 << 30,
            size_after: 3 << 30,
            throttle_ms: 0,
            config: CleanerSettingsInForce {
                threads: 1,
                io_max_bytes_per_second: None,
                dedupe_buffer_size: 128 << 20,
                io_buffer_load_factor: 0.9,
                map_capacity: 1000,
                min_cleanable_dirty_ratio: 0.5,
                segment_bytes: 1 << 30,
                available_cores: 4,
            },
        }
    }

    #[test]
    fn cpu_share_is_cpu_over_the_window_and_cores() {
        // 2 cleanings of 1 s CPU within 10 s on 4 cores: 0.2 cores, 5%.
        let f = cpu_figures(&[
            rec(0, 1_000, 1_000, 0.6, 1, 1),
            rec(9_000, 1_000, 1_000, 0.6, 1, 1),
        ])
        .unwrap();
        assert_eq!(f.window_ms, 10_000);
        assert!((f.cores_used - 0.2).abs() < 1e-9);
        assert!((f.share_of_cores - 0.05).abs() < 1e-9);
        assert!((f.busy_fraction - 0.2).abs() < 1e-9);
        assert!(!is_high_share(f.share_of_cores));
        // Back to back on a busy thread: a whole core of four.
        let f = cpu_figures(&[
            rec(0, 1_000, 1_000, 0.6, 1, 1),
            rec(1_000, 1_000, 1_000, 0.6, 1, 1),
        ])
        .unwrap();
        assert!(is_high_share(f.share_of_cores));
        assert!(cpu_figures(&[]).is_none());
    }

    #[test]
    fn a_low_dirty_ratio_shows_as_recopying() {
        let low = |s| rec(s, 10, 10, 0.05, 100, 95);
        assert!(dirty_ratio_too_low(&[low(0), low(100), rec(200, 10, 10, 1.0, 100, 1)]).is_some());
        // Starting dirty: most bytes go away, nothing to say.
        assert!(dirty_ratio_too_low(&[rec(0, 10, 10, 0.9, 100, 10)]).is_none());
        // Low ratio but the cleaning removed most: not recopying.
        assert!(dirty_ratio_too_low(&[rec(0, 10, 10, 0.1, 100, 20)]).is_none());
        // A minority of low cleanings does not decide.
        let high = |s| rec(s, 10, 10, 0.9, 100, 10);
        assert!(dirty_ratio_too_low(&[low(0), high(100), high(200)]).is_none());
    }

    #[test]
    fn small_segments_need_many_per_cleaning_and_a_small_segment_bytes() {
        let mut r = rec(0, 10, 10, 0.5, 1, 1);
        r.segments_cleaned = 20;
        r.segments_before = 21;
        assert!(
            segments_too_small(std::slice::from_ref(&r)).is_none(),
            "1 GiB segments"
        );
        r.config.segment_bytes = 1 << 20;
        r.size_before = 21 << 20;
        let s = segments_too_small(&[r.clone()]).unwrap();
        assert_eq!(s.mean_segment_bytes, 1 << 20);
        r.segments_cleaned = 3;
        assert!(segments_too_small(&[r]).is_none());
    }

    #[test]
    fn a_full_map_or_several_passes_is_a_huge_key_space() {
        let mut r = rec(0, 10, 10, 0.5, 1, 1);
        assert!(huge_key_space(std::slice::from_ref(&r)).is_none());
        r.buffer_utilization = 0.75; // 0.8 * 0.9 = 0.72
        assert!(huge_key_space(std::slice::from_ref(&r)).is_some());
        r.buffer_utilization = 0.1;
        r.passes = 2;
        assert_eq!(huge_key_space(&[r]).unwrap().max_passes, 2);
    }

    #[test]
    fn threads_and_throttle_rules() {
        assert!(threads_matter(2, 4, 0.1));
        assert!(!threads_matter(1, 4, 0.1));
        assert!(threads_matter(1, 4, 0.9));
        assert!(throttle_unset_or_high(None, 0, true));
        assert!(throttle_unset_or_high(Some(1e9), 0, true));
        assert!(!throttle_unset_or_high(Some(1e6), 500, true));
        assert!(!throttle_unset_or_high(None, 0, false));
    }

    #[test]
    fn diagnose_names_only_this_partitions_causes() {
        let mut r = rec(0, 1_000, 1_000, 0.05, 100, 95);
        r.segments_cleaned = 30;
        r.config.segment_bytes = 4096;
        let mut other = r.clone();
        other.partition = 1;
        other.passes = 3;
        let mut out = Vec::new();
        diagnose(&[r, other], &TopicPartition::new("t", 0), &mut out);
        let causes: Vec<Cause> = out.iter().map(|f| f.cause).collect();
        assert!(causes.contains(&Cause::CleanerCpuShare));
        assert!(causes.contains(&Cause::DirtyRatioSetTooLow));
        assert!(causes.contains(&Cause::SegmentsTooSmall));
        assert!(
            !causes.contains(&Cause::HugeKeySpace),
            "partition 1's passes"
        );
        let mut none = Vec::new();
        diagnose(&[], &TopicPartition::new("t", 0), &mut none);
        assert!(none.is_empty());
    }
}
