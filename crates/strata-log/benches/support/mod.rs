#![allow(dead_code)] // each bench binary uses a subset
//! Wall-clock and process CPU time for the bench binaries. On a shared,
//! loaded machine CPU time (user + system) is the steadier measure of the
//! work done, so the tables report both.

use std::time::{Duration, Instant};

/// Process CPU time (user + system) so far.
pub fn cpu_now() -> Duration {
    // SAFETY: getrusage fills the zeroed struct we own; nothing is retained.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Both clocks at one moment.
#[derive(Clone, Copy)]
pub struct Stamp {
    wall: Instant,
    cpu: Duration,
}

/// Wall and CPU time of one measured run.
#[derive(Clone, Copy, Debug)]
pub struct Times {
    pub wall: Duration,
    pub cpu: Duration,
}

impl Times {
    pub const MAX: Times = Times {
        wall: Duration::MAX,
        cpu: Duration::MAX,
    };

    /// The better of two runs, per clock.
    pub fn min(self, other: Times) -> Times {
        Times {
            wall: self.wall.min(other.wall),
            cpu: self.cpu.min(other.cpu),
        }
    }
}

impl Stamp {
    pub fn now() -> Stamp {
        Stamp {
            wall: Instant::now(),
            cpu: cpu_now(),
        }
    }

    pub fn elapsed(&self) -> Times {
        Times {
            wall: self.wall.elapsed(),
            cpu: cpu_now().saturating_sub(self.cpu),
        }
    }
}

/// MiB per second.
pub fn mbps(bytes: u64, t: Duration) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / t.as_secs_f64()
}
