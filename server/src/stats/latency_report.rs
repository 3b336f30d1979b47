//! What the latency figures look like to clients: INFO latencystats and the LATENCY
//! command (HISTOGRAM, LATEST, HISTORY, RESET, DOCTOR, GRAPH). The histograms and the
//! monitor are in latency.rs, the per-command counters in cmdstats.rs.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use lockcore::commands;
use lockcore::engine::spec::{CommandSpec, Exec};
use lockcore::{error, Reply};

use crate::stats::cmdstats::CommandStats;
use crate::stats::latency::*;

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
