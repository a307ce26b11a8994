//! The hash function of the producer table.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// Hashing for the producer table: one keyed folded multiply per lookup
/// instead of SipHash, because the table is consulted up to three times per
/// appended batch. Producer ids come from clients, so the keys are random per
/// manager and the 128-bit product is folded so that high bits reach the
/// bucket index (a plain multiply would let ids differing only in high bits
/// collide).
#[derive(Clone, Debug)]
pub(crate) struct ProducerIdHasher {
    seed: u64,
    multiplier: u64,
}

impl ProducerIdHasher {
    pub(crate) fn new() -> Self {
        let random = RandomState::new();
        let a = random.hash_one(0x5bd1_e995_u64);
        let b = random.hash_one(0x9e37_79b9_7f4a_7c15_u64);
        ProducerIdHasher {
            seed: a,
            multiplier: b | 1,
        }
    }
}

impl BuildHasher for ProducerIdHasher {
    type Hasher = FoldedMultiply;
    fn build_hasher(&self) -> FoldedMultiply {
        FoldedMultiply {
            state: self.seed,
            multiplier: self.multiplier,
        }
    }
}

#[derive(Debug)]
pub(crate) struct FoldedMultiply {
    state: u64,
    multiplier: u64,
}

impl FoldedMultiply {
    fn mix(&mut self, v: u64) {
        let full = (self.state ^ v) as u128 * self.multiplier as u128;
        self.state = (full as u64) ^ ((full >> 64) as u64);
    }
}

impl Hasher for FoldedMultiply {
    fn finish(&self) -> u64 {
        self.state
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
    }
    fn write_i64(&mut self, v: i64) {
        self.mix(v as u64);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::types::ProducerId;

    #[test]
    fn ids_differing_only_in_high_bits_spread_over_buckets() {
        let h = ProducerIdHasher::new();
        // A plain multiply would map all of these to the same low bits.
        let low_bits: HashSet<u64> = (0..1024i64)
            .map(|n| h.hash_one(ProducerId(n << 40)) & 1023)
            .collect();
        assert!(
            low_bits.len() > 512,
            "only {} distinct buckets",
            low_bits.len()
        );
    }

    #[test]
    fn keys_differ_between_tables() {
        let (a, b) = (ProducerIdHasher::new(), ProducerIdHasher::new());
        let same = (0..64i64)
            .filter(|&n| a.hash_one(ProducerId(n)) == b.hash_one(ProducerId(n)))
            .count();
        assert_eq!(same, 0);
    }
}
