//! The consumer protocol classic members embed in JoinGroup and SyncGroup
//! (Kafka's `ConsumerProtocolSubscription` / `ConsumerProtocolAssignment`,
//! non-flexible): what a classic member of a consumer group subscribes to
//! and owns, and the assignment the coordinator gives it back.
//!
//! ```text
//! Subscription: int16 version, [string] topics, bytes user_data (nullable),
//!               v1+: [(string topic, [int32] partitions)] owned_partitions,
//!               v2+: int32 generation_id, v3+: string rack_id (nullable)
//! Assignment:   int16 version, [(string topic, [int32] partitions)], bytes user_data (nullable)
//! ```
//!
//! Parsing never trusts a count: every element is read from bytes that are
//! there, so a hostile count fails instead of allocating.

/// What a classic member's JoinGroup metadata says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Subscription {
    pub topics: Vec<String>,
    /// v1+: the partitions the member still owns (cooperative clients);
    /// empty for eager clients, which revoke everything before joining.
    pub owned: Vec<(String, Vec<i32>)>,
    /// v3+.
    pub rack: Option<String>,
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }

    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    fn string(&mut self) -> Option<Option<String>> {
        let len = self.i16()?;
        if len < 0 {
            return Some(None);
        }
        let raw = self.take(usize::try_from(len).ok()?)?;
        Some(Some(std::str::from_utf8(raw).ok()?.to_string()))
    }

    fn bytes(&mut self) -> Option<()> {
        let len = self.i32()?;
        if len >= 0 {
            self.take(usize::try_from(len).ok()?)?;
        }
        Some(())
    }

    /// An array of `count` elements read by `f`; `None` on a negative count.
    fn array<T>(&mut self, mut f: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        let count = self.i32()?;
        let count = usize::try_from(count).ok()?;
        let mut out = Vec::new();
        for _ in 0..count {
            out.push(f(self)?);
        }
        Some(out)
    }

    fn topic_partitions(&mut self) -> Option<Vec<(String, Vec<i32>)>> {
        self.array(|r| Some((r.string()??, r.array(Reader::i32)?)))
    }
}

/// Parse a ConsumerProtocolSubscription (any version); `None` if malformed.
pub(crate) fn parse_subscription(bytes: &[u8]) -> Option<Subscription> {
    let mut r = Reader { bytes, pos: 0 };
    let version = r.i16()?;
    if version < 0 {
        return None;
    }
    let topics = r.array(|r| r.string()?)?;
    r.bytes()?;
    let mut out = Subscription {
        topics,
        ..Subscription::default()
    };
    if version >= 1 {
        out.owned = r.topic_partitions()?;
    }
    if version >= 2 {
        r.i32()?;
    }
    if version >= 3 {
        out.rack = r.string()?;
    }
    Some(out)
}

/// Parse a ConsumerProtocolAssignment (any version); `None` if malformed.
pub(crate) fn parse_assignment(bytes: &[u8]) -> Option<Vec<(String, Vec<i32>)>> {
    if bytes.is_empty() {
        return Some(Vec::new());
    }
    let mut r = Reader { bytes, pos: 0 };
    if r.i16()? < 0 {
        return None;
    }
    r.topic_partitions()
}

/// A ConsumerProtocolAssignment v0 of `topics` with null user data (every
/// consumer-protocol version reads v0).
pub(crate) fn encode_assignment(topics: &[(String, Vec<i32>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0i16.to_be_bytes());
    out.extend_from_slice(
        &i32::try_from(topics.len())
            .unwrap_or(i32::MAX)
            .to_be_bytes(),
    );
    for (topic, partitions) in topics {
        let name = topic.as_bytes();
        out.extend_from_slice(&i16::try_from(name.len()).unwrap_or(i16::MAX).to_be_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(
            &i32::try_from(partitions.len())
                .unwrap_or(i32::MAX)
                .to_be_bytes(),
        );
        for p in partitions {
            out.extend_from_slice(&p.to_be_bytes());
        }
    }
    out.extend_from_slice(&(-1i32).to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscription_v1(topics: &[&str], owned: &[(&str, &[i32])]) -> Vec<u8> {
        let mut b = vec![0, 1];
        b.extend_from_slice(&(topics.len() as i32).to_be_bytes());
        for t in topics {
            b.extend_from_slice(&(t.len() as i16).to_be_bytes());
            b.extend_from_slice(t.as_bytes());
        }
        b.extend_from_slice(&(-1i32).to_be_bytes());
        b.extend_from_slice(&(owned.len() as i32).to_be_bytes());
        for (t, ps) in owned {
            b.extend_from_slice(&(t.len() as i16).to_be_bytes());
            b.extend_from_slice(t.as_bytes());
            b.extend_from_slice(&(ps.len() as i32).to_be_bytes());
            for p in *ps {
                b.extend_from_slice(&p.to_be_bytes());
            }
        }
        b
    }

    #[test]
    fn subscriptions_and_assignments_parse() {
        let s = parse_subscription(&subscription_v1(&["a", "b"], &[("a", &[0, 2])])).unwrap();
        assert_eq!(s.topics, vec!["a", "b"]);
        assert_eq!(s.owned, vec![("a".to_string(), vec![0, 2])]);
        let a = vec![("t".to_string(), vec![1, 3]), ("u".to_string(), vec![])];
        assert_eq!(parse_assignment(&encode_assignment(&a)).unwrap(), a);
        assert_eq!(parse_assignment(&[]).unwrap(), vec![]);
    }

    #[test]
    fn hostile_counts_fail_without_allocating() {
        let mut b = vec![0, 1];
        b.extend_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(parse_subscription(&b), None);
        let mut b = vec![0, 0];
        b.extend_from_slice(&(-5i32).to_be_bytes());
        assert_eq!(parse_assignment(&b), None);
        // Truncated anywhere: None, never a panic.
        let full = subscription_v1(&["abc"], &[("abc", &[1, 2, 3])]);
        for n in 0..full.len() {
            let _ = parse_subscription(&full[..n]);
        }
    }
}
