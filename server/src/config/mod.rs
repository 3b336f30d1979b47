//! Configuration: one table of parameters shared by the command line, the config file and
//! CONFIG GET/SET.
//!
//! Values are kept as Redis prints them in CONFIG GET; the server reads typed values through
//! the accessors and pushes the ones the keyspace needs into `lockcore::storage::config::EngineConfig`
//! whenever they change. Parameters that only make sense for a persistent or replicated
//! Redis (save, appendonly, dir, ...) are accepted and stored so that scripts and clients
//! written for redis-server work, and documented as having no effect.

pub mod percentiles;
pub mod rewrite;

use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    Bool,
    /// An integer within bounds.
    Int(i64, i64),
    /// A byte size: `512mb`, `1gb`, `100` (printed as bytes).
    Memory,
    Str,
    Enum(&'static [&'static str]),
    /// The value is validated by a dedicated function (notify-keyspace-events, save, ...).
    Special,
}

#[derive(Debug)]
pub struct Param {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub default: &'static str,
    pub kind: Kind,
    /// Can be changed with CONFIG SET (otherwise only at startup).
    pub mutable: bool,
}

const fn p(name: &'static str, default: &'static str, kind: Kind) -> Param {
    Param {
        name,
        aliases: &[],
        default,
        kind,
        mutable: true,
    }
}

const fn fixed(name: &'static str, default: &'static str, kind: Kind) -> Param {
    Param {
        name,
        aliases: &[],
        default,
        kind,
        mutable: false,
    }
}

const LOGLEVELS: &[&str] = &["debug", "verbose", "notice", "warning", "nothing"];
const BIG: i64 = i64::MAX;

/// Every parameter Tumbler knows. Those in `IGNORED` (docs/config.md, "Accepted but ignored")
/// are stored only.
pub static PARAMS: &[Param] = &[
    fixed("bind", "127.0.0.1", Kind::Str),
    fixed("port", "6379", Kind::Int(0, 65535)),
    fixed("databases", "16", Kind::Int(1, 1 << 20)),
    p("requirepass", "", Kind::Str),
    p("loglevel", "notice", Kind::Enum(LOGLEVELS)),
    fixed("logfile", "", Kind::Str),
    fixed("daemonize", "no", Kind::Bool),
    p("protected-mode", "yes", Kind::Bool),
    p("maxclients", "10000", Kind::Int(1, 4294967295)),
    p("timeout", "0", Kind::Int(0, BIG)),
    p("tcp-keepalive", "300", Kind::Int(0, BIG)),
    p("hz", "10", Kind::Int(1, 500)),
    // Byte sizes of at least 1mb (Special: the lower bound is checked in `normalize`).
    p("proto-max-bulk-len", "536870912", Kind::Special),
    p("client-query-buffer-limit", "1073741824", Kind::Special),
    Param {
        name: "busy-reply-threshold",
        aliases: &["lua-time-limit"],
        default: "5000",
        kind: Kind::Int(0, BIG),
        mutable: true,
    },
    p("notify-keyspace-events", "", Kind::Special),
    p(
        "client-output-buffer-limit",
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        Kind::Special,
    ),
    Param {
        name: "hash-max-listpack-entries",
        aliases: &["hash-max-ziplist-entries"],
        // redis-server's built-in default (redis.conf's example says 128).
        default: "512",
        kind: Kind::Int(0, BIG),
        mutable: true,
    },
    Param {
        name: "hash-max-listpack-value",
        aliases: &["hash-max-ziplist-value"],
        default: "64",
        kind: Kind::Int(0, BIG),
        mutable: true,
    },
    Param {
        name: "list-max-listpack-size",
        aliases: &["list-max-ziplist-size"],
        default: "-2",
        kind: Kind::Int(i64::MIN, BIG),
        mutable: true,
    },
    p("list-compress-depth", "0", Kind::Int(0, BIG)),
    Param {
        name: "zset-max-listpack-entries",
        aliases: &["zset-max-ziplist-entries"],
        default: "128",
        kind: Kind::Int(0, BIG),
        mutable: true,
    },
    Param {
        name: "zset-max-listpack-value",
        aliases: &["zset-max-ziplist-value"],
        default: "64",
        kind: Kind::Int(0, BIG),
        mutable: true,
    },
    p("set-max-intset-entries", "512", Kind::Int(0, BIG)),
    p("set-max-listpack-entries", "128", Kind::Int(0, BIG)),
    p("set-max-listpack-value", "64", Kind::Int(0, BIG)),
    p("hll-sparse-max-bytes", "3000", Kind::Memory),
    p("stream-node-max-bytes", "4096", Kind::Memory),
    p("stream-node-max-entries", "100", Kind::Int(0, BIG)),
    // Immutable: a client must not be able to switch time control on (server/src/commands/timectl.rs).
    fixed("enable-time-control", "no", Kind::Bool),
    // Which server Tumbler is (lockcore/src/engine/personality.rs, docs/personalities.md).
    fixed(
        "personality",
        "redis-7.2",
        Kind::Enum(&[
            "redis-7.0",
            "redis-7.2",
            "redis-7.4",
            "redis-8.0",
            "valkey-8.1",
            "valkey-9.0",
            "valkey-9.1",
        ]),
    ),
    // Prometheus /metrics on this port (server/src/observe/metrics.rs); -1 = off, 0 = a free port.
    fixed("metrics-port", "-1", Kind::Int(-1, 65535)),
    // `save` and the AOF settings are accepted for compatibility with redis-server scripts
    // (no save points, no AOF); `dir`, `dbfilename` place the RDB file (docs/rdb.md).
    p("save", "", Kind::Special),
    p("appendonly", "no", Kind::Bool),
    p(
        "appendfsync",
        "everysec",
        Kind::Enum(&["always", "everysec", "no"]),
    ),
    p("dir", "", Kind::Str),
    p("dbfilename", "dump.rdb", Kind::Str),
    p("appendfilename", "appendonly.aof", Kind::Str),
    p("maxmemory", "0", Kind::Memory),
    p(
        "maxmemory-policy",
        "noeviction",
        Kind::Enum(&[
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "noeviction",
        ]),
    ),
    p("maxmemory-samples", "5", Kind::Int(1, i32::MAX as i64)),
    p("maxmemory-eviction-tenacity", "10", Kind::Int(0, 100)),
    p("lazyfree-lazy-eviction", "no", Kind::Bool),
    p("lazyfree-lazy-expire", "no", Kind::Bool),
    p("lazyfree-lazy-server-del", "no", Kind::Bool),
    p("lazyfree-lazy-user-del", "no", Kind::Bool),
    p("lazyfree-lazy-user-flush", "no", Kind::Bool),
    // ACL users (server/src/acl.rs).
    fixed("aclfile", "", Kind::Str),
    p("acllog-max-len", "128", Kind::Int(0, BIG)),
    p(
        "acl-pubsub-default",
        "resetchannels",
        Kind::Enum(&["allchannels", "resetchannels"]),
    ),
    p("slowlog-log-slower-than", "10000", Kind::Int(-1, BIG)),
    p("slowlog-max-len", "128", Kind::Int(0, BIG)),
    p("latency-monitor-threshold", "0", Kind::Int(0, BIG)),
    p("lua-replicate-commands", "yes", Kind::Bool),
    // Tumbler's own: run scripts in the plan subset natively (docs/scripting.md).
    p("lua-native-plans", "yes", Kind::Bool),
    // The lock-order checker (docs/lockdep.md): off, on, or refusing cycle-closing acquisitions.
    p("lockdep", "no", Kind::Enum(&["no", "yes", "strict"])),
    // Which parts of a lock name become `*` in its class: u(uuids) t(hash tags) d(digit runs).
    p("lockdep-classes", "utd", Kind::Special),
    // Tumbler's own: the script profiler (docs/profiling.md).
    p("lua-profiler", "no", Kind::Bool),
    p("activerehashing", "yes", Kind::Bool),
    p("activedefrag", "no", Kind::Bool),
    p("lfu-log-factor", "10", Kind::Int(0, i32::MAX as i64)),
    p("tracking-table-max-keys", "1000000", Kind::Int(0, BIG)),
    p("lfu-decay-time", "1", Kind::Int(0, i32::MAX as i64)),
    fixed("tcp-backlog", "511", Kind::Int(0, BIG)),
    fixed("io-threads", "1", Kind::Int(1, 128)),
    // Tumbler's own: tokio worker threads; 0 = 1 on up to two cores, else one per core.
    fixed("worker-threads", "0", Kind::Int(0, 256)),
    // Tumbler's own: plain TCP connections on an epoll loop of our own (server/src/io/evloop.rs);
    // "no" runs them on tokio's scheduler as TLS and Unix-socket connections are.
    fixed("event-loop", "yes", Kind::Bool),
    // Tumbler's own: shut down when stdin reaches end of file, so a test process that starts
    // the server with a pipe it never writes to takes the server with it when it dies.
    fixed("watch-stdin", "no", Kind::Bool),
    p("replica-read-only", "yes", Kind::Bool),
    p("stop-writes-on-bgsave-error", "yes", Kind::Bool),
    p("rdbcompression", "yes", Kind::Bool),
    p("rdbchecksum", "yes", Kind::Bool),
    p("supervised", "no", Kind::Str),
    p("always-show-logo", "no", Kind::Bool),
    p("enable-debug-command", "no", Kind::Str),
    p("appenddirname", "appendonlydir", Kind::Str),
    p("aof-use-rdb-preamble", "yes", Kind::Bool),
    p("close-on-replica-write", "yes", Kind::Bool),
    p("latency-tracking", "yes", Kind::Bool),
    p(
        "latency-tracking-info-percentiles",
        "50 99 99.9",
        Kind::Special,
    ),
    p("active-expire-effort", "1", Kind::Int(1, 10)),
    p("maxmemory-clients", "0", Kind::Special),
    p(
        "sanitize-dump-payload",
        "no",
        Kind::Enum(&["no", "yes", "clients"]),
    ),
    p("repl-backlog-size", "1048576", Kind::Memory),
    Param {
        name: "replicaof",
        aliases: &["slaveof"],
        default: "",
        kind: Kind::Str,
        mutable: false,
    },
    // One process, many nodes (server/src/cluster/): `nodes` servers on ports P..P+N-1,
    // one Redis Cluster if `cluster-enabled`, faults on command if `enable-test-control`.
    fixed("nodes", "1", Kind::Int(1, 1024)),
    fixed("cluster-enabled", "no", Kind::Bool),
    fixed("cluster-replicas", "0", Kind::Int(0, 16)),
    // A primary and its replicas in one process (server/src/repl/), watched by sentinels.
    fixed("replicas", "0", Kind::Int(0, 16)),
    fixed("sentinels", "0", Kind::Int(0, 16)),
    p("replica-priority", "100", Kind::Int(0, i32::MAX as i64)),
    // Valkey 9.0: how many databases SELECT reaches in cluster mode (Redis: only db 0).
    fixed("cluster-databases", "1", Kind::Int(1, 1 << 20)),
    // Immutable, as enable-time-control: a client must not be able to switch faults on.
    fixed("enable-test-control", "no", Kind::Bool),
    // Accepted for redis-server cluster scripts and read by cluster clients; no effect.
    fixed("cluster-config-file", "nodes.conf", Kind::Str),
    p("cluster-node-timeout", "15000", Kind::Int(0, BIG)),
    p("cluster-require-full-coverage", "yes", Kind::Bool),
    p("cluster-allow-reads-when-down", "no", Kind::Bool),
    p("cluster-allow-pubsubshard-when-down", "yes", Kind::Bool),
    // The sentinels of a replication topology (`sentinels` > 0, server/src/sentinel/): the
    // name of the primary they monitor, their quorum (0: a majority), their timings, and
    // their own password (the data nodes' `requirepass` is not theirs). Read at startup.
    p("sentinel-master-name", "mymaster", Kind::Str),
    p("sentinel-quorum", "0", Kind::Int(0, 1024)),
    p(
        "sentinel-down-after-milliseconds",
        "30000",
        Kind::Int(1, BIG),
    ),
    p("sentinel-failover-timeout", "180000", Kind::Int(1, BIG)),
    p("sentinel-requirepass", "", Kind::Str),
    // Hidden (as in Redis): only an exact CONFIG GET shows it. Stored, no effect.
    p("key-load-delay", "0", Kind::Int(i64::MIN, BIG)),
    // Process surface and transports (server/src/base/process.rs, server/src/io/net/).
    fixed("pidfile", "", Kind::Str),
    fixed("unixsocket", "", Kind::Str),
    fixed("unixsocketperm", "0", Kind::Special),
    // TLS (server/src/io/net/tls.rs). `tls-port 0` is off unless given explicitly (then a
    // free port, as `--port 0`); the certificate parameters reload on CONFIG SET.
    fixed("tls-port", "0", Kind::Int(0, 65535)),
    p("tls-cert-file", "", Kind::Str),
    p("tls-key-file", "", Kind::Str),
    p("tls-key-file-pass", "", Kind::Str),
    p("tls-client-cert-file", "", Kind::Str),
    p("tls-client-key-file", "", Kind::Str),
    p("tls-client-key-file-pass", "", Kind::Str),
    p("tls-dh-params-file", "", Kind::Str),
    p("tls-ca-cert-file", "", Kind::Str),
    p("tls-ca-cert-dir", "", Kind::Str),
    p(
        "tls-auth-clients",
        "yes",
        Kind::Enum(&["no", "yes", "optional"]),
    ),
    p("tls-protocols", "", Kind::Str),
    p("tls-ciphers", "", Kind::Str),
    p("tls-ciphersuites", "", Kind::Str),
    p("tls-prefer-server-ciphers", "no", Kind::Bool),
    p("tls-session-caching", "yes", Kind::Bool),
    p("tls-session-cache-size", "20480", Kind::Int(0, BIG)),
    p("tls-session-cache-timeout", "300", Kind::Int(0, BIG)),
    p("tls-replication", "no", Kind::Bool),
    p("tls-cluster", "no", Kind::Bool),
    // The process title (Tumbler does not set one) and what SIGINT/SIGTERM skip on the way
    // out (Tumbler saves nothing and has no replicas to wait for): in IGNORED.
    p(
        "proc-title-template",
        "{title} {listen-addr} {server-mode}",
        Kind::Str,
    ),
    p("shutdown-on-sigint", "default", Kind::Special),
    p("shutdown-on-sigterm", "default", Kind::Special),
];

/// Directives Tumbler accepts and stores (CONFIG GET shows them) but that change nothing:
/// Tumbler has no save points, no AOF and no replicas, so those settings have
/// nothing to act on. The "Accepted but ignored" list in docs/config.md is this one; a test
/// keeps them in step.
pub const IGNORED: &[&str] = &[
    "save",
    "appendonly",
    "appendfsync",
    "appendfilename",
    "appenddirname",
    "aof-use-rdb-preamble",
    "stop-writes-on-bgsave-error",
    "replicaof",
    "repl-backlog-size",
    "tls-replication",
    "tls-cluster",
    "tls-client-cert-file",
    "tls-client-key-file",
    "tls-client-key-file-pass",
    "tls-session-cache-timeout",
    "io-threads",
    "supervised",
    "lazyfree-lazy-eviction",
    // Eviction runs to completion under the keyspace lock (docs/memory.md).
    "maxmemory-eviction-tenacity",
    "lazyfree-lazy-expire",
    "lazyfree-lazy-server-del",
    "lazyfree-lazy-user-del",
    "lazyfree-lazy-user-flush",
    "activerehashing",
    "activedefrag",
    "lua-replicate-commands",
    "key-load-delay",
    "proc-title-template",
    "shutdown-on-sigint",
    "shutdown-on-sigterm",
];

/// Shown by CONFIG GET of their exact name only, not by patterns. key-load-delay as in
/// Redis; and Tumbler's own start-up-only parameters, so that tools that walk `CONFIG GET *`
/// and set each value back (Redis' "CONFIG sanity" test) meet only the immutable
/// parameters redis-server itself has.
const HIDDEN: &[&str] = &[
    "key-load-delay",
    "metrics-port",
    "worker-threads",
    "event-loop",
    "watch-stdin",
    "personality",
    "cluster-databases",
];

/// Whether the server `p` imitates has the parameter `name` (canonical): Redis 7.0 has no
/// set listpack, so no `set-max-listpack-*` (CONFIG GET does not list them, CONFIG SET
/// refuses them as unknown, as redis-server 7.0.15 does).
pub fn exists_in(name: &str, p: lockcore::personality::Personality) -> bool {
    match name {
        "set-max-listpack-entries" | "set-max-listpack-value" => {
            p.has(lockcore::personality::Since::redis(702))
        }
        _ => true,
    }
}

pub fn find(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| {
        p.name.eq_ignore_ascii_case(name) || p.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    })
}

/// Parses `512mb`, `1gb`, `100k`, `100` into bytes (Redis' `memtoull`).
pub fn parse_memory(s: &str) -> Option<i64> {
    let l = s.to_ascii_lowercase();
    let (num, mul) = [
        ("gb", 1i64 << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
        ("g", 1_000_000_000),
        ("m", 1_000_000),
        ("k", 1000),
        ("b", 1),
    ]
    .iter()
    .find_map(|(suf, m)| l.strip_suffix(suf).map(|n| (n.to_string(), *m)))
    .unwrap_or((l.clone(), 1));
    let n: i64 = num.parse().ok()?;
    if n < 0 {
        return None;
    }
    n.checked_mul(mul)
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}

/// Validates and normalizes a value for `param`. Returns the text CONFIG GET will print.
pub fn normalize(param: &Param, value: &str) -> Result<String, String> {
    match param.kind {
        Kind::Bool => parse_bool(value)
            .map(|b| if b { "yes" } else { "no" }.to_string())
            .ok_or_else(|| "argument must be 'yes' or 'no'".to_string()),
        Kind::Int(lo, hi) => {
            let n: i64 = value
                .parse()
                .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
            if n < lo || n > hi {
                return Err(format!("argument must be between {lo} and {hi} inclusive"));
            }
            Ok(n.to_string())
        }
        Kind::Memory => parse_memory(value)
            .map(|n| n.to_string())
            .ok_or_else(|| "argument must be a memory value".to_string()),
        Kind::Str => Ok(value.to_string()),
        Kind::Enum(choices) => {
            let l = value.to_ascii_lowercase();
            if choices.contains(&l.as_str()) {
                Ok(l)
            } else {
                // loglevel also takes 7.2's `nothing`, but the message lists 7.0's choices.
                let listed: Vec<&str> = choices
                    .iter()
                    .copied()
                    .filter(|c| *c != "nothing")
                    .collect();
                Err("argument(s) must be one of the following: ".to_string() + &listed.join(", "))
            }
        }
        Kind::Special => match param.name {
            "notify-keyspace-events" => {
                lockcore::storage::notify::NotifyFlags::parse(value.as_bytes())
                    .map(|f| f.to_config_string())
                    .ok_or_else(|| {
                        "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string()
                    })
            }
            "client-output-buffer-limit" => parse_output_limits(value),
            "lockdep-classes" => lockcore::engine::locks::lockdep::ClassRules::parse(value)
                .map(|r| r.to_config_string())
                .ok_or_else(|| "argument must be made of the letters u, t and d".to_string()),
            "latency-tracking-info-percentiles" => percentiles::normalize_percentiles(value),
            "shutdown-on-sigint" | "shutdown-on-sigterm" => normalize_shutdown_flags(value),
            // Pairs of seconds (>= 1) and changes (>= 0), or nothing; kept, never acted on.
            "save" => {
                let words: Vec<&str> = value.split_whitespace().collect();
                let valid = words.len() % 2 == 0
                    && words.iter().enumerate().all(|(j, w)| {
                        w.parse::<i64>()
                            .is_ok_and(|n| n >= if j % 2 == 0 { 1 } else { 0 })
                    });
                if valid {
                    Ok(words.join(" "))
                } else {
                    Err("Invalid save parameters".into())
                }
            }
            "proto-max-bulk-len" | "client-query-buffer-limit" => match parse_memory(value) {
                Some(n) if n >= 1 << 20 => Ok(n.to_string()),
                Some(_) => {
                    Err("argument must be between 1048576 and 9223372036854775807 inclusive".into())
                }
                None => Err("argument must be a memory value".into()),
            },
            "maxmemory-clients" => match value.strip_suffix('%') {
                Some(pct) => match pct.parse::<i64>() {
                    Ok(n) if n > 100 => {
                        Err("percentage argument must be less or equal to 100".into())
                    }
                    Ok(n) if n >= 0 => Ok(format!("{n}%")),
                    _ => Err("argument must be a memory or percent value".into()),
                },
                None => parse_memory(value)
                    .map(|n| n.to_string())
                    .ok_or_else(|| "argument must be a memory or percent value".into()),
            },
            // An octal file mode, as redis-server reads it (`700`, `0770`).
            "unixsocketperm" => i64::from_str_radix(value, 8)
                .ok()
                .filter(|n| (0..=0o777).contains(n))
                .map(|n| format!("{n:o}"))
                .ok_or_else(|| "argument couldn't be parsed into an integer".to_string()),
            _ => Ok(value.to_string()),
        },
    }
}

/// `shutdown-on-sig*`: `default`, or any of `save`/`nosave`, `now`, `force`, printed in
/// that order as Redis prints its flags.
fn normalize_shutdown_flags(value: &str) -> Result<String, String> {
    let bad = || {
        "argument(s) must be one of the following: default, save, nosave, now, force".to_string()
    };
    let words: Vec<String> = value
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    if words.is_empty() {
        return Err(bad());
    }
    if words.iter().any(|w| w == "default") {
        return if words.len() == 1 {
            Ok("default".into())
        } else {
            Err(bad())
        };
    }
    if words
        .iter()
        .any(|w| !matches!(w.as_str(), "save" | "nosave" | "now" | "force"))
    {
        return Err(bad());
    }
    let has = |f: &str| words.iter().any(|w| w == f);
    if has("save") && has("nosave") {
        return Err(bad());
    }
    Ok(["save", "nosave", "now", "force"]
        .into_iter()
        .filter(|f| has(f))
        .collect::<Vec<_>>()
        .join(" "))
}

/// Directives that take several arguments (Redis' MULTI_ARG configs, and the lists it
/// reads as one line). Every other directive takes exactly one: `port 6379 6380` is Redis'
/// "wrong number of arguments".
pub const MULTI_ARG: &[&str] = &[
    "save",
    "bind",
    "client-output-buffer-limit",
    "latency-tracking-info-percentiles",
    "oom-score-adj-values",
    "shutdown-on-sigint",
    "shutdown-on-sigterm",
];

/// Applies one directive given as its words (`["port", "6380"]`), from a config-file line
/// or the command line, with Redis' arity rule.
pub fn apply_args(
    cfg: &mut Config,
    args: &[String],
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let name = args[0].to_ascii_lowercase();
    if name == "user" {
        // Kept as separate arguments: a quoted password may contain spaces. One argument
        // holding a whole rule list (`--user "app on >pass ~* +@all"`, docs/clients.md) is
        // split into its words, where redis-server would refuse the spaces in the name.
        let rules = match &args[1..] {
            [one] if one.contains(char::is_whitespace) => {
                one.split_whitespace().map(str::to_string).collect()
            }
            rest => rest.to_vec(),
        };
        cfg.acl_users.push(rules);
        return Ok(());
    }
    if let Some(p) = find(&name) {
        if args.len() != 2 && !MULTI_ARG.contains(&p.name) {
            return Err("wrong number of arguments".into());
        }
    }
    let value = args[1..].join(" ");
    apply_directive(cfg, &name, &value, warnings)
}

/// Validates `class hard soft seconds [class ...]`, merging into the defaults.
fn parse_output_limits(value: &str) -> Result<String, String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    if words.len() % 4 != 0 {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut classes: BTreeMap<&str, [i64; 3]> = BTreeMap::new();
    classes.insert("normal", [0, 0, 0]);
    classes.insert("slave", [268435456, 67108864, 60]);
    classes.insert("pubsub", [33554432, 8388608, 60]);
    for c in words.chunks(4) {
        let class = match c[0].to_ascii_lowercase().as_str() {
            "normal" => "normal",
            "slave" | "replica" => "slave",
            "pubsub" => "pubsub",
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into())
            }
        };
        let hard = parse_memory(c[1])
            .ok_or("Error in hard, soft or soft_seconds setting in buffer limit configuration.")?;
        let soft = parse_memory(c[2])
            .ok_or("Error in hard, soft or soft_seconds setting in buffer limit configuration.")?;
        let secs: i64 =
            c[3].parse().ok().filter(|s| *s >= 0).ok_or(
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
            )?;
        classes.insert(class, [hard, soft, secs]);
    }
    Ok(["normal", "slave", "pubsub"]
        .iter()
        .map(|c| {
            let [h, s, t] = classes[c];
            format!("{c} {h} {s} {t}")
        })
        .collect::<Vec<_>>()
        .join(" "))
}

/// A parameter the code reads, named by a constant in [`key`] (`key::MAXMEMORY`): a
/// misspelt constant does not compile, and a test checks every constant names a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key(&'static str);

impl Key {
    pub fn name(self) -> &'static str {
        self.0
    }
}

/// The parameters the code reads.
/// Declares the key constants and [`key::ALL`], the list the test checks against the table.
macro_rules! keys {
    ($($name:ident = $param:literal,)+) => {
        $(pub const $name: Key = Key($param);)+
        /// Every key above.
        pub const ALL: &[Key] = &[$($name),+];
    };
}

pub mod key {
    use super::Key;

    keys! {
        ACLFILE = "aclfile",
        ACLLOG_MAX_LEN = "acllog-max-len",
        ACL_PUBSUB_DEFAULT = "acl-pubsub-default",
        ALWAYS_SHOW_LOGO = "always-show-logo",
        BIND = "bind",
        BUSY_REPLY_THRESHOLD = "busy-reply-threshold",
        CLIENT_OUTPUT_BUFFER_LIMIT = "client-output-buffer-limit",
        CLIENT_QUERY_BUFFER_LIMIT = "client-query-buffer-limit",
        CLUSTER_DATABASES = "cluster-databases",
        CLUSTER_ENABLED = "cluster-enabled",
        CLUSTER_REPLICAS = "cluster-replicas",
        REPLICAS = "replicas",
        REPLICA_PRIORITY = "replica-priority",
        REPLICA_READ_ONLY = "replica-read-only",
        DAEMONIZE = "daemonize",
        DATABASES = "databases",
        DBFILENAME = "dbfilename",
        DIR = "dir",
        ENABLE_TEST_CONTROL = "enable-test-control",
        ENABLE_TIME_CONTROL = "enable-time-control",
        EVENT_LOOP = "event-loop",
        HASH_MAX_LISTPACK_ENTRIES = "hash-max-listpack-entries",
        HASH_MAX_LISTPACK_VALUE = "hash-max-listpack-value",
        HLL_SPARSE_MAX_BYTES = "hll-sparse-max-bytes",
        HZ = "hz",
        LATENCY_MONITOR_THRESHOLD = "latency-monitor-threshold",
        LATENCY_TRACKING = "latency-tracking",
        LATENCY_TRACKING_INFO_PERCENTILES = "latency-tracking-info-percentiles",
        LFU_DECAY_TIME = "lfu-decay-time",
        LFU_LOG_FACTOR = "lfu-log-factor",
        LIST_MAX_LISTPACK_SIZE = "list-max-listpack-size",
        LOCKDEP = "lockdep",
        LOCKDEP_CLASSES = "lockdep-classes",
        LOGFILE = "logfile",
        LOGLEVEL = "loglevel",
        LUA_NATIVE_PLANS = "lua-native-plans",
        LUA_PROFILER = "lua-profiler",
        MAXCLIENTS = "maxclients",
        MAXMEMORY = "maxmemory",
        MAXMEMORY_POLICY = "maxmemory-policy",
        MAXMEMORY_SAMPLES = "maxmemory-samples",
        METRICS_PORT = "metrics-port",
        NODES = "nodes",
        NOTIFY_KEYSPACE_EVENTS = "notify-keyspace-events",
        PERSONALITY = "personality",
        PIDFILE = "pidfile",
        PORT = "port",
        PROTECTED_MODE = "protected-mode",
        PROTO_MAX_BULK_LEN = "proto-max-bulk-len",
        RDBCHECKSUM = "rdbchecksum",
        RDBCOMPRESSION = "rdbcompression",
        REQUIREPASS = "requirepass",
        SAVE = "save",
        SENTINELS = "sentinels",
        SET_MAX_INTSET_ENTRIES = "set-max-intset-entries",
        SET_MAX_LISTPACK_ENTRIES = "set-max-listpack-entries",
        SET_MAX_LISTPACK_VALUE = "set-max-listpack-value",
        SLOWLOG_LOG_SLOWER_THAN = "slowlog-log-slower-than",
        SLOWLOG_MAX_LEN = "slowlog-max-len",
        STREAM_NODE_MAX_BYTES = "stream-node-max-bytes",
        STREAM_NODE_MAX_ENTRIES = "stream-node-max-entries",
        TCP_BACKLOG = "tcp-backlog",
        TLS_AUTH_CLIENTS = "tls-auth-clients",
        TLS_CA_CERT_DIR = "tls-ca-cert-dir",
        TLS_CA_CERT_FILE = "tls-ca-cert-file",
        TLS_CERT_FILE = "tls-cert-file",
        TLS_CIPHERS = "tls-ciphers",
        TLS_CIPHERSUITES = "tls-ciphersuites",
        TLS_CLUSTER = "tls-cluster",
        TLS_DH_PARAMS_FILE = "tls-dh-params-file",
        TLS_KEY_FILE = "tls-key-file",
        TLS_KEY_FILE_PASS = "tls-key-file-pass",
        TLS_PORT = "tls-port",
        TLS_PREFER_SERVER_CIPHERS = "tls-prefer-server-ciphers",
        TLS_PROTOCOLS = "tls-protocols",
        TLS_REPLICATION = "tls-replication",
        TLS_SESSION_CACHE_SIZE = "tls-session-cache-size",
        TLS_SESSION_CACHING = "tls-session-caching",
        TRACKING_TABLE_MAX_KEYS = "tracking-table-max-keys",
        UNIXSOCKET = "unixsocket",
        UNIXSOCKETPERM = "unixsocketperm",
        WATCH_STDIN = "watch-stdin",
        WORKER_THREADS = "worker-threads",
        ZSET_MAX_LISTPACK_ENTRIES = "zset-max-listpack-entries",
        ZSET_MAX_LISTPACK_VALUE = "zset-max-listpack-value",
    }
}

/// The current value of every parameter.
#[derive(Debug, Clone)]
pub struct Config {
    values: BTreeMap<&'static str, String>,
    /// Parameters set by the user (file, flag, env, CONFIG SET) rather than left at their
    /// default: `tls-port 0` given explicitly means "a free port", left alone means "off".
    explicit: std::collections::BTreeSet<&'static str>,
    /// `user <name> <rules...>` lines (redis.conf or `--user "..."`), loaded by acl.rs.
    pub acl_users: Vec<Vec<String>>,
    /// The config file the server started from (absolute), for CONFIG REWRITE.
    pub file: Option<std::path::PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            values: PARAMS
                .iter()
                .map(|p| (p.name, p.default.to_string()))
                .collect(),
            explicit: Default::default(),
            acl_users: Vec::new(),
            file: None,
        }
    }
}

impl Config {
    /// A parameter's value, by its [`key`]: a misspelt name does not compile.
    pub fn get(&self, key: Key) -> &str {
        self.get_by_name(key.0)
    }
    pub fn get_i64(&self, key: Key) -> i64 {
        self.get(key).parse().unwrap_or(0)
    }
    /// The `personality` directive's server (validated when set).
    pub fn personality(&self) -> lockcore::personality::Personality {
        lockcore::personality::Personality::parse(self.get(key::PERSONALITY)).unwrap_or_default()
    }

    pub fn get_bool(&self, key: Key) -> bool {
        self.get(key) == "yes"
    }
    /// A parameter's value by a name known only at run time (CONFIG GET, REWRITE); "" for
    /// a name that is no parameter.
    pub fn get_by_name(&self, name: &str) -> &str {
        find(name)
            .and_then(|p| self.values.get(p.name))
            .map(|s| s.as_str())
            .unwrap_or("")
    }

    /// Sets a parameter (startup or CONFIG SET). `Err` carries Redis' reason text.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let param = find(name).ok_or_else(|| "Unknown option".to_string())?;
        // Classes not named keep their current limits (CONFIG SET and each redis.conf line
        // change only the classes they list, as in Redis).
        let merged;
        let value = if param.name == "client-output-buffer-limit" {
            merged = format!("{} {value}", self.values[param.name]);
            &merged
        } else {
            value
        };
        let v = normalize(param, value)?;
        self.values.insert(param.name, v);
        self.explicit.insert(param.name);
        Ok(())
    }

    /// Sets a value as a default: like [`Config::set`], but not counted as given by the
    /// user (the embedding API's `port 0` stays "a free port" next to a `tls-port`).
    pub fn preset(&mut self, name: &str, value: &str) -> Result<(), String> {
        self.set(name, value)?;
        if let Some(p) = find(name) {
            self.explicit.remove(p.name);
        }
        Ok(())
    }

    /// True if `name` was set rather than left at its default.
    pub fn is_set(&self, name: &str) -> bool {
        find(name).is_some_and(|p| self.explicit.contains(p.name))
    }

    /// (name, value) pairs for every parameter (and alias) matching the glob `pattern`.
    pub fn matching(&self, pattern: &[u8]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let personality = self.personality();
        for p in PARAMS {
            if !exists_in(p.name, personality) {
                continue;
            }
            let v = &self.values[p.name];
            let hidden = HIDDEN.contains(&p.name);
            for n in std::iter::once(&p.name).chain(p.aliases.iter()) {
                let hit = if hidden {
                    n.as_bytes().eq_ignore_ascii_case(pattern)
                } else {
                    lockcore::glob::matches(pattern, n.as_bytes(), true)
                };
                if hit {
                    out.push((n.to_string(), v.clone()));
                }
            }
        }
        out
    }

    /// The pubsub class limits: (hard, soft, soft seconds).
    pub fn pubsub_output_limit(&self) -> (i64, i64, i64) {
        self.output_limit("pubsub")
    }

    /// One class of `client-output-buffer-limit` (`normal`, `slave`, `pubsub`): (hard, soft,
    /// soft seconds).
    pub fn output_limit(&self, class: &str) -> (i64, i64, i64) {
        let words: Vec<&str> = self
            .get(crate::config::key::CLIENT_OUTPUT_BUFFER_LIMIT)
            .split_whitespace()
            .collect();
        for c in words.chunks(4) {
            if c.len() == 4 && c[0] == class {
                return (
                    c[1].parse().unwrap_or(0),
                    c[2].parse().unwrap_or(0),
                    c[3].parse().unwrap_or(0),
                );
            }
        }
        (0, 0, 0)
    }
}

/// Outcome of reading a config file: the warnings to log for directives we ignore.
pub fn load_file(cfg: &mut Config, text: &str) -> Result<Vec<String>, String> {
    let mut warnings = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(args) = crate::resp::split_args(line.as_bytes()) else {
            return Err(format!("line {}: unbalanced quotes", i + 1));
        };
        let args: Vec<String> = args
            .into_iter()
            .map(|a| String::from_utf8_lossy(&a).into_owned())
            .collect();
        apply_args(cfg, &args, &mut warnings)
            .map_err(|e| format!("line {}: '{}': {}", i + 1, line, e))?;
    }
    Ok(warnings)
}

/// Applies one `name value` directive from a file or the command line. Unknown directives
/// are warnings, not errors, so a redis.conf written for redis-server still starts.
pub fn apply_directive(
    cfg: &mut Config,
    name: &str,
    value: &str,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    if name == "user" {
        cfg.acl_users
            .push(value.split_whitespace().map(str::to_string).collect());
        return Ok(());
    }
    let Some(param) = find(name) else {
        warnings.push(format!("ignoring unsupported directive '{name}'"));
        return Ok(());
    };
    // Asking an ignored directive for something (`appendonly yes`, `save 900 1`) deserves
    // a word; its default value does not.
    let given = if value == "\"\"" { "" } else { value };
    if IGNORED.contains(&param.name)
        && normalize(param, given).ok().as_deref() != Some(param.default)
    {
        let w = format!(
            "'{}' is accepted but has no effect: Tumbler has no save points, no AOF and no replicas",
            param.name
        );
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    // redis.conf may repeat `save` lines; keep them all.
    if name == "save"
        && !cfg.get(crate::config::key::SAVE).is_empty()
        && !value.is_empty()
        && value != "\"\""
    {
        let merged = format!("{} {}", cfg.get(crate::config::key::SAVE), value);
        return cfg.set("save", &merged);
    }
    // `bind` lists addresses (server/src/net binds each; `-addr` is optional).
    let value = if name == "bind" {
        let words: Vec<&str> = value.split_whitespace().collect();
        if words.is_empty() {
            return Err("Too many bind addresses specified.".into());
        }
        words.join(" ")
    } else {
        value.to_string()
    };
    cfg.set(name, &value)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_key_names_a_parameter() {
        for key in super::key::ALL {
            let name = key.name();
            let p = super::find(name).unwrap_or_else(|| panic!("key {name} is no parameter"));
            assert_eq!(p.name, name, "key {name} uses an alias; name the parameter");
        }
        assert!(super::key::ALL.len() > 50, "{} keys", super::key::ALL.len());
    }

    use super::*;

    #[test]
    fn parses_memory_like_redis() {
        assert_eq!(parse_memory("512mb"), Some(512 << 20));
        assert_eq!(parse_memory("1gb"), Some(1 << 30));
        assert_eq!(parse_memory("100"), Some(100));
        assert_eq!(parse_memory("x"), None);
    }

    #[test]
    fn aliases_and_globs() {
        let mut c = Config::default();
        c.set("lua-time-limit", "100").unwrap();
        assert_eq!(c.get(crate::config::key::BUSY_REPLY_THRESHOLD), "100");
        let m = c.matching(b"*time-limit");
        assert_eq!(m, vec![("lua-time-limit".to_string(), "100".to_string())]);
        assert!(c.set("maxclients", "abc").is_err());
        assert!(c.set("nope", "1").is_err());
    }

    #[test]
    fn ignored_directives_are_known_and_listed_in_the_docs() {
        let doc = include_str!("../../../docs/config.md");
        let section = doc
            .split("## Accepted but ignored")
            .nth(1)
            .and_then(|s| s.split("\n## ").next())
            .expect("docs/config.md section 'Accepted but ignored'");
        for name in IGNORED {
            assert!(find(name).is_some(), "{name} is not a parameter");
            assert!(
                section.contains(&format!("`{name}`")),
                "{name} missing from the docs/config.md list"
            );
        }
        // And the other way: every parameter docs/config.md lists there is in IGNORED.
        for (i, word) in section.split('`').enumerate() {
            if i % 2 == 1 && find(word).is_some() {
                assert!(
                    IGNORED.contains(&word),
                    "docs/config.md lists {word}, IGNORED does not"
                );
            }
        }
    }

    #[test]
    fn explicit_tls_port_zero_and_octal_socket_perm() {
        let mut c = Config::default();
        assert!(!c.is_set("tls-port"));
        c.set("tls-port", "0").unwrap();
        assert!(c.is_set("tls-port"));
        c.preset("port", "0").unwrap();
        assert!(!c.is_set("port"));
        c.set("unixsocketperm", "0770").unwrap();
        assert_eq!(c.get(crate::config::key::UNIXSOCKETPERM), "770");
        assert!(c.set("unixsocketperm", "999").is_err());
        let mut w = Vec::new();
        apply_directive(&mut c, "bind", "127.0.0.1   -::1", &mut w).unwrap();
        assert_eq!(c.get(crate::config::key::BIND), "127.0.0.1 -::1");
    }

    #[test]
    fn config_file_with_unknown_directives_loads() {
        let mut c = Config::default();
        let w = load_file(
            &mut c,
            "port 7777\nsave 900 1\nsave 300 10\nsome-future-thing yes\nrequirepass \"s e\"\n",
        )
        .unwrap();
        assert_eq!(c.get(crate::config::key::PORT), "7777");
        assert_eq!(c.get(crate::config::key::SAVE), "900 1 300 10");
        assert_eq!(c.get(crate::config::key::REQUIREPASS), "s e");
        assert_eq!(
            w,
            [
                "'save' is accepted but has no effect: Tumbler has no save points, no AOF and no replicas",
                "ignoring unsupported directive 'some-future-thing'"
            ]
        );
        let mut w = Vec::new();
        apply_directive(&mut c, "appendonly", "no", &mut w).unwrap();
        apply_directive(&mut c, "save", "", &mut w).unwrap();
        assert!(w.is_empty(), "{w:?}");
    }
}
