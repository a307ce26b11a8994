//! DescribeClientQuotas (key 48) and AlterClientQuotas (key 49), versions
//! 0–1: the `producer_byte_rate`, `consumer_byte_rate`, `request_percentage`
//! (and `controller_mutation_rate`, `connection_creation_rate`) of user,
//! client-id and ip entities, kept in the security store. Describing needs
//! DESCRIBE_CONFIGS on the cluster, altering ALTER_CONFIGS
//! (CLUSTER_AUTHORIZATION_FAILED otherwise). Validation, precedence and
//! filter semantics are `strata_security::quota`'s, with Kafka's messages.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_client_quotas_response::{
    EntityData as AlterEntity, EntryData as AlterEntry,
};
use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::AclOperation;
use strata_security::quota::{DescribeQuotaError, FilterComponent};

use super::RequestContext;

/// An entity as AlterClientQuotas names it: (entity type, name or default).
type Entity = Vec<(String, Option<String>)>;
/// Quota changes: (key, new value or removal).
type Ops = Vec<(String, Option<f64>)>;

pub(crate) async fn describe(
    ctx: &RequestContext,
    req: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    let mut resp = DescribeClientQuotasResponse::default();
    if !ctx.authorize_cluster(AclOperation::DescribeConfigs) {
        resp.error_code = ResponseError::ClusterAuthorizationFailed.code();
        return resp;
    }
    let filter: Vec<FilterComponent> = req
        .components
        .iter()
        .map(|c| FilterComponent {
            entity_type: c.entity_type.to_string(),
            match_type: c.match_type,
            match_name: c._match.as_ref().map(|m| m.to_string()),
        })
        .collect();
    let state = ctx.broker.security.snapshot();
    match state.quotas.describe(&filter, req.strict) {
        Ok(entries) => {
            resp.entries = Some(
                entries
                    .into_iter()
                    .map(|(entity, values)| {
                        let mut e = EntryData::default();
                        e.entity = entity
                            .into_iter()
                            .map(|(t, name)| {
                                let mut d = EntityData::default();
                                d.entity_type = StrBytes::from_string(t);
                                d.entity_name = name.map(StrBytes::from_string);
                                d
                            })
                            .collect();
                        e.values = values
                            .into_iter()
                            .map(|(k, v)| {
                                let mut d = ValueData::default();
                                d.key = StrBytes::from_string(k);
                                d.value = v;
                                d
                            })
                            .collect();
                        e
                    })
                    .collect(),
            );
        }
        Err(e) => {
            resp.error_code = match e {
                DescribeQuotaError::UnsupportedEntityType { .. } => {
                    ResponseError::UnsupportedVersion.code()
                }
                _ => ResponseError::InvalidRequest.code(),
            };
            resp.error_message = Some(StrBytes::from_string(e.to_string()));
        }
    }
    resp
}

pub(crate) async fn alter(
    ctx: &RequestContext,
    req: AlterClientQuotasRequest,
) -> AlterClientQuotasResponse {
    let mut resp = AlterClientQuotasResponse::default();
    let entity_of = |e: &kafka_protocol::messages::alter_client_quotas_request::EntryData| {
        e.entity
            .iter()
            .map(|d| {
                let mut out = AlterEntity::default();
                out.entity_type = d.entity_type.clone();
                out.entity_name = d.entity_name.clone();
                out
            })
            .collect::<Vec<_>>()
    };
    if !ctx.authorize_cluster(AclOperation::AlterConfigs) {
        resp.entries = req
            .entries
            .iter()
            .map(|e| {
                let mut out = AlterEntry::default();
                out.error_code = ResponseError::ClusterAuthorizationFailed.code();
                out.entity = entity_of(e);
                out
            })
            .collect();
        return resp;
    }
    let changes: Vec<(Entity, Ops)> = req
        .entries
        .iter()
        .map(|e| {
            (
                e.entity
                    .iter()
                    .map(|d| {
                        (
                            d.entity_type.to_string(),
                            d.entity_name.as_ref().map(|n| n.to_string()),
                        )
                    })
                    .collect(),
                e.ops
                    .iter()
                    .map(|o| (o.key.to_string(), (!o.remove).then_some(o.value)))
                    .collect(),
            )
        })
        .collect();
    let validate_only = req.validate_only;
    let store = ctx.broker.security.clone();
    let outcome = ctx
        .broker
        .blocking(move |_| {
            store.update(|doc| {
                let results: Vec<Result<(), String>> = changes
                    .iter()
                    .map(|(entity, ops)| {
                        doc.quotas
                            .alter(entity, ops, validate_only)
                            .map_err(|e| e.to_string())
                    })
                    .collect();
                let changed = !validate_only && results.iter().any(Result::is_ok);
                (changed, results)
            })
        })
        .await;
    resp.entries = match outcome {
        Ok(results) => req
            .entries
            .iter()
            .zip(results)
            .map(|(e, r)| {
                let mut out = AlterEntry::default();
                out.entity = entity_of(e);
                if let Err(message) = r {
                    out.error_code = ResponseError::InvalidRequest.code();
                    out.error_message = Some(StrBytes::from_string(message));
                }
                out
            })
            .collect(),
        Err(error) => {
            tracing::error!(error = %strata_log::ErrorChain(&error), "cannot persist client quotas");
            req.entries
                .iter()
                .map(|e| {
                    let mut out = AlterEntry::default();
                    out.entity = entity_of(e);
                    out.error_code = ResponseError::UnknownServerError.code();
                    out
                })
                .collect()
        }
    };
    resp
}
