//! Hand-written FetchResponse encoder (versions 4–16) that leaves record
//! data in the segment files: the response is a list of in-memory parts and
//! [`ResponsePart::File`] regions the connection writer sends with
//! `sendfile(2)`. kafka-protocol's encoder needs the records as bytes in
//! memory, which would mean reading every fetched byte into user space.
//!
//! Format (KIP-482 flexible from v12; `compact` = uvarint length + 1):
//! ```text
//! Response  => size:i32 correlation_id:i32 [tagged fields v12+]
//!              throttle_time_ms:i32 [error_code:i16 session_id:i32 (v7+)]
//!              [topic]  [tagged fields v12+]
//! topic     => name:string (v4-12) | topic_id:uuid (v13+)  [partition]  [tags v12+]
//! partition => index:i32 error_code:i16 high_watermark:i64 last_stable_offset:i64
//!              log_start_offset:i64 (v5+) aborted_transactions:nullable [pid:i64 first_offset:i64 [tags]]
//!              preferred_read_replica:i32 (v11+) records:nullable bytes  [tags v12+]
//! partition tags (v12+): 0 = diverging_epoch {epoch:i32 end_offset:i64 [tags]},
//!                        1 = current_leader {leader_id:i32 leader_epoch:i32 [tags]}
//! ```
//! A tag is written only when its value is not the default, as Kafka does.
//! The tests check byte equality with kafka-protocol's own encoder.

use bytes::{BufMut, Bytes, BytesMut};
use strata_log::FileSlice;
use uuid::Uuid;

use crate::response::{Response, ResponsePart};

/// Record data of one partition in a response.
#[derive(Debug)]
pub(crate) enum Records {
    /// Regions of segment files, in order.
    Files(Vec<FileSlice>),
    /// Bytes already in memory.
    #[cfg_attr(not(test), allow(dead_code))]
    Mem(Bytes),
}

impl Records {
    pub(crate) fn len(&self) -> u64 {
        match self {
            Records::Files(s) => s.iter().map(|f| f.len).sum(),
            Records::Mem(b) => b.len() as u64,
        }
    }
}

/// One partition of a FetchResponse.
#[derive(Debug)]
pub(crate) struct PartitionData {
    pub partition: i32,
    pub error_code: i16,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    /// `None` = null (read_uncommitted); `Some` = (producer id, first offset) pairs.
    pub aborted: Option<Vec<(i64, i64)>>,
    /// v12+: (epoch, end offset) where a follower's log diverges (KIP-320).
    pub diverging_epoch: Option<(i32, i64)>,
    /// v12+: (leader id, leader epoch) on NOT_LEADER / FENCED answers.
    pub current_leader: Option<(i32, i32)>,
    /// v11+: the replica a consumer should read from (KIP-392), -1 none.
    pub preferred_read_replica: i32,
    pub records: Records,
}

impl PartitionData {
    /// A partition answer with no records and no optional fields.
    pub(crate) fn empty(partition: i32, error_code: i16) -> PartitionData {
        PartitionData {
            partition,
            error_code,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            aborted: None,
            diverging_epoch: None,
            current_leader: None,
            preferred_read_replica: -1,
            records: Records::Files(Vec::new()),
        }
    }
}

/// One topic of a FetchResponse.
#[derive(Debug)]
pub(crate) struct TopicData {
    pub name: String,
    pub id: Uuid,
    pub partitions: Vec<PartitionData>,
}

/// The top level of a FetchResponse.
#[derive(Debug)]
pub(crate) struct FetchResponseData {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub session_id: i32,
    pub topics: Vec<TopicData>,
}

/// Builds a response from in-memory pieces and file regions.
struct PartsWriter {
    parts: Vec<ResponsePart>,
    cur: BytesMut,
    flexible: bool,
}

impl PartsWriter {
    fn flush_mem(&mut self) {
        if !self.cur.is_empty() {
            let chunk = self.cur.split().freeze();
            self.parts.push(ResponsePart::Mem(chunk));
        }
    }

    fn uvarint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.cur.put_u8((v as u8) | 0x80);
            v >>= 7;
        }
        self.cur.put_u8(v as u8);
    }

    fn array_len(&mut self, n: usize) {
        if self.flexible {
            self.uvarint(n as u64 + 1);
        } else {
            self.cur.put_i32(n as i32);
        }
    }

    fn null_array(&mut self) {
        if self.flexible {
            self.uvarint(0);
        } else {
            self.cur.put_i32(-1);
        }
    }

    fn string(&mut self, s: &str) {
        if self.flexible {
            self.uvarint(s.len() as u64 + 1);
        } else {
            self.cur.put_i16(s.len() as i16);
        }
        self.cur.put_slice(s.as_bytes());
    }

    fn bytes_len(&mut self, n: u64) {
        if self.flexible {
            self.uvarint(n + 1);
        } else {
            self.cur.put_i32(n as i32);
        }
    }

    fn no_tags(&mut self) {
        if self.flexible {
            self.uvarint(0);
        }
    }

    /// The tagged fields of a partition (v12+): only non-default ones.
    fn partition_tags(&mut self, diverging: Option<(i32, i64)>, leader: Option<(i32, i32)>) {
        let count = u64::from(diverging.is_some()) + u64::from(leader.is_some());
        self.uvarint(count);
        if let Some((epoch, end)) = diverging {
            self.uvarint(0);
            self.uvarint(13);
            self.cur.put_i32(epoch);
            self.cur.put_i64(end);
            self.uvarint(0);
        }
        if let Some((id, epoch)) = leader {
            self.uvarint(1);
            self.uvarint(9);
            self.cur.put_i32(id);
            self.cur.put_i32(epoch);
            self.uvarint(0);
        }
    }

    fn records(&mut self, records: Records) {
        self.bytes_len(records.len());
        match records {
            Records::Mem(b) => self.cur.put_slice(&b),
            Records::Files(slices) => {
                self.flush_mem();
                for s in slices.into_iter().filter(|s| s.len > 0) {
                    self.parts.push(ResponsePart::File(s));
                }
            }
        }
    }
}

/// Encode a FetchResponse of `version` (4–16) for `correlation_id`.
pub(crate) fn encode_fetch_response(
    correlation_id: i32,
    version: i16,
    data: FetchResponseData,
) -> Response {
    let flexible = version >= 12;
    let mut w = PartsWriter {
        parts: Vec::new(),
        cur: BytesMut::with_capacity(512),
        flexible,
    };
    w.cur.put_i32(0); // size, patched below
    w.cur.put_i32(correlation_id);
    w.no_tags(); // response header v1
    w.cur.put_i32(data.throttle_time_ms);
    if version >= 7 {
        w.cur.put_i16(data.error_code);
        w.cur.put_i32(data.session_id);
    }
    w.array_len(data.topics.len());
    for topic in data.topics {
        if version >= 13 {
            w.cur.put_slice(topic.id.as_bytes());
        } else {
            w.string(&topic.name);
        }
        w.array_len(topic.partitions.len());
        for p in topic.partitions {
            w.cur.put_i32(p.partition);
            w.cur.put_i16(p.error_code);
            w.cur.put_i64(p.high_watermark);
            w.cur.put_i64(p.last_stable_offset);
            if version >= 5 {
                w.cur.put_i64(p.log_start_offset);
            }
            match &p.aborted {
                None => w.null_array(),
                Some(list) => {
                    w.array_len(list.len());
                    for &(pid, first) in list {
                        w.cur.put_i64(pid);
                        w.cur.put_i64(first);
                        w.no_tags();
                    }
                }
            }
            if version >= 11 {
                w.cur.put_i32(p.preferred_read_replica);
            }
            w.records(p.records);
            if flexible {
                w.partition_tags(p.diverging_epoch, p.current_leader);
            }
        }
        w.no_tags();
    }
    w.no_tags();
    w.flush_mem();
    let total: u64 = w
        .parts
        .iter()
        .map(|p| match p {
            ResponsePart::Mem(b) => b.len() as u64,
            ResponsePart::File(f) => f.len,
        })
        .sum();
    let size = (total - 4) as i32;
    if let Some(ResponsePart::Mem(first)) = w.parts.first_mut() {
        let mut patched = BytesMut::from(&first[..]);
        patched[..4].copy_from_slice(&size.to_be_bytes());
        *first = patched.freeze();
    }
    Response::from_parts(w.parts)
}

/// Set the session id of a response [`encode_fetch_response`] built
/// (v7+; older versions carry none). The id sits at a fixed place in the
/// first in-memory part: size, correlation id, header tags (v12+),
/// throttle time, error code.
pub(crate) fn set_session_id(response: &mut Response, version: i16, session_id: i32) {
    if version < 7 {
        return;
    }
    let at = 4 + 4 + usize::from(version >= 12) + 4 + 2;
    if let Some(ResponsePart::Mem(first)) = response.parts.first_mut() {
        let mut patched = BytesMut::from(&first[..]);
        patched[at..at + 4].copy_from_slice(&session_id.to_be_bytes());
        *first = patched.freeze();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_response::{
        AbortedTransaction, FetchableTopicResponse, PartitionData as KPartition,
    };
    use kafka_protocol::messages::{FetchResponse, ResponseHeader, TopicName};
    use kafka_protocol::protocol::{Encodable, HeaderVersion, StrBytes};

    fn sample(records: &[u8], aborted: Option<Vec<(i64, i64)>>) -> FetchResponseData {
        FetchResponseData {
            throttle_time_ms: 0,
            error_code: 0,
            session_id: 0,
            topics: vec![TopicData {
                name: "orders".into(),
                id: Uuid::from_u128(42),
                partitions: vec![
                    PartitionData {
                        partition: 0,
                        error_code: 0,
                        high_watermark: 10,
                        last_stable_offset: 10,
                        log_start_offset: 2,
                        aborted,
                        diverging_epoch: None,
                        current_leader: None,
                        preferred_read_replica: -1,
                        records: Records::Mem(Bytes::copy_from_slice(records)),
                    },
                    PartitionData {
                        partition: 3,
                        error_code: 1,
                        high_watermark: -1,
                        last_stable_offset: -1,
                        log_start_offset: -1,
                        aborted: None,
                        diverging_epoch: Some((3, 120)),
                        current_leader: Some((2, 7)),
                        preferred_read_replica: 2,
                        records: Records::Mem(Bytes::new()),
                    },
                ],
            }],
        }
    }

    fn reference(version: i16, records: &[u8], aborted: Option<Vec<(i64, i64)>>) -> Vec<u8> {
        let mut resp = FetchResponse::default();
        let mut t = FetchableTopicResponse::default();
        if version >= 13 {
            t.topic_id = Uuid::from_u128(42);
        } else {
            t.topic = TopicName(StrBytes::from_static_str("orders"));
        }
        let mut p0 = KPartition::default();
        p0.partition_index = 0;
        p0.high_watermark = 10;
        p0.last_stable_offset = 10;
        p0.log_start_offset = 2;
        p0.aborted_transactions = aborted.map(|l| {
            l.into_iter()
                .map(|(pid, first)| {
                    let mut a = AbortedTransaction::default();
                    a.producer_id = pid.into();
                    a.first_offset = first;
                    a
                })
                .collect()
        });
        p0.records = Some(Bytes::copy_from_slice(records));
        let mut p1 = KPartition::default();
        p1.partition_index = 3;
        p1.error_code = 1;
        p1.high_watermark = -1;
        p1.last_stable_offset = -1;
        p1.log_start_offset = -1;
        p1.aborted_transactions = None;
        // Fields a version lacks must stay at their defaults (our encoder
        // leaves them out).
        if version >= 12 {
            p1.diverging_epoch.epoch = 3;
            p1.diverging_epoch.end_offset = 120;
            p1.current_leader.leader_id = 2.into();
            p1.current_leader.leader_epoch = 7;
        }
        if version >= 11 {
            p1.preferred_read_replica = 2.into();
        }
        p1.records = Some(Bytes::new());
        t.partitions = vec![p0, p1];
        resp.responses = vec![t];
        let mut buf = BytesMut::new();
        buf.put_i32(0);
        ResponseHeader::default()
            .with_correlation_id(7)
            .encode(&mut buf, FetchResponse::header_version(version))
            .unwrap();
        resp.encode(&mut buf, version).unwrap();
        let size = (buf.len() - 4) as i32;
        buf[..4].copy_from_slice(&size.to_be_bytes());
        buf.to_vec()
    }

    fn flatten(r: Response) -> Vec<u8> {
        let mut out = Vec::new();
        for p in r.parts {
            match p {
                ResponsePart::Mem(b) => out.extend_from_slice(&b),
                ResponsePart::File(_) => panic!("no files in this test"),
            }
        }
        out
    }

    #[test]
    fn matches_kafka_protocol_encoding_for_every_version() {
        let records = b"some record batch bytes";
        for version in 4..=16 {
            for aborted in [None, Some(vec![]), Some(vec![(5, 100), (6, 200)])] {
                let ours = flatten(encode_fetch_response(
                    7,
                    version,
                    sample(records, aborted.clone()),
                ));
                assert_eq!(
                    ours,
                    reference(version, records, aborted),
                    "version {version}"
                );
            }
        }
    }

    #[test]
    fn set_session_id_equals_encoding_with_it() {
        for version in 4..=16 {
            let mut with = sample(b"abc", None);
            with.session_id = 0x1234_5678;
            let mut patched = encode_fetch_response(7, version, sample(b"abc", None));
            set_session_id(&mut patched, version, 0x1234_5678);
            assert_eq!(
                flatten(patched),
                flatten(encode_fetch_response(7, version, with)),
                "v{version}"
            );
        }
    }

    #[test]
    fn file_slices_become_separate_parts_with_correct_total_size() {
        let file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut &file, &[9u8; 100]).unwrap();
        let file = std::sync::Arc::new(file);
        let mut data = sample(b"", None);
        data.topics[0].partitions[0].records = Records::Files(vec![FileSlice {
            file: file.clone(),
            position: 10,
            len: 50,
        }]);
        let r = encode_fetch_response(7, 12, data);
        assert_eq!(r.parts.len(), 3);
        let mut total = 0u64;
        let mut first = None;
        for p in &r.parts {
            match p {
                ResponsePart::Mem(b) => {
                    if first.is_none() {
                        first = Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                    }
                    total += b.len() as u64;
                }
                ResponsePart::File(f) => {
                    assert_eq!((f.position, f.len), (10, 50));
                    total += f.len;
                }
            }
        }
        assert_eq!(first.unwrap() as u64, total - 4);
        // Same bytes as the in-memory encoding of those 50 bytes.
        let mem = flatten(encode_fetch_response(7, 12, sample(&[9u8; 50], None)));
        assert_eq!(mem.len() as u64, total);
    }
}
