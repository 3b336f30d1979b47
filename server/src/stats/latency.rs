//! Redis 7's latency records: the per-command latency histograms (INFO latencystats,
//! LATENCY HISTOGRAM) and the latency monitor (`latency-monitor-threshold`, LATENCY
//! LATEST / HISTORY / RESET / DOCTOR / GRAPH). What clients see of them is in
//! latency_report.rs.
//!
//! **Histograms.** Redis keeps an hdr_histogram per command (1 ns to 1 s, 2 significant
//! digits) and records each call's duration in whole microseconds, times 1000. The figures
//! it prints (percentiles as `hdr_value_at_percentile`, LATENCY HISTOGRAM as a log-2
//! iteration from 1024 ns) depend only on which hdr bucket each value falls in, so
//! [`Histogram`] keeps exactly that bucket layout (3,072 counters) as relaxed atomics:
//! recording is an index computation and one `fetch_add`, with no lock, from any thread.
//! The `hdrhistogram` crate has the same layout but records through `&mut self`, which
//! would need a lock per command on the hot path. A histogram is allocated the first time
//! its command runs (24 KiB, as Redis' ~40 KiB), never for commands nobody calls.
//!
//! **Monitor.** An event (`command`, `fast-command`, `expire-cycle`) whose duration in ms
//! reaches `latency-monitor-threshold` (0 = off) is added to that event's series: 160
//! samples, one per second (a later sample in the same second keeps the larger latency),
//! plus the all-time maximum, as Redis' latency.c keeps them. Samples are rare (only over
//! the threshold), so the series sit behind a mutex; the per-command check is one atomic
//! load and a compare.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;

// ------------------------------------------------------------------ histogram

/// hdr_histogram's layout for Redis' parameters (lowest 1, highest 1e9, 2 significant
/// digits): unit magnitude 0, 256 sub-buckets (half: 128), 23 buckets.
const SUB_HALF_MAGNITUDE: u32 = 7;
const SUB_HALF: i64 = 1 << SUB_HALF_MAGNITUDE;
const SUB_COUNT: i64 = 2 * SUB_HALF;
const COUNTS_LEN: usize = 3072;
/// Redis clamps recorded values to [1 ns, 1 s].
const MAX_NS: u64 = 1_000_000_000;

fn bucket_of(v: i64) -> i64 {
    let pow2ceiling = 64 - (v | (SUB_COUNT - 1)).leading_zeros() as i64;
    pow2ceiling - (SUB_HALF_MAGNITUDE as i64 + 1)
}

fn index_of(v: i64) -> usize {
    let b = bucket_of(v);
    let sub = v >> b;
    (((b + 1) << SUB_HALF_MAGNITUDE) + (sub - SUB_HALF)) as usize
}

fn value_at_index(idx: usize) -> i64 {
    let idx = idx as i64;
    let mut b = (idx >> SUB_HALF_MAGNITUDE) - 1;
    let mut sub = (idx & (SUB_HALF - 1)) + SUB_HALF;
    if b < 0 {
        sub -= SUB_HALF;
        b = 0;
    }
    sub << b
}

fn lowest_equivalent(v: i64) -> i64 {
    let b = bucket_of(v);
    (v >> b) << b
}

fn highest_equivalent(v: i64) -> i64 {
    let b = bucket_of(v);
    let sub = v >> b;
    let size = if sub >= SUB_COUNT {
        1 << (b + 1)
    } else {
        1 << b
    };
    lowest_equivalent(v) + size - 1
}

/// One command's latency distribution, in hdr_histogram's buckets (see the module docs).
pub struct Histogram {
    counts: Box<[AtomicU64]>,
}

impl Histogram {
    fn new() -> Histogram {
        Histogram {
            counts: (0..COUNTS_LEN).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Records a call of `us` whole microseconds, as Redis records `duration*1000` ns.
    #[inline]
    pub fn record(&self, us: u64) {
        let ns = us.saturating_mul(1000).clamp(1, MAX_NS) as i64;
        self.counts[index_of(ns)].fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> Vec<u64> {
        self.counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }

    pub(crate) fn reset(&self) {
        for c in self.counts.iter() {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// hdr_value_at_percentile, in ns.
pub(crate) fn value_at_percentile(counts: &[u64], total: u64, p: f64) -> i64 {
    let req = p.min(100.0);
    let at = (((req / 100.0) * total as f64) + 0.5) as u64;
    let at = at.max(1);
    let mut seen = 0;
    let mut v = 0;
    for (i, c) in counts.iter().enumerate() {
        seen += c;
        if seen >= at {
            v = value_at_index(i);
            break;
        }
    }
    if p == 0.0 {
        lowest_equivalent(v)
    } else {
        highest_equivalent(v)
    }
}

/// The `(usec, cumulative calls)` pairs of LATENCY HISTOGRAM: hdr's log iterator from
/// 1024 ns, base 2, reporting each step's highest equivalent value in µs, only for steps
/// that added calls (Redis' fillCommandCDF).
pub(crate) fn cdf(counts: &[u64], total: u64) -> Vec<(i64, u64)> {
    let mut out = Vec::new();
    let mut level: i64 = 1024;
    let mut level_low = lowest_equivalent(level);
    let mut idx: isize = -1;
    let mut value: i64 = 0;
    let mut highest: i64 = 0;
    let mut cumulative: u64 = 0;
    let mut previous: u64 = 0;
    loop {
        let more = cumulative < total
            || ((idx + 1) < COUNTS_LEN as isize && value_at_index((idx + 1) as usize) > level_low);
        if !more {
            break;
        }
        // Advance to the first bucket at or past the reporting level.
        loop {
            if idx >= 0 && value >= level_low {
                level *= 2;
                level_low = lowest_equivalent(level);
                break;
            }
            if (idx + 1) as usize >= COUNTS_LEN {
                break;
            }
            idx += 1;
            cumulative += counts[idx as usize];
            value = value_at_index(idx as usize);
            highest = highest_equivalent(value);
        }
        if cumulative > previous {
            out.push((highest / 1000, cumulative));
        }
        previous = cumulative;
        if (idx + 1) as usize >= COUNTS_LEN && cumulative >= total {
            break;
        }
    }
    out
}

/// A lazily allocated histogram slot of one command.
#[derive(Default)]
pub struct HistSlot(OnceLock<Histogram>);

impl HistSlot {
    #[inline]
    pub fn record(&self, us: u64) {
        self.0.get_or_init(Histogram::new).record(us);
    }

    /// The counts and their total, if any call was recorded since the last reset.
    pub(crate) fn counts(&self) -> Option<(Vec<u64>, u64)> {
        let h = self.0.get()?;
        let counts = h.snapshot();
        let total: u64 = counts.iter().sum();
        (total > 0).then_some((counts, total))
    }

    pub fn reset(&self) {
        if let Some(h) = self.0.get() {
            h.reset();
        }
    }
}

/// Characters INFO cannot carry in a field name, replaced by '_' (Redis' getSafeInfoString).
pub fn safe_info_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if matches!(c, '#' | ':' | '\n' | '\r') {
                '_'
            } else {
                c
            }
        })
        .collect()
}

// ------------------------------------------------------------------ monitor

/// Samples kept per event (Redis' LATENCY_TS_LEN).
pub(crate) const TS_LEN: usize = 160;

#[derive(Clone, Copy, Default)]
pub(crate) struct Sample {
    /// Unix seconds; 0 = empty.
    pub(crate) time: i64,
    pub(crate) latency: u64,
}

pub(crate) struct Series {
    pub(crate) idx: usize,
    pub(crate) max: u64,
    pub(crate) samples: Box<[Sample; TS_LEN]>,
}

impl Series {
    pub(crate) fn ordered(&self) -> impl Iterator<Item = &Sample> {
        (0..TS_LEN)
            .map(move |j| &self.samples[(self.idx + j) % TS_LEN])
            .filter(|s| s.time != 0)
    }
}

/// The latency monitor's events, in the order they first occurred.
#[derive(Default)]
pub struct Monitor {
    /// `latency-monitor-threshold` in ms; 0 turns the monitor off.
    pub threshold_ms: AtomicU64,
    pub(crate) events: Mutex<Vec<(String, Series)>>,
}

pub(crate) fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Monitor {
    /// Redis' latencyAddSampleIfNeeded: adds `ms` to `event` if the monitor is on and `ms`
    /// reaches the threshold.
    #[inline]
    pub fn add_if_needed(&self, event: &str, ms: u64) {
        let t = self.threshold_ms.load(Ordering::Relaxed);
        if t > 0 && ms >= t {
            self.add(event, ms);
        }
    }

    fn add(&self, event: &str, ms: u64) {
        let now = unix_now();
        let mut evs = self.events.lock();
        let i = match evs.iter().position(|(n, _)| n == event) {
            Some(i) => i,
            None => {
                evs.push((
                    event.to_string(),
                    Series {
                        idx: 0,
                        max: 0,
                        samples: Box::new([Sample::default(); TS_LEN]),
                    },
                ));
                evs.len() - 1
            }
        };
        let ts = &mut evs[i].1;
        ts.max = ts.max.max(ms);
        let prev = (ts.idx + TS_LEN - 1) % TS_LEN;
        if ts.samples[prev].time == now {
            ts.samples[prev].latency = ts.samples[prev].latency.max(ms);
            return;
        }
        ts.samples[ts.idx] = Sample {
            time: now,
            latency: ms,
        };
        ts.idx = (ts.idx + 1) % TS_LEN;
    }

    /// Deletes `event` (case-insensitively), or every event; returns how many.
    pub(crate) fn reset(&self, event: Option<&[u8]>) -> i64 {
        let mut evs = self.events.lock();
        let before = evs.len();
        evs.retain(|(n, _)| event.is_some_and(|e| !n.as_bytes().eq_ignore_ascii_case(e)));
        (before - evs.len()) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::percentiles::{fmt_percentile, normalize_percentiles, parse_percentiles};

    #[test]
    fn hdr_layout_matches_redis_figures() {
        // 1 µs is recorded as 1000 ns, in the 512..1023 bucket of step 4.
        assert_eq!(highest_equivalent(1000), 1003);
        assert_eq!(highest_equivalent(1), 1);
        assert_eq!(highest_equivalent(1024), 1031);
        assert_eq!(value_at_index(index_of(1000)), 1000);
        assert_eq!(
            value_at_index(index_of(1_000_000_000)),
            lowest_equivalent(1_000_000_000)
        );
        assert!(index_of(1_000_000_000) < COUNTS_LEN);
    }

    #[test]
    fn cdf_and_percentiles_as_redis_prints_them() {
        let h = Histogram::new();
        for us in [0, 1, 1, 3, 100, 2_000_000] {
            h.record(us);
        }
        let counts = h.snapshot();
        let total = 6;
        assert_eq!(
            cdf(&counts, total),
            vec![(1, 3), (4, 4), (132, 5), (1073741, 6)]
        );
        assert_eq!(value_at_percentile(&counts, total, 50.0), 1003);
        assert_eq!(value_at_percentile(&counts, total, 0.0), 1);
        assert_eq!(fmt_percentile(99.9), "99.9");
        assert_eq!(fmt_percentile(50.0), "50");
        assert_eq!(normalize_percentiles("0.0 50.0 100.0").unwrap(), "0 50 100");
        assert!(parse_percentiles("10.0 50.0 a").is_err());
        assert!(parse_percentiles("101").is_err());
    }
}
