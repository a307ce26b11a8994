//! The `__consumer_offsets` codecs against bytes built by hand, field by
//! field, from Kafka's JSON schemas (not from the encoder under test).

use super::*;

/// Classic (non-flexible) string: int16 length + bytes.
fn s16(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as i16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn member(id: &str, instance: Option<&str>) -> MemberMetadataValue {
    MemberMetadataValue {
        member_id: id.into(),
        group_instance_id: instance.map(str::to_string),
        client_id: "client-1".into(),
        client_host: "/127.0.0.1".into(),
        rebalance_timeout: 300_000,
        session_timeout: 45_000,
        subscription: Bytes::from_static(&[0, 1, 0, 0, 0, 1, 0, 1, b't']),
        assignment: Bytes::from_static(&[0, 3]),
    }
}

#[test]
fn offset_commit_key_v1_bytes() {
    let key = OffsetCommitKey {
        group: "my-group".into(),
        topic: "orders".into(),
        partition: 7,
    };
    let mut expected = vec![0x00, 0x01]; // version 1
    s16(&mut expected, "my-group");
    s16(&mut expected, "orders");
    expected.extend_from_slice(&[0, 0, 0, 7]);
    assert_eq!(key.encode(), expected);
    assert_eq!(
        decode_key(&expected).unwrap(),
        RecordKey::OffsetCommit(key.clone())
    );
    // Version 0 has the same layout.
    let mut v0 = expected.clone();
    v0[1] = 0;
    assert_eq!(decode_key(&v0).unwrap(), RecordKey::OffsetCommit(key));
}

#[test]
fn group_metadata_key_v2_bytes() {
    let key = GroupMetadataKey { group: "g".into() };
    let expected = vec![0x00, 0x02, 0x00, 0x01, b'g'];
    assert_eq!(key.encode(), expected);
    assert_eq!(
        decode_key(&expected).unwrap(),
        RecordKey::GroupMetadata(key)
    );
}

#[test]
fn unknown_key_versions_are_reported_not_rejected() {
    // Type 9 (a share-group record in Kafka 4.0) is not decoded here.
    let bytes = [0x00, 0x09, 0x00, 0x01, b'g'];
    assert_eq!(
        decode_key(&bytes).unwrap(),
        RecordKey::Unknown { version: 9 }
    );
    assert!(matches!(
        decode_key(&[0xff, 0xff]),
        Err(RecordError::UnsupportedVersion { version: -1, .. })
    ));
    assert!(matches!(
        decode_key(&[0x00, 0x01, 0x00, 0x05, b'a']),
        Err(RecordError::Truncated { position: 4, .. })
    ));
}

#[test]
fn offset_commit_value_v3_bytes() {
    let value = OffsetCommitValue {
        offset: 42,
        leader_epoch: 5,
        metadata: "meta".into(),
        commit_timestamp: 1_700_000_000_123,
        expire_timestamp: -1,
    };
    let mut expected = vec![0x00, 0x03];
    expected.extend_from_slice(&42i64.to_be_bytes());
    expected.extend_from_slice(&5i32.to_be_bytes());
    s16(&mut expected, "meta");
    expected.extend_from_slice(&1_700_000_000_123i64.to_be_bytes());
    assert_eq!(value.write_version(), 3);
    assert_eq!(value.encode(), expected);
    assert_eq!(OffsetCommitValue::decode(&expected).unwrap(), value);
}

#[test]
fn offset_commit_value_v1_with_expire_timestamp() {
    let value = OffsetCommitValue {
        offset: 1,
        leader_epoch: -1,
        metadata: String::new(),
        commit_timestamp: 10,
        expire_timestamp: 20,
    };
    let mut expected = vec![0x00, 0x01];
    expected.extend_from_slice(&1i64.to_be_bytes());
    s16(&mut expected, "");
    expected.extend_from_slice(&10i64.to_be_bytes());
    expected.extend_from_slice(&20i64.to_be_bytes());
    assert_eq!(value.write_version(), 1);
    assert_eq!(value.encode(), expected);
    assert_eq!(OffsetCommitValue::decode(&expected).unwrap(), value);
}

#[test]
fn offset_commit_value_v4_flexible() {
    let value = OffsetCommitValue {
        offset: 3,
        leader_epoch: 2,
        metadata: "m".into(),
        commit_timestamp: 9,
        expire_timestamp: -1,
    };
    let mut expected = vec![0x00, 0x04];
    expected.extend_from_slice(&3i64.to_be_bytes());
    expected.extend_from_slice(&2i32.to_be_bytes());
    expected.extend_from_slice(&[2, b'm']); // compact string: len + 1
    expected.extend_from_slice(&9i64.to_be_bytes());
    expected.push(0); // no tagged fields
    assert_eq!(value.encode_version(4), expected);
    assert_eq!(OffsetCommitValue::decode(&expected).unwrap(), value);
    // A tagged field written by a newer Kafka is skipped.
    let mut tagged = expected.clone();
    *tagged.last_mut().unwrap() = 1;
    tagged.extend_from_slice(&[7, 2, 0xaa, 0xbb]);
    assert_eq!(OffsetCommitValue::decode(&tagged).unwrap(), value);
}

#[test]
fn offset_commit_value_v0_has_no_epoch() {
    let mut bytes = vec![0x00, 0x00];
    bytes.extend_from_slice(&8i64.to_be_bytes());
    s16(&mut bytes, "x");
    bytes.extend_from_slice(&77i64.to_be_bytes());
    let v = OffsetCommitValue::decode(&bytes).unwrap();
    assert_eq!(
        (v.offset, v.leader_epoch, v.metadata.as_str()),
        (8, -1, "x")
    );
    assert_eq!((v.commit_timestamp, v.expire_timestamp), (77, -1));
    assert_eq!(v.encode_version(0), bytes);
}

#[test]
fn group_metadata_value_v3_bytes() {
    let value = GroupMetadataValue {
        protocol_type: "consumer".into(),
        generation: 4,
        protocol: Some("range".into()),
        leader: Some("m1".into()),
        current_state_timestamp: 1234,
        members: vec![member("m1", Some("inst-1")), member("m2", None)],
    };
    let mut expected = vec![0x00, 0x03];
    s16(&mut expected, "consumer");
    expected.extend_from_slice(&4i32.to_be_bytes());
    s16(&mut expected, "range");
    s16(&mut expected, "m1");
    expected.extend_from_slice(&1234i64.to_be_bytes());
    expected.extend_from_slice(&2i32.to_be_bytes());
    for (id, instance) in [("m1", Some("inst-1")), ("m2", None)] {
        let m = member(id, instance);
        s16(&mut expected, id);
        match instance {
            Some(i) => s16(&mut expected, i),
            None => expected.extend_from_slice(&(-1i16).to_be_bytes()),
        }
        s16(&mut expected, "client-1");
        s16(&mut expected, "/127.0.0.1");
        expected.extend_from_slice(&300_000i32.to_be_bytes());
        expected.extend_from_slice(&45_000i32.to_be_bytes());
        expected.extend_from_slice(&(m.subscription.len() as i32).to_be_bytes());
        expected.extend_from_slice(&m.subscription);
        expected.extend_from_slice(&(m.assignment.len() as i32).to_be_bytes());
        expected.extend_from_slice(&m.assignment);
    }
    assert_eq!(value.encode(), expected);
    assert_eq!(GroupMetadataValue::decode(&expected).unwrap(), value);
}

#[test]
fn empty_group_metadata_value_has_null_protocol_and_leader() {
    let value = GroupMetadataValue {
        protocol_type: String::new(),
        generation: 0,
        protocol: None,
        leader: None,
        current_state_timestamp: 99,
        members: vec![],
    };
    let mut expected = vec![0x00, 0x03];
    s16(&mut expected, "");
    expected.extend_from_slice(&0i32.to_be_bytes());
    expected.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]); // two null strings
    expected.extend_from_slice(&99i64.to_be_bytes());
    expected.extend_from_slice(&0i32.to_be_bytes());
    assert_eq!(value.encode(), expected);
    assert_eq!(GroupMetadataValue::decode(&expected).unwrap(), value);
}

#[test]
fn group_metadata_value_v0_reads_rebalance_timeout_as_session_timeout() {
    let mut bytes = vec![0x00, 0x00];
    s16(&mut bytes, "consumer");
    bytes.extend_from_slice(&1i32.to_be_bytes());
    s16(&mut bytes, "range");
    s16(&mut bytes, "m");
    bytes.extend_from_slice(&1i32.to_be_bytes());
    s16(&mut bytes, "m");
    s16(&mut bytes, "c");
    s16(&mut bytes, "h");
    bytes.extend_from_slice(&10_000i32.to_be_bytes());
    bytes.extend_from_slice(&0i32.to_be_bytes());
    bytes.extend_from_slice(&0i32.to_be_bytes());
    let v = GroupMetadataValue::decode(&bytes).unwrap();
    assert_eq!(v.current_state_timestamp, -1);
    assert_eq!(v.members[0].rebalance_timeout, 10_000);
    assert_eq!(v.members[0].session_timeout, 10_000);
    assert_eq!(v.members[0].group_instance_id, None);
}

#[test]
fn group_metadata_value_v4_round_trip() {
    let value = GroupMetadataValue {
        protocol_type: "consumer".into(),
        generation: 2,
        protocol: Some("range".into()),
        leader: Some("m1".into()),
        current_state_timestamp: 5,
        members: vec![member("m1", Some("i"))],
    };
    let bytes = value.encode_version(4);
    // version, compact "consumer" (len+1 = 9)
    assert_eq!(&bytes[..3], &[0x00, 0x04, 9]);
    assert_eq!(GroupMetadataValue::decode(&bytes).unwrap(), value);
}

#[test]
fn corrupt_values_are_structured_errors() {
    assert!(matches!(
        OffsetCommitValue::decode(&[0x00, 0x05]),
        Err(RecordError::UnsupportedVersion { version: 5, .. })
    ));
    let mut bytes = vec![0x00, 0x03];
    bytes.extend_from_slice(&1i64.to_be_bytes());
    bytes.extend_from_slice(&1i32.to_be_bytes());
    bytes.extend_from_slice(&(-3i16).to_be_bytes());
    assert!(matches!(
        OffsetCommitValue::decode(&bytes),
        Err(RecordError::NegativeLength { length: -3, .. })
    ));
    let mut null_type = vec![0x00, 0x03, 0xff, 0xff];
    null_type.extend_from_slice(&[0; 20]);
    assert!(matches!(
        GroupMetadataValue::decode(&null_type),
        Err(RecordError::UnexpectedNull { position: 2, .. })
    ));
}

/// A flexible (v4) value whose first compact string has the length varint
/// 2^63 made the length arithmetic overflow (a panic with overflow checks
/// on, the `consumer_offsets` fuzz target's crash) instead of reporting a
/// truncated value.
#[test]
fn compact_length_of_two_to_the_63_is_truncation_not_overflow() {
    let input = [
        0x00, 0x04, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
    ];
    assert!(matches!(
        GroupMetadataValue::decode(&input),
        Err(RecordError::Truncated { position: 12, .. })
    ));
    let mut commit = vec![0x00, 0x04];
    commit.extend_from_slice(&[0; 12]); // offset, leader epoch
    commit.extend_from_slice(&input[2..]);
    assert!(matches!(
        OffsetCommitValue::decode(&commit),
        Err(RecordError::Truncated { position: 24, .. })
    ));
}
