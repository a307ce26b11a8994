//! The console's pages as HTML: the topic list, a topic's partitions and
//! the partition page (timeline, retention, cleaner, group lag, doctor's
//! findings). Pure: model in, text out; every piece of text from the broker
//! or a client (topic and group names, messages) is escaped. One inline
//! style sheet, no script, no external asset: the page works offline.

use std::fmt::Write as _;

use super::model::{CleanerView, FindingView, PartitionView, TopicRow, TopicView};
use super::text::{encode_segment, escape, human_bytes, human_ms};
use super::timeline;

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:1.5em;color:#222;max-width:1100px}\
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}\
table{border-collapse:collapse}td,th{padding:.25em .8em;text-align:right;border-bottom:1px solid #ddd}\
td:first-child,th:first-child{text-align:left}a{color:#1a5fb4}\
.bar rect.fill{fill:#62a0ea}.bar rect.back{fill:#eee}\
svg.timeline{border:1px solid #ddd;background:#fcfcfc}\
.segment rect{stroke:#fff;stroke-width:1}.tier-local rect{fill:#57a55a}\
.tier-remote rect{fill:#8e6cc4}.tier-both rect{fill:#3d8bcd}\
.band rect{opacity:.55}.segment.active rect{stroke:#222;stroke-width:2}\
rect.fate-delete-next{fill:#c01c28!important}rect.fate-expires{fill:#f5a623!important}\
rect.fate-compact{fill:#e5a50a!important}\
.seg-label{font-size:11px;fill:#fff}.active-mark{font-size:10px}\
.marker line{stroke:#333;stroke-width:1.5}.marker text{font-size:11px}\
.marker.group line{stroke:#c01c28;stroke-dasharray:3 2}.marker.group text{fill:#c01c28}\
.marker.first-dirty line{stroke:#e5a50a}.legend span{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 1em;vertical-align:middle}\
.sev-error{color:#c01c28}.sev-warning{color:#9c6500}.problems{color:#c01c28}\
.ratio rect.clean{fill:#57a55a}.ratio rect.dirty{fill:#e5a50a}.ratio line{stroke:#222;stroke-width:2}";

fn layout(title: &str, crumbs: &[(String, String)], body: &str) -> String {
    let mut nav = String::from(r#"<nav><a href="/">topics</a>"#);
    for (href, label) in crumbs {
        let _ = write!(
            nav,
            r#" › <a href="{}">{}</a>"#,
            escape(href),
            escape(label)
        );
    }
    nav.push_str("</nav>");
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} · Strata</title>\
         <style>{STYLE}</style></head><body>{nav}{body}</body></html>",
        escape(title)
    )
}

fn topic_href(topic: &str) -> String {
    format!("/console/topics/{}", encode_segment(topic))
}

fn partition_href(topic: &str, partition: i32) -> String {
    format!("{}/{partition}", topic_href(topic))
}

/// A horizontal bar of `value` out of `max`.
fn bar(value: u64, max: u64) -> String {
    let w = if max == 0 {
        0.0
    } else {
        200.0 * value as f64 / max as f64
    };
    format!(
        r#"<svg class="bar" width="200" height="10"><rect class="back" width="200" height="10"/><rect class="fill" width="{w:.1}" height="10"/></svg>"#
    )
}

/// The topic list (`/`).
pub(crate) fn index(topics: &[TopicRow]) -> String {
    let max = topics.iter().map(|t| t.bytes).max().unwrap_or(0);
    let mut body = String::from(
        "<h1>Strata storage</h1><table id=\"topics\"><tr><th>topic</th><th>partitions</th>\
         <th>segments</th><th>size</th><th></th></tr>",
    );
    for t in topics {
        let _ = write!(
            body,
            r#"<tr data-topic="{name}" data-partitions="{p}"><td><a href="{href}">{name}</a></td><td>{p}</td><td>{s}</td><td>{size}</td><td>{bar}</td></tr>"#,
            name = escape(&t.name),
            href = escape(&topic_href(&t.name)),
            p = t.partitions,
            s = t.segments,
            size = human_bytes(t.bytes),
            bar = bar(t.bytes, max),
        );
    }
    body.push_str("</table>");
    if topics.is_empty() {
        body.push_str("<p>No topics yet.</p>");
    }
    layout("topics", &[], &body)
}

/// A topic's partitions (`/console/topics/<topic>`).
pub(crate) fn topic(view: &TopicView) -> String {
    let max = view
        .partitions
        .iter()
        .filter_map(|p| p.local.as_ref().map(|l| l.bytes))
        .max()
        .unwrap_or(0);
    let mut body = format!(
        "<h1>{}</h1><table id=\"partitions\"><tr><th>partition</th><th>segments</th><th>size</th>\
         <th>log start</th><th>high watermark</th><th>log end</th><th></th></tr>",
        escape(&view.name)
    );
    for p in &view.partitions {
        let href = escape(&partition_href(&view.name, p.partition));
        match &p.local {
            Some(l) => {
                let _ = write!(
                    body,
                    r#"<tr data-partition="{n}"><td><a href="{href}">{n}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
                    l.segments,
                    human_bytes(l.bytes),
                    l.log_start,
                    l.high_watermark,
                    l.log_end,
                    bar(l.bytes, max),
                    n = p.partition,
                );
            }
            None => {
                let _ = write!(
                    body,
                    r#"<tr data-partition="{n}"><td>{n}</td><td colspan="6">not hosted by this broker</td></tr>"#,
                    n = p.partition
                );
            }
        }
    }
    body.push_str("</table>");
    layout(
        &view.name,
        &[(topic_href(&view.name), view.name.clone())],
        &body,
    )
}

fn cleaner_section(view: &PartitionView, out: &mut String) {
    out.push_str("<h2>Compaction</h2>");
    let Some(c) = &view.cleaner else {
        let _ = write!(
            out,
            "<p id=\"cleaner\" data-compacted=\"false\">cleanup.policy={}: the log cleaner does not compact this partition.</p>",
            escape(&view.cleanup_policy)
        );
        return;
    };
    cleaner_panel(c, out);
}

fn cleaner_panel(c: &CleanerView, out: &mut String) {
    let total = (c.clean_bytes + c.dirty_bytes).max(1) as f64;
    let clean_w = 400.0 * c.clean_bytes as f64 / total;
    let min_x = 400.0 * (1.0 - c.min_ratio).clamp(0.0, 1.0);
    let state = if c.in_progress {
        "cleaning now"
    } else if c.eligible {
        "eligible: the cleaner picks it when a thread is free"
    } else {
        "not eligible yet"
    };
    let _ = write!(
        out,
        r#"<div id="cleaner" data-compacted="true" data-dirty-ratio="{ratio:.4}" data-eligible="{}"><svg class="ratio" width="400" height="24"><title>clean {} | dirty {} (ratio {ratio:.2}, min.cleanable.dirty.ratio {:.2})</title><rect class="clean" width="{clean_w:.1}" height="24"/><rect class="dirty" x="{clean_w:.1}" width="{:.1}" height="24"/><line x1="{min_x:.1}" y1="0" x2="{min_x:.1}" y2="24"/></svg>"#,
        c.eligible,
        human_bytes(c.clean_bytes),
        human_bytes(c.dirty_bytes),
        c.min_ratio,
        400.0 - clean_w,
        ratio = c.dirty_ratio,
    );
    let _ = write!(
        out,
        "<p>Dirty ratio <b>{:.1}%</b> (cleans above {:.1}%): {state}. Dirty section: offsets {}..{}; \
         {} cleanings reclaimed {}",
        100.0 * c.dirty_ratio,
        100.0 * c.min_ratio,
        c.first_dirty_offset,
        c.first_uncleanable_offset,
        match c.since_last_clean_ms {
            Some(ms) => format!("last {} ago;", human_ms(ms)),
            None => "no cleaning since start;".into(),
        },
        human_bytes(c.bytes_reclaimed_total),
    );
    out.push_str(".</p>");
    if let Some(f) = &c.failure {
        let _ = write!(
            out,
            r#"<p class="sev-error">Last cleaning failed: {}</p>"#,
            escape(f)
        );
    }
    out.push_str("</div>");
}

fn groups_section(view: &PartitionView, out: &mut String) {
    out.push_str("<h2>Consumer groups</h2>");
    if view.groups.is_empty() {
        out.push_str("<p id=\"groups\">No group has committed an offset here.</p>");
        return;
    }
    let max = view
        .groups
        .iter()
        .map(|g| g.lag.max(0) as u64)
        .max()
        .unwrap_or(0);
    out.push_str(
        "<table id=\"groups\"><tr><th>group</th><th>protocol</th><th>state</th><th>committed</th><th>lag</th><th></th></tr>",
    );
    for g in &view.groups {
        let _ = write!(
            out,
            r#"<tr class="group-lag" data-group="{name}" data-protocol="{protocol}" data-state="{state}" data-committed="{c}" data-lag="{lag}"><td>{name}</td><td class="protocol">{protocol}</td><td class="state">{state}</td><td>{c}</td><td class="lag">{lag}</td><td>{}</td></tr>"#,
            bar(g.lag.max(0) as u64, max),
            name = escape(&g.group),
            protocol = g.protocol,
            state = g.state,
            c = g.committed,
            lag = g.lag,
        );
    }
    out.push_str("</table>");
}

fn findings_section(findings: Option<&[FindingView]>, out: &mut String) {
    out.push_str("<h2>Doctor</h2>");
    match findings {
        None => {
            out.push_str("<p id=\"findings\">No findings source is installed in this broker.</p>")
        }
        Some([]) => out.push_str("<p id=\"findings\">The doctor finds nothing to report.</p>"),
        Some(list) => {
            out.push_str("<ul id=\"findings\">");
            for f in list {
                let _ = write!(
                    out,
                    r#"<li class="finding sev-{sev}" data-severity="{sev}" data-symptom="{sym}"><b>{sev}</b> {sym}: {}</li>"#,
                    escape(&f.message),
                    sev = f.severity.name(),
                    sym = escape(&f.symptom),
                );
            }
            out.push_str("</ul>");
        }
    }
}

/// The partition page (`/console/topics/<topic>/<partition>`).
pub(crate) fn partition(view: &PartitionView) -> String {
    let o = &view.offsets;
    let bytes: u64 = view.segments.iter().map(|s| s.size_bytes).sum();
    let mut body = format!(
        "<h1>{} / {}</h1><p id=\"summary\" data-segments=\"{}\">{} segments, {}; offsets {}..{} \
         (high watermark {}, last stable {}){}</p>",
        escape(&view.topic),
        view.partition,
        view.segments.len(),
        view.segments.len(),
        human_bytes(bytes),
        o.log_start,
        o.log_end,
        o.high_watermark,
        o.last_stable,
        match o.highest_remote {
            Some(r) => format!("; copied to remote storage up to {r}"),
            None => String::new(),
        }
    );
    if !view.problems.is_empty() {
        body.push_str("<ul class=\"problems\">");
        for p in &view.problems {
            let _ = write!(body, "<li>{}</li>", escape(p));
        }
        body.push_str("</ul>");
    }
    body.push_str("<h2>Segment timeline</h2>");
    body.push_str(
        "<p class=\"legend\">oldest left, newest right; width grows with the log of the size\
         <span style=\"background:#57a55a\"></span>local<span style=\"background:#3d8bcd\"></span>local and remote\
         <span style=\"background:#8e6cc4\"></span>remote only<span style=\"background:#c01c28\"></span>deleted next pass\
         <span style=\"background:#f5a623\"></span>expires by time<span style=\"background:#e5a50a\"></span>compaction rewrites</p>",
    );
    body.push_str(&timeline::svg(view));
    body.push_str("<h2>Retention</h2><ul id=\"retention\">");
    for n in &view.retention_notes {
        let _ = write!(body, "<li>{}</li>", escape(n));
    }
    body.push_str("</ul>");
    cleaner_section(view, &mut body);
    groups_section(view, &mut body);
    findings_section(view.findings.as_deref(), &mut body);
    let title = format!("{}-{}", view.topic, view.partition);
    layout(
        &title,
        &[
            (topic_href(&view.topic), view.topic.clone()),
            (
                partition_href(&view.topic, view.partition),
                view.partition.to_string(),
            ),
        ],
        &body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::model::{
        GroupLag, Offsets, PartitionRow, PartitionSummary, SegmentView, Severity, Tier,
    };

    fn view() -> PartitionView {
        PartitionView {
            topic: "<script>alert(1)</script>".into(),
            partition: 3,
            segments: vec![SegmentView {
                base_offset: 0,
                next_offset: 10,
                size_bytes: 100,
                first_timestamp: Some(0),
                last_timestamp: Some(1000),
                tier: Tier::Local,
                active: true,
                remote_state: None,
                fate: None,
            }],
            offsets: Offsets {
                log_end: 10,
                high_watermark: 10,
                last_stable: 10,
                ..Offsets::default()
            },
            groups: vec![GroupLag {
                group: "g\"><img>".into(),
                protocol: "consumer",
                state: "Stable",
                committed: 4,
                lag: 6,
            }],
            cleanup_policy: "delete".into(),
            cleaner: None,
            retention_notes: vec!["nothing <due>".into()],
            findings: Some(vec![FindingView {
                severity: Severity::Warning,
                symptom: "compaction_uses_cpu".into(),
                message: "ratio <0.01>".into(),
            }]),
            problems: vec![],
            now_ms: 0,
        }
    }

    #[test]
    fn the_partition_page_escapes_every_name_and_message() {
        let html = partition(&view());
        assert!(!html.contains("<script>"), "{html}");
        assert!(!html.contains("<img>"), "{html}");
        assert!(
            !html.contains("<due>") && !html.contains("<0.01>"),
            "{html}"
        );
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt; / 3"),
            "{html}"
        );
        assert!(
            html.contains(r#"data-group="g&quot;&gt;&lt;img&gt;" data-protocol="consumer" data-state="Stable" data-committed="4" data-lag="6""#),
            "{html}"
        );
        assert!(
            html.contains(r#"data-severity="warning" data-symptom="compaction_uses_cpu""#),
            "{html}"
        );
        assert!(
            !html.contains("<script") && !html.contains("src="),
            "no script, no external asset"
        );
    }

    #[test]
    fn the_cleaner_panel_shows_the_ratio_only_for_compacted_topics() {
        let mut v = view();
        assert!(partition(&v).contains(r#"data-compacted="false""#));
        v.cleaner = Some(CleanerView {
            clean_bytes: 300,
            dirty_bytes: 100,
            dirty_ratio: 0.25,
            min_ratio: 0.5,
            eligible: false,
            in_progress: false,
            first_dirty_offset: 7,
            first_uncleanable_offset: 9,
            since_last_clean_ms: None,
            bytes_reclaimed_total: 0,
            failure: Some("disk <full>".into()),
        });
        let html = partition(&v);
        assert!(
            html.contains(r#"data-dirty-ratio="0.2500" data-eligible="false""#),
            "{html}"
        );
        assert!(html.contains("offsets 7..9"), "{html}");
        assert!(html.contains("disk &lt;full&gt;"), "{html}");
    }

    #[test]
    fn lists_link_with_encoded_names() {
        let html = index(&[TopicRow {
            name: "a b".into(),
            partitions: 2,
            bytes: 10,
            segments: 3,
        }]);
        assert!(html.contains(r#"href="/console/topics/a%20b""#), "{html}");
        assert!(
            html.contains(r#"data-topic="a b" data-partitions="2""#),
            "{html}"
        );
        let html = topic(&TopicView {
            name: "t".into(),
            partitions: vec![
                PartitionRow {
                    partition: 0,
                    local: Some(PartitionSummary {
                        segments: 2,
                        bytes: 5,
                        log_start: 0,
                        log_end: 9,
                        high_watermark: 9,
                    }),
                },
                PartitionRow {
                    partition: 1,
                    local: None,
                },
            ],
        });
        assert!(html.contains(r#"href="/console/topics/t/0""#), "{html}");
        assert!(html.contains("not hosted by this broker"), "{html}");
    }
}
