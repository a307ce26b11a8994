//! Authorizer decisions: one test per rule of the module docs, then cases
//! ported from Kafka's StandardAuthorizerTest, AuthorizerTest and
//! BaseAuthorizerTest (authorizeByResourceType).

use super::*;
use crate::acl::filter::{AccessControlEntryFilter, ResourcePatternFilter};
use crate::acl::types::{AccessControlEntry, ResourcePattern};
use AclOperation::*;
use PatternType::{Literal, Prefixed};
use PermissionType::{Allow, Deny};
use ResourceType::{Cluster, Group, Topic, TransactionalId};

const LOCALHOST: &str = "127.0.0.1";

fn acl(
    rt: ResourceType,
    name: &str,
    pt: PatternType,
    principal: &str,
    host: &str,
    op: AclOperation,
    perm: PermissionType,
) -> AclBinding {
    AclBinding::new(
        ResourcePattern::new(rt, name, pt),
        AccessControlEntry::new(principal, host, op, perm),
    )
}

fn config(super_users: &str, allow_everyone: bool) -> AuthorizerConfig {
    AuthorizerConfig {
        super_users: AuthorizerConfig::parse_super_users(super_users).expect("valid super.users"),
        allow_everyone_if_no_acl_found: allow_everyone,
    }
}

/// Kafka's `createAndInitializeStandardAuthorizer`: super user `User:superman`.
fn authorizer(acls: Vec<AclBinding>) -> Authorizer {
    Authorizer::new(config("User:superman", false), acls)
}

fn allowed(
    a: &Authorizer,
    user: &str,
    host: &str,
    op: AclOperation,
    rt: ResourceType,
    name: &str,
) -> bool {
    a.authorize(&format!("User:{user}"), host, op, rt, name)
        .is_allowed()
}

/// Checks a list of (op, type, name) against expected results, like Kafka's
/// batched `authorize` assertions.
fn assert_batch(
    a: &Authorizer,
    user: &str,
    host: &str,
    cases: &[(AclOperation, ResourceType, &str, bool)],
) {
    for &(op, rt, name, expected) in cases {
        assert_eq!(
            allowed(a, user, host, op, rt, name),
            expected,
            "{user}@{host} {op} {rt}:{name}"
        );
    }
}

// ---- One test per rule ----

#[test]
fn super_users_are_always_allowed() {
    let deny_all = [Topic, Group, Cluster, TransactionalId]
        .map(|rt| acl(rt, "*", Literal, "User:*", "*", All, Deny));
    let a = Authorizer::new(config("User:superuser1; User:superuser2", false), deny_all);
    for user in ["superuser1", "superuser2"] {
        let decision = a.authorize(&format!("User:{user}"), "192.0.4.4", Read, Topic, "foo");
        assert_eq!(decision, Decision::Allowed(Rule::SuperUser));
    }
    assert!(!allowed(&a, "superuser3", "192.0.4.4", Read, Topic, "foo"));
    // Super-user status is the exact principal string.
    assert!(!a
        .authorize("Group:superuser1", "192.0.4.4", Read, Topic, "foo")
        .is_allowed());
    assert!(a.is_super_user("User:superuser2"));
}

#[test]
fn principal_matches_exactly_or_user_wildcard() {
    let a = authorizer(vec![
        acl(Topic, "t", Literal, "User:alice", "*", Read, Allow),
        acl(Topic, "u", Literal, "User:*", "*", Read, Allow),
        acl(Topic, "v", Literal, "Group:*", "*", Read, Allow),
    ]);
    assert!(allowed(&a, "alice", LOCALHOST, Read, Topic, "t"));
    assert!(!allowed(&a, "Alice", LOCALHOST, Read, Topic, "t"));
    assert!(!allowed(&a, "bob", LOCALHOST, Read, Topic, "t"));
    assert!(allowed(&a, "bob", LOCALHOST, Read, Topic, "u"));
    // `User:*` matches principals of any type.
    assert!(a
        .authorize("Group:devs", LOCALHOST, Read, Topic, "u")
        .is_allowed());
    // Only `User:*` is a wildcard.
    assert!(!a
        .authorize("Group:devs", LOCALHOST, Read, Topic, "v")
        .is_allowed());
}

#[test]
fn host_matches_exactly_or_wildcard() {
    let a = authorizer(vec![
        acl(Topic, "t", Literal, "User:alice", "10.0.0.1", Read, Allow),
        acl(Topic, "u", Literal, "User:alice", "*", Read, Allow),
    ]);
    assert!(allowed(&a, "alice", "10.0.0.1", Read, Topic, "t"));
    assert!(!allowed(&a, "alice", "10.0.0.2", Read, Topic, "t"));
    assert!(!allowed(&a, "alice", "10.0.0.10", Read, Topic, "t"));
    assert!(allowed(&a, "alice", "0:0:0:0:0:0:0:1", Read, Topic, "u"));
}

#[test]
fn resource_matches_literal_wildcard_and_prefix() {
    let a = authorizer(vec![
        acl(Topic, "exact", Literal, "User:alice", "*", Read, Allow),
        acl(Topic, "pre-", Prefixed, "User:alice", "*", Read, Allow),
        acl(Group, "*", Literal, "User:alice", "*", Read, Allow),
        acl(Group, "*", Prefixed, "User:bob", "*", Read, Allow),
    ]);
    assert_batch(
        &a,
        "alice",
        LOCALHOST,
        &[
            (Read, Topic, "exact", true),
            (Read, Topic, "exactly", false),
            (Read, Topic, "exac", false),
            (Read, Topic, "pre-", true),
            (Read, Topic, "pre-x", true),
            (Read, Topic, "pre", false),
            (Read, Group, "anything", true),
            (Read, Group, "", true),
            // ACLs are per resource type.
            (Read, TransactionalId, "exact", false),
        ],
    );
    // A PREFIXED `*` is only the prefix "*".
    assert!(!allowed(&a, "bob", LOCALHOST, Read, Group, "anything"));
    assert!(allowed(&a, "bob", LOCALHOST, Read, Group, "*anything"));
}

#[test]
fn deny_wins_over_allow() {
    let a = authorizer(vec![
        acl(Topic, "*", Literal, "User:*", "*", All, Allow),
        acl(Topic, "secret", Prefixed, "User:alice", "*", Read, Deny),
        acl(Topic, "secret-1", Literal, "User:alice", "*", Read, Allow),
    ]);
    let decision = a.authorize("User:alice", LOCALHOST, Read, Topic, "secret-1");
    assert!(
        matches!(decision, Decision::Denied(Rule::Acl(b)) if b.entry.permission == Deny),
        "{decision}"
    );
    assert!(allowed(&a, "bob", LOCALHOST, Read, Topic, "secret-1"));
    assert!(allowed(&a, "alice", LOCALHOST, Write, Topic, "secret-1"));
}

#[test]
fn operation_all_matches_every_operation() {
    let concrete: Vec<AclOperation> = AclOperation::ALL_VALUES
        .iter()
        .copied()
        .filter(|op| !matches!(op, Unknown | Any | All))
        .collect();
    let allow_all = authorizer(vec![acl(
        Topic,
        "t",
        Literal,
        "User:alice",
        "*",
        All,
        Allow,
    )]);
    let deny_all = authorizer(vec![
        acl(Topic, "t", Literal, "User:alice", "*", All, Allow),
        acl(Topic, "t", Literal, "User:alice", "*", All, Deny),
    ]);
    for &op in &concrete {
        assert!(
            allowed(&allow_all, "alice", LOCALHOST, op, Topic, "t"),
            "ALLOW ALL allows {op}"
        );
        assert!(
            !allowed(&deny_all, "alice", LOCALHOST, op, Topic, "t"),
            "DENY ALL denies {op}"
        );
    }
}

#[test]
fn allow_implies_describe_and_describe_configs() {
    for granted in [Describe, Read, Write, Delete, Alter] {
        let a = authorizer(vec![acl(
            Topic,
            "t",
            Literal,
            "User:alice",
            "*",
            granted,
            Allow,
        )]);
        assert!(
            allowed(&a, "alice", LOCALHOST, Describe, Topic, "t"),
            "ALLOW {granted} implies DESCRIBE"
        );
    }
    for granted in [
        Create,
        ClusterAction,
        DescribeConfigs,
        AlterConfigs,
        IdempotentWrite,
    ] {
        let a = authorizer(vec![acl(
            Topic,
            "t",
            Literal,
            "User:alice",
            "*",
            granted,
            Allow,
        )]);
        assert!(
            !allowed(&a, "alice", LOCALHOST, Describe, Topic, "t"),
            "ALLOW {granted} does not imply DESCRIBE"
        );
    }
    let a = authorizer(vec![acl(
        Topic,
        "t",
        Literal,
        "User:alice",
        "*",
        AlterConfigs,
        Allow,
    )]);
    assert!(allowed(&a, "alice", LOCALHOST, DescribeConfigs, Topic, "t"));
    // Implication goes one way only.
    let a = authorizer(vec![acl(
        Topic,
        "t",
        Literal,
        "User:alice",
        "*",
        Describe,
        Allow,
    )]);
    assert!(!allowed(&a, "alice", LOCALHOST, Read, Topic, "t"));
}

#[test]
fn deny_does_not_imply() {
    for denied in [Read, Write, Delete, Alter] {
        let a = authorizer(vec![
            acl(Topic, "t", Literal, "User:alice", "*", All, Allow),
            acl(Topic, "t", Literal, "User:alice", "*", denied, Deny),
        ]);
        assert!(!allowed(&a, "alice", LOCALHOST, denied, Topic, "t"));
        assert!(
            allowed(&a, "alice", LOCALHOST, Describe, Topic, "t"),
            "DENY {denied} leaves DESCRIBE"
        );
    }
    let a = authorizer(vec![
        acl(Topic, "t", Literal, "User:alice", "*", All, Allow),
        acl(Topic, "t", Literal, "User:alice", "*", AlterConfigs, Deny),
    ]);
    assert!(allowed(&a, "alice", LOCALHOST, DescribeConfigs, Topic, "t"));
    // A DENY DESCRIBE denies DESCRIBE even with READ allowed.
    let a = authorizer(vec![
        acl(Topic, "t", Literal, "User:alice", "*", Read, Allow),
        acl(Topic, "t", Literal, "User:alice", "*", Describe, Deny),
    ]);
    assert!(!allowed(&a, "alice", LOCALHOST, Describe, Topic, "t"));
    assert!(allowed(&a, "alice", LOCALHOST, Read, Topic, "t"));
}

#[test]
fn no_acl_found_uses_the_default_and_any_covering_acl_counts() {
    let acls = vec![
        acl(
            Topic,
            "other-principal",
            Literal,
            "User:carol",
            "*",
            Read,
            Allow,
        ),
        acl(
            Topic,
            "other-host",
            Literal,
            "User:alice",
            "10.9.9.9",
            Read,
            Allow,
        ),
        acl(Topic, "other-op", Literal, "User:alice", "*", Write, Allow),
        acl(Topic, "pre", Prefixed, "User:carol", "*", Read, Allow),
        acl(Group, "*", Literal, "User:carol", "*", Read, Allow),
    ];
    let open = Authorizer::new(config("", true), acls.clone());
    let closed = Authorizer::new(config("", false), acls);
    // No ACL covers these: the default decides.
    for name in ["free", "other", "pr"] {
        assert_eq!(
            open.authorize("User:alice", LOCALHOST, Read, Topic, name),
            Decision::Allowed(Rule::NoAclFound)
        );
        assert_eq!(
            closed.authorize("User:alice", LOCALHOST, Read, Topic, name),
            Decision::Denied(Rule::NoAclFound)
        );
    }
    // Covered by an ACL for someone else, another host, another operation, a
    // prefix or the wildcard: denied even when everyone is allowed by default.
    for (rt, name) in [
        (Topic, "other-principal"),
        (Topic, "other-host"),
        (Topic, "other-op"),
        (Topic, "prefix"),
        (Group, "g"),
    ] {
        let decision = open.authorize("User:alice", LOCALHOST, Read, rt, name);
        assert_eq!(
            decision,
            Decision::Denied(Rule::NoMatchingAcl),
            "{rt}:{name}"
        );
    }
}

#[test]
fn authorize_rejects_filter_only_values() {
    let a = Authorizer::new(config("User:superman", true), []);
    assert_eq!(
        a.authorize("User:superman", LOCALHOST, Any, Topic, "t"),
        Decision::Denied(Rule::InvalidAction)
    );
    assert_eq!(
        a.authorize("User:x", LOCALHOST, Read, ResourceType::Any, "t"),
        Decision::Denied(Rule::InvalidAction)
    );
    assert!(!a.authorize_any("User:x", LOCALHOST, Unknown, Topic));
    assert!(!a.authorize_any("User:x", LOCALHOST, Read, ResourceType::Any));
    assert!(!a.authorize_any("User:x", LOCALHOST, Read, ResourceType::Unknown));
}

#[test]
fn multibyte_names_never_split_characters() {
    let a = authorizer(vec![
        acl(Topic, "é", Prefixed, "User:alice", "*", Read, Allow),
        acl(Topic, "a", Prefixed, "User:alice", "*", Read, Allow),
        acl(Topic, "ab", Prefixed, "User:alice", "*", Write, Allow),
    ]);
    assert!(allowed(&a, "alice", LOCALHOST, Read, Topic, "éa"));
    // "é" is two bytes: the one-byte prefix length falls inside it.
    assert!(!allowed(&a, "alice", LOCALHOST, Read, Topic, "è"));
    assert!(allowed(&a, "alice", LOCALHOST, Write, Topic, "ab\u{1F600}"));
    assert!(a.authorize_any("User:alice", LOCALHOST, Read, Topic));
}

// ---- Ported from Kafka's StandardAuthorizerTest ----

fn foo_acl(op: AclOperation, perm: PermissionType) -> AclBinding {
    acl(Topic, "foo_", Prefixed, "User:bob", "*", op, perm)
}

fn bar_acl(op: AclOperation, perm: PermissionType) -> AclBinding {
    acl(Group, "bar", Literal, "User:*", "*", op, perm)
}

#[test]
fn kafka_get_configured_super_users() {
    assert_eq!(AuthorizerConfig::parse_super_users(""), Ok(vec![]));
    assert_eq!(AuthorizerConfig::parse_super_users(" "), Ok(vec![]));
    let expected = vec!["User:bob".to_owned(), "User:alice".to_owned()];
    assert_eq!(
        AuthorizerConfig::parse_super_users("User:bob;User:alice "),
        Ok(expected.clone())
    );
    assert_eq!(
        AuthorizerConfig::parse_super_users(";  User:bob  ;  User:alice "),
        Ok(expected.clone())
    );
    assert_eq!(
        AuthorizerConfig::parse_super_users("User:bob;User:alice;User:bob"),
        Ok(expected)
    );
    let err = AuthorizerConfig::parse_super_users("bob;:alice").expect_err("bob has no type");
    assert_eq!(
        err.source.to_string(),
        "expected a string in format principalType:principalName but got bob"
    );
    assert!(err.to_string().contains("super.users"));
}

#[test]
fn kafka_get_default_result() {
    assert!(!AuthorizerConfig::default().allow_everyone_if_no_acl_found);
    assert!(AuthorizerConfig::parse_allow_everyone_if_no_acl_found(
        "true"
    ));
    assert!(AuthorizerConfig::parse_allow_everyone_if_no_acl_found(
        " TRUE "
    ));
    assert!(!AuthorizerConfig::parse_allow_everyone_if_no_acl_found(
        "false"
    ));
    assert!(!AuthorizerConfig::parse_allow_everyone_if_no_acl_found(
        "yes"
    ));
}

#[test]
fn kafka_allow_everyone_if_no_acl_found() {
    let acls = vec![acl(
        Topic,
        "topic1",
        Literal,
        "User:Alice",
        "*",
        Read,
        Allow,
    )];
    let enabled = Authorizer::new(config("User:alice;User:chris", true), acls.clone());
    assert!(!allowed(&enabled, "Bob", LOCALHOST, Read, Topic, "topic1"));
    assert!(allowed(&enabled, "Bob", LOCALHOST, Read, Topic, "topic2"));
    let disabled = Authorizer::new(config("User:alice;User:chris", false), acls);
    assert!(!allowed(&disabled, "Bob", LOCALHOST, Read, Topic, "topic1"));
    assert!(!allowed(&disabled, "Bob", LOCALHOST, Read, Topic, "topic2"));
}

#[test]
fn kafka_find_result_implication_and_principal_matching() {
    let bob = "User:bob";
    for op in [Describe, Read, Write, Delete, Alter] {
        assert_eq!(
            applies(&foo_acl(op, Allow), bob, LOCALHOST, Describe),
            Some(Allow)
        );
    }
    assert_eq!(
        applies(&foo_acl(Create, Allow), bob, LOCALHOST, Describe),
        None
    );
    for op in [Read, Write, Delete, Alter] {
        assert_eq!(applies(&foo_acl(op, Deny), bob, LOCALHOST, Describe), None);
    }
    assert_eq!(
        applies(&foo_acl(Describe, Deny), bob, LOCALHOST, Describe),
        Some(Deny)
    );
    for op in [DescribeConfigs, AlterConfigs] {
        assert_eq!(
            applies(&foo_acl(op, Allow), bob, LOCALHOST, DescribeConfigs),
            Some(Allow)
        );
    }
    assert_eq!(
        applies(
            &foo_acl(AlterConfigs, Deny),
            bob,
            LOCALHOST,
            DescribeConfigs
        ),
        None
    );
    assert_eq!(
        applies(&foo_acl(AlterConfigs, Deny), bob, LOCALHOST, AlterConfigs),
        Some(Deny)
    );
    // Principal matching.
    assert_eq!(
        applies(&foo_acl(Read, Allow), bob, LOCALHOST, Read),
        Some(Allow)
    );
    assert_eq!(
        applies(&foo_acl(Read, Allow), "User:alice", LOCALHOST, Read),
        None
    );
    assert_eq!(
        applies(&bar_acl(Read, Deny), "User:alice", LOCALHOST, Read),
        Some(Deny)
    );
}

#[test]
fn kafka_list_acls() {
    let foo = [foo_acl(Read, Allow), foo_acl(Write, Allow)];
    let bar = [bar_acl(DescribeConfigs, Deny), bar_acl(AlterConfigs, Deny)];
    let all: Vec<AclBinding> = foo.iter().chain(&bar).cloned().collect();
    let a = authorizer(all.clone());
    assert_eq!(a.acls(), all.as_slice());
    assert_eq!(
        a.describe(&AclBindingFilter::ANY)
            .cloned()
            .collect::<Vec<_>>(),
        all
    );
    let topics = AclBindingFilter::new(
        ResourcePatternFilter::new(Topic, None, PatternType::Any),
        AccessControlEntryFilter::ANY,
    );
    assert_eq!(
        a.describe(&topics).cloned().collect::<Vec<_>>(),
        foo.to_vec()
    );
}

#[test]
fn kafka_simple_authorizations() {
    let a = authorizer(vec![
        foo_acl(Read, Allow),
        foo_acl(Write, Allow),
        bar_acl(DescribeConfigs, Allow),
        bar_acl(AlterConfigs, Allow),
    ]);
    assert!(allowed(&a, "bob", LOCALHOST, Read, Topic, "foo_"));
    assert!(allowed(&a, "fred", LOCALHOST, AlterConfigs, Group, "bar"));
}

#[test]
fn kafka_deny_precedence_with_operation_all() {
    let a = authorizer(vec![
        acl(Topic, "foo", Literal, "User:alice", "*", All, Deny),
        acl(Topic, "foo", Prefixed, "User:alice", "*", Read, Allow),
        acl(Topic, "foo", Literal, "User:*", "*", All, Deny),
        acl(Topic, "foo", Prefixed, "User:*", "*", Describe, Allow),
    ]);
    assert_batch(
        &a,
        "alice",
        LOCALHOST,
        &[
            (Write, Topic, "foo", false),
            (Read, Topic, "foo", false),
            (Describe, Topic, "foo", false),
            (Read, Topic, "foobar", true),
        ],
    );
    assert_batch(
        &a,
        "bob",
        LOCALHOST,
        &[
            (Describe, Topic, "foo", false),
            (Read, Topic, "foo", false),
            (Write, Topic, "foo", false),
            (Describe, Topic, "foobaz", true),
            (Read, Topic, "foobaz", false),
        ],
    );
}

#[test]
fn kafka_topic_acl_with_operation_all() {
    let a = authorizer(vec![
        acl(Topic, "foo", Literal, "User:*", "*", All, Allow),
        acl(Topic, "bar", Prefixed, "User:alice", "*", All, Allow),
        acl(Topic, "baz", Literal, "User:bob", "*", All, Allow),
    ]);
    assert_batch(
        &a,
        "alice",
        LOCALHOST,
        &[
            (Write, Topic, "foo", true),
            (DescribeConfigs, Topic, "bar", true),
            (Describe, Topic, "baz", false),
        ],
    );
    assert_batch(
        &a,
        "bob",
        LOCALHOST,
        &[
            (Write, Topic, "foo", true),
            (Read, Topic, "bar", false),
            (Describe, Topic, "baz", true),
        ],
    );
    assert_batch(
        &a,
        "malory",
        LOCALHOST,
        &[
            (Describe, Topic, "foo", true),
            (Write, Topic, "bar", false),
            (Read, Topic, "baz", false),
        ],
    );
}

#[test]
fn kafka_host_address_acl_validation() {
    let (host1, host2) = ("192.168.1.1", "192.168.1.2");
    let a = authorizer(vec![
        acl(Topic, "foo", Literal, "User:alice", host1, Read, Deny),
        acl(Topic, "foo", Literal, "User:alice", "*", Read, Allow),
        acl(Topic, "bar", Literal, "User:bob", host2, Read, Allow),
        acl(Topic, "bar", Literal, "User:*", LOCALHOST, Describe, Allow),
    ]);
    let check = |user: &str, host: &str, expected: [bool; 3]| {
        assert_batch(
            &a,
            user,
            host,
            &[
                (Read, Topic, "foo", expected[0]),
                (Read, Topic, "bar", expected[1]),
                (Describe, Topic, "bar", expected[2]),
            ],
        );
    };
    check("alice", LOCALHOST, [true, false, true]);
    check("alice", host1, [false, false, false]);
    check("alice", host2, [true, false, false]);
    check("bob", LOCALHOST, [false, false, true]);
    check("bob", host1, [false, false, false]);
    check("bob", host2, [false, true, true]);
}

fn many_acls() -> Vec<AclBinding> {
    vec![
        acl(Topic, "green2", Literal, "User:*", "*", Read, Allow),
        acl(Topic, "green", Prefixed, "User:bob", "*", Read, Allow),
        acl(Topic, "betamax4", Literal, "User:bob", "*", Read, Allow),
        acl(Topic, "betamax", Literal, "User:bob", "*", Read, Allow),
        acl(Topic, "beta", Prefixed, "User:*", "*", Read, Allow),
        acl(Topic, "alpha", Prefixed, "User:*", "*", Read, Allow),
        acl(Topic, "alp", Prefixed, "User:bob", "*", Read, Deny),
        acl(Group, "*", Literal, "User:bob", "*", Write, Allow),
        acl(Group, "wheel", Literal, "User:*", "*", Write, Deny),
    ]
}

#[test]
fn kafka_authorization_with_many_acls() {
    let a = authorizer(many_acls());
    assert_batch(
        &a,
        "bob",
        LOCALHOST,
        &[
            (Read, Topic, "green1", true),
            (Write, Group, "wheel", false),
            (Read, Topic, "alpha", false),
            (Write, Group, "arbitrary", true),
            (Read, Topic, "ala", false),
        ],
    );
}

#[test]
fn kafka_audit_rules_name_the_deciding_acl() {
    // testDenyAuditLogging / testAllowAuditLogging: the rule in the log.
    let a = authorizer(many_acls());
    let denied = a.authorize("User:bob", LOCALHOST, Read, Topic, "alpha");
    assert_eq!(
        denied,
        Decision::Denied(Rule::Acl(&acl(
            Topic, "alp", Prefixed, "User:bob", "*", Read, Deny
        )))
    );
    assert!(denied.to_string().starts_with("Denied based on rule MatchingAcl(acl=(pattern=ResourcePattern(resourceType=TOPIC, name=alp, patternType=PREFIXED)"));
    let allowed = a.authorize("User:bob", LOCALHOST, Read, Topic, "green1");
    assert_eq!(
        allowed,
        Decision::Allowed(Rule::Acl(&acl(
            Topic, "green", Prefixed, "User:bob", "*", Read, Allow
        )))
    );
}

#[test]
fn kafka_prefix_acls() {
    let a = authorizer(vec![
        acl(Topic, "fooa", Prefixed, "User:alice", "*", All, Allow),
        acl(Topic, "foobar", Literal, "User:bob", "*", All, Allow),
        acl(Topic, "f", Prefixed, "User:bob", "*", All, Allow),
    ]);
    assert_batch(
        &a,
        "bob",
        LOCALHOST,
        &[
            (Write, Topic, "foobarr", true),
            (Read, Topic, "goobar", false),
            (Read, Topic, "fooa", true),
        ],
    );
    assert_batch(
        &a,
        "alice",
        LOCALHOST,
        &[
            (Describe, Topic, "fooa", true),
            (Write, Topic, "bar", false),
            (Read, Topic, "baz", false),
        ],
    );
}

// ---- Ported from Kafka's AuthorizerTest ----

const ALICE: &str = "alice";
const CLIENT: &str = "192.168.0.1";

#[test]
fn kafka_authorize_with_empty_resource_name() {
    let a = authorizer(vec![]);
    assert!(!allowed(&a, ALICE, CLIENT, Read, Group, ""));
    let a = authorizer(vec![acl(Group, "*", Literal, "User:*", "*", Read, Allow)]);
    assert!(allowed(&a, ALICE, CLIENT, Read, Group, ""));
}

#[test]
fn kafka_topic_acl() {
    let (u1, h1, h2) = ("User:alice", "192.168.1.1", "192.168.1.2");
    let r = "foo-1";
    let a = authorizer(vec![
        acl(Topic, r, Literal, u1, h1, Read, Allow),
        acl(Topic, r, Literal, u1, h2, Read, Allow),
        acl(Topic, r, Literal, u1, h1, Read, Deny),
        acl(Topic, r, Literal, u1, h1, Write, Allow),
        acl(Topic, r, Literal, u1, "*", Describe, Allow),
        acl(Topic, r, Literal, "User:rob", "*", Read, Allow),
        acl(Topic, r, Literal, "User:batman", "*", Write, Allow),
    ]);
    assert!(allowed(&a, "alice", h2, Read, Topic, r));
    assert!(!allowed(&a, "alice", h1, Read, Topic, r));
    assert!(allowed(&a, "alice", h1, Write, Topic, r));
    assert!(!allowed(&a, "alice", h2, Write, Topic, r));
    assert!(allowed(&a, "alice", h1, Describe, Topic, r));
    assert!(allowed(&a, "alice", h2, Describe, Topic, r));
    assert!(!allowed(&a, "alice", h1, Alter, Topic, r));
    assert!(!allowed(&a, "alice", h2, Alter, Topic, r));
    assert!(allowed(&a, "rob", h1, Describe, Topic, r));
    assert!(allowed(&a, "batman", h1, Describe, Topic, r));
    assert!(allowed(&a, "rob", h1, Read, Topic, r));
    assert!(allowed(&a, "batman", h1, Write, Topic, r));
}

#[test]
fn kafka_deny_takes_precedence_and_allow_all() {
    let host = "192.168.2.1";
    let a = authorizer(vec![
        acl(Topic, "foo-1", Literal, "User:*", "*", All, Allow),
        acl(Topic, "foo-1", Literal, "User:alice", host, All, Deny),
    ]);
    assert!(!allowed(&a, ALICE, host, Read, Topic, "foo-1"));
    assert!(allowed(&a, "random", "192.0.4.4", Read, Topic, "foo-1"));
}

#[test]
fn kafka_wildcard_acls() {
    let host1 = "192.168.3.1";
    assert!(!allowed(
        &authorizer(vec![]),
        ALICE,
        CLIENT,
        Read,
        Topic,
        "foo-1"
    ));
    let mut acls = vec![acl(Topic, "*", Literal, "User:alice", host1, Read, Allow)];
    assert!(allowed(
        &authorizer(acls.clone()),
        ALICE,
        host1,
        Read,
        Topic,
        "foo-1"
    ));
    acls.push(acl(
        Topic,
        "foo-1",
        Literal,
        "User:alice",
        host1,
        Write,
        Allow,
    ));
    acls.push(acl(Topic, "*", Literal, "User:alice", host1, Write, Deny));
    assert!(!allowed(
        &authorizer(acls),
        ALICE,
        host1,
        Write,
        Topic,
        "foo-1"
    ));
}

#[test]
fn kafka_no_acl_found_and_override() {
    assert!(!allowed(
        &authorizer(vec![]),
        ALICE,
        CLIENT,
        Read,
        Topic,
        "foo-1"
    ));
    let open = Authorizer::new(config(" User:superuser1; User:superuser2 ", true), []);
    assert!(allowed(&open, ALICE, CLIENT, Read, Topic, "foo-1"));
}

#[test]
fn kafka_acl_inheritance() {
    let concrete: Vec<AclOperation> = AclOperation::ALL_VALUES
        .iter()
        .copied()
        .filter(|op| !matches!(op, Unknown | Any | All))
        .collect();
    let host = "192.168.3.1";
    let implications_of_allow = |parent: AclOperation, implied: &[AclOperation]| {
        let a = authorizer(vec![acl(
            Cluster,
            "kafka-cluster",
            Literal,
            "User:alice",
            "*",
            parent,
            Allow,
        )]);
        for &op in &concrete {
            let expected = parent == All || op == parent || implied.contains(&op);
            assert_eq!(
                allowed(&a, ALICE, host, op, Cluster, "kafka-cluster"),
                expected,
                "ALLOW {parent} vs {op}"
            );
        }
    };
    let implications_of_deny = |parent: AclOperation| {
        let a = authorizer(vec![
            acl(
                Cluster,
                "kafka-cluster",
                Literal,
                "User:alice",
                "*",
                parent,
                Deny,
            ),
            acl(
                Cluster,
                "kafka-cluster",
                Literal,
                "User:alice",
                "*",
                All,
                Allow,
            ),
        ]);
        for &op in &concrete {
            let expected_denied = parent == All || op == parent;
            assert_eq!(
                !allowed(&a, ALICE, host, op, Cluster, "kafka-cluster"),
                expected_denied,
                "DENY {parent} vs {op}"
            );
        }
    };
    implications_of_allow(All, &[]);
    implications_of_deny(All);
    for parent in [Read, Write, Delete, Alter] {
        implications_of_allow(parent, &[Describe]);
    }
    implications_of_deny(Describe);
    implications_of_allow(AlterConfigs, &[DescribeConfigs]);
    implications_of_deny(DescribeConfigs);
}

#[test]
fn kafka_access_allowed_via_wildcard_and_prefixed_resource() {
    let allow_read = |name: &str, pt: PatternType| acl(Topic, name, pt, "User:*", "*", Read, Allow);
    assert!(allowed(
        &authorizer(vec![allow_read("*", Literal)]),
        ALICE,
        CLIENT,
        Read,
        Topic,
        "foo-1"
    ));
    assert!(allowed(
        &authorizer(vec![allow_read("foo", Prefixed)]),
        ALICE,
        CLIENT,
        Read,
        Topic,
        "foo-1"
    ));
}

#[test]
fn kafka_authorize_with_prefixed_resource() {
    let deny_read = |name: &str, pt: PatternType| acl(Topic, name, pt, "User:*", "*", Read, Deny);
    let a = authorizer(vec![
        deny_read("a_other", Literal),
        deny_read("a_other", Prefixed),
        deny_read("foo-7d1f", Prefixed),
        deny_read("foo-93ab", Prefixed),
        deny_read("foo-3c2e-zzz", Prefixed),
        deny_read("fooo-11aa", Prefixed),
        deny_read("fo-22bb", Prefixed),
        deny_read("fop-33cc", Prefixed),
        deny_read("fon-44dd", Prefixed),
        deny_read("fon-", Prefixed),
        deny_read("z_other", Prefixed),
        deny_read("z_other", Literal),
        acl(Topic, "foo", Prefixed, "User:*", "*", Read, Allow),
    ]);
    assert!(allowed(&a, ALICE, CLIENT, Read, Topic, "foo-5e6f"));
}

#[test]
fn kafka_single_character_resource_acls() {
    let allow_read = |name: &str, pt: PatternType| acl(Topic, name, pt, "User:*", "*", Read, Allow);
    let a = authorizer(vec![allow_read("f", Literal)]);
    assert!(allowed(&a, ALICE, CLIENT, Read, Topic, "f"));
    assert!(!allowed(&a, ALICE, CLIENT, Read, Topic, "foo"));
    let a = authorizer(vec![allow_read("f", Literal), allow_read("_", Prefixed)]);
    assert!(allowed(&a, ALICE, CLIENT, Read, Topic, "_foo"));
    assert!(allowed(&a, ALICE, CLIENT, Read, Topic, "_"));
    assert!(!allowed(&a, ALICE, CLIENT, Read, Topic, "foo_"));
}

#[test]
fn kafka_get_acls_principal() {
    let by_principal = |p: &str| {
        AclBindingFilter::new(
            ResourcePatternFilter::ANY,
            AccessControlEntryFilter::new(Some(p), None, Any, PermissionType::Any),
        )
    };
    let a = authorizer(vec![acl(
        Topic,
        "foo-1",
        Literal,
        "User:alice",
        "*",
        Write,
        Allow,
    )]);
    assert_eq!(a.describe(&by_principal("User:*")).count(), 0);
    assert_eq!(a.describe(&by_principal("User:alice")).count(), 1);
    let a = authorizer(vec![acl(
        Topic, "foo-1", Literal, "User:*", "*", Write, Allow,
    )]);
    assert_eq!(a.describe(&by_principal("User:*")).count(), 1);
    assert_eq!(a.describe(&by_principal("User:alice")).count(), 0);
}

// ---- Ported from Kafka's BaseAuthorizerTest (authorizeByResourceType) ----

/// A mutable ACL set, rebuilt into a snapshot for each question.
#[derive(Default)]
struct Acls(Vec<AclBinding>);

impl Acls {
    fn add(&mut self, pattern: &ResourcePattern, entries: &[&AccessControlEntry]) {
        for e in entries {
            let b = AclBinding::new(pattern.clone(), (*e).clone());
            if !self.0.contains(&b) {
                self.0.push(b);
            }
        }
    }

    fn remove(&mut self, pattern: &ResourcePattern, entries: &[&AccessControlEntry]) {
        self.0
            .retain(|b| !(b.pattern == *pattern && entries.contains(&&b.entry)));
    }

    fn any(&self, user: &str, host: &str, op: AclOperation, rt: ResourceType) -> bool {
        Authorizer::new(
            config("User:superuser1; User:superuser2", false),
            self.0.clone(),
        )
        .authorize_any(&format!("User:{user}"), host, op, rt)
    }
}

fn ace(principal: &str, host: &str, op: AclOperation, perm: PermissionType) -> AccessControlEntry {
    AccessControlEntry::new(principal, host, op, perm)
}

const H1: &str = "192.168.1.1";
const H2: &str = "192.168.1.2";

#[test]
fn kafka_by_resource_type_multiple_add_and_remove() {
    let resource1 = ResourcePattern::new(Topic, "sb1-0f3a", Literal);
    let deny_read = ace("User:user1", H1, Read, Deny);
    let allow_read = ace("User:user1", H1, Read, Allow);
    let mut acls = Acls::default();
    for _ in 0..3 {
        assert!(!acls.any("user1", H1, Read, Topic));
        acls.add(&resource1, &[&allow_read]);
        assert!(acls.any("user1", H1, Read, Topic));
        for _ in 0..3 {
            acls.add(&resource1, &[&deny_read]);
            assert!(!acls.any("user1", H1, Read, Topic));
            acls.remove(&resource1, &[&deny_read]);
            acls.add(&resource1, &[&allow_read]);
            assert!(acls.any("user1", H1, Read, Topic));
        }
        acls.remove(&resource1, &[&allow_read]);
        assert!(!acls.any("user1", H1, Read, Topic));
    }
}

#[test]
fn kafka_by_resource_type_unrelated_deny_wont_dominate_allow() {
    let resource1 = ResourcePattern::new(Topic, "sb1-aa", Literal);
    let resource2 = ResourcePattern::new(Topic, "sb2-bb", Literal);
    let resource3 = ResourcePattern::new(Group, "s", Prefixed);
    let mut acls = Acls::default();
    acls.add(
        &resource1,
        &[
            &ace("User:user1", H1, Read, Deny),
            &ace("User:user2", H1, Read, Deny),
            &ace("User:user1", H2, Write, Deny),
            &ace("User:user2", H2, Read, Deny),
            &ace("User:user1", H2, Read, Allow),
        ],
    );
    acls.add(&resource2, &[&ace("User:user1", H2, Read, Deny)]);
    acls.add(&resource3, &[&ace("User:user1", H2, Read, Deny)]);
    assert!(!acls.any("user1", H1, Read, Topic));
    assert!(!acls.any("user1", H1, Read, Group));
    assert!(!acls.any("user1", H1, Read, TransactionalId));
    assert!(!acls.any("user1", H1, Read, Cluster));
    assert!(acls.any("user1", H2, Read, Topic));
}

#[test]
fn kafka_by_resource_type_deny_takes_precedence() {
    let resource1 = ResourcePattern::new(Topic, "sb1-cc", Literal);
    let mut acls = Acls::default();
    acls.add(&resource1, &[&ace("User:user1", H1, Write, Allow)]);
    assert!(acls.any("user1", H1, Write, Topic));
    acls.add(&resource1, &[&ace("User:user1", H1, Write, Deny)]);
    assert!(!acls.any("user1", H1, Write, Topic));
}

#[test]
fn kafka_by_resource_type_prefixed_resource_deny_dominate() {
    let pattern = |name: &str| ResourcePattern::new(Group, name, Prefixed);
    let allow = ace("User:user1", H1, Read, Allow);
    let deny = ace("User:user1", H1, Read, Deny);
    let mut acls = Acls::default();
    acls.add(&pattern("abcde"), &[&allow]);
    assert!(acls.any("user1", H1, Read, Group));
    acls.add(&pattern("abcd"), &[&deny]);
    assert!(!acls.any("user1", H1, Read, Group));
    acls.add(&pattern("abc"), &[&allow]);
    assert!(acls.any("user1", H1, Read, Group));
    acls.add(&pattern("a"), &[&deny]);
    assert!(!acls.any("user1", H1, Read, Group));
    acls.add(&pattern("ab"), &[&allow]);
    assert!(!acls.any("user1", H1, Read, Group));
}

#[test]
fn kafka_by_resource_type_wildcard_resource_deny_dominate() {
    let wildcard = ResourcePattern::new(Group, "*", Literal);
    let prefixed = ResourcePattern::new(Group, "hello", Prefixed);
    let literal = ResourcePattern::new(Group, "aloha", Literal);
    let allow = ace("User:user1", H1, Write, Allow);
    let deny = ace("User:user1", H1, Write, Deny);
    let mut acls = Acls::default();
    acls.add(&prefixed, &[&allow]);
    assert!(acls.any("user1", H1, Write, Group));
    acls.add(&wildcard, &[&deny]);
    assert!(!acls.any("user1", H1, Write, Group));
    acls.add(&wildcard, &[&allow]);
    assert!(!acls.any("user1", H1, Write, Group));
    acls.add(&literal, &[&allow]);
    assert!(!acls.any("user1", H1, Write, Group));
}

#[test]
fn kafka_by_resource_type_with_all_operation_ace() {
    let resource1 = ResourcePattern::new(Topic, "sb1-dd", Literal);
    let mut acls = Acls::default();
    assert!(!acls.any("user1", H1, Read, Topic));
    acls.add(
        &resource1,
        &[
            &ace("User:user1", H1, Write, Deny),
            &ace("User:user1", H1, All, Allow),
        ],
    );
    assert!(acls.any("user1", H1, Read, Topic));
    acls.add(&resource1, &[&ace("User:user1", H1, All, Deny)]);
    assert!(!acls.any("user1", H1, Read, Topic));
}

#[test]
fn kafka_by_resource_type_with_all_host_ace() {
    let resource1 = ResourcePattern::new(Topic, "sb1-ee", Literal);
    let resource2 = ResourcePattern::new(Topic, "sb2-ff", Literal);
    let mut acls = Acls::default();
    assert!(!acls.any("user1", H1, Read, Topic));
    acls.add(&resource1, &[&ace("User:user1", H1, Read, Allow)]);
    assert!(acls.any("user1", H1, Read, Topic));
    acls.add(&resource1, &[&ace("User:user1", "*", Read, Deny)]);
    assert!(!acls.any("user1", H1, Read, Topic));
    acls.add(&resource2, &[&ace("User:user1", H1, Read, Deny)]);
    assert!(!acls.any("user1", H1, Read, Topic));
    assert!(!acls.any("user1", H2, Read, Topic));
    acls.add(&resource2, &[&ace("User:user1", "*", Read, Allow)]);
    assert!(acls.any("user1", H2, Read, Topic));
    acls.add(&resource2, &[&ace("User:user1", "*", Read, Deny)]);
    assert!(!acls.any("user1", H2, Read, Topic));
}

#[test]
fn kafka_by_resource_type_with_all_principal_ace() {
    let resource1 = ResourcePattern::new(Topic, "sb1-gg", Literal);
    let resource2 = ResourcePattern::new(Topic, "sb2-hh", Literal);
    let mut acls = Acls::default();
    assert!(!acls.any("user1", H1, Read, Topic));
    acls.add(&resource1, &[&ace("User:user1", H1, Read, Allow)]);
    assert!(acls.any("user1", H1, Read, Topic));
    acls.add(&resource1, &[&ace("User:*", H1, Read, Deny)]);
    assert!(!acls.any("user1", H1, Read, Topic));
    acls.add(&resource2, &[&ace("User:user1", H1, Read, Deny)]);
    assert!(!acls.any("user1", H1, Read, Topic));
    assert!(!acls.any("user2", H1, Read, Topic));
    acls.add(&resource2, &[&ace("User:*", H1, Read, Allow)]);
    assert!(acls.any("user2", H1, Read, Topic));
    acls.add(&resource2, &[&ace("User:*", H1, Read, Deny)]);
    assert!(!acls.any("user2", H1, Read, Topic));
}

#[test]
fn kafka_by_resource_type_super_user_has_access() {
    let deny_all = ace("User:*", "*", All, Deny);
    let mut acls = Acls::default();
    for rt in [Topic, Cluster, Group, TransactionalId] {
        acls.add(&ResourcePattern::new(rt, "*", Literal), &[&deny_all]);
    }
    for rt in [Topic, Cluster, Group, TransactionalId] {
        assert!(acls.any("superuser1", "192.0.4.4", Read, rt), "{rt}");
    }
}

#[test]
fn kafka_by_resource_type_no_acl_found_override() {
    let open = Authorizer::new(config("", true), []);
    assert!(open.authorize_any("User:alice", CLIENT, Read, Topic));
    assert!(open.authorize_any("User:alice", CLIENT, Write, Topic));
    let closed = Authorizer::new(config("", false), []);
    assert!(!closed.authorize_any("User:alice", CLIENT, Write, Topic));
}

#[test]
fn by_resource_type_does_not_imply_operations() {
    // Unlike authorize, the scan matches the exact operation or ALL only.
    let mut acls = Acls::default();
    acls.add(
        &ResourcePattern::new(Topic, "t", Literal),
        &[&ace("User:user1", "*", Read, Allow)],
    );
    assert!(acls.any("user1", H1, Read, Topic));
    assert!(!acls.any("user1", H1, Describe, Topic));
}

#[test]
fn authorized_operations_bitfield() {
    let a = authorizer(vec![
        acl(Topic, "t", Literal, "User:alice", "*", Read, Allow),
        acl(Topic, "t", Literal, "User:alice", "*", AlterConfigs, Allow),
        acl(Group, "g", Literal, "User:alice", "*", All, Allow),
    ]);
    // READ(3), DESCRIBE(8) implied by READ, DESCRIBE_CONFIGS(10) implied by
    // ALTER_CONFIGS, ALTER_CONFIGS(11).
    let expected = (1 << 3) | (1 << 8) | (1 << 10) | (1 << 11);
    assert_eq!(
        a.authorized_operations("User:alice", LOCALHOST, Topic, "t"),
        expected
    );
    assert_eq!(
        a.authorized_operations("User:alice", LOCALHOST, Group, "g"),
        (1 << 3) | (1 << 8) | (1 << 6)
    );
    assert_eq!(
        a.authorized_operations("User:bob", LOCALHOST, Topic, "t"),
        0
    );
    let all_cluster = (1 << 5) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12) | (1 << 7) | (1 << 8);
    assert_eq!(
        a.authorized_operations("User:superman", LOCALHOST, Cluster, "kafka-cluster"),
        all_cluster
    );
}

#[test]
fn decision_display_names_the_rule() {
    let open = Authorizer::new(config("User:root", true), []);
    let closed = Authorizer::new(config("", false), []);
    assert_eq!(
        open.authorize("User:x", LOCALHOST, Read, Topic, "t")
            .to_string(),
        "Allowed based on rule DefaultAllow"
    );
    assert_eq!(
        closed
            .authorize("User:x", LOCALHOST, Read, Topic, "t")
            .to_string(),
        "Denied based on rule DefaultDeny"
    );
    assert_eq!(
        open.authorize("User:root", LOCALHOST, Read, Topic, "t")
            .to_string(),
        "Allowed based on rule SuperUser"
    );
}
