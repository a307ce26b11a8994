//! Which mapped records a later record of the same key replaced, as one bit
//! per offset of the dirty section (Strata; Kafka looks every record up in
//! the offset map again).
//!
//! While the map phase puts a key's digest, the map hands back the offset
//! it replaces; that earlier record is not its key's latest, and its bit is
//! set. After the phase, a dirty record the map phase put (a keyed record of
//! a non-aborted data batch, at or after the pass start and at most the
//! map's latest offset) is its key's latest exactly when its bit is clear,
//! which is what comparing its offset with the map's answer for its digest
//! decides, so the filter skips the digest and the probe for those records.
//! Records below the pass start still ask the map.
//!
//! Memory: one bit per offset from the pass start to the last replaced
//! offset, at most [`MAX_BYTES`]; past that the set gives up for the pass
//! and every record asks the map.

use crate::types::Offset;

/// Largest bit set kept (64 Mi offsets).
pub(crate) const MAX_BYTES: usize = 8 << 20;

/// Superseded offsets at or after `start`.
#[derive(Debug, Default)]
pub struct Superseded {
    start: i64,
    words: Vec<u64>,
    usable: bool,
}

impl Superseded {
    /// Forget everything; offsets from `start` on are tracked.
    pub(crate) fn reset(&mut self, start: Offset) {
        self.start = start.0;
        self.words.clear();
        self.usable = true;
    }

    /// Stop answering for this pass (the records it would need to describe
    /// were not all seen).
    pub(crate) fn give_up(&mut self) {
        self.usable = false;
        self.words.clear();
    }

    /// The record at `offset` was replaced by a later one of its key.
    pub(crate) fn mark(&mut self, offset: Offset) {
        if !self.usable || offset.0 < self.start {
            return;
        }
        let bit = (offset.0 - self.start) as u64;
        let word = (bit / 64) as usize;
        if word >= self.words.len() {
            if (word + 1) * 8 > MAX_BYTES {
                self.give_up();
                return;
            }
            self.words.resize((word + 1).max(self.words.len() * 2), 0);
        }
        self.words[word] |= 1 << (bit % 64);
    }

    /// `Some(true)` when the mapped record at `offset` was replaced,
    /// `Some(false)` when it is its key's latest, `None` when the set does
    /// not know (below the start, or given up): ask the map.
    #[inline]
    pub(crate) fn is_superseded(&self, offset: Offset) -> Option<bool> {
        if !self.usable || offset.0 < self.start {
            return None;
        }
        let bit = (offset.0 - self.start) as u64;
        let set = self
            .words
            .get((bit / 64) as usize)
            .is_some_and(|w| w & (1 << (bit % 64)) != 0);
        Some(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_answer_from_the_start_on_and_give_up_past_the_limit() {
        let mut s = Superseded::default();
        s.reset(Offset(100));
        assert_eq!(s.is_superseded(Offset(99)), None, "below the start");
        s.mark(Offset(99));
        s.mark(Offset(100));
        s.mark(Offset(1_000));
        assert_eq!(s.is_superseded(Offset(100)), Some(true));
        assert_eq!(s.is_superseded(Offset(101)), Some(false));
        assert_eq!(s.is_superseded(Offset(1_000)), Some(true));
        assert_eq!(
            s.is_superseded(Offset(1 << 40)),
            Some(false),
            "never marked"
        );
        s.mark(Offset(100 + (MAX_BYTES as i64) * 8));
        assert_eq!(s.is_superseded(Offset(100)), None, "gave up");
        s.reset(Offset(0));
        assert_eq!(
            s.is_superseded(Offset(100)),
            Some(false),
            "reset starts empty"
        );
    }
}
