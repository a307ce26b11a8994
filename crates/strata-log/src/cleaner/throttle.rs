//! `log.cleaner.io.max.bytes.per.second` (Kafka `Throttler`): the cleaner
//! reports the bytes it reads and writes; every check interval the
//! throttler compares the observed rate with the limit and sleeps off the
//! excess. Time comes from the injected clock, sleeping from a seam, so
//! tests check the computed pauses without sleeping.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::SharedClock;

/// How long a throttled thread sleeps; `std::thread::sleep` in production.
pub type Sleeper = Arc<dyn Fn(Duration) + Send + Sync>;

/// Kafka's `checkIntervalMs` for the cleaner throttler.
const CHECK_INTERVAL_NS: u64 = 300_000_000;

/// A byte-rate limiter for one cleaner thread.
pub struct Throttler {
    bytes_per_second: f64,
    clock: SharedClock,
    sleeper: Sleeper,
    period_start_ns: u64,
    observed: f64,
    /// Total time slept (for stats and tests).
    slept: Duration,
}

impl std::fmt::Debug for Throttler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Throttler")
            .field("bytes_per_second", &self.bytes_per_second)
            .field("slept", &self.slept)
            .finish()
    }
}

impl Throttler {
    /// A throttler at `bytes_per_second` (infinite or non-positive = off).
    pub fn new(bytes_per_second: f64, clock: SharedClock, sleeper: Sleeper) -> Throttler {
        let now = clock.monotonic_ns();
        Throttler {
            bytes_per_second,
            clock,
            sleeper,
            period_start_ns: now,
            observed: 0.0,
            slept: Duration::ZERO,
        }
    }

    /// The real sleeper.
    pub fn thread_sleeper() -> Sleeper {
        Arc::new(std::thread::sleep)
    }

    pub fn is_enabled(&self) -> bool {
        self.bytes_per_second.is_finite() && self.bytes_per_second > 0.0
    }

    /// Total time this throttler has slept.
    pub fn total_slept(&self) -> Duration {
        self.slept
    }

    /// Account for `bytes` of I/O; sleep if the rate over the current check
    /// interval is above the limit. Returns the pause taken.
    pub fn maybe_throttle(&mut self, bytes: u64) -> Duration {
        if !self.is_enabled() {
            return Duration::ZERO;
        }
        self.observed += bytes as f64;
        let now = self.clock.monotonic_ns();
        let elapsed = now.saturating_sub(self.period_start_ns);
        if elapsed < CHECK_INTERVAL_NS || self.observed <= 0.0 {
            return Duration::ZERO;
        }
        let rate = self.observed / (elapsed as f64 / 1e9);
        let mut pause = Duration::ZERO;
        if rate > self.bytes_per_second {
            let desired_ns = self.observed / self.bytes_per_second * 1e9;
            let sleep_ns = desired_ns - elapsed as f64;
            if sleep_ns > 0.0 {
                pause = Duration::from_nanos(sleep_ns as u64);
                (self.sleeper)(pause);
                self.slept += pause;
            }
        }
        self.period_start_ns = self.clock.monotonic_ns();
        self.observed = 0.0;
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::MockClock;

    #[test]
    fn sleeps_off_the_excess_over_a_check_interval() {
        let clock = MockClock::new(0);
        let c2 = clock.clone();
        // The "sleep" moves the mock clock, as real time would.
        let sleeper: Sleeper = Arc::new(move |d: Duration| c2.advance_ns(d.as_nanos() as u64));
        let mut t = Throttler::new(1_000_000.0, clock.clone(), sleeper);
        assert_eq!(
            t.maybe_throttle(500_000),
            Duration::ZERO,
            "inside the interval"
        );
        clock.advance_ns(400_000_000);
        // 1.5 MB in 0.4 s at 1 MB/s: 1.1 s more.
        let p = t.maybe_throttle(1_000_000);
        assert_eq!(p.as_millis(), 1_100);
        // Under the limit: no pause.
        clock.advance_ns(1_000_000_000);
        assert_eq!(t.maybe_throttle(100), Duration::ZERO);
        assert_eq!(t.total_slept().as_millis(), 1_100);
    }

    #[test]
    fn unlimited_never_sleeps() {
        let clock = MockClock::new(0);
        let mut t = Throttler::new(f64::INFINITY, clock.clone(), Arc::new(|_| panic!("slept")));
        clock.advance_ns(10_000_000_000);
        assert_eq!(t.maybe_throttle(u32::MAX as u64), Duration::ZERO);
    }
}
