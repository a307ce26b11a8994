//! Progress of long work: counts of units (files, partitions) and bytes
//! done against a total, and the pure rules that turn them into an ETA and
//! one human line (`verify 120/1000 files, 1.2 GiB/10 GiB, ETA 0:42`).
//!
//! Shared by the broker's start-up recovery ([`LoadProgress`], which logs
//! at INFO) and the command-line tools (`strata`'s `progress` module, which
//! draws a bar on a terminal or prints these lines on stderr). No terminal
//! code lives here: this crate stays free of it.
//!
//! The rules are pure functions of a [`ProgressSnapshot`] and elapsed
//! time, so they are tested without clocks or disks.

use std::sync::Mutex;
use std::time::Duration;

use crate::clock::SharedClock;

/// How often a plain progress line may be written (log lines, non-terminal
/// stderr): at most one per interval, plus a final one.
pub const REPORT_INTERVAL: Duration = Duration::from_secs(2);

/// Work done and to do at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProgressSnapshot {
    /// Units (files, partitions, segments) finished.
    pub units_done: u64,
    /// Units in all.
    pub units_total: u64,
    /// Bytes finished.
    pub bytes_done: u64,
    /// Bytes in all (0: unknown; the ETA then follows the units).
    pub bytes_total: u64,
}

impl ProgressSnapshot {
    /// The fraction done in `[0, 1]`: by bytes when a byte total is known,
    /// else by units; `None` when there is nothing to measure against.
    pub fn fraction(&self) -> Option<f64> {
        let (done, total) = if self.bytes_total > 0 {
            (self.bytes_done, self.bytes_total)
        } else {
            (self.units_done, self.units_total)
        };
        (total > 0).then(|| (done.min(total) as f64) / (total as f64))
    }
}

/// Time left, extrapolating the rate so far: `elapsed * (1 - f) / f`.
/// `None` before anything is done (no rate yet); zero once all is done.
pub fn eta(snapshot: &ProgressSnapshot, elapsed: Duration) -> Option<Duration> {
    let f = snapshot.fraction()?;
    if f >= 1.0 {
        return Some(Duration::ZERO);
    }
    if f <= 0.0 {
        return None;
    }
    let secs = elapsed.as_secs_f64() * (1.0 - f) / f;
    // A ridiculous rate (a day and more) is shown as such, not overflowed.
    Some(Duration::from_secs_f64(secs.min(1e9)))
}

/// Bytes in binary units, one decimal above 1 KiB: `512 B`, `1.2 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A duration as `m:ss`, or `h:mm:ss` from an hour on (whole seconds,
/// rounded up so that a nearly-done job does not show `0:00`).
pub fn human_duration(d: Duration) -> String {
    let total = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    let (h, m, s) = (total / 3600, (total / 60) % 60, total % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// One progress line without a prefix:
/// `verify 120/1000 files, 1.2 GiB/10.0 GiB, ETA 0:42`. The byte part is
/// left out when no byte total is known; the ETA reads `?` before a rate
/// is known and `done` at the end.
pub fn describe(what: &str, unit: &str, snapshot: &ProgressSnapshot, elapsed: Duration) -> String {
    let mut line = format!(
        "{what} {}/{} {unit}",
        snapshot.units_done, snapshot.units_total
    );
    if snapshot.bytes_total > 0 {
        line.push_str(&format!(
            ", {}/{}",
            human_bytes(snapshot.bytes_done),
            human_bytes(snapshot.bytes_total)
        ));
    }
    // Nothing to do (0/0) is finished too.
    let finished = snapshot.units_done >= snapshot.units_total;
    let eta = if finished {
        // Time taken is shown in whole seconds elapsed (not rounded up as
        // time left is).
        format!(
            "done in {}",
            human_duration(Duration::from_secs(elapsed.as_secs()))
        )
    } else {
        match eta(snapshot, elapsed) {
            Some(left) => format!("ETA {}", human_duration(left)),
            None => "ETA ?".to_string(),
        }
    };
    line.push_str(", ");
    line.push_str(&eta);
    line
}

/// Whether a line is due: the first one, or `interval` after the last.
pub fn report_due(last_report: Option<Duration>, now: Duration, interval: Duration) -> bool {
    last_report.is_none_or(|last| now.saturating_sub(last) >= interval)
}

/// The broker's start-up recovery progress: partitions loaded of all
/// listed, segments recovered, bytes, ETA, as INFO lines on target
/// `strata_log::recovery` at most every [`REPORT_INTERVAL`] and once at
/// the end ([`LoadProgress::finish`]).
///
/// Totals grow as each log dir is listed (the dirs load one after the
/// other), so the ETA covers the dirs listed so far.
///
/// # Locks
/// `state` is a leaf lock, held only to update counters and decide whether
/// a line is due (the line is logged after it is released).
pub struct LoadProgress {
    clock: SharedClock,
    start_ns: u64,
    state: Mutex<LoadState>,
}

#[derive(Default)]
struct LoadState {
    snapshot: ProgressSnapshot,
    segments_recovered: u64,
    last_report: Option<Duration>,
}

impl LoadProgress {
    /// Start measuring now (by `clock`'s monotonic time).
    pub fn new(clock: SharedClock) -> LoadProgress {
        let start_ns = clock.monotonic_ns();
        LoadProgress {
            clock,
            start_ns,
            state: Mutex::new(LoadState::default()),
        }
    }

    fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.clock.monotonic_ns().saturating_sub(self.start_ns))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LoadState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A log dir was listed: `partitions` more to load, `bytes` of segments.
    pub fn add_total(&self, partitions: u64, bytes: u64) {
        let mut s = self.lock();
        s.snapshot.units_total += partitions;
        s.snapshot.bytes_total += bytes;
    }

    /// One partition was loaded: its segment `bytes` and the number of
    /// segments recovery re-read. Logs a line if one is due.
    pub fn partition_loaded(&self, bytes: u64, segments_recovered: u64) {
        let now = self.elapsed();
        let due = {
            let mut s = self.lock();
            s.snapshot.units_done += 1;
            s.snapshot.bytes_done += bytes;
            s.segments_recovered += segments_recovered;
            let due = report_due(s.last_report, now, REPORT_INTERVAL);
            if due {
                s.last_report = Some(now);
            }
            due.then_some((s.snapshot, s.segments_recovered))
        };
        if let Some((snapshot, recovered)) = due {
            log_line(&snapshot, recovered, now);
        }
    }

    /// The counts so far.
    pub fn snapshot(&self) -> ProgressSnapshot {
        self.lock().snapshot
    }

    /// Log the final line.
    pub fn finish(&self) {
        let now = self.elapsed();
        let (snapshot, recovered) = {
            let s = self.lock();
            (s.snapshot, s.segments_recovered)
        };
        log_line(&snapshot, recovered, now);
    }
}

fn log_line(snapshot: &ProgressSnapshot, segments_recovered: u64, elapsed: Duration) {
    tracing::info!(
        target: "strata_log::recovery",
        partitions_loaded = snapshot.units_done,
        partitions_total = snapshot.units_total,
        segments_recovered,
        bytes_done = snapshot.bytes_done,
        bytes_total = snapshot.bytes_total,
        "recovery progress: {}, {segments_recovered} segments recovered",
        describe("loaded", "partitions", snapshot, elapsed)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::MockClock;
    use std::sync::Arc;

    fn snap(
        units_done: u64,
        units_total: u64,
        bytes_done: u64,
        bytes_total: u64,
    ) -> ProgressSnapshot {
        ProgressSnapshot {
            units_done,
            units_total,
            bytes_done,
            bytes_total,
        }
    }

    #[test]
    fn eta_extrapolates_the_rate_by_bytes_first() {
        // A quarter of the bytes in 10 s: 30 s left, whatever the units say.
        let s = snap(9, 10, 250, 1000);
        assert_eq!(
            eta(&s, Duration::from_secs(10)),
            Some(Duration::from_secs(30))
        );
        // Without a byte total, by units: half in 4 s, 4 s left.
        let s = snap(5, 10, 0, 0);
        assert_eq!(
            eta(&s, Duration::from_secs(4)),
            Some(Duration::from_secs(4))
        );
    }

    #[test]
    fn eta_is_unknown_before_any_work_and_zero_at_the_end() {
        assert_eq!(eta(&snap(0, 10, 0, 1000), Duration::from_secs(3)), None);
        assert_eq!(eta(&snap(0, 0, 0, 0), Duration::from_secs(3)), None);
        assert_eq!(
            eta(&snap(10, 10, 1000, 1000), Duration::from_secs(3)),
            Some(Duration::ZERO)
        );
        // More done than planned (a file grew) is clamped, not negative.
        assert_eq!(
            eta(&snap(3, 10, 2000, 1000), Duration::from_secs(3)),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn bytes_are_shown_in_binary_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(10 * (1 << 30)), "10.0 GiB");
        assert_eq!(human_bytes((12 * (1u64 << 30)) / 10), "1.2 GiB");
        assert_eq!(human_bytes(u64::MAX), "16.0 EiB");
    }

    #[test]
    fn durations_are_minutes_and_seconds_rounded_up() {
        assert_eq!(human_duration(Duration::ZERO), "0:00");
        assert_eq!(human_duration(Duration::from_millis(100)), "0:01");
        assert_eq!(human_duration(Duration::from_secs(42)), "0:42");
        assert_eq!(human_duration(Duration::from_secs(61)), "1:01");
        assert_eq!(human_duration(Duration::from_secs(3600 + 62)), "1:01:02");
    }

    #[test]
    fn a_line_names_units_bytes_and_the_eta() {
        let s = snap(120, 1000, 1 << 30, 10 << 30);
        assert_eq!(
            describe("verify", "files", &s, Duration::from_secs(10)),
            "verify 120/1000 files, 1.0 GiB/10.0 GiB, ETA 1:30"
        );
        let s = snap(0, 4, 0, 0);
        assert_eq!(
            describe("fsck", "segments", &s, Duration::from_secs(1)),
            "fsck 0/4 segments, ETA ?"
        );
        let s = snap(0, 0, 0, 0);
        assert_eq!(
            describe("fsck", "segments", &s, Duration::from_millis(300)),
            "fsck 0/0 segments, done in 0:00"
        );
        let s = snap(4, 4, 4096, 4096);
        assert_eq!(
            describe("verify", "files", &s, Duration::from_secs(65)),
            "verify 4/4 files, 4.0 KiB/4.0 KiB, done in 1:05"
        );
    }

    #[test]
    fn lines_are_due_first_then_once_per_interval() {
        let i = REPORT_INTERVAL;
        assert!(report_due(None, Duration::ZERO, i));
        assert!(!report_due(
            Some(Duration::from_secs(1)),
            Duration::from_secs(2),
            i
        ));
        assert!(report_due(
            Some(Duration::from_secs(1)),
            Duration::from_secs(3),
            i
        ));
        // A clock that went backwards is not a reason to report.
        assert!(!report_due(
            Some(Duration::from_secs(5)),
            Duration::from_secs(1),
            i
        ));
    }

    #[test]
    fn load_progress_counts_partitions_and_bytes() {
        let clock = MockClock::new(0);
        let p = LoadProgress::new(clock.clone() as Arc<dyn crate::clock::Clock>);
        p.add_total(3, 300);
        p.partition_loaded(100, 2);
        clock.advance(1000);
        p.partition_loaded(100, 0);
        assert_eq!(p.snapshot(), snap(2, 3, 200, 300));
        assert_eq!(p.lock().segments_recovered, 2);
        // Only the first load was reported; the second came within the interval.
        assert_eq!(p.lock().last_report, Some(Duration::ZERO));
    }
}
