//! DescribeConfigs (key 32), versions 1–4: topic and broker configs with
//! Kafka's names, values, sources, synonyms, types and documentation.
//! BROKER `"<broker.id>"` lists every config with static and dynamic
//! sources; BROKER `""` lists the cluster-default dynamic configs.

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::AclOperation;

use super::configs::topic_entries;
use super::RequestContext;
use crate::api_error::ApiError;
use crate::broker::Broker;
use crate::config_entry::{resource, ConfigEntry};
use crate::dynamic_config::{broker_entries, default_entries};

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let broker = &ctx.broker;
    let mut resp = DescribeConfigsResponse::default();
    for r in req.resources {
        let mut out = DescribeConfigsResult::default();
        out.resource_type = r.resource_type;
        out.resource_name = r.resource_name.clone();
        if let Err(e) = ctx.authorize_config_resource(
            AclOperation::DescribeConfigs,
            r.resource_type,
            r.resource_name.as_str(),
        ) {
            out.error_code = e.code();
            resp.results.push(out);
            continue;
        }
        let entries: Result<Vec<ConfigEntry>, ApiError> = match r.resource_type {
            resource::TOPIC => match broker.topics.get(r.resource_name.as_str()) {
                Some(info) => Ok(topic_entries(broker, &info)),
                None => Err(ApiError::UnknownTopicOrPartition),
            },
            resource::BROKER => broker_resource(broker, r.resource_name.as_str()),
            _ => Err(ApiError::InvalidRequest {
                reason: "unsupported resource type",
            }),
        };
        match entries {
            Ok(entries) => {
                out.configs = entries
                    .into_iter()
                    .filter(|e| match &r.configuration_keys {
                        Some(keys) if !keys.is_empty() => keys.iter().any(|k| k.as_str() == e.name),
                        _ => true,
                    })
                    .map(|e| {
                        to_wire(
                            e,
                            req.include_synonyms,
                            req.include_documentation && ctx.version >= 3,
                            ctx.version,
                        )
                    })
                    .collect();
            }
            Err(e) => {
                out.error_code = e.code();
                out.error_message = Some(StrBytes::from_string(e.message()));
            }
        }
        resp.results.push(out);
    }
    resp
}

/// BROKER `""` is the cluster default level, `"<broker.id>"` this broker
/// (Kafka `ConfigHelper`: anything else is INVALID_REQUEST).
fn broker_resource(broker: &Broker, name: &str) -> Result<Vec<ConfigEntry>, ApiError> {
    if name.is_empty() {
        return Ok(default_entries(&broker.dynamic));
    }
    let id: i32 = name.parse().map_err(|_| ApiError::BrokerIdNotInteger {
        name: name.to_string(),
    })?;
    if id != broker.config.node_id {
        return Err(ApiError::UnexpectedBrokerId {
            expected: broker.config.node_id,
            name: name.to_string(),
        });
    }
    Ok(broker_entries(
        &broker.dynamic,
        &broker.config,
        &broker.advertised,
    ))
}

fn to_wire(
    e: ConfigEntry,
    synonyms: bool,
    documentation: bool,
    version: i16,
) -> DescribeConfigsResourceResult {
    let mut c = DescribeConfigsResourceResult::default();
    let sensitive = crate::config_entry::is_sensitive(&e.name);
    c.name = StrBytes::from_string(e.name);
    c.value = if sensitive {
        None
    } else {
        e.value.map(StrBytes::from_string)
    };
    c.read_only = e.read_only;
    c.config_source = e.source;
    c.is_sensitive = sensitive;
    if synonyms {
        c.synonyms = e
            .synonyms
            .into_iter()
            .map(|(name, value, source)| {
                let mut s = DescribeConfigsSynonym::default();
                let hidden = crate::config_entry::is_sensitive(&name);
                s.name = StrBytes::from_string(name);
                s.value = if hidden {
                    None
                } else {
                    value.map(StrBytes::from_string)
                };
                s.source = source;
                s
            })
            .collect();
    }
    if version >= 3 {
        c.config_type = if sensitive {
            crate::config_entry::PASSWORD_TYPE
        } else {
            e.config_type
        };
        c.documentation = documentation.then(|| StrBytes::from_static_str(e.doc));
    }
    c
}
