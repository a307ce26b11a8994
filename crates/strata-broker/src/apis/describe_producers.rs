//! DescribeProducers (key 61), version 0: the producer state of partitions
//! with a replica on this broker (kafka-transactions.sh `describe-producers`
//! and `find-hanging`): epoch, last sequence and timestamp, coordinator
//! epoch and the first offset of the open transaction.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ProducerId};
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let broker = &ctx.broker;
    let mut resp = DescribeProducersResponse::default();
    for t in req.topics {
        let mut out = TopicResponse::default();
        let info = broker.topics.get(t.name.0.as_str());
        // READ on the topic, before its existence.
        let allowed = ctx.authorize(AclOperation::Read, ResourceType::Topic, t.name.0.as_str());
        for p in t.partition_indexes {
            let mut pr = PartitionResponse::default();
            pr.partition_index = p;
            let log = match &info {
                _ if !allowed => Err(ResponseError::TopicAuthorizationFailed),
                None => Err(ResponseError::UnknownTopicOrPartition),
                Some(info) if p < 0 || p >= info.partitions => {
                    Err(ResponseError::UnknownTopicOrPartition)
                }
                Some(info) => broker
                    .partition_log(info, p)
                    .map_err(|_| ResponseError::NotLeaderOrFollower),
            };
            match log {
                Ok(log) => {
                    pr.active_producers = log
                        .active_producers()
                        .into_iter()
                        .map(|(pid, e)| {
                            let mut s = ProducerState::default();
                            s.producer_id = ProducerId(pid.0);
                            s.producer_epoch = i32::from(e.producer_epoch().0);
                            s.last_sequence = e.last_seq();
                            s.last_timestamp = e.last_timestamp().0;
                            s.coordinator_epoch = e.coordinator_epoch();
                            s.current_txn_start_offset =
                                e.current_txn_first_offset().map_or(-1, |o| o.0);
                            s
                        })
                        .collect();
                }
                Err(e) => pr.error_code = e.code(),
            }
            out.partitions.push(pr);
        }
        out.name = t.name;
        resp.topics.push(out);
    }
    resp
}
