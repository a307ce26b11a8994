//! The segment timeline: one inline SVG per partition with a rectangle per
//! segment along the offset axis, coloured by tier, and markers for the
//! offsets that matter (log start, high watermark, last stable offset, the
//! cleaner's first dirty offset, each group's committed offset).
//!
//! A segment's width grows with the logarithm of its size, so a partition
//! of one huge and many small segments stays readable. Beyond
//! [`MAX_DRAWN`] segments the middle is drawn as bands, one per run of
//! segments in the same tier. Pure: a [`PartitionView`] in, SVG text out.

use std::fmt::Write as _;

use super::model::{Fate, PartitionView, SegmentView, Tier};
use super::text::{escape, human_bytes, utc};

/// Segments drawn one by one at most; more collapse into bands.
pub(crate) const MAX_DRAWN: usize = 200;
/// Drawn one by one at the start when collapsing.
const HEAD: usize = 40;
/// Drawn one by one at the end when collapsing (the recent, active part).
const TAIL: usize = 150;

const WIDTH: f64 = 1000.0;
const MARGIN: f64 = 10.0;
const TRACK_Y: f64 = 70.0;
const TRACK_H: f64 = 60.0;
const HEIGHT: f64 = 230.0;

/// One drawn item: a segment or a band of collapsed segments (indexes into
/// the view's segments, `first..=last`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Item {
    Segment(usize),
    Band {
        first: usize,
        last: usize,
        tier: Tier,
    },
}

/// What to draw: every segment when there are at most [`MAX_DRAWN`],
/// otherwise the first [`HEAD`] and last [`TAIL`] one by one and the middle
/// as bands of same-tier runs.
pub(crate) fn collapse(segments: &[SegmentView]) -> Vec<Item> {
    let n = segments.len();
    if n <= MAX_DRAWN {
        return (0..n).map(Item::Segment).collect();
    }
    let mut items: Vec<Item> = (0..HEAD).map(Item::Segment).collect();
    let mut i = HEAD;
    while i < n - TAIL {
        let tier = segments[i].tier;
        let mut last = i;
        while last + 1 < n - TAIL && segments[last + 1].tier == tier {
            last += 1;
        }
        items.push(Item::Band {
            first: i,
            last,
            tier,
        });
        i = last + 1;
    }
    items.extend((n - TAIL..n).map(Item::Segment));
    items
}

/// A laid-out item: its offset range and horizontal extent.
struct Placed {
    item: Item,
    from_offset: i64,
    to_offset: i64,
    x: f64,
    w: f64,
}

fn weight(item: &Item, segments: &[SegmentView]) -> f64 {
    match item {
        Item::Segment(i) => 1.0 + (1.0 + segments[*i].size_bytes as f64).ln(),
        Item::Band { first, last, .. } => 12.0 + 4.0 * ((last - first + 1) as f64).ln(),
    }
}

fn place(segments: &[SegmentView]) -> Vec<Placed> {
    let items = collapse(segments);
    let total: f64 = items.iter().map(|i| weight(i, segments)).sum();
    let scale = if total > 0.0 {
        (WIDTH - 2.0 * MARGIN) / total
    } else {
        0.0
    };
    let mut x = MARGIN;
    items
        .into_iter()
        .map(|item| {
            let w = weight(&item, segments) * scale;
            let (from, to) = match item {
                Item::Segment(i) => (segments[i].base_offset, segments[i].next_offset),
                Item::Band { first, last, .. } => {
                    (segments[first].base_offset, segments[last].next_offset)
                }
            };
            let placed = Placed {
                item,
                from_offset: from,
                to_offset: to,
                x,
                w,
            };
            x += w;
            placed
        })
        .collect()
}

/// Where `offset` falls on the axis: inside the item holding it, by
/// linear interpolation; at the ends when outside every item.
fn x_of(placed: &[Placed], offset: i64) -> f64 {
    let Some(first) = placed.first() else {
        return MARGIN;
    };
    if offset <= first.from_offset {
        return first.x;
    }
    for p in placed {
        if offset >= p.from_offset && offset < p.to_offset {
            let span = (p.to_offset - p.from_offset).max(1) as f64;
            return p.x + p.w * (offset - p.from_offset) as f64 / span;
        }
    }
    placed.last().map_or(MARGIN, |p| p.x + p.w)
}

fn segment_title(s: &SegmentView) -> String {
    let mut t = if s.next_offset > s.base_offset {
        format!(
            "offsets {}..{} ({} records' offsets)",
            s.base_offset,
            s.next_offset - 1,
            s.next_offset - s.base_offset
        )
    } else {
        format!("offset {} (empty)", s.base_offset)
    };
    let _ = write!(
        t,
        "\n{} ({} bytes), {}",
        human_bytes(s.size_bytes),
        s.size_bytes,
        s.tier.name()
    );
    if s.active {
        t.push_str(", active");
    }
    if let Some(state) = &s.remote_state {
        let _ = write!(t, " [{state}]");
    }
    match (s.first_timestamp, s.last_timestamp) {
        (Some(a), Some(b)) => {
            let _ = write!(t, "\ntime {} .. {} UTC", utc(a), utc(b));
        }
        (None, Some(b)) => {
            let _ = write!(t, "\nlatest record {} UTC", utc(b));
        }
        _ => {}
    }
    match &s.fate {
        Some(Fate::DeletedNextPass { reason }) => {
            let _ = write!(t, "\nretention deletes it at the next pass ({reason})");
        }
        Some(Fate::ExpiresAt { at_ms }) => {
            let _ = write!(t, "\nretention.ms expires it at {} UTC", utc(*at_ms));
        }
        Some(Fate::Compacted) => {
            t.push_str("\nin the dirty section: the next cleaning rewrites it")
        }
        None => {}
    }
    t
}

fn fate_name(f: &Fate) -> &'static str {
    match f {
        Fate::DeletedNextPass { .. } => "delete-next",
        Fate::ExpiresAt { .. } => "expires",
        Fate::Compacted => "compact",
    }
}

fn draw_segment(out: &mut String, s: &SegmentView, x: f64, w: f64) {
    let _ = write!(
        out,
        r#"<g class="segment tier-{tier}{active}" data-segment-base="{base}" data-segment-next="{next}" data-size="{size}" data-tier="{tier}""#,
        tier = s.tier.name(),
        active = if s.active { " active" } else { "" },
        base = s.base_offset,
        next = s.next_offset,
        size = s.size_bytes,
    );
    if s.active {
        out.push_str(r#" data-active="true""#);
    }
    if let Some(f) = &s.fate {
        let _ = write!(out, r#" data-fate="{}""#, fate_name(f));
    }
    let _ = write!(
        out,
        r#"><title>{}</title><rect x="{x:.1}" y="{TRACK_Y}" width="{:.1}" height="{TRACK_H}"/>"#,
        escape(&segment_title(s)),
        (w - 1.0).max(0.5)
    );
    if let Some(f) = &s.fate {
        let _ = write!(
            out,
            r#"<rect class="fate fate-{}" x="{x:.1}" y="{:.1}" width="{:.1}" height="8"/>"#,
            fate_name(f),
            TRACK_Y + TRACK_H + 2.0,
            (w - 1.0).max(0.5)
        );
    }
    if s.active {
        let _ = write!(
            out,
            r#"<text class="active-mark" x="{:.1}" y="{:.1}">▶</text>"#,
            x + w / 2.0 - 4.0,
            TRACK_Y - 4.0
        );
    }
    if w >= 70.0 {
        let _ = write!(
            out,
            r#"<text class="seg-label" x="{:.1}" y="{:.1}">{}</text><text class="seg-label" x="{:.1}" y="{:.1}">{}</text>"#,
            x + 4.0,
            TRACK_Y + 22.0,
            s.base_offset,
            x + 4.0,
            TRACK_Y + 40.0,
            escape(&human_bytes(s.size_bytes)),
        );
    }
    out.push_str("</g>");
}

fn draw_band(
    out: &mut String,
    segments: &[SegmentView],
    first: usize,
    last: usize,
    tier: Tier,
    x: f64,
    w: f64,
) {
    let count = last - first + 1;
    let bytes: u64 = segments[first..=last].iter().map(|s| s.size_bytes).sum();
    let title = format!(
        "{count} {} segments collapsed: offsets {}..{}, {}",
        tier.name(),
        segments[first].base_offset,
        segments[last].next_offset - 1,
        human_bytes(bytes)
    );
    let _ = write!(
        out,
        r#"<g class="band tier-{t}" data-band-segments="{count}" data-band-first-base="{}" data-band-tier="{t}"><title>{}</title><rect x="{x:.1}" y="{TRACK_Y}" width="{:.1}" height="{TRACK_H}"/><text class="seg-label" x="{:.1}" y="{:.1}">×{count}</text></g>"#,
        segments[first].base_offset,
        escape(&title),
        (w - 1.0).max(0.5),
        x + 3.0,
        TRACK_Y + 34.0,
        t = tier.name(),
    );
}

/// A vertical marker at `x` with a label in row `row` (0 is just below the
/// track; negative rows are above it).
fn draw_marker(
    out: &mut String,
    attrs: &str,
    class: &str,
    x: f64,
    row: i32,
    label: &str,
    title: &str,
) {
    let label_y = if row >= 0 {
        TRACK_Y + TRACK_H + 24.0 + 14.0 * row as f64
    } else {
        TRACK_Y - 10.0 - 14.0 * (-row - 1) as f64
    };
    let (y1, y2) = if row >= 0 {
        (TRACK_Y - 2.0, label_y - 10.0)
    } else {
        (label_y + 3.0, TRACK_Y + TRACK_H + 2.0)
    };
    let anchor = if x > WIDTH * 0.75 { "end" } else { "start" };
    let _ = write!(
        out,
        r#"<g class="marker {class}" {attrs}><title>{}</title><line x1="{x:.1}" y1="{y1:.1}" x2="{x:.1}" y2="{y2:.1}"/><text x="{x:.1}" y="{label_y:.1}" text-anchor="{anchor}">{}</text></g>"#,
        escape(title),
        escape(label),
    );
}

/// The timeline SVG of `view`.
pub(crate) fn svg(view: &PartitionView) -> String {
    let segments = &view.segments;
    let placed = place(segments);
    let mut out = String::with_capacity(512 + 400 * placed.len());
    let _ = write!(
        out,
        r#"<svg id="timeline" class="timeline" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" role="img" aria-label="segment timeline of {} partition {}" xmlns="http://www.w3.org/2000/svg">"#,
        escape(&view.topic),
        view.partition
    );
    if placed.is_empty() {
        out.push_str(r#"<text x="10" y="90">no segments</text></svg>"#);
        return out;
    }
    for p in &placed {
        match p.item {
            Item::Segment(i) => draw_segment(&mut out, &segments[i], p.x, p.w),
            Item::Band { first, last, tier } => {
                draw_band(&mut out, segments, first, last, tier, p.x, p.w)
            }
        }
    }
    let o = &view.offsets;
    let mut marks: Vec<(&str, &str, i64, String)> = vec![
        (
            "log-start",
            "log start",
            o.log_start,
            "the earliest offset readable from either tier".into(),
        ),
        (
            "high-watermark",
            "HW",
            o.high_watermark,
            "high watermark: consumers read up to here".into(),
        ),
    ];
    if o.local_log_start != o.log_start {
        marks.push((
            "local-log-start",
            "local start",
            o.local_log_start,
            "the earliest offset on local disk".into(),
        ));
    }
    if o.last_stable != o.high_watermark {
        marks.push((
            "last-stable",
            "LSO",
            o.last_stable,
            "last stable offset: read_committed consumers stop here".into(),
        ));
    }
    if o.log_end != o.high_watermark {
        marks.push(("log-end", "LEO", o.log_end, "log end offset".into()));
    }
    if let Some(d) = o.first_dirty {
        marks.push((
            "first-dirty",
            "first dirty",
            d,
            "the cleaner's first dirty offset: compaction starts here".into(),
        ));
    }
    for (row, (name, label, offset, what)) in marks.iter().enumerate() {
        let attrs = format!(r#"data-marker="{name}" data-offset="{offset}""#);
        let label = format!("{label} {offset}");
        let title = format!("{what}: {offset}");
        draw_marker(
            &mut out,
            &attrs,
            name,
            x_of(&placed, *offset),
            row as i32 % 4,
            &label,
            &title,
        );
    }
    for (i, g) in view.groups.iter().enumerate() {
        let attrs = format!(
            r#"data-group="{}" data-committed="{}" data-lag="{}""#,
            escape(&g.group),
            g.committed,
            g.lag
        );
        let label = format!("{} lag {}", g.group, g.lag);
        let title = format!(
            "group {}: committed {}, lag {} behind the high watermark",
            g.group, g.committed, g.lag
        );
        draw_marker(
            &mut out,
            &attrs,
            "group",
            x_of(&placed, g.committed),
            -1 - (i as i32 % 3),
            &label,
            &title,
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::model::{GroupLag, Offsets};

    pub(crate) fn seg(base: i64, next: i64, tier: Tier) -> SegmentView {
        SegmentView {
            base_offset: base,
            next_offset: next,
            size_bytes: 1000,
            first_timestamp: None,
            last_timestamp: None,
            tier,
            active: false,
            remote_state: None,
            fate: None,
        }
    }

    fn view(segments: Vec<SegmentView>) -> PartitionView {
        PartitionView {
            topic: "t".into(),
            partition: 0,
            segments,
            offsets: Offsets::default(),
            groups: vec![],
            cleanup_policy: "delete".into(),
            cleaner: None,
            retention_notes: vec![],
            findings: None,
            problems: vec![],
            now_ms: 0,
        }
    }

    #[test]
    fn few_segments_are_drawn_one_by_one() {
        let segs: Vec<_> = (0..MAX_DRAWN as i64)
            .map(|i| seg(i * 10, i * 10 + 10, Tier::Local))
            .collect();
        assert_eq!(
            collapse(&segs),
            (0..MAX_DRAWN).map(Item::Segment).collect::<Vec<_>>()
        );
        assert!(collapse(&[]).is_empty());
    }

    #[test]
    fn many_segments_collapse_into_one_band_per_tier_run() {
        let n = 1000;
        let segs: Vec<_> = (0..n as i64)
            .map(|i| {
                let tier = if i < 500 {
                    Tier::Remote
                } else if i < 700 {
                    Tier::Both
                } else {
                    Tier::Local
                };
                seg(i * 10, i * 10 + 10, tier)
            })
            .collect();
        let items = collapse(&segs);
        let bands: Vec<_> = items
            .iter()
            .filter(|i| matches!(i, Item::Band { .. }))
            .collect();
        assert_eq!(
            bands,
            vec![
                &Item::Band {
                    first: HEAD,
                    last: 499,
                    tier: Tier::Remote
                },
                &Item::Band {
                    first: 500,
                    last: 699,
                    tier: Tier::Both
                },
                &Item::Band {
                    first: 700,
                    last: n - TAIL - 1,
                    tier: Tier::Local
                },
            ]
        );
        assert_eq!(items.len(), HEAD + 3 + TAIL);
        // Every segment is covered exactly once, in order.
        let covered: usize = items
            .iter()
            .map(|i| match i {
                Item::Segment(_) => 1,
                Item::Band { first, last, .. } => last - first + 1,
            })
            .sum();
        assert_eq!(covered, n);
        let svg = svg(&view(segs));
        assert_eq!(svg.matches("data-segment-base=").count(), HEAD + TAIL);
        assert_eq!(svg.matches(r#"data-band-segments="#).count(), 3);
    }

    #[test]
    fn segments_carry_their_tier_and_the_active_one_is_marked() {
        let mut segs = vec![
            seg(0, 100, Tier::Remote),
            seg(100, 200, Tier::Both),
            seg(200, 250, Tier::Local),
        ];
        segs[2].active = true;
        segs[0].fate = Some(Fate::DeletedNextPass {
            reason: "retention_ms".into(),
        });
        let svg = svg(&view(segs));
        assert!(svg.contains(r#"data-segment-base="0" data-segment-next="100" data-size="1000" data-tier="remote" data-fate="delete-next""#), "{svg}");
        assert!(svg.contains(r#"data-segment-base="100" data-segment-next="200" data-size="1000" data-tier="both""#), "{svg}");
        assert!(
            svg.contains(r#"data-tier="local" data-active="true""#),
            "{svg}"
        );
        assert_eq!(svg.matches("data-active").count(), 1);
        assert!(svg.contains("offsets 0..99"), "{svg}");
    }

    #[test]
    fn markers_sit_inside_the_segment_holding_their_offset() {
        let mut v = view(vec![seg(0, 100, Tier::Local), seg(100, 200, Tier::Local)]);
        v.offsets = Offsets {
            log_start: 0,
            local_log_start: 0,
            high_watermark: 150,
            last_stable: 150,
            log_end: 200,
            first_dirty: None,
            highest_remote: None,
        };
        v.groups = vec![GroupLag {
            group: "g<1>".into(),
            protocol: "classic",
            state: "Empty",
            committed: 50,
            lag: 100,
        }];
        let placed = place(&v.segments);
        let mid = placed[1].x + placed[1].w / 2.0;
        assert!((x_of(&placed, 150) - mid).abs() < 0.01);
        assert!(x_of(&placed, 50) < placed[1].x);
        assert_eq!(x_of(&placed, 10_000), placed[1].x + placed[1].w);
        let svg = svg(&v);
        assert!(
            svg.contains(r#"data-marker="high-watermark" data-offset="150""#),
            "{svg}"
        );
        assert!(
            svg.contains(r#"data-marker="log-end" data-offset="200""#),
            "{svg}"
        );
        assert!(
            !svg.contains(r#"data-marker="last-stable""#),
            "LSO equals HW: {svg}"
        );
        assert!(
            svg.contains(r#"data-group="g&lt;1&gt;" data-committed="50" data-lag="100""#),
            "{svg}"
        );
        assert!(!svg.contains("g<1>"), "group ids are escaped: {svg}");
    }

    #[test]
    fn bigger_segments_are_wider_but_small_ones_stay_visible() {
        let mut big = seg(0, 100, Tier::Local);
        big.size_bytes = 1 << 30;
        let mut small = seg(100, 101, Tier::Local);
        small.size_bytes = 100;
        let placed = place(&[big, small]);
        assert!(placed[0].w > placed[1].w);
        assert!(
            placed[1].w > 100.0,
            "log scale keeps the small one readable: {}",
            placed[1].w
        );
    }
}
