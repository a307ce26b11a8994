//! Where a follower's log leaves its leader's, decided by leader epochs
//! (KIP-101, KIP-279, KIP-320), never by the high watermark. Pure: the
//! callers pass their leader-epoch cache lookups.

/// The leader's check on a follower Fetch that carries the epoch of the
/// follower's last fetched batch: `leader_end_for` is the leader's
/// `endOffsetFor(last_fetched_epoch)` (`None`: undefined). `Ok(Some)` is
/// the diverging epoch to send back instead of records; `Err(())` means
/// the leader cannot tell (answer OFFSET_OUT_OF_RANGE).
#[allow(clippy::result_unit_err)]
pub(crate) fn diverging_epoch(
    leader_end_for: Option<(i32, i64)>,
    last_fetched_epoch: i32,
    fetch_offset: i64,
) -> Result<Option<(i32, i64)>, ()> {
    let (epoch, end) = leader_end_for.ok_or(())?;
    if epoch < last_fetched_epoch || end < fetch_offset {
        Ok(Some((epoch, end)))
    } else {
        Ok(None)
    }
}

/// Where a follower truncates, given the leader's diverging epoch
/// `(epoch, end)`, its own `endOffsetFor(epoch)` (`None`: undefined) and
/// its log end. Kafka's `getOffsetTruncationState`: the follower keeps
/// what both logs agree on; when it never had `epoch` it truncates to the
/// end of its own largest epoch below and asks again with that one.
pub(crate) fn truncation_offset(
    leader: (i32, i64),
    own_end_for: Option<(i32, i64)>,
    own_log_end: i64,
) -> i64 {
    let (epoch, end) = leader;
    match own_end_for {
        None => end.min(own_log_end),
        Some((own_epoch, own_end)) if own_epoch != epoch => own_end.min(own_log_end),
        Some((_, own_end)) => end.min(own_end).min(own_log_end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kafka's epoch cache lookup (`endOffsetFor`) over `entries`
    /// (epoch, start) with log end `leo`.
    fn end_for(entries: &[(i32, i64)], leo: i64, requested: i32) -> Option<(i32, i64)> {
        let latest = entries.last()?;
        if requested < 0 || requested > latest.0 {
            return None;
        }
        if requested == latest.0 {
            return Some((requested, leo));
        }
        if requested < entries[0].0 {
            return Some((requested, entries[0].1));
        }
        let i = entries.iter().rposition(|(e, _)| *e <= requested)?;
        Some((entries[i].0, entries[i + 1].1))
    }

    #[test]
    fn the_leaders_answers_match_kafkas_worked_cases() {
        // replication.md §2.2 (PartitionTest).
        let leader = [(0, 0), (3, 2), (4, 8), (7, 13), (9, 14), (10, 17)];
        let check = |lfe: i32, offset: i64| diverging_epoch(end_for(&leader, 17, lfe), lfe, offset);
        assert_eq!(check(2, 5), Ok(Some((0, 2))));
        assert_eq!(check(0, 4), Ok(Some((0, 2))));
        assert_eq!(check(6, 6), Ok(Some((4, 13))));
        assert_eq!(check(5, 9), Ok(Some((4, 13))));
        assert_eq!(check(10, 18), Ok(Some((10, 17))));
        for (lfe, offset) in [(0, 2), (7, 14), (9, 17), (10, 17)] {
            assert_eq!(check(lfe, offset), Ok(None), "({lfe}, {offset})");
        }
        assert_eq!(check(11, 5), Err(()));
    }

    #[test]
    fn kip_101_divergence_is_resolved_by_epochs() {
        // §7.4: A [m1@0 e0, m2@1 e0]; B leads epoch 1 from offset 1.
        let b = [(0, 0), (1, 1)];
        let a = [(0, 0)];
        let answer = diverging_epoch(end_for(&b, 2, 0), 0, 2).unwrap().unwrap();
        assert_eq!(answer, (0, 1));
        assert_eq!(truncation_offset(answer, end_for(&a, 2, answer.0), 2), 1);
    }

    #[test]
    fn kip_279_fast_failovers_do_not_keep_a_divergent_record() {
        // §7.5: A's cache {1:0, 3:2}, LEO 3; B has {1:0, 2:1}, LEO 2.
        let a = [(1, 0), (3, 2)];
        let b = [(1, 0), (2, 1)];
        let answer = diverging_epoch(end_for(&a, 3, 2), 2, 2).unwrap().unwrap();
        assert_eq!(answer, (1, 2));
        assert_eq!(truncation_offset(answer, end_for(&b, 2, answer.0), 2), 1);
    }

    #[test]
    fn multi_round_truncation_walks_back_epoch_by_epoch() {
        // §7.6: follower [0:e0, 1:e2, 2:e4], leader [0:e1, 1:e3, 2:e5].
        let leader = [(1, 0), (3, 1), (5, 2)];
        let mut follower: Vec<(i32, i64)> = vec![(0, 0), (2, 1), (4, 2)];
        let mut leo = 3;
        let mut rounds = 0;
        loop {
            let lfe = follower.last().map_or(-1, |e| e.0);
            if lfe < 0 {
                break;
            }
            let Some(answer) = diverging_epoch(end_for(&leader, 3, lfe), lfe, leo).unwrap() else {
                break;
            };
            let to = truncation_offset(answer, end_for(&follower, leo, answer.0), leo);
            follower.retain(|(_, start)| *start < to);
            leo = to;
            rounds += 1;
        }
        assert_eq!((leo, rounds), (0, 3));
    }
}
