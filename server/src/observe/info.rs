//! INFO and the CLIENT LIST line.

use bytes::Bytes;
use lockcore::personality::Since;
use std::fmt::Write;
use std::sync::atomic::Ordering;

use lockcore::Reply;

use crate::conn::Conn;
use crate::state::Core;

fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2}G", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.2}M", b / (1u64 << 20) as f64)
    } else if b >= 1024.0 {
        format!("{:.2}K", b / 1024.0)
    } else {
        format!("{}B", bytes)
    }
}

const SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
    "lockdep",
];
const DEFAULT: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];

/// System and user CPU seconds of this process (getrusage RUSAGE_SELF), as Redis reports
/// `used_cpu_sys` / `used_cpu_user`; `tumbler bench` divides their deltas by the calls.
fn process_cpu() -> (f64, f64) {
    // SAFETY: getrusage only writes the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_stime), secs(ru.ru_utime))
}

pub fn info(c: &mut Conn, core: &mut Core, a: &[Bytes]) -> Reply {
    let mut wanted: Vec<String> = Vec::new();
    for s in &a[1..] {
        let s = String::from_utf8_lossy(s).to_ascii_lowercase();
        match s.as_str() {
            "all" | "everything" => wanted.extend(SECTIONS.iter().map(|x| x.to_string())),
            "default" => wanted.extend(DEFAULT.iter().map(|x| x.to_string())),
            _ => wanted.push(s),
        }
    }
    if wanted.is_empty() {
        wanted.extend(DEFAULT.iter().map(|x| x.to_string()));
    }
    let mut out = String::new();
    for sec in SECTIONS {
        if wanted.iter().any(|w| w == sec) {
            if !out.is_empty() {
                out.push_str("\r\n");
            }
            section(c, core, sec, &mut out);
        }
    }
    scriptstats(core, &a[1..], &mut out);
    Reply::Verbatim("txt", Bytes::from(out))
}

/// Tumbler's own `# Scriptstats` (per-script statistics, docs/profiling.md): shown for
/// `INFO scriptstats` and `INFO everything` only, so the sections Redis clients parse from
/// `INFO`, `INFO default` and `INFO all` stay exactly Redis'.
fn scriptstats(core: &Core, args: &[Bytes], out: &mut String) {
    let wanted = args
        .iter()
        .any(|s| s.eq_ignore_ascii_case(b"scriptstats") || s.eq_ignore_ascii_case(b"everything"));
    if wanted {
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        crate::scripting::Scripts::of_ref(&*core.scripts).info_section(out);
    }
}

/// INFO's first lines: Valkey announces `redis_version:7.2.4` for old clients, then itself.
fn version_lines(p: &lockcore::personality::Personality) -> String {
    let mut s = format!("redis_version:{}\r\n", p.redis_version());
    if p.is_valkey() {
        let _ = write!(
            s,
            "server_name:valkey\r\nvalkey_version:{}\r\nvalkey_release_stage:ga\r\n",
            p.version
        );
    }
    s
}

fn section(c: &Conn, core: &mut Core, name: &str, out: &mut String) {
    let sh = &c.shared;
    let eng = &core.engine;
    match name {
        "server" => {
            let up = sh.uptime_ms() / 1000;
            let p = &sh.personality;
            let valkey = p.is_valkey();
            let hz = sh.config.read().get(crate::config::key::HZ).to_string();
            let port = c
                .cluster
                .node
                .as_ref()
                .map_or_else(|| sh.port.load(Ordering::Relaxed), |n| n.port() as u64);
            let now_us = lockcore::storage::clock::Clock::now_us(&*sh.clock);
            // Redis' LRU clock: seconds, 24 bits.
            let lru_clock = (now_us / 1_000_000) & ((1 << 24) - 1);
            let _ = write!(
                out,
                "# Server\r\n{}redis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\n{}:{}\r\nos:{} {}\r\narch_bits:64\r\nmonotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\n{}gcc_version:0.0.0\r\nprocess_id:{}\r\nprocess_supervised:no\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{hz}\r\nconfigured_hz:{hz}\r\n{}lru_clock:{lru_clock}\r\nexecutable:{}\r\nconfig_file:\r\nio_threads_active:0\r\n",
                version_lines(p),
                if valkey { "server_mode" } else { "redis_mode" },
                if sh.cluster.as_ref().is_some_and(|t| t.enabled) { "cluster" } else { "standalone" },
                std::env::consts::OS,
                std::env::consts::ARCH,
                // Valkey dropped atomicvar_api and added clients_hz.
                if valkey { "" } else { "atomicvar_api:c11-builtin\r\n" },
                std::process::id(),
                sh.run_id,
                port,
                now_us,
                up,
                up / 86400,
                if valkey { format!("clients_hz:{hz}\r\n") } else { String::new() },
                std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
            );
            if p.has(lockcore::personality::Since::valkey(801)) {
                out.push_str("availability_zone:\r\n");
            }
            // Redis 7.2's listeners (and every Valkey's).
            if p.has(lockcore::personality::Since::redis(702)) {
                let bind = sh.config.read().get(crate::config::key::BIND).to_string();
                let binds: String = bind
                    .split_whitespace()
                    .map(|b| format!(",bind={b}"))
                    .collect();
                let _ = write!(out, "listener0:name=tcp{binds},port={port}\r\n");
            }
            let _ = write!(out, "tumbler_version:{}\r\n", env!("CARGO_PKG_VERSION"));
        }
        "clients" => {
            // The largest buffers among connected clients now (Redis samples the last few
            // seconds); the caller's own command is not counted.
            let (mut max_in, mut max_out) = (0, 0);
            for h in sh.clients.iter() {
                max_in = max_in.max(h.mem.qbuf.load(Ordering::Relaxed));
                max_out = max_out.max(h.mem.out.load(Ordering::Relaxed));
            }
            use lockcore::personality::Since;
            let p = &sh.personality;
            let _ = write!(
                out,
                "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\nclient_recent_max_input_buffer:{max_in}\r\nclient_recent_max_output_buffer:{max_out}\r\nblocked_clients:{}\r\ntracking_clients:{}\r\n",
                sh.clients.len(),
                sh.config.read().get(crate::config::key::MAXCLIENTS),
                eng.blocked_count(),
                eng.tracking.clients.len(),
            );
            // Redis 7.4 and Valkey 8.0 count pub/sub and WATCHing clients.
            let (mut pubsub, mut watching, mut watched) = (0, 0, 0);
            let newer = p.has(Since::both(704, 800));
            if newer {
                for h in sh.clients.iter() {
                    let i = h.info.lock();
                    pubsub += (i.subs + i.psubs + i.ssubs > 0) as usize;
                    watching += (i.watch > 0) as usize;
                    watched += i.watch;
                }
                let _ = write!(
                    out,
                    "pubsub_clients:{pubsub}\r\nwatching_clients:{watching}\r\n"
                );
            }
            let _ = write!(out, "clients_in_timeout_table:{}\r\n", eng.blocked_count());
            if newer {
                let _ = write!(out, "total_watched_keys:{watched}\r\n");
            }
            // Redis 7.2 (and every Valkey).
            if p.has(Since::redis(702)) {
                let _ = write!(
                    out,
                    "total_blocking_keys:{}\r\ntotal_blocking_keys_on_nokey:0\r\n",
                    eng.blocked_count()
                );
            }
            // Valkey 8.1: CLIENT PAUSE's state (Tumbler's CLIENT PAUSE pauses nothing).
            if p.has(Since::valkey(801)) {
                out.push_str(
                    "paused_reason:none\r\npaused_actions:none\r\npaused_timeout_milliseconds:0\r\n",
                );
            }
        }
        "memory" => {
            let rss = crate::state::memory::rss_bytes();
            let used = crate::state::memory::used_memory();
            let peak = crate::state::memory::peak(used);
            let maxmem: u64 = sh.config.read().get_i64(crate::config::key::MAXMEMORY) as u64;
            let lua_mem = crate::scripting::Scripts::of(&mut *core.scripts).memory();
            let nscripts = crate::scripting::Scripts::of(&mut *core.scripts).len();
            let (nplans, plan_runs) = (
                crate::scripting::Scripts::of(&mut *core.scripts).plans(),
                crate::scripting::Scripts::of(&mut *core.scripts).plan_runs,
            );
            let _ = write!(
                out,
                "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\nused_memory_lua:{lua_mem}\r\nused_memory_scripts:0\r\nnumber_of_cached_scripts:{nscripts}\r\nnumber_of_native_plans:{nplans}\r\nnative_plan_runs:{plan_runs}\r\nmaxmemory:{maxmem}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\nmem_fragmentation_ratio:{:.2}\r\nmem_not_counted_for_evict:{}\r\nmem_allocator:libc\r\nlazyfree_pending_objects:0\r\n",
                human(used),
                human(rss),
                human(peak),
                human(maxmem),
                sh.config.read().get(crate::config::key::MAXMEMORY_POLICY),
                rss as f64 / used.max(1) as f64,
                crate::state::memory::not_counted_for_evict(),
            );
        }
        "persistence" => {
            let _ = write!(
                out,
                "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\nrdb_last_bgsave_time_sec:{}\r\nrdb_current_bgsave_time_sec:{}\r\nrdb_saves:{}\r\nrdb_last_load_keys_expired:{}\r\nrdb_last_load_keys_loaded:{}\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0\r\naof_last_write_status:ok\r\n",
                eng.stats.dirty.saturating_sub(eng.persist.dirty_at_save),
                eng.persist.bgsave_in_progress as u8,
                eng.persist.last_save,
                if eng.persist.last_bgsave_ok { "ok" } else { "err" },
                eng.persist.last_bgsave_secs,
                if eng.persist.bgsave_in_progress {
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_millis() as i64);
                    (now - eng.persist.bgsave_started_ms).max(0) / 1000
                } else {
                    -1
                },
                eng.persist.saves,
                eng.persist.last_load_keys_expired,
                eng.persist.last_load_keys_loaded,
            );
        }
        "stats" => {
            let ps = &sh.pubsub;
            let _ = write!(
                out,
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:0\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nrejected_connections:{}\r\n{}expired_keys:{}\r\n{}evicted_keys:{}\r\nevicted_clients:0\r\ntotal_eviction_exceeded_time:0\r\ncurrent_eviction_exceeded_time:0\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\n",
                sh.counters.connections_received.load(Ordering::Relaxed),
                sh.cmdstats.total_calls(),
                sh.counters.net_input_bytes.load(Ordering::Relaxed),
                sh.counters.net_output_bytes.load(Ordering::Relaxed),
                sh.counters.rejected_connections.load(Ordering::Relaxed),
                // Hash fields whose TTL passed: Redis 7.4+ counts them before the keys,
                // Valkey 9 after.
                if sh.personality.has(Since::redis(704)) && !sh.personality.is_valkey() {
                    format!("expired_subkeys:{}\r\n", eng.stats.expired_subkeys)
                } else {
                    String::new()
                },
                eng.stats.expired_keys,
                if sh.personality.is_valkey() && sh.personality.has(Since::valkey(900)) {
                    format!("expired_fields:{}\r\n", eng.stats.expired_subkeys)
                } else {
                    String::new()
                },
                eng.stats.evicted_keys,
                eng.stats.keyspace_hits,
                eng.stats.keyspace_misses,
                ps.channels.len(),
                ps.patterns.len(),
                ps.shard_channels.len(),
            );
            // Redis 7.2's (and every Valkey's) stats.
            if sh.personality.has(lockcore::personality::Since::redis(702)) {
                let _ = write!(
                    out,
                    "client_query_buffer_limit_disconnections:{}\r\nclient_output_buffer_limit_disconnections:{}\r\n",
                    sh.counters.limits.query_buffer_disconnections.load(Ordering::Relaxed),
                    sh.counters.limits.output_buffer_disconnections.load(Ordering::Relaxed)
                        + ps.limit_kills.load(Ordering::Relaxed),
                );
            }
            let _ = write!(
                out,
                "total_error_replies:{}\r\nunexpected_error_replies:0\r\n",
                sh.cmdstats.total_error_replies.load(Ordering::Relaxed)
            );
            let (keys, items, prefixes) = eng.tracking.totals();
            let _ = write!(
                out,
                "tracking_total_keys:{keys}\r\ntracking_total_items:{items}\r\ntracking_total_prefixes:{prefixes}\r\n"
            );
            let _ = write!(
                out,
                "migrate_cached_sockets:{}\r\n",
                sh.migrate_sockets.len()
            );
        }
        "replication" => out.push_str(&crate::repl::info_section(sh)),
        "cpu" => {
            let (sys, user) = process_cpu();
            let _ = write!(
                out,
                "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\n"
            );
        }
        "modules" => out.push_str("# Modules\r\n"),
        "lockdep" => crate::state::lockdep_config::info(eng, out),
        "commandstats" => sh.cmdstats.info_commandstats(out),
        "errorstats" => sh.cmdstats.info_errorstats(out),
        "latencystats" => crate::stats::latency_report::info_latencystats(&sh.cmdstats, out),
        "cluster" => out.push_str(if c.shared.cluster.as_ref().is_some_and(|t| t.enabled) {
            "# Cluster\r\ncluster_enabled:1\r\n"
        } else {
            "# Cluster\r\ncluster_enabled:0\r\n"
        }),
        "keyspace" => {
            out.push_str("# Keyspace\r\n");
            for (i, db) in eng.dbs.iter().enumerate() {
                if !db.is_empty() {
                    let _ = write!(
                        out,
                        "db{}:keys={},expires={},avg_ttl=0",
                        i,
                        db.len(),
                        db.expires_count()
                    );
                    // Hashes registered for field expiry: Redis 7.4+'s subexpiry, Valkey 9's
                    // keys_with_volatile_items.
                    let p = &sh.personality;
                    if p.is_valkey() && p.has(Since::valkey(900)) {
                        let _ = write!(out, ",keys_with_volatile_items={}", db.hfe_hashes());
                    } else if !p.is_valkey() && p.has(Since::redis(704)) {
                        let _ = write!(out, ",subexpiry={}", db.hfe_hashes());
                    }
                    out.push_str("\r\n");
                }
            }
        }
        _ => {}
    }
}

/// used_memory when the server started: MEMORY STATS' `startup.allocated`.
static STARTUP_RSS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Notes used_memory at startup (the first server of the process to start).
pub fn note_startup_memory() {
    let used = crate::state::memory::used_memory();
    let _ = STARTUP_RSS.compare_exchange(0, used, Ordering::Relaxed, Ordering::Relaxed);
}

/// MEMORY STATS, with Redis 7.0's fields in its order. The totals are INFO memory's
/// used_memory (the counting allocator's bytes in use, docs/memory.md); the per-part overheads follow Redis' formulas for its own structures
/// (a 24-byte dict entry and an 8-byte bucket per key, a 16-byte object header) so that
/// the shares are comparable, and the allocator ratios are 1.
pub fn memory_stats(sh: &crate::state::Shared, core: &crate::state::Core) -> Reply {
    let total = crate::state::memory::used_memory();
    let peak = crate::state::memory::peak(total);
    let startup = STARTUP_RSS.load(Ordering::Relaxed).min(total);
    let lua = crate::scripting::Scripts::of_ref(&*core.scripts).memory() as u64;
    let clients: u64 = sh
        .clients
        .iter()
        .map(|h| {
            h.mem.qbuf.load(Ordering::Relaxed) as u64 + h.mem.out.load(Ordering::Relaxed) as u64
        })
        .sum();
    let int = |n: u64| Reply::Int(n.min(i64::MAX as u64) as i64);
    let mut fields = vec![
        ("peak.allocated".to_string(), int(peak)),
        ("total.allocated".into(), int(total)),
        ("startup.allocated".into(), int(startup)),
        ("replication.backlog".into(), int(0)),
        ("clients.slaves".into(), int(0)),
        ("clients.normal".into(), int(clients)),
        ("cluster.links".into(), int(0)),
        ("aof.buffer".into(), int(0)),
        ("lua.caches".into(), int(lua)),
        ("functions.caches".into(), int(0)),
    ];
    let mut overhead = startup + clients + lua;
    let mut keys = 0u64;
    for (id, db) in core.engine.dbs.iter().enumerate() {
        let n = db.len() as u64;
        if n == 0 {
            continue;
        }
        let e = db.expires_count() as u64;
        let main = n * 24 + n.next_power_of_two() * 8 + n * 16;
        let expires = e * 24 + if e == 0 { 0 } else { e.next_power_of_two() * 8 };
        overhead += main + expires;
        keys += n;
        fields.push((
            format!("db.{id}"),
            Reply::Map(vec![
                (Reply::Bulk("overhead.hashtable.main".into()), int(main)),
                (
                    Reply::Bulk("overhead.hashtable.expires".into()),
                    int(expires),
                ),
                (
                    Reply::Bulk("overhead.hashtable.slot-to-keys".into()),
                    int(0),
                ),
            ]),
        ));
    }
    let overhead = overhead.min(total);
    let dataset = total - overhead;
    let net = total - startup;
    let pct = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            part as f64 * 100.0 / whole as f64
        }
    };
    fields.extend([
        ("overhead.total".to_string(), int(overhead)),
        ("keys.count".into(), int(keys)),
        (
            "keys.bytes-per-key".into(),
            int(if keys == 0 { 0 } else { net / keys }),
        ),
        ("dataset.bytes".into(), int(dataset)),
        (
            "dataset.percentage".into(),
            Reply::Double(pct(dataset, net)),
        ),
        ("peak.percentage".into(), Reply::Double(100.0)),
        ("allocator.allocated".into(), int(total)),
        ("allocator.active".into(), int(total)),
        ("allocator.resident".into(), int(total)),
        ("allocator-fragmentation.ratio".into(), Reply::Double(1.0)),
        ("allocator-fragmentation.bytes".into(), int(0)),
        ("allocator-rss.ratio".into(), Reply::Double(1.0)),
        ("allocator-rss.bytes".into(), int(0)),
        ("rss-overhead.ratio".into(), Reply::Double(1.0)),
        ("rss-overhead.bytes".into(), int(0)),
        ("fragmentation".into(), Reply::Double(1.0)),
        ("fragmentation.bytes".into(), int(0)),
    ]);
    Reply::Map(
        fields
            .into_iter()
            .map(|(k, v)| (Reply::Bulk(k.into()), v))
            .collect(),
    )
}

crate::server_command!(["info"], |c, g, _, a| info(c, crate::state::core(g), a));
crate::server_command!(["memory"], |c, g, _, _| memory_stats(
    &c.shared,
    crate::state::core(g)
));
