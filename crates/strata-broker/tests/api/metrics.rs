//! `/metrics` against what went over the wire: byte and request counters
//! equal what was produced and fetched, the latency histogram counts every
//! request, error counts carry Kafka's error names, and the log gauges
//! equal the partition's offsets and size.

use std::collections::BTreeMap;

use kafka_protocol::messages::FetchResponse;

use crate::common::{
    batch, create_topic, fetch_request, http_get, produce, start, topic_id, Client,
};

/// Sample lines of an OpenMetrics text: `name{labels}` → value. Labels are
/// kept in their order of appearance; comments are skipped.
fn parse(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_string(), value.parse().ok()?))
        })
        .collect()
}

async fn scrape(addr: std::net::SocketAddr) -> BTreeMap<String, f64> {
    let (status, body) = http_get(addr, "/metrics").await;
    assert_eq!(status, 200, "{body}");
    parse(&body)
}

fn get(m: &BTreeMap<String, f64>, series: &str) -> f64 {
    *m.get(series).unwrap_or_else(|| {
        panic!(
            "{series} not exported; have {:#?}",
            m.keys().collect::<Vec<_>>()
        )
    })
}

#[tokio::test]
async fn counters_and_gauges_match_the_traffic() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("strata.metrics.listener", "127.0.0.1:0")]).await;
    let addr = broker.metrics_addr().expect("the HTTP listener is bound");
    let mut client = Client::connect(broker.local_addr()).await;
    create_topic(&mut client, "m").await;
    let before = scrape(addr).await;

    let mut produced = 0u64;
    for i in 0..3 {
        let records = batch(5, &format!("b{i}"), 1_700_000_000_000, false);
        produced += records.len() as u64;
        let (code, _) = produce(&mut client, "m", 0, records).await;
        assert_eq!(code, 0);
    }
    // A partition that does not exist: an error, no bytes.
    let (code, _) = produce(&mut client, "m", 99, batch(1, "x", 0, false)).await;
    assert_eq!(code, 3);

    let id = topic_id(&mut client, "m").await;
    let resp: FetchResponse = client.call(&fetch_request("m", id, 0, 0, 0, 1), 12).await;
    let fetched = resp.responses[0].partitions[0]
        .records
        .as_ref()
        .map_or(0, |r| r.len() as u64);
    assert_eq!(fetched, produced, "one fetch returns every batch");

    let after = scrape(addr).await;
    let t = r#"{topic="m"}"#;
    assert_eq!(
        get(
            &after,
            &format!("kafka_server_brokertopicmetrics_bytesin_total{t}")
        ),
        produced as f64
    );
    assert_eq!(
        get(&after, "kafka_server_brokertopicmetrics_bytesin_total"),
        produced as f64
    );
    assert_eq!(
        get(
            &after,
            &format!("kafka_server_brokertopicmetrics_messagesin_total{t}")
        ),
        15.0
    );
    assert_eq!(
        get(
            &after,
            &format!("kafka_server_brokertopicmetrics_bytesout_total{t}")
        ),
        fetched as f64
    );
    assert_eq!(
        get(
            &after,
            &format!("kafka_server_brokertopicmetrics_totalproducerequests_total{t}")
        ),
        3.0
    );
    assert_eq!(
        get(
            &after,
            &format!("kafka_server_brokertopicmetrics_totalfetchrequests_total{t}")
        ),
        1.0
    );

    let produce9 = r#"kafka_network_requestmetrics_requests_total{request="Produce",version="9"}"#;
    assert_eq!(get(&after, produce9), 4.0);
    assert_eq!(
        get(
            &after,
            r#"kafka_network_requestmetrics_requests_total{request="Fetch",version="12"}"#
        ),
        1.0
    );
    let hist = r#"kafka_network_requestmetrics_totaltimems_count{request="Produce"}"#;
    assert_eq!(
        get(&after, hist) - before.get(hist).copied().unwrap_or(0.0),
        4.0
    );
    assert_eq!(
        get(
            &after,
            r#"kafka_network_requestmetrics_totaltimems_bucket{le="+Inf",request="Produce"}"#
        ),
        4.0
    );
    assert!(
        get(
            &after,
            r#"kafka_network_requestmetrics_totaltimems_sum{request="Produce"}"#
        ) > 0.0
    );
    assert_eq!(
        get(
            &after,
            r#"kafka_network_requestmetrics_errors_total{request="Produce",error="UNKNOWN_TOPIC_OR_PARTITION"}"#
        ),
        1.0
    );
    assert_eq!(
        get(
            &after,
            r#"kafka_network_requestmetrics_errors_total{request="Produce",error="NONE"}"#
        ),
        3.0
    );

    let p = r#"{topic="m",partition="0"}"#;
    assert_eq!(get(&after, &format!("kafka_log_log_logendoffset{p}")), 15.0);
    assert_eq!(
        get(&after, &format!("kafka_log_log_logstartoffset{p}")),
        0.0
    );
    assert_eq!(
        get(&after, &format!("kafka_log_log_size{p}")),
        produced as f64
    );
    assert_eq!(
        get(&after, &format!("kafka_log_log_numlogsegments{p}")),
        1.0
    );
    assert_eq!(
        get(&after, &format!("kafka_partition_latest_offset{p}")),
        15.0
    );

    assert_eq!(
        get(
            &after,
            "kafka_controller_kafkacontroller_activecontrollercount"
        ),
        1.0
    );
    assert_eq!(
        get(
            &after,
            "kafka_server_replicamanager_underreplicatedpartitions"
        ),
        0.0
    );
    assert!(get(&after, "kafka_server_replicamanager_partitioncount") >= 1.0);
    assert!(
        get(
            &after,
            r#"kafka_server_socket_server_metrics_connection_count{listener="PLAINTEXT"}"#
        ) >= 1.0
    );
    assert!(get(&after, "process_open_fds") > 0.0);
    assert!(after.contains_key("kafka_log_logcleanermanager_uncleanable_partitions_count"));
    broker.shutdown().await.unwrap();
}
