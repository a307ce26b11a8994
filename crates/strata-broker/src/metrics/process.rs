//! Process metrics as the Prometheus client libraries name them
//! (`process_cpu_seconds_total`, `process_resident_memory_bytes`,
//! `process_open_fds`, `process_max_fds`, `process_start_time_seconds`),
//! read from `/proc/self` at scrape time. Outside Linux, or when a file
//! cannot be read, the metric is left out.

use super::family::{Family, Kind, Labels, Value};

/// CPU time (user + system, in clock ticks), resident pages and start
/// time (ticks after boot) from the text of `/proc/self/stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub cpu_ticks: u64,
    pub rss_pages: u64,
    pub start_ticks: u64,
}

/// Parse `/proc/<pid>/stat`. The command name (field 2) may hold spaces
/// and parentheses, so fields are counted after its last `)`.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    // After ")": field 3 (state) is index 0, so field N is index N - 3.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let num = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        cpu_ticks: num(14)? + num(15)?,
        start_ticks: num(22)?,
        rss_pages: num(24)?,
    })
}

/// The soft limit of `Max open files` in `/proc/self/limits`.
pub(crate) fn parse_max_fds(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Seconds since the epoch at boot, from `/proc/stat`'s `btime`.
fn boot_time() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

fn sysconf(name: libc::c_int) -> Option<u64> {
    // SAFETY: sysconf reads a constant of the running system; no memory is passed.
    let v = unsafe { libc::sysconf(name) };
    u64::try_from(v).ok().filter(|v| *v > 0)
}

pub(crate) fn families() -> Vec<Family> {
    let mut out = Vec::new();
    let mut one = |name, help, kind, value| {
        let mut f = Family::new(name, help, kind);
        f.push(Labels::new(), value);
        out.push(f);
    };
    let ticks = sysconf(libc::_SC_CLK_TCK).unwrap_or(100);
    if let Some(stat) = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|t| parse_stat(&t))
    {
        one(
            "process_cpu_seconds",
            "User and system CPU time of the broker process, seconds.",
            Kind::Counter,
            Value::CounterFloat(stat.cpu_ticks as f64 / ticks as f64),
        );
        if let Some(page) = sysconf(libc::_SC_PAGESIZE) {
            one(
                "process_resident_memory_bytes",
                "Resident memory of the broker process, bytes.",
                Kind::Gauge,
                Value::Int(i64::try_from(stat.rss_pages * page).unwrap_or(i64::MAX)),
            );
        }
        if let Some(boot) = boot_time() {
            one(
                "process_start_time_seconds",
                "Start of the broker process, seconds since the epoch.",
                Kind::Gauge,
                Value::Float(boot as f64 + stat.start_ticks as f64 / ticks as f64),
            );
        }
    }
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        one(
            "process_open_fds",
            "Open file descriptors of the broker process.",
            Kind::Gauge,
            Value::Int(dir.count() as i64),
        );
    }
    if let Some(max) = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| parse_max_fds(&t))
    {
        one(
            "process_max_fds",
            "Limit of open file descriptors of the broker process.",
            Kind::Gauge,
            Value::Int(i64::try_from(max).unwrap_or(i64::MAX)),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let line = "4242 (strata (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    250 50 0 0 20 0 12 0 987654 1000000 2048 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                cpu_ticks: 300,
                rss_pages: 2048,
                start_ticks: 987654
            })
        );
        assert_eq!(parse_stat("no parenthesis"), None);
    }

    #[test]
    fn max_fds_is_the_soft_limit() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1024                 524288               files\n";
        assert_eq!(parse_max_fds(limits), Some(1024));
    }

    #[test]
    fn this_process_has_cpu_memory_and_fds() {
        let names: Vec<_> = families().iter().map(|f| f.name).collect();
        for n in [
            "process_cpu_seconds",
            "process_resident_memory_bytes",
            "process_open_fds",
        ] {
            assert!(names.contains(&n), "{n} missing from {names:?}");
        }
    }
}
