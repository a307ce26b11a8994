//! Kafka's windowed rate (`SampledStat` + `WindowedSum` + `Rate`) and the
//! throttle-time arithmetic of `QuotaUtils`.
//!
//! A [`RateSensor`] keeps `samples + 1` slots (Kafka keeps one spare for the
//! sample that overlaps the start of the monitored window). A record lands in
//! the current slot unless that slot is at least `window_ms` old, in which case
//! the next slot is reset and used. Measuring first resets every slot whose
//! last event is `samples * window_ms` or more in the past, then divides the
//! sum of all slots by the window size:
//!
//! ```text
//! elapsed = now - oldest slot start
//! full    = elapsed / window_ms                      (integer division)
//! window  = elapsed + max(0, samples - 1 - full) * window_ms, at least 1 ms
//! rate    = sum / (window / 1000)                    (per second)
//! ```
//!
//! so a young sensor is judged as if it had `samples - 1` full windows behind
//! it and a burst is not read as an enormous rate.
//!
//! Throttle time is the delay `X` that brings the observed rate `O` back to
//! the bound `T` if nothing else is recorded: `O * W / (W + X) = T`, so
//! `X = (O - T) / T * W`, rounded to the nearest millisecond.

/// One slot of the sampled statistic (Kafka `SampledStat.Sample`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    value: f64,
    event_count: u64,
    start_ms: i64,
    last_event_ms: i64,
}

impl Sample {
    fn new(now_ms: i64) -> Self {
        Sample {
            value: 0.0,
            event_count: 0,
            start_ms: now_ms,
            last_event_ms: now_ms,
        }
    }

    fn reset(&mut self, now_ms: i64) {
        *self = Sample::new(now_ms);
    }

    /// Kafka's `isComplete`; the event-count limit (`eventWindow`) is
    /// `Integer.MAX_VALUE` for quotas and is left out.
    fn is_complete(&self, now_ms: i64, window_ms: i64) -> bool {
        now_ms.saturating_sub(self.start_ms) >= window_ms
    }

    /// Kafka's obsolete-sample rule: no event within `expire_age_ms`.
    fn is_obsolete(&self, now_ms: i64, expire_age_ms: i64) -> bool {
        now_ms.saturating_sub(self.last_event_ms) >= expire_age_ms
    }
}

/// A rate over `samples` windows of `window_ms` each, measured per second:
/// Kafka's `Rate` over a `WindowedSum`, as client quota sensors use it
/// (`quota.window.num` samples of `quota.window.size.seconds`).
///
/// Time is always passed in (`now_ms`); the sensor never reads a clock.
#[derive(Debug, Clone)]
pub struct RateSensor {
    samples: u32,
    window_ms: i64,
    /// Up to `samples + 1` slots, created lazily as in Kafka.
    slots: Vec<Sample>,
    current: usize,
    last_record_ms: i64,
}

impl RateSensor {
    /// A sensor over `samples` windows of `window_ms` milliseconds, created at
    /// `now_ms` (the start of its inactivity clock).
    ///
    /// Kafka validates `quota.window.num >= 1` and
    /// `quota.window.size.seconds >= 1`; out-of-range arguments are raised to
    /// 1 here rather than rejected, so a sensor is always usable.
    pub fn new(samples: u32, window_ms: i64, now_ms: i64) -> Self {
        let samples = samples.max(1);
        RateSensor {
            samples,
            window_ms: window_ms.max(1),
            slots: Vec::with_capacity(samples as usize + 1),
            current: 0,
            last_record_ms: now_ms,
        }
    }

    /// The number of samples this sensor measures over.
    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// The span of one sample in milliseconds.
    pub fn window_ms(&self) -> i64 {
        self.window_ms
    }

    /// The time of the last [`record`](Self::record) (or of creation); Kafka
    /// expires a quota sensor an hour after this.
    pub fn last_record_ms(&self) -> i64 {
        self.last_record_ms
    }

    /// Adds `value` at `now_ms` without checking any quota (Kafka
    /// `Sensor.record(value, time, false)`, as `recordNoThrottle` and the
    /// fetch path's un-record with a negative value use it).
    pub fn record(&mut self, value: f64, now_ms: i64) {
        self.last_record_ms = now_ms;
        if self.slots.is_empty() {
            self.slots.push(Sample::new(now_ms));
            self.current = 0;
        }
        if self.slots[self.current].is_complete(now_ms, self.window_ms) {
            self.advance(now_ms);
        }
        let sample = &mut self.slots[self.current];
        sample.value += value;
        sample.event_count += 1;
        sample.last_event_ms = now_ms;
    }

    /// The rate per second at `now_ms`, as Kafka's `Rate.measure` would
    /// return it. This does not change the sensor: obsolete samples are
    /// treated as reset at `now_ms` without being written back.
    pub fn rate(&self, now_ms: i64) -> f64 {
        let expire = self.expire_age_ms();
        let sum: f64 = self
            .slots
            .iter()
            .filter(|s| !s.is_obsolete(now_ms, expire))
            .map(|s| s.value)
            .sum();
        sum / (self.window_size_view(now_ms) as f64 / 1000.0)
    }

    /// The window the rate divides by at `now_ms` (Kafka
    /// `Rate.windowSize`), in milliseconds; at least 1.
    pub fn window_size_ms(&self, now_ms: i64) -> i64 {
        self.window_size_view(now_ms)
    }

    /// Kafka's `measure` on the quota path: purges obsolete samples (writing
    /// the reset back, which moves their start to `now_ms`) and returns the
    /// rate and the window it was computed over.
    fn measure_and_purge(&mut self, now_ms: i64) -> (f64, i64) {
        let expire = self.expire_age_ms();
        for sample in &mut self.slots {
            if sample.is_obsolete(now_ms, expire) {
                sample.reset(now_ms);
            }
        }
        let window = self.window_size_view(now_ms);
        let sum: f64 = self.slots.iter().map(|s| s.value).sum();
        (sum / (window as f64 / 1000.0), window)
    }

    fn advance(&mut self, now_ms: i64) {
        let max_slots = self.samples as usize + 1;
        self.current = (self.current + 1) % max_slots;
        if self.current >= self.slots.len() {
            self.slots.push(Sample::new(now_ms));
            self.current = self.slots.len() - 1;
        } else {
            self.slots[self.current].reset(now_ms);
        }
    }

    fn expire_age_ms(&self) -> i64 {
        i64::from(self.samples).saturating_mul(self.window_ms)
    }

    /// `Rate.windowSize` over the slots as they would look after a purge at
    /// `now_ms`. With no slot at all Kafka creates one starting at `now_ms`,
    /// which gives an elapsed time of zero.
    fn window_size_view(&self, now_ms: i64) -> i64 {
        let expire = self.expire_age_ms();
        let oldest_start = self
            .slots
            .iter()
            .map(|s| {
                if s.is_obsolete(now_ms, expire) {
                    now_ms
                } else {
                    s.start_ms
                }
            })
            .min()
            .unwrap_or(now_ms);
        let mut total = now_ms.saturating_sub(oldest_start);
        let full_windows = total / self.window_ms;
        let min_full_windows = i64::from(self.samples) - 1;
        if full_windows < min_full_windows {
            total = total
                .saturating_add((min_full_windows - full_windows).saturating_mul(self.window_ms));
        }
        total.max(1)
    }
}

/// Kafka's `QuotaUtils.throttleTime`: the delay in milliseconds that brings
/// `observed` (per second, over `window_ms`) down to `bound`, rounded to the
/// nearest millisecond. Negative when `observed` is below `bound`; a
/// non-positive or non-finite `bound` gives `i64::MAX` (nothing is allowed).
pub fn throttle_time_ms(observed: f64, bound: f64, window_ms: i64) -> i64 {
    if !bound.is_finite() || bound <= 0.0 {
        return i64::MAX;
    }
    let throttle = (observed - bound) / bound * window_ms as f64;
    // `as` saturates and maps NaN to 0.
    throttle.round() as i64
}

/// Kafka's `QuotaUtils.boundedThrottleTime`: [`throttle_time_ms`] capped at
/// `max_throttle_ms`.
pub fn bounded_throttle_time_ms(
    observed: f64,
    bound: f64,
    window_ms: i64,
    max_throttle_ms: i64,
) -> i64 {
    throttle_time_ms(observed, bound, window_ms).min(max_throttle_ms)
}

/// Kafka's `ClientQuotaManager.recordAndGetThrottleTimeMs` for one sensor:
/// records `value` at `now_ms`, then, if the rate (including this value)
/// exceeds `quota`, returns the throttle time in milliseconds; otherwise 0.
///
/// Byte-rate quotas (produce, fetch) are not capped, as in Kafka; use
/// [`record_and_throttle_bounded`] for the request quota. The result is at
/// most `i32::MAX` (Kafka's `throttle_time_ms` field is an int32).
pub fn record_and_throttle(sensor: &mut RateSensor, quota: f64, value: f64, now_ms: i64) -> i64 {
    record_and_throttle_bounded(sensor, quota, value, now_ms, i64::from(i32::MAX))
}

/// [`record_and_throttle`] with the throttle capped at `max_throttle_ms`, as
/// Kafka's `ClientRequestQuotaManager` caps request-time throttles at one
/// quota window (`quota.window.size.seconds * 1000`).
pub fn record_and_throttle_bounded(
    sensor: &mut RateSensor,
    quota: f64,
    value: f64,
    now_ms: i64,
    max_throttle_ms: i64,
) -> i64 {
    sensor.record(value, now_ms);
    let (observed, window) = sensor.measure_and_purge(now_ms);
    // Kafka's `Quota.acceptable` for an upper bound: value <= bound.
    if observed <= quota {
        return 0;
    }
    bounded_throttle_time_ms(observed, quota, window, max_throttle_ms).clamp(0, i64::from(i32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn young_sensor_is_measured_over_samples_minus_one_windows() {
        let mut s = RateSensor::new(11, 1000, 0);
        s.record(1000.0, 0);
        // 0 ms elapsed, 10 windows assumed: 1000 / 10 s.
        assert_eq!(s.window_size_ms(0), 10_000);
        assert_eq!(s.rate(0), 100.0);
        // 500 ms into the first window: 10.5 s.
        assert_eq!(s.window_size_ms(500), 10_500);
        // After 3.2 s three windows are full: 3200 + 7 * 1000.
        assert_eq!(s.window_size_ms(3200), 10_200);
    }

    #[test]
    fn window_grows_with_elapsed_time_once_enough_windows_are_full() {
        let mut s = RateSensor::new(3, 1000, 0);
        for t in [0, 1000, 2000] {
            s.record(100.0, t);
        }
        // elapsed 2500: 2 full windows = samples - 1, no padding.
        assert_eq!(s.window_size_ms(2500), 2500);
        assert!((s.rate(2500) - 300.0 / 2.5).abs() < 1e-9);
    }

    #[test]
    fn samples_older_than_samples_times_window_are_dropped() {
        let mut s = RateSensor::new(2, 1000, 0);
        s.record(500.0, 0);
        s.record(100.0, 1500);
        // At 2000 the first sample (last event 0) is exactly 2 * 1000 old.
        assert_eq!(s.rate(1999), 600.0 / 1.999);
        assert_eq!(s.rate(2000), 100.0 / 1.5);
    }

    #[test]
    fn rate_of_an_empty_sensor_is_zero() {
        let s = RateSensor::new(11, 1000, 0);
        assert_eq!(s.rate(12_345), 0.0);
        assert_eq!(s.window_size_ms(12_345), 10_000);
    }

    #[test]
    fn one_sample_sensor_uses_at_least_one_millisecond() {
        let mut s = RateSensor::new(1, 1000, 0);
        s.record(5.0, 0);
        assert_eq!(s.window_size_ms(0), 1);
        assert_eq!(s.rate(0), 5000.0);
    }

    #[test]
    fn slots_are_reused_round_robin() {
        let mut s = RateSensor::new(2, 1000, 0);
        for t in 0..10 {
            s.record(1.0, t * 1000);
        }
        assert_eq!(s.slots.len(), 3);
        // Only the slots from 8000 and 9000 are within 2 windows of 9500.
        assert_eq!(s.rate(9500), 2.0 / 1.5);
    }

    // QuotaUtilsTest: observed == quota gives 0, below gives a negative
    // number, and above gives (O - T) / T * W.
    #[test]
    fn quota_utils_throttle_time_vectors() {
        assert_eq!(throttle_time_ms(16.5, 16.5, 9000), 0);
        assert_eq!(throttle_time_ms(16.5, 16.5, 10_000), 0);
        assert!(throttle_time_ms(16.5, 20.4, 9000) < 0);
        // 3 samples of 1 s: window (3 - 1) * 1000.
        assert_eq!(throttle_time_ms(100.0, 50.0, 2000), 2000);
        // Bounded: 2 samples -> 1000 ms window.
        assert_eq!(bounded_throttle_time_ms(55.0, 50.0, 1000, 500), 100);
        assert_eq!(bounded_throttle_time_ms(100.0, 50.0, 9000, 500), 500);
        assert_eq!(bounded_throttle_time_ms(18.2, 18.2, 9000, 500), 0);
        assert!(bounded_throttle_time_ms(16.5, 22.4, 9000, 500) < 0);
    }

    #[test]
    fn throttle_time_with_a_nonsense_bound_is_maximal() {
        assert_eq!(throttle_time_ms(1.0, 0.0, 1000), i64::MAX);
        assert_eq!(throttle_time_ms(1.0, f64::NAN, 1000), i64::MAX);
        let mut s = RateSensor::new(11, 1000, 0);
        assert_eq!(
            record_and_throttle(&mut s, 0.0, 1.0, 0),
            i64::from(i32::MAX)
        );
    }

    // ClientQuotaManagerTest.testQuotaViolation: 400 bytes/s for 10 s under a
    // 500 bytes/s quota, then a 2300-byte spike half-way into the 11th
    // second: 6300 / 10.5 s = 600 bytes/s, (600 - 500) / 500 * 10500 = 2100.
    #[test]
    fn kafka_quota_violation_vector() {
        let mut s = RateSensor::new(11, 1000, 0);
        let mut now = 0;
        for _ in 0..10 {
            assert_eq!(record_and_throttle(&mut s, 500.0, 400.0, now), 0);
            now += 1000;
        }
        now += 500;
        assert_eq!(record_and_throttle(&mut s, 500.0, 2300.0, now), 2100);
        now += 2100;
        // Delays continue until the burst rolls out of the window.
        for _ in 0..10 {
            record_and_throttle(&mut s, 500.0, 400.0, now);
            now += 1000;
        }
        assert_eq!(record_and_throttle(&mut s, 500.0, 0.0, now), 0);
    }

    #[test]
    fn within_quota_records_but_does_not_throttle() {
        let mut s = RateSensor::new(11, 1000, 0);
        // 10 windows * 100 = 1000 is exactly the bound: acceptable.
        assert_eq!(record_and_throttle(&mut s, 100.0, 1000.0, 0), 0);
        // 1001 / 10 s = 100.1: (0.1 / 100) * 10000 = 10 ms.
        assert_eq!(record_and_throttle(&mut s, 100.0, 1.0, 0), 10);
    }
}
