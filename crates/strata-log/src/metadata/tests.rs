//! The metadata files against texts computed by hand from Kafka's formats.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use uuid::Uuid;

use super::properties::{java_date_utc, parse};
use super::*;

fn counting() -> Uuid {
    Uuid::from_bytes([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15])
}

#[test]
fn uuid_strings_are_kafkas() {
    // base64("000102…0f") = "AAECAwQFBgcICQoLDA0ODw==", URL-safe, unpadded.
    assert_eq!(uuid_to_kafka_string(&counting()), "AAECAwQFBgcICQoLDA0ODw");
    // Kafka's METADATA_TOPIC_ID = Uuid(0, 1).
    assert_eq!(
        uuid_to_kafka_string(&Uuid::from_u64_pair(0, 1)),
        "AAAAAAAAAAAAAAAAAAAAAQ"
    );
    // 0xff bytes need the URL-safe alphabet ('_' for '/').
    let ones = Uuid::from_bytes([0xff; 16]);
    assert_eq!(uuid_to_kafka_string(&ones), format!("{}w", "_".repeat(21)));
    let dns = Uuid::parse_str("6ba7b810-9dad-11d1-80b4-00c04fd430c8").unwrap();
    assert_eq!(uuid_to_kafka_string(&dns), "a6e4EJ2tEdGAtADAT9QwyA");
    for id in [counting(), ones, dns, Uuid::nil()] {
        assert_eq!(uuid_from_kafka_string(&uuid_to_kafka_string(&id)), Ok(id));
    }
    // Java's decoder also takes the padded form.
    assert_eq!(
        uuid_from_kafka_string("AAECAwQFBgcICQoLDA0ODw=="),
        Ok(counting())
    );
}

#[test]
fn bad_uuid_strings() {
    let err = |s: &str| uuid_from_kafka_string(s).unwrap_err();
    assert_eq!(err(&"A".repeat(25)), UuidError::TooLong { len: 25 });
    assert_eq!(err("AAECAwQFBgcICQoLDA0OD+"), UuidError::InvalidBase64);
    assert_eq!(err("AAECAwQFBgcICQoLDA0ODw="), UuidError::InvalidBase64);
    assert_eq!(err("AAECAwQFBgcICQoLDA0ODw=A"), UuidError::InvalidBase64);
    assert_eq!(err("AAECAwQFBgcICQoLDA0OD"), UuidError::InvalidBase64);
    assert_eq!(
        err("AAECAwQFBgcICQoLDA0O"),
        UuidError::WrongLength { bytes: 15 }
    );
    assert_eq!(err(""), UuidError::WrongLength { bytes: 0 });
}

#[test]
fn partition_metadata_round_trip_matches_kafka_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let meta = PartitionMetadata::new(counting());
    meta.write(&crate::fs::StdFs, dir.path()).unwrap();
    let path = dir.path().join("partition.metadata");
    assert_eq!(
        fs::read(&path).unwrap(),
        b"version: 0\ntopic_id: AAECAwQFBgcICQoLDA0ODw"
    );
    assert_eq!(PartitionMetadata::read(dir.path()).unwrap(), meta);
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["partition.metadata"], "no .tmp left");
}

fn parse_meta(text: &str) -> Result<PartitionMetadata, MetadataError> {
    PartitionMetadata::parse(text, Path::new("p/partition.metadata"))
}

#[test]
fn partition_metadata_reader_follows_kafka() {
    let id = "AAECAwQFBgcICQoLDA0ODw";
    // Any whitespace run after the colon; a newer version; CRLF; trailing
    // newline; the key names are not checked.
    for text in [
        format!("version:\t0\ntopic_id:   {id}\n"),
        format!("version: 3\r\ntopic_id: {id}"),
        format!("v: 0\nid: {id}"),
    ] {
        assert_eq!(parse_meta(&text).unwrap().topic_id, counting(), "{text:?}");
    }
    let e = |text: &str| parse_meta(text).unwrap_err();
    assert!(matches!(
        e(""),
        MetadataError::MissingLine { line_number: 1, .. }
    ));
    assert!(matches!(
        e("version: 0"),
        MetadataError::MissingLine { line_number: 2, .. }
    ));
    assert!(matches!(
        e(&format!("version:0\ntopic_id: {id}")),
        MetadataError::MalformedLine { line_number: 1, .. }
    ));
    assert!(matches!(
        e(&format!("version: x\ntopic_id: {id}")),
        MetadataError::MalformedLine { line_number: 1, .. }
    ));
    assert!(matches!(
        e(&format!("version: -1\ntopic_id: {id}")),
        MetadataError::UnsupportedVersion { version: -1, .. }
    ));
    assert!(matches!(
        e(&format!("version: 0\ntopic_id:{id}")),
        MetadataError::MalformedLine { line_number: 2, .. }
    ));
    assert!(matches!(
        e("version: 0\ntopic_id: AAECAwQF"),
        MetadataError::InvalidUuid {
            reason: UuidError::WrongLength { bytes: 6 },
            ..
        }
    ));
    assert!(matches!(
        e("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA"),
        MetadataError::ZeroTopicId { .. }
    ));
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        PartitionMetadata::read(dir.path()),
        Err(MetadataError::Io { .. })
    ));
}

#[test]
fn java_dates() {
    assert_eq!(
        java_date_utc(1_729_827_181_000),
        "Fri Oct 25 03:33:01 UTC 2024"
    );
    assert_eq!(java_date_utc(0), "Thu Jan 01 00:00:00 UTC 1970");
    assert_eq!(java_date_utc(-1000), "Wed Dec 31 23:59:59 UTC 1969");
    assert_eq!(
        java_date_utc(951_825_600_000),
        "Tue Feb 29 12:00:00 UTC 2000"
    );
}

#[test]
fn meta_properties_text_and_round_trip() {
    let dir_id = Uuid::parse_str("6ba7b810-9dad-11d1-80b4-00c04fd430c8").unwrap();
    let meta = MetaProperties::kraft("MkU3OEVBNTcwNTJENDM2Qg", 1, Some(dir_id));
    assert_eq!(
        meta.encode(1_729_827_181_000),
        "#\n#Fri Oct 25 03:33:01 UTC 2024\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\n\
         node.id=1\ndirectory.id=a6e4EJ2tEdGAtADAT9QwyA\n"
    );
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(MetaProperties::read(dir.path()).unwrap(), None);
    meta.write(&crate::fs::StdFs, dir.path()).unwrap();
    assert_eq!(MetaProperties::read(dir.path()).unwrap(), Some(meta));
    assert!(!dir.path().join("meta.properties.tmp").exists());
    // A v0 file as ZooKeeper-mode Kafka wrote it, keys in any order.
    fs::write(
        dir.path().join("meta.properties"),
        "#\n#Tue Jan 02 10:00:00 UTC 2024\nbroker.id=7\nversion=0\ncluster.id=abc\n",
    )
    .unwrap();
    let v0 = MetaProperties::read(dir.path()).unwrap().unwrap();
    assert_eq!(v0.version, MetaPropertiesVersion::V0);
    assert_eq!(
        (v0.node_id, v0.cluster_id.as_deref()),
        (Some(7), Some("abc"))
    );
    assert!(v0.encode(0).contains("\nbroker.id=7\n"));
}

fn meta_from(text: &str) -> Result<MetaProperties, MetadataError> {
    MetaProperties::from_properties(
        &parse(text.as_bytes(), Path::new("m")).unwrap(),
        Path::new("meta.properties"),
    )
}

#[test]
fn meta_properties_validation() {
    // Version defaults to 0, where ids are optional.
    assert_eq!(meta_from("").unwrap().version, MetaPropertiesVersion::V0);
    assert_eq!(
        meta_from("version= 1 \nnode.id=2\ncluster.id=c")
            .unwrap()
            .node_id,
        Some(2)
    );
    assert!(matches!(
        meta_from("version=2"),
        Err(MetadataError::InvalidProperty { key: "version", .. })
    ));
    assert!(matches!(
        meta_from("version=1\ncluster.id=c"),
        Err(MetadataError::MissingProperty { key: "node.id", .. })
    ));
    assert!(matches!(
        meta_from("version=1\nnode.id=1"),
        Err(MetadataError::MissingProperty {
            key: "cluster.id",
            ..
        })
    ));
    assert!(matches!(
        meta_from("version=1\nnode.id=one\ncluster.id=c"),
        Err(MetadataError::InvalidProperty { key: "node.id", .. })
    ));
    assert!(matches!(
        meta_from("broker.id=x"),
        Err(MetadataError::InvalidProperty {
            key: "broker.id",
            ..
        })
    ));
    assert!(matches!(
        meta_from("version=1\nnode.id=1\ncluster.id=c\ndirectory.id=zz"),
        Err(MetadataError::InvalidUuid { .. })
    ));
}

#[test]
fn java_properties_syntax() {
    let p = parse(
        b"# comment\n! also comment\n\n  a = 1\nb:2\nc 3\nd=x\\\n    y\ne=\\u0041\\t\\=\\\\\nf\ng=caf\xe9\n",
        Path::new("m"),
    )
    .unwrap();
    let expect: BTreeMap<String, String> = [
        ("a", "1"),
        ("b", "2"),
        ("c", "3"),
        ("d", "xy"),
        ("e", "A\t=\\"),
        ("f", ""),
        ("g", "caf\u{e9}"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(p, expect);
    // What we write with escapes reads back unchanged.
    let odd = MetaProperties {
        version: MetaPropertiesVersion::V1,
        cluster_id: Some(" a=b:c#d!e\\f\u{e9}\u{1F600}".into()),
        node_id: Some(3),
        directory_id: None,
    };
    let text = odd.encode(0);
    assert!(text.is_ascii(), "{text}");
    let back = MetaProperties::from_properties(
        &parse(text.as_bytes(), Path::new("m")).unwrap(),
        Path::new("m"),
    )
    .unwrap();
    assert_eq!(back, odd);
}

#[test]
fn clean_shutdown_marker_lifecycle() {
    let dir = tempfile::tempdir().unwrap();
    assert!(!clean_shutdown_marker_exists(dir.path()));
    assert!(!take_clean_shutdown_marker(&crate::fs::StdFs, dir.path()).unwrap());
    write_clean_shutdown_marker(&crate::fs::StdFs, dir.path(), 123).unwrap();
    let path = dir.path().join(".kafka_cleanshutdown");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        r#"{"version":0,"brokerEpoch":123}"#
    );
    assert_eq!(read_clean_shutdown_marker(dir.path()), Some(123));
    assert!(take_clean_shutdown_marker(&crate::fs::StdFs, dir.path()).unwrap());
    assert!(!path.exists(), "deleted at startup");
    assert!(!take_clean_shutdown_marker(&crate::fs::StdFs, dir.path()).unwrap());
    write_clean_shutdown_marker(&crate::fs::StdFs, dir.path(), -1).unwrap();
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        r#"{"version":0,"brokerEpoch":-1}"#
    );
    // Unknown fields are ignored; garbage reads as unknown but still counts.
    fs::write(&path, r#"{"brokerEpoch":9,"future":true,"version":1}"#).unwrap();
    assert_eq!(read_clean_shutdown_marker(dir.path()), Some(9));
    fs::write(&path, "garbage").unwrap();
    assert_eq!(read_clean_shutdown_marker(dir.path()), None);
    assert!(take_clean_shutdown_marker(&crate::fs::StdFs, dir.path()).unwrap());
}
