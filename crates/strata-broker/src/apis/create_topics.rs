//! CreateTopics (key 19), versions 2–7: partitions and replication factor
//! (-1 = broker defaults, v4+), explicit replica assignments, per-topic
//! configs validated by `LogConfig::with_overrides`, `validate_only`; v5+
//! answers carry the resulting configs, v7 the topic id.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};

use super::configs::topic_entries;
use super::RequestContext;
use crate::api_error::ApiError;
use crate::broker::Broker;
use crate::topics::TopicInfo;

pub(crate) async fn handle(ctx: &RequestContext, req: CreateTopicsRequest) -> CreateTopicsResponse {
    let mut seen = BTreeMap::<String, usize>::new();
    for t in &req.topics {
        *seen.entry(t.name.to_string()).or_default() += 1;
    }
    // CREATE on the cluster, else on each topic; the created topic's
    // configs are returned only with DESCRIBE_CONFIGS on it.
    let names = || req.topics.iter().map(|t| t.name.as_str());
    let creatable = if ctx.authorize_cluster_quietly(AclOperation::Create) {
        names().map(str::to_string).collect()
    } else {
        ctx.authorized_names(AclOperation::Create, ResourceType::Topic, names())
    };
    let describable =
        ctx.authorized_names(AclOperation::DescribeConfigs, ResourceType::Topic, names());
    let validate_only = req.validate_only;
    let version = ctx.version;
    let topics = req.topics;
    ctx.broker
        .blocking(move |b| {
            let mut resp = CreateTopicsResponse::default();
            for t in topics {
                let name = t.name.to_string();
                let result = if seen[&name] > 1 {
                    Err(ApiError::InvalidRequest {
                        reason: "duplicate topic name in request",
                    })
                } else if !creatable.contains(&name) {
                    Err(ApiError::TopicAuthorizationFailed)
                } else {
                    create_one(b, &t, validate_only)
                };
                let configs_visible = describable.contains(&name);
                resp.topics
                    .push(answer(b, t, result, version, configs_visible));
            }
            resp
        })
        .await
}

fn create_one(b: &Broker, t: &CreatableTopic, validate_only: bool) -> Result<TopicInfo, ApiError> {
    let mut configs = BTreeMap::new();
    for c in &t.configs {
        let value = c
            .value
            .as_ref()
            .ok_or_else(|| ApiError::InvalidConfigOther {
                reason: format!(
                    "null value not supported for topic config {}",
                    c.name.as_str()
                ),
            })?;
        configs.insert(c.name.to_string(), value.to_string());
    }
    let (partitions, rf) = if t.assignments.is_empty() {
        let p = if t.num_partitions == -1 {
            b.config.num_partitions
        } else {
            t.num_partitions
        };
        let rf = if t.replication_factor == -1 {
            b.config.default_replication_factor
        } else {
            t.replication_factor
        };
        (p, rf)
    } else {
        if t.num_partitions != -1 || t.replication_factor != -1 {
            return Err(ApiError::InvalidRequest {
                reason: "both replica assignments and partitions/replication factor were set",
            });
        }
        validate_assignments(b, t)?
    };
    b.create_topic(t.name.as_str(), partitions, rf, configs, validate_only)
}

/// Explicit assignments: partitions 0..n each exactly once, replicas known
/// and distinct, one replication factor.
fn validate_assignments(b: &Broker, t: &CreatableTopic) -> Result<(i32, i16), ApiError> {
    let bad = |reason| Err(ApiError::InvalidReplicaAssignment { reason });
    let indexes: BTreeSet<i32> = t.assignments.iter().map(|a| a.partition_index).collect();
    let n = t.assignments.len() as i32;
    if indexes.len() != t.assignments.len() || indexes.iter().copied().ne(0..n) {
        return bad("partitions must be numbered consecutively from 0");
    }
    let rf = t.assignments[0].broker_ids.len();
    for a in &t.assignments {
        let ids: BTreeSet<i32> = a.broker_ids.iter().map(|id| id.0).collect();
        if a.broker_ids.is_empty() || ids.len() != a.broker_ids.len() {
            return bad("replica lists must be non-empty and without duplicates");
        }
        if a.broker_ids.len() != rf {
            return bad("all partitions must have the same number of replicas");
        }
        if ids.iter().any(|&id| id != b.config.node_id) {
            return bad("replica assignment names an unknown broker");
        }
    }
    Ok((n, rf as i16))
}

fn answer(
    b: &Broker,
    t: CreatableTopic,
    result: Result<TopicInfo, ApiError>,
    version: i16,
    configs_visible: bool,
) -> CreatableTopicResult {
    let mut r = CreatableTopicResult::default();
    r.name = t.name;
    match result {
        Ok(info) => {
            r.topic_id = info.id;
            if version >= 5 {
                r.num_partitions = info.partitions;
                r.replication_factor = 1;
            }
            if version >= 5 && !configs_visible {
                r.topic_config_error_code = ApiError::TopicAuthorizationFailed.code();
                r.configs = None;
            } else if version >= 5 {
                r.configs = Some(
                    topic_entries(b, &info)
                        .into_iter()
                        .map(|e| {
                            let mut c = CreatableTopicConfigs::default();
                            c.name = StrBytes::from_string(e.name);
                            c.value = e.value.map(StrBytes::from_string);
                            c.read_only = e.read_only;
                            c.config_source = e.source;
                            c
                        })
                        .collect(),
                );
            }
        }
        Err(e) => {
            r.error_code = e.code();
            r.error_message = Some(StrBytes::from_string(e.message()));
            r.num_partitions = -1;
            r.replication_factor = -1;
            r.configs = None;
        }
    }
    r
}
