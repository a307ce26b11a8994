//! EndTxn (key 26), versions 0–4: the producer commits or aborts. The
//! answer comes once the PrepareCommit/PrepareAbort record is durable; the
//! markers follow in the background (docs/transactions.md).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse};
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;

pub(crate) async fn handle(ctx: &RequestContext, req: EndTxnRequest) -> EndTxnResponse {
    let broker = &ctx.broker;
    let mut resp = EndTxnResponse::default();
    if !ctx.authorize(
        AclOperation::Write,
        ResourceType::TransactionalId,
        req.transactional_id.0.as_str(),
    ) {
        resp.error_code = ResponseError::TransactionalIdAuthorizationFailed.code();
        return resp;
    }
    let r = broker
        .txn
        .end_txn(
            broker,
            req.transactional_id.0.as_str(),
            req.producer_id.0,
            req.producer_epoch,
            req.committed,
        )
        .await;
    resp.error_code = match r {
        Ok(()) => 0,
        Err(ResponseError::ProducerFenced) if ctx.version < 2 => {
            ResponseError::InvalidProducerEpoch.code()
        }
        Err(e) => e.code(),
    };
    resp
}
