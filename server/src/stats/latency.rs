//! Redis 7's latency surface: the per-command latency histograms (INFO latencystats,
//! LATENCY HISTOGRAM) and the latency monitor (`latency-monitor-threshold`, LATENCY
//! LATEST / HISTORY / RESET / DOCTOR / GRAPH).
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

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use bytes::Bytes;
use parking_lot::Mutex;

use lockcore::commands;
use lockcore::engine::spec::{CommandSpec, Exec};
use lockcore::{error, Reply};

use crate::stats::cmdstats::CommandStats;

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

    fn reset(&self) {
        for c in self.counts.iter() {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// hdr_value_at_percentile, in ns.
fn value_at_percentile(counts: &[u64], total: u64, p: f64) -> i64 {
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
fn cdf(counts: &[u64], total: u64) -> Vec<(i64, u64)> {
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
    fn counts(&self) -> Option<(Vec<u64>, u64)> {
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

/// The `# Latencystats` section body: one line per command with a histogram, when
/// `latency-tracking` is on.
pub fn info_latencystats(stats: &CommandStats, out: &mut String) {
    out.push_str("# Latencystats\r\n");
    if !stats.tracking.load(Ordering::Relaxed) {
        return;
    }
    let ps = stats.percentiles.lock().clone();
    for (spec, slot) in stats.in_order() {
        let Some((counts, total)) = slot.hist.counts() else {
            continue;
        };
        let _ = write!(
            out,
            "latency_percentiles_usec_{}:",
            safe_info_name(&spec.full_name())
        );
        for (i, p) in ps.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let v = value_at_percentile(&counts, total, *p);
            let _ = write!(
                out,
                "p{}={:.3}",
                crate::config::percentiles::fmt_percentile(*p),
                v as f64 / 1000.0
            );
        }
        out.push_str("\r\n");
    }
}

// ------------------------------------------------------------------ monitor

/// Samples kept per event (Redis' LATENCY_TS_LEN).
const TS_LEN: usize = 160;

#[derive(Clone, Copy, Default)]
struct Sample {
    /// Unix seconds; 0 = empty.
    time: i64,
    latency: u64,
}

struct Series {
    idx: usize,
    max: u64,
    samples: Box<[Sample; TS_LEN]>,
}

impl Series {
    fn ordered(&self) -> impl Iterator<Item = &Sample> {
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
    events: Mutex<Vec<(String, Series)>>,
}

fn unix_now() -> i64 {
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
    fn reset(&self, event: Option<&[u8]>) -> i64 {
        let mut evs = self.events.lock();
        let before = evs.len();
        evs.retain(|(n, _)| event.is_some_and(|e| !n.as_bytes().eq_ignore_ascii_case(e)));
        (before - evs.len()) as i64
    }
}

// ------------------------------------------------------------------ LATENCY

/// LATENCY DOCTOR | GRAPH event | HELP | HISTOGRAM [command ...] | HISTORY event | LATEST |
/// RESET [event ...]
pub fn command(
    stats: &CommandStats,
    config_slowlog_us: i64,
    spec: &CommandSpec,
    a: &[Bytes],
) -> Reply {
    let mon = &stats.monitor;
    match spec.name {
        "history" => {
            let evs = mon.events.lock();
            let Some((_, ts)) = evs.iter().find(|(n, _)| n.as_bytes() == &a[2][..]) else {
                return Reply::Array(vec![]);
            };
            Reply::Array(
                ts.ordered()
                    .map(|s| Reply::Array(vec![Reply::Int(s.time), Reply::Int(s.latency as i64)]))
                    .collect(),
            )
        }
        "latest" => {
            let evs = mon.events.lock();
            Reply::Array(
                evs.iter()
                    .map(|(n, ts)| {
                        let last = ts.samples[(ts.idx + TS_LEN - 1) % TS_LEN];
                        Reply::Array(vec![
                            Reply::bulk(Bytes::from(n.clone())),
                            Reply::Int(last.time),
                            Reply::Int(last.latency as i64),
                            Reply::Int(ts.max as i64),
                        ])
                    })
                    .collect(),
            )
        }
        "reset" => {
            if a.len() == 2 {
                Reply::Int(mon.reset(None))
            } else {
                Reply::Int(a[2..].iter().map(|e| mon.reset(Some(e))).sum())
            }
        }
        "doctor" => Reply::Verbatim("txt", Bytes::from(doctor(stats, config_slowlog_us))),
        "graph" => {
            let evs = mon.events.lock();
            match evs.iter().find(|(n, _)| n.as_bytes() == &a[2][..]) {
                Some((n, ts)) => Reply::Verbatim("txt", Bytes::from(graph(n, ts))),
                None => Reply::err(format!(
                    "ERR No samples available for event '{}'",
                    String::from_utf8_lossy(&a[2])
                )),
            }
        }
        "histogram" => histogram(stats, &a[2..]),
        "help" => Reply::Array(
            [
                "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "DOCTOR",
                "    Return a human readable latency analysis report.",
                "GRAPH <event>",
                "    Return an ASCII latency graph for the <event> class.",
                "HISTORY <event>",
                "    Return time-latency samples for the <event> class.",
                "LATEST",
                "    Return the latest latency samples for all events.",
                "RESET [<event> ...]",
                "    Reset latency data of one or more <event> classes.",
                "    (default: reset all data for all event classes)",
                "HISTOGRAM [COMMAND ...]",
                "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
                "    If no commands are specified then all histograms are replied.",
                "HELP",
                "    Prints this help.",
            ]
            .iter()
            .map(|s| Reply::simple(s))
            .collect(),
        ),
        _ => error::unknown_subcommand("latency", spec.name.as_bytes()),
    }
}

fn cdf_reply(counts: &[u64], total: u64) -> Reply {
    Reply::Map(vec![
        (
            Reply::bulk(Bytes::from_static(b"calls")),
            Reply::Int(total as i64),
        ),
        (
            Reply::bulk(Bytes::from_static(b"histogram_usec")),
            Reply::Map(
                cdf(counts, total)
                    .into_iter()
                    .map(|(us, n)| (Reply::Int(us), Reply::Int(n as i64)))
                    .collect(),
            ),
        ),
    ])
}

/// LATENCY HISTOGRAM: every command with a histogram, or the named ones (a container
/// name gives its subcommands; unknown names are skipped).
fn histogram(stats: &CommandStats, names: &[Bytes]) -> Reply {
    let mut out = Vec::new();
    let mut add = |spec: &'static CommandSpec| {
        if let Some(slot) = stats.slot(spec) {
            if let Some((counts, total)) = slot.hist.counts() {
                out.push((
                    Reply::bulk(Bytes::from(spec.full_name())),
                    cdf_reply(&counts, total),
                ));
            }
        }
    };
    if names.is_empty() {
        for (spec, _) in stats.in_order() {
            add(spec);
        }
        return Reply::Map(out);
    }
    for n in names {
        let name = String::from_utf8_lossy(n).to_ascii_lowercase();
        let spec = match name.split_once('|') {
            Some((p, child)) => commands::lookup(p.as_bytes())
                .and_then(|c| c.subcommands.iter().find(|x| x.name == child)),
            None => commands::lookup(n),
        };
        let Some(spec) = spec else { continue };
        add(spec);
        if let Exec::Container = spec.exec {
            for s in spec.subcommands {
                add(s);
            }
        }
    }
    Reply::Map(out)
}

struct EventStats {
    samples: u64,
    avg: u64,
    mad: u64,
    period: i64,
}

fn analyze(ts: &Series) -> EventStats {
    let (mut n, mut sum, mut oldest) = (0u64, 0u64, 0i64);
    for s in ts.ordered() {
        n += 1;
        sum += s.latency;
        if oldest == 0 || s.time < oldest {
            oldest = s.time;
        }
    }
    if n == 0 {
        return EventStats {
            samples: 0,
            avg: 0,
            mad: 0,
            period: 0,
        };
    }
    let avg = sum / n;
    let mad = ts
        .ordered()
        .map(|s| (avg as i64 - s.latency as i64).unsigned_abs())
        .sum::<u64>()
        / n;
    EventStats {
        samples: n,
        avg,
        mad,
        period: (unix_now() - oldest).max(1),
    }
}

/// LATENCY DOCTOR: Redis' report, for the events Tumbler records.
fn doctor(stats: &CommandStats, slowlog_us: i64) -> String {
    let mon = &stats.monitor;
    let threshold = mon.threshold_ms.load(Ordering::Relaxed);
    let evs = mon.events.lock();
    let mut r = String::new();
    if evs.is_empty() && threshold == 0 {
        r.push_str("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n");
        return r;
    }
    let (mut slowlog_enable, mut slowlog_tune, mut slowlog_inspect) = (false, false, false);
    let (mut scheduler, mut hz, mut large_objects, mut mass_eviction) =
        (false, false, false, false);
    let mut advices = 0;
    for (i, (name, ts)) in evs.iter().enumerate() {
        if i == 0 {
            r.push_str("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n");
        }
        let ls = analyze(ts);
        let _ = write!(
            r,
            "{}. {}: {} latency spikes (average {}ms, mean deviation {}ms, period {:.2} sec). Worst all time event {}ms.",
            i + 1,
            name,
            ls.samples,
            ls.avg,
            ls.mad,
            ls.period as f64 / ls.samples.max(1) as f64,
            ts.max
        );
        match name.as_str() {
            "command" => {
                if slowlog_us < 0 {
                    slowlog_enable = true;
                    advices += 1;
                } else if (slowlog_us / 1000) as u64 > threshold {
                    slowlog_tune = true;
                    advices += 1;
                }
                slowlog_inspect = true;
                large_objects = true;
                advices += 2;
            }
            "fast-command" => {
                scheduler = true;
                advices += 1;
            }
            "expire-cycle" => {
                hz = true;
                large_objects = true;
                advices += 2;
            }
            "eviction-cycle" => {
                mass_eviction = true;
                advices += 1;
            }
            _ => {}
        }
        r.push('\n');
    }
    if evs.is_empty() && advices == 0 {
        r.push_str("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n");
        return r;
    }
    if advices == 0 {
        r.push_str("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n");
        return r;
    }
    r.push_str("\nI have a few advices for you:\n\n");
    if slowlog_enable {
        let _ = writeln!(r, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.", threshold * 1000);
    }
    if slowlog_tune {
        let _ = writeln!(r, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {}'.", threshold * 1000);
    }
    if slowlog_inspect {
        r.push_str("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n");
    }
    if scheduler {
        r.push_str("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n");
    }
    if hz {
        r.push_str("- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n");
    }
    if large_objects {
        r.push_str("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n");
    }
    if mass_eviction {
        r.push_str("- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys migrations (RESTORE command), may create sudden memory pressure forcing the server to block trying to evict keys. \n");
    }
    r
}

/// LATENCY GRAPH: a header line, an 80-column rule, then the samples as Redis' sparkline
/// renders them: 4 rows of `_`, `o`, `#` (and `|` below the top of a column), a blank
/// row, and each sample's age written vertically underneath, 80 samples per block.
fn graph(event: &str, ts: &Series) -> String {
    let samples: Vec<&Sample> = ts.ordered().collect();
    let min = samples.iter().map(|s| s.latency).min().unwrap_or(0);
    let max = samples.iter().map(|s| s.latency).max().unwrap_or(0);
    let mut g = format!(
        "{event} - high {max} ms, low {min} ms (all time high {} ms)\n{}\n",
        ts.max,
        "-".repeat(80)
    );
    let now = unix_now();
    let labels: Vec<Vec<u8>> = samples
        .iter()
        .map(|s| {
            let e = now - s.time;
            let l = if e < 60 {
                format!("{e}s")
            } else if e < 3600 {
                format!("{}m", e / 60)
            } else if e < 86400 {
                format!("{}h", e / 3600)
            } else {
                format!("{}d", e / 86400)
            };
            l.into_bytes()
        })
        .collect();
    const ROWS: i64 = 4;
    const FILL: &[u8] = b"_o#";
    let steps = FILL.len() as i64 * ROWS;
    let relmax = if max == min { 1.0 } else { (max - min) as f64 };
    let step = |v: u64| (((v - min) as f64 * steps as f64 / relmax) as i64).clamp(0, steps - 1);
    for (block, start) in (0..samples.len()).step_by(80).enumerate() {
        if block > 0 {
            g.push('\n');
        }
        let end = (start + 80).min(samples.len());
        for row in 0..ROWS {
            let line: String = samples[start..end]
                .iter()
                .map(|s| {
                    let idx = step(s.latency) - (ROWS - row - 1) * FILL.len() as i64;
                    match idx {
                        i if i < 0 => ' ',
                        i if i < FILL.len() as i64 => FILL[i as usize] as char,
                        _ => '|',
                    }
                })
                .collect();
            g.push_str(&line);
            g.push('\n');
        }
        g.push_str(&" ".repeat(end - start));
        g.push('\n');
        let depth = labels[start..end]
            .iter()
            .map(|l| l.len())
            .max()
            .unwrap_or(0);
        for i in 0..depth {
            let line: String = labels[start..end]
                .iter()
                .map(|l| l.get(i).map_or(' ', |b| *b as char))
                .collect();
            g.push_str(&line);
            g.push('\n');
        }
    }
    g
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
