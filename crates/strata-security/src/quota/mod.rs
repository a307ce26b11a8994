//! Client quotas, the pure part: Kafka 3.9's `ClientQuotaManager` and
//! `ClientRequestQuotaManager` (default callback), `QuotaUtils`, the
//! windowed `Rate`, AlterClientQuotas validation (`ClientQuotaControlManager`)
//! and DescribeClientQuotas filtering (`ClientQuotasImage`).
//!
//! Time is always an argument (`now_ms`); nothing here reads a clock, opens
//! a socket or starts a thread. The broker owns persistence (the JSON form of
//! [`QuotaConfigs`]), the wire protocol, error codes and channel muting.
//!
//! Kafka's behaviour in short:
//! - Quotas are set on `user`, `client-id`, both, or `ip` entities, each
//!   name possibly `<default>`; the most specific of 8 levels applies
//!   ([`QuotaConfigs::quota_for`]), each quota type on its own.
//! - Usage is a rate over `quota.window.num` (11) samples of
//!   `quota.window.size.seconds` (1 s) ([`RateSensor`]); a record that takes
//!   the rate above the bound earns a throttle of `(rate − bound) / bound ×
//!   window` ms ([`record_and_throttle`]), capped at one window for the
//!   request quota only.
//!
//! # Layout
//! - `rate`: [`RateSensor`] and the throttle-time arithmetic.
//! - `config`: entities, [`QuotaConfigs`] (precedence, AlterClientQuotas,
//!   persistence).
//! - `describe`: DescribeClientQuotas filters.
//! - `manager`: [`QuotaManager`], the sensors keyed by client.

mod config;
mod describe;
mod manager;
mod rate;

pub use config::{
    AlterQuotaError, EntityName, LoadQuotaError, QuotaConfigs, QuotaEntity, ResolvedQuota,
    CONNECTION_CREATION_RATE, CONSUMER_BYTE_RATE, CONTROLLER_MUTATION_RATE, ENTITY_CLIENT_ID,
    ENTITY_IP, ENTITY_USER, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE,
};
pub use describe::{
    DescribeQuotaError, DescribedEntity, FilterComponent, MATCH_TYPE_DEFAULT, MATCH_TYPE_EXACT,
    MATCH_TYPE_SPECIFIED,
};
pub use manager::{
    nanos_to_percentage, QuotaManager, INACTIVE_SENSOR_EXPIRATION_MS,
    NANOS_TO_PERCENTAGE_PER_SECOND,
};
pub use rate::{
    bounded_throttle_time_ms, record_and_throttle, record_and_throttle_bounded, throttle_time_ms,
    RateSensor,
};

/// `quota.window.num`'s default: samples a quota rate is measured over.
pub const DEFAULT_QUOTA_WINDOW_NUM: u32 = 11;
/// `quota.window.size.seconds`' default: the span of one sample.
pub const DEFAULT_QUOTA_WINDOW_SIZE_SECONDS: u32 = 1;

/// A client quota that is enforced by recording a rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuotaType {
    /// `producer_byte_rate`: Produce request bytes per second.
    Produce,
    /// `consumer_byte_rate`: consumer Fetch response bytes per second.
    Fetch,
    /// `request_percentage`: request thread time, percent of one thread.
    Request,
}

impl QuotaType {
    /// The quota key this type is configured under.
    pub fn config_key(self) -> &'static str {
        match self {
            QuotaType::Produce => PRODUCER_BYTE_RATE,
            QuotaType::Fetch => CONSUMER_BYTE_RATE,
            QuotaType::Request => REQUEST_PERCENTAGE,
        }
    }
}
