//! `--metrics-port P`: Prometheus metrics at `http://bind:P/metrics`.
//!
//! The INFO counters Redis exporters publish (clients, commands, keyspace hits and misses,
//! expired and evicted keys, memory, per-command calls and time) and the lock metrics no
//! Redis exporter can have: locks held, waiters, grants, releases, expiries, hand-off and
//! wait-time histograms, fencing rejections, busy scripts.
//!
//! Nothing is counted for metrics on the command path beyond what INFO already keeps: the
//! lock counters are plain integers under the keyspace lock the lock commands hold anyway
//! (`lockcore::engine::locks::lock_stats`), per-command stats are relaxed atomics (`cmdstats`). A scrape
//! takes the keyspace lock once, copies the numbers out and encodes after releasing it.
//!
//! The text is written by the `prometheus-client` crate (OpenMetrics text, which Prometheus
//! and its client libraries' parsers read). The HTTP side is a few lines over tokio rather
//! than an HTTP framework: one GET route, and the binary stays small.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use lockcore::engine::locks::lock_stats::{Histogram, LockStatsSnapshot, KINDS};
use lockcore::engine::Stats;

use crate::state::Shared;

/// Everything one scrape reports, copied out of the server.
#[derive(Debug, Default)]
struct Snapshot {
    stats: Stats,
    locks: LockStatsSnapshot,
    blocked: u64,
    keys: u64,
    clients: u64,
    connections_received: u64,
    used_memory: u64,
    maxmemory: u64,
    busy_scripts: u64,
    script_running: u64,
    commands: Vec<(String, u64, u64, u64)>,
    scripts: Vec<crate::scripting::stats::Row>,
    uptime_secs: f64,
}

async fn snapshot(shared: &Shared) -> Snapshot {
    let (stats, locks, blocked, keys, scripts) = {
        // `allow_busy`: a scrape during a long script waits like the timer does; it must
        // not fail with BUSY (and it is bounded by the HTTP client's own timeout).
        let Ok(core) = shared.lock_core(true).await else {
            return Snapshot::default();
        };
        let eng = &core.engine;
        let held = lockcore::engine::locks::held_counts(eng);
        (
            eng.stats.clone(),
            eng.locks.stats.snapshot(held),
            eng.blocked_count() as u64,
            eng.dbs.iter().map(|d| d.len() as u64).sum(),
            crate::scripting::Scripts::of_ref(&*core.scripts).stats_rows(),
        )
    };
    let running = shared.script_running_for().is_some();
    Snapshot {
        stats,
        locks,
        blocked,
        keys,
        clients: shared.clients.len() as u64,
        connections_received: shared.counters.connections_received.load(Ordering::Relaxed),
        used_memory: crate::state::memory::rss_bytes(),
        maxmemory: shared.maxmemory.load(Ordering::Relaxed).max(0) as u64,
        busy_scripts: u64::from(shared.script_busy()),
        script_running: u64::from(running),
        commands: shared.cmdstats.called(),
        scripts,
        uptime_secs: shared.started.elapsed().as_secs_f64(),
    }
}

fn counter(enc: &mut DescriptorEncoder, name: &str, help: &str, v: u64) -> std::fmt::Result {
    let c = ConstCounter::new(v);
    c.encode(enc.encode_descriptor(name, help, None, c.metric_type())?)
}

fn gauge(enc: &mut DescriptorEncoder, name: &str, help: &str, v: i64) -> std::fmt::Result {
    let g = ConstGauge::new(v);
    g.encode(enc.encode_descriptor(name, help, None, g.metric_type())?)
}

fn per_kind_counter(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    v: &[u64; 3],
) -> std::fmt::Result {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (kind, n) in KINDS.iter().zip(v) {
        ConstCounter::new(*n).encode(m.encode_family(&[("kind", *kind)])?)?;
    }
    Ok(())
}

fn histogram(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    h: &Histogram,
) -> std::fmt::Result {
    let mut m = enc.encode_descriptor(
        name,
        help,
        Some(&prometheus_client::registry::Unit::Seconds),
        MetricType::Histogram,
    )?;
    m.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
        h.sum_secs,
        h.count,
        &h.buckets(),
        None,
    )
}

impl Collector for Snapshot {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        let e = &mut enc;
        let s = &self.stats;
        gauge(
            e,
            "tumbler_connected_clients",
            "Client connections open now",
            self.clients as i64,
        )?;
        gauge(
            e,
            "tumbler_blocked_clients",
            "Clients blocked in a blocking command or lock wait",
            self.blocked as i64,
        )?;
        counter(
            e,
            "tumbler_connections_received",
            "Connections accepted",
            self.connections_received,
        )?;
        counter(
            e,
            "tumbler_commands_processed",
            "Keyspace commands executed",
            s.commands_processed,
        )?;
        counter(
            e,
            "tumbler_keyspace_hits",
            "Key lookups that found the key",
            s.keyspace_hits,
        )?;
        counter(
            e,
            "tumbler_keyspace_misses",
            "Key lookups that did not find the key",
            s.keyspace_misses,
        )?;
        counter(
            e,
            "tumbler_expired_keys",
            "Keys deleted because their TTL passed",
            s.expired_keys,
        )?;
        counter(
            e,
            "tumbler_evicted_keys",
            "Keys evicted for maxmemory",
            s.evicted_keys,
        )?;
        gauge(e, "tumbler_keys", "Keys in all databases", self.keys as i64)?;
        gauge(
            e,
            "tumbler_memory_used_bytes",
            "Resident memory of the process",
            self.used_memory as i64,
        )?;
        gauge(
            e,
            "tumbler_memory_max_bytes",
            "maxmemory (0: no limit)",
            self.maxmemory as i64,
        )?;
        gauge(
            e,
            "tumbler_uptime_seconds",
            "Seconds since the server started",
            self.uptime_secs as i64,
        )?;

        {
            let mut m = e.encode_descriptor(
                "tumbler_command_calls",
                "Calls per command (INFO commandstats calls)",
                None,
                MetricType::Counter,
            )?;
            for (name, calls, _, _) in &self.commands {
                ConstCounter::new(*calls).encode(m.encode_family(&[("cmd", name.as_str())])?)?;
            }
        }
        {
            let mut m = e.encode_descriptor(
                "tumbler_command_failed_calls",
                "Calls per command that replied with an error",
                None,
                MetricType::Counter,
            )?;
            for (name, _, _, failed) in &self.commands {
                ConstCounter::new(*failed).encode(m.encode_family(&[("cmd", name.as_str())])?)?;
            }
        }
        {
            let mut m = e.encode_descriptor(
                "tumbler_command_duration_seconds",
                "Time spent executing each command",
                None,
                MetricType::Counter,
            )?;
            for (name, _, usec, _) in &self.commands {
                ConstCounter::new(*usec as f64 / 1e6)
                    .encode(m.encode_family(&[("cmd", name.as_str())])?)?;
            }
        }

        let l = &self.locks;
        {
            let mut m = e.encode_descriptor(
                "tumbler_locks_held",
                "Native locks, semaphores and RW locks with at least one holder",
                None,
                MetricType::Gauge,
            )?;
            for (kind, n) in KINDS.iter().zip(&l.held) {
                ConstGauge::new(*n as i64).encode(m.encode_family(&[("kind", *kind)])?)?;
            }
        }
        gauge(
            e,
            "tumbler_lock_waiters",
            "Clients waiting in LOCK.ACQUIRE, SEM.ACQUIRE, RW.RLOCK or RW.WLOCK",
            l.waiters as i64,
        )?;
        per_kind_counter(
            e,
            "tumbler_lock_grants",
            "Lock grants (including reentrant ones)",
            &l.grants,
        )?;
        per_kind_counter(
            e,
            "tumbler_lock_releases",
            "Releases by the holder or by its session closing",
            &l.releases,
        )?;
        per_kind_counter(
            e,
            "tumbler_lock_expiries",
            "Holders whose lease ran out",
            &l.expiries,
        )?;
        {
            let mut m = e.encode_descriptor(
                "tumbler_lock_fencing_rejections",
                "Tokens refused because they no longer hold the lock",
                None,
                MetricType::Counter,
            )?;
            ConstCounter::new(l.fence_rejections)
                .encode(m.encode_family(&[("command", "fence.set")])?)?;
            ConstCounter::new(l.check_rejections)
                .encode(m.encode_family(&[("command", "lock.check")])?)?;
        }
        histogram(
            e,
            "tumbler_lock_handoff",
            "From a release or expiry to the grant to the next waiter",
            &l.handoff,
        )?;
        histogram(
            e,
            "tumbler_lock_wait",
            "Time lock waiters spent parked (granted, timed out or gone)",
            &l.wait,
        )?;
        gauge(
            e,
            "tumbler_busy_scripts",
            "Scripts running past busy-reply-threshold (other clients get BUSY)",
            self.busy_scripts as i64,
        )?;
        gauge(
            e,
            "tumbler_scripts_running",
            "Scripts running now",
            self.script_running as i64,
        )?;
        script_metrics(e, &self.scripts)?;
        Ok(())
    }
}

/// INFO scriptstats, per script SHA.
fn script_metrics(
    e: &mut DescriptorEncoder,
    rows: &[crate::scripting::stats::Row],
) -> std::fmt::Result {
    type Get = fn(&crate::scripting::stats::Row) -> u64;
    let counters: [(&str, &str, Get); 3] = [
        (
            "tumbler_script_calls",
            "Runs per cached script (INFO scriptstats calls)",
            |r| r.calls,
        ),
        (
            "tumbler_script_redis_calls",
            "redis.call/redis.pcall made by each cached script",
            |r| r.redis_calls,
        ),
        (
            "tumbler_script_failed_calls",
            "Runs per cached script that replied with an error",
            |r| r.failed_calls,
        ),
    ];
    for (name, help, get) in counters {
        let mut m = e.encode_descriptor(name, help, None, MetricType::Counter)?;
        for r in rows {
            ConstCounter::new(get(r)).encode(m.encode_family(&[("sha", r.sha.as_str())])?)?;
        }
    }
    {
        let mut m = e.encode_descriptor(
            "tumbler_script_duration_seconds",
            "Time spent running each cached script",
            None,
            MetricType::Counter,
        )?;
        for r in rows {
            ConstCounter::new(r.usec as f64 / 1e6)
                .encode(m.encode_family(&[("sha", r.sha.as_str())])?)?;
        }
    }
    let mut m = e.encode_descriptor(
        "tumbler_script_latency_seconds",
        "Run time percentiles per cached script (INFO scriptstats p50, p99)",
        None,
        MetricType::Gauge,
    )?;
    for r in rows {
        for (q, v) in [("0.5", r.p50_us), ("0.99", r.p99_us)] {
            ConstGauge::new(v / 1e6)
                .encode(m.encode_family(&[("sha", r.sha.as_str()), ("quantile", q)])?)?;
        }
    }
    Ok(())
}

/// The `/metrics` body for the current state.
pub async fn render(shared: &Shared) -> String {
    let snap = snapshot(shared).await;
    let mut reg = Registry::default();
    reg.register_collector(Box::new(snap));
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &reg).expect("writing to a String");
    out
}

/// Serves `/metrics` until the task is aborted.
pub async fn serve(shared: Arc<Shared>, listener: TcpListener) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(handle(shared.clone(), stream));
            }
            Err(e) => {
                tracing::warn!("metrics accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// One HTTP/1.x exchange: read the request head (bounded in size and time), answer, close.
async fn handle(shared: Arc<Shared>, mut s: TcpStream) {
    let mut buf = Vec::with_capacity(1024);
    let head = tokio::time::timeout(Duration::from_secs(10), async {
        let mut chunk = [0u8; 1024];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
            let n = s.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Some(())
    })
    .await;
    if !matches!(head, Ok(Some(()))) {
        return;
    }
    let line = buf.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut parts = line.split(|&b| b == b' ');
    let (method, path) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let path = path.split(|&b| b == b'?').next().unwrap_or_default();
    let (status, ctype, body) = match (method, path) {
        (b"GET" | b"HEAD", b"/metrics") => (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            render(&shared).await,
        ),
        (b"GET" | b"HEAD", _) => ("404 Not Found", "text/plain", "see /metrics\n".to_string()),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "GET /metrics\n".to_string(),
        ),
    };
    let mut resp = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != b"HEAD" {
        resp.extend_from_slice(body.as_bytes());
    }
    let _ = s.write_all(&resp).await;
    let _ = s.shutdown().await;
}
