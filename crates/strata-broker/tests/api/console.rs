//! The storage console over a real socket: the pages of a partition with
//! several segments carry one timeline element per segment, the group's lag
//! and the installed doctor's findings; unknown topics are 404 and hostile
//! paths 4xx, never a panic or a file outside the console.

use std::path::Path;
use std::sync::Arc;

use crate::common::*;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{GroupId, OffsetCommitRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use strata_broker::{ConsoleFinding, ConsoleFindings, FindingSeverity, FindingsSource};
use strata_log::LogConfig;

const TOPIC: &str = "timeline";
const GROUP: &str = "console-group";
const COMMITTED: i64 = 30;

/// Says one thing about every partition, naming its directory.
struct FakeDoctor;

impl ConsoleFindings for FakeDoctor {
    fn findings(&self, dir: &Path, config: &LogConfig) -> Vec<ConsoleFinding> {
        vec![ConsoleFinding {
            severity: FindingSeverity::Warning,
            symptom: "segments_roll_small".into(),
            message: format!(
                "{} rolls at segment.bytes={} <small>",
                dir.file_name().unwrap_or_default().to_string_lossy(),
                config.segment_bytes
            ),
        }]
    }
}

fn commit(offset: i64) -> OffsetCommitRequest {
    let mut p = OffsetCommitRequestPartition::default();
    p.partition_index = 0;
    p.committed_offset = offset;
    p.committed_leader_epoch = -1;
    let mut t = OffsetCommitRequestTopic::default();
    t.name = TopicName(StrBytes::from_string(TOPIC.into()));
    t.partitions = vec![p];
    let mut req = OffsetCommitRequest::default();
    req.group_id = GroupId(StrBytes::from_string(GROUP.into()));
    req.generation_id_or_member_epoch = -1;
    req.member_id = StrBytes::from_string(String::new());
    req.topics = vec![t];
    req
}

/// Values of `attr="..."` in `html`, in order.
fn attr_values(html: &str, attr: &str) -> Vec<String> {
    let needle = format!("{attr}=\"");
    html.match_indices(&needle)
        .filter_map(|(i, _)| {
            let rest = &html[i + needle.len()..];
            rest.find('"').map(|end| rest[..end].to_string())
        })
        .collect()
}

#[tokio::test]
async fn the_partition_page_draws_every_segment_and_the_groups_lag() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(
        dir.path(),
        &[
            ("strata.metrics.listener", "127.0.0.1:0"),
            ("offsets.topic.num.partitions", "1"),
        ],
    );
    config.console_findings = FindingsSource::new(Arc::new(FakeDoctor));
    let broker = strata_broker::start(config).await.expect("broker starts");
    let addr = broker.metrics_addr().expect("the HTTP listener is bound");
    let mut client = Client::connect(broker.local_addr()).await;
    assert_eq!(
        create_topic_with(&mut client, TOPIC, 1, &[("segment.bytes", "1024")]).await,
        0
    );
    // Two batches do not fit in one segment, so every batch rolls a new one.
    for i in 0..5 {
        let (err, base) = produce(
            &mut client,
            TOPIC,
            0,
            batch(10, &"v".repeat(40), 1_700_000_000_000 + i, false),
        )
        .await;
        assert_eq!((err, base), (0, i * 10));
    }
    let resp = client.call(&commit(COMMITTED), 8).await;
    assert_eq!(resp.topics[0].partitions[0].error_code, 0);

    let logs = std::fs::read_dir(dir.path().join(format!("{TOPIC}-0")))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "log")
        })
        .count();
    assert!(logs >= 5, "{logs} segments");

    let (status, html) = http_get(addr, &format!("/console/topics/{TOPIC}/0")).await;
    assert_eq!(status, 200, "{html}");
    let bases = attr_values(&html, "data-segment-base");
    assert_eq!(bases.len(), logs, "{html}");
    assert_eq!(bases[0], "0");
    assert!(
        attr_values(&html, "data-tier").iter().all(|t| t == "local"),
        "{html}"
    );
    assert_eq!(attr_values(&html, "data-active"), vec!["true"]);
    let high_watermark = 50;
    assert!(
        html.contains(&format!(
            r#"data-marker="high-watermark" data-offset="{high_watermark}""#
        )),
        "{html}"
    );
    // The group: a marker on the timeline and a row in the table.
    let lag = (high_watermark - COMMITTED).to_string();
    assert_eq!(attr_values(&html, "data-group"), vec![GROUP, GROUP]);
    assert_eq!(attr_values(&html, "data-lag"), vec![lag.clone(), lag]);
    // The installed findings source, escaped.
    assert!(
        html.contains(r#"data-symptom="segments_roll_small""#),
        "{html}"
    );
    assert!(
        html.contains("timeline-0 rolls at segment.bytes=1024 &lt;small&gt;"),
        "{html}"
    );
    assert!(!html.contains("<script"), "no script on the page");

    let (status, index) = http_get(addr, "/").await;
    assert_eq!(status, 200);
    assert!(
        index.contains(&format!(r#"data-topic="{TOPIC}" data-partitions="1""#)),
        "{index}"
    );
    let (status, topic) = http_get(addr, &format!("/console/topics/{TOPIC}")).await;
    assert_eq!(status, 200);
    assert!(topic.contains(r#"data-partition="0""#), "{topic}");
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn unknown_and_hostile_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("strata.metrics.listener", "127.0.0.1:0")]).await;
    let addr = broker.metrics_addr().expect("the HTTP listener is bound");
    let mut client = Client::connect(broker.local_addr()).await;
    assert_eq!(create_topic_with(&mut client, "known", 1, &[]).await, 0);

    for (path, want) in [
        ("/console/topics/unknown", 404),
        ("/console/topics/unknown/0", 404),
        ("/console/topics/known/1", 404),
        ("/console/topics/known/0/x", 404),
    ] {
        let (status, body) = http_get(addr, path).await;
        assert_eq!(status, want, "{path}: {body}");
    }
    let long = format!("/console/topics/{}", "a".repeat(4000));
    for path in [
        "/console/topics/%ZZ",
        "/console/topics/..",
        "/console/topics/%2e%2e/0",
        "/console/topics/..%2F..%2Fetc/0",
        "/console/topics/known/-1",
        "/console/topics/known/%00",
        long.as_str(),
    ] {
        let (status, body) = http_get(addr, path).await;
        assert!((400..500).contains(&status), "{path}: {status} {body}");
    }
    // Still serving afterwards.
    let (status, _) = http_get(addr, "/console/topics/known/0").await;
    assert_eq!(status, 200);
    broker.shutdown().await.unwrap();
}

/// Retention's next step is the broker's own decision, shown without being carried out.
#[tokio::test]
async fn the_timeline_marks_what_the_next_retention_pass_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("strata.metrics.listener", "127.0.0.1:0")]).await;
    let addr = broker.metrics_addr().expect("the HTTP listener is bound");
    let mut client = Client::connect(broker.local_addr()).await;
    let configs = [("segment.bytes", "1024"), ("retention.bytes", "1200")];
    assert_eq!(
        create_topic_with(&mut client, "doomed", 1, &configs).await,
        0
    );
    // Recent timestamps: retention.ms (7 days) takes nothing, retention.bytes the oldest.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for i in 0..4 {
        let (err, _) = produce(
            &mut client,
            "doomed",
            0,
            batch(10, &"v".repeat(40), now + i, false),
        )
        .await;
        assert_eq!(err, 0);
    }
    let segment_files = || {
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join("doomed-0"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".log"))
            .collect();
        names.sort();
        names
    };
    let before = segment_files();

    let (status, html) = http_get(addr, "/console/topics/doomed/0").await;
    assert_eq!(status, 200, "{html}");
    let bases = attr_values(&html, "data-segment-base");
    assert_eq!(bases.len(), 4, "{html}");
    // The oldest segment goes by retention.bytes at the next pass; the active one never does.
    assert!(
        html.contains(r#"data-segment-base="0" data-segment-next="10""#)
            && html.contains(r#"data-fate="delete-next""#),
        "{html}"
    );
    let first = html.find(r#"data-segment-base="0""#).unwrap();
    let first_tag = &html[first..first + html[first..].find('>').unwrap()];
    assert!(
        first_tag.contains(r#"data-fate="delete-next""#),
        "{first_tag}"
    );
    let active = html.find(r#"data-active="true""#).unwrap();
    let active_tag = &html[active..active + html[active..].find('>').unwrap()];
    assert!(!active_tag.contains("data-fate"), "{active_tag}");
    assert!(html.contains("by retention.bytes"), "{html}");
    assert_eq!(
        segment_files(),
        before,
        "showing the decision deletes nothing"
    );
    broker.shutdown().await.unwrap();
}
