//! Golden lines, each derived from a format string of Kafka 3.9's `DumpLogSegments`.

use super::*;

fn v2_batch() -> BatchLine {
    BatchLine {
        position: 0,
        magic: 2,
        base_offset: Some(0),
        last_offset: 24,
        count: Some(25),
        base_sequence: Some(-1),
        last_sequence: Some(-1),
        producer_id: Some(-1),
        producer_epoch: Some(-1),
        partition_leader_epoch: Some(3),
        is_transactional: Some(false),
        is_control: Some(false),
        delete_horizon_ms: Some(None),
        timestamp_type: "CreateTime",
        max_timestamp: 1_700_000_000_240,
        size: 502,
        compresscodec: "gzip".into(),
        crc: 1_872_144_491,
        is_valid: true,
        records: None,
    }
}

#[test]
fn v2_batch_line() {
    assert_eq!(
        v2_batch().text(),
        "baseOffset: 0 lastOffset: 24 count: 25 baseSequence: -1 lastSequence: -1 producerId: -1 \
         producerEpoch: -1 partitionLeaderEpoch: 3 isTransactional: false isControl: false \
         deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000240 size: 502 \
         magic: 2 compresscodec: gzip crc: 1872144491 isvalid: true"
    );
    let mut b = v2_batch();
    b.delete_horizon_ms = Some(Some(1_700_086_400_000));
    assert!(b
        .text()
        .contains(" deleteHorizonMs: OptionalLong[1700086400000] position: 0 "));
}

#[test]
fn legacy_batch_line() {
    let b = BatchLine {
        position: 70,
        magic: 0,
        base_offset: None,
        last_offset: 9,
        count: None,
        base_sequence: None,
        last_sequence: None,
        producer_id: None,
        producer_epoch: None,
        partition_leader_epoch: None,
        is_transactional: None,
        is_control: None,
        delete_horizon_ms: None,
        timestamp_type: "NoTimestampType",
        max_timestamp: -1,
        size: 40,
        compresscodec: "none".into(),
        crc: 123,
        is_valid: false,
        records: None,
    };
    assert_eq!(
        b.text(),
        "offset: 9 position: 70 NoTimestampType: -1 size: 40 magic: 0 compresscodec: none crc: 123 isvalid: false"
    );
}

fn record() -> RecordLine {
    RecordLine {
        offset: 5,
        timestamp: 1_700_000_000_005,
        key_size: 6,
        value_size: -1,
        sequence: Some(-1),
        header_keys: Some(vec!["h1".into(), "h2".into()]),
        is_valid: None,
        crc: None,
        control: None,
        key: None,
        payload: None,
        transaction_log: None,
        consumer_offsets: None,
    }
}

#[test]
fn record_lines() {
    assert_eq!(
        record().text("CreateTime", false),
        "| offset: 5 CreateTime: 1700000000005 keySize: 6 valueSize: -1 sequence: -1 headerKeys: [h1,h2]"
    );
    let mut r = record();
    r.key = Some("key-05".into());
    r.payload = Some("v".into());
    assert_eq!(
        r.text("LogAppendTime", false),
        "| offset: 5 LogAppendTime: 1700000000005 keySize: 6 valueSize: -1 sequence: -1 headerKeys: [h1,h2] key: key-05 payload: v"
    );
    assert_eq!(r.text("CreateTime", true), "| key: key-05 payload: v");
    r.key = None;
    assert_eq!(r.text("CreateTime", true), "|  payload: v");
}

#[test]
fn control_and_legacy_record_lines() {
    let mut r = record();
    r.header_keys = Some(vec![]);
    r.control = Some(ControlLine::EndTxnMarker {
        marker: "COMMIT",
        coordinator_epoch: 5,
    });
    assert!(r
        .text("CreateTime", false)
        .ends_with(" headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5"));
    r.control = Some(ControlLine::Other {
        name: "LEADER_CHANGE",
        id: 2,
    });
    assert!(r
        .text("CreateTime", false)
        .ends_with(" controlType: LEADER_CHANGE(2)"));
    let legacy = RecordLine {
        sequence: None,
        header_keys: None,
        is_valid: Some(true),
        crc: Some(42),
        control: None,
        ..record()
    };
    assert_eq!(
        legacy.text("CreateTime", false),
        "| offset: 5 CreateTime: 1700000000005 keySize: 6 valueSize: -1 isValid: true crc: 42}"
    );
}

#[test]
fn index_txn_and_snapshot_lines() {
    assert_eq!(
        IndexLine {
            offset: 12,
            position: 4096
        }
        .text(),
        "offset: 12 position: 4096"
    );
    assert_eq!(
        TimeIndexLine {
            timestamp: 1_700_000_000_011,
            offset: 11
        }
        .text(),
        "timestamp: 1700000000011 offset: 11"
    );
    assert_eq!(
        TxnLine {
            version: 0,
            producer_id: 6000,
            first_offset: 17,
            last_offset: 25,
            last_stable_offset: 26
        }
        .text(),
        "version: 0 producerId: 6000 firstOffset: 17 lastOffset: 25 lastStableOffset: 26"
    );
    let mut s = SnapshotLine {
        producer_id: 7,
        producer_epoch: 1,
        coordinator_epoch: -1,
        current_txn_first_offset: None,
        last_timestamp: 1000,
        batch: None,
    };
    assert_eq!(
        s.text(),
        "producerId: 7 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: 1000 "
    );
    s.current_txn_first_offset = Some(17);
    s.batch = Some(SnapshotBatchLine {
        first_sequence: 0,
        last_sequence: 4,
        last_offset: 9,
        offset_delta: 4,
        timestamp: 1000,
    });
    assert_eq!(
        s.text(),
        "producerId: 7 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong[17] lastTimestamp: 1000 \
         firstSequence: 0 lastSequence: 4 lastOffset: 9 offsetDelta: 4 timestamp: 1000"
    );
}
