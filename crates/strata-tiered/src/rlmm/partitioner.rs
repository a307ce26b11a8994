//! User partition → `__remote_log_metadata` partition (Kafka
//! `RemoteLogMetadataTopicPartitioner`, reference §4.2): Java's
//! `Objects.hash(lsb, msb, partition)`, as 4 big-endian bytes, through
//! Kafka's murmur2, positive, modulo the partition count. Independent of
//! the topic name, so a renamed topic id keeps its metadata partition.

use crate::metadata::TopicIdPartition;

/// Kafka's murmur2 (the default producer partitioner's hash).
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let len = data.len();
    let mut h: u32 = SEED ^ (len as u32);
    let chunks = data.chunks_exact(4);
    let tail = chunks.remainder();
    for c in chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        h ^= u32::from(tail[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// Java `Objects.hash(topicId.lsb, topicId.msb, partition)`.
pub fn java_objects_hash(partition: &TopicIdPartition) -> i32 {
    let (msb, lsb) = partition.topic_id.as_u64_pair();
    let long_hash = |v: u64| (v ^ (v >> 32)) as u32 as i32;
    let mut h: i32 = 1;
    for e in [long_hash(lsb), long_hash(msb), partition.tp.partition] {
        h = h.wrapping_mul(31).wrapping_add(e);
    }
    h
}

/// The metadata partition holding `partition`'s events.
pub fn metadata_partition(partition: &TopicIdPartition, num_partitions: i32) -> i32 {
    let hash = murmur2(&java_objects_hash(partition).to_be_bytes());
    (hash & 0x7fff_ffff) % num_partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_log::TopicPartition;
    use uuid::Uuid;

    /// Vectors computed with a JVM (reference §4.2).
    #[test]
    fn matches_kafka_vectors() {
        let cases: [(u64, u64, i32, i32, i32, i32); 6] = [
            (
                0x0123456789abcdef,
                0x0fedcba987654321,
                0,
                286360415,
                1817281361,
                11,
            ),
            (
                0x0123456789abcdef,
                0x0fedcba987654321,
                1,
                286360416,
                -850630996,
                2,
            ),
            (
                0x0123456789abcdef,
                0x0fedcba987654321,
                2,
                286360417,
                -1489243610,
                38,
            ),
            (1, 2, 0, 31744, 838789430, 30),
            (1, 2, 1, 31745, 82923620, 20),
            (u64::MAX, u64::MAX - 1, 0, 30752, 1180230835, 35),
        ];
        for (msb, lsb, p, hash, mm, expected) in cases {
            let tip =
                TopicIdPartition::new(Uuid::from_u64_pair(msb, lsb), TopicPartition::new("any", p));
            assert_eq!(java_objects_hash(&tip), hash, "hash {msb:x} {lsb:x} {p}");
            assert_eq!(
                murmur2(&hash.to_be_bytes()),
                mm,
                "murmur {msb:x} {lsb:x} {p}"
            );
            assert_eq!(
                metadata_partition(&tip, 50),
                expected,
                "partition {msb:x} {lsb:x} {p}"
            );
        }
    }

    #[test]
    fn murmur2_matches_kafka_string_vectors() {
        // Kafka's UtilsTest murmur2 cases.
        assert_eq!(murmur2(b"21"), -973932308);
        assert_eq!(murmur2(b"foobar"), -790332482);
        assert_eq!(murmur2(b"a-little-bit-long-string"), -985981536);
        assert_eq!(murmur2(b"a-little-bit-longer-string"), -1486304829);
        assert_eq!(
            murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"),
            -58897971
        );
        assert_eq!(murmur2(b"abc"), 479470107);
    }
}
