//! Newtypes for the integers the log is made of.
//!
//! Offsets, positions, epochs and producer ids are never bare integers in the
//! engine's API: mixing a byte position with a logical offset is the classic
//! bug of a log implementation, and the type system rules it out here.

use std::fmt;

/// A 64-bit logical record offset within a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Offset(pub i64);

impl Offset {
    pub const ZERO: Offset = Offset(0);

    /// The value as an `i64`.
    pub fn get(self) -> i64 {
        self.0
    }

    /// `self + n`.
    pub fn plus(self, n: i64) -> Offset {
        Offset(self.0 + n)
    }

    /// Offset relative to `base`, if it fits Kafka's relative range `[0, 2^31-1]`.
    pub fn relative_to(self, base: Offset) -> Option<RelativeOffset> {
        let d = self.0.checked_sub(base.0)?;
        if (0..=i32::MAX as i64).contains(&d) {
            Some(RelativeOffset(d as u32))
        } else {
            None
        }
    }
}

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// An offset relative to a segment's base offset, as stored in `.index`/`.timeindex`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct RelativeOffset(pub u32);

impl RelativeOffset {
    /// The absolute offset for a segment based at `base`.
    pub fn absolute(self, base: Offset) -> Offset {
        Offset(base.0 + self.0 as i64)
    }
}

/// A byte position inside a segment `.log` file (Kafka keeps these as int32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position(pub u32);

impl Position {
    pub fn get(self) -> u32 {
        self.0
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A partition leader epoch; `-1` means none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LeaderEpoch(pub i32);

impl LeaderEpoch {
    pub const NONE: LeaderEpoch = LeaderEpoch(-1);
}

/// A producer id; `-1` means none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProducerId(pub i64);

impl ProducerId {
    pub const NONE: ProducerId = ProducerId(-1);
}

/// A producer epoch; `-1` means none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProducerEpoch(pub i16);

impl ProducerEpoch {
    pub const NONE: ProducerEpoch = ProducerEpoch(-1);
}

/// A timestamp in milliseconds since the Unix epoch; `-1` means none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub const NONE: Timestamp = Timestamp(-1);
}

/// A topic and partition number, as in a partition directory name `<topic>-<partition>`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_offset_range_is_kafkas() {
        let base = Offset(100);
        assert_eq!(Offset(100).relative_to(base), Some(RelativeOffset(0)));
        assert_eq!(Offset(10).relative_to(base), None);
        assert_eq!(Offset(0).relative_to(Offset(0)), Some(RelativeOffset(0)));
        assert_eq!(Offset(1 << 31).relative_to(Offset(0)), None);
        assert_eq!(
            Offset(i32::MAX as i64).relative_to(Offset(0)),
            Some(RelativeOffset(i32::MAX as u32))
        );
        assert_eq!(Offset(0).relative_to(Offset(1 << 31)), None);
    }
}
