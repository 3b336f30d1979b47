//! What a bench prints and writes: the per-round table, the ratios against the first server
//! with their range over rounds, the `--json` report and the `--html` page.
//!
//! The page's two charts are SVG written here as text: a bar chart and a few polylines need
//! about a hundred lines, where a chart crate would bring font handling and a dependency
//! tree for the same picture. The page loads nothing from the network.

use std::collections::BTreeMap;
use std::fmt::Write;

use hdrhistogram::Histogram;

use super::load::ErrorCount;

/// One server in one round.
pub struct Run {
    /// Index of the server (0 = the first `--url`, the reference for ratios).
    pub server: usize,
    pub url: String,
    pub round: usize,
    pub requests: u64,
    pub secs: f64,
    pub ops_per_sec: f64,
    pub hist: Histogram<u64>,
    /// Calls the server counted over the round, and the INFO field they came from.
    pub calls: u64,
    pub calls_source: &'static str,
    /// Server CPU (INFO used_cpu_sys + used_cpu_user delta) per call, µs; None when the
    /// server reports no CPU time or saw no calls.
    pub cpu_us_per_call: Option<f64>,
    pub errors: BTreeMap<String, ErrorCount>,
}

impl Run {
    pub fn pct_us(&self, q: f64) -> f64 {
        self.hist.value_at_quantile(q) as f64 / 1000.0
    }
    pub fn max_us(&self) -> f64 {
        self.hist.max() as f64 / 1000.0
    }
    pub fn error_total(&self) -> u64 {
        self.errors.values().map(|e| e.count).sum()
    }
}

/// What was run, for the headings.
pub struct Header {
    pub what: String,
    pub clients: usize,
    pub pipeline: usize,
    pub budget: String,
    pub rounds: usize,
    pub keyspace: u64,
}

impl Header {
    pub fn line(&self) -> String {
        format!(
            "{}\n{} clients, pipeline {}, {} per round, {} keyspace {}",
            self.what,
            self.clients,
            self.pipeline,
            self.budget,
            if self.rounds == 1 {
                "1 round,".to_string()
            } else {
                format!("{} rounds interleaved,", self.rounds)
            },
            self.keyspace
        )
    }
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("n/a".into(), |x| format!("{x:.prec$}"))
}

/// The plain table: one line per server and round, then the errors, then the ratios.
pub fn table(h: &Header, servers: &[String], runs: &[Run]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", h.line());
    let _ = writeln!(s);
    for (i, u) in servers.iter().enumerate() {
        let _ = writeln!(s, "  {} = {u}", letter(i));
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<6} {:>5} {:>11} {:>9} {:>9} {:>9} {:>9} {:>10} {:>12} {:>7}",
        "server",
        "round",
        "ops/sec",
        "p50 us",
        "p99 us",
        "p99.9 us",
        "max us",
        "calls",
        "cpu us/call",
        "errors"
    );
    for r in runs {
        let _ = writeln!(
            s,
            "{:<6} {:>5} {:>11.0} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10} {:>12} {:>7}",
            letter(r.server),
            r.round,
            r.ops_per_sec,
            r.pct_us(0.5),
            r.pct_us(0.99),
            r.pct_us(0.999),
            r.max_us(),
            r.calls,
            opt(r.cpu_us_per_call, 2),
            r.error_total()
        );
    }
    let errs = errors_by_server(servers.len(), runs);
    if errs.iter().any(|e| !e.is_empty()) {
        let _ = writeln!(s, "\nerror replies, by type (all rounds):");
        for (i, e) in errs.iter().enumerate() {
            for (k, v) in e {
                let _ = writeln!(s, "  {} {k}: {} (first: {})", letter(i), v.count, v.example);
            }
        }
    }
    if servers.len() > 1 {
        let _ = writeln!(
            s,
            "\nratios against A, median [min - max] over {} rounds (each round's ratio taken within the round):",
            h.rounds
        );
        for i in 1..servers.len() {
            for (name, f) in METRICS {
                let v = ratios(runs, i, *f);
                if let Some(m) = v.median {
                    let _ = writeln!(
                        s,
                        "  {}/A {:<14} x{:.2} [{:.2} - {:.2}]",
                        letter(i),
                        name,
                        m,
                        v.min,
                        v.max
                    );
                } else {
                    let _ = writeln!(s, "  {}/A {:<14} n/a", letter(i), name);
                }
            }
        }
    }
    let _ = writeln!(
        s,
        "\ncpu us/call = INFO (used_cpu_sys + used_cpu_user) delta over the round / calls; calls from:"
    );
    for i in 0..servers.len() {
        let mut src: Vec<&str> = runs
            .iter()
            .filter(|r| r.server == i)
            .map(|r| r.calls_source)
            .collect();
        src.dedup();
        let _ = writeln!(s, "  {}: {}", letter(i), src.join(", "));
    }
    s
}

type Metric = fn(&Run) -> Option<f64>;

const METRICS: &[(&str, Metric)] = &[
    ("throughput", |r| Some(r.ops_per_sec)),
    ("p50", |r| Some(r.pct_us(0.5))),
    ("p99", |r| Some(r.pct_us(0.99))),
    ("p99.9", |r| Some(r.pct_us(0.999))),
    ("cpu/call", |r| r.cpu_us_per_call),
];

pub struct Ratios {
    pub median: Option<f64>,
    pub min: f64,
    pub max: f64,
}

/// Server `i`'s metric over server 0's, round by round.
pub fn ratios(runs: &[Run], i: usize, f: Metric) -> Ratios {
    let mut v: Vec<f64> = Vec::new();
    for a in runs.iter().filter(|r| r.server == 0) {
        if let Some(b) = runs.iter().find(|r| r.server == i && r.round == a.round) {
            if let (Some(x), Some(y)) = (f(b), f(a)) {
                if y > 0.0 {
                    v.push(x / y);
                }
            }
        }
    }
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return Ratios {
            median: None,
            min: 0.0,
            max: 0.0,
        };
    }
    let median = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    Ratios {
        median: Some(median),
        min: v[0],
        max: v[v.len() - 1],
    }
}

fn errors_by_server(n: usize, runs: &[Run]) -> Vec<BTreeMap<String, ErrorCount>> {
    let mut out = vec![BTreeMap::<String, ErrorCount>::new(); n];
    for r in runs {
        for (k, v) in &r.errors {
            let e = out[r.server].entry(k.clone()).or_default();
            if e.count == 0 {
                e.example = v.example.clone();
            }
            e.count += v.count;
        }
    }
    out
}

pub fn letter(i: usize) -> String {
    if i < 26 {
        ((b'A' + i as u8) as char).to_string()
    } else {
        format!("S{i}")
    }
}

/// The `--json` report.
/// `urls` are the servers' URLs (password masked), `servers` their labels in the table.
pub fn json(h: &Header, urls: &[String], servers: &[String], runs: &[Run]) -> serde_json::Value {
    use serde_json::json;
    let runs_j: Vec<_> = runs
        .iter()
        .map(|r| {
            let errors: serde_json::Map<String, serde_json::Value> = r
                .errors
                .iter()
                .map(|(k, v)| (k.clone(), json!(v.count)))
                .collect();
            json!({
                "url": r.url,
                "server": letter(r.server),
                "round": r.round,
                "requests": r.requests,
                "seconds": r.secs,
                "ops_per_sec": r.ops_per_sec,
                "p50_us": r.pct_us(0.5),
                "p99_us": r.pct_us(0.99),
                "p999_us": r.pct_us(0.999),
                "max_us": r.max_us(),
                "server_calls": r.calls,
                "server_calls_source": r.calls_source,
                "server_cpu_us_per_call": r.cpu_us_per_call,
                "errors": errors,
            })
        })
        .collect();
    let mut ratios_j = Vec::new();
    for i in 1..servers.len() {
        for (name, f) in METRICS {
            let v = ratios(runs, i, *f);
            ratios_j.push(json!({
                "url": urls[i],
                "against": urls[0],
                "metric": name,
                "median": v.median,
                "min": v.median.map(|_| v.min),
                "max": v.median.map(|_| v.max),
            }));
        }
    }
    json!({
        "workload": h.what,
        "clients": h.clients,
        "pipeline": h.pipeline,
        "budget": h.budget,
        "rounds": h.rounds,
        "keyspace": h.keyspace,
        "urls": urls,
        "servers": servers,
        "runs": runs_j,
        "ratios": ratios_j,
    })
}

const COLORS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" axis maximum at or above `v`: 1, 2 or 5 times a power of ten.
fn nice_max(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

/// Throughput of every server in every round: grouped bars, one group per round.
pub fn throughput_svg(servers: &[String], runs: &[Run], rounds: usize) -> String {
    let (w, h, l, b, t) = (720.0, 300.0, 70.0, 40.0, 20.0);
    let ymax = nice_max(runs.iter().map(|r| r.ops_per_sec).fold(0.0, f64::max));
    let ph = h - b - t;
    let pw = w - l - 20.0;
    let mut s = format!(
        r#"<svg class="chart" id="throughput" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    // 2, 20, 200k... split in fourths; 1, 5, 10, 50k... in fifths: round labels either way.
    let ticks = if format!("{ymax}").starts_with('2') {
        4
    } else {
        5
    };
    for k in 0..=ticks {
        let v = ymax * k as f64 / ticks as f64;
        let y = t + ph - ph * k as f64 / ticks as f64;
        let _ = write!(
            s,
            r##"<line x1="{l}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            w - 20.0,
            l - 6.0,
            y + 4.0,
            fmt_si(v)
        );
    }
    let group = pw / rounds.max(1) as f64;
    let bar = (group * 0.8) / servers.len().max(1) as f64;
    for r in runs {
        let x = l + group * (r.round - 1) as f64 + group * 0.1 + bar * r.server as f64;
        let bh = ph * r.ops_per_sec / ymax;
        let _ = write!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{bh:.1}" fill="{}"><title>{} round {}: {:.0} ops/sec</title></rect>"#,
            t + ph - bh,
            bar * 0.95,
            COLORS[r.server % COLORS.len()],
            letter(r.server),
            r.round,
            r.ops_per_sec
        );
    }
    for k in 0..rounds {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">round {}</text>"#,
            l + group * (k as f64 + 0.5),
            h - b + 18.0,
            k + 1
        );
    }
    let _ = write!(
        s,
        r#"<text x="14" y="{:.1}" transform="rotate(-90 14 {:.1})" text-anchor="middle">ops/sec</text></svg>"#,
        t + ph / 2.0,
        t + ph / 2.0
    );
    s
}

/// A latency in µs as a person reads it: 10 us, 1 ms, 1 s.
fn fmt_us(v: f64) -> String {
    if v >= 1e6 {
        format!("{} s", v / 1e6)
    } else if v >= 1e3 {
        format!("{} ms", v / 1e3)
    } else {
        format!("{v} us")
    }
}

fn fmt_si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Latency by percentile, all rounds of a server merged: x is the number of nines
/// (0 = p0, 1 = p90, 2 = p99, 3 = p99.9, 4 = p99.99), y is the latency in µs, log scale.
pub fn latency_svg(servers: &[String], runs: &[Run]) -> String {
    let (w, h, l, b, t) = (720.0, 340.0, 70.0, 40.0, 20.0);
    let ph = h - b - t;
    let pw = w - l - 20.0;
    let mut merged: Vec<Histogram<u64>> = (0..servers.len())
        .map(|_| super::load::new_hist())
        .collect();
    for r in runs {
        let _ = merged[r.server].add(&r.hist);
    }
    let points: Vec<Vec<(f64, f64)>> = merged
        .iter()
        .map(|hst| {
            (0..=40)
                .map(|k| {
                    let nines = k as f64 / 10.0;
                    let q = 1.0 - 10f64.powf(-nines);
                    (nines, (hst.value_at_quantile(q) as f64 / 1000.0).max(0.1))
                })
                .collect()
        })
        .collect();
    let all = points.iter().flatten().map(|p| p.1);
    let lo = all.clone().fold(f64::MAX, f64::min).max(0.1);
    let hi = all.fold(0.0, f64::max).max(lo * 10.0);
    let (llo, lhi) = (lo.log10().floor(), hi.log10().ceil());
    let y = |v: f64| t + ph - ph * (v.log10() - llo) / (lhi - llo);
    let x = |n: f64| l + pw * n / 4.0;
    let mut s = format!(
        r#"<svg class="chart" id="latency" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let mut e = llo as i32;
    while e as f64 <= lhi {
        let v = 10f64.powi(e);
        let _ = write!(
            s,
            r##"<line x1="{l}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            w - 20.0,
            y(v),
            y(v),
            l - 6.0,
            y(v) + 4.0,
            fmt_us(v)
        );
        e += 1;
    }
    for (k, label) in ["p0", "p90", "p99", "p99.9", "p99.99"].iter().enumerate() {
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" x2="{0:.1}" y1="{t}" y2="{1:.1}" stroke="#eee"/><text x="{0:.1}" y="{2:.1}" text-anchor="middle">{label}</text>"##,
            x(k as f64),
            t + ph,
            h - b + 18.0
        );
    }
    for (i, pts) in points.iter().enumerate() {
        let path: Vec<String> = pts
            .iter()
            .map(|(n, v)| format!("{:.1},{:.1}", x(*n), y(*v)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{}" stroke-width="2" points="{}"><title>{}</title></polyline>"#,
            COLORS[i % COLORS.len()],
            path.join(" "),
            letter(i)
        );
    }
    let _ = write!(
        s,
        r#"<text x="14" y="{:.1}" transform="rotate(-90 14 {:.1})" text-anchor="middle">latency (log scale)</text></svg>"#,
        t + ph / 2.0,
        t + ph / 2.0
    );
    s
}

/// The `--html` page: self-contained, nothing fetched.
pub fn html(h: &Header, servers: &[String], runs: &[Run]) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tumbler bench</title><style>\
         body{font-family:sans-serif;margin:2em;max-width:60em}table{border-collapse:collapse}\
         td,th{padding:2px 8px;text-align:right;border-bottom:1px solid #ddd}th{background:#f4f4f4}\
         td:first-child,th:first-child{text-align:left}.sw{display:inline-block;width:1em;height:1em;vertical-align:middle}\
         pre{background:#f8f8f8;padding:1em}</style></head><body>\n<h1>tumbler bench</h1>\n",
    );
    let _ = writeln!(s, "<pre>{}</pre>", esc(&h.line()));
    s.push_str("<h2>Servers</h2><ul>");
    for (i, u) in servers.iter().enumerate() {
        let _ = write!(
            s,
            r#"<li><span class="sw" style="background:{}"></span> {} = {}</li>"#,
            COLORS[i % COLORS.len()],
            letter(i),
            esc(u)
        );
    }
    s.push_str("</ul>\n<h2>Throughput by round</h2>\n");
    s.push_str(&throughput_svg(servers, runs, h.rounds));
    s.push_str("\n<h2>Latency distribution (all rounds)</h2>\n");
    s.push_str(&latency_svg(servers, runs));
    s.push_str("\n<h2>Every round</h2>\n<pre>");
    s.push_str(&esc(&table(h, servers, runs)));
    s.push_str("</pre>\n</body></html>\n");
    s
}
