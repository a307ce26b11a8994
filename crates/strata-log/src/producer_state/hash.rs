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
        Self::with_keys(a, b)
    }

    fn with_keys(seed: u64, multiplier: u64) -> Self {
        ProducerIdHasher {
            seed,
            multiplier: multiplier | 1,
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
    /// One more folded multiply, so that every input bit reaches the low
    /// (bucket-index) bits whatever the random keys are.
    fn finish(&self) -> u64 {
        let full = self.state as u128 * self.multiplier as u128;
        (full as u64) ^ ((full >> 64) as u64)
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

    fn distinct_low_buckets(h: &ProducerIdHasher) -> usize {
        // A plain multiply would map all of these to the same low bits.
        let low_bits: HashSet<u64> = (0..1024i64)
            .map(|n| h.hash_one(ProducerId(n << 40)) & 1023)
            .collect();
        low_bits.len()
    }

    #[test]
    fn ids_differing_only_in_high_bits_spread_over_buckets() {
        // 1024 ids into 1024 buckets: a random function fills about 647.
        for (seed, multiplier) in [
            (0, 0x9e37_79b9_7f4a_7c15),
            (0x5bd1_e995, 0xff51_afd7_ed55_8ccd),
            (u64::MAX, 0xc4ce_b9fe_1a85_ec53),
        ] {
            let n = distinct_low_buckets(&ProducerIdHasher::with_keys(seed, multiplier));
            assert!(
                n > 550,
                "keys ({seed:#x}, {multiplier:#x}): only {n} distinct buckets"
            );
        }
        for _ in 0..20 {
            let n = distinct_low_buckets(&ProducerIdHasher::new());
            assert!(n > 550, "random keys: only {n} distinct buckets");
        }
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
