//! Byte-level checks of the `__remote_log_metadata` record values.

use super::*;
use crate::metadata::RemoteLogSegmentState::*;

fn tip() -> TopicIdPartition {
    TopicIdPartition::new(
        Uuid::from_u64_pair(0x0123456789abcdef, 0x0fedcba987654321),
        TopicPartition::new("ab", 3),
    )
}

fn sample() -> RemoteLogSegmentMetadata {
    RemoteLogSegmentMetadata {
        segment_id: RemoteLogSegmentId {
            partition: tip(),
            id: Uuid::from_u64_pair(1, 2),
        },
        start_offset: Offset(100),
        end_offset: Offset(199),
        max_timestamp: Timestamp(1_700_000_000_000),
        broker_id: 7,
        event_timestamp_ms: 1_700_000_000_001,
        segment_leader_epochs: [(LeaderEpoch(0), Offset(100)), (LeaderEpoch(4), Offset(150))]
            .into(),
        segment_size_in_bytes: 4096,
        custom_metadata: Some(vec![0xAB]),
        state: CopySegmentStarted,
    }
}

#[test]
fn add_record_has_kafkas_layout() {
    let bytes = encode(&MetadataEvent::Add(sample()));
    let mut expect = vec![1u8, 0, 0]; // frame v1, api key 0, message v0
    expect.push(3); // "ab" compact
    expect.extend_from_slice(b"ab");
    expect.extend_from_slice(&0x0123456789abcdefu64.to_be_bytes());
    expect.extend_from_slice(&0x0fedcba987654321u64.to_be_bytes());
    expect.extend_from_slice(&3i32.to_be_bytes());
    expect.push(0); // TopicIdPartition tags
    expect.extend_from_slice(&1u64.to_be_bytes());
    expect.extend_from_slice(&2u64.to_be_bytes());
    expect.push(0); // SegmentId tags
    expect.extend_from_slice(&100i64.to_be_bytes());
    expect.extend_from_slice(&199i64.to_be_bytes());
    expect.extend_from_slice(&7i32.to_be_bytes());
    expect.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
    expect.extend_from_slice(&1_700_000_000_001i64.to_be_bytes());
    expect.push(3); // two epochs
    for (e, o) in [(0i32, 100i64), (4, 150)] {
        expect.extend_from_slice(&e.to_be_bytes());
        expect.extend_from_slice(&o.to_be_bytes());
        expect.push(0);
    }
    expect.extend_from_slice(&4096i32.to_be_bytes());
    expect.extend_from_slice(&[2, 0xAB]); // custom metadata
    expect.push(0); // state
    expect.push(0); // tags
    assert_eq!(bytes, expect);
    assert_eq!(decode(&bytes).unwrap(), MetadataEvent::Add(sample()));
}

#[test]
fn every_event_round_trips() {
    let events = [
        MetadataEvent::Add(RemoteLogSegmentMetadata {
            custom_metadata: None,
            ..sample()
        }),
        MetadataEvent::Update(RemoteLogSegmentMetadataUpdate {
            segment_id: sample().segment_id,
            event_timestamp_ms: 9,
            custom_metadata: Some(vec![1, 2, 3]),
            state: DeleteSegmentStarted,
            broker_id: 1,
        }),
        MetadataEvent::PartitionDelete(RemotePartitionDeleteMetadata {
            partition: tip(),
            state: RemotePartitionDeleteState::DeletePartitionStarted,
            event_timestamp_ms: 5,
            broker_id: 2,
        }),
    ];
    for e in events {
        assert_eq!(decode(&encode(&e)).unwrap(), e);
    }
}

#[test]
fn malformed_values_are_typed_errors() {
    let good = encode(&MetadataEvent::Add(sample()));
    let mut v0 = good.clone();
    v0[0] = 0;
    assert_eq!(decode(&v0), Err(SerdeError::FrameVersion { version: 0 }));
    let mut key = good.clone();
    key[1] = 9;
    assert_eq!(decode(&key), Err(SerdeError::ApiKey { api_key: 9 }));
    let mut trailing = good.clone();
    trailing.push(0);
    assert_eq!(decode(&trailing), Err(SerdeError::TrailingBytes { len: 1 }));
    let mut state = good.clone();
    let n = state.len();
    state[n - 2] = 7;
    assert!(matches!(
        decode(&state),
        Err(SerdeError::InvalidValue {
            field: "RemoteLogSegmentState",
            value: 7
        })
    ));
    for cut in 0..good.len() {
        assert!(
            decode(&good[..cut]).is_err(),
            "prefix of {cut} bytes decoded"
        );
    }
}

#[test]
fn unknown_tagged_fields_are_skipped() {
    let mut bytes = encode(&MetadataEvent::PartitionDelete(
        RemotePartitionDeleteMetadata {
            partition: tip(),
            state: RemotePartitionDeleteState::DeletePartitionMarked,
            event_timestamp_ms: 5,
            broker_id: 2,
        },
    ));
    bytes.pop();
    bytes.extend_from_slice(&[1, 42, 2, 0xde, 0xad]); // one tag, 2 bytes
    assert!(matches!(
        decode(&bytes),
        Ok(MetadataEvent::PartitionDelete(_))
    ));
}
