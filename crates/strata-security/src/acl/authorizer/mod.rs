//! The authorizer: an immutable snapshot of the ACLs plus the authorizer
//! configuration, answering Kafka 3.9 `StandardAuthorizer` questions
//! (`StandardAuthorizerData.authorize`, `Authorizer.authorizeByResourceType`).
//!
//! Decision for operation O on the resource (T, name), principal P, host h:
//! 1. P is a super user -> allowed.
//! 2. Candidates are the ACLs on type T whose pattern covers `name` (LITERAL
//!    equal, LITERAL `*`, PREFIXED prefix). If there is any candidate at all,
//!    whatever its principal, host or operation, the resource "has ACLs".
//! 3. A candidate applies if its principal is P or `User:*`, its host is h or
//!    `*`, and its operation is O or ALL; ALLOW ACLs also apply to implied
//!    operations (DESCRIBE by READ, WRITE, DELETE, ALTER; DESCRIBE_CONFIGS by
//!    ALTER_CONFIGS). DENY ACLs never imply.
//! 4. Any applying DENY -> denied; else any applying ALLOW -> allowed; else
//!    denied if the resource has ACLs, else `allow.everyone.if.no.acl.found`.
//!
//! # Locks
//! None: an [`Authorizer`] never changes. The broker builds a new one when the
//! ACLs or the configuration change and swaps an `Arc<Authorizer>`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;

use super::error::SuperUsersError;
use super::filter::AclBindingFilter;
use super::types::{
    parse_principal, AclBinding, AclOperation, PatternType, PermissionType, ResourceType,
    WILDCARD_HOST, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE,
};

#[cfg(test)]
mod tests;

/// The resource name `authorize_any` first tries, as Kafka's default
/// `authorizeByResourceType` does, so super users and the no-ACL default are
/// honoured.
const PROBE_RESOURCE_NAME: &str = "hardcode";

/// The authorizer's settings (`super.users`, `allow.everyone.if.no.acl.found`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// Principals (`User:admin`) that are allowed everything.
    pub super_users: Vec<String>,
    /// The decision for a resource without any ACL (default false: deny).
    pub allow_everyone_if_no_acl_found: bool,
}

impl AuthorizerConfig {
    /// Parses `super.users`: principals separated by `;`, each trimmed, empty
    /// items skipped, duplicates dropped (Kafka `getConfiguredSuperUsers`).
    ///
    /// # Errors
    /// [`SuperUsersError`] naming the first item that is not `Type:name`.
    pub fn parse_super_users(s: &str) -> Result<Vec<String>, SuperUsersError> {
        let mut users: Vec<String> = Vec::new();
        for item in s.split(';').map(str::trim).filter(|item| !item.is_empty()) {
            parse_principal(item).map_err(|source| SuperUsersError { source })?;
            if !users.iter().any(|u| u == item) {
                users.push(item.to_owned());
            }
        }
        Ok(users)
    }

    /// Parses `allow.everyone.if.no.acl.found` as Java's
    /// `Boolean.parseBoolean` of the trimmed value: `true` in any case is
    /// true, anything else false.
    pub fn parse_allow_everyone_if_no_acl_found(s: &str) -> bool {
        s.trim().eq_ignore_ascii_case("true")
    }
}

/// Why a decision came out as it did (Kafka's `MatchingRule`), for the audit
/// log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule<'a> {
    /// The principal is a super user.
    SuperUser,
    /// This ACL decided (the deny that won, or an allow).
    Acl(&'a AclBinding),
    /// No ACL covers the resource; `allow.everyone.if.no.acl.found` decided.
    NoAclFound,
    /// ACLs cover the resource, but none applies to this principal, host and
    /// operation.
    NoMatchingAcl,
    /// The question was malformed (operation or resource type UNKNOWN / ANY).
    InvalidAction,
}

impl fmt::Display for Rule<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::SuperUser => f.write_str("SuperUser"),
            Rule::Acl(acl) => write!(f, "MatchingAcl(acl={acl})"),
            Rule::NoAclFound => f.write_str("NoAclFound"),
            Rule::NoMatchingAcl => f.write_str("DefaultDeny"),
            Rule::InvalidAction => f.write_str("InvalidAction"),
        }
    }
}

/// The answer to one `authorize` question; it borrows the deciding ACL
/// from the snapshot, so the hot path copies nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision<'a> {
    /// Allowed, and why.
    Allowed(Rule<'a>),
    /// Denied, and why.
    Denied(Rule<'a>),
}

impl<'a> Decision<'a> {
    /// True for [`Decision::Allowed`].
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allowed(_))
    }

    /// The rule that decided.
    pub fn rule(&self) -> &Rule<'a> {
        match self {
            Decision::Allowed(rule) | Decision::Denied(rule) => rule,
        }
    }
}

impl fmt::Display for Decision<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Kafka names the no-ACL default by its outcome.
            Decision::Allowed(Rule::NoAclFound) => {
                f.write_str("Allowed based on rule DefaultAllow")
            }
            Decision::Denied(Rule::NoAclFound) => f.write_str("Denied based on rule DefaultDeny"),
            Decision::Allowed(rule) => write!(f, "Allowed based on rule {rule}"),
            Decision::Denied(rule) => write!(f, "Denied based on rule {rule}"),
        }
    }
}

/// The ACLs of one resource type, indexed by pattern name.
#[derive(Debug, Default)]
struct TypeIndex {
    /// LITERAL patterns (including `*`) by name -> positions in `acls`.
    literal: HashMap<String, Vec<usize>>,
    /// PREFIXED patterns by name -> positions in `acls`.
    prefixed: HashMap<String, Vec<usize>>,
    /// The byte lengths of the PREFIXED names, so a lookup tries only the
    /// prefixes of the resource name that some ACL could be.
    prefixed_lengths: BTreeSet<usize>,
    /// Every position on this type, for `authorize_any`.
    all: Vec<usize>,
}

/// An immutable snapshot of the ACLs and the authorizer configuration.
#[derive(Debug)]
pub struct Authorizer {
    super_users: HashSet<String>,
    allow_everyone_if_no_acl_found: bool,
    acls: Vec<AclBinding>,
    by_type: HashMap<ResourceType, TypeIndex>,
}

/// The result of looking at the ACLs that cover one resource.
struct Scan<'a> {
    has_acls: bool,
    allow: Option<&'a AclBinding>,
    deny: Option<&'a AclBinding>,
}

impl Authorizer {
    /// Builds a snapshot. The bindings are kept as given (see [`acls`](Self::acls));
    /// patterns other than LITERAL and PREFIXED can never apply and are ignored
    /// by the decisions.
    pub fn new(config: AuthorizerConfig, acls: impl IntoIterator<Item = AclBinding>) -> Authorizer {
        let acls: Vec<AclBinding> = acls.into_iter().collect();
        let mut by_type: HashMap<ResourceType, TypeIndex> = HashMap::new();
        for (i, b) in acls.iter().enumerate() {
            let index = by_type.entry(b.pattern.resource_type).or_default();
            index.all.push(i);
            match b.pattern.pattern_type {
                PatternType::Literal => index
                    .literal
                    .entry(b.pattern.name.clone())
                    .or_default()
                    .push(i),
                PatternType::Prefixed => {
                    index
                        .prefixed
                        .entry(b.pattern.name.clone())
                        .or_default()
                        .push(i);
                    index.prefixed_lengths.insert(b.pattern.name.len());
                }
                _ => {}
            }
        }
        Authorizer {
            super_users: config.super_users.into_iter().collect(),
            allow_everyone_if_no_acl_found: config.allow_everyone_if_no_acl_found,
            acls,
            by_type,
        }
    }

    /// Kafka's `authorize()` for one action on a LITERAL resource.
    /// `principal` is `Type:name` (`User:alice`); `host` is the client address
    /// as [`java_host_address`](super::java_host_address) renders it.
    ///
    /// An operation or resource type of UNKNOWN or ANY is never allowed
    /// ([`Rule::InvalidAction`]).
    pub fn authorize(
        &self,
        principal: &str,
        host: &str,
        op: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> Decision<'_> {
        if !is_concrete_action(op, resource_type) {
            return Decision::Denied(Rule::InvalidAction);
        }
        if self.super_users.contains(principal) {
            return Decision::Allowed(Rule::SuperUser);
        }
        let scan = self.scan(principal, host, op, resource_type, name);
        if let Some(acl) = scan.deny {
            Decision::Denied(Rule::Acl(acl))
        } else if let Some(acl) = scan.allow {
            Decision::Allowed(Rule::Acl(acl))
        } else if scan.has_acls {
            Decision::Denied(Rule::NoMatchingAcl)
        } else if self.allow_everyone_if_no_acl_found {
            Decision::Allowed(Rule::NoAclFound)
        } else {
            Decision::Denied(Rule::NoAclFound)
        }
    }

    /// Kafka's default `Authorizer.authorizeByResourceType`: may `principal`
    /// do `op` on at least one resource of `resource_type`? Used for
    /// InitProducerId without IDEMPOTENT_WRITE on the cluster, and for
    /// "describe any topic".
    ///
    /// True if a probe resource is allowed (super users, the no-ACL default);
    /// otherwise, over the ACLs of the type for `principal` or `User:*`, host
    /// `host` or `*`, operation `op` or ALL (no implication): a LITERAL `*`
    /// DENY -> false; a LITERAL `*` ALLOW -> true; else true iff some ALLOW
    /// pattern is not dominated by a DENY (a LITERAL DENY of the same name
    /// for a LITERAL ALLOW, or a PREFIXED DENY that is a prefix of its name).
    ///
    /// An operation or resource type of UNKNOWN or ANY gives false (Kafka
    /// throws).
    pub fn authorize_any(
        &self,
        principal: &str,
        host: &str,
        op: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        if !is_concrete_action(op, resource_type) {
            return false;
        }
        if self
            .authorize(principal, host, op, resource_type, PROBE_RESOURCE_NAME)
            .is_allowed()
        {
            return true;
        }
        let Some(index) = self.by_type.get(&resource_type) else {
            return false;
        };
        let mut deny_literal: HashSet<&str> = HashSet::new();
        let mut deny_prefixed: HashSet<&str> = HashSet::new();
        let mut allow: Vec<(PatternType, &str)> = Vec::new();
        for b in index.all.iter().filter_map(|&i| self.acls.get(i)) {
            let entry = &b.entry;
            if entry.host != host && entry.host != WILDCARD_HOST {
                continue;
            }
            if entry.principal != principal && entry.principal != WILDCARD_PRINCIPAL {
                continue;
            }
            if entry.operation != op && entry.operation != AclOperation::All {
                continue;
            }
            let name = b.pattern.name.as_str();
            match (entry.permission, b.pattern.pattern_type) {
                (PermissionType::Deny, PatternType::Literal) if name == WILDCARD_RESOURCE => {
                    return false
                }
                (PermissionType::Deny, PatternType::Literal) => {
                    deny_literal.insert(name);
                }
                (PermissionType::Deny, PatternType::Prefixed) => {
                    deny_prefixed.insert(name);
                }
                (
                    PermissionType::Allow,
                    pattern_type @ (PatternType::Literal | PatternType::Prefixed),
                ) => {
                    allow.push((pattern_type, name));
                }
                _ => {}
            }
        }
        // Kafka returns on the wildcard ALLOW only after the whole scan, so a
        // wildcard DENY seen later still wins.
        if allow
            .iter()
            .any(|&(pt, name)| pt == PatternType::Literal && name == WILDCARD_RESOURCE)
        {
            return true;
        }
        allow.iter().any(|&(pattern_type, name)| {
            if pattern_type == PatternType::Literal && deny_literal.contains(name) {
                return false;
            }
            // Dominated if any non-empty prefix of the name is denied as PREFIXED.
            let dominated = name
                .char_indices()
                .map(|(i, c)| &name[..i + c.len_utf8()])
                .any(|prefix| deny_prefixed.contains(prefix));
            !dominated
        })
    }

    /// The `*_authorized_operations` bitfield of Metadata, DescribeGroups,
    /// DescribeCluster and friends (Kafka `AuthHelper.authorizedOperations`):
    /// bit `1 << code` set for each of
    /// [`ResourceType::supported_operations`] that `authorize` allows.
    pub fn authorized_operations(
        &self,
        principal: &str,
        host: &str,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        resource_type
            .supported_operations()
            .iter()
            .filter(|&&op| {
                self.authorize(principal, host, op, resource_type, name)
                    .is_allowed()
            })
            .fold(0, |bits, &op| bits | (1 << op.code()))
    }

    /// The bindings of this snapshot, as given to [`new`](Self::new).
    pub fn acls(&self) -> &[AclBinding] {
        &self.acls
    }

    /// The bindings a DescribeAcls filter selects, in snapshot order.
    pub fn describe<'a>(
        &'a self,
        filter: &'a AclBindingFilter,
    ) -> impl Iterator<Item = &'a AclBinding> + 'a {
        self.acls.iter().filter(move |b| filter.matches(b))
    }

    /// True if `principal` is one of the configured super users.
    pub fn is_super_user(&self, principal: &str) -> bool {
        self.super_users.contains(principal)
    }

    /// Looks at every ACL covering (`resource_type`, `name`): whether there is
    /// any, and the first applying DENY and an applying ALLOW.
    fn scan(
        &self,
        principal: &str,
        host: &str,
        op: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> Scan<'_> {
        let mut scan = Scan {
            has_acls: false,
            allow: None,
            deny: None,
        };
        let Some(index) = self.by_type.get(&resource_type) else {
            return scan;
        };
        let literal = index.literal.get(name).into_iter().flatten();
        let wildcard = (name != WILDCARD_RESOURCE)
            .then(|| index.literal.get(WILDCARD_RESOURCE))
            .flatten()
            .into_iter()
            .flatten();
        let prefixed = index
            .prefixed_lengths
            .iter()
            .take_while(|&&len| len <= name.len())
            .filter_map(|&len| name.get(..len))
            .filter_map(|prefix| index.prefixed.get(prefix))
            .flatten();
        for acl in literal
            .chain(wildcard)
            .chain(prefixed)
            .filter_map(|&i| self.acls.get(i))
        {
            scan.has_acls = true;
            match applies(acl, principal, host, op) {
                Some(PermissionType::Deny) => {
                    scan.deny = Some(acl);
                    return scan;
                }
                Some(_) => scan.allow = Some(acl),
                None => {}
            }
        }
        scan
    }
}

/// Neither UNKNOWN nor the filter-only ANY.
fn is_concrete_action(op: AclOperation, resource_type: ResourceType) -> bool {
    !matches!(op, AclOperation::Unknown | AclOperation::Any)
        && !matches!(resource_type, ResourceType::Unknown | ResourceType::Any)
}

/// Kafka's `StandardAuthorizerData.findResult`: `None` if the ACL does not
/// apply to this principal, host and operation; otherwise ALLOW or DENY.
/// As in Kafka, any permission other than ALLOW counts as DENY.
fn applies(
    acl: &AclBinding,
    principal: &str,
    host: &str,
    op: AclOperation,
) -> Option<PermissionType> {
    let entry = &acl.entry;
    if entry.principal != principal && entry.principal != WILDCARD_PRINCIPAL {
        return None;
    }
    if entry.host != WILDCARD_HOST && entry.host != host {
        return None;
    }
    let allow = entry.permission == PermissionType::Allow;
    if entry.operation != AclOperation::All {
        let matched = if allow {
            implies(entry.operation, op)
        } else {
            entry.operation == op
        };
        if !matched {
            return None;
        }
    }
    Some(if allow {
        PermissionType::Allow
    } else {
        PermissionType::Deny
    })
}

/// Does an ALLOW of `granted` also allow `requested`? DESCRIBE is implied by
/// READ, WRITE, DELETE and ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS.
fn implies(granted: AclOperation, requested: AclOperation) -> bool {
    use AclOperation::{Alter, AlterConfigs, Delete, Describe, DescribeConfigs, Read, Write};
    match requested {
        Describe => matches!(granted, Describe | Read | Write | Delete | Alter),
        DescribeConfigs => matches!(granted, DescribeConfigs | AlterConfigs),
        _ => granted == requested,
    }
}
