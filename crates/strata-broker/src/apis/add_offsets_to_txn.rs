//! AddOffsetsToTxn (key 25), versions 0–4: adds the group's
//! `__consumer_offsets` partition to the transaction, exactly as
//! AddPartitionsToTxn would (the group coordinator is not contacted).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    let broker = &ctx.broker;
    let mut resp = AddOffsetsToTxnResponse::default();
    if !ctx.authorize(
        AclOperation::Write,
        ResourceType::TransactionalId,
        req.transactional_id.0.as_str(),
    ) {
        resp.error_code = ResponseError::TransactionalIdAuthorizationFailed.code();
        return resp;
    }
    if !ctx.authorize(
        AclOperation::Read,
        ResourceType::Group,
        req.group_id.0.as_str(),
    ) {
        resp.error_code = ResponseError::GroupAuthorizationFailed.code();
        return resp;
    }
    let partition = broker.offsets_partition_of(req.group_id.0.as_str());
    let r = broker
        .txn
        .add_partitions(
            broker,
            req.transactional_id.0.as_str(),
            req.producer_id.0,
            req.producer_epoch,
            &[partition],
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
