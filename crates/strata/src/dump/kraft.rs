//! KRaft control records (`SnapshotHeader`, `SnapshotFooter`, `KRaftVersion`,
//! `KRaftVoters`) as `kafka-dump-log` prints them: the record name and the
//! message as Kafka's generated JSON converter writes it (fields in schema
//! order, no spaces).
//!
//! Format of the record values (flexible version 0 messages, big-endian,
//! `uvarint` = unsigned LEB128, compact lengths are `n + 1`, each struct ends
//! with tagged fields `uvarint count, (uvarint tag, uvarint size, bytes)*`):
//!
//! ```text
//! SnapshotHeaderRecord  version i16 | lastContainedLogTimestamp i64 | tags
//! SnapshotFooterRecord  version i16 | tags
//! KRaftVersionRecord    version i16 | kRaftVersion i16 | tags
//! VotersRecord          version i16 | voters compact[
//!                         voterId i32 | voterDirectoryId uuid(16) |
//!                         endpoints compact[name cstring | host cstring | port u16 | tags] |
//!                         kRaftVersionFeature { min i16 | max i16 | tags } | tags ] | tags
//! ```

use strata_log::batch::ControlRecordType;
use thiserror::Error;

/// Why a KRaft control record value could not be read.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum KraftError {
    #[error("value ends at byte {at} while reading {field}")]
    Truncated { at: usize, field: &'static str },
    #[error("invalid length {len} for {field} at byte {at}")]
    BadLength {
        at: usize,
        field: &'static str,
        len: u64,
    },
    #[error("{field} at byte {at} is not UTF-8")]
    NotUtf8 { at: usize, field: &'static str },
    #[error("{bytes} unread bytes after the message")]
    Trailing { bytes: usize },
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], KraftError> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.b.len());
        let end = end.ok_or(KraftError::Truncated { at: self.at, field })?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn i16(&mut self, field: &'static str) -> Result<i16, KraftError> {
        Ok(i16::from_be_bytes(
            self.take(2, field)?.try_into().expect("2 bytes"),
        ))
    }
    fn u16(&mut self, field: &'static str) -> Result<u16, KraftError> {
        Ok(u16::from_be_bytes(
            self.take(2, field)?.try_into().expect("2 bytes"),
        ))
    }
    fn i32(&mut self, field: &'static str) -> Result<i32, KraftError> {
        Ok(i32::from_be_bytes(
            self.take(4, field)?.try_into().expect("4 bytes"),
        ))
    }
    fn i64(&mut self, field: &'static str) -> Result<i64, KraftError> {
        Ok(i64::from_be_bytes(
            self.take(8, field)?.try_into().expect("8 bytes"),
        ))
    }
    fn uvarint(&mut self, field: &'static str) -> Result<u64, KraftError> {
        let mut v = 0u64;
        for shift in (0..35).step_by(7) {
            let b = self.take(1, field)?[0];
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(KraftError::BadLength {
            at: self.at,
            field,
            len: v,
        })
    }
    /// A compact array or string length (`n + 1`, 0 = null, read as empty).
    fn compact_len(&mut self, field: &'static str) -> Result<usize, KraftError> {
        let at = self.at;
        let raw = self.uvarint(field)?;
        let len = raw.saturating_sub(1);
        if len > (self.b.len() - self.at) as u64 {
            return Err(KraftError::BadLength { at, field, len });
        }
        Ok(len as usize)
    }
    fn string(&mut self, field: &'static str) -> Result<String, KraftError> {
        let len = self.compact_len(field)?;
        let at = self.at;
        let bytes = self.take(len, field)?;
        let s = std::str::from_utf8(bytes).map_err(|_| KraftError::NotUtf8 { at, field })?;
        Ok(serde_json::Value::String(s.to_owned()).to_string())
    }
    /// Skip a tagged-field section (unknown tags are ignored, as Kafka does).
    fn tags(&mut self) -> Result<(), KraftError> {
        let count = self.uvarint("tagged fields")?;
        for _ in 0..count {
            self.uvarint("tag")?;
            let size = self.uvarint("tag size")?;
            let size = usize::try_from(size).map_err(|_| KraftError::BadLength {
                at: self.at,
                field: "tag size",
                len: size,
            })?;
            self.take(size, "tagged field")?;
        }
        Ok(())
    }
    fn finish(self) -> Result<(), KraftError> {
        match self.b.len() - self.at {
            0 => Ok(()),
            bytes => Err(KraftError::Trailing { bytes }),
        }
    }
}

/// Kafka's `Uuid.toString()`: URL-safe base64 without padding.
fn uuid_string(bytes: &[u8]) -> String {
    let id = uuid::Uuid::from_slice(bytes).unwrap_or_default();
    strata_log::uuid_to_kafka_string(&id)
}

fn voters(r: &mut Reader<'_>) -> Result<String, KraftError> {
    let version = r.i16("version")?;
    let n = r.compact_len("voters")?;
    let mut voters = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.i32("voterId")?;
        let dir = uuid_string(r.take(16, "voterDirectoryId")?);
        let m = r.compact_len("endpoints")?;
        let mut endpoints = Vec::with_capacity(m);
        for _ in 0..m {
            let name = r.string("name")?;
            let host = r.string("host")?;
            let port = r.u16("port")?;
            r.tags()?;
            endpoints.push(format!(r#"{{"name":{name},"host":{host},"port":{port}}}"#));
        }
        let min = r.i16("minSupportedVersion")?;
        let max = r.i16("maxSupportedVersion")?;
        r.tags()?;
        r.tags()?;
        voters.push(format!(
            r#"{{"voterId":{id},"voterDirectoryId":"{dir}","endpoints":[{}],"kRaftVersionFeature":{{"minSupportedVersion":{min},"maxSupportedVersion":{max}}}}}"#,
            endpoints.join(",")
        ));
    }
    r.tags()?;
    Ok(format!(
        r#"{{"version":{version},"voters":[{}]}}"#,
        voters.join(",")
    ))
}

/// The dump label and JSON of a KRaft control record, or `None` for other
/// control types.
///
/// # Errors
/// A value that does not decode as the message its type names.
pub fn describe(
    ty: ControlRecordType,
    value: Option<&[u8]>,
) -> Option<Result<(&'static str, String), KraftError>> {
    let mut r = Reader {
        b: value.unwrap_or_default(),
        at: 0,
    };
    let (label, json) = match ty {
        ControlRecordType::SnapshotHeader => (
            "SnapshotHeader",
            (|| {
                let v = r.i16("version")?;
                let ts = r.i64("lastContainedLogTimestamp")?;
                r.tags()?;
                Ok(format!(
                    r#"{{"version":{v},"lastContainedLogTimestamp":{ts}}}"#
                ))
            })(),
        ),
        ControlRecordType::SnapshotFooter => (
            "SnapshotFooter",
            (|| {
                let v = r.i16("version")?;
                r.tags()?;
                Ok(format!(r#"{{"version":{v}}}"#))
            })(),
        ),
        ControlRecordType::KraftVersion => (
            "KRaftVersion",
            (|| {
                let v = r.i16("version")?;
                let k = r.i16("kRaftVersion")?;
                r.tags()?;
                Ok(format!(r#"{{"version":{v},"kRaftVersion":{k}}}"#))
            })(),
        ),
        ControlRecordType::KraftVoters => ("KRaftVoters", voters(&mut r)),
        _ => return None,
    };
    Some(json.and_then(|j| r.finish().map(|()| (label, j))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_footer_and_version() {
        let mut v = 0i16.to_be_bytes().to_vec();
        v.extend_from_slice(&1_700_000_000_123i64.to_be_bytes());
        v.push(0);
        assert_eq!(
            describe(ControlRecordType::SnapshotHeader, Some(&v)),
            Some(Ok((
                "SnapshotHeader",
                r#"{"version":0,"lastContainedLogTimestamp":1700000000123}"#.to_owned()
            )))
        );
        assert_eq!(
            describe(ControlRecordType::SnapshotFooter, Some(&[0, 0, 0])),
            Some(Ok(("SnapshotFooter", r#"{"version":0}"#.to_owned())))
        );
        assert_eq!(
            describe(ControlRecordType::KraftVersion, Some(&[0, 0, 0, 1, 0])),
            Some(Ok((
                "KRaftVersion",
                r#"{"version":0,"kRaftVersion":1}"#.to_owned()
            )))
        );
        assert!(describe(ControlRecordType::Commit, Some(&[])).is_none());
        assert!(matches!(
            describe(ControlRecordType::KraftVersion, Some(&[0, 0, 0])),
            Some(Err(KraftError::Truncated { at: 2, .. }))
        ));
    }

    #[test]
    fn voters() {
        let mut v = 0i16.to_be_bytes().to_vec();
        v.push(2); // one voter
        v.extend_from_slice(&3i32.to_be_bytes());
        v.extend_from_slice(&[0u8; 15]);
        v.push(1); // directory id ...01
        v.push(2); // one endpoint
        v.push(11);
        v.extend_from_slice(b"CONTROLLER");
        v.push(10);
        v.extend_from_slice(b"localhost");
        v.extend_from_slice(&9093u16.to_be_bytes());
        v.push(0); // endpoint tags
        v.extend_from_slice(&0i16.to_be_bytes());
        v.extend_from_slice(&1i16.to_be_bytes());
        v.push(0); // feature tags
        v.push(0); // voter tags
        v.push(0); // record tags
        let (label, json) = describe(ControlRecordType::KraftVoters, Some(&v))
            .unwrap()
            .unwrap();
        assert_eq!(label, "KRaftVoters");
        assert_eq!(
            json,
            r#"{"version":0,"voters":[{"voterId":3,"voterDirectoryId":"AAAAAAAAAAAAAAAAAAAAAQ","endpoints":[{"name":"CONTROLLER","host":"localhost","port":9093}],"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}"#
        );
    }
}
