//! AddOffsetsToTxn (key 25), versions 0–4: adds the group's
//! `__consumer_offsets` partition to the transaction, exactly as
//! AddPartitionsToTxn would (the group coordinator is not contacted).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};

use super::RequestContext;
use crate::group::{partition_for, OFFSETS_TOPIC};

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    let broker = &ctx.broker;
    let mut resp = AddOffsetsToTxnResponse::default();
    let count = broker
        .topics
        .get(OFFSETS_TOPIC)
        .map_or(broker.config.group.offsets_topic_num_partitions, |t| {
            t.partitions
        });
    let partition = (
        OFFSETS_TOPIC.to_string(),
        partition_for(req.group_id.0.as_str(), count),
    );
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
