//! Small identity and state files: `partition.metadata` (partition dir),
//! `meta.properties` and `.kafka_cleanshutdown` (log dir).
//!
//! Each is byte- or text-compatible with Kafka 3.9 (`PartitionMetadataFile`,
//! `MetaProperties`, `CleanShutdownFileHandler`). Topic and directory ids are
//! UUIDs written as Kafka's `Uuid.toString`: URL-safe base64 without padding,
//! 22 characters.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use thiserror::Error;
use uuid::Uuid;

use crate::format::{CLEAN_SHUTDOWN_MARKER, META_PROPERTIES, PARTITION_METADATA};
use crate::fs::{fsync_dir, write_atomically, FileSystem, OpenMode};

/// Why a string is not a Kafka base64 UUID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum UuidError {
    #[error("{len} characters is too long for a base64 UUID")]
    TooLong { len: usize },
    #[error("not URL-safe base64")]
    InvalidBase64,
    #[error("decodes to {bytes} bytes, not 16")]
    WrongLength { bytes: usize },
}

/// Errors reading or writing the metadata files. Every variant names the file.
#[derive(Debug, Error)]
pub enum MetadataError {
    #[error("I/O error on {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is not valid UTF-8")]
    InvalidUtf8 { path: PathBuf },
    #[error("malformed line {line_number} in {path}: {line:?}")]
    MalformedLine {
        path: PathBuf,
        line_number: usize,
        line: String,
    },
    #[error("line {line_number} is missing from {path}")]
    MissingLine { path: PathBuf, line_number: usize },
    #[error("unrecognized version {version} of {path}")]
    UnsupportedVersion { path: PathBuf, version: i64 },
    #[error("invalid UUID {value:?} in {path}: {reason}")]
    InvalidUuid {
        path: PathBuf,
        value: String,
        reason: UuidError,
    },
    #[error("invalid all-zero topic id in {path}")]
    ZeroTopicId { path: PathBuf },
    #[error("required property {key} is missing from {path}")]
    MissingProperty { path: PathBuf, key: &'static str },
    #[error("property {key}={value:?} in {path} is not valid")]
    InvalidProperty {
        path: PathBuf,
        key: &'static str,
        value: String,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> MetadataError + '_ {
    move |source| MetadataError::Io {
        path: path.to_path_buf(),
        source,
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Kafka's `Uuid.toString`: URL-safe base64 of the 16 bytes, no padding.
pub fn uuid_to_kafka_string(id: &Uuid) -> String {
    let bytes = id.as_bytes();
    let mut out = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(B64[(n >> (18 - 6 * i) & 0x3f) as usize] as char);
        }
    }
    out
}

/// Kafka's `Uuid.fromString`: at most 24 characters of URL-safe base64
/// (padding optional, as Java's decoder allows) decoding to 16 bytes.
///
/// # Errors
///
/// The [`UuidError`].
pub fn uuid_from_kafka_string(s: &str) -> Result<Uuid, UuidError> {
    if s.len() > 24 {
        return Err(UuidError::TooLong { len: s.len() });
    }
    let bytes = decode_base64_url(s.as_bytes()).ok_or(UuidError::InvalidBase64)?;
    let array: [u8; 16] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| UuidError::WrongLength { bytes: bytes.len() })?;
    Ok(Uuid::from_bytes(array))
}

/// Java `Base64.getUrlDecoder()` rules: optional correct padding, nothing
/// after it, a final group of one character is an error.
fn decode_base64_url(s: &[u8]) -> Option<Vec<u8>> {
    let data_len = s.iter().position(|&c| c == b'=').unwrap_or(s.len());
    let (data, padding) = s.split_at(data_len);
    let rem = data.len() % 4;
    let padding_ok = match (padding.len(), rem) {
        (0, 1) => false,
        (0, _) => true,
        (2, 2) => padding == b"==",
        (1, 3) => true,
        _ => false,
    };
    if !padding_ok {
        return None;
    }
    let sextet = |c: u8| B64.iter().position(|&b| b == c).map(|p| p as u32);
    let mut out = Vec::with_capacity(data.len() * 3 / 4);
    for chunk in data.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= sextet(c)? << (18 - 6 * i);
        }
        let produced = chunk.len() - 1;
        out.extend_from_slice(&n.to_be_bytes()[1..1 + produced]);
    }
    Some(out)
}

/// The topic id of a partition directory.
///
/// Format: `partition.metadata`, UTF-8, exactly these bytes with no final
/// newline:
///
/// ```text
/// version: 0\ntopic_id: <22-char URL-safe base64 topic UUID>
/// ```
///
/// Readers split each line on `:` followed by whitespace, accept any
/// version `>= 0` and reject an all-zero id. Written atomically.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionMetadata {
    pub topic_id: Uuid,
}

impl PartitionMetadata {
    /// The version this writes.
    pub const VERSION: i32 = 0;

    pub fn new(topic_id: Uuid) -> PartitionMetadata {
        PartitionMetadata { topic_id }
    }

    /// The file content.
    pub fn encode(&self) -> String {
        format!(
            "version: {}\ntopic_id: {}",
            Self::VERSION,
            uuid_to_kafka_string(&self.topic_id)
        )
    }

    /// Parse file content (Kafka `PartitionMetadataReadBuffer`); `path` is
    /// for errors only.
    ///
    /// # Errors
    ///
    /// The [`MetadataError`] describing the first problem.
    pub fn parse(text: &str, path: &Path) -> Result<PartitionMetadata, MetadataError> {
        let lines = crate::checkpoint::java_lines(text);
        let line = |n: usize| {
            lines.get(n).copied().ok_or(MetadataError::MissingLine {
                path: path.to_path_buf(),
                line_number: n + 1,
            })
        };
        let malformed = |n: usize, l: &str| MetadataError::MalformedLine {
            path: path.to_path_buf(),
            line_number: n + 1,
            line: l.to_owned(),
        };
        let version_line = line(0)?;
        let version = match split_colon_whitespace(version_line).as_slice() {
            [_, v] => crate::checkpoint::parse_java_int::<i32>(v)
                .ok_or_else(|| malformed(0, version_line))?,
            _ => return Err(malformed(0, version_line)),
        };
        if version < Self::VERSION {
            return Err(MetadataError::UnsupportedVersion {
                path: path.to_path_buf(),
                version: version as i64,
            });
        }
        let id_line = line(1)?;
        let id = match split_colon_whitespace(id_line).as_slice() {
            [_, id] => uuid_from_kafka_string(id).map_err(|reason| MetadataError::InvalidUuid {
                path: path.to_path_buf(),
                value: (*id).to_owned(),
                reason,
            })?,
            _ => return Err(malformed(1, id_line)),
        };
        if id.is_nil() {
            return Err(MetadataError::ZeroTopicId {
                path: path.to_path_buf(),
            });
        }
        Ok(PartitionMetadata { topic_id: id })
    }

    /// Read `<dir>/partition.metadata`.
    ///
    /// # Errors
    ///
    /// I/O (including a missing file) or parse errors.
    pub fn read(dir: &Path) -> Result<PartitionMetadata, MetadataError> {
        let path = dir.join(PARTITION_METADATA);
        let bytes = fs::read(&path).map_err(io_err(&path))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| MetadataError::InvalidUtf8 { path: path.clone() })?;
        PartitionMetadata::parse(&text, &path)
    }

    /// Write `<dir>/partition.metadata` atomically.
    ///
    /// # Errors
    ///
    /// I/O errors.
    pub fn write(&self, fs: &dyn FileSystem, dir: &Path) -> Result<(), MetadataError> {
        let path = dir.join(PARTITION_METADATA);
        write_atomically(fs, &path, self.encode().as_bytes()).map_err(io_err(&path))
    }
}

/// `Pattern.compile(":\\s+").split(line)`: fields separated by a colon and
/// at least one whitespace character; trailing empty fields dropped.
fn split_colon_whitespace(line: &str) -> Vec<&str> {
    let ws = crate::codec::java_text::is_java_whitespace;
    let mut fields = Vec::new();
    let (mut start, mut i) = (0, 0);
    let bytes = line.as_bytes();
    while i < bytes.len() {
        if bytes[i] == b':' && line[i + 1..].starts_with(ws) {
            fields.push(&line[start..i]);
            i += 1;
            while line[i..].starts_with(ws) {
                i += 1;
            }
            start = i;
        } else {
            i += 1;
        }
    }
    fields.push(&line[start..]);
    while fields.len() > 1 && fields.last().is_some_and(|f| f.is_empty()) {
        fields.pop();
    }
    fields
}

mod properties;

pub use properties::{MetaProperties, MetaPropertiesVersion};

/// Contents of `.kafka_cleanshutdown`: `{"version":0,"brokerEpoch":N}`.
pub fn clean_shutdown_json(broker_epoch: i64) -> String {
    format!("{{\"version\":0,\"brokerEpoch\":{broker_epoch}}}")
}

/// Write `<log_dir>/.kafka_cleanshutdown` (directly, not via a temporary
/// file, as Kafka does), fsync it, and fsync the directory so the marker's
/// existence is durable. `broker_epoch` is -1 when unknown.
///
/// # Errors
///
/// I/O errors.
pub fn write_clean_shutdown_marker(
    fs: &dyn FileSystem,
    log_dir: &Path,
    broker_epoch: i64,
) -> io::Result<()> {
    let path = log_dir.join(CLEAN_SHUTDOWN_MARKER);
    let file = fs.open(&path, OpenMode::CreateTruncate)?;
    fs.write_at(
        &file,
        &path,
        clean_shutdown_json(broker_epoch).as_bytes(),
        0,
    )?;
    fs.sync(&file, &path)?;
    fsync_dir(fs, log_dir)
}

/// Whether `<log_dir>/.kafka_cleanshutdown` exists.
#[cfg(test)]
pub fn clean_shutdown_marker_exists(log_dir: &Path) -> bool {
    log_dir.join(CLEAN_SHUTDOWN_MARKER).exists()
}

/// The broker epoch recorded in the marker, if it exists and parses
/// (unknown fields are ignored; any problem gives `None`, as in Kafka).
#[cfg(test)]
pub fn read_clean_shutdown_marker(log_dir: &Path) -> Option<i64> {
    let text = fs::read(log_dir.join(CLEAN_SHUTDOWN_MARKER)).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&text).ok()?;
    value.get("brokerEpoch")?.as_i64()
}

/// At startup: if the marker exists, delete it now (so a crash while
/// loading forces recovery next time), fsync the directory and return
/// `true`: the directory was shut down cleanly.
///
/// # Errors
///
/// I/O errors deleting the file or syncing the directory.
pub fn take_clean_shutdown_marker(fs: &dyn FileSystem, log_dir: &Path) -> io::Result<bool> {
    match fs.remove_file(&log_dir.join(CLEAN_SHUTDOWN_MARKER)) {
        Ok(()) => {
            fsync_dir(fs, log_dir)?;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// `meta.properties` path in `log_dir`.
pub fn meta_properties_path(log_dir: &Path) -> PathBuf {
    log_dir.join(META_PROPERTIES)
}

/// Read a Java properties file into a map (ISO-8859-1, as Kafka's
/// `PropertiesUtils.readPropertiesFile` reads it).
///
/// # Errors
///
/// I/O errors.
pub fn read_properties_file(path: &Path) -> Result<BTreeMap<String, String>, MetadataError> {
    let bytes = fs::read(path).map_err(io_err(path))?;
    properties::parse(&bytes, path)
}

/// `SystemTime` as milliseconds since the Unix epoch.
pub(crate) fn system_time_ms(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    }
}

#[cfg(test)]
mod tests;
