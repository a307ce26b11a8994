//! Per-client quota sensors (Kafka 3.9 `ClientQuotaManager` and
//! `ClientRequestQuotaManager`, default quota callback): one
//! [`RateSensor`] per (quota type, sensor key), created on first use and
//! dropped after an hour without records.
//!
//! Clients without a configured quota are not recorded at all (Kafka records
//! them on an unbounded sensor once any quota exists; only its metrics see
//! the difference).
//!
//! # Locks
//! None inside: the broker wraps one `QuotaManager` in a `Mutex` and holds it
//! only for the duration of one call.

use std::collections::HashMap;

use super::config::{QuotaConfigs, QuotaEntity};
use super::rate::{record_and_throttle_bounded, RateSensor};
use super::QuotaType;

/// Kafka's `InactiveSensorExpirationTimeSeconds`: a quota sensor with no
/// record for longer than this (one hour) is dropped and starts afresh.
pub const INACTIVE_SENSOR_EXPIRATION_MS: i64 = 3_600 * 1_000;

/// Kafka's `NanosToPercentagePerSecond`: request thread time in nanoseconds
/// times this is recorded against `request_percentage` (100 = one thread
/// busy for the whole second).
pub const NANOS_TO_PERCENTAGE_PER_SECOND: f64 = 100.0 / 1_000_000_000.0;

/// Request-handler (or network) thread time in nanoseconds as the value
/// recorded on the request quota.
pub fn nanos_to_percentage(nanos: i64) -> f64 {
    nanos as f64 * NANOS_TO_PERCENTAGE_PER_SECOND
}

/// The sensors of every client for produce, fetch and request quotas.
#[derive(Debug, Clone)]
pub struct QuotaManager {
    samples: u32,
    window_ms: i64,
    sensors: HashMap<(QuotaType, QuotaEntity), RateSensor>,
}

impl QuotaManager {
    /// Sensors over `samples` windows (`quota.window.num`) of `window_ms`
    /// (`quota.window.size.seconds` × 1000) each.
    pub fn new(samples: u32, window_ms: i64) -> Self {
        QuotaManager {
            samples: samples.max(1),
            window_ms: window_ms.max(1),
            sensors: HashMap::new(),
        }
    }

    /// Records `value` for `(user, client_id)` on quota type `t` and returns
    /// the throttle time in milliseconds (0 when within quota or unlimited).
    ///
    /// `value` is bytes for [`QuotaType::Produce`] (the request size, after
    /// the append) and [`QuotaType::Fetch`] (the response size), and
    /// [`nanos_to_percentage`] of the request thread time for
    /// [`QuotaType::Request`]. Request throttles are capped at one window
    /// (`quota.window.size.seconds`), byte-rate throttles are not.
    pub fn record(
        &mut self,
        configs: &QuotaConfigs,
        t: QuotaType,
        user: &str,
        client_id: &str,
        value: f64,
        now_ms: i64,
    ) -> i64 {
        let Some((limit, key)) = configs.quota_for(t, user, client_id) else {
            return 0;
        };
        let max_throttle_ms = match t {
            QuotaType::Request => self.window_ms,
            QuotaType::Produce | QuotaType::Fetch => i64::from(i32::MAX),
        };
        let sensor = self.sensor(t, key, now_ms);
        record_and_throttle_bounded(sensor, limit, value, now_ms, max_throttle_ms)
    }

    /// Records `value` without a quota check (Kafka `recordNoThrottle`, used
    /// for network-thread time on the request quota).
    pub fn record_no_throttle(
        &mut self,
        configs: &QuotaConfigs,
        t: QuotaType,
        user: &str,
        client_id: &str,
        value: f64,
        now_ms: i64,
    ) {
        if let Some((_, key)) = configs.quota_for(t, user, client_id) {
            self.sensor(t, key, now_ms).record(value, now_ms);
        }
    }

    /// Takes back a recorded `value` (Kafka `unrecordQuotaSensor`): a
    /// throttled fetch returns no data, so its bytes must not count.
    pub fn unrecord(
        &mut self,
        configs: &QuotaConfigs,
        t: QuotaType,
        user: &str,
        client_id: &str,
        value: f64,
        now_ms: i64,
    ) {
        self.record_no_throttle(configs, t, user, client_id, -value, now_ms);
    }

    /// Kafka's `getMaxValueInQuotaWindow`: the most that can be recorded at
    /// once without a certain throttle, `limit × (samples − 1) × window
    /// seconds` (the fetch path caps a consumer's fetch size with it);
    /// `f64::MAX` when unlimited.
    pub fn max_value_in_quota_window(
        &self,
        configs: &QuotaConfigs,
        t: QuotaType,
        user: &str,
        client_id: &str,
    ) -> f64 {
        match configs.quota_for(t, user, client_id) {
            Some((limit, _)) => {
                limit * f64::from(self.samples - 1) * (self.window_ms as f64 / 1000.0)
            }
            None => f64::MAX,
        }
    }

    /// The current rate of the sensor `key` for type `t`, if it exists.
    pub fn rate(&self, t: QuotaType, key: &QuotaEntity, now_ms: i64) -> Option<f64> {
        self.sensors.get(&(t, key.clone())).map(|s| s.rate(now_ms))
    }

    /// The number of live sensors.
    pub fn sensor_count(&self) -> usize {
        self.sensors.len()
    }

    /// Drops sensors with no record for more than an hour (Kafka's sensor
    /// reaper); returns how many were dropped.
    pub fn expire_inactive(&mut self, now_ms: i64) -> usize {
        let before = self.sensors.len();
        self.sensors.retain(|_, s| !is_expired(s, now_ms));
        before - self.sensors.len()
    }

    fn sensor(&mut self, t: QuotaType, key: QuotaEntity, now_ms: i64) -> &mut RateSensor {
        let (samples, window_ms) = (self.samples, self.window_ms);
        let sensor = self
            .sensors
            .entry((t, key))
            .or_insert_with(|| RateSensor::new(samples, window_ms, now_ms));
        if is_expired(sensor, now_ms) {
            *sensor = RateSensor::new(samples, window_ms, now_ms);
        }
        sensor
    }
}

/// Kafka's `Sensor.hasExpired`: strictly more than the expiration time.
fn is_expired(sensor: &RateSensor, now_ms: i64) -> bool {
    now_ms.saturating_sub(sensor.last_record_ms()) > INACTIVE_SENSOR_EXPIRATION_MS
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
