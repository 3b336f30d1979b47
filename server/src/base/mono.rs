//! A cheap monotonic clock for the per-command timings (INFO commandstats, SLOWLOG, the
//! script stats and latency samples).
//!
//! `std::time::Instant` stores a `timespec`; `now()` and `elapsed()` normalise seconds and
//! nanoseconds with checked arithmetic, about 400 instructions per command for a timing
//! taken around every command and every `redis.call` (callgrind, EVALSHA of Redisson's
//! acquire at -P 16). `Mono` keeps the same vDSO `clock_gettime(CLOCK_MONOTONIC)` reading as
//! one `u64` of nanoseconds, so a timing is one vDSO call and a subtraction.

use std::cell::Cell;
use std::time::Duration;

thread_local! {
    /// A reading taken by code that ends a command's work ([`Mono::now_ending`]), for the
    /// command's own timing ([`Mono::ended_since`]) to use instead of a second read.
    static ENDED: Cell<u64> = const { Cell::new(0) };
}

/// A reading of the monotonic clock, in nanoseconds since an unspecified start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mono(u64);

impl Mono {
    /// Now.
    #[inline]
    pub fn now() -> Mono {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC is always available on
        // Linux, so the call cannot fail.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        Mono(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }

    /// Now, also left for the running command's [`Mono::ended_since`]: a script's run
    /// reads the clock as it ends, and the EVALSHA's own timing, a few instructions later,
    /// uses the same reading (a vDSO `clock_gettime` is 20-25 ns on the build machine).
    #[inline]
    pub fn now_ending() -> Mono {
        let m = Mono::now();
        ENDED.with(|e| e.set(m.0));
        m
    }

    /// The end of a command that started at `started`: the reading [`Mono::now_ending`]
    /// left since then (taken, so it serves once), else now. A reading from before
    /// `started` belongs to an earlier command and is not used.
    #[inline]
    pub fn ended_since(started: Mono) -> Mono {
        let e = ENDED.with(|e| e.replace(0));
        if e >= started.0 {
            Mono(e)
        } else {
            Mono::now()
        }
    }

    /// Milliseconds on this clock (for spans measured in ms; never 0 after the first ms).
    #[inline]
    pub fn ms(self) -> i64 {
        (self.0 / 1_000_000) as i64
    }

    /// Nanoseconds since `self` (0 if `self` is later, which a monotonic clock never is).
    #[inline]
    pub fn elapsed_ns(self) -> u64 {
        Mono::now().0.saturating_sub(self.0)
    }

    /// Time since `self`.
    #[inline]
    pub fn elapsed(self) -> Duration {
        Duration::from_nanos(self.elapsed_ns())
    }

    /// Nanoseconds from `earlier` to `self`, 0 if `earlier` is later.
    #[inline]
    pub fn ns_since(self, earlier: Mono) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// Time from `earlier` to `self` (zero if `earlier` is later).
    #[inline]
    pub fn since(self, earlier: Mono) -> Duration {
        Duration::from_nanos(self.ns_since(earlier))
    }
}

#[cfg(test)]
mod tests {
    use super::Mono;

    #[test]
    fn agrees_with_instant() {
        let (m, i) = (Mono::now(), std::time::Instant::now());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (dm, di) = (m.elapsed(), i.elapsed());
        assert!(dm >= std::time::Duration::from_millis(20), "{dm:?}");
        // Both read CLOCK_MONOTONIC: the two spans differ by the time between the reads.
        let diff = dm.abs_diff(di);
        assert!(
            diff < std::time::Duration::from_millis(5),
            "{dm:?} vs {di:?}"
        );
        let later = Mono::now();
        assert!(later >= m && later.ns_since(m) > 0 && m.ns_since(later) == 0);
    }

    #[test]
    fn an_ending_reading_serves_the_command_that_started_before_it_once() {
        let started = Mono::now();
        let end = Mono::now_ending();
        assert_eq!(Mono::ended_since(started), end);
        // Taken: the next command reads the clock itself.
        let next = Mono::now();
        assert!(Mono::ended_since(next) >= next);
        // A reading left by a run that no command timed is older than the next command's
        // start, and is not used for it.
        let stale = Mono::now_ending();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let later = Mono::now();
        let got = Mono::ended_since(later);
        assert!(got >= later && got > stale, "{got:?} {stale:?} {later:?}");
    }
}
