//! DescribeConfigs (key 32), versions 1–4: topic and broker configs with
//! Kafka's names, values, sources, synonyms, types and documentation.

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::protocol::StrBytes;

use super::configs::{broker_entries, resource, topic_entries, ConfigEntry};
use super::RequestContext;
use crate::errors::ApiError;

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
        let entries = match r.resource_type {
            resource::TOPIC => match broker.topics.get(r.resource_name.as_str()) {
                Some(info) => Ok(topic_entries(broker, &info)),
                None => Err(ApiError::UnknownTopicOrPartition),
            },
            resource::BROKER => {
                let name = r.resource_name.as_str();
                if name.is_empty() || name == broker.config.node_id.to_string() {
                    Ok(broker_entries(broker))
                } else {
                    Err(ApiError::InvalidRequest {
                        reason: "broker resource name is not this broker's id",
                    })
                }
            }
            _ => Err(ApiError::InvalidRequest {
                reason: "unsupported resource type",
            }),
        };
        match entries {
            Ok(entries) => {
                out.configs = entries
                    .into_iter()
                    .filter(|e| match &r.configuration_keys {
                        Some(keys) => keys.iter().any(|k| k.as_str() == e.name),
                        None => true,
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

fn to_wire(
    e: ConfigEntry,
    synonyms: bool,
    documentation: bool,
    version: i16,
) -> DescribeConfigsResourceResult {
    let mut c = DescribeConfigsResourceResult::default();
    c.name = StrBytes::from_string(e.name);
    c.value = e.value.map(StrBytes::from_string);
    c.read_only = e.read_only;
    c.config_source = e.source;
    c.is_sensitive = false;
    if synonyms {
        c.synonyms = e
            .synonyms
            .into_iter()
            .map(|(name, value, source)| {
                let mut s = DescribeConfigsSynonym::default();
                s.name = StrBytes::from_string(name);
                s.value = value.map(StrBytes::from_string);
                s.source = source;
                s
            })
            .collect();
    }
    if version >= 3 {
        c.config_type = e.config_type;
        c.documentation = documentation.then(|| StrBytes::from_static_str(e.doc));
    }
    c
}
