//! `strata log dump --offsets-decoder` prints a real `__consumer_offsets`
//! segment — offset commits, classic group metadata and every KIP-848
//! consumer-group record type — in the text of Kafka's
//! `kafka-dump-log.sh --offsets-decoder` (and in `--json`), and keeps going
//! past an undecodable record, reporting it. Record bytes are written here
//! by hand from Kafka's schemas, independently of the broker's encoders.

use std::path::{Path, PathBuf};

use crate::common::*;
use serde_json::Value;
use strata_log::batch::BatchBuilder;
use strata_log::{DirHealth, LoadParams, Log, LogConfig, MockClock, Offset, Timestamp};

const T0: i64 = 1_700_000_000_000;

/// Classic string: int16 length + bytes.
fn s16(s: &str) -> Vec<u8> {
    [&(s.len() as i16).to_be_bytes()[..], s.as_bytes()].concat()
}

/// Compact string: uvarint length + 1 (all test strings are short).
fn compact(s: &str) -> Vec<u8> {
    [&[s.len() as u8 + 1][..], s.as_bytes()].concat()
}

fn key(record_type: i16, strings: &[&str]) -> Vec<u8> {
    let mut k = record_type.to_be_bytes().to_vec();
    for s in strings {
        k.extend(s16(s));
    }
    k
}

const TOPIC: [u8; 16] = [7; 16];
/// Kafka's `Uuid.toString` of [`TOPIC`].
const TOPIC_TEXT: &str = "BwcHBwcHBwcHBwcHBwcHBw";

/// Write the records into `<root>/__consumer_offsets-0`, one batch each.
fn offsets_segment(root: &Path, records: &[(Vec<u8>, Option<Vec<u8>>)]) -> PathBuf {
    let name = "__consumer_offsets-0";
    let log = Log::open(
        &root.join(name),
        LogConfig::default(),
        LoadParams::default(),
        MockClock::new(T0),
        DirHealth::new(root),
    )
    .unwrap();
    for (i, (k, v)) in records.iter().enumerate() {
        let mut b = BatchBuilder::new(Offset(i as i64));
        b.append(Timestamp(T0 + i as i64), Some(k), v.as_deref(), &[]);
        log.append_as_follower(&b.build()).unwrap();
    }
    log.close().unwrap();
    files_with(&root.join(name), ".log").remove(0)
}

#[test]
fn consumer_offsets_segment_is_printed_like_kafkas_decoder() {
    let tmp = tempfile::tempdir().unwrap();
    let partitions = [&[0x02][..], &TOPIC, &[0x02, 0, 0, 0, 1, 0x00]].concat(); // [{TOPIC, [1]}]
    let records: Vec<(Vec<u8>, Option<Vec<u8>>)> = vec![
        // OffsetCommitKey v1 / OffsetCommitValue v3.
        (
            [key(1, &["g", "t"]), vec![0, 0, 0, 2]].concat(),
            Some(
                [
                    &[0, 3][..],
                    &5i64.to_be_bytes(),
                    &(-1i32).to_be_bytes(),
                    &s16(""),
                    &T0.to_be_bytes(),
                ]
                .concat(),
            ),
        ),
        // GroupMetadataKey / an empty GroupMetadataValue v3.
        (
            key(2, &["old"]),
            Some(
                [
                    &[0, 3][..],
                    &s16(""),
                    &0i32.to_be_bytes(),
                    &[0xff, 0xff, 0xff, 0xff],
                    &T0.to_be_bytes(),
                    &0i32.to_be_bytes(),
                ]
                .concat(),
            ),
        ),
        // 5 MemberMetadata: instanceId null, rackId null, clientId "c",
        // clientHost "/h", topics ["t"], regex null, timeout 5000,
        // assignor "uniform", no tagged fields.
        (
            key(5, &["g", "m"]),
            Some(
                [
                    &[0, 0, 0x00, 0x00][..],
                    &compact("c"),
                    &compact("/h"),
                    &[0x02],
                    &compact("t"),
                    &[0x00],
                    &5000i32.to_be_bytes(),
                    &compact("uniform"),
                    &[0x00],
                ]
                .concat(),
            ),
        ),
        // 4 PartitionMetadata: [{TOPIC, "t", 1 partition, no racks}].
        (
            key(4, &["g"]),
            Some(
                [
                    &[0, 0, 0x02][..],
                    &TOPIC,
                    &compact("t"),
                    &1i32.to_be_bytes(),
                    &[0x01, 0x00, 0x00],
                ]
                .concat(),
            ),
        ),
        // 3 GroupMetadata: epoch 1.
        (key(3, &["g"]), Some(vec![0, 0, 0, 0, 0, 1, 0])),
        // 7 TargetAssignmentMember.
        (
            key(7, &["g", "m"]),
            Some([&[0, 0][..], &partitions, &[0x00]].concat()),
        ),
        // 6 TargetAssignmentMetadata: epoch 1.
        (key(6, &["g"]), Some(vec![0, 0, 0, 0, 0, 1, 0])),
        // 8 CurrentMemberAssignment: epochs 1/0, state 0, assigned, none pending.
        (
            key(8, &["g", "m"]),
            Some(
                [
                    &[0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0][..],
                    &partitions,
                    &[0x01, 0x00],
                ]
                .concat(),
            ),
        ),
        // 16 RegularExpression (Kafka 4.0).
        (
            key(16, &["g", "t.*"]),
            Some(
                [
                    &[0, 0, 0x02][..],
                    &compact("t"),
                    &2i64.to_be_bytes(),
                    &T0.to_be_bytes(),
                    &[0x00],
                ]
                .concat(),
            ),
        ),
        // A tombstone.
        (key(8, &["g", "gone"]), None),
        // A share-group record type: not decoded.
        (key(9, &["g"]), Some(vec![0, 0])),
        // A truncated value.
        (key(6, &["g"]), Some(vec![0, 0, 0])),
    ];
    let seg = offsets_segment(tmp.path(), &records);
    let path = seg.to_str().unwrap();

    let (code, out, err) = run([
        "log",
        "dump",
        "--offsets-decoder",
        "--skip-record-metadata",
        "--files",
        path,
    ]);
    assert_eq!(code, 1, "an undecodable record is corruption: {err}");
    let data: Vec<&str> = out.lines().filter(|l| l.starts_with("| ")).collect();
    let expected = [
        r#"| key: {"type":"1","data":{"group":"g","topic":"t","partition":2}} payload: {"version":"3","data":{"offset":5,"leaderEpoch":-1,"metadata":"","commitTimestamp":1700000000000}}"#.to_owned(),
        r#"| key: {"type":"2","data":{"group":"old"}} payload: {"version":"3","data":{"protocolType":"","generation":0,"protocol":null,"leader":null,"currentStateTimestamp":1700000000000,"members":[]}}"#.to_owned(),
        r#"| key: {"type":"5","data":{"groupId":"g","memberId":"m"}} payload: {"version":"0","data":{"instanceId":null,"rackId":null,"clientId":"c","clientHost":"/h","subscribedTopicNames":["t"],"subscribedTopicRegex":null,"rebalanceTimeoutMs":5000,"serverAssignor":"uniform"}}"#.to_owned(),
        format!(r#"| key: {{"type":"4","data":{{"groupId":"g"}}}} payload: {{"version":"0","data":{{"topics":[{{"topicId":"{TOPIC_TEXT}","topicName":"t","numPartitions":1,"partitionMetadata":[]}}]}}}}"#),
        r#"| key: {"type":"3","data":{"groupId":"g"}} payload: {"version":"0","data":{"epoch":1}}"#.to_owned(),
        format!(r#"| key: {{"type":"7","data":{{"groupId":"g","memberId":"m"}}}} payload: {{"version":"0","data":{{"topicPartitions":[{{"topicId":"{TOPIC_TEXT}","partitions":[1]}}]}}}}"#),
        r#"| key: {"type":"6","data":{"groupId":"g"}} payload: {"version":"0","data":{"assignmentEpoch":1}}"#.to_owned(),
        format!(r#"| key: {{"type":"8","data":{{"groupId":"g","memberId":"m"}}}} payload: {{"version":"0","data":{{"memberEpoch":1,"previousMemberEpoch":0,"state":0,"assignedPartitions":[{{"topicId":"{TOPIC_TEXT}","partitions":[1]}}],"partitionsPendingRevocation":[]}}}}"#),
        r#"| key: {"type":"16","data":{"groupId":"g","regularExpression":"t.*"}} payload: {"version":"0","data":{"topics":["t"],"version":2,"timestamp":1700000000000}}"#.to_owned(),
        r#"| key: {"type":"8","data":{"groupId":"g","memberId":"gone"}} payload: <DELETE>"#.to_owned(),
        "| key: Unknown record type 9 at offset 10, skipping.".to_owned(),
        "| key: Error at offset 11, skipping. ConsumerGroupTargetAssignmentMetadataValue truncated at byte 2".to_owned(),
    ];
    assert_eq!(data, expected);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(": __consumer_offsets record at offset 11 (batch at position "),
        "{err}"
    );

    // With metadata, the decoded texts follow it as --print-data-log's do.
    let (_, out, _) = run(["log", "dump", "--offsets-decoder", "--files", path]);
    let line = out.lines().find(|l| l.starts_with("| offset: 4 ")).unwrap();
    assert!(
        line.ends_with(r#"headerKeys: [] key: {"type":"3","data":{"groupId":"g"}} payload: {"version":"0","data":{"epoch":1}}"#),
        "{line}"
    );

    // JSON: the texts plus the decoded record.
    let (code, out, _) = run([
        "log",
        "dump",
        "--json",
        "--offsets-decoder",
        "--files",
        path,
    ]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let rec = |i: usize| v["batches"][i]["records"][0].clone();
    let c = &rec(7)["consumer_offsets"];
    assert_eq!(c["record_type"], 8);
    assert_eq!(c["key"]["data"]["memberId"], "m");
    assert_eq!(
        c["value"]["data"]["assignedPartitions"][0]["topicId"],
        TOPIC_TEXT
    );
    assert_eq!(c["tombstone"], false);
    assert_eq!(rec(9)["consumer_offsets"]["tombstone"], true);
    assert_eq!(rec(9)["payload"], "<DELETE>");
    assert!(rec(10)["consumer_offsets"].get("key").is_none());
    assert!(rec(11).get("consumer_offsets").is_none());
    assert_eq!(v["errors"].as_array().map(Vec::len), Some(1));
}
