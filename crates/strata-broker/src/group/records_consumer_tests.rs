//! The consumer-group record codecs against bytes written out by hand, field
//! by field, from Kafka's `ConsumerGroup*Key.json` / `*Value.json` schemas
//! (3.9, and 4.0 for the regular-expression record), not from the encoder
//! under test; then round trips, tagged fields and corrupt input.

use super::super::records::{decode_key, fuzz_round_trip, RecordKey};
use super::*;

/// Concatenate byte groups (one per schema field in the tests).
fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

const TOPIC_A: Uuid = Uuid::from_bytes([
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10,
]);
const TOPIC_B: Uuid = Uuid::from_bytes([0xff; 16]);

#[test]
fn keys_are_classic_encoded_with_their_record_type() {
    let cases: Vec<(ConsumerGroupKey, Vec<u8>)> = vec![
        (
            ConsumerGroupKey::Metadata {
                group_id: "g".into(),
            },
            // type 3, groupId "g" (int16 length)
            cat(&[&[0x00, 0x03], &[0x00, 0x01, b'g']]),
        ),
        (
            ConsumerGroupKey::PartitionMetadata {
                group_id: "g".into(),
            },
            cat(&[&[0x00, 0x04], &[0x00, 0x01, b'g']]),
        ),
        (
            ConsumerGroupKey::MemberMetadata {
                group_id: "g".into(),
                member_id: "m1".into(),
            },
            // type 5, groupId "g", memberId "m1"
            cat(&[
                &[0x00, 0x05],
                &[0x00, 0x01, b'g'],
                &[0x00, 0x02, b'm', b'1'],
            ]),
        ),
        (
            ConsumerGroupKey::TargetAssignmentMetadata {
                group_id: "g".into(),
            },
            cat(&[&[0x00, 0x06], &[0x00, 0x01, b'g']]),
        ),
        (
            ConsumerGroupKey::TargetAssignmentMember {
                group_id: "g".into(),
                member_id: "m1".into(),
            },
            cat(&[
                &[0x00, 0x07],
                &[0x00, 0x01, b'g'],
                &[0x00, 0x02, b'm', b'1'],
            ]),
        ),
        (
            ConsumerGroupKey::CurrentMemberAssignment {
                group_id: "g".into(),
                member_id: "".into(),
            },
            // an empty member id is a zero-length string, not null
            cat(&[&[0x00, 0x08], &[0x00, 0x01, b'g'], &[0x00, 0x00]]),
        ),
        (
            ConsumerGroupKey::RegularExpression {
                group_id: "g".into(),
                regex: "t.*".into(),
            },
            // type 16, groupId "g", regularExpression "t.*"
            cat(&[
                &[0x00, 0x10],
                &[0x00, 0x01, b'g'],
                &[0x00, 0x03, b't', b'.', b'*'],
            ]),
        ),
    ];
    for (key, bytes) in cases {
        assert_eq!(key.encode(), bytes, "{key:?}");
        assert_eq!(key.group_id(), "g");
        assert_eq!(
            decode_key(&bytes).unwrap(),
            RecordKey::ConsumerGroup(key.clone())
        );
        // A truncated key is an error, not another record type.
        assert!(matches!(
            decode_key(&bytes[..bytes.len() - 1]),
            Err(RecordError::Truncated { .. })
        ));
    }
}

#[test]
fn null_group_id_in_a_key_is_rejected() {
    assert!(matches!(
        decode_key(&[0x00, 0x03, 0xff, 0xff]),
        Err(RecordError::UnexpectedNull { position: 2, .. })
    ));
}

#[test]
fn group_metadata_value_bytes() {
    let v = ConsumerGroupMetadataValue { epoch: 10 };
    // version 0, epoch 10, no tagged fields
    let bytes = cat(&[&[0x00, 0x00], &[0x00, 0x00, 0x00, 0x0a], &[0x00]]);
    assert_eq!(v.encode(), bytes);
    assert_eq!(ConsumerGroupMetadataValue::decode(&bytes).unwrap(), v);
    // The only value version is 0.
    assert!(matches!(
        ConsumerGroupMetadataValue::decode(&[0x00, 0x01, 0, 0, 0, 10, 0]),
        Err(RecordError::UnsupportedVersion { version: 1, .. })
    ));
}

#[test]
fn partition_metadata_value_bytes() {
    let v = PartitionMetadataValue {
        topics: vec![
            TopicMetadataEntry {
                topic_id: TOPIC_A,
                topic_name: "foo".into(),
                num_partitions: 2,
                partition_racks: vec![(0, vec!["r1".into(), "r2".into()]), (1, vec![])],
            },
            TopicMetadataEntry {
                topic_id: TOPIC_B,
                topic_name: "b".into(),
                num_partitions: 1,
                partition_racks: vec![],
            },
        ],
    };
    let bytes = cat(&[
        &[0x00, 0x00], // version 0
        &[0x03],       // topics: compact array, 2 + 1
        TOPIC_A.as_bytes(),
        &[0x04, b'f', b'o', b'o'], // topicName "foo": compact, 3 + 1
        &[0x00, 0x00, 0x00, 0x02], // numPartitions 2
        &[0x03],                   // partitionMetadata: 2 + 1
        &[0x00, 0x00, 0x00, 0x00], //   partition 0
        &[0x03, 0x03, b'r', b'1', 0x03, b'r', b'2'], // racks ["r1","r2"]
        &[0x00],                   //   tagged fields
        &[0x00, 0x00, 0x00, 0x01], //   partition 1
        &[0x01],                   //   racks []
        &[0x00],                   //   tagged fields
        &[0x00],                   // topic tagged fields
        TOPIC_B.as_bytes(),
        &[0x02, b'b'],             // topicName "b"
        &[0x00, 0x00, 0x00, 0x01], // numPartitions 1
        &[0x01],                   // partitionMetadata [] (racks unknown)
        &[0x00],                   // topic tagged fields
        &[0x00],                   // value tagged fields
    ]);
    assert_eq!(v.encode(), bytes);
    assert_eq!(PartitionMetadataValue::decode(&bytes).unwrap(), v);
}

fn consumer_member() -> MemberMetadataValue {
    MemberMetadataValue {
        instance_id: None,
        rack_id: Some("rack".into()),
        client_id: "c".into(),
        client_host: "/h".into(),
        subscribed_topic_names: vec!["foo".into(), "bar".into()],
        subscribed_topic_regex: None,
        rebalance_timeout_ms: 5000,
        server_assignor: Some("range".into()),
        classic_member_metadata: None,
    }
}

/// The member fields before the tagged-field section, for `consumer_member`.
fn consumer_member_fields() -> Vec<u8> {
    cat(&[
        &[0x00, 0x00],                         // version 0
        &[0x00],                               // instanceId null
        &[0x05, b'r', b'a', b'c', b'k'],       // rackId "rack"
        &[0x02, b'c'],                         // clientId "c"
        &[0x03, b'/', b'h'],                   // clientHost "/h"
        &[0x03],                               // subscribedTopicNames: 2 + 1
        &[0x04, b'f', b'o', b'o'],             //   "foo"
        &[0x04, b'b', b'a', b'r'],             //   "bar"
        &[0x00],                               // subscribedTopicRegex null
        &[0x00, 0x00, 0x13, 0x88],             // rebalanceTimeoutMs 5000
        &[0x06, b'r', b'a', b'n', b'g', b'e'], // serverAssignor "range"
    ])
}

#[test]
fn member_metadata_value_bytes_consumer_protocol() {
    let v = consumer_member();
    // A null ClassicMemberMetadata equals its default and is not written.
    let bytes = cat(&[&consumer_member_fields(), &[0x00]]);
    assert_eq!(v.encode(), bytes);
    assert_eq!(MemberMetadataValue::decode(&bytes).unwrap(), v);
}

#[test]
fn member_metadata_value_bytes_classic_member_is_tag_0() {
    let mut v = consumer_member();
    v.classic_member_metadata = Some(ClassicMemberMetadata {
        session_timeout_ms: 45_000,
        supported_protocols: vec![("range".into(), Bytes::from_static(&[0xab, 0xcd]))],
    });
    let classic = cat(&[
        &[0x01],                               // nullable struct marker: present
        &[0x00, 0x00, 0xaf, 0xc8],             // sessionTimeoutMs 45000
        &[0x02],                               // supportedProtocols: 1 + 1
        &[0x06, b'r', b'a', b'n', b'g', b'e'], //   name "range"
        &[0x03, 0xab, 0xcd],                   //   metadata: compact bytes, 2 + 1
        &[0x00],                               //   tagged fields
        &[0x00],                               // struct tagged fields
    ]);
    assert_eq!(classic.len(), 17);
    let bytes = cat(&[
        &consumer_member_fields(),
        &[0x01], // one tagged field
        &[0x00], // tag 0
        &[0x11], // size 17: the struct (16) plus its marker
        &classic,
    ]);
    assert_eq!(v.encode(), bytes);
    assert_eq!(MemberMetadataValue::decode(&bytes).unwrap(), v);

    // Tag 0 with marker 0 is an explicit null.
    let null = cat(&[&consumer_member_fields(), &[0x01, 0x00, 0x01, 0x00]]);
    assert_eq!(
        MemberMetadataValue::decode(&null).unwrap(),
        consumer_member()
    );
}

#[test]
fn member_metadata_value_skips_unknown_tags_around_tag_0() {
    let mut v = consumer_member();
    v.classic_member_metadata = Some(ClassicMemberMetadata {
        session_timeout_ms: 1,
        supported_protocols: vec![],
    });
    let bytes = cat(&[
        &consumer_member_fields(),
        &[0x02],                         // two tagged fields
        &[0x00, 0x07],                   // tag 0, size 7
        &[0x01, 0, 0, 0, 1, 0x01, 0x00], //   marker, timeout 1, [], tagged fields
        &[0x05, 0x02, 0xaa, 0xbb],       // unknown tag 5, size 2
        &[0xde, 0xad],                   // bytes after the last field
    ]);
    assert_eq!(MemberMetadataValue::decode(&bytes).unwrap(), v);
    // A tagged field whose declared size runs past the end is truncation.
    let short = cat(&[&consumer_member_fields(), &[0x01, 0x00, 0x09, 0x01]]);
    assert!(matches!(
        MemberMetadataValue::decode(&short),
        Err(RecordError::Truncated { .. })
    ));
    // The struct may not run past its declared size either.
    let overrun = cat(&[&consumer_member_fields(), &[0x01, 0x00, 0x02, 0x01, 0x00]]);
    assert!(matches!(
        MemberMetadataValue::decode(&overrun),
        Err(RecordError::Truncated { .. })
    ));
}

#[test]
fn member_metadata_value_null_client_id_is_rejected() {
    let bytes = cat(&[&[0x00, 0x00], &[0x00], &[0x00], &[0x00]]);
    assert!(matches!(
        MemberMetadataValue::decode(&bytes),
        Err(RecordError::UnexpectedNull { position: 4, .. })
    ));
}

#[test]
fn target_assignment_metadata_value_bytes() {
    let v = TargetAssignmentMetadataValue {
        assignment_epoch: -1,
    };
    // version 0, assignmentEpoch -1, tagged fields
    let bytes = cat(&[&[0x00, 0x00], &[0xff, 0xff, 0xff, 0xff], &[0x00]]);
    assert_eq!(v.encode(), bytes);
    assert_eq!(TargetAssignmentMetadataValue::decode(&bytes).unwrap(), v);
}

#[test]
fn target_assignment_member_value_bytes() {
    let v = TargetAssignmentMemberValue {
        topic_partitions: vec![(TOPIC_A, vec![0, 2]), (TOPIC_B, vec![])],
    };
    let bytes = cat(&[
        &[0x00, 0x00], // version 0
        &[0x03],       // topicPartitions: 2 + 1
        TOPIC_A.as_bytes(),
        &[0x03, 0, 0, 0, 0, 0, 0, 0, 2], // partitions [0, 2]
        &[0x00],                         // tagged fields
        TOPIC_B.as_bytes(),
        &[0x01], // partitions []
        &[0x00], // tagged fields
        &[0x00], // value tagged fields
    ]);
    assert_eq!(v.encode(), bytes);
    assert_eq!(TargetAssignmentMemberValue::decode(&bytes).unwrap(), v);
}

#[test]
fn current_member_assignment_value_bytes() {
    let v = CurrentMemberAssignmentValue {
        member_epoch: 7,
        previous_member_epoch: 6,
        state: 1,
        assigned_partitions: vec![(TOPIC_A, vec![1])],
        partitions_pending_revocation: vec![(TOPIC_B, vec![3])],
    };
    let bytes = cat(&[
        &[0x00, 0x00],             // version 0
        &[0x00, 0x00, 0x00, 0x07], // memberEpoch 7
        &[0x00, 0x00, 0x00, 0x06], // previousMemberEpoch 6
        &[0x01],                   // state 1 (UNREVOKED_PARTITIONS)
        &[0x02],                   // assignedPartitions: 1 + 1
        TOPIC_A.as_bytes(),
        &[0x02, 0, 0, 0, 1], // partitions [1]
        &[0x00],             // tagged fields
        &[0x02],             // partitionsPendingRevocation: 1 + 1
        TOPIC_B.as_bytes(),
        &[0x02, 0, 0, 0, 3], // partitions [3]
        &[0x00],             // tagged fields
        &[0x00],             // value tagged fields
    ]);
    assert_eq!(v.encode(), bytes);
    assert_eq!(CurrentMemberAssignmentValue::decode(&bytes).unwrap(), v);
    // state is a signed int8: 127 is UNKNOWN, 0xff reads as -1.
    let mut odd = bytes.clone();
    odd[10] = 0xff;
    assert_eq!(
        CurrentMemberAssignmentValue::decode(&odd).unwrap().state,
        -1
    );
}

#[test]
fn regular_expression_value_bytes() {
    let v = RegularExpressionValue {
        topics: vec!["t1".into()],
        version: 42,
        timestamp: 1_700_000_000_000,
    };
    let bytes = cat(&[
        &[0x00, 0x00],                                     // version 0
        &[0x02, 0x03, b't', b'1'],                         // topics ["t1"]
        &[0, 0, 0, 0, 0, 0, 0, 42],                        // version 42
        &[0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00], // timestamp 1700000000000
        &[0x00],                                           // tagged fields
    ]);
    assert_eq!(v.encode(), bytes);
    assert_eq!(RegularExpressionValue::decode(&bytes).unwrap(), v);
}

#[test]
fn huge_array_counts_are_truncation_before_allocation() {
    // topicPartitions claiming 2^32 entries in a 7-byte value.
    let bytes = [0x00, 0x00, 0x81, 0x80, 0x80, 0x80, 0x10];
    assert!(matches!(
        TargetAssignmentMemberValue::decode(&bytes),
        Err(RecordError::Truncated { position: 7, .. })
    ));
    // A null non-nullable array is rejected, as Kafka's reader does.
    assert!(matches!(
        RegularExpressionValue::decode(&[0x00, 0x00, 0x00]),
        Err(RecordError::UnexpectedNull { position: 2, .. })
    ));
    // A uvarint of 2^63 - 1 + 1 as a compact length must not overflow.
    let max = [
        0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    ];
    assert!(PartitionMetadataValue::decode(&max).is_err());
    fuzz_round_trip(&max);
}

#[test]
fn values_dispatch_on_the_key_type() {
    let key = ConsumerGroupKey::TargetAssignmentMetadata {
        group_id: "g".into(),
    };
    let bytes = TargetAssignmentMetadataValue {
        assignment_epoch: 3,
    }
    .encode();
    let v = ConsumerGroupValue::decode(&key, &bytes).unwrap();
    assert_eq!(
        v,
        ConsumerGroupValue::TargetAssignmentMetadata(TargetAssignmentMetadataValue {
            assignment_epoch: 3
        })
    );
    assert_eq!(v.encode(), bytes);
}

#[test]
fn round_trips_through_the_fuzz_entry_point() {
    let mut classic = consumer_member();
    classic.instance_id = Some("i".into());
    classic.subscribed_topic_regex = Some("t.*".into());
    classic.classic_member_metadata = Some(ClassicMemberMetadata {
        session_timeout_ms: 3,
        supported_protocols: vec![("a".into(), Bytes::new()), ("b".into(), Bytes::from("x"))],
    });
    let values = [
        ConsumerGroupMetadataValue { epoch: 1 }.encode(),
        classic.encode(),
        consumer_member().encode(),
        CurrentMemberAssignmentValue {
            member_epoch: 1,
            previous_member_epoch: 0,
            state: 0,
            assigned_partitions: vec![],
            partitions_pending_revocation: vec![(TOPIC_A, vec![1, 2, 3])],
        }
        .encode(),
    ];
    for v in &values {
        fuzz_round_trip(v);
    }
    assert_eq!(
        MemberMetadataValue::decode(&classic.encode()).unwrap(),
        classic
    );
}
