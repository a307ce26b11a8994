//! What CreateAcls and DeleteAcls do to the set of ACLs, as pure functions
//! (Kafka's `AclApis.handleCreateAcls` checks plus `AclControlManager`
//! `validateNewAcl` / `createAcls` / `deleteAcls`).
//!
//! - Creating an ACL that already exists is a silent success and adds no
//!   duplicate.
//! - Every DeleteAcls filter is matched against the set as it was before the
//!   request, so one binding can be reported by several filters; all removals
//!   are applied together.
//! - One request creates or removes at most [`MAX_ACLS_PER_REQUEST`] ACLs.

use std::collections::HashSet;

use super::error::AclError;
use super::filter::AclBindingFilter;
use super::types::{
    parse_principal, AclBinding, PatternType, PermissionType, ResourceType, CLUSTER_NAME,
};
use super::AclOperation;

/// The most ACLs one CreateAcls or DeleteAcls request may add or remove
/// (Kafka's `QuorumController.MAX_RECORDS_PER_USER_OP`).
pub const MAX_ACLS_PER_REQUEST: usize = 10_000;

/// Validates a binding for CreateAcls, in the order Kafka checks:
/// the broker's `AclApis` checks (CLUSTER name, empty name), then
/// `AclControlManager.validateNewAcl` (resource type, pattern type, operation,
/// permission), then - a Strata addition - the principal's `Type:name` form.
///
/// # Errors
/// The first failed check, as an [`AclError`] (INVALID_REQUEST).
pub fn validate_new(b: &AclBinding) -> Result<(), AclError> {
    let pattern = &b.pattern;
    if pattern.resource_type == ResourceType::Cluster && pattern.name != CLUSTER_NAME {
        return Err(AclError::InvalidClusterName {
            name: pattern.name.clone(),
        });
    }
    if pattern.name.is_empty() {
        return Err(AclError::EmptyResourceName);
    }
    if matches!(
        pattern.resource_type,
        ResourceType::Unknown | ResourceType::Any
    ) {
        return Err(AclError::InvalidResourceType(pattern.resource_type));
    }
    if !matches!(
        pattern.pattern_type,
        PatternType::Literal | PatternType::Prefixed
    ) {
        return Err(AclError::InvalidPatternType(pattern.pattern_type));
    }
    let entry = &b.entry;
    if matches!(entry.operation, AclOperation::Unknown | AclOperation::Any) {
        return Err(AclError::InvalidOperation(entry.operation));
    }
    if !matches!(
        entry.permission,
        PermissionType::Allow | PermissionType::Deny
    ) {
        return Err(AclError::InvalidPermission(entry.permission));
    }
    parse_principal(&entry.principal).map_err(|e| AclError::InvalidPrincipal {
        principal: e.principal,
    })?;
    Ok(())
}

/// Applies a CreateAcls request to `current`: returns the new set (`current`
/// followed by the bindings that were not there yet, in request order) and one
/// result per item of `new`.
///
/// If the request would add more than [`MAX_ACLS_PER_REQUEST`] ACLs, nothing
/// is added and every item fails with [`AclError::TooManyCreations`], as
/// Kafka's controller fails the whole batch.
pub fn create(
    current: &[AclBinding],
    new: &[AclBinding],
) -> (Vec<AclBinding>, Vec<Result<(), AclError>>) {
    let mut present: HashSet<&AclBinding> = current.iter().collect();
    let mut added = Vec::new();
    let mut results = Vec::with_capacity(new.len());
    for b in new {
        let result = validate_new(b);
        if result.is_ok() && present.insert(b) {
            added.push(b);
        }
        results.push(result);
    }
    if added.len() > MAX_ACLS_PER_REQUEST {
        let err = AclError::TooManyCreations {
            limit: MAX_ACLS_PER_REQUEST,
            requested: added.len(),
        };
        return (
            current.to_vec(),
            new.iter().map(|_| Err(err.clone())).collect(),
        );
    }
    let mut next = Vec::with_capacity(current.len() + added.len());
    next.extend_from_slice(current);
    next.extend(added.into_iter().cloned());
    (next, results)
}

/// Applies a DeleteAcls request to `current`: returns the remaining set (in
/// its original order) and, per filter, the bindings it matched or why it was
/// refused.
///
/// Each filter sees the set as it was before the request (Kafka's KRaft
/// behaviour). A filter whose removals would take the request past
/// [`MAX_ACLS_PER_REQUEST`] distinct removals fails with
/// [`AclError::TooManyDeletions`] and removes nothing. (Kafka also fails that
/// filter, but keeps the removals it had collected before the limit; Strata
/// keeps the failed filter without effect, so a failure never deletes.)
pub fn delete(
    current: &[AclBinding],
    filters: &[AclBindingFilter],
) -> (Vec<AclBinding>, Vec<Result<Vec<AclBinding>, AclError>>) {
    let mut removed: HashSet<usize> = HashSet::new();
    let mut results = Vec::with_capacity(filters.len());
    for filter in filters {
        if let Err(e) = filter.validate() {
            results.push(Err(e));
            continue;
        }
        let matched: Vec<usize> = current
            .iter()
            .enumerate()
            .filter(|(_, b)| filter.matches(b))
            .map(|(i, _)| i)
            .collect();
        let fresh = matched.iter().filter(|i| !removed.contains(i)).count();
        if removed.len() + fresh > MAX_ACLS_PER_REQUEST {
            results.push(Err(AclError::TooManyDeletions {
                limit: MAX_ACLS_PER_REQUEST,
            }));
            continue;
        }
        removed.extend(matched.iter().copied());
        results.push(Ok(matched
            .into_iter()
            .filter_map(|i| current.get(i).cloned())
            .collect()));
    }
    let remaining = current
        .iter()
        .enumerate()
        .filter(|(i, _)| !removed.contains(i))
        .map(|(_, b)| b.clone())
        .collect();
    (remaining, results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::filter::{AccessControlEntryFilter, ResourcePatternFilter};
    use crate::acl::types::{AccessControlEntry, ResourcePattern};
    use AclOperation::{All, Alter, Read, Write};
    use PatternType::{Literal, Prefixed};
    use PermissionType::{Allow, Deny};
    use ResourceType::{Cluster, Group, Topic};

    fn acl(
        rt: ResourceType,
        name: &str,
        pt: PatternType,
        principal: &str,
        op: AclOperation,
        perm: PermissionType,
    ) -> AclBinding {
        AclBinding::new(
            ResourcePattern::new(rt, name, pt),
            AccessControlEntry::new(principal, "*", op, perm),
        )
    }

    fn message(b: &AclBinding) -> String {
        validate_new(b).expect_err("should be invalid").to_string()
    }

    // Ported from Kafka's AclControlManagerTest.testValidateNewAcl.
    #[test]
    fn validate_new_kafka_messages() {
        let valid = acl(Topic, "*", Literal, "User:*", Alter, Allow);
        assert_eq!(validate_new(&valid), Ok(()));

        let mut b = valid.clone();
        b.pattern.pattern_type = PatternType::Unknown;
        assert_eq!(message(&b), "Invalid patternType UNKNOWN");
        let mut b = valid.clone();
        b.pattern.resource_type = ResourceType::Unknown;
        assert_eq!(message(&b), "Invalid resourceType UNKNOWN");
        let mut b = valid.clone();
        b.entry.operation = AclOperation::Unknown;
        assert_eq!(message(&b), "Invalid operation UNKNOWN");
        let mut b = valid.clone();
        b.entry.permission = PermissionType::Unknown;
        assert_eq!(message(&b), "Invalid permissionType UNKNOWN");
    }

    #[test]
    fn validate_new_rejects_filter_only_values() {
        let valid = acl(Topic, "t", Literal, "User:a", Read, Allow);
        let mut b = valid.clone();
        b.pattern.resource_type = ResourceType::Any;
        assert_eq!(message(&b), "Invalid resourceType ANY");
        let mut b = valid.clone();
        b.pattern.pattern_type = PatternType::Match;
        assert_eq!(message(&b), "Invalid patternType MATCH");
        let mut b = valid.clone();
        b.pattern.pattern_type = PatternType::Any;
        assert_eq!(message(&b), "Invalid patternType ANY");
        let mut b = valid.clone();
        b.entry.operation = AclOperation::Any;
        assert_eq!(message(&b), "Invalid operation ANY");
        let mut b = valid.clone();
        b.entry.permission = PermissionType::Any;
        assert_eq!(message(&b), "Invalid permissionType ANY");
        assert_eq!(validate_new(&b).map_err(|e| e.error_code()), Err(42));
    }

    #[test]
    fn validate_new_cluster_name_empty_name_and_principal() {
        let b = acl(Cluster, "my-cluster", Literal, "User:a", Alter, Allow);
        assert_eq!(
            message(&b),
            "The only valid name for the CLUSTER resource is kafka-cluster"
        );
        assert_eq!(
            validate_new(&acl(
                Cluster,
                "kafka-cluster",
                Literal,
                "User:a",
                Alter,
                Allow
            )),
            Ok(())
        );
        // Kafka's testEmptyAclThrowsException.
        assert_eq!(
            message(&acl(Group, "", Literal, "User:*", Read, Allow)),
            "Invalid empty resource name"
        );
        assert_eq!(
            message(&acl(Topic, "t", Literal, "alice", Read, Allow)),
            "expected a string in format principalType:principalName but got alice"
        );
        assert!(validate_new(&acl(Topic, "t", Literal, "", Read, Allow)).is_err());
        // The CLUSTER name check comes first, as in Kafka's AclApis.
        assert_eq!(
            message(&acl(Cluster, "", Literal, "User:a", Alter, Allow)).as_str(),
            "The only valid name for the CLUSTER resource is kafka-cluster"
        );
    }

    fn test_acls() -> Vec<AclBinding> {
        // Kafka's StandardAclTest.TEST_ACLS, first three.
        vec![
            acl(Cluster, "kafka-cluster", Literal, "User:*", Alter, Allow),
            acl(Topic, "foo_", Prefixed, "User:*", Read, Allow),
            acl(Group, "mygroup", Literal, "User:*", Read, Deny),
        ]
    }

    // Ported from Kafka's AclControlManagerTest.testCreateAclDeleteAcl.
    #[test]
    fn create_then_delete() {
        let mut to_create = test_acls();
        to_create.push(acl(
            Topic,
            "*",
            PatternType::Unknown,
            "User:*",
            Alter,
            Allow,
        ));
        let (set, results) = create(&[], &to_create);
        assert_eq!(results[..3], [Ok(()), Ok(()), Ok(())]);
        assert_eq!(
            results[3].as_ref().map_err(ToString::to_string),
            Err("Invalid patternType UNKNOWN".to_owned())
        );
        assert_eq!(set, test_acls());

        let filters = [
            AclBindingFilter::new(
                ResourcePatternFilter::new(ResourceType::Any, None, Literal),
                AccessControlEntryFilter::ANY,
            ),
            AclBindingFilter::new(
                ResourcePatternFilter::new(ResourceType::Unknown, None, Literal),
                AccessControlEntryFilter::ANY,
            ),
        ];
        let (remaining, results) = delete(&set, &filters);
        let deleted: HashSet<AclBinding> = results[0]
            .clone()
            .expect("valid filter")
            .into_iter()
            .collect();
        let expected: HashSet<AclBinding> = [test_acls()[0].clone(), test_acls()[2].clone()]
            .into_iter()
            .collect();
        assert_eq!(deleted, expected);
        assert_eq!(results[1], Err(AclError::UnknownPatternFilter));
        assert_eq!(remaining, vec![test_acls()[1].clone()]);
    }

    #[test]
    fn create_is_idempotent() {
        let a = acl(Topic, "t", Literal, "User:a", Write, Allow);
        let (set, results) = create(&[], &[a.clone(), a.clone()]);
        assert_eq!(set, vec![a.clone()]);
        assert_eq!(results, vec![Ok(()), Ok(())]);
        let (again, results) = create(&set, std::slice::from_ref(&a));
        assert_eq!(again, set);
        assert_eq!(results, vec![Ok(())]);
    }

    #[test]
    fn create_past_the_limit_applies_nothing() {
        let new: Vec<AclBinding> = (0..=MAX_ACLS_PER_REQUEST)
            .map(|i| acl(Topic, &format!("t{i}"), Literal, "User:a", Read, Allow))
            .collect();
        let current = vec![acl(Group, "g", Literal, "User:a", Read, Allow)];
        let (set, results) = create(&current, &new);
        assert_eq!(set, current);
        assert_eq!(results.len(), new.len());
        assert!(results
            .iter()
            .all(|r| matches!(r, Err(e) if e.error_code() == 44)));
        // Exactly the limit is fine.
        let (set, results) = create(&[], &new[..MAX_ACLS_PER_REQUEST]);
        assert_eq!(set.len(), MAX_ACLS_PER_REQUEST);
        assert!(results.iter().all(Result::is_ok));
    }

    // Ported from Kafka's AclControlManagerTest.testDeleteDedupe and
    // AuthorizerTest.testAclsFilter (KRaft branch).
    #[test]
    fn delete_filters_see_the_set_before_the_request() {
        let b = AclBinding::new(
            ResourcePattern::new(Topic, "topic-1", Literal),
            AccessControlEntry::new("User:user", "10.0.0.1", All, Allow),
        );
        let (remaining, results) = delete(
            std::slice::from_ref(&b),
            &[AclBindingFilter::ANY, b.to_filter()],
        );
        assert!(remaining.is_empty());
        assert_eq!(results, vec![Ok(vec![b.clone()]), Ok(vec![b.clone()])]);

        let acl1 = AclBinding::new(
            ResourcePattern::new(Topic, "foo-1", Literal),
            AccessControlEntry::new("User:alice", "*", Read, Allow),
        );
        let acl2 = AclBinding::new(
            ResourcePattern::new(Topic, "foo-1", Literal),
            AccessControlEntry::new("User:alice", "192.168.0.1", Write, Allow),
        );
        let acl3 = AclBinding::new(
            ResourcePattern::new(Topic, "bar-1", Literal),
            AccessControlEntry::new("User:alice", "*", AclOperation::Describe, Allow),
        );
        let acl4 = AclBinding::new(
            ResourcePattern::new(Topic, "bar-", Prefixed),
            AccessControlEntry::new("User:*", "*", Read, Allow),
        );
        let all = vec![acl1.clone(), acl2.clone(), acl3.clone(), acl4.clone()];
        let matching = AclBindingFilter::new(
            ResourcePatternFilter::new(ResourceType::Any, Some("bar-1"), PatternType::Match),
            AccessControlEntryFilter::ANY,
        );
        let filters = [
            matching,
            acl1.to_filter(),
            AclBindingFilter::new(
                ResourcePatternFilter::new(Topic, Some("bar-1"), Literal),
                AccessControlEntryFilter::ANY,
            ),
            AclBindingFilter::new(
                ResourcePatternFilter::new(Topic, Some("baz"), PatternType::Any),
                AccessControlEntryFilter::ANY,
            ),
        ];
        let (remaining, results) = delete(&all, &filters);
        assert_eq!(results[0], Ok(vec![acl3.clone(), acl4.clone()]));
        assert_eq!(results[1], Ok(vec![acl1.clone()]));
        assert_eq!(results[2], Ok(vec![acl3.clone()]));
        assert_eq!(results[3], Ok(vec![]));
        assert_eq!(remaining, vec![acl2]);
    }

    #[test]
    fn delete_past_the_limit_fails_that_filter_only() {
        let current: Vec<AclBinding> = (0..MAX_ACLS_PER_REQUEST + 5)
            .map(|i| acl(Topic, &format!("t{i}"), Literal, "User:a", Read, Allow))
            .collect();
        let literal = |name: &str| {
            AclBindingFilter::new(
                ResourcePatternFilter::new(Topic, Some(name), Literal),
                AccessControlEntryFilter::ANY,
            )
        };
        let (remaining, results) = delete(
            &current,
            &[literal("t1"), AclBindingFilter::ANY, literal("t2")],
        );
        assert_eq!(results[0], Ok(vec![current[1].clone()]));
        assert_eq!(
            results[1],
            Err(AclError::TooManyDeletions {
                limit: MAX_ACLS_PER_REQUEST
            })
        );
        assert_eq!(results[1].as_ref().map_err(AclError::error_code), Err(-1));
        // A later filter that fits within the limit still applies.
        assert_eq!(results[2], Ok(vec![current[2].clone()]));
        assert_eq!(remaining.len(), current.len() - 2);
        assert!(!remaining.contains(&current[1]));
    }
}
