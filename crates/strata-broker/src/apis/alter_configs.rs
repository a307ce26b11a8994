//! AlterConfigs (key 33, versions 0–2: replace a resource's whole config
//! set) and IncrementalAlterConfigs (key 44, versions 0–1: SET / DELETE /
//! APPEND / SUBTRACT per config), for TOPIC and BROKER resources.
//!
//! Topic changes are validated as a whole by `LogConfig::with_overrides`
//! (INVALID_CONFIG), persisted in the topic store and applied to the live
//! logs without a restart. Broker changes (resource `"<broker.id>"` or `""`
//! for the cluster default) go to `crate::dynamic_config`, which validates
//! them as Kafka's broker-side preprocessing does, persists them and pushes
//! new log defaults to every log.

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;
use strata_log::{ConfigType, LogConfig};
use strata_security::acl::AclOperation;

use super::RequestContext;
use crate::api_error::ApiError;
use crate::broker::Broker;
use crate::config_entry::resource;
use crate::dynamic_config::op::{APPEND, DELETE, SET, SUBTRACT};
use crate::dynamic_config::{self, apply_list_op, ConfigOp as Op, DynamicConfigError};

/// Why one resource's change failed.
#[derive(Debug)]
enum Failure {
    Api(ApiError),
    Broker(DynamicConfigError),
    /// ALTER_CONFIGS denied (TOPIC_ / CLUSTER_AUTHORIZATION_FAILED).
    Denied(ResponseError),
}

impl Failure {
    fn code(&self) -> i16 {
        match self {
            Failure::Api(e) => e.code(),
            Failure::Broker(e) => e.code(),
            Failure::Denied(e) => e.code(),
        }
    }

    fn message(&self) -> String {
        match self {
            Failure::Api(e) => e.message(),
            Failure::Broker(e) => e.to_string(),
            Failure::Denied(e) => e.to_string(),
        }
    }
}

/// Kafka answers INVALID_REQUEST for every copy of a resource named twice.
fn duplicated(resources: &[(i8, String, Vec<Op>)]) -> Vec<bool> {
    resources
        .iter()
        .map(|(ty, name, _)| {
            resources
                .iter()
                .filter(|(t, n, _)| t == ty && n == name)
                .count()
                > 1
        })
        .collect()
}

const DUPLICATE_RESOURCE: Failure = Failure::Api(ApiError::InvalidRequest {
    reason: "Each resource must appear at most once.",
});

pub(crate) async fn handle(ctx: &RequestContext, req: AlterConfigsRequest) -> AlterConfigsResponse {
    let validate_only = req.validate_only;
    let resources: Vec<(i8, String, Vec<Op>)> = req
        .resources
        .into_iter()
        .map(|r| {
            let ops = r
                .configs
                .into_iter()
                .map(|c| Op {
                    name: c.name.to_string(),
                    op: SET,
                    value: c.value.map(|v| v.to_string()),
                })
                .collect();
            (r.resource_type, r.resource_name.to_string(), ops)
        })
        .collect();
    let denied = denials(ctx, &resources);
    let results = ctx
        .broker
        .blocking(move |b| apply_all(b, resources, denied, validate_only, false))
        .await;
    let mut resp = AlterConfigsResponse::default();
    for (ty, name, result) in results {
        let mut r =
            kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse::default(
            );
        r.resource_type = ty;
        r.resource_name = StrBytes::from_string(name);
        if let Err(e) = result {
            r.error_code = e.code();
            r.error_message = Some(StrBytes::from_string(e.message()));
        }
        resp.responses.push(r);
    }
    resp
}

pub(crate) async fn handle_incremental(
    ctx: &RequestContext,
    req: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let validate_only = req.validate_only;
    let resources: Vec<(i8, String, Vec<Op>)> = req
        .resources
        .into_iter()
        .map(|r| {
            let ops = r
                .configs
                .into_iter()
                .map(|c| Op {
                    name: c.name.to_string(),
                    op: c.config_operation,
                    value: c.value.map(|v| v.to_string()),
                })
                .collect();
            (r.resource_type, r.resource_name.to_string(), ops)
        })
        .collect();
    let denied = denials(ctx, &resources);
    let results = ctx
        .broker
        .blocking(move |b| apply_all(b, resources, denied, validate_only, true))
        .await;
    let mut resp = IncrementalAlterConfigsResponse::default();
    for (ty, name, result) in results {
        let mut r = kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse::default();
        r.resource_type = ty;
        r.resource_name = StrBytes::from_string(name);
        if let Err(e) = result {
            r.error_code = e.code();
            r.error_message = Some(StrBytes::from_string(e.message()));
        }
        resp.responses.push(r);
    }
    resp
}

/// Apply every resource's ops, each resource on its own (a resource named
/// twice fails both times): `incremental` selects IncrementalAlterConfigs'
/// per-op semantics, otherwise AlterConfigs replaces the whole set.
/// ALTER_CONFIGS on each resource (see `authorize_config_resource`).
fn denials(
    ctx: &RequestContext,
    resources: &[(i8, String, Vec<Op>)],
) -> Vec<Option<ResponseError>> {
    resources
        .iter()
        .map(|(ty, name, _)| {
            ctx.authorize_config_resource(AclOperation::AlterConfigs, *ty, name)
                .err()
        })
        .collect()
}

fn apply_all(
    b: &Broker,
    resources: Vec<(i8, String, Vec<Op>)>,
    denied: Vec<Option<ResponseError>>,
    validate_only: bool,
    incremental_ops: bool,
) -> Vec<(i8, String, Result<(), Failure>)> {
    let dup = duplicated(&resources);
    resources
        .into_iter()
        .zip(dup.into_iter().zip(denied))
        .map(|((ty, name, ops), (dup, denied))| {
            let r = if dup {
                Err(DUPLICATE_RESOURCE)
            } else if let Some(e) = denied {
                Err(Failure::Denied(e))
            } else if incremental_ops {
                let base = b.log_defaults();
                apply(
                    b,
                    ty,
                    &name,
                    validate_only,
                    |current| incremental(&base, current, &ops),
                    |current| dynamic_config::incremental(current, &ops),
                )
            } else {
                apply(
                    b,
                    ty,
                    &name,
                    validate_only,
                    |_| replace_all(&ops),
                    |_| dynamic_config::replace_all(&ops),
                )
            };
            (ty, name, r)
        })
        .collect()
}

fn apply(
    b: &Broker,
    resource_type: i8,
    name: &str,
    validate_only: bool,
    topic_change: impl Fn(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, ApiError>,
    broker_change: impl FnOnce(
        &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, DynamicConfigError>,
) -> Result<(), Failure> {
    match resource_type {
        resource::TOPIC => b
            .alter_topic_configs(name, validate_only, topic_change)
            .map_err(Failure::Api),
        resource::BROKER => b
            .alter_broker_configs(name, validate_only, broker_change)
            .map_err(Failure::Broker),
        _ => Err(Failure::Api(ApiError::InvalidRequest {
            reason: "unsupported resource type",
        })),
    }
}

/// AlterConfigs semantics: the given set replaces all overrides.
fn replace_all(ops: &[Op]) -> Result<BTreeMap<String, String>, ApiError> {
    let mut out = BTreeMap::new();
    for op in ops {
        let value = op
            .value
            .clone()
            .ok_or_else(|| ApiError::InvalidConfigOther {
                reason: format!("null value not supported for {}", op.name),
            })?;
        if out.insert(op.name.clone(), value).is_some() {
            return Err(ApiError::InvalidRequest {
                reason: "duplicate config name in request",
            });
        }
    }
    Ok(out)
}

/// IncrementalAlterConfigs semantics over the current overrides.
fn incremental(
    base: &LogConfig,
    current: &BTreeMap<String, String>,
    ops: &[Op],
) -> Result<BTreeMap<String, String>, ApiError> {
    let mut out = current.clone();
    let mut names = std::collections::BTreeSet::new();
    for op in ops {
        if !names.insert(op.name.as_str()) {
            return Err(ApiError::InvalidRequest {
                reason: "duplicate config name in request",
            });
        }
        let def = LogConfig::definition(&op.name).ok_or_else(|| {
            ApiError::InvalidConfig(strata_log::ConfigError::Unknown {
                name: op.name.clone(),
            })
        })?;
        let value = || {
            op.value
                .clone()
                .ok_or_else(|| ApiError::InvalidConfigOther {
                    reason: format!("null value not supported for {}", op.name),
                })
        };
        match op.op {
            SET => {
                out.insert(op.name.clone(), value()?);
            }
            DELETE => {
                out.remove(&op.name);
            }
            APPEND | SUBTRACT => {
                if def.kind != ConfigType::List {
                    return Err(ApiError::InvalidConfigOther {
                        reason: format!(
                            "{} is not a list config; APPEND/SUBTRACT need one",
                            op.name
                        ),
                    });
                }
                let existing = out
                    .get(&op.name)
                    .cloned()
                    .or_else(|| base.get_as_string(&op.name))
                    .unwrap_or_default();
                let merged = apply_list_op(&existing, &value()?, op.op == APPEND);
                out.insert(op.name.clone(), merged);
            }
            _ => {
                return Err(ApiError::InvalidRequest {
                    reason: "unknown config operation",
                })
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str, op: i8, value: Option<&str>) -> Op {
        Op {
            name: name.into(),
            op,
            value: value.map(str::to_string),
        }
    }

    #[test]
    fn incremental_ops() {
        let base = LogConfig::default();
        let mut cur = BTreeMap::new();
        cur.insert("retention.ms".to_string(), "5".to_string());
        let out = incremental(
            &base,
            &cur,
            &[
                op("retention.ms", DELETE, None),
                op("segment.bytes", SET, Some("1048576")),
                op("cleanup.policy", APPEND, Some("compact")),
            ],
        )
        .unwrap();
        assert!(!out.contains_key("retention.ms"));
        assert_eq!(out["segment.bytes"], "1048576");
        assert_eq!(out["cleanup.policy"], "delete,compact");
        let out2 = incremental(
            &base,
            &out,
            &[op("cleanup.policy", SUBTRACT, Some("delete"))],
        )
        .unwrap();
        assert_eq!(out2["cleanup.policy"], "compact");
        assert!(incremental(&base, &cur, &[op("retention.ms", APPEND, Some("1"))]).is_err());
        assert!(incremental(&base, &cur, &[op("no.such.config", SET, Some("1"))]).is_err());
        assert!(replace_all(&[op("a", SET, Some("1")), op("a", SET, Some("2"))]).is_err());
    }
}
