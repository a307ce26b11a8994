//! The JSON texts of `__consumer_offsets` records against the strings
//! Kafka 3.9's `DumpLogSegmentsTest.testOffsetsMessageParser` expects, and
//! against texts written by hand from the schemas for the other types.

use bytes::Bytes;

use super::*;
use crate::group::records::{
    GroupMetadataKey, MemberMetadataValue as ClassicMember, OffsetCommitKey,
};
use crate::group::records_consumer::{
    ClassicMemberMetadata, ConsumerGroupMetadataValue, RegularExpressionValue,
    TargetAssignmentMemberValue,
};

fn decoded(key: &[u8], value: Option<&[u8]>) -> (String, Option<String>) {
    match describe_record(key, value).unwrap() {
        OffsetsRecordText::Decoded { key, value, .. } => (key, value),
        OffsetsRecordText::UnknownType { record_type } => panic!("unknown type {record_type}"),
    }
}

fn metadata_key() -> Vec<u8> {
    ConsumerGroupKey::Metadata {
        group_id: "group".into(),
    }
    .encode()
}

#[test]
fn consumer_group_metadata_as_kafka_prints_it() {
    let value = ConsumerGroupMetadataValue { epoch: 10 }.encode();
    assert_eq!(
        decoded(&metadata_key(), Some(&value)),
        (
            r#"{"type":"3","data":{"groupId":"group"}}"#.to_owned(),
            Some(r#"{"version":"0","data":{"epoch":10}}"#.to_owned())
        )
    );
    // A tombstone has a key and no value (the dump prints <DELETE>).
    assert_eq!(decoded(&metadata_key(), None).1, None);
}

#[test]
fn unknown_types_and_undecodable_values() {
    let mut key = metadata_key();
    key[0] = 0x7f;
    key[1] = 0xff;
    assert_eq!(
        describe_record(&key, Some(&[0, 0])),
        Ok(OffsetsRecordText::UnknownType {
            record_type: i16::MAX
        })
    );
    // A member-metadata value under a group-metadata key does not decode.
    let member = crate::group::records_consumer::MemberMetadataValue {
        instance_id: None,
        rack_id: None,
        client_id: String::new(),
        client_host: String::new(),
        subscribed_topic_names: vec![],
        subscribed_topic_regex: None,
        rebalance_timeout_ms: -1,
        server_assignor: None,
        classic_member_metadata: None,
    };
    assert!(describe_record(&metadata_key(), Some(&member.encode())).is_err());
    assert!(describe_record(&[0x00], None).is_err());
}

fn classic_group(subscription: Bytes, assignment: Bytes) -> GroupMetadataValue {
    GroupMetadataValue {
        protocol_type: "consumer".into(),
        generation: 10,
        protocol: Some("range".into()),
        leader: Some("member".into()),
        current_state_timestamp: -1,
        members: vec![ClassicMember {
            member_id: "member".into(),
            group_instance_id: Some("instance".into()),
            client_id: "client".into(),
            client_host: "host".into(),
            rebalance_timeout: 1000,
            session_timeout: 100,
            subscription,
            assignment,
        }],
    }
}

#[test]
fn classic_group_decodes_the_consumer_protocol() {
    // ConsumerProtocolSubscription v3, by hand.
    let subscription: Vec<u8> = [
        &[0x00, 0x03][..],                     // version 3
        &[0, 0, 0, 1, 0, 3, b'f', b'o', b'o'], // topics ["foo"]
        &[0xff, 0xff, 0xff, 0xff],             // userData null
        &[0, 0, 0, 1, 0, 3, b'f', b'o', b'o'], // ownedPartitions: topic "foo"
        &[0, 0, 0, 1, 0, 0, 0, 0],             //   partitions [0]
        &[0, 0, 0, 0],                         // generationId 0
        &[0, 4, b'r', b'a', b'c', b'k'],       // rackId "rack"
    ]
    .concat();
    // ConsumerProtocolAssignment v3.
    let assignment: Vec<u8> = [
        &[0x00, 0x03][..],                     // version 3
        &[0, 0, 0, 1, 0, 3, b'f', b'o', b'o'], // assignedPartitions: topic "foo"
        &[0, 0, 0, 1, 0, 0, 0, 0],             //   partitions [0]
        &[0xff, 0xff, 0xff, 0xff],             // userData null
    ]
    .concat();
    let value = classic_group(subscription.into(), assignment.into()).encode_version(4);
    let key = GroupMetadataKey {
        group: "group".into(),
    }
    .encode();
    // Kafka's expected strings, DumpLogSegmentsTest.testOffsetsMessageParser.
    assert_eq!(
        decoded(&key, Some(&value)),
        (
            r#"{"type":"2","data":{"group":"group"}}"#.to_owned(),
            Some(
                "{\"version\":\"4\",\"data\":{\"protocolType\":\"consumer\",\"generation\":10,\"protocol\":\"range\",\
                 \"leader\":\"member\",\"currentStateTimestamp\":-1,\"members\":[{\"memberId\":\"member\",\
                 \"groupInstanceId\":\"instance\",\"clientId\":\"client\",\"clientHost\":\"host\",\
                 \"rebalanceTimeout\":1000,\"sessionTimeout\":100,\"subscription\":{\"topics\":[\"foo\"],\
                 \"userData\":null,\"ownedPartitions\":[{\"topic\":\"foo\",\"partitions\":[0]}],\
                 \"generationId\":0,\"rackId\":\"rack\"},\"assignment\":{\"assignedPartitions\":\
                 [{\"topic\":\"foo\",\"partitions\":[0]}],\"userData\":null}}]}}"
                    .to_owned()
            )
        )
    );
    // Malformed embedded protocol: the bytes stay, as base64.
    let value =
        classic_group(Bytes::from("Subscription"), Bytes::from("Assignment")).encode_version(4);
    let text = decoded(&key, Some(&value)).1.unwrap();
    assert!(
        text.ends_with(
            "\"sessionTimeout\":100,\"subscription\":\"U3Vic2NyaXB0aW9u\",\
             \"assignment\":\"QXNzaWdubWVudA==\"}]}}"
        ),
        "{text}"
    );
    // Version 3 (what Kafka 3.9 writes) prints the version it was read with.
    let v3 = classic_group(Bytes::new(), Bytes::new()).encode();
    assert!(decoded(&key, Some(&v3))
        .1
        .unwrap()
        .starts_with("{\"version\":\"3\","));
}

#[test]
fn offset_commits_print_the_fields_of_their_version() {
    let key = OffsetCommitKey {
        group: "g".into(),
        topic: "t".into(),
        partition: 3,
    }
    .encode();
    let v3 = OffsetCommitValue {
        offset: 42,
        leader_epoch: 5,
        metadata: "m".into(),
        commit_timestamp: 7,
        expire_timestamp: -1,
    };
    assert_eq!(
        decoded(&key, Some(&v3.encode())),
        (
            r#"{"type":"1","data":{"group":"g","topic":"t","partition":3}}"#.to_owned(),
            Some(
                r#"{"version":"3","data":{"offset":42,"leaderEpoch":5,"metadata":"m","commitTimestamp":7}}"#
                    .to_owned()
            )
        )
    );
    let v1 = OffsetCommitValue {
        expire_timestamp: 9,
        ..v3
    };
    assert_eq!(
        decoded(&key, Some(&v1.encode())).1.unwrap(),
        r#"{"version":"1","data":{"offset":42,"metadata":"m","commitTimestamp":7,"expireTimestamp":9}}"#
    );
}

#[test]
fn member_metadata_with_classic_member_and_escapes() {
    let key = ConsumerGroupKey::MemberMetadata {
        group_id: "g".into(),
        member_id: "m\"1".into(),
    }
    .encode();
    let value = crate::group::records_consumer::MemberMetadataValue {
        instance_id: Some("i".into()),
        rack_id: None,
        client_id: "c".into(),
        client_host: "/h".into(),
        subscribed_topic_names: vec!["foo".into()],
        subscribed_topic_regex: None,
        rebalance_timeout_ms: 5000,
        server_assignor: Some("uniform".into()),
        classic_member_metadata: Some(ClassicMemberMetadata {
            session_timeout_ms: 45_000,
            supported_protocols: vec![("range".into(), Bytes::from_static(&[0xab, 0xcd]))],
        }),
    }
    .encode();
    assert_eq!(
        decoded(&key, Some(&value)),
        (
            r#"{"type":"5","data":{"groupId":"g","memberId":"m\"1"}}"#.to_owned(),
            Some(
                "{\"version\":\"0\",\"data\":{\"instanceId\":\"i\",\"rackId\":null,\"clientId\":\"c\",\
                 \"clientHost\":\"/h\",\"subscribedTopicNames\":[\"foo\"],\"subscribedTopicRegex\":null,\
                 \"rebalanceTimeoutMs\":5000,\"serverAssignor\":\"uniform\",\"classicMemberMetadata\":\
                 {\"sessionTimeoutMs\":45000,\"supportedProtocols\":[{\"name\":\"range\",\"metadata\":\"q80=\"}]}}}"
                    .to_owned()
            )
        )
    );
}

#[test]
fn uuids_print_as_kafka_uuid_strings() {
    let topic = Uuid::from_bytes([
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
        0x10,
    ]);
    let key = ConsumerGroupKey::TargetAssignmentMember {
        group_id: "g".into(),
        member_id: "m".into(),
    }
    .encode();
    let value = TargetAssignmentMemberValue {
        topic_partitions: vec![(topic, vec![0, 1])],
    }
    .encode();
    assert_eq!(
        decoded(&key, Some(&value)).1.unwrap(),
        r#"{"version":"0","data":{"topicPartitions":[{"topicId":"AQIDBAUGBwgJCgsMDQ4PEA","partitions":[0,1]}]}}"#
    );
}

#[test]
fn regular_expression_record_of_kafka_4() {
    let key = ConsumerGroupKey::RegularExpression {
        group_id: "g".into(),
        regex: "t.*".into(),
    }
    .encode();
    let value = RegularExpressionValue {
        topics: vec!["t1".into(), "t2".into()],
        version: 3,
        timestamp: 99,
    }
    .encode();
    assert_eq!(
        decoded(&key, Some(&value)),
        (
            r#"{"type":"16","data":{"groupId":"g","regularExpression":"t.*"}}"#.to_owned(),
            Some(
                r#"{"version":"0","data":{"topics":["t1","t2"],"version":3,"timestamp":99}}"#
                    .to_owned()
            )
        )
    );
}
