//! DescribeAcls / DeleteAcls filters, with the matching rules of Kafka's
//! `ResourcePatternFilter`, `AccessControlEntryFilter` and `AclBindingFilter`.
//!
//! A `None` name, principal or host matches anything, as a null field does on
//! the wire. Pattern type `ANY` compares names exactly whatever the pattern
//! type; `MATCH` selects every pattern that would apply to the named resource
//! (LITERAL same name, LITERAL `*`, PREFIXED whose name is a prefix of it).

use std::fmt;

use super::error::AclError;
use super::types::{
    AccessControlEntry, AclBinding, AclOperation, PatternType, PermissionType, ResourcePattern,
    ResourceType,
};

/// Selects resource patterns (Kafka `ResourcePatternFilter`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResourcePatternFilter {
    /// `Any` or the exact type.
    pub resource_type: ResourceType,
    /// `None` for any name.
    pub name: Option<String>,
    /// `Any`, `Match`, or the exact pattern type.
    pub pattern_type: PatternType,
}

impl ResourcePatternFilter {
    /// Matches every pattern.
    pub const ANY: ResourcePatternFilter = ResourcePatternFilter {
        resource_type: ResourceType::Any,
        name: None,
        pattern_type: PatternType::Any,
    };

    /// A filter from its parts.
    pub fn new(resource_type: ResourceType, name: Option<&str>, pattern_type: PatternType) -> Self {
        ResourcePatternFilter {
            resource_type,
            name: name.map(str::to_owned),
            pattern_type,
        }
    }

    /// True if the resource or pattern type is `Unknown`; DeleteAcls refuses
    /// such filters.
    pub fn is_unknown(&self) -> bool {
        self.resource_type.is_unknown() || self.pattern_type.is_unknown()
    }

    /// Kafka's `ResourcePatternFilter.matches`.
    pub fn matches(&self, pattern: &ResourcePattern) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != pattern.resource_type {
            return false;
        }
        let any_or_match = matches!(self.pattern_type, PatternType::Any | PatternType::Match);
        if !any_or_match && self.pattern_type != pattern.pattern_type {
            return false;
        }
        let Some(name) = &self.name else {
            return true;
        };
        if self.pattern_type == PatternType::Any || self.pattern_type == pattern.pattern_type {
            return *name == pattern.name;
        }
        // MATCH: would `pattern` apply to the resource called `name`? Kafka
        // throws for stored patterns that are neither LITERAL nor PREFIXED;
        // such a pattern applies to nothing, so it is not matched.
        pattern.covers(name)
    }
}

impl fmt::Display for ResourcePatternFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ResourcePattern(resourceType={}, name={}, patternType={})",
            self.resource_type,
            self.name.as_deref().unwrap_or("<any>"),
            self.pattern_type
        )
    }
}

/// Selects access control entries (Kafka `AccessControlEntryFilter`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AccessControlEntryFilter {
    /// `None` for any principal; otherwise compared exactly (`User:*` selects
    /// only entries for the wildcard principal).
    pub principal: Option<String>,
    /// `None` for any host; otherwise compared exactly.
    pub host: Option<String>,
    /// `Any` or the exact operation.
    pub operation: AclOperation,
    /// `Any` or the exact permission.
    pub permission: PermissionType,
}

impl AccessControlEntryFilter {
    /// Matches every entry.
    pub const ANY: AccessControlEntryFilter = AccessControlEntryFilter {
        principal: None,
        host: None,
        operation: AclOperation::Any,
        permission: PermissionType::Any,
    };

    /// A filter from its parts.
    pub fn new(
        principal: Option<&str>,
        host: Option<&str>,
        operation: AclOperation,
        permission: PermissionType,
    ) -> Self {
        AccessControlEntryFilter {
            principal: principal.map(str::to_owned),
            host: host.map(str::to_owned),
            operation,
            permission,
        }
    }

    /// True if the operation or permission is `Unknown`; DeleteAcls refuses
    /// such filters.
    pub fn is_unknown(&self) -> bool {
        self.operation.is_unknown() || self.permission.is_unknown()
    }

    /// Kafka's `AccessControlEntryFilter.matches`: plain equality per field,
    /// no wildcard expansion.
    pub fn matches(&self, entry: &AccessControlEntry) -> bool {
        if self
            .principal
            .as_ref()
            .is_some_and(|p| *p != entry.principal)
        {
            return false;
        }
        if self.host.as_ref().is_some_and(|h| *h != entry.host) {
            return false;
        }
        if self.operation != AclOperation::Any && self.operation != entry.operation {
            return false;
        }
        self.permission == PermissionType::Any || self.permission == entry.permission
    }
}

impl fmt::Display for AccessControlEntryFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(principal={}, host={}, operation={}, permissionType={})",
            self.principal.as_deref().unwrap_or("<any>"),
            self.host.as_deref().unwrap_or("<any>"),
            self.operation,
            self.permission
        )
    }
}

/// A DescribeAcls / DeleteAcls filter as the wire gives it (Kafka
/// `AclBindingFilter`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AclBindingFilter {
    /// Which resource patterns.
    pub pattern: ResourcePatternFilter,
    /// Which entries.
    pub entry: AccessControlEntryFilter,
}

impl AclBindingFilter {
    /// Matches every binding.
    pub const ANY: AclBindingFilter = AclBindingFilter {
        pattern: ResourcePatternFilter::ANY,
        entry: AccessControlEntryFilter::ANY,
    };

    /// A filter from its parts.
    pub fn new(pattern: ResourcePatternFilter, entry: AccessControlEntryFilter) -> Self {
        AclBindingFilter { pattern, entry }
    }

    /// True if either half has an `Unknown` field.
    pub fn is_unknown(&self) -> bool {
        self.pattern.is_unknown() || self.entry.is_unknown()
    }

    /// Kafka's `AclBindingFilter.matches`: both halves match.
    pub fn matches(&self, b: &AclBinding) -> bool {
        self.pattern.matches(&b.pattern) && self.entry.matches(&b.entry)
    }

    /// Checks a DeleteAcls filter as Kafka's `AclControlManager.validateFilter`
    /// does.
    ///
    /// # Errors
    /// [`AclError::UnknownPatternFilter`] or [`AclError::UnknownEntryFilter`]
    /// (both INVALID_REQUEST).
    pub fn validate(&self) -> Result<(), AclError> {
        if self.pattern.is_unknown() {
            return Err(AclError::UnknownPatternFilter);
        }
        if self.entry.is_unknown() {
            return Err(AclError::UnknownEntryFilter);
        }
        Ok(())
    }
}

impl fmt::Display for AclBindingFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(patternFilter={}, entryFilter={})",
            self.pattern, self.entry
        )
    }
}

impl AclBinding {
    /// The filter that matches exactly this binding (Kafka `toFilter`).
    pub fn to_filter(&self) -> AclBindingFilter {
        AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: self.pattern.resource_type,
                name: Some(self.pattern.name.clone()),
                pattern_type: self.pattern.pattern_type,
            },
            entry: AccessControlEntryFilter {
                principal: Some(self.entry.principal.clone()),
                host: Some(self.entry.host.clone()),
                operation: self.entry.operation,
                permission: self.entry.permission,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PatternType::{Literal, Match, Prefixed};
    use ResourceType::{Group, Topic};

    fn pf(rt: ResourceType, name: Option<&str>, pt: PatternType) -> ResourcePatternFilter {
        ResourcePatternFilter::new(rt, name, pt)
    }

    fn rp(rt: ResourceType, name: &str, pt: PatternType) -> ResourcePattern {
        ResourcePattern::new(rt, name, pt)
    }

    // Ported from Kafka's ResourcePatternFilterTest.
    #[test]
    fn unknown_filters() {
        assert!(pf(ResourceType::Unknown, None, Literal).is_unknown());
        assert!(pf(Group, None, PatternType::Unknown).is_unknown());
        assert!(!pf(Group, None, Literal).is_unknown());
    }

    #[test]
    fn resource_pattern_filter_kafka_cases() {
        // (filter, pattern, expected)
        let cases = [
            (
                pf(Topic, Some("Name"), Literal),
                rp(Group, "Name", Literal),
                false,
            ),
            (
                pf(Topic, Some("Different"), Prefixed),
                rp(Topic, "Name", Prefixed),
                false,
            ),
            (
                pf(Topic, Some("NAME"), Literal),
                rp(Topic, "Name", Literal),
                false,
            ),
            (
                pf(Topic, Some("Name"), Literal),
                rp(Topic, "Name", Prefixed),
                false,
            ),
            (
                pf(ResourceType::Any, Some("Name"), Prefixed),
                rp(Topic, "Name", Prefixed),
                true,
            ),
            (pf(Topic, None, Prefixed), rp(Topic, "Name", Prefixed), true),
            (
                pf(Topic, None, PatternType::Any),
                rp(Topic, "Name", Prefixed),
                true,
            ),
            (pf(Topic, None, Match), rp(Topic, "Name", Prefixed), true),
            (
                pf(Topic, Some("Name"), Literal),
                rp(Topic, "Name", Literal),
                true,
            ),
            (
                pf(Topic, Some("Name"), PatternType::Any),
                rp(Topic, "Name", Literal),
                true,
            ),
            (
                pf(Topic, Some("Name"), Match),
                rp(Topic, "Name", Literal),
                true,
            ),
            (
                pf(Topic, Some("Name-something"), Match),
                rp(Topic, "Name", Literal),
                false,
            ),
            (pf(Topic, Some("*"), Literal), rp(Topic, "*", Literal), true),
            (
                pf(Topic, Some("Name"), Literal),
                rp(Topic, "*", Literal),
                false,
            ),
            (
                pf(Topic, Some("*"), Literal),
                rp(Topic, "Name", Literal),
                false,
            ),
            (
                pf(Topic, Some("Name"), PatternType::Any),
                rp(Topic, "*", Literal),
                false,
            ),
            (
                pf(Topic, Some("Name"), Match),
                rp(Topic, "*", Literal),
                true,
            ),
            (
                pf(Topic, Some("Name"), Prefixed),
                rp(Topic, "Name", Prefixed),
                true,
            ),
            (
                pf(Topic, Some("Name"), Prefixed),
                rp(Topic, "Name-something", Prefixed),
                false,
            ),
            (
                pf(Topic, Some("Name-something"), Prefixed),
                rp(Topic, "Name", Prefixed),
                false,
            ),
            (
                pf(Topic, Some("Name-something"), PatternType::Any),
                rp(Topic, "Name", Prefixed),
                false,
            ),
            (
                pf(Topic, Some("Name-something"), Match),
                rp(Topic, "Name", Prefixed),
                true,
            ),
        ];
        for (i, (filter, pattern, expected)) in cases.iter().enumerate() {
            assert_eq!(
                filter.matches(pattern),
                *expected,
                "case {i}: {filter} vs {pattern}"
            );
        }
    }

    #[test]
    fn match_filter_selects_exactly_the_applicable_patterns() {
        let f = pf(Topic, Some("orders-eu"), Match);
        assert!(f.matches(&rp(Topic, "orders-eu", Literal)));
        assert!(f.matches(&rp(Topic, "*", Literal)));
        assert!(f.matches(&rp(Topic, "orders-", Prefixed)));
        assert!(f.matches(&rp(Topic, "orders-eu", Prefixed)));
        assert!(!f.matches(&rp(Topic, "orders", Literal)));
        assert!(!f.matches(&rp(Topic, "orders-eu-1", Prefixed)));
        assert!(!f.matches(&rp(Topic, "*", Prefixed)));
        assert!(!f.matches(&rp(Group, "orders-eu", Literal)));
    }

    #[test]
    fn entry_filter_is_plain_equality() {
        let entry = AccessControlEntry::new(
            "User:alice",
            "10.0.0.1",
            AclOperation::Read,
            PermissionType::Allow,
        );
        assert!(AccessControlEntryFilter::ANY.matches(&entry));
        let wildcard_principal = AccessControlEntryFilter::new(
            Some("User:*"),
            None,
            AclOperation::Any,
            PermissionType::Any,
        );
        assert!(!wildcard_principal.matches(&entry));
        let wildcard_host =
            AccessControlEntryFilter::new(None, Some("*"), AclOperation::Any, PermissionType::Any);
        assert!(!wildcard_host.matches(&entry));
        let read_deny =
            AccessControlEntryFilter::new(None, None, AclOperation::Read, PermissionType::Deny);
        assert!(!read_deny.matches(&entry));
        let exact = AccessControlEntryFilter::new(
            Some("User:alice"),
            Some("10.0.0.1"),
            AclOperation::Read,
            PermissionType::Allow,
        );
        assert!(exact.matches(&entry));
        // ALL in a filter is the operation ALL, not "any operation".
        let all = AccessControlEntryFilter::new(None, None, AclOperation::All, PermissionType::Any);
        assert!(!all.matches(&entry));
    }

    #[test]
    fn to_filter_matches_only_itself() {
        let b = AclBinding::new(
            rp(Topic, "t", Literal),
            AccessControlEntry::new("User:a", "*", AclOperation::Write, PermissionType::Allow),
        );
        let mut other = b.clone();
        other.entry.operation = AclOperation::Read;
        assert!(b.to_filter().matches(&b));
        assert!(!b.to_filter().matches(&other));
    }

    // Ported from Kafka's AclControlManagerTest.testValidateFilter.
    #[test]
    fn validate_filter() {
        let ok = AclBindingFilter::new(
            pf(ResourceType::Any, Some("*"), Literal),
            AccessControlEntryFilter::new(
                Some("User:*"),
                Some("*"),
                AclOperation::Any,
                PermissionType::Any,
            ),
        );
        assert_eq!(ok.validate(), Ok(()));
        let bad_pattern = AclBindingFilter::new(
            pf(ResourceType::Any, Some("*"), PatternType::Unknown),
            ok.entry.clone(),
        );
        let err = bad_pattern.validate().expect_err("unknown pattern type");
        assert_eq!(err.to_string(), "Unknown patternFilter.");
        let bad_entry = AclBindingFilter::new(
            pf(ResourceType::Any, Some("*"), Match),
            AccessControlEntryFilter::new(
                Some("User:*"),
                Some("*"),
                AclOperation::Any,
                PermissionType::Unknown,
            ),
        );
        let err = bad_entry.validate().expect_err("unknown permission");
        assert_eq!(err.to_string(), "Unknown entryFilter.");
        assert_eq!(err.error_code(), 42);
    }
}
