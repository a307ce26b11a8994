//! The cleaner's broker-level settings (Kafka names, §11.1): one
//! [`ConfigDef`] table, parsed in one pass by [`CleanerConfig::from_properties`].

use std::collections::BTreeMap;

use crate::config::{
    apply, defaults, render_double, resolved, ConfigDef, ConfigError, ConfigType, Validator, Value,
};

/// Broker-level cleaner settings.
#[derive(Clone, Debug, PartialEq)]
pub struct CleanerConfig {
    /// `log.cleaner.enable`.
    pub enable: bool,
    /// `log.cleaner.threads` (0 = no threads).
    pub threads: usize,
    /// `log.cleaner.dedupe.buffer.size`, split evenly between threads.
    pub dedupe_buffer_size: u64,
    /// `log.cleaner.io.buffer.size`; each thread reads in chunks of
    /// `size / threads / 2`.
    pub io_buffer_size: usize,
    /// `log.cleaner.io.buffer.load.factor`: the dedupe map's load factor.
    pub io_buffer_load_factor: f64,
    /// `log.cleaner.backoff.ms`: idle sleep when nothing needs cleaning.
    pub backoff_ms: i64,
    /// `log.cleaner.io.max.bytes.per.second` (read + write); infinite = off.
    pub io_max_bytes_per_second: f64,
    /// How far the read buffer may grow for one batch: the broker's
    /// `message.max.bytes`, which the log layer parses (handed in, not read here).
    pub max_message_bytes: usize,
    /// `strata.log.cleaner.retry.backoff.ms`: first retry delay after a
    /// failed cleaning (doubles per failure).
    pub retry_backoff_ms: i64,
    /// `strata.log.cleaner.retry.backoff.max.ms`.
    pub retry_backoff_max_ms: i64,
    /// `strata.log.cleaner.max.passes`: passes per cleaning when the dirty
    /// keys do not fit the map at once.
    pub max_passes: usize,
}

fn load_factor(v: &Value) -> Result<(), String> {
    let d = v.double();
    if d > 0.0 && d <= 1.0 {
        Ok(())
    } else {
        Err("must be greater than 0.0 and at most 1.0".into())
    }
}

fn usize_of(v: &Value) -> usize {
    usize::try_from(v.long()).unwrap_or(0)
}

/// Java's `Double.MAX_VALUE`, Kafka's "no limit", is an infinite rate here.
fn rate_of(v: &Value) -> f64 {
    match v.double() {
        d if d >= f64::MAX => f64::INFINITY,
        d => d,
    }
}

type Def = ConfigDef<CleanerConfig>;

static TABLE: &[Def] = &[
    Def::new(
        "log.cleaner.enable",
        ConfigType::Boolean,
        "true",
        Validator::Any,
        "Run the log cleaner for topics with cleanup.policy=compact.",
        |c, v| c.enable = v.boolean(),
        |c| c.enable.to_string(),
    ),
    Def::new(
        "log.cleaner.threads",
        ConfigType::Int,
        "1",
        Validator::AtLeast(0),
        "Background threads for log cleaning.",
        |c, v| c.threads = usize_of(v),
        |c| c.threads.to_string(),
    ),
    Def::new(
        "log.cleaner.dedupe.buffer.size",
        ConfigType::Long,
        "134217728",
        Validator::AtLeast(0),
        "Memory for log deduplication across all cleaner threads.",
        |c, v| c.dedupe_buffer_size = u64::try_from(v.long()).unwrap_or(0),
        |c| c.dedupe_buffer_size.to_string(),
    ),
    Def::new(
        "log.cleaner.io.buffer.size",
        ConfigType::Int,
        "524288",
        Validator::AtLeast(1),
        "I/O buffer memory across all cleaner threads.",
        |c, v| c.io_buffer_size = usize_of(v),
        |c| c.io_buffer_size.to_string(),
    ),
    Def::new(
        "log.cleaner.io.buffer.load.factor",
        ConfigType::Double,
        "0.9",
        Validator::Custom(load_factor),
        "Load factor of the deduplication map.",
        |c, v| c.io_buffer_load_factor = v.double(),
        |c| render_double(c.io_buffer_load_factor),
    ),
    Def::new(
        "log.cleaner.backoff.ms",
        ConfigType::Long,
        "15000",
        Validator::AtLeast(0),
        "Sleep when there are no logs to clean.",
        |c, v| c.backoff_ms = v.long(),
        |c| c.backoff_ms.to_string(),
    ),
    Def::new(
        "log.cleaner.io.max.bytes.per.second",
        ConfigType::Double,
        "1.7976931348623157E308",
        Validator::DoubleAbove(0.0),
        "Read plus write I/O limit of the cleaner.",
        |c, v| c.io_max_bytes_per_second = rate_of(v),
        |c| render_double(c.io_max_bytes_per_second),
    ),
    Def::new(
        "strata.log.cleaner.retry.backoff.ms",
        ConfigType::Long,
        "15000",
        Validator::AtLeast(0),
        "Strata only: first retry delay after a failed cleaning (doubles per failure).",
        |c, v| c.retry_backoff_ms = v.long(),
        |c| c.retry_backoff_ms.to_string(),
    ),
    Def::new(
        "strata.log.cleaner.retry.backoff.max.ms",
        ConfigType::Long,
        "3600000",
        Validator::AtLeast(0),
        "Strata only: the longest retry delay after failed cleanings.",
        |c, v| c.retry_backoff_max_ms = v.long(),
        |c| c.retry_backoff_max_ms.to_string(),
    ),
    Def::new(
        "strata.log.cleaner.max.passes",
        ConfigType::Int,
        "16",
        Validator::AtLeast(1),
        "Strata only: passes per cleaning when the dirty keys do not fit the map at once.",
        |c, v| c.max_passes = usize_of(v),
        |c| c.max_passes.to_string(),
    ),
];

impl Default for CleanerConfig {
    fn default() -> Self {
        let blank = CleanerConfig {
            enable: false,
            threads: 0,
            dedupe_buffer_size: 0,
            io_buffer_size: 0,
            io_buffer_load_factor: 0.0,
            backoff_ms: 0,
            io_max_bytes_per_second: 0.0,
            max_message_bytes: 1_048_588,
            retry_backoff_ms: 0,
            retry_backoff_max_ms: 0,
            max_passes: 0,
        };
        defaults(TABLE, blank)
    }
}

/// Kafka's `KafkaConfig` check: `dedupe.buffer.size / threads` must exceed
/// 1 MiB (integer division, as Kafka).
const MIN_DEDUPE_BUFFER_PER_THREAD: u64 = 1024 * 1024;

impl CleanerConfig {
    /// The table of the `log.cleaner.*` and `strata.log.cleaner.*` properties.
    pub fn definitions() -> &'static [ConfigDef<CleanerConfig>] {
        TABLE
    }

    /// Every row's resolved value (for `--print-config`).
    pub fn resolved(&self) -> Vec<(&'static str, String)> {
        resolved(TABLE, self)
    }

    /// Dedupe memory of one thread (Kafka caps it at 2^31 - 1).
    pub fn map_memory_per_thread(&self) -> usize {
        let per = self.dedupe_buffer_size / self.threads.max(1) as u64;
        per.min(i32::MAX as u64) as usize
    }

    /// Read-buffer size of one thread.
    pub fn io_buffer_per_thread(&self) -> usize {
        (self.io_buffer_size / self.threads.max(1) / 2).max(crate::batch::RECORD_BATCH_OVERHEAD)
    }

    /// Layer the cleaner properties of `props` over the defaults;
    /// `max_message_bytes` is the broker's parsed `message.max.bytes`.
    ///
    /// # Errors
    /// The first property whose value does not parse or breaks its rule,
    /// then Kafka's memory-per-thread rule.
    pub fn from_properties(
        props: &BTreeMap<String, String>,
        max_message_bytes: usize,
    ) -> Result<CleanerConfig, ConfigError> {
        let mut c = CleanerConfig::default();
        apply(TABLE, &mut c, props)?;
        c.max_message_bytes = max_message_bytes;
        // Kafka refuses to start the same way, whether or not the cleaner is
        // enabled; 0 threads (no cleaner) has nothing to divide.
        if c.threads > 0 && c.dedupe_buffer_size / c.threads as u64 <= MIN_DEDUPE_BUFFER_PER_THREAD
        {
            return Err(ConfigError::InvalidValue {
                name: "log.cleaner.dedupe.buffer.size",
                value: props
                    .get("log.cleaner.dedupe.buffer.size")
                    .cloned()
                    .unwrap_or_else(|| c.dedupe_buffer_size.to_string()),
                rule: format!(
                    "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread \
                     (more than {MIN_DEDUPE_BUFFER_PER_THREAD} bytes for each of the {} \
                     log.cleaner.threads)",
                    c.threads
                ),
            });
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_are_kafkas() {
        let c = CleanerConfig::default();
        assert!(c.enable);
        assert_eq!(c.threads, 1);
        assert_eq!(c.dedupe_buffer_size, 128 << 20);
        assert_eq!(c.io_buffer_size, 512 << 10);
        assert_eq!(c.io_buffer_load_factor, 0.9);
        assert_eq!(c.backoff_ms, 15_000);
        assert!(c.io_max_bytes_per_second.is_infinite());
        assert_eq!(
            (c.retry_backoff_ms, c.retry_backoff_max_ms),
            (15_000, 3_600_000)
        );
        assert_eq!(c.max_passes, 16);
        let shown: BTreeMap<_, _> = c.resolved().into_iter().collect();
        assert_eq!(
            shown["log.cleaner.io.max.bytes.per.second"],
            "1.7976931348623157E308"
        );
    }

    #[test]
    fn bad_values_are_refused_not_defaulted() {
        for (k, v, rule) in [
            ("log.cleaner.threads", "many", "not an int"),
            ("log.cleaner.threads", "-1", "must be at least 0"),
            (
                "log.cleaner.io.buffer.load.factor",
                "1.5",
                "must be greater than 0.0 and at most 1.0",
            ),
            (
                "log.cleaner.io.max.bytes.per.second",
                "0",
                "must be greater than 0.0",
            ),
            ("strata.log.cleaner.max.passes", "0", "must be at least 1"),
        ] {
            let err = CleanerConfig::from_properties(&props(&[(k, v)]), 1).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("invalid value {v:?} for {k}: {rule}")
            );
        }
        let c =
            CleanerConfig::from_properties(&props(&[("log.cleaner.threads", "0")]), 77).unwrap();
        assert_eq!((c.threads, c.max_message_bytes), (0, 77));
    }
}
