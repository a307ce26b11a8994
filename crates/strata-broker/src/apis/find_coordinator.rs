//! FindCoordinator (key 10), versions 0–5: a single broker coordinates
//! every group and transactional id; in a cluster the leader of the key's
//! `__consumer_offsets` (groups) or `__transaction_state` (transactions)
//! partition does. The internal topic is created on first lookup, as Kafka
//! does; if that fails the answer is COORDINATOR_NOT_AVAILABLE, which
//! clients retry.
//! v4+ batches keys in `coordinator_keys`.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::group::{partition_for, OFFSETS_TOPIC};
use crate::txn::TXN_TOPIC;

/// Coordinator key types.
const GROUP: i8 = 0;
const TRANSACTION: i8 = 1;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    // DESCRIBE on each key, before anything else: a denied key gets the
    // authorization error and no node, and creates no internal topic.
    let keys: Vec<&str> = if ctx.version >= 4 {
        req.coordinator_keys.iter().map(|k| k.as_str()).collect()
    } else {
        vec![req.key.as_str()]
    };
    let denial = |key: &str| -> Option<ResponseError> {
        match req.key_type {
            GROUP => (!ctx.authorize(AclOperation::Describe, ResourceType::Group, key))
                .then_some(ResponseError::GroupAuthorizationFailed),
            TRANSACTION => {
                (!ctx.authorize(AclOperation::Describe, ResourceType::TransactionalId, key))
                    .then_some(ResponseError::TransactionalIdAuthorizationFailed)
            }
            _ => None,
        }
    };
    let denials: Vec<Option<ResponseError>> = keys.iter().map(|k| denial(k)).collect();
    let error = if denials.iter().all(Option::is_some) && !denials.is_empty() {
        None
    } else {
        lookup_error(ctx, req.key_type).await
    };
    let find = |key: &str| -> Result<(BrokerId, StrBytes, i32), ResponseError> {
        if let Some(e) = error {
            return Err(e);
        }
        find_one(ctx, req.key_type, key)
    };
    let mut resp = FindCoordinatorResponse::default();
    if ctx.version >= 4 {
        resp.coordinators = req
            .coordinator_keys
            .iter()
            .zip(denials)
            .map(|(key, denied)| {
                let mut c = Coordinator::default();
                c.key = key.clone();
                match denied.map_or_else(|| find(key.as_str()), Err) {
                    Ok((node, host, port)) => {
                        c.node_id = node;
                        c.host = host;
                        c.port = port;
                    }
                    Err(e) => {
                        c.node_id = BrokerId(-1);
                        c.port = -1;
                        c.error_code = e.code();
                    }
                }
                c
            })
            .collect();
    } else {
        let denied = denials.into_iter().next().flatten();
        match denied.map_or_else(|| find(req.key.as_str()), Err) {
            Ok((node, host, port)) => {
                resp.node_id = node;
                resp.host = host;
                resp.port = port;
            }
            Err(e) => {
                resp.node_id = BrokerId(-1);
                resp.port = -1;
                resp.error_code = e.code();
            }
        }
    }
    resp
}

/// Make sure the key type's internal topic exists and its coordinator runs;
/// the error every lookup answers otherwise.
async fn lookup_error(ctx: &RequestContext, key_type: i8) -> Option<ResponseError> {
    let broker = &ctx.broker;
    match key_type {
        GROUP => {
            let created = broker.blocking(|b| b.groups.ensure_offsets_topic(b)).await;
            match created {
                Ok(()) => {
                    broker.groups.ensure_started(broker).await;
                    None
                }
                Err(e) => {
                    tracing::warn!(error = %strata_log::ErrorChain(&e), "cannot create __consumer_offsets");
                    Some(ResponseError::CoordinatorNotAvailable)
                }
            }
        }
        TRANSACTION => {
            let created = broker.blocking(|b| b.txn.ensure_topic(b)).await;
            match created {
                Ok(()) => {
                    broker.txn.ensure_started(broker).await;
                    None
                }
                Err(e) => {
                    tracing::warn!(error = %strata_log::ErrorChain(&e), "cannot create __transaction_state");
                    Some(ResponseError::CoordinatorNotAvailable)
                }
            }
        }
        _ => Some(ResponseError::InvalidRequest),
    }
}

/// The coordinator of `key`: this broker, or in a cluster the leader of the
/// key's internal-topic partition.
fn find_one(
    ctx: &RequestContext,
    key_type: i8,
    key: &str,
) -> Result<(BrokerId, StrBytes, i32), ResponseError> {
    let broker = &ctx.broker;
    match &broker.cluster {
        None => {
            let own = broker
                .advertised_on(&ctx.session.listener)
                .ok_or(ResponseError::CoordinatorNotAvailable)?;
            Ok((
                BrokerId(broker.config.node_id),
                StrBytes::from_string(own.host.clone()),
                i32::from(own.port),
            ))
        }
        // The leader of the key's `__consumer_offsets` or
        // `__transaction_state` partition.
        Some(cluster) => {
            let s = cluster.applied();
            let topic = if key_type == GROUP {
                OFFSETS_TOPIC
            } else {
                TXN_TOPIC
            };
            let count = broker.topics.get(topic).map_or(0, |t| t.partitions);
            if count == 0 {
                return Err(ResponseError::CoordinatorNotAvailable);
            }
            let p = partition_for(key, count);
            let leader = s.partition(topic, p).map_or(-1, |st| st.value.leader);
            let b = s
                .brokers
                .get(&leader)
                .ok_or(ResponseError::CoordinatorNotAvailable)?;
            let (host, port) = b
                .record
                .endpoint(&ctx.session.listener)
                .ok_or(ResponseError::CoordinatorNotAvailable)?;
            Ok((
                BrokerId(b.record.id),
                StrBytes::from_string(host.to_string()),
                i32::from(port),
            ))
        }
    }
}
