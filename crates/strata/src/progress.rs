//! Progress of long CLI work (`log verify`, `log dump`, `log compact`,
//! `tier fsck`) on stderr, so that stdout (reports, JSON, dump text) stays
//! clean.
//!
//! On a terminal an `indicatif` bar; otherwise a plain line at most every
//! [`REPORT_INTERVAL`] and a final one
//! (`progress: verify 120/1000 files, 1.2 GiB/10.0 GiB, ETA 0:42`);
//! nothing with `--no-progress`. What the line says (ETA, byte units) is
//! `strata_log::progress`'s pure formatter, shared with the broker's
//! recovery lines; [`mode`] is the one decision of how to draw.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use strata_log::progress::{describe, report_due, ProgressSnapshot, REPORT_INTERVAL};

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `--no-progress`: nothing.
    Off,
    /// stderr is a terminal: a bar.
    Bar,
    /// stderr is a file or pipe: plain lines.
    Lines,
}

/// The mode for a command: off when asked, a bar on a terminal, else lines.
pub fn mode(no_progress: bool, stderr_is_terminal: bool) -> Mode {
    match (no_progress, stderr_is_terminal) {
        (true, _) => Mode::Off,
        (false, true) => Mode::Bar,
        (false, false) => Mode::Lines,
    }
}

/// Reports one command's progress; finish it with [`Progress::finish`].
pub struct Progress {
    what: &'static str,
    unit: &'static str,
    mode: Mode,
    snapshot: ProgressSnapshot,
    start: Instant,
    last_line: Option<Duration>,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Progress of `what` (`verify`) over `units_total` `unit`s (`files`)
    /// holding `bytes_total` bytes (0 when unknown).
    pub fn new(
        what: &'static str,
        unit: &'static str,
        units_total: u64,
        bytes_total: u64,
        no_progress: bool,
    ) -> Progress {
        let mode = mode(no_progress, std::io::stderr().is_terminal());
        let bar = (mode == Mode::Bar).then(|| {
            let (len, template) = if bytes_total > 0 {
                (
                    bytes_total,
                    "{prefix} [{bar:30}] {bytes}/{total_bytes} {msg} ETA {eta}",
                )
            } else {
                (
                    units_total,
                    "{prefix} [{bar:30}] {pos}/{len} {msg} ETA {eta}",
                )
            };
            let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(what);
            bar
        });
        let mut p = Progress {
            what,
            unit,
            mode,
            snapshot: ProgressSnapshot {
                units_total,
                bytes_total,
                ..ProgressSnapshot::default()
            },
            start: Instant::now(),
            last_line: None,
            bar,
        };
        p.redraw();
        p
    }

    /// One more unit done, of `bytes` bytes.
    pub fn advance(&mut self, bytes: u64) {
        self.snapshot.units_done += 1;
        self.snapshot.bytes_done += bytes;
        self.redraw();
    }

    fn redraw(&mut self) {
        match self.mode {
            Mode::Off => {}
            Mode::Bar => {
                if let Some(bar) = &self.bar {
                    let pos = if self.snapshot.bytes_total > 0 {
                        self.snapshot.bytes_done
                    } else {
                        self.snapshot.units_done
                    };
                    bar.set_position(pos);
                    bar.set_message(format!(
                        "{}/{} {}",
                        self.snapshot.units_done, self.snapshot.units_total, self.unit
                    ));
                }
            }
            Mode::Lines => {
                let now = self.start.elapsed();
                if report_due(self.last_line, now, REPORT_INTERVAL) {
                    self.last_line = Some(now);
                    self.line(now);
                }
            }
        }
    }

    fn line(&self, elapsed: Duration) {
        let text = describe(self.what, self.unit, &self.snapshot, elapsed);
        // A closed stderr must not stop the work.
        let _ = writeln!(std::io::stderr(), "progress: {text}");
    }

    /// The final line (or the bar, finished and left on screen).
    pub fn finish(self) {
        match self.mode {
            Mode::Off => {}
            Mode::Bar => {
                if let Some(bar) = &self.bar {
                    bar.finish();
                    // Leave the bar on its own line, above what follows.
                    if !bar.is_hidden() {
                        let _ = writeln!(std::io::stderr());
                    }
                }
            }
            Mode::Lines => self.line(self.start.elapsed()),
        }
    }
}

/// The size of a file, 0 when it cannot be read (the work itself reports
/// the error).
pub fn file_bytes(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// The bytes of the files directly inside `dir`.
pub fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_then_the_terminal_decides() {
        assert_eq!(mode(true, true), Mode::Off);
        assert_eq!(mode(true, false), Mode::Off);
        assert_eq!(mode(false, true), Mode::Bar);
        assert_eq!(mode(false, false), Mode::Lines);
    }

    #[test]
    fn directory_bytes_add_up_the_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), [0u8; 10]).unwrap();
        std::fs::write(dir.path().join("b"), [0u8; 5]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        assert_eq!(dir_bytes(dir.path()), 15);
        assert_eq!(file_bytes(&dir.path().join("a")), 10);
        assert_eq!(file_bytes(&dir.path().join("missing")), 0);
    }
}
