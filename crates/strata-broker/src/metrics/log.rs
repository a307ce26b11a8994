//! `kafka.log:type=Log,topic=<t>,partition=<p>`: `Size`, `LogStartOffset`,
//! `LogEndOffset` and `NumLogSegments` of every partition this broker
//! hosts, read from the in-memory state of its logs at scrape time.

use strata_log::Log;

use super::family::{Family, Kind, Value};

/// What one partition's gauges show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LogFacts {
    pub topic: String,
    pub partition: i32,
    pub size: u64,
    pub log_start: i64,
    pub log_end: i64,
    pub segments: usize,
}

impl LogFacts {
    pub(crate) fn of(log: &Log) -> LogFacts {
        let tp = log.topic_partition();
        LogFacts {
            topic: tp.topic.clone(),
            partition: tp.partition,
            size: log.size_in_bytes(),
            log_start: log.log_start_offset().0,
            log_end: log.log_end_offset().0,
            segments: log.num_segments(),
        }
    }
}

pub(crate) fn families(logs: &[LogFacts]) -> Vec<Family> {
    type Get = fn(&LogFacts) -> i64;
    let gauges: [(&'static str, &'static str, Get); 4] = [
        (
            "kafka_log_log_size",
            "Bytes of the partition's local segments (Kafka Log Size).",
            |l| i64::try_from(l.size).unwrap_or(i64::MAX),
        ),
        (
            "kafka_log_log_logstartoffset",
            "The partition's log start offset (Kafka Log LogStartOffset).",
            |l| l.log_start,
        ),
        (
            "kafka_log_log_logendoffset",
            "The partition's log end offset (Kafka Log LogEndOffset).",
            |l| l.log_end,
        ),
        (
            "kafka_log_log_numlogsegments",
            "Local segments of the partition (Kafka Log NumLogSegments).",
            |l| l.segments as i64,
        ),
    ];
    gauges
        .iter()
        .map(|(name, help, get)| {
            let mut f = Family::new(name, help, Kind::Gauge);
            for l in logs {
                f.push(
                    vec![
                        ("topic", l.topic.clone()),
                        ("partition", l.partition.to_string()),
                    ],
                    Value::Int(get(l)),
                );
            }
            f
        })
        .collect()
}
