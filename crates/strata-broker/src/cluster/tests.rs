//! Cluster membership against a real etcd on loopback (the same helper the
//! broker's integration tests use): the controller fence, compare-and-swap
//! on partition states, duplicate broker ids and foreign cluster ids.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::controller::{apply, campaign};
use super::layout::{BrokerRecord, PartitionRecord, Snapshot, TopicRecord};
use super::policy::{plan, Decision};
use super::{Cluster, ClusterError, ClusterSettings};

#[path = "etcd_harness.rs"]
#[allow(dead_code)]
mod etcd;

fn settings(etcd: &etcd::Etcd, prefix: &str, id: i32) -> ClusterSettings {
    ClusterSettings {
        endpoints: vec![etcd.endpoint()],
        prefix: prefix.to_string(),
        node_id: id,
        session_timeout: Duration::from_secs(2),
        heartbeat: Duration::from_millis(500),
        unclean_leader_election: false,
        leader_balance: super::LeaderBalance {
            enable: false,
            check_interval: Duration::from_secs(300),
            per_broker_percentage: 10,
        },
    }
}

fn record(id: i32) -> BrokerRecord {
    BrokerRecord {
        id,
        rack: None,
        listener: "PLAINTEXT".into(),
        host: "127.0.0.1".into(),
        port: 9000 + id as u16,
        endpoints: Vec::new(),
        shutting_down: false,
    }
}

async fn read(c: &Cluster) -> Snapshot {
    let (raw, revision) = c.store.load().await.unwrap();
    Snapshot::parse(&raw, revision)
}

fn update(s: &Snapshot, leader: i32) -> Decision {
    let st = s.partition("t", 0).unwrap();
    Decision::Update {
        topic: "t".into(),
        partition: 0,
        expected: st.mod_revision,
        record: PartitionRecord {
            leader,
            leader_epoch: st.value.leader_epoch + 1,
            partition_epoch: st.value.partition_epoch + 1,
            leader_broker_epoch: 0,
            ..st.value.clone()
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposed_controller_cannot_change_a_partition_and_cas_lets_one_writer_win() {
    let etcd = tokio::task::spawn_blocking(etcd::Etcd::start)
        .await
        .unwrap();
    let a = Cluster::join(settings(&etcd, "/race", 1), record(1), None)
        .await
        .unwrap();
    let b = Cluster::join(settings(&etcd, "/race", 2), record(2), None)
        .await
        .unwrap();
    let s = read(&a).await;
    let term_a = campaign(&a, &s, a.lease.load(Ordering::Acquire))
        .await
        .unwrap()
        .expect("the first campaign wins");
    let s = read(&b).await;
    assert_eq!(
        campaign(&b, &s, b.lease.load(Ordering::Acquire))
            .await
            .unwrap(),
        None,
        "a second controller cannot be elected while the first holds the key"
    );
    let topic = TopicRecord {
        id: uuid::Uuid::new_v4(),
        partitions: 1,
        replication_factor: 1,
        configs: BTreeMap::new(),
    };
    assert!(a.create_topic("t", &topic).await.unwrap());
    let s = read(&a).await;
    let assign = plan(&s, Some(0), false);
    assert!(apply(&a, term_a, &assign[0]).await.unwrap());

    // A's session ends (as when its lease expires): B is elected.
    a.store
        .revoke(a.lease.load(Ordering::Acquire))
        .await
        .unwrap();
    let s = read(&b).await;
    assert!(s.controller.is_none());
    let term_b = campaign(&b, &s, b.lease.load(Ordering::Acquire))
        .await
        .unwrap()
        .expect("B is elected once A's key is gone");
    assert_ne!(term_a, term_b);

    // Both act on the same read of the partition: only the controller in
    // office gets through; the deposed one's write is refused.
    let s = read(&b).await;
    let before = s.partition("t", 0).unwrap().clone();
    assert!(
        !apply(&a, term_a, &update(&s, -1)).await.unwrap(),
        "stale controller fenced"
    );
    assert_eq!(read(&b).await.partition("t", 0), Some(&before));
    assert!(apply(&b, term_b, &update(&s, 2)).await.unwrap());

    // Two writes from one read (same expected revision): exactly one wins.
    let s = read(&b).await;
    let first = apply(&b, term_b, &update(&s, 1)).await.unwrap();
    let second = apply(&b, term_b, &update(&s, -1)).await.unwrap();
    assert!(first && !second);
    let after = read(&b).await;
    let st = &after.partition("t", 0).unwrap().value;
    assert_eq!((st.leader, st.leader_epoch), (1, 2));
    assert_eq!(after.controller_epoch.value, 2, "epochs count elections");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_broker_with_the_same_id_refuses_to_start() {
    let etcd = tokio::task::spawn_blocking(etcd::Etcd::start)
        .await
        .unwrap();
    let first = Cluster::join(settings(&etcd, "/dup", 7), record(7), None)
        .await
        .unwrap();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    first.start(rx);
    let err = Cluster::join(settings(&etcd, "/dup", 7), record(7), None)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            ClusterError::DuplicateBroker {
                id: 7,
                port: 9007,
                ..
            }
        ),
        "{err}"
    );
    assert!(err
        .to_string()
        .contains("two brokers cannot share a node.id"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_brokers_registration_is_waited_out() {
    let etcd = tokio::task::spawn_blocking(etcd::Etcd::start)
        .await
        .unwrap();
    // Registered, never kept alive: the lease runs out like a killed process's.
    let _dead = Cluster::join(settings(&etcd, "/restart", 3), record(3), None)
        .await
        .unwrap();
    let again = Cluster::join(settings(&etcd, "/restart", 3), record(3), None).await;
    assert!(again.is_ok(), "{:?}", again.err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_dirs_of_another_cluster_refuse_to_join() {
    let etcd = tokio::task::spawn_blocking(etcd::Etcd::start)
        .await
        .unwrap();
    let first = Cluster::join(settings(&etcd, "/ids", 1), record(1), Some("aaaa".into()))
        .await
        .unwrap();
    assert_eq!(first.cluster_id(), "aaaa");
    let err = Cluster::join(settings(&etcd, "/ids", 2), record(2), Some("bbbb".into()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClusterError::ClusterIdMismatch { .. }),
        "{err}"
    );
    let joined = Cluster::join(settings(&etcd, "/ids", 2), record(2), None)
        .await
        .unwrap();
    assert_eq!(
        joined.cluster_id(),
        "aaaa",
        "a new broker takes the cluster's id"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_brokers_never_get_overlapping_producer_id_blocks() {
    let etcd = tokio::task::spawn_blocking(etcd::Etcd::start)
        .await
        .unwrap();
    let a = Cluster::join(settings(&etcd, "/pids", 1), record(1), None)
        .await
        .unwrap();
    let b = Cluster::join(settings(&etcd, "/pids", 2), record(2), None)
        .await
        .unwrap();
    let take = |c: std::sync::Arc<Cluster>| async move {
        let mut firsts = Vec::new();
        for _ in 0..25 {
            firsts.push(c.allocate_producer_ids(1000).await.unwrap());
        }
        firsts
    };
    let (from_a, from_b) = tokio::join!(tokio::spawn(take(a)), tokio::spawn(take(b)));
    let mut all: Vec<i64> = from_a.unwrap().into_iter().chain(from_b.unwrap()).collect();
    all.sort_unstable();
    let expected: Vec<i64> = (0..50).map(|i| i * 1000).collect();
    assert_eq!(
        all, expected,
        "every block handed out once, none overlapping"
    );
}
