//! `meta.properties` (Kafka `MetaProperties`) and the Java properties text
//! format it is stored in.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use uuid::Uuid;

use super::{
    io_err, read_properties_file, system_time_ms, uuid_from_kafka_string, uuid_to_kafka_string,
    MetadataError,
};
use crate::checkpoint::parse_java_int;
use crate::format::META_PROPERTIES;
use crate::fs::{write_atomically, FileSystem};

const VERSION_PROP: &str = "version";
const CLUSTER_ID_PROP: &str = "cluster.id";
const BROKER_ID_PROP: &str = "broker.id";
const NODE_ID_PROP: &str = "node.id";
const DIRECTORY_ID_PROP: &str = "directory.id";

/// `meta.properties` version: 0 for ZooKeeper mode (`broker.id`), 1 for
/// KRaft (`node.id`, `cluster.id` required).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaPropertiesVersion {
    V0,
    V1,
}

impl MetaPropertiesVersion {
    pub fn number(self) -> i32 {
        match self {
            MetaPropertiesVersion::V0 => 0,
            MetaPropertiesVersion::V1 => 1,
        }
    }
}

/// A log directory's identity.
///
/// Format: a Java `Properties.store` file: a `#` line, a `#<date>` line
/// (`Date.toString`, e.g. `#Fri Oct 25 03:33:01 UTC 2024`), then
/// `key=value` lines in no particular order:
///
/// ```text
/// version=1                         1 = KRaft, 0 = ZooKeeper
/// cluster.id=<string>               required for version 1
/// node.id=<int>                     version 1 (broker.id in version 0)
/// directory.id=<base64 UUID>        optional
/// ```
///
/// Written atomically (tmp, fsync, rename, fsync dir).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaProperties {
    pub version: MetaPropertiesVersion,
    pub cluster_id: Option<String>,
    pub node_id: Option<i32>,
    pub directory_id: Option<Uuid>,
}

impl MetaProperties {
    /// A KRaft (version 1) identity.
    pub fn kraft(cluster_id: impl Into<String>, node_id: i32, directory_id: Option<Uuid>) -> Self {
        MetaProperties {
            version: MetaPropertiesVersion::V1,
            cluster_id: Some(cluster_id.into()),
            node_id: Some(node_id),
            directory_id,
        }
    }

    /// Interpret loaded properties as Kafka's `MetaProperties.Builder` does.
    ///
    /// # Errors
    ///
    /// Unknown version, a missing or non-integer id, a missing `cluster.id`
    /// for version 1, or an invalid `directory.id`.
    pub fn from_properties(
        props: &BTreeMap<String, String>,
        path: &Path,
    ) -> Result<Self, MetadataError> {
        let invalid = |key: &'static str, value: &str| MetadataError::InvalidProperty {
            path: path.to_path_buf(),
            key,
            value: value.to_owned(),
        };
        let version = match props.get(VERSION_PROP) {
            None => MetaPropertiesVersion::V0,
            Some(v) => match parse_java_int::<i32>(v.trim_matches(|c: char| c <= ' ')) {
                Some(0) => MetaPropertiesVersion::V0,
                Some(1) => MetaPropertiesVersion::V1,
                _ => return Err(invalid(VERSION_PROP, v)),
            },
        };
        let int_prop = |key: &'static str| -> Result<Option<i32>, MetadataError> {
            props
                .get(key)
                .map(|v| parse_java_int(v).ok_or_else(|| invalid(key, v)))
                .transpose()
        };
        let node_id = match version {
            MetaPropertiesVersion::V0 => int_prop(BROKER_ID_PROP)?,
            MetaPropertiesVersion::V1 => Some(int_prop(NODE_ID_PROP)?.ok_or(
                MetadataError::MissingProperty {
                    path: path.to_path_buf(),
                    key: NODE_ID_PROP,
                },
            )?),
        };
        let cluster_id = props.get(CLUSTER_ID_PROP).cloned();
        if version == MetaPropertiesVersion::V1 && cluster_id.is_none() {
            return Err(MetadataError::MissingProperty {
                path: path.to_path_buf(),
                key: CLUSTER_ID_PROP,
            });
        }
        let directory_id = props
            .get(DIRECTORY_ID_PROP)
            .map(|v| {
                uuid_from_kafka_string(v).map_err(|reason| MetadataError::InvalidUuid {
                    path: path.to_path_buf(),
                    value: v.clone(),
                    reason,
                })
            })
            .transpose()?;
        Ok(MetaProperties {
            version,
            cluster_id,
            node_id,
            directory_id,
        })
    }

    /// The properties Kafka's `toProperties` produces, in a fixed order.
    pub fn to_properties(&self) -> Vec<(&'static str, String)> {
        let mut props = vec![(VERSION_PROP, self.version.number().to_string())];
        if let Some(c) = &self.cluster_id {
            props.push((CLUSTER_ID_PROP, c.clone()));
        }
        let id_key = match self.version {
            MetaPropertiesVersion::V0 => BROKER_ID_PROP,
            MetaPropertiesVersion::V1 => NODE_ID_PROP,
        };
        if let Some(id) = self.node_id {
            props.push((id_key, id.to_string()));
        }
        if let Some(d) = &self.directory_id {
            props.push((DIRECTORY_ID_PROP, uuid_to_kafka_string(d)));
        }
        props
    }

    /// The file text, dated `unix_ms` in the comment line.
    pub fn encode(&self, unix_ms: i64) -> String {
        let mut out = format!("#\n#{}\n", java_date_utc(unix_ms));
        for (key, value) in self.to_properties() {
            out.push_str(&escape(key, true));
            out.push('=');
            out.push_str(&escape(&value, false));
            out.push('\n');
        }
        out
    }

    /// Read `<log_dir>/meta.properties`; `None` if it does not exist.
    ///
    /// # Errors
    ///
    /// I/O errors other than "not found"; see [`Self::from_properties`].
    pub fn read(log_dir: &Path) -> Result<Option<Self>, MetadataError> {
        let path = log_dir.join(META_PROPERTIES);
        match read_properties_file(&path) {
            Ok(props) => MetaProperties::from_properties(&props, &path).map(Some),
            Err(MetadataError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Write `<log_dir>/meta.properties` atomically, dated now.
    ///
    /// # Errors
    ///
    /// I/O errors.
    pub fn write(&self, fs: &dyn FileSystem, log_dir: &Path) -> Result<(), MetadataError> {
        let path = log_dir.join(META_PROPERTIES);
        let text = self.encode(system_time_ms(SystemTime::now()));
        write_atomically(fs, &path, text.as_bytes()).map_err(io_err(&path))
    }
}

/// Java `Properties.saveConvert` with Unicode escaping: the output is ASCII
/// and reads back identically with either of Java's `load` methods.
fn escape(s: &str, is_key: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.chars().enumerate() {
        match c {
            ' ' if i == 0 || is_key => out.push_str("\\ "),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{0C}' => out.push_str("\\f"),
            '=' | ':' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c if (' '..='~').contains(&c) => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04X}"));
                }
            }
        }
    }
    out
}

/// Parse the bytes of a Java properties file (ISO-8859-1, as Kafka reads
/// `meta.properties`) with the one `.properties` reader of the crate.
///
/// # Errors
/// [`MetadataError::MalformedLine`] for a malformed `\uXXXX` escape.
pub(crate) fn parse(bytes: &[u8], path: &Path) -> Result<BTreeMap<String, String>, MetadataError> {
    use crate::config::properties::{parse_latin1, PropertiesError};
    parse_latin1(bytes, path).map_err(|e| match e {
        PropertiesError::MalformedUnicode { line, escape, .. } => MetadataError::MalformedLine {
            path: path.to_path_buf(),
            line_number: line,
            line: escape,
        },
        other => MetadataError::MalformedLine {
            path: path.to_path_buf(),
            line_number: 0,
            line: other.to_string(),
        },
    })
}

/// `java.util.Date.toString()` in UTC: `EEE MMM dd HH:mm:ss zzz yyyy`.
pub(crate) fn java_date_utc(unix_ms: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = unix_ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    let (year, month, day) = crate::clock::civil_from_days(days);
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} UTC {}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        tod / 3600,
        tod % 3600 / 60,
        tod % 60,
        year
    )
}
