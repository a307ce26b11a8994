//! InitProducerId (key 22), versions 0–5, idempotent producers: a fresh
//! producer id (never reused: allocated from blocks whose end is persisted in
//! the topic store before use) with epoch 0, as Kafka does even when an old
//! id/epoch is supplied.
//!
//! With a transactional id the transaction coordinator answers: a new id
//! gets a producer id and epoch 0, a known one its epoch bumped (fencing
//! the previous producer; an ongoing transaction of it is aborted first and
//! the client retries on CONCURRENT_TRANSACTIONS).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let mut resp = InitProducerIdResponse::default();
    let result = match authorize(ctx, &req) {
        Ok(()) => produce_id(ctx, &req).await,
        Err(e) => Err(e),
    };
    match result {
        Ok((id, epoch)) => {
            resp.producer_id = ProducerId(id);
            resp.producer_epoch = epoch;
        }
        Err(e) => {
            // PRODUCER_FENCED exists from v4; older clients know INVALID_PRODUCER_EPOCH.
            let e = if e == ResponseError::ProducerFenced && ctx.version < 4 {
                ResponseError::InvalidProducerEpoch
            } else {
                e
            };
            resp.error_code = e.code();
            resp.producer_id = ProducerId(-1);
            resp.producer_epoch = -1;
        }
    }
    resp
}

/// A transactional id needs WRITE on it; an idempotent producer needs
/// IDEMPOTENT_WRITE on the cluster or (KIP-679) WRITE on some topic.
fn authorize(ctx: &RequestContext, req: &InitProducerIdRequest) -> Result<(), ResponseError> {
    match req.transactional_id.as_ref() {
        Some(id) => {
            if ctx.authorize(
                AclOperation::Write,
                ResourceType::TransactionalId,
                id.0.as_str(),
            ) {
                Ok(())
            } else {
                Err(ResponseError::TransactionalIdAuthorizationFailed)
            }
        }
        None => {
            if ctx.authorize_cluster_quietly(AclOperation::IdempotentWrite)
                || ctx.authorize_any(AclOperation::Write, ResourceType::Topic)
            {
                Ok(())
            } else {
                Err(ResponseError::ClusterAuthorizationFailed)
            }
        }
    }
}

/// A producer id: from the transaction coordinator for a transactional
/// id, else a fresh one.
async fn produce_id(
    ctx: &RequestContext,
    req: &InitProducerIdRequest,
) -> Result<(i64, i16), ResponseError> {
    match req.transactional_id.as_ref() {
        Some(id) => transactional(ctx, id.0.as_str(), req).await,
        None => ctx
            .broker
            .blocking(|b| b.next_producer_id())
            .await
            .map(|id| (id, 0))
            .map_err(|e| e.kind()),
    }
}

/// A transactional producer: the transaction coordinator's answer.
async fn transactional(
    ctx: &RequestContext,
    id: &str,
    req: &InitProducerIdRequest,
) -> Result<(i64, i16), ResponseError> {
    let expected = match (req.producer_id.0, req.producer_epoch) {
        (-1, -1) => None,
        (-1, _) | (_, -1) => return Err(ResponseError::InvalidRequest),
        (pid, epoch) => Some((pid, epoch)),
    };
    let broker = &ctx.broker;
    broker
        .txn
        .init_producer_id(broker, id, req.transaction_timeout_ms, expected)
        .await
}
