//! ListTransactions (key 66), versions 0–1: the transactional ids of the
//! `__transaction_state` partitions this broker owns, filtered by state,
//! producer id and (v1) minimum running time.

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{ListTransactionsRequest, ListTransactionsResponse, ProducerId};
use kafka_protocol::protocol::StrBytes;
use strata_log::codec::transaction_log::TxnStatus;
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: ListTransactionsRequest,
) -> ListTransactionsResponse {
    let broker = &ctx.broker;
    let mut resp = ListTransactionsResponse::default();
    let mut states = Vec::new();
    for name in &req.state_filters {
        match TxnStatus::from_name(name.as_str()) {
            Some(s) => states.push(s),
            None => resp.unknown_state_filters.push(name.clone()),
        }
    }
    if states.is_empty() && !req.state_filters.is_empty() {
        // Only unknown states were asked for: nothing matches them.
        return resp;
    }
    let pids: Vec<i64> = req.producer_id_filters.iter().map(|p| p.0).collect();
    let duration = if ctx.version >= 1 {
        req.duration_filter
    } else {
        -1
    };
    match broker.txn.list(broker, &states, &pids, duration).await {
        Ok(list) => {
            // Only the transactional ids the principal may DESCRIBE (a
            // filter: denials are not refusals).
            resp.transaction_states = list
                .into_iter()
                .filter(|l| {
                    ctx.authorize_quietly(
                        AclOperation::Describe,
                        ResourceType::TransactionalId,
                        &l.transactional_id,
                    )
                })
                .map(|l| {
                    let mut s = TransactionState::default();
                    s.transactional_id = kafka_protocol::messages::TransactionalId(
                        StrBytes::from_string(l.transactional_id),
                    );
                    s.producer_id = ProducerId(l.producer_id);
                    s.transaction_state = StrBytes::from_static_str(l.state.name());
                    s
                })
                .collect();
        }
        Err(e) => resp.error_code = e.code(),
    }
    resp
}
