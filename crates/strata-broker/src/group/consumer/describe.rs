//! ConsumerGroupDescribe (Kafka `GroupMetadataManager.consumerGroupDescribe`):
//! each group's epochs, assignor and members, with topic names resolved
//! from the current topics (partitions of deleted topics are left out).

use kafka_protocol::error::ResponseError;

use super::api::{DescribedGroup, DescribedMember, DescribedTopic};
use super::assignment::TopicPartitions;
use super::group::ConsumerGroup;
use super::image::TopicImage;
use crate::group::manager::{GroupIdRule, GroupManager};

type E = ResponseError;

fn described(tp: &TopicPartitions, image: &TopicImage) -> Vec<DescribedTopic> {
    tp.iter()
        .filter_map(|(id, parts)| {
            Some(DescribedTopic {
                topic_id: *id,
                topic_name: image.name_of(*id)?.to_string(),
                partitions: parts.iter().copied().collect(),
            })
        })
        .collect()
}

fn failed(group_id: &str, error: E, message: Option<String>) -> DescribedGroup {
    DescribedGroup {
        group_id: group_id.to_string(),
        error: Some(error),
        error_message: message,
        state: "",
        group_epoch: 0,
        assignment_epoch: 0,
        assignor_name: String::new(),
        members: Vec::new(),
    }
}

impl GroupManager {
    /// ConsumerGroupDescribe of each id, in request order.
    pub(crate) fn consumer_describe(
        &self,
        ids: &[String],
        image: &TopicImage,
    ) -> Vec<DescribedGroup> {
        ids.iter()
            .map(|id| {
                if let Some(e) = self.validate(id, GroupIdRule::NonEmpty) {
                    return failed(id, e, None);
                }
                match self.groups.get(id).map(|g| g.consumer.as_deref()) {
                    None => failed(
                        id,
                        E::GroupIdNotFound,
                        Some(format!("Group {id} not found.")),
                    ),
                    Some(None) => failed(
                        id,
                        E::GroupIdNotFound,
                        Some(format!("Group {id} is not a consumer group.")),
                    ),
                    Some(Some(cg)) => self.describe_one(id, cg, image),
                }
            })
            .collect()
    }

    fn describe_one(&self, id: &str, cg: &ConsumerGroup, image: &TopicImage) -> DescribedGroup {
        let members = cg
            .members
            .values()
            .map(|m| DescribedMember {
                member_id: m.member_id.clone(),
                instance_id: m.instance_id.clone(),
                rack_id: m.rack_id.clone(),
                member_epoch: m.assignment.member_epoch,
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                subscribed_topic_names: m.subscribed_topic_names.iter().cloned().collect(),
                subscribed_topic_regex: m.subscribed_topic_regex.clone(),
                assignment: described(&m.assignment.assigned, image),
                target_assignment: described(
                    &cg.target.get(&m.member_id).cloned().unwrap_or_default(),
                    image,
                ),
            })
            .collect();
        DescribedGroup {
            group_id: id.to_string(),
            error: None,
            error_message: None,
            state: cg.state().name(),
            group_epoch: cg.group_epoch,
            assignment_epoch: cg.assignment_epoch,
            assignor_name: cg
                .preferred_assignor(&self.config.consumer_assignors)
                .name()
                .to_string(),
            members,
        }
    }
}
