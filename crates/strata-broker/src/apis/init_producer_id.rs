//! InitProducerId (key 22), versions 0–5, idempotent producers: a fresh
//! producer id (never reused: allocated from blocks whose end is persisted in
//! the topic store before use) with epoch 0, as Kafka does even when an old
//! id/epoch is supplied.
//!
//! Transactional ids need a transaction coordinator, which this broker does
//! not have yet. A transactional producer (which finds this broker through
//! FindCoordinator) gets the non-retriable TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
//! so it fails at `initTransactions()` with a clear error instead of looping
//! on a retriable code.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use super::RequestContext;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let mut resp = InitProducerIdResponse::default();
    if req.transactional_id.is_some() {
        // No transaction coordinator yet: refuse clearly instead of pretending.
        resp.error_code = ResponseError::TransactionalIdAuthorizationFailed.code();
        resp.producer_id = ProducerId(-1);
        resp.producer_epoch = -1;
        return resp;
    }
    match ctx.broker.blocking(|b| b.next_producer_id()).await {
        Ok(id) => {
            resp.producer_id = ProducerId(id);
            resp.producer_epoch = 0;
        }
        Err(e) => {
            resp.error_code = e.code();
            resp.producer_id = ProducerId(-1);
            resp.producer_epoch = -1;
        }
    }
    resp
}
