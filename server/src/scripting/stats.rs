//! Per-script statistics (`INFO scriptstats`, `/metrics`) and the line profiler's figures
//! (`TUMBLER.PROFILE`, `lua-profiler`). docs/profiling.md describes both for users.
//!
//! # Cost
//!
//! Every cached script owns one boxed [`ScriptStats`], created when it is compiled. EVAL
//! and EVALSHA already look the script up in the cache to run it; they hand the box's
//! address to the run (no second lookup, no hashing of the SHA, no lock: the whole script
//! cache lives under the keyspace lock the script holds anyway), and the run adds its
//! figures once, at its end: a few plain integer additions and one histogram slot. The run
//! already reads the clock when it starts (`RunCtx::started`), so timing a script costs one
//! more clock read. Counting `redis.call` is one increment on the run context.
//!
//! The profiler costs nothing while `lua-profiler` is off: the Lua line hook is only
//! installed while it is on, and the command path checks one null pointer.

use std::fmt::Write;
use std::time::Duration;

/// Run times of one script in nanoseconds, for p50/p99: an HDR histogram (as Redis'
/// latencystats) with 2 significant figures, so a value is kept within 1 %, from 1 ns to
/// 2^40 ns (about 18 minutes); longer runs are counted at the top.
///
/// Memory: 4,352 `u32` counters (128 per power of two above 256 ns), 17 KiB per cached
/// script, allocated once when the script is compiled. Recording is
/// `saturating_record`: an index computation and an increment, no allocation and no error
/// (the histogram never resizes; counters saturate).
pub struct Histogram(hdrhistogram::Histogram<u32>);

/// The largest run time kept apart from longer ones (2^40 itself would take one more
/// power of two of counters).
const MAX_NS: u64 = (1 << 40) - 1;

impl Default for Histogram {
    fn default() -> Self {
        Histogram(hdrhistogram::Histogram::new_with_bounds(1, MAX_NS, 2).expect("valid bounds"))
    }
}

impl Histogram {
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns);
    }

    /// The `p`-th percentile (0-100) in microseconds, 0 when empty: the middle of the
    /// range of values the histogram cannot tell apart from it.
    pub fn percentile_us(&self, p: f64) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        self.0.median_equivalent(self.0.value_at_percentile(p)) as f64 / 1000.0
    }
}

/// One cached script's figures since it was compiled, CONFIG RESETSTAT or SCRIPT FLUSH.
#[derive(Default)]
pub struct ScriptStats {
    pub calls: u64,
    pub ns: u64,
    pub redis_calls: u64,
    pub failed_calls: u64,
    pub hist: Histogram,
    /// The profiler's figures, per path: `[lua, native]`. None until profiled.
    pub profile: [Option<Box<Profile>>; 2],
}

impl ScriptStats {
    /// Adds one finished run.
    #[inline]
    pub fn record(&mut self, took: Duration, redis_calls: u64, failed: bool) {
        let ns = took.as_nanos() as u64;
        self.calls += 1;
        self.ns += ns;
        self.redis_calls += redis_calls;
        self.failed_calls += failed as u64;
        self.hist.record(ns);
    }

    /// Forgets the counters (CONFIG RESETSTAT); profiles have their own reset.
    pub fn reset(&mut self) {
        let profile = std::mem::take(&mut self.profile);
        *self = ScriptStats {
            profile,
            ..ScriptStats::default()
        };
    }

    /// The `INFO scriptstats` line of script `sha` (without CRLF).
    pub fn info_line(&self, sha: &str, out: &mut String) {
        let usec = self.ns / 1000;
        let per_call = if self.calls == 0 {
            0.0
        } else {
            self.ns as f64 / 1000.0 / self.calls as f64
        };
        let _ = write!(
            out,
            "scriptstat_{sha}:calls={},usec={usec},usec_per_call={per_call:.2},p50={:.3},p99={:.3},redis_calls={},failed_calls={}",
            self.calls,
            self.hist.percentile_us(50.0),
            self.hist.percentile_us(99.0),
            self.redis_calls,
            self.failed_calls,
        );
    }
}

/// What one script's figures look like to INFO and `/metrics`.
#[derive(Debug, Clone)]
pub struct Row {
    pub sha: String,
    pub calls: u64,
    pub usec: u64,
    pub redis_calls: u64,
    pub failed_calls: u64,
    pub p50_us: f64,
    pub p99_us: f64,
}

impl ScriptStats {
    pub fn row(&self, sha: &str) -> Row {
        Row {
            sha: sha.to_string(),
            calls: self.calls,
            usec: self.ns / 1000,
            redis_calls: self.redis_calls,
            failed_calls: self.failed_calls,
            p50_us: self.hist.percentile_us(50.0),
            p99_us: self.hist.percentile_us(99.0),
        }
    }
}

/// The profiler's figures of one script on one path.
#[derive(Default, Debug)]
pub struct Profile {
    pub calls: u64,
    /// Whole runs, from the run context's start to the script's return.
    pub ns: u64,
    /// Inside commands called with redis.call/pcall.
    pub cmd_ns: u64,
    /// Indexed by source line (1-based; slot 0 unused).
    pub lines: Vec<LineProfile>,
}

#[derive(Default, Debug, Clone, Copy)]
pub struct LineProfile {
    pub hits: u64,
    /// Time from this line's start to the next line event of the script (Lua path), or the
    /// time of the commands it called (native path, which has no per-line clock).
    pub ns: u64,
    pub cmd_ns: u64,
}

impl Profile {
    #[inline]
    pub fn line(&mut self, line: u32) -> &mut LineProfile {
        let i = line as usize;
        if i >= self.lines.len() {
            self.lines.resize(i + 1, LineProfile::default());
        }
        &mut self.lines[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_monotonic_and_within_one_percent() {
        let h = Histogram::default();
        let mut last = 0;
        for ns in (0..200_000u64).chain([1 << 30, 1 << 39, MAX_NS]) {
            let v = h.0.median_equivalent(ns);
            assert!(v >= last, "{ns}");
            last = v;
            assert!(
                v.abs_diff(ns) as f64 <= ns as f64 / 100.0 + 0.5,
                "{ns} -> {v}"
            );
        }
        // Longer runs are counted at the top, not lost and not a panic.
        let mut h = Histogram::default();
        for ns in [1 << 40, 1 << 41, u64::MAX] {
            h.record(ns);
        }
        assert_eq!(h.0.len(), 3);
        let top = h.0.median_equivalent(MAX_NS) as f64 / 1000.0;
        assert_eq!(h.percentile_us(50.0), top);
        assert_eq!(h.percentile_us(100.0), top);
    }

    #[test]
    fn memory_is_as_documented() {
        assert_eq!(Histogram::default().0.distinct_values(), 4352);
    }

    #[test]
    fn percentiles() {
        let mut h = Histogram::default();
        assert_eq!(h.percentile_us(50.0), 0.0);
        for _ in 0..99 {
            h.record(1_000);
        }
        h.record(1_000_000);
        assert!((h.percentile_us(50.0) - 1.0).abs() < 0.07);
        assert!((h.percentile_us(99.0) - 1.0).abs() < 0.07);
        assert!((h.percentile_us(100.0) - 1000.0).abs() < 63.0);
    }
}
