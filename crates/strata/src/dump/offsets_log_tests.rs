//! `--offsets-decoder` texts for keys and values written by hand from
//! Kafka's schemas, tombstones, unknown types and undecodable records.

use super::*;

/// ConsumerGroupMetadataKey (type 3) for group "g".
const METADATA_KEY: &[u8] = &[0x00, 0x03, 0x00, 0x01, b'g'];
/// ConsumerGroupMetadataValue v0: epoch 10, no tagged fields.
const EPOCH_10: &[u8] = &[0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00];

#[test]
fn decoded_record_texts_and_json() {
    let r = decode(0, Some(METADATA_KEY), Some(EPOCH_10)).unwrap();
    assert_eq!(
        r.texts(),
        (
            r#"{"type":"3","data":{"groupId":"g"}}"#.to_owned(),
            Some(r#"{"version":"0","data":{"epoch":10}}"#.to_owned())
        )
    );
    assert_eq!(r.record_type, 3);
    assert!(!r.tombstone);
    assert_eq!(r.key.as_ref().unwrap()["data"]["groupId"], "g");
    assert_eq!(r.value.as_ref().unwrap()["data"]["epoch"], 10);
}

#[test]
fn tombstones_print_delete() {
    let r = decode(4, Some(METADATA_KEY), None).unwrap();
    assert!(r.tombstone);
    assert_eq!(r.value, None);
    assert_eq!(r.texts().1.as_deref(), Some("<DELETE>"));
}

#[test]
fn unknown_types_are_kafkas_skip_line() {
    // Type 9 is a share-group record (Kafka 4.0), not decoded here.
    let r = decode(12, Some(&[0x00, 0x09, 0x00, 0x01, b'g']), Some(b"x")).unwrap();
    assert_eq!(
        r.texts(),
        (
            "Unknown record type 9 at offset 12, skipping.".to_owned(),
            None
        )
    );
    assert_eq!((r.record_type, r.key.is_none()), (9, true));
}

#[test]
fn undecodable_records_are_errors_with_kafkas_text() {
    let e = decode(13, Some(METADATA_KEY), Some(&[0x00, 0x00, 0x00])).unwrap_err();
    let text = e.key_text().unwrap();
    assert!(
        text.starts_with("Error at offset 13, skipping. ConsumerGroupMetadataValue truncated"),
        "{text}"
    );
    let e = decode(5, None, Some(EPOCH_10)).unwrap_err();
    assert_eq!(e.key_text(), None);
    assert_eq!(
        e.to_string(),
        "Failed to decode message at offset 5 using offset topic decoder (message had a missing key)"
    );
    assert!(decode(6, Some(&[0x00]), None).is_err());
}
