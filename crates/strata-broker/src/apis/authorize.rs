//! The authorization checks every API makes (Kafka's `AuthHelper`): with
//! `authorizer.class.name` set, the connection's principal and address are
//! checked against the ACLs of the security store; without it everything is
//! allowed, as in Kafka. A denial is logged (Kafka's `kafka.authorizer.logger`
//! logs denials at INFO) with the principal, operation and resource, never
//! the request's data.

use strata_security::acl::{java_host_address, AclOperation, ResourceType};

use super::RequestContext;

/// The resource name of the cluster (Kafka's `kafka-cluster`).
pub(crate) const CLUSTER: &str = "kafka-cluster";

impl RequestContext {
    fn host(&self) -> String {
        self.session
            .peer
            .map(|p| java_host_address(p.ip()))
            .unwrap_or_else(|| "*".to_string())
    }

    /// May this connection do `op` on `name` of `resource_type`?
    pub(crate) fn authorize(
        &self,
        op: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        if !self.broker.config.security.authorizer_enabled {
            return true;
        }
        let host = self.host();
        let state = self.broker.security.snapshot();
        let decision =
            state
                .authorizer
                .authorize(&self.session.principal, &host, op, resource_type, name);
        if decision.is_allowed() {
            tracing::trace!(principal = %self.session.principal, %host, %op, %resource_type, resource = name, api = ?self.api, "authorized");
            true
        } else {
            tracing::info!(principal = %self.session.principal, %host, %op, %resource_type, resource = name, api = ?self.api, %decision, "authorization denied");
            false
        }
    }

    /// May this connection do `op` on the cluster?
    pub(crate) fn authorize_cluster(&self, op: AclOperation) -> bool {
        self.authorize(op, ResourceType::Cluster, CLUSTER)
    }

    /// Kafka's `authorizeByResourceType`: is `op` allowed on at least one
    /// resource of `resource_type` (used where Kafka asks "any topic").
    pub(crate) fn authorize_any(&self, op: AclOperation, resource_type: ResourceType) -> bool {
        if !self.broker.config.security.authorizer_enabled {
            return true;
        }
        self.broker.security.snapshot().authorizer.authorize_any(
            &self.session.principal,
            &self.host(),
            op,
            resource_type,
        )
    }

    /// Kafka's authorized-operations bit field of a resource (Metadata,
    /// DescribeGroups, DescribeCluster when asked): every operation when no
    /// authorizer is configured.
    pub(crate) fn authorized_operations(&self, resource_type: ResourceType, name: &str) -> i32 {
        let state = self.broker.security.snapshot();
        if !self.broker.config.security.authorizer_enabled {
            let all = resource_type
                .supported_operations()
                .iter()
                .fold(0i32, |acc, op| acc | (1 << op.code()));
            return all;
        }
        state.authorizer.authorized_operations(
            &self.session.principal,
            &self.host(),
            resource_type,
            name,
        )
    }
}
