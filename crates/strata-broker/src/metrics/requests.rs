//! `kafka.network:type=RequestMetrics`: requests per API and version,
//! errors per API and error name, and the `TotalTimeMs` latency histogram
//! per API.
//!
//! The request path touches only pre-sized arrays of atomics indexed by
//! API key, version and error code: no label string is built or hashed per
//! request. Labels are written at scrape time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ApiKey;

use super::family::{Family, Kind, Value};

/// API keys tracked (every key Kafka 3.9 defines is below this).
const API_SLOTS: usize = 128;
/// Versions tracked per API; a higher version counts in the last slot.
const VERSION_SLOTS: usize = 32;
/// Error codes tracked: -1 (UNKNOWN_SERVER_ERROR) up to
/// `ERROR_SLOTS - 3`; the last slot holds any other code.
const ERROR_SLOTS: usize = 160;

/// Upper bounds of the `TotalTimeMs` buckets, in milliseconds (`+Inf`
/// follows). From sub-millisecond in-memory answers to long-polling
/// fetches (`fetch.max.wait.ms` defaults to 500) and slow `acks=all`.
pub(crate) const LATENCY_BUCKETS_MS: [f64; 16] = [
    0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0,
    10000.0, 30000.0,
];

/// A latency histogram updated with two relaxed atomic adds.
#[derive(Debug)]
struct Latency {
    /// One counter per bucket of [`LATENCY_BUCKETS_MS`] plus `+Inf`.
    buckets: [AtomicU64; LATENCY_BUCKETS_MS.len() + 1],
    sum_micros: AtomicU64,
}

impl Latency {
    fn new() -> Latency {
        Latency {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_micros: AtomicU64::new(0),
        }
    }

    fn observe(&self, elapsed: Duration) {
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.buckets[bucket_of(micros)].fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// `(sum in ms, count, per-bucket counts)`.
    fn snapshot(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let bounds = LATENCY_BUCKETS_MS.iter().copied().chain([f64::INFINITY]);
        let buckets: Vec<(f64, u64)> = bounds.zip(counts.iter().copied()).collect();
        let sum_ms = self.sum_micros.load(Ordering::Relaxed) as f64 / 1000.0;
        (sum_ms, counts.iter().sum(), buckets)
    }
}

/// The bucket index of a latency of `micros` (the last is `+Inf`).
pub(crate) fn bucket_of(micros: u64) -> usize {
    let ms = micros as f64 / 1000.0;
    LATENCY_BUCKETS_MS
        .iter()
        .position(|bound| ms <= *bound)
        .unwrap_or(LATENCY_BUCKETS_MS.len())
}

/// The slot of an error code (out-of-range codes share the last slot).
fn error_slot(code: i16) -> usize {
    usize::try_from(i32::from(code) + 1)
        .ok()
        .filter(|s| *s < ERROR_SLOTS - 1)
        .unwrap_or(ERROR_SLOTS - 1)
}

/// Kafka's name of an error code (`Errors.name()`): `NONE`,
/// `NOT_LEADER_OR_FOLLOWER`, ...
pub(crate) fn error_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        None => "NONE".to_string(),
        Some(ResponseError::Unknown(c)) => format!("UNKNOWN_CODE_{c}"),
        Some(e) => screaming_snake(&format!("{e:?}")),
    }
}

/// `NotLeaderOrFollower` → `NOT_LEADER_OR_FOLLOWER`.
fn screaming_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// The live request counters.
#[derive(Debug)]
pub(crate) struct RequestMetrics {
    /// `API_SLOTS × VERSION_SLOTS` request counts.
    requests: Box<[AtomicU64]>,
    /// `API_SLOTS × ERROR_SLOTS` error counts (NONE included, as Kafka).
    errors: Box<[AtomicU64]>,
    /// `TotalTimeMs` per API.
    total_time: Box<[Latency]>,
}

impl RequestMetrics {
    pub(crate) fn new() -> RequestMetrics {
        let atomics = |n| (0..n).map(|_| AtomicU64::new(0)).collect();
        RequestMetrics {
            requests: atomics(API_SLOTS * VERSION_SLOTS),
            errors: atomics(API_SLOTS * ERROR_SLOTS),
            total_time: (0..API_SLOTS).map(|_| Latency::new()).collect(),
        }
    }

    fn api_slot(api: ApiKey) -> Option<usize> {
        usize::try_from(api as i16).ok().filter(|s| *s < API_SLOTS)
    }

    /// One request of `api` at `version` was answered after `elapsed`.
    pub(crate) fn record(&self, api: ApiKey, version: i16, elapsed: Duration) {
        let Some(a) = Self::api_slot(api) else { return };
        let v = usize::try_from(version).unwrap_or(0).min(VERSION_SLOTS - 1);
        self.requests[a * VERSION_SLOTS + v].fetch_add(1, Ordering::Relaxed);
        self.total_time[a].observe(elapsed);
    }

    /// The response to an `api` request carried `code` (once per
    /// partition or resource that carries an error code, as Kafka's
    /// `errorCounts`).
    pub(crate) fn error(&self, api: ApiKey, code: i16) {
        let Some(a) = Self::api_slot(api) else { return };
        self.errors[a * ERROR_SLOTS + error_slot(code)].fetch_add(1, Ordering::Relaxed);
    }

    /// `kafka_network_requestmetrics_requests_total{request,version}`,
    /// `..._errors_total{request,error}` and the `..._totaltimems`
    /// histogram; series that never moved are left out.
    pub(crate) fn families(&self) -> Vec<Family> {
        let mut requests = Family::new(
            "kafka_network_requestmetrics_requests",
            "Requests answered per API and version (Kafka RequestMetrics RequestsPerSec).",
            Kind::Counter,
        );
        let mut errors = Family::new(
            "kafka_network_requestmetrics_errors",
            "Error codes in responses per API and error name, NONE included (Kafka RequestMetrics ErrorsPerSec).",
            Kind::Counter,
        );
        let mut total_time = Family::new(
            "kafka_network_requestmetrics_totaltimems",
            "Time from a request's last byte read to its response handed to the connection's writer, ms (Kafka RequestMetrics TotalTimeMs).",
            Kind::Histogram,
        );
        for api in ApiKey::iter() {
            let Some(a) = Self::api_slot(api) else {
                continue;
            };
            let name = format!("{api:?}");
            for v in 0..VERSION_SLOTS {
                let n = self.requests[a * VERSION_SLOTS + v].load(Ordering::Relaxed);
                if n > 0 {
                    requests.push(
                        vec![("request", name.clone()), ("version", v.to_string())],
                        Value::Counter(n),
                    );
                }
            }
            for e in 0..ERROR_SLOTS {
                let n = self.errors[a * ERROR_SLOTS + e].load(Ordering::Relaxed);
                if n > 0 {
                    let label = if e == ERROR_SLOTS - 1 {
                        "UNKNOWN".to_string()
                    } else {
                        // e < ERROR_SLOTS - 1 < i16::MAX, so this is exact.
                        error_name(e as i16 - 1)
                    };
                    errors.push(
                        vec![("request", name.clone()), ("error", label)],
                        Value::Counter(n),
                    );
                }
            }
            let (sum, count, buckets) = self.total_time[a].snapshot();
            if count > 0 {
                total_time.push(
                    vec![("request", name.clone())],
                    Value::Histogram {
                        sum,
                        count,
                        buckets,
                    },
                );
            }
        }
        vec![requests, errors, total_time]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_inclusive_upper_bounds_in_ms() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(250), 0);
        assert_eq!(bucket_of(251), 1);
        assert_eq!(bucket_of(1_000), 2);
        assert_eq!(bucket_of(30_000_000), LATENCY_BUCKETS_MS.len() - 1);
        assert_eq!(bucket_of(30_000_001), LATENCY_BUCKETS_MS.len());
    }

    #[test]
    fn error_names_are_kafkas() {
        assert_eq!(error_name(0), "NONE");
        assert_eq!(error_name(3), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(error_name(6), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(error_name(-1), "UNKNOWN_SERVER_ERROR");
    }

    #[test]
    fn error_slots_cover_minus_one_and_clamp_the_rest() {
        assert_eq!(error_slot(-1), 0);
        assert_eq!(error_slot(0), 1);
        assert_eq!(error_slot(-2), ERROR_SLOTS - 1);
        assert_eq!(error_slot(i16::MAX), ERROR_SLOTS - 1);
    }

    #[test]
    fn recorded_requests_appear_with_their_labels() {
        let m = RequestMetrics::new();
        m.record(ApiKey::Produce, 9, Duration::from_micros(700));
        m.record(ApiKey::Produce, 9, Duration::from_millis(3));
        m.record(ApiKey::Fetch, 13, Duration::from_millis(600));
        m.error(ApiKey::Produce, 0);
        m.error(ApiKey::Produce, 3);
        let f = m.families();
        let produce9 = f[0]
            .samples
            .iter()
            .find(|s| s.labels == vec![("request", "Produce".into()), ("version", "9".into())])
            .map(|s| s.value.clone());
        assert_eq!(produce9, Some(Value::Counter(2)));
        assert_eq!(f[1].samples.len(), 2);
        let Some(Value::Histogram {
            count,
            buckets,
            sum,
            ..
        }) = f[2].samples.first().map(|s| s.value.clone())
        else {
            panic!("no histogram for Produce");
        };
        assert_eq!(count, 2);
        assert!((sum - 3.7).abs() < 1e-9, "{sum}");
        assert_eq!(buckets[bucket_of(700)].1, 1);
        assert_eq!(buckets[bucket_of(3_000)].1, 1);
    }
}
