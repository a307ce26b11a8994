use std::collections::BTreeMap;

use super::names::default_of;
use super::*;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn op(name: &str, code: i8, value: Option<&str>) -> ConfigOp {
    ConfigOp {
        name: name.into(),
        op: code,
        value: value.map(str::to_string),
    }
}

fn config(dir: &Path, extra: &[(&str, &str)]) -> BrokerConfig {
    let mut props = map(extra);
    props.insert("log.dirs".into(), dir.display().to_string());
    BrokerConfig::from_properties(props).unwrap()
}

#[test]
fn dynamic_names_are_kafkas_first_synonyms() {
    for name in [
        "log.retention.ms",
        "log.retention.bytes",
        "log.segment.bytes",
        "log.roll.ms",
        "log.roll.jitter.ms",
        "log.cleanup.policy",
        "log.index.interval.bytes",
        "log.segment.delete.delay.ms",
        "log.flush.interval.ms",
        "log.flush.interval.messages",
        "message.max.bytes",
        "log.message.timestamp.type",
        "log.message.timestamp.before.max.ms",
        "log.cleaner.delete.retention.ms",
        "log.cleaner.min.compaction.lag.ms",
        "log.cleaner.max.compaction.lag.ms",
        "log.cleaner.min.cleanable.ratio",
        "compression.type",
        "min.insync.replicas",
        "unclean.leader.election.enable",
        "log.local.retention.ms",
        "log.local.retention.bytes",
        "producer.id.expiration.ms",
    ] {
        assert!(is_dynamic(name), "{name} is dynamic");
    }
    // Kafka: unit synonyms and the format version are not dynamic; the
    // cleaner threads are in Kafka but not live here.
    for name in [
        "log.retention.hours",
        "log.retention.minutes",
        "log.roll.hours",
        "log.message.format.version",
        "log.dirs",
        "broker.id",
        "listeners",
        "log.cleaner.threads",
        "strata.durable.append",
    ] {
        assert!(!is_dynamic(name), "{name} is not dynamic");
        assert!(names::is_broker_config(name), "{name} is a broker config");
    }
    assert!(!names::is_broker_config("my.custom.thing"));
    assert!(!names::is_broker_config("retention.ms"), "a topic name");
}

#[test]
fn kafka_defaults_sit_on_the_unit_synonym_that_has_one() {
    assert_eq!(default_of("log.retention.hours").as_deref(), Some("168"));
    assert_eq!(default_of("log.retention.ms"), None);
    assert_eq!(default_of("log.retention.minutes"), None);
    assert_eq!(default_of("log.roll.hours").as_deref(), Some("168"));
    assert_eq!(
        default_of("log.segment.bytes").as_deref(),
        Some("1073741824")
    );
    assert_eq!(default_of("log.cleanup.policy").as_deref(), Some("delete"));
    assert_eq!(names::type_of("log.retention.hours"), 3);
    assert_eq!(names::type_of("log.retention.ms"), 5);
    assert_eq!(names::type_of("whatever.custom"), 0);
}

#[test]
fn merge_layers_levels_and_drops_shadowed_unit_synonyms() {
    let statics = map(&[
        ("log.retention.hours", "48"),
        ("log.segment.bytes", "2000000"),
    ]);
    let default = map(&[
        ("log.segment.bytes", "3000000"),
        ("log.retention.ms", "5000"),
    ]);
    let broker = map(&[("log.segment.bytes", "4000000")]);
    let m = merge(&statics, &default, &broker);
    assert_eq!(m["log.segment.bytes"], "4000000");
    assert_eq!(m["log.retention.ms"], "5000");
    assert!(!m.contains_key("log.retention.hours"));
    let c = LogConfig::from_broker_properties(&m).unwrap();
    assert_eq!(c.segment_bytes, 4_000_000);
    assert_eq!(c.retention_ms, 5000);
}

#[test]
fn validation_messages_and_codes_are_kafkas() {
    let e = validate_level(&map(&[("log.dirs", "/x"), ("broker.id", "3")])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Cannot update these configs dynamically: Set(broker.id, log.dirs)"
    );
    assert_eq!(e.code(), 42);
    let e = validate_level(&map(&[("log.segment.bytes", "lots")])).unwrap_err();
    assert!(
        matches!(e, DynamicConfigError::InvalidValue { ref name, .. } if name == "log.segment.bytes")
    );
    assert_eq!(e.code(), 42);
    let e = validate_level(&map(&[("log.segment.bytes", "5")])).unwrap_err();
    assert!(matches!(e, DynamicConfigError::InvalidValue { .. }));
    validate_level(&map(&[
        ("some.custom.key", "x"),
        ("log.retention.ms", "10"),
    ]))
    .unwrap();
}

#[test]
fn request_ops() {
    let cur = map(&[("log.retention.ms", "5")]);
    let out = incremental(
        &cur,
        &[
            op("log.retention.ms", op::DELETE, None),
            op("log.segment.bytes", op::SET, Some("1048576")),
            op("log.cleanup.policy", op::APPEND, Some("compact")),
        ],
    )
    .unwrap();
    assert!(!out.contains_key("log.retention.ms"));
    assert_eq!(out["log.segment.bytes"], "1048576");
    assert_eq!(out["log.cleanup.policy"], "delete,compact");
    let out = incremental(
        &out,
        &[op("log.cleanup.policy", op::SUBTRACT, Some("delete"))],
    )
    .unwrap();
    assert_eq!(out["log.cleanup.policy"], "compact");
    let e = incremental(&cur, &[op("log.retention.ms", op::APPEND, Some("1"))]).unwrap_err();
    assert_eq!(e.code(), 40, "INVALID_CONFIG");
    let e = incremental(&cur, &[op("log.retention.ms", 9, Some("1"))]).unwrap_err();
    assert!(matches!(e, DynamicConfigError::UnknownOperation { op: 9 }));
    let e = replace_all(&[op("a", op::SET, Some("1")), op("a", op::SET, Some("2"))]).unwrap_err();
    assert!(matches!(e, DynamicConfigError::DuplicateKeys));
    let e = replace_all(&[op("a", op::SET, None)]).unwrap_err();
    assert_eq!(e.to_string(), "Null value not supported for : a");
}

#[test]
fn alter_persists_and_reopen_applies_before_use() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &[("log.retention.hours", "48")]);
    let d = DynamicBrokerConfig::open(dir.path(), &cfg).unwrap();
    assert_eq!(d.log_defaults().retention_ms, 48 * 3_600_000);
    assert_eq!(d.level_of("").unwrap(), Level::ClusterDefault);
    assert_eq!(d.level_of("1").unwrap(), Level::Broker);
    assert!(matches!(
        d.level_of("2"),
        Err(DynamicConfigError::UnexpectedBrokerId { expected: 1, .. })
    ));
    assert!(matches!(
        d.level_of("one"),
        Err(DynamicConfigError::BadBrokerId { .. })
    ));

    // validate_only changes nothing.
    let set = |pairs: &'static [(&'static str, &'static str)]| {
        move |_: &BTreeMap<String, String>| Ok(map(pairs))
    };
    assert!(d
        .alter(
            Level::ClusterDefault,
            true,
            set(&[("log.retention.ms", "1000")])
        )
        .unwrap()
        .is_none());
    assert_eq!(d.log_defaults().retention_ms, 48 * 3_600_000);
    assert!(!dir.path().join(BROKER_CONFIGS_FILE).exists());

    let new = d
        .alter(
            Level::ClusterDefault,
            false,
            set(&[("log.retention.ms", "1000")]),
        )
        .unwrap()
        .expect("defaults changed");
    assert_eq!(new.retention_ms, 1000);
    let new = d
        .alter(
            Level::Broker,
            false,
            set(&[("log.retention.ms", "2000"), ("x.custom", "y")]),
        )
        .unwrap()
        .expect("defaults changed");
    assert_eq!(new.retention_ms, 2000, "per-broker beats cluster default");
    assert!(d
        .alter(Level::Broker, false, set(&[("log.dirs", "/elsewhere")]))
        .is_err());
    assert_eq!(
        d.log_defaults().retention_ms,
        2000,
        "refused change left no trace"
    );

    let reopened = DynamicBrokerConfig::open(dir.path(), &cfg).unwrap();
    assert_eq!(reopened.log_defaults().retention_ms, 2000);
    let snap = reopened.snapshot();
    assert_eq!(snap.cluster_default, map(&[("log.retention.ms", "1000")]));
    assert_eq!(
        snap.per_broker,
        map(&[("log.retention.ms", "2000"), ("x.custom", "y")])
    );
    // Another broker id reading the same file sees only the cluster default.
    let other = config(dir.path(), &[("broker.id", "7")]);
    let d7 = DynamicBrokerConfig::open(dir.path(), &other).unwrap();
    assert_eq!(d7.log_defaults().retention_ms, 1000);
}

#[test]
fn stored_entries_that_are_no_longer_valid_are_dropped_on_load() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(BROKER_CONFIGS_FILE),
        r#"{"version":1,"cluster_default":{"log.dirs":"/x","log.segment.bytes":"bad","log.roll.ms":"5000"}}"#,
    )
    .unwrap();
    let cfg = config(dir.path(), &[]);
    let d = DynamicBrokerConfig::open(dir.path(), &cfg).unwrap();
    assert_eq!(
        d.snapshot().cluster_default,
        map(&[("log.roll.ms", "5000")])
    );
    assert_eq!(d.log_defaults().segment_ms, 5000);
    std::fs::write(dir.path().join(BROKER_CONFIGS_FILE), b"{ nope").unwrap();
    assert!(matches!(
        DynamicBrokerConfig::open(dir.path(), &cfg),
        Err(DynamicConfigError::Parse { .. })
    ));
}

#[test]
fn local_retention_must_fit_total_retention() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &[]);
    let d = DynamicBrokerConfig::open(dir.path(), &cfg).unwrap();
    let r = d.alter(Level::ClusterDefault, false, |_| {
        Ok(map(&[
            ("log.retention.ms", "1000"),
            ("log.local.retention.ms", "5000"),
        ]))
    });
    assert!(
        matches!(r, Err(DynamicConfigError::InvalidValue { ref name, .. }) if name == "log.local.retention.ms")
    );
}
