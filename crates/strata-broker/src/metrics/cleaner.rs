//! `kafka.log:type=LogCleaner` and `type=LogCleanerManager` gauges, from
//! [`LogCleaner::totals`](strata_log::cleaner::LogCleaner::totals), plus Strata's
//! own cumulative cleaner counters (`strata_log_cleaner_*`, no Kafka
//! equivalent) that show what compaction costs: CPU seconds, bytes read
//! and written, cleanings, throttle time.

use strata_log::cleaner::CleanerTotals;

use super::family::{Family, Kind, Labels, Value};

pub(crate) fn families(t: &CleanerTotals) -> Vec<Family> {
    let rows: [(&'static str, &'static str, Kind, Value); 12] = [
        (
            "kafka_log_logcleaner_max_buffer_utilization_percent",
            "Largest dedupe-buffer utilization of the threads' last cleanings, percent (Kafka LogCleaner max-buffer-utilization-percent).",
            Kind::Gauge,
            Value::Float(t.max_buffer_utilization * 100.0),
        ),
        (
            "kafka_log_logcleaner_cleaner_recopy_percent",
            "Bytes written over bytes read by the threads' last cleanings, percent (Kafka LogCleaner cleaner-recopy-percent).",
            Kind::Gauge,
            Value::Float(t.recopy_percent),
        ),
        (
            "kafka_log_logcleaner_max_clean_time_secs",
            "Longest of the threads' last cleanings, seconds (Kafka LogCleaner max-clean-time-secs).",
            Kind::Gauge,
            Value::Float(t.max_clean_time_ms as f64 / 1000.0),
        ),
        (
            "kafka_log_logcleaner_max_compaction_delay_secs",
            "Largest compaction delay of the threads' last cleanings, seconds (Kafka LogCleaner max-compaction-delay-secs).",
            Kind::Gauge,
            Value::Float(t.max_compaction_delay_ms as f64 / 1000.0),
        ),
        (
            "kafka_log_logcleaner_deadthreadcount",
            "Cleaner threads that died while the cleaner runs (Kafka LogCleaner DeadThreadCount).",
            Kind::Gauge,
            Value::Int(t.dead_threads as i64),
        ),
        (
            "kafka_log_logcleanermanager_max_dirty_percent",
            "Dirty ratio of the filthiest log at the last choice, percent (Kafka LogCleanerManager max-dirty-percent).",
            Kind::Gauge,
            Value::Float(t.max_dirty_percent),
        ),
        (
            "kafka_log_logcleanermanager_uncleanable_partitions_count",
            "Partitions whose last cleaning failed, all log dirs (Kafka LogCleanerManager uncleanable-partitions-count).",
            Kind::Gauge,
            Value::Int(t.uncleanable_partitions as i64),
        ),
        (
            "strata_log_cleaner_cleanings",
            "Cleanings finished since the broker started.",
            Kind::Counter,
            Value::Counter(t.cleanings),
        ),
        (
            "strata_log_cleaner_cpu_seconds",
            "CPU time of the cleaner threads spent cleaning, seconds.",
            Kind::Counter,
            Value::CounterFloat(t.cpu_ms as f64 / 1000.0),
        ),
        (
            "strata_log_cleaner_read_bytes",
            "Bytes the cleaner read (offset-map build and copy).",
            Kind::Counter,
            Value::Counter(t.bytes_read),
        ),
        (
            "strata_log_cleaner_written_bytes",
            "Bytes the cleaner wrote.",
            Kind::Counter,
            Value::Counter(t.bytes_written),
        ),
        (
            "strata_log_cleaner_throttle_seconds",
            "Time the cleaner slept in its I/O throttle, seconds.",
            Kind::Counter,
            Value::CounterFloat(t.throttle_ms as f64 / 1000.0),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_kafkas() {
        let t = CleanerTotals {
            max_buffer_utilization: 0.25,
            max_clean_time_ms: 1500,
            cpu_ms: 250,
            ..CleanerTotals::default()
        };
        let f = families(&t);
        let get = |n: &str| {
            f.iter()
                .find(|f| f.name == n)
                .map(|f| f.samples[0].value.clone())
        };
        assert_eq!(
            get("kafka_log_logcleaner_max_buffer_utilization_percent"),
            Some(Value::Float(25.0))
        );
        assert_eq!(
            get("kafka_log_logcleaner_max_clean_time_secs"),
            Some(Value::Float(1.5))
        );
        assert_eq!(
            get("strata_log_cleaner_cpu_seconds"),
            Some(Value::CounterFloat(0.25))
        );
    }
}
