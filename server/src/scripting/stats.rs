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

/// Sub-buckets per power of two in [`Histogram`]: values are kept within 1/16 (6.25 %).
const SUB: u64 = 16;
const SUB_BITS: u32 = 4;
/// Powers of two kept: up to 2^40 ns (about 18 minutes); longer runs go to the last slot.
const MAX_EXP: u32 = 40;
const SLOTS: usize = (SUB + (MAX_EXP - SUB_BITS + 1) as u64 * SUB) as usize;

/// A log-linear histogram of run times in nanoseconds, for p50/p99. Redis' latencystats
/// use an HDR histogram with comparable precision; this one is a fixed array so recording
/// is an index computation and an increment, with no allocation.
pub struct Histogram {
    counts: Box<[u32; SLOTS]>,
    total: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: Box::new([0; SLOTS]),
            total: 0,
        }
    }
}

fn slot(ns: u64) -> usize {
    if ns < SUB {
        return ns as usize;
    }
    let exp = (63 - ns.leading_zeros()).min(MAX_EXP);
    let mant = if exp == MAX_EXP && ns >> MAX_EXP >= 2 {
        SUB - 1
    } else {
        (ns >> (exp - SUB_BITS)) & (SUB - 1)
    };
    (SUB + (exp - SUB_BITS) as u64 * SUB + mant) as usize
}

/// The middle of slot `i`'s range, in nanoseconds.
fn slot_value(i: usize) -> f64 {
    let i = i as u64;
    if i < SUB {
        return i as f64;
    }
    let exp = (i - SUB) / SUB + SUB_BITS as u64;
    let mant = (i - SUB) % SUB;
    let width = 1u64 << (exp - SUB_BITS as u64);
    ((SUB + mant) * width) as f64 + (width as f64 - 1.0) / 2.0
}

impl Histogram {
    pub fn record(&mut self, ns: u64) {
        let c = &mut self.counts[slot(ns)];
        *c = c.saturating_add(1);
        self.total += 1;
    }

    /// The `p`-th percentile (0-100) in microseconds, 0 when empty.
    pub fn percentile_us(&self, p: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let rank = ((p / 100.0) * self.total as f64).ceil().max(1.0) as u64;
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen >= rank {
                return slot_value(i) / 1000.0;
            }
        }
        slot_value(SLOTS - 1) / 1000.0
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
    fn slots_are_monotonic_and_close() {
        let mut last = 0;
        for ns in (0..200_000u64).chain([1 << 30, 1 << 39, (1 << 40) - 1]) {
            let s = slot(ns);
            assert!(s >= last, "{ns}");
            last = s;
            let v = slot_value(s);
            assert!(
                (v - ns as f64).abs() <= ns as f64 / 16.0 + 0.5,
                "{ns} -> {v}"
            );
        }
        assert_eq!(slot(u64::MAX), SLOTS - 1);
        assert_eq!(slot(1 << 41), SLOTS - 1);
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
