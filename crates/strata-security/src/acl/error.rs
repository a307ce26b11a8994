//! Errors of the ACL operations. Messages are Kafka's where Kafka has one, so
//! clients see the same `error_message` as from a Kafka broker.

use super::types::{AclOperation, PatternType, PermissionType, PrincipalParseError, ResourceType};

/// Kafka error code INVALID_REQUEST.
const INVALID_REQUEST: i16 = 42;
/// Kafka error code POLICY_VIOLATION.
const POLICY_VIOLATION: i16 = 44;
/// Kafka error code UNKNOWN_SERVER_ERROR.
const UNKNOWN_SERVER_ERROR: i16 = -1;

/// Why one CreateAcls creation or one DeleteAcls filter was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AclError {
    /// A CLUSTER pattern not named `kafka-cluster` (Kafka `AclApis`).
    #[error("The only valid name for the CLUSTER resource is kafka-cluster")]
    InvalidClusterName {
        /// The name given.
        name: String,
    },
    /// An empty resource name (Kafka `AclApis`).
    #[error("Invalid empty resource name")]
    EmptyResourceName,
    /// Resource type UNKNOWN or ANY.
    #[error("Invalid resourceType {0}")]
    InvalidResourceType(ResourceType),
    /// Pattern type other than LITERAL or PREFIXED.
    #[error("Invalid patternType {0}")]
    InvalidPatternType(PatternType),
    /// Operation UNKNOWN or ANY.
    #[error("Invalid operation {0}")]
    InvalidOperation(AclOperation),
    /// Permission other than ALLOW or DENY.
    #[error("Invalid permissionType {0}")]
    InvalidPermission(PermissionType),
    /// A principal that is not `Type:name`. Kafka 3.9 stores such ACLs and
    /// later fails to evaluate them; Strata refuses them up front.
    #[error("expected a string in format principalType:principalName but got {principal}")]
    InvalidPrincipal {
        /// The principal given.
        principal: String,
    },
    /// A DeleteAcls filter with an UNKNOWN resource or pattern type.
    #[error("Unknown patternFilter.")]
    UnknownPatternFilter,
    /// A DeleteAcls filter with an UNKNOWN operation or permission.
    #[error("Unknown entryFilter.")]
    UnknownEntryFilter,
    /// The filter would take the request past the per-request removal limit.
    #[error("Cannot remove more than {limit} acls in a single delete operation.")]
    TooManyDeletions {
        /// The limit (10000, Kafka's `MAX_RECORDS_PER_USER_OP`).
        limit: usize,
    },
    /// The request would create more ACLs than one batch may hold; nothing of
    /// it is applied.
    #[error("Unable to perform excessively large batch operation.")]
    TooManyCreations {
        /// The limit (10000).
        limit: usize,
        /// How many new ACLs the request would have created.
        requested: usize,
    },
}

impl AclError {
    /// The Kafka error code for the per-item result: INVALID_REQUEST (42) for
    /// invalid bindings and filters, POLICY_VIOLATION (44) for an oversized
    /// create (what Kafka's controller answers), UNKNOWN_SERVER_ERROR (-1) for
    /// an oversized delete (Kafka's `BoundedListTooLongException` is not an
    /// API exception; Kafka then sends no message either).
    pub fn error_code(&self) -> i16 {
        match self {
            AclError::TooManyCreations { .. } => POLICY_VIOLATION,
            AclError::TooManyDeletions { .. } => UNKNOWN_SERVER_ERROR,
            _ => INVALID_REQUEST,
        }
    }
}

/// A `super.users` value with an item that is not `Type:name`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid super.users: {source}")]
pub struct SuperUsersError {
    /// The offending item, with Kafka's message.
    #[source]
    pub source: PrincipalParseError,
}

/// Why a persisted ACL document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum AclDocumentError {
    /// Not JSON, or not the shape of the document's version.
    #[error("ACL document is not valid JSON of the expected shape: {source}")]
    Json {
        /// The parser's error, with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// A `version` this broker cannot read.
    #[error(
        "ACL document version {found} is not supported (this broker reads version {supported})"
    )]
    UnsupportedVersion {
        /// The version in the document.
        found: u64,
        /// The version this code reads.
        supported: u64,
    },
    /// An entry that CreateAcls would have refused.
    #[error("ACL document entry {index} ({binding}) is invalid: {source}")]
    InvalidBinding {
        /// Its position in `acls`, from 0.
        index: usize,
        /// The entry, as Kafka prints bindings.
        binding: String,
        /// Why it is invalid.
        #[source]
        source: AclError,
    },
}
