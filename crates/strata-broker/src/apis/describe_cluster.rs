//! DescribeCluster (key 60), versions 0–1: the cluster id, the live brokers
//! (this one alone in single-node mode) and the controller. Endpoint type 2 (controllers) is
//! refused with UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker does.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;

const BROKERS: i8 = 1;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let broker = &ctx.broker;
    let mut resp = DescribeClusterResponse::default();
    if ctx.version >= 1 {
        resp.endpoint_type = req.endpoint_type;
        if req.endpoint_type != BROKERS {
            resp.error_code = ResponseError::UnsupportedEndpointType.code();
            resp.error_message = Some(StrBytes::from_static_str(
                "only broker endpoints can be described on a broker",
            ));
            return resp;
        }
    }
    resp.cluster_id = StrBytes::from_string(broker.cluster_id.clone());
    resp.controller_id = BrokerId(broker.controller_id());
    resp.brokers = broker
        .live_brokers(&ctx.session.listener)
        .into_iter()
        .map(|e| {
            let mut b = DescribeClusterBroker::default();
            b.broker_id = BrokerId(e.id);
            b.host = StrBytes::from_string(e.host);
            b.port = i32::from(e.port);
            b.rack = e.rack.map(StrBytes::from_string);
            b
        })
        .collect();
    if req.include_cluster_authorized_operations {
        // Kafka's AuthHelper: the bit field needs DESCRIBE on the cluster.
        resp.cluster_authorized_operations = if ctx.authorize_cluster(AclOperation::Describe) {
            ctx.authorized_operations(ResourceType::Cluster, super::authorize::CLUSTER)
        } else {
            0
        };
    }
    resp
}
