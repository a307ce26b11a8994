//! Dynamic broker configs over the wire: IncrementalAlterConfigs /
//! AlterConfigs on BROKER resources (`"1"` and the cluster default `""`)
//! change the log defaults of live logs without a topic override at once,
//! survive a restart, describe back with Kafka's sources and synonyms, and
//! are refused as Kafka refuses them.

use std::path::Path;

use crate::common::*;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResourceResult;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    AlterConfigsRequest, DescribeConfigsResponse, IncrementalAlterConfigsRequest,
};
use kafka_protocol::protocol::StrBytes;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const SET: i8 = 0;
const DELETE: i8 = 1;
const INVALID_REQUEST: i16 = 42;
const DYNAMIC_BROKER_CONFIG: i8 = 2;
const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
const STATIC_BROKER_CONFIG: i8 = 4;
const DEFAULT_CONFIG: i8 = 5;

pub(crate) async fn describe(c: &mut Client, ty: i8, name: &str) -> DescribeConfigsResponse {
    describe_configs(c, ty, name).await
}

fn entry<'a>(resp: &'a DescribeConfigsResponse, name: &str) -> &'a DescribeConfigsResourceResult {
    resp.results[0]
        .configs
        .iter()
        .find(|e| e.name.as_str() == name)
        .unwrap_or_else(|| panic!("{name} described"))
}

pub(crate) fn value(resp: &DescribeConfigsResponse, name: &str) -> (Option<String>, i8) {
    let e = entry(resp, name);
    (e.value.as_ref().map(|v| v.to_string()), e.config_source)
}

fn synonyms(resp: &DescribeConfigsResponse, name: &str) -> Vec<(String, Option<String>, i8)> {
    entry(resp, name)
        .synonyms
        .iter()
        .map(|s| {
            (
                s.name.to_string(),
                s.value.as_ref().map(|v| v.to_string()),
                s.source,
            )
        })
        .collect()
}

/// Legacy AlterConfigs replacing the whole set of one BROKER resource.
async fn alter_legacy(c: &mut Client, name: &str, configs: &[(&str, &str)]) -> i16 {
    use kafka_protocol::messages::alter_configs_request as a;
    let mut r = a::AlterConfigsResource::default();
    r.resource_type = BROKER;
    r.resource_name = StrBytes::from_string(name.to_string());
    r.configs = configs
        .iter()
        .map(|(k, v)| {
            let mut one = a::AlterableConfig::default();
            one.name = StrBytes::from_string(k.to_string());
            one.value = Some(StrBytes::from_string(v.to_string()));
            one
        })
        .collect();
    let mut req = AlterConfigsRequest::default();
    req.resources = vec![r];
    c.call(&req, 2).await.responses[0].error_code
}

/// Segment files of partition 0 of `topic`.
fn segments(dir: &Path, topic: &str) -> usize {
    std::fs::read_dir(dir.join(format!("{topic}-0")))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".log")
        })
        .count()
}

/// Produce `n` batches of 20 records (about 400 bytes each).
async fn produce_batches(c: &mut Client, topic: &str, n: usize) {
    for i in 0..n {
        let (code, _) = produce(c, topic, 0, batch(20, &format!("{topic}-{i}"), 1_000, true)).await;
        assert_eq!(code, 0, "produce to {topic}");
    }
}

#[tokio::test]
async fn log_default_change_is_live_for_topics_without_override_and_survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let extra = [("log.retention.hours", "48")];
    let broker = start(dir.path(), &extra).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(create_topic_with(&mut c, "plain", 1, &[]).await, 0);
    assert_eq!(
        create_topic_with(&mut c, "pinned", 1, &[("segment.bytes", "1048576")]).await,
        0
    );
    produce_batches(&mut c, "plain", 1).await;
    produce_batches(&mut c, "pinned", 1).await;

    // validate_only: accepted, nothing changes.
    let r = incremental_alter(
        &mut c,
        BROKER,
        "",
        &[("log.segment.bytes", SET, Some("1024"))],
        true,
    )
    .await;
    assert_eq!(r.0, 0);
    let d = describe(&mut c, BROKER, "").await;
    assert!(d.results[0].configs.is_empty(), "nothing stored");

    // Cluster default: every live log without an override rolls at 1 KiB now.
    let r = incremental_alter(
        &mut c,
        BROKER,
        "",
        &[("log.segment.bytes", SET, Some("1024"))],
        false,
    )
    .await;
    assert_eq!(r.0, 0, "{r:?}");
    produce_batches(&mut c, "plain", 6).await;
    produce_batches(&mut c, "pinned", 6).await;
    let plain_segments = segments(dir.path(), "plain");
    assert!(
        plain_segments >= 3,
        "plain rolled: {plain_segments} segments"
    );
    assert_eq!(segments(dir.path(), "pinned"), 1, "override kept");

    // Topic describe reports the dynamic default as the source.
    let d = describe(&mut c, TOPIC, "plain").await;
    assert_eq!(
        value(&d, "segment.bytes"),
        (Some("1024".into()), DYNAMIC_DEFAULT_BROKER_CONFIG)
    );
    let d = describe(&mut c, TOPIC, "pinned").await;
    assert_eq!(value(&d, "segment.bytes"), (Some("1048576".into()), 1));

    // Per-broker level beats the cluster default; both show as synonyms.
    let r = incremental_alter(
        &mut c,
        BROKER,
        "1",
        &[
            ("log.segment.bytes", SET, Some("2048")),
            ("log.retention.ms", SET, Some("3600000")),
        ],
        false,
    )
    .await;
    assert_eq!(r.0, 0, "{r:?}");
    let d = describe(&mut c, BROKER, "1").await;
    assert_eq!(d.results[0].error_code, 0);
    assert_eq!(
        value(&d, "log.segment.bytes"),
        (Some("2048".into()), DYNAMIC_BROKER_CONFIG)
    );
    assert!(!entry(&d, "log.segment.bytes").read_only);
    assert_eq!(
        synonyms(&d, "log.segment.bytes"),
        vec![
            (
                "log.segment.bytes".into(),
                Some("2048".into()),
                DYNAMIC_BROKER_CONFIG
            ),
            (
                "log.segment.bytes".into(),
                Some("1024".into()),
                DYNAMIC_DEFAULT_BROKER_CONFIG
            ),
            (
                "log.segment.bytes".into(),
                Some("1073741824".into()),
                DEFAULT_CONFIG
            ),
        ]
    );
    assert_eq!(
        synonyms(&d, "log.retention.ms"),
        vec![
            (
                "log.retention.ms".into(),
                Some("3600000".into()),
                DYNAMIC_BROKER_CONFIG
            ),
            (
                "log.retention.hours".into(),
                Some("48".into()),
                STATIC_BROKER_CONFIG
            ),
            (
                "log.retention.hours".into(),
                Some("168".into()),
                DEFAULT_CONFIG
            ),
        ]
    );
    // As in Kafka: the dynamic log.retention.ms removes its unit synonyms
    // from the effective properties, so log.retention.hours reads back as
    // Kafka's default while its first synonym is still the static setting.
    assert_eq!(
        value(&d, "log.retention.hours"),
        (Some("168".into()), STATIC_BROKER_CONFIG)
    );
    assert!(
        entry(&d, "log.retention.hours").read_only,
        "not dynamic in Kafka"
    );
    assert!(entry(&d, "log.dirs").read_only);
    let d = describe(&mut c, TOPIC, "plain").await;
    assert_eq!(
        value(&d, "retention.ms"),
        (Some("3600000".into()), DYNAMIC_BROKER_CONFIG)
    );
    // The cluster-default resource lists only its own level.
    let d = describe(&mut c, BROKER, "").await;
    assert_eq!(d.results[0].configs.len(), 1);
    assert_eq!(
        synonyms(&d, "log.segment.bytes"),
        vec![(
            "log.segment.bytes".into(),
            Some("1024".into()),
            DYNAMIC_DEFAULT_BROKER_CONFIG
        )]
    );
    broker.shutdown().await.unwrap();

    // Restart: both levels come back and apply before the logs are used.
    let broker = start(dir.path(), &extra).await;
    let mut c = Client::connect(broker.local_addr()).await;
    let d = describe(&mut c, BROKER, "1").await;
    assert_eq!(
        value(&d, "log.segment.bytes"),
        (Some("2048".into()), DYNAMIC_BROKER_CONFIG)
    );
    let d = describe(&mut c, TOPIC, "plain").await;
    assert_eq!(value(&d, "segment.bytes").0.as_deref(), Some("2048"));
    let before = segments(dir.path(), "plain");
    produce_batches(&mut c, "plain", 12).await;
    assert!(
        segments(dir.path(), "plain") >= before + 2,
        "still rolls small"
    );
    assert_eq!(create_topic_with(&mut c, "later", 1, &[]).await, 0);
    produce_batches(&mut c, "later", 6).await;
    assert!(
        segments(dir.path(), "later") >= 2,
        "new logs start from the dynamic default"
    );

    // Deleting the per-broker value falls back to the cluster default.
    let r = incremental_alter(
        &mut c,
        BROKER,
        "1",
        &[("log.segment.bytes", DELETE, None)],
        false,
    )
    .await;
    assert_eq!(r.0, 0);
    let d = describe(&mut c, TOPIC, "later").await;
    assert_eq!(
        value(&d, "segment.bytes"),
        (Some("1024".into()), DYNAMIC_DEFAULT_BROKER_CONFIG)
    );
    // Legacy AlterConfigs replaces the whole level: the cluster default is
    // now empty, so the segment size is the static default again.
    assert_eq!(alter_legacy(&mut c, "", &[]).await, 0);
    let d = describe(&mut c, TOPIC, "later").await;
    assert_eq!(
        value(&d, "segment.bytes"),
        (Some("1073741824".into()), DEFAULT_CONFIG)
    );
    let d = describe(&mut c, TOPIC, "plain").await;
    assert_eq!(
        value(&d, "retention.ms"),
        (Some("3600000".into()), DYNAMIC_BROKER_CONFIG),
        "the other level is untouched"
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn refused_changes_answer_as_kafka_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;

    let (code, msg) =
        incremental_alter(&mut c, BROKER, "1", &[("log.dirs", SET, Some("/x"))], false).await;
    assert_eq!(code, INVALID_REQUEST);
    assert_eq!(
        msg.as_deref(),
        Some("Cannot update these configs dynamically: Set(log.dirs)")
    );
    // Unit synonyms are not dynamic in Kafka either.
    let (code, msg) = incremental_alter(
        &mut c,
        BROKER,
        "",
        &[("log.retention.hours", SET, Some("1"))],
        false,
    )
    .await;
    assert_eq!(code, INVALID_REQUEST);
    assert!(msg.unwrap().contains("log.retention.hours"));
    assert_eq!(
        alter_legacy(&mut c, "1", &[("broker.id", "2")]).await,
        INVALID_REQUEST
    );

    // Invalid values: Kafka's broker-side validation answers INVALID_REQUEST
    // (ConfigAdminManager, KAFKA-13609), not INVALID_CONFIG.
    let (code, msg) = incremental_alter(
        &mut c,
        BROKER,
        "1",
        &[("log.segment.bytes", SET, Some("big"))],
        false,
    )
    .await;
    assert_eq!(code, INVALID_REQUEST);
    assert!(msg
        .unwrap()
        .starts_with("Invalid value big for configuration log.segment.bytes"));
    let (code, _) = incremental_alter(
        &mut c,
        BROKER,
        "",
        &[("log.cleanup.policy", SET, Some("shred"))],
        false,
    )
    .await;
    assert_eq!(code, INVALID_REQUEST);
    // APPEND to a non-list config: INVALID_CONFIG, as Kafka.
    let (code, _) = incremental_alter(
        &mut c,
        BROKER,
        "",
        &[("log.retention.ms", 2, Some("5"))],
        false,
    )
    .await;
    assert_eq!(code, 40);
    // Another broker's id, or a name that is not an id.
    let (code, msg) = incremental_alter(
        &mut c,
        BROKER,
        "2",
        &[("log.retention.ms", SET, Some("5"))],
        false,
    )
    .await;
    assert_eq!(code, INVALID_REQUEST);
    assert_eq!(
        msg.as_deref(),
        Some("Unexpected broker id, expected 1, but received 2")
    );
    assert_eq!(
        describe(&mut c, BROKER, "x").await.results[0].error_code,
        INVALID_REQUEST
    );
    // A whole request with one bad config applies none of it.
    let (code, _) = incremental_alter(
        &mut c,
        BROKER,
        "1",
        &[
            ("log.retention.ms", SET, Some("5000")),
            ("log.dirs", SET, Some("/y")),
        ],
        false,
    )
    .await;
    assert_eq!(code, INVALID_REQUEST);
    let d = describe(&mut c, BROKER, "1").await;
    assert_eq!(value(&d, "log.retention.ms"), (None, DEFAULT_CONFIG));
    assert!(!dir.path().join(strata_broker::BROKER_CONFIGS_FILE).exists());

    // The same resource twice in one request: both copies refused.
    let mut one = AlterConfigsResource::default();
    one.resource_type = BROKER;
    one.resource_name = StrBytes::from_static_str("1");
    let mut cfg = AlterableConfig::default();
    cfg.name = StrBytes::from_static_str("log.retention.ms");
    cfg.value = Some(StrBytes::from_static_str("5000"));
    one.configs = vec![cfg];
    let mut req = IncrementalAlterConfigsRequest::default();
    req.resources = vec![one.clone(), one];
    let resp = c.call(&req, 1).await;
    assert!(resp
        .responses
        .iter()
        .all(|r| r.error_code == INVALID_REQUEST));
    assert_eq!(resp.responses.len(), 2);

    // Names Kafka does not know are custom configs: kept and described.
    let (code, _) = incremental_alter(
        &mut c,
        BROKER,
        "1",
        &[("my.custom.setting", SET, Some("on"))],
        false,
    )
    .await;
    assert_eq!(code, 0);
    let d = describe(&mut c, BROKER, "1").await;
    assert_eq!(
        value(&d, "my.custom.setting"),
        (Some("on".into()), DYNAMIC_BROKER_CONFIG)
    );
    assert!(entry(&d, "my.custom.setting").read_only);
    broker.shutdown().await.unwrap();
}
