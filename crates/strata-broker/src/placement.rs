//! Replica placement, Kafka's algorithm (`AdminUtils.assignReplicasToBrokers`
//! in 3.9): a random start index and replica shift, partitions laid out round
//! robin over the broker list, followers shifted so that replicas of
//! consecutive partitions spread; with racks, the broker list alternates
//! racks and a follower is skipped while its rack (or itself) already holds a
//! replica and another rack (broker) holds none.
//!
//! A single-node broker always gets `[[node]; n]`, but the function is the
//! real one so that the scale-out path starts from Kafka's behaviour.

use std::collections::{BTreeMap, BTreeSet};

use rand::Rng;
use thiserror::Error;

/// A broker as placement sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BrokerMetadata {
    pub id: i32,
    pub rack: Option<String>,
}

/// Why replicas cannot be placed.
#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum PlacementError {
    #[error("number of partitions must be larger than 0")]
    InvalidPartitions,
    #[error("replication factor must be larger than 0")]
    InvalidReplicationFactor,
    #[error("replication factor {replication_factor} larger than available brokers {brokers}")]
    NotEnoughBrokers {
        replication_factor: i16,
        brokers: usize,
    },
    #[error("not all brokers have rack information")]
    InconsistentRacks,
}

/// Replica lists for partitions `start_partition..start_partition + partitions`.
/// `fixed_start` replaces both random choices (tests, Kafka's `fixedStartIndex`).
pub(crate) fn assign_replicas(
    brokers: &[BrokerMetadata],
    partitions: i32,
    replication_factor: i16,
    fixed_start: Option<usize>,
    start_partition: i32,
) -> Result<Vec<Vec<i32>>, PlacementError> {
    if partitions <= 0 {
        return Err(PlacementError::InvalidPartitions);
    }
    if replication_factor <= 0 {
        return Err(PlacementError::InvalidReplicationFactor);
    }
    if replication_factor as usize > brokers.len() {
        return Err(PlacementError::NotEnoughBrokers {
            replication_factor,
            brokers: brokers.len(),
        });
    }
    let with_rack = brokers.iter().filter(|b| b.rack.is_some()).count();
    let mut rng = rand::thread_rng();
    let mut pick = |n: usize| fixed_start.unwrap_or_else(|| rng.gen_range(0..n));
    if with_rack == 0 {
        let mut ids: Vec<i32> = brokers.iter().map(|b| b.id).collect();
        ids.sort_unstable();
        Ok(rack_unaware(
            &ids,
            partitions,
            replication_factor,
            pick(ids.len()),
            pick(ids.len()),
            start_partition,
        ))
    } else if with_rack == brokers.len() {
        let racks: BTreeMap<i32, String> = brokers
            .iter()
            .map(|b| (b.id, b.rack.clone().unwrap_or_default()))
            .collect();
        let n = racks.len();
        Ok(rack_aware(
            &racks,
            partitions,
            replication_factor,
            pick(n),
            pick(n),
            start_partition,
        ))
    } else {
        Err(PlacementError::InconsistentRacks)
    }
}

/// Index of the `j`-th follower of the partition led by `first`.
fn replica_index(first: usize, shift: usize, j: usize, n: usize) -> usize {
    let s = 1 + (shift + j) % (n - 1);
    (first + s) % n
}

fn rack_unaware(
    ids: &[i32],
    partitions: i32,
    rf: i16,
    start_index: usize,
    base_shift: usize,
    start_partition: i32,
) -> Vec<Vec<i32>> {
    let n = ids.len();
    let first_pid = start_partition.max(0) as usize;
    (first_pid..first_pid + partitions as usize)
        .map(|pid| {
            // Kafka bumps the shift each time the partition id passes a multiple of n.
            let shift = base_shift + pid / n - first_pid / n;
            let first = (pid + start_index) % n;
            let mut replicas = vec![ids[first]];
            for j in 0..(rf as usize - 1) {
                replicas.push(ids[replica_index(first, shift, j, n)]);
            }
            replicas
        })
        .collect()
}

/// Brokers ordered so that consecutive entries come from different racks
/// (racks in name order, brokers by id within a rack).
fn rack_alternated(racks: &BTreeMap<i32, String>) -> Vec<i32> {
    let mut by_rack: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (id, rack) in racks {
        by_rack.entry(rack.as_str()).or_default().push(*id);
    }
    let mut iters: Vec<std::vec::IntoIter<i32>> =
        by_rack.into_values().map(|v| v.into_iter()).collect();
    let mut out = Vec::with_capacity(racks.len());
    let mut i = 0;
    while out.len() < racks.len() {
        if let Some(id) = iters[i].next() {
            out.push(id);
        }
        i = (i + 1) % iters.len();
    }
    out
}

fn rack_aware(
    racks: &BTreeMap<i32, String>,
    partitions: i32,
    rf: i16,
    start_index: usize,
    base_shift: usize,
    start_partition: i32,
) -> Vec<Vec<i32>> {
    let arranged = rack_alternated(racks);
    let n = arranged.len();
    let num_racks = racks.values().collect::<BTreeSet<_>>().len();
    let mut out = Vec::with_capacity(partitions as usize);
    let first_pid = start_partition.max(0) as usize;
    for pid in first_pid..first_pid + partitions as usize {
        let shift = base_shift + pid / n - first_pid / n;
        let first = (pid + start_index) % n;
        let leader = arranged[first];
        let mut replicas = vec![leader];
        let mut racks_used: BTreeSet<&str> = [racks[&leader].as_str()].into();
        let mut brokers_used: BTreeSet<i32> = [leader].into();
        let mut k = 0;
        for _ in 0..(rf as usize - 1) {
            loop {
                let broker = arranged[replica_index(first, shift * num_racks, k, n)];
                let rack = racks[&broker].as_str();
                k += 1;
                if (!racks_used.contains(rack) || racks_used.len() == num_racks)
                    && (!brokers_used.contains(&broker) || brokers_used.len() == n)
                {
                    replicas.push(broker);
                    racks_used.insert(rack);
                    brokers_used.insert(broker);
                    break;
                }
            }
        }
        out.push(replicas);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brokers(ids: &[i32]) -> Vec<BrokerMetadata> {
        ids.iter()
            .map(|&id| BrokerMetadata { id, rack: None })
            .collect()
    }

    fn racked(pairs: &[(i32, &str)]) -> Vec<BrokerMetadata> {
        pairs
            .iter()
            .map(|&(id, r)| BrokerMetadata {
                id,
                rack: Some(r.to_string()),
            })
            .collect()
    }

    #[test]
    fn single_broker_leads_everything() {
        let a = assign_replicas(&brokers(&[1]), 4, 1, None, 0).unwrap();
        assert_eq!(a, vec![vec![1]; 4]);
    }

    #[test]
    fn rack_unaware_matches_kafka_example() {
        // Kafka's AdminUtils doc example: 5 brokers, 10 partitions, RF 3,
        // start index 0 and shift 0.
        let a = assign_replicas(&brokers(&[0, 1, 2, 3, 4]), 10, 3, Some(0), 0).unwrap();
        let expected: Vec<Vec<i32>> = vec![
            vec![0, 1, 2],
            vec![1, 2, 3],
            vec![2, 3, 4],
            vec![3, 4, 0],
            vec![4, 0, 1],
            vec![0, 2, 3],
            vec![1, 3, 4],
            vec![2, 4, 0],
            vec![3, 0, 1],
            vec![4, 1, 2],
        ];
        assert_eq!(a, expected);
    }

    #[test]
    fn random_assignment_is_balanced_and_distinct() {
        let a = assign_replicas(&brokers(&[5, 6, 7, 8]), 8, 3, None, 0).unwrap();
        let mut leaders = BTreeMap::new();
        for r in &a {
            let set: BTreeSet<_> = r.iter().collect();
            assert_eq!(set.len(), 3, "replicas distinct: {r:?}");
            *leaders.entry(r[0]).or_insert(0) += 1;
        }
        assert!(leaders.values().all(|&c| c == 2), "{leaders:?}");
    }

    #[test]
    fn rack_alternation_and_rack_spread() {
        let b = racked(&[(0, "a"), (1, "a"), (2, "b"), (3, "b"), (4, "c"), (5, "c")]);
        let racks: BTreeMap<i32, String> =
            b.iter().map(|x| (x.id, x.rack.clone().unwrap())).collect();
        assert_eq!(rack_alternated(&racks), vec![0, 2, 4, 1, 3, 5]);
        let a = assign_replicas(&b, 6, 3, Some(0), 0).unwrap();
        for r in &a {
            let rs: BTreeSet<_> = r.iter().map(|id| racks[id].clone()).collect();
            assert_eq!(rs.len(), 3, "one replica per rack: {r:?}");
        }
        assert_eq!(a[0][0], 0);
        assert_eq!(a[1][0], 2);
    }

    #[test]
    fn errors() {
        assert_eq!(
            assign_replicas(&brokers(&[1, 2]), 1, 3, None, 0),
            Err(PlacementError::NotEnoughBrokers {
                replication_factor: 3,
                brokers: 2
            })
        );
        assert_eq!(
            assign_replicas(&brokers(&[1]), 0, 1, None, 0),
            Err(PlacementError::InvalidPartitions)
        );
        let mut mixed = racked(&[(1, "a")]);
        mixed.push(BrokerMetadata { id: 2, rack: None });
        assert_eq!(
            assign_replicas(&mixed, 1, 1, None, 0),
            Err(PlacementError::InconsistentRacks)
        );
    }
}
