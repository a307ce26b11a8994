//! `kafka.server:type=FetchSessionCache` (`NumIncrementalFetchSessions`,
//! `NumIncrementalFetchPartitionsCached`,
//! `IncrementalFetchSessionEvictionsPerSec`), read from the session cache
//! at scrape time.

use super::family::{Family, Kind, Labels, Value};
use crate::fetch_sessions::CacheStats;

pub(crate) fn families(s: &CacheStats) -> Vec<Family> {
    let rows = [
        (
            "kafka_server_fetchsessioncache_numincrementalfetchsessions",
            "Incremental fetch sessions in the cache (Kafka FetchSessionCache NumIncrementalFetchSessions).",
            Kind::Gauge,
            Value::Int(i64::try_from(s.sessions).unwrap_or(i64::MAX)),
        ),
        (
            "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached",
            "Partitions held by all incremental fetch sessions (Kafka FetchSessionCache NumIncrementalFetchPartitionsCached).",
            Kind::Gauge,
            Value::Int(i64::try_from(s.partitions).unwrap_or(i64::MAX)),
        ),
        (
            "kafka_server_fetchsessioncache_incrementalfetchsessionevictions",
            "Sessions evicted to make room for new ones (Kafka FetchSessionCache IncrementalFetchSessionEvictionsPerSec).",
            Kind::Counter,
            Value::Counter(s.evictions),
        ),
    ];
    rows.into_iter()
        .map(|(name, help, kind, value)| {
            let mut f = Family::new(name, help, kind);
            f.push(Labels::new(), value);
            f
        })
        .collect()
}
