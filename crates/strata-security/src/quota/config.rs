//! Configured client quotas: the entity → { key → value } table that
//! AlterClientQuotas edits and DescribeClientQuotas reads, Kafka's 8-level
//! precedence for picking the quota that applies to a connection, and the
//! JSON form the broker persists.
//!
//! Validation follows Kafka 3.9's `ClientQuotaControlManager` (messages
//! included), with two deliberate differences: `ip` names must be IP
//! literals (Kafka also accepts names it can resolve; this module does no
//! I/O), and NaN or infinite values are rejected (Kafka lets a NaN through).

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::QuotaType;

/// The `user` entity type.
pub const ENTITY_USER: &str = "user";
/// The `client-id` entity type.
pub const ENTITY_CLIENT_ID: &str = "client-id";
/// The `ip` entity type (connection-creation quotas only).
pub const ENTITY_IP: &str = "ip";

/// `producer_byte_rate`: bytes/s of Produce requests (integral).
pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
/// `consumer_byte_rate`: bytes/s of consumer Fetch responses (integral).
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
/// `request_percentage`: percent of one request-handler thread's time.
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
/// `controller_mutation_rate`: partition mutations/s.
pub const CONTROLLER_MUTATION_RATE: &str = "controller_mutation_rate";
/// `connection_creation_rate`: new connections/s from one IP (integral).
pub const CONNECTION_CREATION_RATE: &str = "connection_creation_rate";

/// How a quota key's value is typed in Kafka's config definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyType {
    /// `LONG`: integral, at most `Long.MAX_VALUE`.
    Long,
    /// `INT`: integral, at most `Integer.MAX_VALUE`.
    Int,
    /// `DOUBLE`: any positive value.
    Double,
}

/// The keys valid for user/client-id entities, then for ip entities.
fn key_type(ip_entity: bool, key: &str) -> Option<KeyType> {
    match (ip_entity, key) {
        (false, PRODUCER_BYTE_RATE | CONSUMER_BYTE_RATE) => Some(KeyType::Long),
        (false, REQUEST_PERCENTAGE | CONTROLLER_MUTATION_RATE) => Some(KeyType::Double),
        (true, CONNECTION_CREATION_RATE) => Some(KeyType::Int),
        _ => None,
    }
}

/// One side of a user/client-id entity as Kafka stores it: the type absent
/// from the entity, the `<default>` entity (a null name on the wire), or a
/// name. A client id literally spelled `<default>` is `Named`, not `Default`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum EntityName {
    /// The entity has no component of this type.
    #[default]
    Absent,
    /// The default entity of this type (`<default>`).
    Default,
    /// A named entity.
    Named(String),
}

impl EntityName {
    /// The wire form of a present component: `None` for the default,
    /// `Some(name)` for a name; `None` as the outer value when absent.
    fn wire(&self) -> Option<Option<&str>> {
        match self {
            EntityName::Absent => None,
            EntityName::Default => Some(None),
            EntityName::Named(n) => Some(Some(n)),
        }
    }
}

impl fmt::Display for EntityName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntityName::Absent => f.write_str("(absent)"),
            EntityName::Default => f.write_str("<default>"),
            EntityName::Named(n) => f.write_str(n),
        }
    }
}

/// A user/client-id quota entity, also used as a sensor key (the metric
/// tags Kafka keys a quota sensor by, where `Absent` is Kafka's empty tag).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct QuotaEntity {
    /// The user component.
    pub user: EntityName,
    /// The client-id component.
    pub client_id: EntityName,
}

impl QuotaEntity {
    /// An entity from its two components.
    pub fn new(user: EntityName, client_id: EntityName) -> Self {
        QuotaEntity { user, client_id }
    }
}

impl fmt::Display for QuotaEntity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.user, &self.client_id) {
            (EntityName::Absent, EntityName::Absent) => f.write_str("(empty entity)"),
            (u, EntityName::Absent) => write!(f, "user={u}"),
            (EntityName::Absent, c) => write!(f, "client-id={c}"),
            (u, c) => write!(f, "user={u}, client-id={c}"),
        }
    }
}

/// A stored entity: user and/or client-id, or an ip (`None` = `<default>`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum StoredEntity {
    Client(QuotaEntity),
    Ip(Option<String>),
}

impl StoredEntity {
    /// The entity as (type, name) pairs, user before client-id.
    pub(super) fn components(&self) -> Vec<(String, Option<String>)> {
        match self {
            StoredEntity::Client(e) => {
                let mut out = Vec::with_capacity(2);
                if let Some(name) = e.user.wire() {
                    out.push((ENTITY_USER.to_owned(), name.map(str::to_owned)));
                }
                if let Some(name) = e.client_id.wire() {
                    out.push((ENTITY_CLIENT_ID.to_owned(), name.map(str::to_owned)));
                }
                out
            }
            StoredEntity::Ip(ip) => vec![(ENTITY_IP.to_owned(), ip.clone())],
        }
    }
}

/// Why an AlterClientQuotas entry was refused. Every variant is Kafka's
/// `INVALID_REQUEST`; the text is Kafka's message for it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AlterQuotaError {
    /// The same key appears twice among the entry's operations.
    #[error("Duplicate quota key {key} not updating quota for this entity {entity}")]
    DuplicateKey {
        /// The repeated key.
        key: String,
        /// The entity, as `type=name` pairs.
        entity: String,
    },
    /// The entity has no components.
    #[error("Invalid empty client quota entity")]
    EmptyEntity,
    /// An entity type appears twice in the entity.
    #[error("Invalid client quota entity, duplicate entity entry {entity_type}")]
    DuplicateEntityType {
        /// The repeated type.
        entity_type: String,
    },
    /// An entity type other than `user`, `client-id` and `ip`.
    #[error("Unhandled client quota entity type: {entity_type}")]
    UnknownEntityType {
        /// The type given.
        entity_type: String,
    },
    /// An empty-string name (use a null name for the default entity).
    #[error("Empty {entity_type} not supported")]
    EmptyEntityName {
        /// The type whose name was empty.
        entity_type: String,
    },
    /// `ip` combined with `user` or `client-id`.
    #[error(
        "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
    )]
    IpCombined,
    /// The `ip` name is not an IP address literal.
    #[error("{ip} is not a valid IP or resolvable host.")]
    InvalidIp {
        /// The name given.
        ip: String,
    },
    /// A key not valid for this kind of entity.
    #[error("Invalid configuration key {key}")]
    UnknownKey {
        /// The key given.
        key: String,
    },
    /// A value of zero or less.
    #[error("Quota {key} must be greater than 0")]
    NotPositive {
        /// The key whose value was refused.
        key: String,
    },
    /// A NaN or infinite value (Strata's addition; Kafka lets NaN through).
    #[error("Quota {key} must be a finite number")]
    NotFinite {
        /// The key whose value was refused.
        key: String,
    },
    /// A value beyond the key's integral type.
    #[error("Proposed value for {key} is too large for {type_name}.")]
    TooLarge {
        /// The key whose value was refused.
        key: String,
        /// `"a LONG"` or `"an INT"`, as Kafka words it.
        type_name: &'static str,
    },
    /// A fractional value for an integral key (more than 1e-6 off).
    #[error("{key} cannot be a fractional value.")]
    Fractional {
        /// The key whose value was refused.
        key: String,
    },
}

/// Why persisted quota JSON could not be loaded: entry `index` fails the
/// same validation AlterClientQuotas applies.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("quota entry {index} is invalid: {source}")]
pub struct LoadQuotaError {
    /// Position of the bad entry in the persisted list.
    pub index: usize,
    /// What is wrong with it.
    pub source: AlterQuotaError,
}

/// The quota that applies to a connection, from [`QuotaConfigs::resolve`].
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedQuota {
    /// The bound (bytes/s, percent, or mutations/s).
    pub limit: f64,
    /// The configured entity the bound comes from.
    pub source: QuotaEntity,
    /// The key of the sensor the usage is recorded on (Kafka's metric tags):
    /// connections with the same key share one rate.
    pub sensor_key: QuotaEntity,
}

/// Configured client quotas: entity → { key → value } with keys
/// `producer_byte_rate`, `consumer_byte_rate`, `request_percentage`,
/// `controller_mutation_rate` (user/client-id entities) and
/// `connection_creation_rate` (ip entities).
///
/// Format (JSON, as the broker persists it; a null name is `<default>`):
/// ```json
/// {"entries":[{"entity":[{"entity_type":"user","entity_name":"alice"},
///                        {"entity_type":"client-id","entity_name":null}],
///              "quotas":{"producer_byte_rate":1048576.0}}]}
/// ```
/// Loading validates every entry as AlterClientQuotas would.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "QuotaConfigsRepr", into = "QuotaConfigsRepr")]
pub struct QuotaConfigs {
    /// Never holds an entity with an empty map.
    pub(super) entities: BTreeMap<StoredEntity, BTreeMap<String, f64>>,
}

impl QuotaConfigs {
    /// No quotas: every client unlimited.
    pub fn new() -> Self {
        QuotaConfigs::default()
    }

    /// True when no entity has a quota.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// The quota of type `t` that applies to `(user, client_id)` and the
    /// sensor key its usage is recorded under, following Kafka's precedence:
    ///
    /// | # | configured entity | sensor key |
    /// |---|---|---|
    /// | 1 | users/U/clients/C | (U, C) |
    /// | 2 | users/U/clients/`<default>` | (U, C) |
    /// | 3 | users/U | (U, -) |
    /// | 4 | users/`<default>`/clients/C | (U, C) |
    /// | 5 | users/`<default>`/clients/`<default>` | (U, C) |
    /// | 6 | users/`<default>` | (U, -) |
    /// | 7 | clients/C | (-, C) |
    /// | 8 | clients/`<default>` | (-, C) |
    ///
    /// So a `users/U` quota is shared by all of U's clients, while a default
    /// gives each user (or client) its own allowance. `None`: unlimited.
    ///
    /// Kafka looks up the bound from the sensor key's tags, which for an
    /// empty client id skips levels 1, 2, 4 and 5; here the table applies as
    /// written for every name.
    pub fn quota_for(
        &self,
        t: QuotaType,
        user: &str,
        client_id: &str,
    ) -> Option<(f64, QuotaEntity)> {
        self.resolve(t, user, client_id)
            .map(|r| (r.limit, r.sensor_key))
    }

    /// [`quota_for`](Self::quota_for) with the configured entity it came from.
    pub fn resolve(&self, t: QuotaType, user: &str, client_id: &str) -> Option<ResolvedQuota> {
        self.resolve_key(t.config_key(), user, client_id)
    }

    /// The `controller_mutation_rate` that applies to `(user, client_id)`,
    /// with the same precedence and sensor keys as [`quota_for`](Self::quota_for).
    /// (Kafka enforces it with a token bucket, which this module does not hold.)
    pub fn controller_mutation_rate_for(
        &self,
        user: &str,
        client_id: &str,
    ) -> Option<ResolvedQuota> {
        self.resolve_key(CONTROLLER_MUTATION_RATE, user, client_id)
    }

    /// The `connection_creation_rate` for connections from `ip`: the
    /// `ip=<ip>` entity, else `ip=<default>`; `None` is unlimited. `ip` is
    /// compared in its canonical text form, so `::1` matches `0:0:0:0:0:0:0:1`.
    pub fn ip_connection_rate(&self, ip: IpAddr) -> Option<f64> {
        let exact = self.value(
            &StoredEntity::Ip(Some(ip.to_string())),
            CONNECTION_CREATION_RATE,
        );
        exact.or_else(|| self.value(&StoredEntity::Ip(None), CONNECTION_CREATION_RATE))
    }

    fn value(&self, entity: &StoredEntity, key: &str) -> Option<f64> {
        self.entities.get(entity).and_then(|q| q.get(key)).copied()
    }

    fn resolve_key(&self, key: &str, user: &str, client_id: &str) -> Option<ResolvedQuota> {
        use EntityName::{Absent, Default as Dflt, Named};
        let u = || Named(user.to_owned());
        let c = || Named(client_id.to_owned());
        // (configured entity, sensor key keeps the user, keeps the client)
        let levels = [
            (QuotaEntity::new(u(), c()), true, true),
            (QuotaEntity::new(u(), Dflt), true, true),
            (QuotaEntity::new(u(), Absent), true, false),
            (QuotaEntity::new(Dflt, c()), true, true),
            (QuotaEntity::new(Dflt, Dflt), true, true),
            (QuotaEntity::new(Dflt, Absent), true, false),
            (QuotaEntity::new(Absent, c()), false, true),
            (QuotaEntity::new(Absent, Dflt), false, true),
        ];
        levels
            .into_iter()
            .find_map(|(source, keep_user, keep_client)| {
                let limit = self.value(&StoredEntity::Client(source.clone()), key)?;
                let sensor_key = QuotaEntity::new(
                    if keep_user { u() } else { Absent },
                    if keep_client { c() } else { Absent },
                );
                Some(ResolvedQuota {
                    limit,
                    source,
                    sensor_key,
                })
            })
    }

    /// AlterClientQuotas for one entry: validates `entity` (type, name;
    /// `None` = `<default>`) and `ops` (key, `Some(value)` to set, `None` to
    /// remove), then applies them unless `validate_only`. Removing a key that
    /// is not set is a no-op and, as in Kafka, remove operations are not
    /// checked against the valid keys. The entry is applied whole or not at
    /// all.
    ///
    /// # Errors
    /// The first problem found, in Kafka's order: duplicate key, then the
    /// entity (empty, repeated or unknown type, empty name, ip combined with
    /// user/client-id, bad ip), then each set operation's key and value.
    pub fn alter(
        &mut self,
        entity: &[(String, Option<String>)],
        ops: &[(String, Option<f64>)],
        validate_only: bool,
    ) -> Result<(), AlterQuotaError> {
        for (i, (key, _)) in ops.iter().enumerate() {
            if ops[..i].iter().any(|(k, _)| k == key) {
                return Err(AlterQuotaError::DuplicateKey {
                    key: key.clone(),
                    entity: describe_components(entity),
                });
            }
        }
        let stored = validate_entity(entity)?;
        let ip_entity = matches!(stored, StoredEntity::Ip(_));
        for (key, value) in ops {
            if let Some(value) = value {
                validate_key_value(ip_entity, key, *value)?;
            }
        }
        if validate_only {
            return Ok(());
        }
        let quotas = self.entities.entry(stored.clone()).or_default();
        for (key, value) in ops {
            match value {
                Some(v) => {
                    quotas.insert(key.clone(), *v);
                }
                None => {
                    quotas.remove(key);
                }
            }
        }
        if quotas.is_empty() {
            self.entities.remove(&stored);
        }
        Ok(())
    }
}

fn describe_components(entity: &[(String, Option<String>)]) -> String {
    let parts: Vec<String> = entity
        .iter()
        .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("<default>")))
        .collect();
    parts.join(", ")
}

/// Kafka's `validateEntity` + `configKeysForEntityType`.
fn validate_entity(entity: &[(String, Option<String>)]) -> Result<StoredEntity, AlterQuotaError> {
    if entity.is_empty() {
        return Err(AlterQuotaError::EmptyEntity);
    }
    let mut user = None;
    let mut client_id = None;
    let mut ip = None;
    for (entity_type, name) in entity {
        let slot = match entity_type.as_str() {
            ENTITY_USER => &mut user,
            ENTITY_CLIENT_ID => &mut client_id,
            ENTITY_IP => &mut ip,
            _ => {
                return Err(AlterQuotaError::UnknownEntityType {
                    entity_type: entity_type.clone(),
                })
            }
        };
        if slot.is_some() {
            return Err(AlterQuotaError::DuplicateEntityType {
                entity_type: entity_type.clone(),
            });
        }
        if name.as_deref() == Some("") {
            return Err(AlterQuotaError::EmptyEntityName {
                entity_type: entity_type.clone(),
            });
        }
        *slot = Some(name.clone());
    }
    let side = |n: Option<Option<String>>| match n {
        None => EntityName::Absent,
        Some(None) => EntityName::Default,
        Some(Some(name)) => EntityName::Named(name),
    };
    match ip {
        Some(_) if user.is_some() || client_id.is_some() => Err(AlterQuotaError::IpCombined),
        Some(None) => Ok(StoredEntity::Ip(None)),
        Some(Some(name)) => match name.parse::<IpAddr>() {
            Ok(addr) => Ok(StoredEntity::Ip(Some(addr.to_string()))),
            Err(_) => Err(AlterQuotaError::InvalidIp { ip: name }),
        },
        None => Ok(StoredEntity::Client(QuotaEntity::new(
            side(user),
            side(client_id),
        ))),
    }
}

/// Kafka's `validateQuotaKeyValue`.
fn validate_key_value(ip_entity: bool, key: &str, value: f64) -> Result<(), AlterQuotaError> {
    let key_type = key_type(ip_entity, key).ok_or_else(|| AlterQuotaError::UnknownKey {
        key: key.to_owned(),
    })?;
    if value.is_nan() || value == f64::INFINITY {
        return Err(AlterQuotaError::NotFinite {
            key: key.to_owned(),
        });
    }
    if value <= 0.0 {
        return Err(AlterQuotaError::NotPositive {
            key: key.to_owned(),
        });
    }
    let (max, type_name) = match key_type {
        KeyType::Double => return Ok(()),
        // Java compares against the long converted to double (2^63).
        KeyType::Long => (i64::MAX as f64, "a LONG"),
        KeyType::Int => (f64::from(i32::MAX), "an INT"),
    };
    if value > max {
        return Err(AlterQuotaError::TooLarge {
            key: key.to_owned(),
            type_name,
        });
    }
    if (value % 1.0).abs() > 1e-6 {
        return Err(AlterQuotaError::Fractional {
            key: key.to_owned(),
        });
    }
    Ok(())
}

/// The persisted form of [`QuotaConfigs`].
#[derive(Serialize, Deserialize)]
struct QuotaConfigsRepr {
    entries: Vec<EntryRepr>,
}

#[derive(Serialize, Deserialize)]
struct EntryRepr {
    entity: Vec<ComponentRepr>,
    quotas: BTreeMap<String, f64>,
}

#[derive(Serialize, Deserialize)]
struct ComponentRepr {
    entity_type: String,
    entity_name: Option<String>,
}

impl From<QuotaConfigs> for QuotaConfigsRepr {
    fn from(configs: QuotaConfigs) -> Self {
        let entries = configs
            .entities
            .into_iter()
            .map(|(entity, quotas)| EntryRepr {
                entity: entity
                    .components()
                    .into_iter()
                    .map(|(entity_type, entity_name)| ComponentRepr {
                        entity_type,
                        entity_name,
                    })
                    .collect(),
                quotas,
            })
            .collect();
        QuotaConfigsRepr { entries }
    }
}

impl TryFrom<QuotaConfigsRepr> for QuotaConfigs {
    type Error = LoadQuotaError;

    fn try_from(repr: QuotaConfigsRepr) -> Result<Self, Self::Error> {
        let mut configs = QuotaConfigs::new();
        for (index, entry) in repr.entries.into_iter().enumerate() {
            let entity: Vec<(String, Option<String>)> = entry
                .entity
                .into_iter()
                .map(|c| (c.entity_type, c.entity_name))
                .collect();
            let ops: Vec<(String, Option<f64>)> = entry
                .quotas
                .into_iter()
                .map(|(k, v)| (k, Some(v)))
                .collect();
            configs
                .alter(&entity, &ops, false)
                .map_err(|source| LoadQuotaError { index, source })?;
        }
        Ok(configs)
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
