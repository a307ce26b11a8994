//! The cleaner's fixed-memory dedupe map (Kafka `SkimpyOffsetMap`, §11.3).
//!
//! Format (in memory only, never on disk): a flat byte array of
//! `slots * 24` bytes; slot `i` is
//!
//! ```text
//! [i*24 .. i*24+16)   XXH3-128 digest of the record key (big-endian)
//! [i*24+16 .. i*24+24) offset, big-endian i64
//! ```
//!
//! A slot of 24 zero bytes is empty. Attempt `a` (0-based) probes slot
//! `absNoMin(int32BE(hash[min(a,12)..+4]) + max(0, a-12)) % slots`: the
//! first 13 attempts use the digest's overlapping 4-byte windows, then the
//! probe walks linearly. No deletes; `clear` zeroes the array. Two keys with
//! the same digest count as one key, as in Kafka.
//!
//! Kafka stores MD5 digests; Strata stores XXH3-128 digests of the same
//! width. The map never leaves memory, so the digest function is invisible
//! outside the process, and a 128-bit digest keeps collisions (two keys
//! counted as one) as improbable as Kafka's, at a small fraction of MD5's
//! cost (see docs/compaction.md).

use super::slots::SlotMemory;
use crate::types::Offset;

/// Bytes of a key digest (XXH3-128).
pub const HASH_SIZE: usize = 16;
/// Bytes per slot: digest + offset.
pub const BYTES_PER_ENTRY: usize = HASH_SIZE + 8;

/// Kafka's `SkimpyOffsetMap`: key digest → latest offset, in `memory` bytes.
pub struct OffsetMap {
    bytes: SlotMemory,
    /// Slots in use: all of them, or fewer after [`OffsetMap::clear_for`].
    slots: usize,
    /// Lemire's multiplier for `% slots` without a division (0 when
    /// `slots` does not fit 32 bits: then `%` is used).
    slots_magic: u64,
    allocated_slots: usize,
    entries: usize,
    latest_offset: Offset,
    lookups: u64,
    probes: u64,
}

impl std::fmt::Debug for OffsetMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffsetMap")
            .field("slots", &self.slots)
            .field("entries", &self.entries)
            .field("latest_offset", &self.latest_offset)
            .finish()
    }
}

/// Put into a map whose every slot is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("offset map full: {slots} slots")]
pub struct MapFull {
    pub slots: usize,
}

fn abs_no_min(n: i32) -> i32 {
    if n == i32::MIN {
        0
    } else {
        n.abs()
    }
}

/// The multiplier for [`fast_mod`] by `d`, or 0 when `d` exceeds 32 bits.
fn fast_mod_magic(d: usize) -> u64 {
    match u32::try_from(d) {
        Ok(d) if d > 1 => (u64::MAX / u64::from(d)).wrapping_add(1),
        _ => 0,
    }
}

/// `a % d` for 32-bit operands, with `magic = fast_mod_magic(d)` (Lemire,
/// Kaser & Kurz, "Faster remainder by direct computation", exact for every
/// 32-bit `a` and `d > 1`): a multiply instead of a division per probe.
fn fast_mod(a: u32, magic: u64, d: u32) -> u32 {
    let low = magic.wrapping_mul(u64::from(a));
    ((u128::from(low) * u128::from(d)) >> 64) as u32
}

/// A used prefix up to this size is zeroed in place between passes (its
/// pages stay resident for the next one); a larger one is released.
const KEEP_RESIDENT_BYTES: usize = 32 << 20;

impl OffsetMap {
    /// A map using `memory` bytes (`memory / 24` slots, at least one).
    pub fn new(memory: usize) -> OffsetMap {
        let slots = (memory / BYTES_PER_ENTRY).max(1);
        OffsetMap {
            bytes: SlotMemory::new(slots * BYTES_PER_ENTRY),
            slots,
            slots_magic: fast_mod_magic(slots),
            allocated_slots: slots,
            entries: 0,
            latest_offset: Offset(-1),
            lookups: 0,
            probes: 0,
        }
    }

    /// Number of slots in use.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Number of slots the memory holds.
    pub fn allocated_slots(&self) -> usize {
        self.allocated_slots
    }

    /// Distinct digests stored.
    pub fn len(&self) -> usize {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Bytes of the slot array (the memory the map was sized with, rounded
    /// down to whole slots).
    pub fn memory(&self) -> usize {
        self.bytes.len()
    }

    /// Bytes of the slots in use.
    pub fn memory_in_use(&self) -> usize {
        self.slots * BYTES_PER_ENTRY
    }

    /// The last offset the map covers; `-1` after `clear`.
    pub fn latest_offset(&self) -> Offset {
        self.latest_offset
    }

    pub fn update_latest_offset(&mut self, offset: Offset) {
        self.latest_offset = offset;
    }

    /// Entries / slots.
    pub fn utilization(&self) -> f64 {
        self.entries as f64 / self.slots as f64
    }

    /// Average probes per lookup or insert so far (1.0 = no collisions).
    pub fn collision_rate(&self) -> f64 {
        if self.lookups == 0 {
            0.0
        } else {
            self.probes as f64 / self.lookups as f64
        }
    }

    fn position_of(&self, hash: &[u8; HASH_SIZE], attempt: usize) -> usize {
        let window = attempt.min(HASH_SIZE - 4);
        let base = i32::from_be_bytes(hash[window..window + 4].try_into().expect("4 bytes"));
        let extra = attempt.saturating_sub(HASH_SIZE - 4) as i32;
        let probe = base.wrapping_add(extra);
        let probe = abs_no_min(probe) as u32;
        let slot = if self.slots_magic != 0 {
            fast_mod(probe, self.slots_magic, self.slots as u32) as usize
        } else {
            probe as usize % self.slots
        };
        slot * BYTES_PER_ENTRY
    }

    /// The slot at byte `pos`: its digest and its offset bytes, read as
    /// two whole words rather than byte by byte.
    fn slot_at(&self, pos: usize) -> (u128, u64) {
        let s: &[u8; BYTES_PER_ENTRY] = self.bytes[pos..pos + BYTES_PER_ENTRY]
            .try_into()
            .expect("24 bytes");
        let digest = u128::from_ne_bytes(s[..HASH_SIZE].try_into().expect("16 bytes"));
        let offset = u64::from_ne_bytes(s[HASH_SIZE..].try_into().expect("8 bytes"));
        (digest, offset)
    }

    /// Record `offset` as the latest offset of `key`, and as the map's
    /// latest offset.
    ///
    /// # Errors
    /// [`MapFull`] when every slot is taken (callers stop at the load
    /// factor long before).
    pub fn put(&mut self, key: &[u8], offset: Offset) -> Result<(), MapFull> {
        self.put_hashed(&Self::hash(key), offset)
    }

    /// The digest the map stores for `key`.
    pub fn hash(key: &[u8]) -> [u8; HASH_SIZE] {
        twox_hash::XxHash3_128::oneshot(key).to_be_bytes()
    }

    /// Hint the CPU to load the first slot `hash` probes: callers hash a
    /// batch's keys, prefetch them all, then put or get, so the cache
    /// misses of a batch overlap instead of queueing.
    pub fn prefetch(&self, hash: &[u8; HASH_SIZE]) {
        let pos = self.position_of(hash, 0);
        let p = self.bytes[pos..].as_ptr();
        #[cfg(target_arch = "x86_64")]
        // SAFETY: prefetching is a hint; it never faults, even on an invalid
        // address, and `p` points into our slot memory anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = p;
    }

    /// [`Self::put`] with the key's digest already computed.
    ///
    /// # Errors
    /// As [`Self::put`].
    pub fn put_hashed(&mut self, hash: &[u8; HASH_SIZE], offset: Offset) -> Result<(), MapFull> {
        self.put_hashed_replacing(hash, offset).map(|_| ())
    }

    /// [`Self::put_hashed`], returning the offset the digest had before,
    /// if it was in the map.
    ///
    /// # Errors
    /// As [`Self::put_hashed`].
    pub fn put_hashed_replacing(
        &mut self,
        hash: &[u8; HASH_SIZE],
        offset: Offset,
    ) -> Result<Option<Offset>, MapFull> {
        let hash = *hash;
        if self.entries >= self.slots {
            return Err(MapFull { slots: self.slots });
        }
        self.lookups += 1;
        let wanted = u128::from_ne_bytes(hash);
        let mut attempt = 0;
        let mut pos = self.position_of(&hash, attempt);
        loop {
            let (digest, stored) = self.slot_at(pos);
            if (digest, stored) == (0, 0) {
                break;
            }
            if digest == wanted {
                self.bytes[pos + HASH_SIZE..pos + BYTES_PER_ENTRY]
                    .copy_from_slice(&offset.0.to_be_bytes());
                self.latest_offset = offset;
                self.probes += attempt as u64 + 1;
                // `stored` holds the big-endian offset's bytes.
                return Ok(Some(Offset(i64::from_be_bytes(stored.to_ne_bytes()))));
            }
            attempt += 1;
            pos = self.position_of(&hash, attempt);
        }
        self.probes += attempt as u64 + 1;
        self.bytes[pos..pos + HASH_SIZE].copy_from_slice(&hash);
        self.bytes[pos + HASH_SIZE..pos + BYTES_PER_ENTRY].copy_from_slice(&offset.0.to_be_bytes());
        self.entries += 1;
        self.latest_offset = offset;
        Ok(None)
    }

    /// The latest offset stored for `key`, or `Offset(-1)`.
    pub fn get(&mut self, key: &[u8]) -> Offset {
        self.get_hashed(&Self::hash(key))
    }

    /// [`Self::get`] with the key's digest already computed.
    pub fn get_hashed(&mut self, hash: &[u8; HASH_SIZE]) -> Offset {
        let hash = *hash;
        self.lookups += 1;
        let max_attempts = self.slots + HASH_SIZE - 4;
        let wanted = u128::from_ne_bytes(hash);
        for attempt in 0..max_attempts {
            let pos = self.position_of(&hash, attempt);
            let (digest, stored) = self.slot_at(pos);
            if (digest, stored) == (0, 0) {
                self.probes += attempt as u64 + 1;
                return Offset(-1);
            }
            if digest == wanted {
                self.probes += attempt as u64 + 1;
                return Offset(i64::from_be_bytes(stored.to_ne_bytes()));
            }
        }
        Offset(-1)
    }

    /// Empty the map (zero every slot) and use all slots.
    pub fn clear(&mut self) {
        self.clear_for(usize::MAX, 1.0);
    }

    /// Empty the map and use only as many slots as `max_keys` distinct keys
    /// need at `load_factor` (all of them when that is more). A pass that
    /// can meet at most `max_keys` keys then fills exactly as the full map
    /// would, while touching less memory. Returns the slots in use.
    pub fn clear_for(&mut self, max_keys: usize, load_factor: f64) -> usize {
        // Only an insert writes a slot, and every insert counts an entry.
        if self.entries > 0 {
            self.bytes
                .zero_prefix_resident_up_to(self.slots * BYTES_PER_ENTRY, KEEP_RESIDENT_BYTES);
        }
        let needed = (max_keys as f64 / load_factor.max(f64::MIN_POSITIVE)).ceil() + 2.0;
        self.slots = if needed >= self.allocated_slots as f64 {
            self.allocated_slots
        } else {
            (needed as usize).max(1)
        };
        self.slots_magic = fast_mod_magic(self.slots);
        self.entries = 0;
        self.latest_offset = Offset(-1);
        self.lookups = 0;
        self.probes = 0;
        self.slots
    }

    /// The raw slot bytes at `slot` (tests of the layout).
    pub fn slot_bytes(&self, slot: usize) -> &[u8] {
        &self.bytes[slot * BYTES_PER_ENTRY..(slot + 1) * BYTES_PER_ENTRY]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_mod_equals_the_remainder() {
        let divisors = [
            2u32,
            3,
            7,
            12,
            1000,
            457_614,
            5_592_405,
            89_478_485,
            u32::MAX,
        ];
        let mut a = 0x9E37_79B9u32;
        for d in divisors {
            let m = fast_mod_magic(d as usize);
            for x in [0, 1, d - 1, d, d.wrapping_add(1), i32::MAX as u32, u32::MAX] {
                assert_eq!(fast_mod(x, m, d), x % d, "{x} % {d}");
            }
            for _ in 0..10_000 {
                a = a.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                assert_eq!(fast_mod(a, m, d), a % d, "{a} % {d}");
            }
        }
        assert_eq!(fast_mod_magic(1), 0, "one slot falls back to %");
        assert_eq!(
            fast_mod_magic(1 << 33),
            0,
            "wider than 32 bits falls back to %"
        );
    }

    #[test]
    fn put_get_overwrite_and_clear() {
        let mut m = OffsetMap::new(24 * 1000);
        assert_eq!(m.slots(), 1000);
        for i in 0..500i64 {
            m.put(format!("k{i}").as_bytes(), Offset(i)).unwrap();
        }
        assert_eq!(m.len(), 500);
        for i in 0..500i64 {
            assert_eq!(m.get(format!("k{i}").as_bytes()), Offset(i));
        }
        m.put(b"k7", Offset(9_000)).unwrap();
        assert_eq!(m.len(), 500, "overwrite keeps the size");
        assert_eq!(m.get(b"k7"), Offset(9_000));
        assert_eq!(m.latest_offset(), Offset(9_000));
        assert_eq!(m.get(b"absent"), Offset(-1));
        m.clear();
        assert!(m.is_empty());
        assert_eq!(m.latest_offset(), Offset(-1));
        assert_eq!(m.get(b"k1"), Offset(-1));
    }

    #[test]
    fn slot_layout_is_digest_then_big_endian_offset() {
        let mut m = OffsetMap::new(24 * 7);
        m.put(b"key", Offset(0x0102_0304_0506_0708)).unwrap();
        let hash = OffsetMap::hash(b"key");
        let first = i32::from_be_bytes(hash[0..4].try_into().unwrap());
        let slot = abs_no_min(first) as usize % 7;
        assert_eq!(&m.slot_bytes(slot)[..16], &hash);
        assert_eq!(&m.slot_bytes(slot)[16..], &[1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn clear_for_limits_the_slots_and_starts_empty() {
        let mut m = OffsetMap::new(24 * 1000);
        for i in 0..900i64 {
            m.put(&i.to_be_bytes(), Offset(i)).unwrap();
        }
        assert_eq!(m.clear_for(9, 0.9), 12, "ceil(9 / 0.9) + 2");
        assert_eq!(m.get(&1i64.to_be_bytes()), Offset(-1));
        for i in 0..9i64 {
            m.put(&i.to_be_bytes(), Offset(i)).unwrap();
        }
        assert_eq!(m.len(), 9);
        assert_eq!(m.clear_for(5_000, 0.9), 1000, "never more than allocated");
        assert!(m.is_empty());
        assert_eq!(
            m.get(&3i64.to_be_bytes()),
            Offset(-1),
            "the used prefix was zeroed"
        );
    }

    #[test]
    fn full_map_refuses_new_keys_but_finds_all() {
        let mut m = OffsetMap::new(24 * 5);
        for i in 0..5i64 {
            m.put(&i.to_be_bytes(), Offset(i)).unwrap();
        }
        assert_eq!(
            m.put(b"one more", Offset(9)),
            Err(MapFull { slots: 5 }),
            "Kafka throws once entries >= slots"
        );
        for i in 0..5i64 {
            assert_eq!(
                m.get(&i.to_be_bytes()),
                Offset(i),
                "linear probing reaches every slot"
            );
        }
        assert_eq!(
            m.get(b"missing"),
            Offset(-1),
            "a full map terminates the probe"
        );
    }

    #[test]
    fn probe_sequence_windows_then_linear() {
        let m = OffsetMap::new(24 * 1_000_003);
        let hash = OffsetMap::hash(b"x");
        for a in 0..=12 {
            let w = i32::from_be_bytes(hash[a..a + 4].try_into().unwrap());
            assert_eq!(
                m.position_of(&hash, a),
                (abs_no_min(w) as usize % m.slots()) * 24
            );
        }
        let w = i32::from_be_bytes(hash[12..16].try_into().unwrap());
        assert_eq!(
            m.position_of(&hash, 15),
            (abs_no_min(w.wrapping_add(3)) as usize % m.slots()) * 24
        );
        assert_eq!(abs_no_min(i32::MIN), 0);
    }
}
