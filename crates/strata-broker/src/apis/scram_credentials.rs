//! DescribeUserScramCredentials (key 50) and AlterUserScramCredentials
//! (key 51), version 0: SCRAM-SHA-256/512 users, stored salted in the
//! security store as Kafka stores them (salt, stored key, server key,
//! iterations; the client sends the salted password, never the password).
//! Kafka's rules: ALTER / DESCRIBE on the cluster, iterations within
//! [4096, 16384], a user named once per request, deleting or describing a
//! missing credential is RESOURCE_NOT_FOUND.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::AclOperation;
use strata_security::sasl::{ScramCredential, ScramMechanism};

use super::RequestContext;

/// One user's outcome: `None` is success.
type Outcome = Option<(ResponseError, String)>;

pub(crate) async fn describe(
    ctx: &RequestContext,
    req: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    let mut resp = DescribeUserScramCredentialsResponse::default();
    if !ctx.authorize_cluster(AclOperation::Describe) {
        resp.error_code = ResponseError::ClusterAuthorizationFailed.code();
        return resp;
    }
    let state = ctx.broker.security.snapshot();
    let info = |user: &str| -> Vec<CredentialInfo> {
        state
            .scram
            .get(user)
            .map(|m| {
                m.iter()
                    .map(|(mech, cred)| {
                        let mut i = CredentialInfo::default();
                        i.mechanism = mech.type_id();
                        i.iterations = cred.iterations;
                        i
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let wanted: Vec<String> = req
        .users
        .unwrap_or_default()
        .into_iter()
        .map(|u| u.name.to_string())
        .collect();
    if wanted.is_empty() {
        for user in state.scram.keys() {
            let mut r = DescribeUserScramCredentialsResult::default();
            r.user = StrBytes::from_string(user.clone());
            r.credential_infos = info(user);
            resp.results.push(r);
        }
        return resp;
    }
    let mut seen = BTreeMap::new();
    for u in &wanted {
        *seen.entry(u.as_str()).or_insert(0) += 1;
    }
    let mut done = BTreeSet::new();
    for user in &wanted {
        if !done.insert(user.as_str()) {
            continue;
        }
        let mut r = DescribeUserScramCredentialsResult::default();
        r.user = StrBytes::from_string(user.clone());
        if seen[user.as_str()] > 1 {
            r.error_code = ResponseError::DuplicateResource.code();
            r.error_message = Some(StrBytes::from_string(format!(
                "Cannot describe SCRAM credentials for the same user twice in a single request: {user}"
            )));
        } else if !state.scram.contains_key(user) {
            r.error_code = ResponseError::ResourceNotFound.code();
            r.error_message = Some(StrBytes::from_string(format!(
                "Attempt to describe a user credential that does not exist: {user}"
            )));
        } else {
            r.credential_infos = info(user);
        }
        resp.results.push(r);
    }
    resp
}

pub(crate) async fn alter(
    ctx: &RequestContext,
    req: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let mut resp = AlterUserScramCredentialsResponse::default();
    let users: Vec<String> = req
        .deletions
        .iter()
        .map(|d| d.name.to_string())
        .chain(req.upsertions.iter().map(|u| u.name.to_string()))
        .collect();
    let mut order: Vec<String> = Vec::new();
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for u in &users {
        if !count.contains_key(u) {
            order.push(u.clone());
        }
        *count.entry(u.clone()).or_insert(0) += 1;
    }
    let result = |user: &str, outcome: &Outcome| {
        let mut r = AlterUserScramCredentialsResult::default();
        r.user = StrBytes::from_string(user.to_string());
        if let Some((e, msg)) = outcome {
            r.error_code = e.code();
            r.error_message = Some(StrBytes::from_string(msg.clone()));
        }
        r
    };
    if !ctx.authorize_cluster(AclOperation::Alter) {
        resp.results = order
            .iter()
            .map(|u| {
                result(
                    u,
                    &Some((ResponseError::ClusterAuthorizationFailed, String::new())),
                )
            })
            .collect();
        return resp;
    }
    // Validate each alteration (Kafka's ScramControlManager checks).
    let mut outcomes: BTreeMap<String, Outcome> = BTreeMap::new();
    let mut deletions = Vec::new();
    let mut upsertions = Vec::new();
    for d in &req.deletions {
        let user = d.name.to_string();
        let outcome = check(&user, d.mechanism, None, count[&user]);
        if outcome.is_none() {
            deletions.push((user.clone(), ScramMechanism::from_type_id(d.mechanism)));
        }
        outcomes.entry(user).or_insert(outcome);
    }
    for u in &req.upsertions {
        let user = u.name.to_string();
        let outcome = check(&user, u.mechanism, Some(u.iterations), count[&user]);
        if outcome.is_none() {
            if let Some(mech) = ScramMechanism::from_type_id(u.mechanism) {
                let cred = ScramCredential::from_salted_password(
                    mech,
                    &u.salted_password,
                    u.salt.to_vec(),
                    u.iterations,
                );
                upsertions.push((user.clone(), mech, cred));
            }
        }
        outcomes.entry(user).or_insert(outcome);
    }
    let store = ctx.broker.security.clone();
    let applied = ctx
        .broker
        .blocking(move |_| {
            store.update(|doc| {
                let mut missing = Vec::new();
                let mut changed = false;
                for (user, mech) in &deletions {
                    let Some(mech) = mech else { continue };
                    let removed = doc
                        .scram
                        .get_mut(user)
                        .and_then(|m| m.remove(mech.mechanism_name()))
                        .is_some();
                    if removed {
                        changed = true;
                        if doc.scram.get(user).is_some_and(|m| m.is_empty()) {
                            doc.scram.remove(user);
                        }
                    } else {
                        missing.push(user.clone());
                    }
                }
                for (user, mech, cred) in &upsertions {
                    doc.scram
                        .entry(user.clone())
                        .or_default()
                        .insert(mech.mechanism_name().to_string(), cred.to_string());
                    changed = true;
                }
                (changed, missing)
            })
        })
        .await;
    match applied {
        Ok(missing) => {
            for user in missing {
                outcomes.insert(
                    user,
                    Some((
                        ResponseError::ResourceNotFound,
                        "Attempt to delete a user credential that does not exist".into(),
                    )),
                );
            }
        }
        Err(error) => {
            tracing::error!(error = %strata_log::ErrorChain(&error), "cannot persist SCRAM credentials");
            for outcome in outcomes.values_mut() {
                if outcome.is_none() {
                    *outcome = Some((
                        ResponseError::UnknownServerError,
                        "the credential store could not be written".into(),
                    ));
                }
            }
        }
    }
    resp.results = order
        .iter()
        .map(|u| result(u, outcomes.get(u).unwrap_or(&None)))
        .collect();
    let changed = resp.results.iter().filter(|r| r.error_code == 0).count();
    if changed > 0 {
        tracing::info!(principal = %ctx.session.principal, users = changed, "SCRAM credentials altered");
    }
    resp
}

/// Kafka's checks of one alteration.
fn check(user: &str, mechanism: i8, iterations: Option<i32>, times_named: usize) -> Outcome {
    if times_named > 1 {
        return Some((
            ResponseError::DuplicateResource,
            "A user credential cannot be altered twice in the same request".into(),
        ));
    }
    if user.is_empty() {
        return Some((
            ResponseError::UnacceptableCredential,
            "Username must not be empty".into(),
        ));
    }
    let Some(mech) = ScramMechanism::from_type_id(mechanism) else {
        return Some((
            ResponseError::UnsupportedSaslMechanism,
            "Unknown SCRAM mechanism".into(),
        ));
    };
    if let Some(n) = iterations {
        if let Err(e) = mech.check_iterations(n) {
            return Some((ResponseError::UnacceptableCredential, e.to_string()));
        }
    }
    None
}
