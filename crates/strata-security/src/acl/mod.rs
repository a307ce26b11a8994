//! ACLs and Kafka's standard authorizer, as pure functions over snapshots.
//!
//! Follows Kafka 3.9: `org.apache.kafka.common.acl.*` and
//! `org.apache.kafka.common.resource.*` for the model and the filters,
//! `StandardAuthorizer` / `StandardAuthorizerData` for decisions, the default
//! `Authorizer.authorizeByResourceType`, and `AclApis` plus
//! `AclControlManager` for what CreateAcls and DeleteAcls accept and do.
//! The broker owns persistence (an [`AclDocument`]), the wire protocol and
//! the audit log; it swaps an `Arc<Authorizer>` whenever the ACLs change.
//!
//! Differences from Kafka, all deliberate:
//! - CreateAcls refuses principals that are not `Type:name` (Kafka 3.9 stores
//!   them and then fails while authorizing).
//! - A DeleteAcls filter that crosses the 10000-removal limit removes nothing
//!   (Kafka keeps what it had collected before the limit).
//! - `authorize` / `authorize_any` with an UNKNOWN or ANY operation or
//!   resource type deny instead of throwing.
//! - There is no "not ready" state: a snapshot exists only once the ACLs are
//!   loaded.
//!
//! # Layout
//! - `types`: the code enums, [`ResourcePattern`], [`AccessControlEntry`],
//!   [`AclBinding`], principal parsing and the client-host text.
//! - `filter`: [`AclBindingFilter`] and its halves, with Kafka's matching.
//! - `mutate`: [`validate_new`], [`create`], [`delete`].
//! - `authorizer`: [`AuthorizerConfig`], [`Authorizer`], [`Decision`].
//! - `document`: [`AclDocument`], the persisted JSON.
//! - `error`: [`AclError`] and the other error types.

mod authorizer;
mod document;
mod error;
mod filter;
mod mutate;
mod types;

pub use authorizer::{Authorizer, AuthorizerConfig, Decision, Rule};
pub use document::AclDocument;
pub use error::{AclDocumentError, AclError, SuperUsersError};
pub use filter::{AccessControlEntryFilter, AclBindingFilter, ResourcePatternFilter};
pub use mutate::{create, delete, validate_new, MAX_ACLS_PER_REQUEST};
pub use types::{
    java_host_address, parse_principal, AccessControlEntry, AclBinding, AclOperation, PatternType,
    PermissionType, PrincipalParseError, PrincipalParts, ResourcePattern, ResourceType,
    CLUSTER_NAME, WILDCARD_HOST, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE,
};
