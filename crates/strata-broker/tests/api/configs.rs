//! Guards topic configs end to end: CreateTopics with configs, DescribeConfigs
//! sources and values, IncrementalAlterConfigs / AlterConfigs taking effect
//! at once and surviving a restart, INVALID_CONFIG for bad values, and the
//! broker resource describing static broker properties.

use crate::common::*;
use kafka_protocol::messages::{AlterConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::protocol::StrBytes;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;

async fn describe(c: &mut Client, ty: i8, name: &str) -> DescribeConfigsResponse {
    describe_configs(c, ty, name).await
}

fn value(resp: &DescribeConfigsResponse, name: &str) -> (Option<String>, i8) {
    let e = resp.results[0]
        .configs
        .iter()
        .find(|e| e.name.as_str() == name)
        .unwrap_or_else(|| panic!("{name} described"));
    (e.value.as_ref().map(|v| v.to_string()), e.config_source)
}

async fn incremental(c: &mut Client, topic: &str, ops: &[(&str, i8, Option<&str>)]) -> i16 {
    incremental_alter(c, TOPIC, topic, ops, false).await.0
}

#[tokio::test]
async fn alter_describe_round_trip_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let extra = [("log.retention.hours", "48")];
    let broker = start(dir.path(), &extra).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(
        create_topic_with(&mut c, "cfg", 2, &[("retention.ms", "1000")]).await,
        0
    );
    assert_eq!(
        create_topic_with(&mut c, "badcfg", 1, &[("retention.ms", "soon")]).await,
        40,
        "INVALID_CONFIG"
    );
    assert_eq!(
        create_topic_with(&mut c, "badcfg", 1, &[("no.such.config", "1")]).await,
        40
    );
    assert_eq!(
        create_topic_with(&mut c, "cfg", 1, &[]).await,
        36,
        "TOPIC_ALREADY_EXISTS"
    );

    let d = describe(&mut c, TOPIC, "cfg").await;
    assert_eq!(d.results[0].error_code, 0);
    assert_eq!(
        value(&d, "retention.ms"),
        (Some("1000".into()), 1),
        "DYNAMIC_TOPIC_CONFIG"
    );
    assert_eq!(
        value(&d, "segment.bytes"),
        (Some("1073741824".into()), 5),
        "DEFAULT_CONFIG"
    );
    assert_eq!(value(&d, "cleanup.policy"), (Some("delete".into()), 5));
    assert_eq!(value(&d, "max.message.bytes"), (Some("1048588".into()), 5));

    // Broker property layered under a topic without override.
    assert_eq!(create_topic_with(&mut c, "plain", 1, &[]).await, 0);
    let d = describe(&mut c, TOPIC, "plain").await;
    assert_eq!(
        value(&d, "retention.ms"),
        (Some((48 * 3_600_000i64).to_string()), 4),
        "STATIC_BROKER_CONFIG"
    );

    // Incremental: set, delete, append; bad value rejected atomically.
    assert_eq!(
        incremental(
            &mut c,
            "cfg",
            &[
                ("segment.bytes", 0, Some("1048576")),
                ("retention.ms", 1, None)
            ]
        )
        .await,
        0
    );
    assert_eq!(
        incremental(&mut c, "cfg", &[("cleanup.policy", 2, Some("compact"))]).await,
        0
    );
    assert_eq!(
        incremental(
            &mut c,
            "cfg",
            &[
                ("segment.bytes", 0, Some("5")),
                ("retention.ms", 0, Some("7"))
            ]
        )
        .await,
        40,
        "segment.bytes below its minimum"
    );
    assert_eq!(
        incremental(&mut c, "missing", &[("retention.ms", 0, Some("7"))]).await,
        3
    );
    let d = describe(&mut c, TOPIC, "cfg").await;
    assert_eq!(value(&d, "segment.bytes"), (Some("1048576".into()), 1));
    assert_eq!(
        value(&d, "retention.ms").1,
        4,
        "override deleted: back to the broker's value"
    );
    assert_eq!(
        value(&d, "cleanup.policy"),
        (Some("delete,compact".into()), 1)
    );

    // The change is live: a compacted topic now rejects keyless records.
    let (code, _) = produce(&mut c, "cfg", 0, batch(1, "nokey", 1_000, false)).await;
    assert_eq!(code, 87);

    // Legacy AlterConfigs replaces the whole set.
    let mut r = kafka_protocol::messages::alter_configs_request::AlterConfigsResource::default();
    r.resource_type = TOPIC;
    r.resource_name = StrBytes::from_static_str("cfg");
    let mut one = kafka_protocol::messages::alter_configs_request::AlterableConfig::default();
    one.name = StrBytes::from_static_str("retention.bytes");
    one.value = Some(StrBytes::from_static_str("12345"));
    r.configs = vec![one];
    let mut req = AlterConfigsRequest::default();
    req.resources = vec![r];
    assert_eq!(c.call(&req, 2).await.responses[0].error_code, 0);
    let d = describe(&mut c, TOPIC, "cfg").await;
    assert_eq!(value(&d, "retention.bytes"), (Some("12345".into()), 1));
    assert_eq!(value(&d, "cleanup.policy").1, 5, "replaced, not merged");
    let (code, _) = produce(&mut c, "cfg", 0, batch(1, "nokey", 1_000, false)).await;
    assert_eq!(code, 0, "no longer compacted");

    // Broker resource.
    let d = describe(&mut c, BROKER, "1").await;
    assert_eq!(d.results[0].error_code, 0);
    assert_eq!(value(&d, "log.retention.hours"), (Some("48".into()), 4));
    assert_eq!(value(&d, "num.partitions"), (Some("1".into()), 5));
    assert_ne!(
        describe(&mut c, BROKER, "42").await.results[0].error_code,
        0
    );
    broker.shutdown().await.unwrap();

    // Survives a restart.
    let broker = start(dir.path(), &extra).await;
    let mut c = Client::connect(broker.local_addr()).await;
    let d = describe(&mut c, TOPIC, "cfg").await;
    assert_eq!(value(&d, "retention.bytes"), (Some("12345".into()), 1));
    assert_eq!(value(&d, "segment.bytes").1, 5);
    broker.shutdown().await.unwrap();
}
