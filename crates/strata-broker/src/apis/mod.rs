//! One module per Kafka API. Each exposes `handle(ctx, request) -> response`
//! (async); [`handle`] routes a decoded header to it and encodes the answer.
//!
//! [`SUPPORTED`] is the single list of what the broker advertises in
//! ApiVersions and accepts: exactly the APIs implemented here, with minimum
//! versions at the `kafka-protocol` crate's floors and maxima never above
//! Kafka 3.9's.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};

use crate::broker::Broker;
use crate::error::DispatchError;
use crate::response::{encode_with, Response};

pub(crate) mod acls;
pub(crate) mod add_offsets_to_txn;
pub(crate) mod add_partitions_to_txn;
pub(crate) mod alter_configs;
pub(crate) mod alter_partition_reassignments;
pub(crate) mod alter_replica_log_dirs;
pub(crate) mod api_versions;
mod authorize;
pub(crate) mod client_quotas;
pub(crate) mod configs;
pub(crate) mod consumer_group_describe;
pub(crate) mod consumer_group_heartbeat;
pub(crate) mod create_partitions;
pub(crate) mod create_topics;
pub(crate) mod delete_groups;
pub(crate) mod delete_records;
pub(crate) mod delete_topics;
pub(crate) mod describe_cluster;
pub(crate) mod describe_configs;
pub(crate) mod describe_groups;
pub(crate) mod describe_log_dirs;
pub(crate) mod describe_producers;
pub(crate) mod describe_transactions;
pub(crate) mod elect_leaders;
pub(crate) mod end_txn;
pub(crate) mod fetch;
pub(crate) mod find_coordinator;
pub(crate) mod heartbeat;
pub(crate) mod init_producer_id;
pub(crate) mod join_group;
pub(crate) mod leave_group;
pub(crate) mod list_groups;
pub(crate) mod list_offsets;
pub(crate) mod list_partition_reassignments;
pub(crate) mod list_transactions;
pub(crate) mod metadata;
pub(crate) mod offset_commit;
pub(crate) mod offset_delete;
pub(crate) mod offset_fetch;
pub(crate) mod offset_for_leader_epoch;
pub(crate) mod produce;
mod quotas;
pub(crate) mod sasl;
pub(crate) mod scram_credentials;
pub(crate) mod sync_group;
pub(crate) mod txn_offset_commit;
pub(crate) mod write_txn_markers;

/// Highest ApiVersions version (Kafka 3.9: 4).
pub(crate) const API_VERSIONS_MAX: i16 = 4;

/// (API, min version, max version) advertised and served.
pub(crate) const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 11),
    (ApiKey::Fetch, 4, 16),
    (ApiKey::ListOffsets, 1, 9),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::ApiVersions, 0, API_VERSIONS_MAX),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::AlterReplicaLogDirs, 1, 2),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::FindCoordinator, 0, 5),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::AlterPartitionReassignments, 0, 0),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 4),
    (ApiKey::WriteTxnMarkers, 1, 1),
    (ApiKey::TxnOffsetCommit, 0, 4),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 1),
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    (ApiKey::AlterClientQuotas, 0, 1),
];

/// The advertised range of `api`, if served.
pub(crate) fn supported_range(api: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(k, _, _)| *k == api)
        .map(|&(_, min, max)| (min, max))
}

/// What a handler knows about its request.
#[derive(Debug)]
pub(crate) struct RequestContext {
    pub broker: Arc<Broker>,
    pub header: RequestHeader,
    pub api: ApiKey,
    /// The request's API version (the response uses the same).
    pub version: i16,
    /// The client's address (JoinGroup records it as the member's host).
    pub peer: Option<std::net::SocketAddr>,
    /// The connection's listener and principal.
    pub session: Arc<crate::security::Session>,
}

/// Decode the body for `ctx.api`, run its handler, encode the response.
pub(crate) async fn handle(
    ctx: RequestContext,
    body: Bytes,
) -> Result<Option<Response>, DispatchError> {
    macro_rules! route {
        ($module:ident) => {
            route!($module::handle)
        };
        ($($handler:ident)::+) => {{
            let request = decode(&ctx, body)?;
            let response = $($handler)::+(&ctx, request).await;
            Ok(Some(encode(&ctx, &response)?))
        }};
    }
    match ctx.api {
        ApiKey::Produce => {
            let size = body.len();
            let mut outcome = produce::handle(&ctx, decode(&ctx, body)?).await;
            let throttle = quotas::record_produce(&ctx, size);
            outcome.response.throttle_time_ms = throttle_ms(throttle);
            if outcome.synced.is_some() {
                // Durable appends: answered once their fsync is done, while
                // the connection reads its next request.
                let mut response = Response::deferred(async move {
                    outcome.finish_sync(&ctx).await;
                    count_produce_errors(&ctx, &outcome);
                    encode(&ctx, &outcome.response)
                });
                response.throttle = throttle;
                return Ok(Some(response));
            }
            count_produce_errors(&ctx, &outcome);
            if outcome.acks != 0 {
                let mut response = encode(&ctx, &outcome.response)?;
                response.throttle = throttle;
                Ok(Some(response))
            } else if outcome.any_error {
                // acks=0 cannot carry an error: Kafka closes the connection.
                Err(DispatchError::ProduceFailedWithoutAcks)
            } else if !throttle.is_zero() {
                // Nothing to answer, but the channel is still muted.
                let mut mute = Response::from_parts(Vec::new());
                mute.throttle = throttle;
                Ok(Some(mute))
            } else {
                Ok(None)
            }
        }
        // A consumer's Fetch is sized for its quota inside the handler: a
        // throttled answer must leave its fetch session unchanged.
        ApiKey::Fetch => Ok(Some(fetch::handle(&ctx, decode(&ctx, body)?).await)),
        ApiKey::ListOffsets => route!(list_offsets),
        ApiKey::ApiVersions => route!(api_versions),
        ApiKey::Metadata => route!(metadata),
        ApiKey::CreateTopics => route!(create_topics),
        ApiKey::DeleteTopics => route!(delete_topics),
        ApiKey::DeleteRecords => route!(delete_records),
        ApiKey::InitProducerId => route!(init_producer_id),
        ApiKey::OffsetForLeaderEpoch => route!(offset_for_leader_epoch),
        ApiKey::DescribeConfigs => route!(describe_configs),
        ApiKey::AlterConfigs => route!(alter_configs),
        ApiKey::AlterReplicaLogDirs => route!(alter_replica_log_dirs),
        ApiKey::DescribeLogDirs => route!(describe_log_dirs),
        ApiKey::CreatePartitions => route!(create_partitions),
        ApiKey::IncrementalAlterConfigs => route!(alter_configs::handle_incremental),
        ApiKey::DescribeCluster => route!(describe_cluster),
        ApiKey::OffsetCommit => route!(offset_commit),
        ApiKey::OffsetFetch => route!(offset_fetch),
        ApiKey::FindCoordinator => route!(find_coordinator),
        ApiKey::JoinGroup => route!(join_group),
        ApiKey::Heartbeat => route!(heartbeat),
        ApiKey::LeaveGroup => route!(leave_group),
        ApiKey::SyncGroup => route!(sync_group),
        ApiKey::DescribeGroups => route!(describe_groups),
        ApiKey::ListGroups => route!(list_groups),
        ApiKey::DeleteGroups => route!(delete_groups),
        ApiKey::ConsumerGroupHeartbeat => route!(consumer_group_heartbeat),
        ApiKey::ConsumerGroupDescribe => route!(consumer_group_describe),
        ApiKey::OffsetDelete => route!(offset_delete),
        ApiKey::ElectLeaders => route!(elect_leaders),
        ApiKey::AlterPartitionReassignments => route!(alter_partition_reassignments),
        ApiKey::ListPartitionReassignments => route!(list_partition_reassignments),
        ApiKey::AddPartitionsToTxn => route!(add_partitions_to_txn),
        ApiKey::AddOffsetsToTxn => route!(add_offsets_to_txn),
        ApiKey::EndTxn => route!(end_txn),
        ApiKey::WriteTxnMarkers => route!(write_txn_markers),
        ApiKey::TxnOffsetCommit => route!(txn_offset_commit),
        ApiKey::DescribeProducers => route!(describe_producers),
        ApiKey::DescribeTransactions => route!(describe_transactions),
        ApiKey::ListTransactions => route!(list_transactions),
        ApiKey::SaslHandshake => route!(sasl::handshake),
        ApiKey::SaslAuthenticate => route!(sasl::authenticate),
        ApiKey::CreateAcls => route!(acls::create),
        ApiKey::DescribeAcls => route!(acls::describe),
        ApiKey::DeleteAcls => route!(acls::delete),
        ApiKey::DescribeUserScramCredentials => route!(scram_credentials::describe),
        ApiKey::AlterUserScramCredentials => route!(scram_credentials::alter),
        ApiKey::DescribeClientQuotas => route!(client_quotas::describe),
        ApiKey::AlterClientQuotas => route!(client_quotas::alter),
        api => Err(DispatchError::UnsupportedVersion {
            api,
            version: ctx.version,
        }),
    }
}

/// Decode a request body of the context's version.
fn decode<T: Decodable>(ctx: &RequestContext, mut body: Bytes) -> Result<T, DispatchError> {
    T::decode(&mut body, ctx.version).map_err(|e| DispatchError::Decode {
        api: ctx.api,
        version: ctx.version,
        source: e.into(),
    })
}

/// A throttle as the protocol's `throttle_time_ms`.
/// Produce's error counts, one per partition answer.
fn count_produce_errors(ctx: &RequestContext, outcome: &produce::ProduceOutcome) {
    for p in outcome
        .response
        .responses
        .iter()
        .flat_map(|t| t.partition_responses.iter())
    {
        ctx.broker
            .metrics
            .requests
            .error(ApiKey::Produce, p.error_code);
    }
}

fn throttle_ms(throttle: std::time::Duration) -> i32 {
    i32::try_from(throttle.as_millis()).unwrap_or(i32::MAX)
}

/// Encode `body` as the response to `ctx`: size prefix, response header
/// (v0 or v1 by the response's flexibility), body.
fn encode<R: Encodable + HeaderVersion>(
    ctx: &RequestContext,
    body: &R,
) -> Result<Response, DispatchError> {
    encode_with(ctx.header.correlation_id, ctx.api, ctx.version, body).map(Response::from_bytes)
}
