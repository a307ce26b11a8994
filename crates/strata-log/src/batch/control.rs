//! Control records (§1.8): the key every control record carries and the
//! end-transaction marker value of COMMIT / ABORT records.

use super::error::{BatchError, ControlFault};
use super::record::Record;

/// The type of a control record (`ControlRecordType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    Abort,
    Commit,
    LeaderChange,
    SnapshotHeader,
    SnapshotFooter,
    KraftVersion,
    KraftVoters,
    /// A type this version does not know; Kafka ignores such records.
    Unknown(i16),
}

impl ControlRecordType {
    pub fn from_id(id: i16) -> ControlRecordType {
        match id {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            2 => ControlRecordType::LeaderChange,
            3 => ControlRecordType::SnapshotHeader,
            4 => ControlRecordType::SnapshotFooter,
            5 => ControlRecordType::KraftVersion,
            6 => ControlRecordType::KraftVoters,
            other => ControlRecordType::Unknown(other),
        }
    }

    pub fn id(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::LeaderChange => 2,
            ControlRecordType::SnapshotHeader => 3,
            ControlRecordType::SnapshotFooter => 4,
            ControlRecordType::KraftVersion => 5,
            ControlRecordType::KraftVoters => 6,
            ControlRecordType::Unknown(id) => id,
        }
    }

    /// Kafka's name, as `kafka-dump-log` prints it.
    pub fn name(self) -> &'static str {
        match self {
            ControlRecordType::Abort => "ABORT",
            ControlRecordType::Commit => "COMMIT",
            ControlRecordType::LeaderChange => "LEADER_CHANGE",
            ControlRecordType::SnapshotHeader => "SNAPSHOT_HEADER",
            ControlRecordType::SnapshotFooter => "SNAPSHOT_FOOTER",
            ControlRecordType::KraftVersion => "KRAFT_VERSION",
            ControlRecordType::KraftVoters => "KRAFT_VOTERS",
            ControlRecordType::Unknown(_) => "UNKNOWN",
        }
    }

    /// Parse a control record key.
    ///
    /// Format: `version i16 (= 0) | type i16`, big-endian. A higher version
    /// is read as version 0; extra bytes are ignored.
    ///
    /// # Errors
    /// A key shorter than 4 bytes (or absent), or a negative version.
    pub fn parse_key(key: Option<&[u8]>) -> Result<ControlRecordType, BatchError> {
        let key = key.unwrap_or_default();
        if key.len() < 4 {
            return Err(BatchError::InvalidControlRecord {
                reason: ControlFault::KeyTooShort { len: key.len() },
            });
        }
        let version = i16::from_be_bytes([key[0], key[1]]);
        if version < 0 {
            return Err(BatchError::InvalidControlRecord {
                reason: ControlFault::NegativeKeyVersion { version },
            });
        }
        Ok(ControlRecordType::from_id(i16::from_be_bytes([
            key[2], key[3],
        ])))
    }

    /// The 4-byte key Kafka writes (version 0).
    pub fn key_bytes(self) -> [u8; 4] {
        let t = self.id().to_be_bytes();
        [0, 0, t[0], t[1]]
    }
}

/// A COMMIT or ABORT marker (`EndTransactionMarker`).
///
/// Format of the value: `version i16 (= 0) | coordinatorEpoch i32`, big-endian;
/// extra trailing bytes are ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EndTransactionMarker {
    /// [`ControlRecordType::Commit`] or [`ControlRecordType::Abort`].
    pub control_type: ControlRecordType,
    pub coordinator_epoch: i32,
}

impl EndTransactionMarker {
    pub fn commit(coordinator_epoch: i32) -> Self {
        EndTransactionMarker {
            control_type: ControlRecordType::Commit,
            coordinator_epoch,
        }
    }

    pub fn abort(coordinator_epoch: i32) -> Self {
        EndTransactionMarker {
            control_type: ControlRecordType::Abort,
            coordinator_epoch,
        }
    }

    pub fn is_commit(&self) -> bool {
        self.control_type == ControlRecordType::Commit
    }

    /// Read the marker from the single record of a marker batch.
    ///
    /// # Errors
    /// A bad key, a type other than COMMIT/ABORT, a value shorter than 6
    /// bytes, or a negative version.
    pub fn from_record(record: &Record<'_>) -> Result<Self, BatchError> {
        let control_type = ControlRecordType::parse_key(record.key)?;
        Self::parse_value(control_type, record.value)
    }

    /// Parse a marker value for a key already known to be `control_type`.
    ///
    /// # Errors
    /// As [`Self::from_record`].
    pub fn parse_value(
        control_type: ControlRecordType,
        value: Option<&[u8]>,
    ) -> Result<Self, BatchError> {
        if !matches!(
            control_type,
            ControlRecordType::Commit | ControlRecordType::Abort
        ) {
            return Err(BatchError::InvalidControlRecord {
                reason: ControlFault::NotEndTransaction {
                    control_type: control_type.id(),
                },
            });
        }
        let value = value.unwrap_or_default();
        if value.len() < 6 {
            return Err(BatchError::InvalidControlRecord {
                reason: ControlFault::ValueTooShort { len: value.len() },
            });
        }
        let version = i16::from_be_bytes([value[0], value[1]]);
        if version < 0 {
            return Err(BatchError::InvalidControlRecord {
                reason: ControlFault::NegativeValueVersion { version },
            });
        }
        Ok(EndTransactionMarker {
            control_type,
            coordinator_epoch: i32::from_be_bytes(value[2..6].try_into().expect("4 bytes")),
        })
    }

    /// The 6-byte value Kafka writes (version 0).
    pub fn value_bytes(&self) -> [u8; 6] {
        let e = self.coordinator_epoch.to_be_bytes();
        [0, 0, e[0], e[1], e[2], e[3]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_parsing_follows_kafka() {
        assert_eq!(
            ControlRecordType::parse_key(Some(&[0, 0, 0, 1])),
            Ok(ControlRecordType::Commit)
        );
        // Higher version read as v0; extra bytes ignored.
        assert_eq!(
            ControlRecordType::parse_key(Some(&[0, 3, 0, 0, 9])),
            Ok(ControlRecordType::Abort)
        );
        assert_eq!(
            ControlRecordType::parse_key(Some(&[0, 0, 0, 42])),
            Ok(ControlRecordType::Unknown(42))
        );
        assert_eq!(
            ControlRecordType::parse_key(Some(&[0, 0, 1])),
            Err(BatchError::InvalidControlRecord {
                reason: ControlFault::KeyTooShort { len: 3 }
            })
        );
        assert!(ControlRecordType::parse_key(None).is_err());
        assert_eq!(
            ControlRecordType::parse_key(Some(&[0xff, 0xff, 0, 1])),
            Err(BatchError::InvalidControlRecord {
                reason: ControlFault::NegativeKeyVersion { version: -1 }
            })
        );
        for id in 0..8 {
            let t = ControlRecordType::from_id(id);
            assert_eq!(t.id(), id);
            assert_eq!(ControlRecordType::parse_key(Some(&t.key_bytes())), Ok(t));
        }
    }

    #[test]
    fn marker_value_parsing_follows_kafka() {
        let m = EndTransactionMarker::commit(9);
        assert_eq!(m.value_bytes(), [0, 0, 0, 0, 0, 9]);
        assert_eq!(
            EndTransactionMarker::parse_value(
                ControlRecordType::Commit,
                Some(&[0, 0, 0, 0, 0, 9, 7])
            ),
            Ok(m)
        );
        assert_eq!(
            EndTransactionMarker::parse_value(ControlRecordType::Abort, Some(&[0, 0, 0, 0, 0])),
            Err(BatchError::InvalidControlRecord {
                reason: ControlFault::ValueTooShort { len: 5 }
            })
        );
        assert_eq!(
            EndTransactionMarker::parse_value(
                ControlRecordType::Abort,
                Some(&[0x80, 0, 0, 0, 0, 1])
            ),
            Err(BatchError::InvalidControlRecord {
                reason: ControlFault::NegativeValueVersion { version: i16::MIN }
            })
        );
        assert_eq!(
            EndTransactionMarker::parse_value(ControlRecordType::LeaderChange, Some(&[0; 6])),
            Err(BatchError::InvalidControlRecord {
                reason: ControlFault::NotEndTransaction { control_type: 2 }
            })
        );
    }
}
