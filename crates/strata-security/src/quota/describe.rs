//! DescribeClientQuotas filtering (Kafka 3.9 `ClientQuotasImage.describe`).
//!
//! A filter is a list of components `(entity_type, match_type, match)`:
//! match type 0 matches the named entity of that type, 1 the `<default>`
//! entity, 2 any entity of that type (named or default). An entity matches
//! when it has every filtered type with the required name; with `strict` it
//! must also have no other types. An empty filter therefore matches every
//! entity, or none when strict.

use std::collections::BTreeMap;

use super::config::{QuotaConfigs, StoredEntity, ENTITY_CLIENT_ID, ENTITY_IP, ENTITY_USER};

/// `match_type` 0: the entity with exactly the name in `match`.
pub const MATCH_TYPE_EXACT: i8 = 0;
/// `match_type` 1: the `<default>` entity of the type (`match` is null).
pub const MATCH_TYPE_DEFAULT: i8 = 1;
/// `match_type` 2: any entity of the type (`match` is null).
pub const MATCH_TYPE_SPECIFIED: i8 = 2;

/// One component of a DescribeClientQuotas filter, as on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterComponent {
    /// `user`, `client-id` or `ip`.
    pub entity_type: String,
    /// One of [`MATCH_TYPE_EXACT`], [`MATCH_TYPE_DEFAULT`], [`MATCH_TYPE_SPECIFIED`].
    pub match_type: i8,
    /// The name for an exact match; null otherwise.
    pub match_name: Option<String>,
}

impl FilterComponent {
    /// Matches the entity of `entity_type` named `name`.
    pub fn exact(entity_type: &str, name: &str) -> Self {
        FilterComponent {
            entity_type: entity_type.to_owned(),
            match_type: MATCH_TYPE_EXACT,
            match_name: Some(name.to_owned()),
        }
    }

    /// Matches the `<default>` entity of `entity_type`.
    pub fn default_entity(entity_type: &str) -> Self {
        FilterComponent {
            entity_type: entity_type.to_owned(),
            match_type: MATCH_TYPE_DEFAULT,
            match_name: None,
        }
    }

    /// Matches any entity of `entity_type`.
    pub fn any(entity_type: &str) -> Self {
        FilterComponent {
            entity_type: entity_type.to_owned(),
            match_type: MATCH_TYPE_SPECIFIED,
            match_name: None,
        }
    }
}

/// Why a DescribeClientQuotas filter was refused. `UnsupportedEntityType`
/// is Kafka's `UNSUPPORTED_VERSION`; every other variant is
/// `INVALID_REQUEST`. The text is Kafka's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DescribeQuotaError {
    /// A component with an empty entity type.
    #[error("Invalid empty entity type.")]
    EmptyEntityType,
    /// An entity type used by two components.
    #[error("Entity type {entity_type} cannot appear more than once in the filter.")]
    RepeatedEntityType {
        /// The repeated type.
        entity_type: String,
    },
    /// An entity type other than `user`, `client-id` and `ip`.
    #[error("Unsupported entity type {entity_type}")]
    UnsupportedEntityType {
        /// The type given.
        entity_type: String,
    },
    /// An exact match without a name.
    #[error("Request specified MATCH_TYPE_EXACT, but set match string to null.")]
    ExactWithoutName,
    /// A default match with a name.
    #[error("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")]
    DefaultWithName,
    /// An any-entity match with a name.
    #[error("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")]
    SpecifiedWithName,
    /// A match type other than 0, 1 and 2.
    #[error("Unknown match type {match_type}")]
    UnknownMatchType {
        /// The match type given.
        match_type: i8,
    },
    /// An `ip` component together with a `user` or `client-id` one.
    #[error(
        "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."
    )]
    IpCombined,
}

/// One DescribeClientQuotas result: the entity as (type, name) pairs
/// (`None` = `<default>`) and its quota values by key.
pub type DescribedEntity = (Vec<(String, Option<String>)>, BTreeMap<String, f64>);

impl QuotaConfigs {
    /// DescribeClientQuotas: the entities matching `filter` (see the module
    /// docs) with their quotas, in a stable order (user/client-id entities,
    /// then ip entities).
    ///
    /// # Errors
    /// The first bad component, checked in Kafka's order (empty type,
    /// repeated type, unsupported type, match type vs. name), then an `ip`
    /// component combined with `user` or `client-id`.
    pub fn describe(
        &self,
        filter: &[FilterComponent],
        strict: bool,
    ) -> Result<Vec<DescribedEntity>, DescribeQuotaError> {
        // type -> Some(name) for exact, None for default
        let mut exact: BTreeMap<&str, Option<&str>> = BTreeMap::new();
        let mut any: Vec<&str> = Vec::new();
        for c in filter {
            let t = c.entity_type.as_str();
            if t.is_empty() {
                return Err(DescribeQuotaError::EmptyEntityType);
            }
            if exact.contains_key(t) || any.contains(&t) {
                return Err(DescribeQuotaError::RepeatedEntityType {
                    entity_type: t.to_owned(),
                });
            }
            if ![ENTITY_USER, ENTITY_CLIENT_ID, ENTITY_IP].contains(&t) {
                return Err(DescribeQuotaError::UnsupportedEntityType {
                    entity_type: t.to_owned(),
                });
            }
            match (c.match_type, c.match_name.as_deref()) {
                (MATCH_TYPE_EXACT, None) => return Err(DescribeQuotaError::ExactWithoutName),
                (MATCH_TYPE_EXACT, Some(name)) => {
                    exact.insert(t, Some(name));
                }
                (MATCH_TYPE_DEFAULT, Some(_)) => return Err(DescribeQuotaError::DefaultWithName),
                (MATCH_TYPE_DEFAULT, None) => {
                    exact.insert(t, None);
                }
                (MATCH_TYPE_SPECIFIED, Some(_)) => {
                    return Err(DescribeQuotaError::SpecifiedWithName)
                }
                (MATCH_TYPE_SPECIFIED, None) => any.push(t),
                (match_type, _) => return Err(DescribeQuotaError::UnknownMatchType { match_type }),
            }
        }
        let uses = |t: &str| exact.contains_key(t) || any.contains(&t);
        if uses(ENTITY_IP) && (uses(ENTITY_USER) || uses(ENTITY_CLIENT_ID)) {
            return Err(DescribeQuotaError::IpCombined);
        }

        let wanted = exact.len() + any.len();
        let matches = |entity: &StoredEntity| {
            let components = entity.components();
            if strict && components.len() != wanted {
                return false;
            }
            let name_of = |t: &str| {
                components
                    .iter()
                    .find(|(ct, _)| ct == t)
                    .map(|(_, n)| n.as_deref())
            };
            exact.iter().all(|(t, want)| name_of(t) == Some(*want))
                && any.iter().all(|t| name_of(t).is_some())
        };
        Ok(self
            .entities
            .iter()
            .filter(|(entity, _)| matches(entity))
            .map(|(entity, quotas)| (entity.components(), quotas.clone()))
            .collect())
    }
}

#[cfg(test)]
#[path = "describe_tests.rs"]
mod tests;
