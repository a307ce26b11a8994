//! AddOffsetsToTxn (key 25), versions 0–4: adds the group's
//! `__consumer_offsets` partition to the transaction, exactly as
//! AddPartitionsToTxn would (the group coordinator is not contacted).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};

use super::RequestContext;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    let broker = &ctx.broker;
    let mut resp = AddOffsetsToTxnResponse::default();
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
