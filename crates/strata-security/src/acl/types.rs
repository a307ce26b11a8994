//! The ACL vocabulary: Kafka's `ResourceType`, `PatternType`, `AclOperation`
//! and `AclPermissionType` codes, and the bindings built from them
//! (`org.apache.kafka.common.acl.*`, `org.apache.kafka.common.resource.*`).
//!
//! Codes are the `int8` values of the wire protocol (CreateAcls, DescribeAcls,
//! DeleteAcls). `Display` and serde use Kafka's enum names (`TOPIC`,
//! `PREFIXED`, `DESCRIBE_CONFIGS`, `ALLOW`), which is also how Kafka prints
//! them in logs and error messages. Parsing a name is case-insensitive, as
//! Kafka's `fromString` is.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The wildcard resource name: a LITERAL pattern named `*` matches every
/// resource of its type.
pub const WILDCARD_RESOURCE: &str = "*";
/// The wildcard principal: an entry for `User:*` applies to every principal,
/// whatever its type.
pub const WILDCARD_PRINCIPAL: &str = "User:*";
/// The wildcard host: an entry for `*` applies to every client address.
pub const WILDCARD_HOST: &str = "*";
/// The only valid name of the CLUSTER resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// Defines a `#[repr(i8)]` code enum with its wire code, Kafka name, `Display`
/// and a serde representation by name.
macro_rules! code_enum {
    (
        $(#[$meta:meta])*
        $name:ident, $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal => $kname:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(i8)]
        pub enum $name {
            $( $(#[$vmeta])* $variant = $code, )+
        }

        impl $name {
            /// Every value, in code order.
            pub const ALL_VALUES: &'static [$name] = &[$($name::$variant),+];

            /// The value for a wire code. Codes Kafka does not define map to
            /// `Unknown`, as Kafka's `fromCode` does.
            pub fn from_code(code: i8) -> $name {
                match code {
                    $( $code => $name::$variant, )+
                    _ => $name::Unknown,
                }
            }

            /// The wire code.
            pub fn code(self) -> i8 {
                self as i8
            }

            /// Kafka's name for the value (`Display` prints the same).
            pub fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $kname, )+
                }
            }

            /// The value named `name`, ignoring ASCII case; `None` for names
            /// Kafka does not define.
            pub fn from_name(name: &str) -> Option<$name> {
                $name::ALL_VALUES
                    .iter()
                    .copied()
                    .find(|v| v.name().eq_ignore_ascii_case(name))
            }

            /// True for `Unknown`, the value of codes this broker does not know.
            pub fn is_unknown(self) -> bool {
                self == $name::Unknown
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let text = String::deserialize(d)?;
                $name::from_name(&text).ok_or_else(|| {
                    serde::de::Error::custom(format_args!(
                        "unknown {} {:?}",
                        $what, text
                    ))
                })
            }
        }
    };
}

code_enum! {
    /// The kind of resource an ACL protects (Kafka `ResourceType`).
    ResourceType, "resource type" {
        /// A code this broker does not know.
        Unknown = 0 => "UNKNOWN",
        /// Filters only: any resource type.
        Any = 1 => "ANY",
        /// A topic.
        Topic = 2 => "TOPIC",
        /// A consumer group.
        Group = 3 => "GROUP",
        /// The cluster; its only name is `kafka-cluster`.
        Cluster = 4 => "CLUSTER",
        /// A transactional id.
        TransactionalId = 5 => "TRANSACTIONAL_ID",
        /// A delegation token id.
        DelegationToken = 6 => "DELEGATION_TOKEN",
        /// A user (for delegation tokens created on its behalf).
        User = 7 => "USER",
    }
}

code_enum! {
    /// How a pattern's name is matched against resource names (Kafka
    /// `PatternType`).
    PatternType, "pattern type" {
        /// A code this broker does not know.
        Unknown = 0 => "UNKNOWN",
        /// Filters only: any pattern type, name compared exactly.
        Any = 1 => "ANY",
        /// Filters only: every pattern that would apply to the named resource.
        Match = 2 => "MATCH",
        /// The name is the resource name, or `*` for all resources.
        Literal = 3 => "LITERAL",
        /// The name is a prefix of the resource names it covers.
        Prefixed = 4 => "PREFIXED",
    }
}

code_enum! {
    /// An operation on a resource (Kafka `AclOperation`).
    AclOperation, "operation" {
        /// A code this broker does not know.
        Unknown = 0 => "UNKNOWN",
        /// Filters only: any operation.
        Any = 1 => "ANY",
        /// In an ACL: every operation.
        All = 2 => "ALL",
        /// Read (fetch, commit offsets, join a group).
        Read = 3 => "READ",
        /// Write (produce).
        Write = 4 => "WRITE",
        /// Create.
        Create = 5 => "CREATE",
        /// Delete.
        Delete = 6 => "DELETE",
        /// Alter.
        Alter = 7 => "ALTER",
        /// Describe.
        Describe = 8 => "DESCRIBE",
        /// Inter-broker and controller actions.
        ClusterAction = 9 => "CLUSTER_ACTION",
        /// Describe configs.
        DescribeConfigs = 10 => "DESCRIBE_CONFIGS",
        /// Alter configs.
        AlterConfigs = 11 => "ALTER_CONFIGS",
        /// Idempotent produce.
        IdempotentWrite = 12 => "IDEMPOTENT_WRITE",
        /// Create delegation tokens.
        CreateTokens = 13 => "CREATE_TOKENS",
        /// Describe delegation tokens.
        DescribeTokens = 14 => "DESCRIBE_TOKENS",
    }
}

code_enum! {
    /// Whether an ACL grants or refuses (Kafka `AclPermissionType`).
    PermissionType, "permission type" {
        /// A code this broker does not know.
        Unknown = 0 => "UNKNOWN",
        /// Filters only: either permission.
        Any = 1 => "ANY",
        /// Refuse; a matching DENY always wins over any ALLOW.
        Deny = 2 => "DENY",
        /// Grant.
        Allow = 3 => "ALLOW",
    }
}

impl ResourceType {
    /// The operations that make sense on this resource type, in Kafka's
    /// order (`AclEntry.supportedOperations`); the `*_authorized_operations`
    /// bitfields are computed over these. Empty for UNKNOWN and ANY.
    pub fn supported_operations(self) -> &'static [AclOperation] {
        use AclOperation::*;
        match self {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Describe,
                Delete,
                Alter,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Describe, Delete],
            ResourceType::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            ResourceType::TransactionalId => &[Describe, Write],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
            ResourceType::Unknown | ResourceType::Any => &[],
        }
    }
}

/// A resource pattern: which resources an ACL covers (Kafka `ResourcePattern`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourcePattern {
    /// The resource type.
    pub resource_type: ResourceType,
    /// The name: a resource name, `*` (LITERAL wildcard) or a prefix.
    pub name: String,
    /// How `name` is matched.
    pub pattern_type: PatternType,
}

impl ResourcePattern {
    /// A pattern from its parts.
    pub fn new(
        resource_type: ResourceType,
        name: impl Into<String>,
        pattern_type: PatternType,
    ) -> Self {
        ResourcePattern {
            resource_type,
            name: name.into(),
            pattern_type,
        }
    }

    /// True for the LITERAL `*` pattern, which covers every resource of its type.
    pub fn is_wildcard(&self) -> bool {
        self.pattern_type == PatternType::Literal && self.name == WILDCARD_RESOURCE
    }

    /// True if this pattern covers the resource `name` of its own type:
    /// LITERAL equal name, LITERAL `*`, or PREFIXED with `name` starting with
    /// the pattern's name. Other pattern types cover nothing.
    pub fn covers(&self, name: &str) -> bool {
        match self.pattern_type {
            PatternType::Literal => self.name == name || self.name == WILDCARD_RESOURCE,
            PatternType::Prefixed => name.starts_with(self.name.as_str()),
            _ => false,
        }
    }
}

impl fmt::Display for ResourcePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ResourcePattern(resourceType={}, name={}, patternType={})",
            self.resource_type, self.name, self.pattern_type
        )
    }
}

/// Who may (or may not) do what from where (Kafka `AccessControlEntry`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessControlEntry {
    /// The principal as `Type:name` (`User:alice`), or `User:*` for everyone.
    pub principal: String,
    /// The client address as text (`10.0.0.1`, IPv6 in Java's full form
    /// `0:0:0:0:0:0:0:1`, see [`java_host_address`]), or `*` for any host.
    pub host: String,
    /// The operation.
    pub operation: AclOperation,
    /// Allow or deny.
    pub permission: PermissionType,
}

impl AccessControlEntry {
    /// An entry from its parts.
    pub fn new(
        principal: impl Into<String>,
        host: impl Into<String>,
        operation: AclOperation,
        permission: PermissionType,
    ) -> Self {
        AccessControlEntry {
            principal: principal.into(),
            host: host.into(),
            operation,
            permission,
        }
    }
}

impl fmt::Display for AccessControlEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(principal={}, host={}, operation={}, permissionType={})",
            self.principal, self.host, self.operation, self.permission
        )
    }
}

/// One ACL: a resource pattern and an entry (Kafka `AclBinding`).
///
/// Format (serde, inside [`AclDocument`](super::AclDocument)):
/// `{"pattern":{"resource_type":"TOPIC","name":"orders","pattern_type":"LITERAL"},
///   "entry":{"principal":"User:alice","host":"*","operation":"READ","permission":"ALLOW"}}`
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AclBinding {
    /// The resources covered.
    pub pattern: ResourcePattern,
    /// Who, from where, what, allow or deny.
    pub entry: AccessControlEntry,
}

impl AclBinding {
    /// A binding from its parts.
    pub fn new(pattern: ResourcePattern, entry: AccessControlEntry) -> Self {
        AclBinding { pattern, entry }
    }
}

impl fmt::Display for AclBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(pattern={}, entry={})", self.pattern, self.entry)
    }
}

/// A principal string split into type and name at the first `:`, as Kafka's
/// `SecurityUtils.parseKafkaPrincipal` does (`User:CN=a,O=b` is type `User`,
/// name `CN=a,O=b`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrincipalParts<'a> {
    /// The principal type (`User`).
    pub principal_type: &'a str,
    /// The principal name (`alice`).
    pub name: &'a str,
}

/// Splits `principal` as Kafka's `parseKafkaPrincipal` does.
///
/// # Errors
/// [`PrincipalParseError`] if the string is empty or has no `:`.
pub fn parse_principal(principal: &str) -> Result<PrincipalParts<'_>, PrincipalParseError> {
    match principal.split_once(':') {
        Some((principal_type, name)) => Ok(PrincipalParts {
            principal_type,
            name,
        }),
        None => Err(PrincipalParseError {
            principal: principal.to_owned(),
        }),
    }
}

/// A principal string that is not `Type:name`. The message is Kafka's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected a string in format principalType:principalName but got {principal}")]
pub struct PrincipalParseError {
    /// The string that failed to parse.
    pub principal: String,
}

/// Renders a client address as Java's `InetAddress.getHostAddress()` does,
/// which is the text ACL hosts are compared with: IPv4 dotted quad; IPv6 as
/// eight lower-case hex groups without zero compression
/// (`0:0:0:0:0:0:0:1`); IPv4-mapped IPv6 (`::ffff:10.0.0.1`) as the IPv4
/// address, because the JDK reports such peers as `Inet4Address`.
pub fn java_host_address(ip: std::net::IpAddr) -> String {
    use std::fmt::Write as _;
    match ip {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return v4.to_string();
            }
            let mut text = String::with_capacity(39);
            for (i, group) in v6.segments().iter().enumerate() {
                if i > 0 {
                    text.push(':');
                }
                // Writing to a String cannot fail.
                let _ = write!(text, "{group:x}");
            }
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    #[test]
    fn codes_round_trip_and_match_kafka() {
        assert_eq!(ResourceType::from_code(5), ResourceType::TransactionalId);
        assert_eq!(ResourceType::User.code(), 7);
        assert_eq!(PatternType::from_code(4), PatternType::Prefixed);
        assert_eq!(AclOperation::from_code(14), AclOperation::DescribeTokens);
        assert_eq!(AclOperation::IdempotentWrite.code(), 12);
        assert_eq!(PermissionType::from_code(3), PermissionType::Allow);
        for op in AclOperation::ALL_VALUES {
            assert_eq!(AclOperation::from_code(op.code()), *op);
        }
        // Codes Kafka does not define are UNKNOWN, like fromCode.
        assert_eq!(ResourceType::from_code(8), ResourceType::Unknown);
        assert_eq!(AclOperation::from_code(-1), AclOperation::Unknown);
        assert_eq!(PermissionType::from_code(42), PermissionType::Unknown);
        assert!(PatternType::from_code(9).is_unknown());
    }

    #[test]
    fn names_are_kafkas_and_parse_case_insensitively() {
        assert_eq!(
            ResourceType::TransactionalId.to_string(),
            "TRANSACTIONAL_ID"
        );
        assert_eq!(
            AclOperation::DescribeConfigs.to_string(),
            "DESCRIBE_CONFIGS"
        );
        assert_eq!(PatternType::Prefixed.to_string(), "PREFIXED");
        assert_eq!(PermissionType::Deny.to_string(), "DENY");
        assert_eq!(
            AclOperation::from_name("cluster_action"),
            Some(AclOperation::ClusterAction)
        );
        assert_eq!(ResourceType::from_name("Topic"), Some(ResourceType::Topic));
        assert_eq!(PermissionType::from_name("permit"), None);
    }

    #[test]
    fn principal_splits_at_first_colon() {
        let parts = parse_principal("User:CN=a:b,O=c").expect("has a colon");
        assert_eq!(parts.principal_type, "User");
        assert_eq!(parts.name, "CN=a:b,O=c");
        let err = parse_principal("bob").expect_err("no colon");
        assert_eq!(
            err.to_string(),
            "expected a string in format principalType:principalName but got bob"
        );
        assert!(parse_principal("").is_err());
    }

    #[test]
    fn pattern_covers_literal_wildcard_and_prefix() {
        let literal = ResourcePattern::new(ResourceType::Topic, "foo", PatternType::Literal);
        assert!(literal.covers("foo"));
        assert!(!literal.covers("foobar"));
        let wildcard = ResourcePattern::new(ResourceType::Topic, "*", PatternType::Literal);
        assert!(wildcard.is_wildcard() && wildcard.covers("anything"));
        let prefixed = ResourcePattern::new(ResourceType::Topic, "foo", PatternType::Prefixed);
        assert!(prefixed.covers("foo") && prefixed.covers("foobar"));
        assert!(!prefixed.covers("fo"));
        // A PREFIXED `*` is just the prefix "*".
        let star_prefix = ResourcePattern::new(ResourceType::Topic, "*", PatternType::Prefixed);
        assert!(!star_prefix.is_wildcard());
        assert!(!star_prefix.covers("foo") && star_prefix.covers("*foo"));
    }

    #[test]
    fn host_text_is_javas() {
        assert_eq!(
            java_host_address(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
            "10.0.0.1"
        );
        assert_eq!(
            java_host_address(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            "0:0:0:0:0:0:0:1"
        );
        let v6: Ipv6Addr = "2001:db8::ff00:42:8329".parse().expect("valid");
        assert_eq!(
            java_host_address(IpAddr::V6(v6)),
            "2001:db8:0:0:0:ff00:42:8329"
        );
        let mapped: Ipv6Addr = "::ffff:192.168.1.1".parse().expect("valid");
        assert_eq!(java_host_address(IpAddr::V6(mapped)), "192.168.1.1");
    }

    #[test]
    fn binding_display_follows_kafka() {
        let b = AclBinding::new(
            ResourcePattern::new(ResourceType::Topic, "foo", PatternType::Literal),
            AccessControlEntry::new("User:alice", "*", AclOperation::Read, PermissionType::Allow),
        );
        assert_eq!(
            b.to_string(),
            "(pattern=ResourcePattern(resourceType=TOPIC, name=foo, patternType=LITERAL), \
             entry=(principal=User:alice, host=*, operation=READ, permissionType=ALLOW))"
        );
    }
}
