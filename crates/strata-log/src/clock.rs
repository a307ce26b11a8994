//! Injected time.
//!
//! Roll, flush and delete schedules read a [`Clock`] instead of the system
//! time, so tests drive time with [`MockClock`] and never sleep.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A source of wall-clock and monotonic time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;

    /// A monotonic nanosecond counter (only differences are meaningful).
    fn monotonic_ns(&self) -> u64 {
        (self.now_ms().max(0) as u64).saturating_mul(1_000_000)
    }
}

/// A clock shared by every component of one log manager.
pub type SharedClock = Arc<dyn Clock>;

/// The operating system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl SystemClock {
    /// A [`SharedClock`] reading the system time.
    pub fn shared() -> SharedClock {
        Arc::new(SystemClock)
    }
}

fn process_start() -> Instant {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *START.get_or_init(Instant::now)
}

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }

    fn monotonic_ns(&self) -> u64 {
        process_start().elapsed().as_nanos() as u64
    }
}

/// A clock that only moves when told to; for tests.
#[derive(Debug)]
pub struct MockClock {
    now_ms: AtomicI64,
    extra_ns: AtomicU64,
}

impl MockClock {
    /// A clock reading `start_ms`.
    pub fn new(start_ms: i64) -> Arc<MockClock> {
        Arc::new(MockClock {
            now_ms: AtomicI64::new(start_ms),
            extra_ns: AtomicU64::new(0),
        })
    }

    /// Move the clock forward by `ms` milliseconds.
    pub fn advance(&self, ms: i64) {
        self.now_ms.fetch_add(ms, Ordering::SeqCst);
    }

    /// Move the monotonic counter forward by `ns` without touching wall time.
    pub fn advance_ns(&self, ns: u64) {
        self.extra_ns.fetch_add(ns, Ordering::SeqCst);
    }

    /// Set the wall-clock time.
    pub fn set(&self, ms: i64) {
        self.now_ms.store(ms, Ordering::SeqCst);
    }
}

impl Clock for MockClock {
    fn now_ms(&self) -> i64 {
        self.now_ms.load(Ordering::SeqCst)
    }

    fn monotonic_ns(&self) -> u64 {
        (self.now_ms().max(0) as u64)
            .saturating_mul(1_000_000)
            .saturating_add(self.extra_ns.load(Ordering::SeqCst))
    }
}

/// Days since 1970-01-01 to (year, month 1-12, day 1-31) in the proleptic
/// Gregorian calendar (Howard Hinnant's `civil_from_days`), for printing
/// timestamps in UTC without a date crate.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mock_clock_moves_only_when_told() {
        let c = MockClock::new(1_000);
        assert_eq!(c.now_ms(), 1_000);
        c.advance(250);
        assert_eq!(c.now_ms(), 1_250);
        c.set(5);
        assert_eq!(c.now_ms(), 5);
        let before = c.monotonic_ns();
        c.advance_ns(7);
        assert_eq!(c.monotonic_ns(), before + 7);
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_ms() > 1_577_836_800_000);
        let a = SystemClock.monotonic_ns();
        assert!(SystemClock.monotonic_ns() >= a);
    }
}
