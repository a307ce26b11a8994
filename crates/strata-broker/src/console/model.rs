//! Plain data the console draws: what `gather` reads from the broker and
//! `render` turns into HTML. No broker types, no I/O, so rendering is tested
//! with hand-built values.

/// Where a segment's bytes are (Kafka KIP-405 tiers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tier {
    /// Only in the local log directory (not copied yet, or not tiered).
    Local,
    /// Only in remote storage (deleted locally by local retention).
    Remote,
    /// Local and copied to remote storage.
    Both,
}

impl Tier {
    /// The `data-tier` value and CSS class.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Tier::Local => "local",
            Tier::Remote => "remote",
            Tier::Both => "both",
        }
    }
}

/// What happens to a segment next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    /// The next retention pass deletes it (`reason` as Kafka names it).
    DeletedNextPass { reason: String },
    /// `retention.ms` deletes it at this time (ms since the epoch), the
    /// first pass after it.
    ExpiresAt { at_ms: i64 },
    /// Its records lie in the compaction's dirty section: the next cleaning
    /// rewrites it.
    Compacted,
}

/// One segment on the timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SegmentView {
    pub base_offset: i64,
    /// The offset after its last record (next base, or the log end).
    pub next_offset: i64,
    pub size_bytes: u64,
    /// First batch's timestamp, when known.
    pub first_timestamp: Option<i64>,
    /// Largest record timestamp, when known.
    pub last_timestamp: Option<i64>,
    pub tier: Tier,
    /// The active (last local) segment, still appended to.
    pub active: bool,
    /// A remote segment's catalogue state when not simply copied
    /// (`COPY_SEGMENT_STARTED`, `DELETE_SEGMENT_STARTED`).
    pub remote_state: Option<String>,
    pub fate: Option<Fate>,
}

/// The partition's offsets that bound what is readable, cleanable and
/// deletable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Offsets {
    /// Earliest offset readable from either tier.
    pub log_start: i64,
    /// Earliest offset in the local log directory.
    pub local_log_start: i64,
    pub high_watermark: i64,
    pub last_stable: i64,
    pub log_end: i64,
    /// The cleaner's first dirty offset (compacted topics).
    pub first_dirty: Option<i64>,
    /// Highest offset copied to remote storage (tiered topics).
    pub highest_remote: Option<i64>,
}

/// One consumer group's position in the partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GroupLag {
    pub group: String,
    /// `classic`, or `consumer` for a KIP-848 consumer group.
    pub protocol: &'static str,
    /// The group's state in its protocol's names (`Stable`, `Reconciling`, ...).
    pub state: &'static str,
    pub committed: i64,
    /// `high_watermark - committed`, never negative.
    pub lag: i64,
}

/// The log cleaner's view of a compacted partition.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CleanerView {
    pub clean_bytes: u64,
    pub dirty_bytes: u64,
    /// `dirty / (clean + dirty)`.
    pub dirty_ratio: f64,
    /// `min.cleanable.dirty.ratio`.
    pub min_ratio: f64,
    /// The cleaner would pick this log now.
    pub eligible: bool,
    pub in_progress: bool,
    pub first_dirty_offset: i64,
    /// First offset the cleaner may not touch yet (active segment, lag).
    pub first_uncleanable_offset: i64,
    pub since_last_clean_ms: Option<i64>,
    pub bytes_reclaimed_total: u64,
    /// The last failure, rendered for operators.
    pub failure: Option<String>,
}

/// How serious a doctor's finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One doctor finding as the console shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FindingView {
    pub severity: Severity,
    pub symptom: String,
    pub message: String,
}

/// Everything the partition page shows.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PartitionView {
    pub topic: String,
    pub partition: i32,
    /// Oldest first, both tiers merged.
    pub segments: Vec<SegmentView>,
    pub offsets: Offsets,
    pub groups: Vec<GroupLag>,
    /// `cleanup.policy` in force.
    pub cleanup_policy: String,
    /// `None` for a topic that is not compacted.
    pub cleaner: Option<CleanerView>,
    /// What retention does next, in plain words.
    pub retention_notes: Vec<String>,
    /// `None`: no findings source is installed.
    pub findings: Option<Vec<FindingView>>,
    /// What could not be read (the page still shows the rest).
    pub problems: Vec<String>,
    /// When the page was gathered (ms since the epoch).
    pub now_ms: i64,
}

/// One row of a topic's partition table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PartitionRow {
    pub partition: i32,
    /// `None`: this broker has no log for it.
    pub local: Option<PartitionSummary>,
}

/// A partition's size in brief.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PartitionSummary {
    pub segments: usize,
    pub bytes: u64,
    pub log_start: i64,
    pub log_end: i64,
    pub high_watermark: i64,
}

/// The topic page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TopicView {
    pub name: String,
    pub partitions: Vec<PartitionRow>,
}

/// One row of the topic list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TopicRow {
    pub name: String,
    pub partitions: i32,
    /// Local bytes of the partitions this broker holds.
    pub bytes: u64,
    pub segments: usize,
}
