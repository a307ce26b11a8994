//! DescribeTransactions (key 65), version 0: the coordinator's state of
//! each transactional id (kafka-transactions.sh `describe`).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let broker = &ctx.broker;
    let mut resp = DescribeTransactionsResponse::default();
    for id in req.transactional_ids {
        let mut s = TransactionState::default();
        let described = if ctx.authorize(
            AclOperation::Describe,
            ResourceType::TransactionalId,
            id.0.as_str(),
        ) {
            broker.txn.describe(broker, id.0.as_str()).await
        } else {
            Err(ResponseError::TransactionalIdAuthorizationFailed)
        };
        match described {
            Ok(d) => {
                s.transaction_state = StrBytes::from_static_str(d.state.name());
                s.transaction_timeout_ms = d.timeout_ms;
                s.transaction_start_time_ms = d.start_ms;
                s.producer_id = ProducerId(d.producer_id);
                s.producer_epoch = d.epoch;
                // Only partitions of topics the principal may DESCRIBE.
                let describable = ctx.authorized_names(
                    AclOperation::Describe,
                    ResourceType::Topic,
                    d.partitions.iter().map(|(t, _)| t.as_str()),
                );
                for (topic, p) in d.partitions {
                    if !describable.contains(&topic) {
                        continue;
                    }
                    match s.topics.iter_mut().find(|t| t.topic.0.as_str() == topic) {
                        Some(t) => t.partitions.push(p),
                        None => {
                            let mut t = TopicData::default();
                            t.topic = TopicName(topic.into());
                            t.partitions.push(p);
                            s.topics.push(t);
                        }
                    }
                }
            }
            Err(e) => {
                s.error_code = e.code();
                s.transaction_state = StrBytes::from_static_str("");
                s.producer_id = ProducerId(-1);
                s.producer_epoch = -1;
                s.transaction_start_time_ms = -1;
            }
        }
        s.transactional_id = id;
        resp.transaction_states.push(s);
    }
    resp
}
