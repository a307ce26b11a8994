//! The authorization checks every API makes (Kafka's `AuthHelper`): with
//! `authorizer.class.name` set, the connection's principal and address are
//! checked against the ACLs of the security store; without it everything is
//! allowed, as in Kafka. A denial is logged (Kafka's `kafka.authorizer.logger`
//! logs denials at INFO) with the principal, operation and resource, never
//! the request's data.
//!
//! Each handler makes its API's checks (Kafka 3.9's `KafkaApis` and the
//! controller's, in their order) before it touches a log, a coordinator or
//! the topic store: a denied resource never reaches the code with side
//! effects, and topic checks come before existence checks so a denied
//! principal cannot tell which topics exist. Produce checks no
//! IDEMPOTENT_WRITE (Kafka authorizes idempotence at InitProducerId only).

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
        self.check(op, resource_type, name, true)
    }

    /// [`Self::authorize`] for a check whose denial is not a refusal (Kafka's
    /// `logIfDenied = false`: a first try before a fallback check); a
    /// denial is logged at DEBUG only.
    pub(crate) fn authorize_quietly(
        &self,
        op: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        self.check(op, resource_type, name, false)
    }

    fn check(
        &self,
        op: AclOperation,
        resource_type: ResourceType,
        name: &str,
        log_denied: bool,
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
        } else if !log_denied {
            tracing::debug!(principal = %self.session.principal, %host, %op, %resource_type, resource = name, api = ?self.api, %decision, "authorization denied (a fallback check follows)");
            false
        } else {
            tracing::info!(principal = %self.session.principal, %host, %op, %resource_type, resource = name, api = ?self.api, %decision, "authorization denied");
            false
        }
    }

    /// May this connection do `op` on the cluster?
    pub(crate) fn authorize_cluster(&self, op: AclOperation) -> bool {
        self.authorize(op, ResourceType::Cluster, CLUSTER)
    }

    /// [`Self::authorize_cluster`] without logging a denial at INFO.
    pub(crate) fn authorize_cluster_quietly(&self, op: AclOperation) -> bool {
        self.authorize_quietly(op, ResourceType::Cluster, CLUSTER)
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

impl RequestContext {
    /// Kafka's `filterByAuthorized`: the distinct `names` this connection
    /// may do `op` on (each name is checked once).
    pub(crate) fn authorized_names<'a>(
        &self,
        op: AclOperation,
        resource_type: ResourceType,
        names: impl IntoIterator<Item = &'a str>,
    ) -> std::collections::HashSet<String> {
        let mut seen = std::collections::HashSet::new();
        let mut allowed = std::collections::HashSet::new();
        for name in names {
            if seen.insert(name) && self.authorize(op, resource_type, name) {
                allowed.insert(name.to_string());
            }
        }
        allowed
    }
}

/// ConfigResource type codes Kafka authorizes on the cluster besides
/// BROKER (4): BROKER_LOGGER 8 and CLIENT_METRICS 16.
const BROKER_LOGGER: i8 = 8;
const CLIENT_METRICS: i8 = 16;

impl RequestContext {
    /// DescribeConfigs / AlterConfigs / IncrementalAlterConfigs: `op`
    /// (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the topic for a TOPIC
    /// resource, on the cluster for broker-wide ones; the error Kafka
    /// answers for that resource when denied. Other resource types are left
    /// to the handler (it refuses them).
    pub(crate) fn authorize_config_resource(
        &self,
        op: AclOperation,
        config_resource_type: i8,
        name: &str,
    ) -> Result<(), kafka_protocol::error::ResponseError> {
        use crate::config_entry::resource;
        use kafka_protocol::error::ResponseError as R;
        match config_resource_type {
            resource::TOPIC if !self.authorize(op, ResourceType::Topic, name) => {
                Err(R::TopicAuthorizationFailed)
            }
            resource::BROKER | BROKER_LOGGER | CLIENT_METRICS if !self.authorize_cluster(op) => {
                Err(R::ClusterAuthorizationFailed)
            }
            _ => Ok(()),
        }
    }
}
