//! The controller: one broker, elected through etcd, turns the policy's
//! decisions into writes.
//!
//! Election: a transaction that creates `controller` (under the broker's
//! lease) only if it does not exist, and bumps `controller-epoch` only if
//! nobody bumped it since it was read. The `controller` key's create
//! revision is the controller's *term*: every controller write compares it,
//! so once the key expires or another broker's replaces it, a deposed
//! controller's writes fail instead of racing the new one. Each partition
//! write also compares the partition key's revision (compare-and-swap), so
//! two writers can never both change one partition's state.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::layout::{self, ControllerRecord, Snapshot};
use super::policy::{self, Decision};
use super::store::{Cond, Op};
use super::{Cluster, ClusterError};

/// etcd refuses transactions of more than 128 operations by default.
const MAX_TXN_OPS: usize = 100;

/// Campaign, and while elected, act on every snapshot.
pub(super) async fn run(cluster: Arc<Cluster>, mut shutdown: watch::Receiver<bool>) {
    let mut rx = cluster.subscribe();
    // Re-plan now and then even without a change: a write that lost a race
    // is retried from the newer state.
    let mut retry = tokio::time::interval(Duration::from_secs(1));
    loop {
        let snapshot = rx.borrow_and_update().clone();
        if let Err(error) = step(&cluster, &snapshot).await {
            cluster.set_reachable(!error.is_unreachable());
            tracing::debug!(error = %strata_log::ErrorChain(&error), "controller step failed");
        }
        tokio::select! {
            r = rx.changed() => if r.is_err() { return },
            _ = retry.tick() => {}
            _ = shutdown.changed() => return,
        }
        if *shutdown.borrow() {
            return;
        }
    }
}

async fn step(cluster: &Cluster, s: &Snapshot) -> Result<(), ClusterError> {
    let me = cluster.settings.node_id;
    let term = cluster.term.load(Ordering::Acquire);
    match &s.controller {
        None => {
            if s.revision == 0 || !s.is_live(me) {
                return Ok(());
            }
            let lease = cluster.lease.load(Ordering::Acquire);
            if let Some(term) = campaign(cluster, s, lease).await? {
                cluster.term.store(term, Ordering::Release);
                tracing::info!(
                    node_id = me,
                    epoch = s.controller_epoch.value + 1,
                    term,
                    "elected controller"
                );
            }
            Ok(())
        }
        Some(c) if c.record.id == me && c.create_revision == term => {
            for d in policy::plan(s, None, cluster.settings.unclean_leader_election) {
                match apply(cluster, term, &d).await {
                    Ok(true) => tracing::info!(decision = ?d, "controller applied"),
                    Ok(false) => {
                        tracing::debug!(decision = ?d, "controller write lost a race; re-planning");
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }
        Some(_) => {
            if term != 0 {
                tracing::info!(node_id = me, "no longer the controller");
                cluster.term.store(0, Ordering::Release);
            }
            Ok(())
        }
    }
}

/// Try to become controller in `s`'s state; `Some(term)` when elected.
pub(crate) async fn campaign(
    cluster: &Cluster,
    s: &Snapshot,
    lease: i64,
) -> Result<Option<i64>, ClusterError> {
    let epoch = s.controller_epoch.value + 1;
    let record = ControllerRecord {
        id: cluster.settings.node_id,
        epoch,
    };
    let value = serde_json::to_vec(&record).expect("controller record serializes");
    cluster
        .store
        .txn(
            &[
                Cond::CreateRevision(layout::CONTROLLER.into(), 0),
                Cond::ModRevision(
                    layout::CONTROLLER_EPOCH.into(),
                    s.controller_epoch.mod_revision,
                ),
            ],
            &[
                Op::PutLeased(layout::CONTROLLER.into(), value, lease),
                Op::Put(
                    layout::CONTROLLER_EPOCH.into(),
                    epoch.to_string().into_bytes(),
                ),
            ],
        )
        .await
}

/// Write one decision as controller of term `term`. `Ok(false)`: a
/// condition failed (deposed, or the partition changed since it was read).
pub(crate) async fn apply(
    cluster: &Cluster,
    term: i64,
    d: &Decision,
) -> Result<bool, ClusterError> {
    let fence = Cond::CreateRevision(layout::CONTROLLER.into(), term);
    match d {
        Decision::Assign { topic, partitions } => {
            for chunk in partitions.chunks(MAX_TXN_OPS) {
                let mut when = vec![fence.clone()];
                let mut ops = Vec::new();
                for (p, record) in chunk {
                    let key = layout::partition_key(topic, *p);
                    when.push(Cond::ModRevision(key.clone(), 0));
                    ops.push(Op::Put(
                        key,
                        serde_json::to_vec(record).expect("serializes"),
                    ));
                }
                if cluster.store.txn(&when, &ops).await?.is_none() {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        Decision::Update {
            topic,
            partition,
            expected,
            record,
        } => {
            let key = layout::partition_key(topic, *partition);
            let when = [fence, Cond::ModRevision(key.clone(), *expected)];
            let ops = [Op::Put(
                key,
                serde_json::to_vec(record).expect("serializes"),
            )];
            Ok(cluster.store.txn(&when, &ops).await?.is_some())
        }
        Decision::Remove {
            topic,
            partition,
            expected,
        } => {
            let key = layout::partition_key(topic, *partition);
            let when = [fence, Cond::ModRevision(key.clone(), *expected)];
            Ok(cluster
                .store
                .txn(&when, &[Op::Delete(key)])
                .await?
                .is_some())
        }
    }
}
