//! FindCoordinator (key 10), versions 0–5: this single broker coordinates
//! every group (and every transactional id). For groups it first makes sure
//! `__consumer_offsets` exists, as Kafka creates it on first lookup; if that
//! fails the answer is COORDINATOR_NOT_AVAILABLE, which clients retry.
//! v4+ batches keys in `coordinator_keys`.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use super::RequestContext;

/// Coordinator key types.
const GROUP: i8 = 0;
const TRANSACTION: i8 = 1;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let broker = &ctx.broker;
    let error = match req.key_type {
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
        TRANSACTION => None,
        _ => Some(ResponseError::InvalidRequest),
    };
    let node = BrokerId(broker.config.node_id);
    let host = StrBytes::from_string(broker.advertised.host.clone());
    let port = i32::from(broker.advertised.port);
    let mut resp = FindCoordinatorResponse::default();
    if ctx.version >= 4 {
        resp.coordinators = req
            .coordinator_keys
            .into_iter()
            .map(|key| {
                let mut c = Coordinator::default();
                c.key = key;
                match error {
                    None => {
                        c.node_id = node;
                        c.host = host.clone();
                        c.port = port;
                    }
                    Some(e) => {
                        c.node_id = BrokerId(-1);
                        c.port = -1;
                        c.error_code = e.code();
                    }
                }
                c
            })
            .collect();
    } else {
        match error {
            None => {
                resp.node_id = node;
                resp.host = host;
                resp.port = port;
            }
            Some(e) => {
                resp.node_id = BrokerId(-1);
                resp.port = -1;
                resp.error_code = e.code();
            }
        }
    }
    resp
}
