//! CreateAcls (key 30), DescribeAcls (key 29) and DeleteAcls (key 31),
//! versions 1–3: ACLs of Kafka's standard authorizer, kept in the security
//! store. Changing ACLs needs ALTER on the cluster, listing them DESCRIBE
//! (CLUSTER_AUTHORIZATION_FAILED otherwise, as Kafka). Semantics (validation,
//! matching, duplicates) are `strata_security::acl`'s; a change is persisted
//! before it is acknowledged and applies to the next request.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{
    self, AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation,
    PatternType, PermissionType, ResourcePattern, ResourcePatternFilter, ResourceType,
};

use super::RequestContext;

fn filter_of(
    resource_type: i8,
    name: Option<&StrBytes>,
    pattern_type: i8,
    principal: Option<&StrBytes>,
    host: Option<&StrBytes>,
    operation: i8,
    permission: i8,
) -> AclBindingFilter {
    AclBindingFilter::new(
        ResourcePatternFilter::new(
            ResourceType::from_code(resource_type),
            name.map(|n| n.as_str()),
            PatternType::from_code(pattern_type),
        ),
        AccessControlEntryFilter::new(
            principal.map(|p| p.as_str()),
            host.map(|h| h.as_str()),
            AclOperation::from_code(operation),
            PermissionType::from_code(permission),
        ),
    )
}

/// Log a failed write of the ACL store; the code and message every item of
/// the request then gets.
fn store_failed(error: &crate::security::store::SecurityStoreError) -> (i16, Option<StrBytes>) {
    tracing::error!(error = %strata_log::ErrorChain(error), "cannot persist ACLs");
    (
        ResponseError::UnknownServerError.code(),
        Some(StrBytes::from_static_str(
            "the ACL store could not be written",
        )),
    )
}

fn message(e: &acl::AclError) -> Option<StrBytes> {
    Some(StrBytes::from_string(e.to_string()))
}

pub(crate) async fn create(ctx: &RequestContext, req: CreateAclsRequest) -> CreateAclsResponse {
    let mut resp = CreateAclsResponse::default();
    if !ctx.authorize_cluster(AclOperation::Alter) {
        resp.results = req
            .creations
            .iter()
            .map(|_| {
                let mut r = AclCreationResult::default();
                r.error_code = ResponseError::ClusterAuthorizationFailed.code();
                r
            })
            .collect();
        return resp;
    }
    let new: Vec<AclBinding> = req
        .creations
        .iter()
        .map(|c| {
            AclBinding::new(
                ResourcePattern::new(
                    ResourceType::from_code(c.resource_type),
                    c.resource_name.as_str(),
                    PatternType::from_code(c.resource_pattern_type),
                ),
                AccessControlEntry::new(
                    c.principal.as_str(),
                    c.host.as_str(),
                    AclOperation::from_code(c.operation),
                    PermissionType::from_code(c.permission_type),
                ),
            )
        })
        .collect();
    let store = ctx.broker.security.clone();
    let outcome = ctx
        .broker
        .blocking(move |_| {
            store.update(|doc| {
                let (next, results) = acl::create(&doc.acls, &new);
                let changed = next.len() != doc.acls.len();
                doc.acls = next;
                (changed, results)
            })
        })
        .await;
    resp.results = match outcome {
        Ok(results) => results
            .into_iter()
            .map(|r| {
                let mut out = AclCreationResult::default();
                if let Err(e) = r {
                    out.error_code = e.error_code();
                    out.error_message = message(&e);
                }
                out
            })
            .collect(),
        Err(error) => {
            let (code, message) = store_failed(&error);
            req.creations
                .iter()
                .map(|_| {
                    let mut r = AclCreationResult::default();
                    r.error_code = code;
                    r.error_message = message.clone();
                    r
                })
                .collect()
        }
    };
    if resp.results.iter().any(|r| r.error_code == 0) {
        tracing::info!(principal = %ctx.session.principal, count = req.creations.len(), "ACLs created");
    }
    resp
}

pub(crate) async fn describe(
    ctx: &RequestContext,
    req: DescribeAclsRequest,
) -> DescribeAclsResponse {
    let mut resp = DescribeAclsResponse::default();
    if !ctx.authorize_cluster(AclOperation::Describe) {
        resp.error_code = ResponseError::ClusterAuthorizationFailed.code();
        return resp;
    }
    let filter = filter_of(
        req.resource_type_filter,
        req.resource_name_filter.as_ref(),
        req.pattern_type_filter,
        req.principal_filter.as_ref(),
        req.host_filter.as_ref(),
        req.operation,
        req.permission_type,
    );
    if let Err(e) = filter.validate() {
        resp.error_code = ResponseError::InvalidRequest.code();
        resp.error_message = message(&e);
        return resp;
    }
    let state = ctx.broker.security.snapshot();
    for b in state.authorizer.describe(&filter) {
        let mut d = AclDescription::default();
        d.principal = StrBytes::from_string(b.entry.principal.clone());
        d.host = StrBytes::from_string(b.entry.host.clone());
        d.operation = b.entry.operation.code();
        d.permission_type = b.entry.permission.code();
        let p = &b.pattern;
        match resp.resources.iter_mut().find(|r| {
            r.resource_type == p.resource_type.code()
                && r.resource_name.as_str() == p.name
                && r.pattern_type == p.pattern_type.code()
        }) {
            Some(r) => r.acls.push(d),
            None => {
                let mut r = DescribeAclsResource::default();
                r.resource_type = p.resource_type.code();
                r.resource_name = StrBytes::from_string(p.name.clone());
                r.pattern_type = p.pattern_type.code();
                r.acls.push(d);
                resp.resources.push(r);
            }
        }
    }
    resp
}

pub(crate) async fn delete(ctx: &RequestContext, req: DeleteAclsRequest) -> DeleteAclsResponse {
    let mut resp = DeleteAclsResponse::default();
    if !ctx.authorize_cluster(AclOperation::Alter) {
        resp.filter_results = req
            .filters
            .iter()
            .map(|_| {
                let mut r = DeleteAclsFilterResult::default();
                r.error_code = ResponseError::ClusterAuthorizationFailed.code();
                r
            })
            .collect();
        return resp;
    }
    let filters: Vec<AclBindingFilter> = req
        .filters
        .iter()
        .map(|f| {
            filter_of(
                f.resource_type_filter,
                f.resource_name_filter.as_ref(),
                f.pattern_type_filter,
                f.principal_filter.as_ref(),
                f.host_filter.as_ref(),
                f.operation,
                f.permission_type,
            )
        })
        .collect();
    let store = ctx.broker.security.clone();
    let outcome = ctx
        .broker
        .blocking(move |_| {
            store.update(|doc| {
                let (next, results) = acl::delete(&doc.acls, &filters);
                let changed = next.len() != doc.acls.len();
                doc.acls = next;
                (changed, results)
            })
        })
        .await;
    resp.filter_results = match outcome {
        Ok(results) => results
            .into_iter()
            .map(|r| {
                let mut out = DeleteAclsFilterResult::default();
                match r {
                    Ok(matched) => {
                        out.matching_acls = matched
                            .into_iter()
                            .map(|b| {
                                let mut m = DeleteAclsMatchingAcl::default();
                                m.resource_type = b.pattern.resource_type.code();
                                m.resource_name = StrBytes::from_string(b.pattern.name);
                                m.pattern_type = b.pattern.pattern_type.code();
                                m.principal = StrBytes::from_string(b.entry.principal);
                                m.host = StrBytes::from_string(b.entry.host);
                                m.operation = b.entry.operation.code();
                                m.permission_type = b.entry.permission.code();
                                m
                            })
                            .collect();
                    }
                    Err(e) => {
                        out.error_code = e.error_code();
                        out.error_message = message(&e);
                    }
                }
                out
            })
            .collect(),
        Err(error) => {
            let (code, message) = store_failed(&error);
            req.filters
                .iter()
                .map(|_| {
                    let mut r = DeleteAclsFilterResult::default();
                    r.error_code = code;
                    r.error_message = message.clone();
                    r
                })
                .collect()
        }
    };
    resp
}
