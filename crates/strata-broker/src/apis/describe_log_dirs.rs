//! DescribeLogDirs (key 35), versions 1–4: each log directory, whether it is
//! online, the requested partitions it holds with their sizes, and (v4) its
//! total and usable bytes. A replica being moved into a dir
//! (AlterReplicaLogDirs) is listed there too with `is_future_key` and
//! `offset_lag` = current log end − future log end (Kafka's definition).

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::AclOperation;

use super::RequestContext;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: DescribeLogDirsRequest,
) -> DescribeLogDirsResponse {
    if !ctx.authorize_cluster(AclOperation::Describe) {
        let mut resp = DescribeLogDirsResponse::default();
        resp.error_code = ResponseError::ClusterAuthorizationFailed.code();
        return resp;
    }
    let wanted: Option<BTreeMap<String, Vec<i32>>> = req.topics.map(|ts| {
        ts.into_iter()
            .map(|t| (t.topic.to_string(), t.partitions))
            .collect()
    });
    ctx.broker
        .blocking(move |b| {
            let mut resp = DescribeLogDirsResponse::default();
            let futures = b.logs.future_logs();
            for dir in b.logs.log_dirs() {
                let mut r = DescribeLogDirsResult::default();
                r.log_dir = StrBytes::from_string(dir.path.display().to_string());
                if !dir.online {
                    r.error_code = ResponseError::KafkaStorageError.code();
                    resp.results.push(r);
                    continue;
                }
                r.total_bytes = dir.total_bytes as i64;
                r.usable_bytes = dir.usable_bytes as i64;
                let mut by_topic: BTreeMap<String, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
                for tp in dir.partitions {
                    let selected = match &wanted {
                        None => true,
                        Some(w) => w
                            .get(&tp.topic)
                            .is_some_and(|ps| ps.contains(&tp.partition)),
                    };
                    if !selected {
                        continue;
                    }
                    let Some(log) = b.logs.get_log(&tp) else {
                        continue;
                    };
                    let mut p = DescribeLogDirsPartition::default();
                    p.partition_index = tp.partition;
                    p.partition_size = log.size_in_bytes() as i64;
                    p.offset_lag = 0;
                    by_topic.entry(tp.topic.clone()).or_default().push(p);
                }
                // A replica moving here (AlterReplicaLogDirs): Kafka's future
                // replica, its lag behind the current log's end.
                for f in &futures {
                    if f.dir != dir.path {
                        continue;
                    }
                    let selected = match &wanted {
                        None => true,
                        Some(w) => w
                            .get(&f.tp.topic)
                            .is_some_and(|ps| ps.contains(&f.tp.partition)),
                    };
                    if !selected {
                        continue;
                    }
                    let mut p = DescribeLogDirsPartition::default();
                    p.partition_index = f.tp.partition;
                    p.partition_size = f.size as i64;
                    p.offset_lag = f.offset_lag;
                    p.is_future_key = true;
                    by_topic.entry(f.tp.topic.clone()).or_default().push(p);
                }
                r.topics = by_topic
                    .into_iter()
                    .map(|(name, partitions)| {
                        let mut t = DescribeLogDirsTopic::default();
                        t.name = TopicName(StrBytes::from_string(name));
                        t.partitions = partitions;
                        t
                    })
                    .collect();
                resp.results.push(r);
            }
            resp
        })
        .await
}
