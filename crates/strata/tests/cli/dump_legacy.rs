//! `strata log dump` on legacy (magic 0 and 1) entries, plain and compressed:
//! Kafka prints them as `offset: N position: ...` batch lines and, deep,
//! `| offset: ... isValid: true crc: C}` record lines (stray brace included).

use crate::common::run;
use strata_log::batch::compression::compress;
use strata_log::batch::Compression;

/// One legacy entry: `offset i64 | size i32 | crc u32 | magic | attributes | [timestamp] | key | value`.
fn entry(
    offset: i64,
    magic: u8,
    attributes: u8,
    ts: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Vec<u8> {
    let mut body = vec![magic, attributes];
    if magic == 1 {
        body.extend_from_slice(&ts.to_be_bytes());
    }
    for field in [key, value] {
        match field {
            Some(b) => {
                body.extend_from_slice(&(b.len() as i32).to_be_bytes());
                body.extend_from_slice(b);
            }
            None => body.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    let crc = crc32fast::hash(&body);
    let mut out = offset.to_be_bytes().to_vec();
    out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&body);
    out
}

fn crc_of(e: &[u8]) -> u32 {
    u32::from_be_bytes(e[12..16].try_into().unwrap())
}

#[test]
fn plain_v0_and_v1_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("00000000000000000000.log");
    let e0 = entry(0, 0, 0, 0, Some(b"k0"), Some(b"v0"));
    let e1 = entry(1, 1, 0, 1000, None, Some(b"v1"));
    let mut bytes = e0.clone();
    bytes.extend(&e1);
    std::fs::write(&path, &bytes).unwrap();
    let (code, out, err) = run([
        "log",
        "dump",
        "--print-data-log",
        "--files",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let expected = format!(
        "Dumping {}\nLog starting offset: 0\n\
         offset: 0 position: 0 NoTimestampType: -1 size: {} magic: 0 compresscodec: none crc: {} isvalid: true\n\
         | offset: 0 NoTimestampType: -1 keySize: 2 valueSize: 2 isValid: true crc: {}}} key: k0 payload: v0\n\
         offset: 1 position: {} CreateTime: 1000 size: {} magic: 1 compresscodec: none crc: {} isvalid: true\n\
         | offset: 1 CreateTime: 1000 keySize: -1 valueSize: 2 isValid: true crc: {}}} payload: v1\n",
        path.display(),
        e0.len(),
        crc_of(&e0),
        crc_of(&e0),
        e0.len(),
        e1.len(),
        crc_of(&e1),
        crc_of(&e1),
    );
    assert_eq!(out, expected);
}

#[test]
fn compressed_v1_wrapper_yields_inner_records() {
    // Inner offsets are relative (0..n-1); the wrapper carries the last absolute offset.
    let mut inner = Vec::new();
    for i in 0..3i64 {
        inner.extend(entry(
            i,
            1,
            0,
            2000 + i,
            Some(format!("k{i}").as_bytes()),
            Some(b"v"),
        ));
    }
    let value = compress(Compression::Gzip, &inner);
    let wrapper = entry(12, 1, 1, 2002, None, Some(&value));
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("00000000000000000010.log");
    std::fs::write(&path, &wrapper).unwrap();
    let (code, out, err) = run([
        "log",
        "dump",
        "--deep-iteration",
        "--files",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[2],
        format!(
            "offset: 12 position: 0 CreateTime: 2002 size: {} magic: 1 compresscodec: gzip crc: {} isvalid: true",
            wrapper.len(),
            crc_of(&wrapper)
        )
    );
    assert_eq!(lines.len(), 6);
    for (i, line) in lines[3..].iter().enumerate() {
        let prefix = format!(
            "| offset: {} CreateTime: {} keySize: 2 valueSize: 1 isValid: true crc: ",
            10 + i,
            2000 + i
        );
        assert!(line.starts_with(&prefix) && line.ends_with('}'), "{line}");
    }

    // The same wrapper with a flipped byte fails its CRC.
    let mut bad = wrapper.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    std::fs::write(&path, &bad).unwrap();
    let (code, out, _) = run(["log", "dump", "--files", path.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.lines().nth(2).unwrap().ends_with("isvalid: false"),
        "{out}"
    );
}
