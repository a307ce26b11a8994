//! Per-client-address connection counts (Kafka's `ConnectionQuotas` for
//! `max.connections.per.ip` and `max.connections.per.ip.overrides`).
//!
//! The accept loop asks for an [`IpSlot`] right after `accept`; a connection
//! over its address's limit is closed at once, as Kafka does, and the slot is
//! given back when the connection task ends (the slot's `Drop`).
//!
//! # Locks
//! `counts` is a std mutex held only to change one entry, never across `.await`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use crate::config::ConnectionLimits;

/// Live connection counts per client address.
#[derive(Debug)]
pub(crate) struct ConnectionQuotas {
    limits: ConnectionLimits,
    counts: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection's share of its address's count.
#[derive(Debug)]
pub(crate) struct IpSlot {
    quotas: Arc<ConnectionQuotas>,
    ip: IpAddr,
}

/// A connection refused by its address's limit.
#[derive(Debug, thiserror::Error)]
#[error("address {ip} already has the configured maximum of {limit} connections (max.connections.per.ip)")]
pub(crate) struct TooManyConnections {
    pub ip: IpAddr,
    pub limit: usize,
}

impl ConnectionQuotas {
    pub(crate) fn new(limits: ConnectionLimits) -> Arc<ConnectionQuotas> {
        Arc::new(ConnectionQuotas {
            limits,
            counts: Mutex::new(HashMap::new()),
        })
    }

    /// Count one more connection from `ip`, unless that would pass its limit.
    pub(crate) fn acquire(self: &Arc<Self>, ip: IpAddr) -> Result<IpSlot, TooManyConnections> {
        let ip = canonical(ip);
        let limit = self.limits.limit_for(ip);
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if counts.get(&ip).copied().unwrap_or(0) >= limit {
            return Err(TooManyConnections { ip, limit });
        }
        *counts.entry(ip).or_insert(0) += 1;
        Ok(IpSlot {
            quotas: self.clone(),
            ip,
        })
    }

    #[cfg(test)]
    fn count(&self, ip: IpAddr) -> usize {
        let counts = self.counts.lock().unwrap();
        counts.get(&ip).copied().unwrap_or(0)
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut counts = self.quotas.counts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = counts.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.ip);
            }
        }
    }
}

/// An IPv4 client on a dual-stack listener arrives as `::ffff:a.b.c.d`; count
/// and look it up as the IPv4 address the operator wrote.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn limits_per_address_with_overrides_and_release_on_drop() {
        let quotas = ConnectionQuotas::new(ConnectionLimits {
            per_ip: 2,
            overrides: BTreeMap::from([(ip("127.0.0.2"), 0), (ip("127.0.0.3"), 3)]),
        });
        let a1 = quotas.acquire(ip("127.0.0.1")).unwrap();
        let a2 = quotas.acquire(ip("::ffff:127.0.0.1")).unwrap();
        let err = quotas.acquire(ip("127.0.0.1")).unwrap_err();
        assert_eq!((err.ip, err.limit), (ip("127.0.0.1"), 2));
        assert!(
            quotas.acquire(ip("127.0.0.2")).is_err(),
            "override 0 refuses all"
        );
        assert_eq!(quotas.count(ip("127.0.0.2")), 0);
        let _c: Vec<IpSlot> = (0..3)
            .map(|_| quotas.acquire(ip("127.0.0.3")).unwrap())
            .collect();
        assert!(quotas.acquire(ip("127.0.0.3")).is_err());
        drop(a1);
        assert_eq!(quotas.count(ip("127.0.0.1")), 1);
        let _a3 = quotas.acquire(ip("127.0.0.1")).unwrap();
        drop(a2);
        assert_eq!(quotas.count(ip("127.0.0.1")), 1);
    }
}
