//! Connection and server commands. Most are run by the server (they touch connection
//! state, the client registry or the config); the ones that only need the keyspace run here.

use bytes::Bytes;

use crate::engine::spec::{flag::*, since, with_acl, CommandSpec, Ctx, Exec, BASE};
use crate::error::{self, *};
use crate::num::parse_i64;
use crate::personality::Since;
use crate::reply::Reply;

/// A command the server runs.
const fn srv(name: &'static str, arity: i32, flags: u32, group: &'static str) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        group,
        exec: Exec::Server,
        ..BASE
    }
}

/// A subcommand the server runs.
const fn sub(parent: &'static str, name: &'static str, arity: i32, flags: u32) -> CommandSpec {
    CommandSpec {
        name,
        parent,
        arity,
        flags,
        exec: Exec::Server,
        ..BASE
    }
}

const fn eng(
    name: &'static str,
    arity: i32,
    flags: u32,
    group: &'static str,
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        group,
        exec: Exec::Engine(h),
        ..BASE
    }
}

const CONN: &str = "connection";
const CONN_ACL: &[&str] = &["connection"];
const SCRIPTING_ACL: &[&str] = &["scripting"];
const TX_ACL: &[&str] = &["transaction"];
const SERVER: &str = "server";

pub static CLIENT_SUBS: &[CommandSpec] = &[
    with_acl(CONN_ACL, sub("client", "id", 2, NOSCRIPT | LOADING | STALE)),
    with_acl(
        CONN_ACL,
        sub("client", "info", 2, NOSCRIPT | LOADING | STALE),
    ),
    with_acl(
        CONN_ACL,
        sub("client", "list", -2, ADMIN | NOSCRIPT | LOADING | STALE),
    ),
    with_acl(
        CONN_ACL,
        sub("client", "setname", 3, NOSCRIPT | LOADING | STALE | CORE),
    ),
    with_acl(
        CONN_ACL,
        sub("client", "getname", 2, NOSCRIPT | LOADING | STALE),
    ),
    since(
        Since::redis(702),
        with_acl(
            CONN_ACL,
            sub("client", "setinfo", 4, NOSCRIPT | LOADING | STALE),
        ),
    ),
    with_acl(
        CONN_ACL,
        sub(
            "client",
            "kill",
            -3,
            ADMIN | NOSCRIPT | LOADING | STALE | CORE,
        ),
    ),
    with_acl(
        CONN_ACL,
        sub("client", "reply", 3, NOSCRIPT | LOADING | STALE),
    ),
    with_acl(
        CONN_ACL,
        sub("client", "no-evict", 3, ADMIN | NOSCRIPT | LOADING | STALE),
    ),
    since(
        Since::redis(702),
        with_acl(
            CONN_ACL,
            sub("client", "no-touch", 3, NOSCRIPT | LOADING | STALE),
        ),
    ),
    with_acl(
        CONN_ACL,
        sub("client", "pause", -3, ADMIN | NOSCRIPT | LOADING | STALE),
    ),
    with_acl(
        CONN_ACL,
        sub("client", "unpause", 2, ADMIN | NOSCRIPT | LOADING | STALE),
    ),
    with_acl(
        CONN_ACL,
        sub(
            "client",
            "unblock",
            -3,
            ADMIN | NOSCRIPT | LOADING | STALE | CORE,
        ),
    ),
    with_acl(
        CONN_ACL,
        sub("client", "getredir", 2, NOSCRIPT | LOADING | STALE | CORE),
    ),
    with_acl(
        CONN_ACL,
        sub("client", "tracking", -3, NOSCRIPT | LOADING | STALE | CORE),
    ),
    with_acl(
        CONN_ACL,
        sub("client", "caching", 3, NOSCRIPT | LOADING | STALE | CORE),
    ),
    with_acl(
        CONN_ACL,
        sub(
            "client",
            "trackinginfo",
            2,
            NOSCRIPT | LOADING | STALE | CORE,
        ),
    ),
    with_acl(CONN_ACL, sub("client", "help", 2, LOADING | STALE)),
    // Valkey 8.0: the client's capabilities (REDIRECT: it follows -REDIRECT replies).
    since(
        Since::valkey(800),
        with_acl(
            CONN_ACL,
            sub(
                "client",
                "capa",
                -3,
                NOSCRIPT | LOADING | STALE | ALLOW_BUSY,
            ),
        ),
    ),
];

pub static CONFIG_SUBS: &[CommandSpec] = &[
    sub("config", "get", -3, ADMIN | NOSCRIPT | LOADING | STALE),
    sub(
        "config",
        "set",
        -4,
        ADMIN | NOSCRIPT | LOADING | STALE | CORE,
    ),
    sub(
        "config",
        "resetstat",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE | CORE,
    ),
    sub("config", "rewrite", 2, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("config", "help", 2, LOADING | STALE),
];

/// LATENCY: the latency monitor and the per-command histograms (server/src/stats/latency.rs).
pub static LATENCY_SUBS: &[CommandSpec] = &[
    sub("latency", "doctor", 2, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("latency", "graph", 3, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("latency", "help", 2, LOADING | STALE),
    sub(
        "latency",
        "histogram",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
    ),
    sub("latency", "history", 3, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("latency", "latest", 2, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("latency", "reset", -2, ADMIN | NOSCRIPT | LOADING | STALE),
];

pub static COMMAND_SUBS: &[CommandSpec] = &[
    with_acl(CONN_ACL, sub("command", "count", 2, LOADING | STALE)),
    with_acl(CONN_ACL, sub("command", "info", -2, LOADING | STALE)),
    with_acl(CONN_ACL, sub("command", "docs", -2, LOADING | STALE)),
    with_acl(CONN_ACL, sub("command", "list", -2, LOADING | STALE)),
    with_acl(CONN_ACL, sub("command", "getkeys", -3, LOADING | STALE)),
    with_acl(
        CONN_ACL,
        sub("command", "getkeysandflags", -3, LOADING | STALE),
    ),
    with_acl(CONN_ACL, sub("command", "help", 2, LOADING | STALE)),
];

pub static FUNCTION_SUBS: &[CommandSpec] = &[
    with_acl(
        SCRIPTING_ACL,
        sub("function", "flush", -2, WRITE | NOSCRIPT | CORE),
    ),
    with_acl(SCRIPTING_ACL, sub("function", "list", -2, NOSCRIPT | CORE)),
    with_acl(
        SCRIPTING_ACL,
        sub("function", "stats", 2, NOSCRIPT | ALLOW_BUSY),
    ),
    with_acl(
        SCRIPTING_ACL,
        sub("function", "load", -3, WRITE | DENYOOM | NOSCRIPT | CORE),
    ),
    with_acl(
        SCRIPTING_ACL,
        sub("function", "delete", 3, WRITE | NOSCRIPT | CORE),
    ),
    with_acl(SCRIPTING_ACL, sub("function", "dump", 2, NOSCRIPT | CORE)),
    with_acl(
        SCRIPTING_ACL,
        sub("function", "restore", -3, WRITE | DENYOOM | NOSCRIPT | CORE),
    ),
    with_acl(
        SCRIPTING_ACL,
        sub("function", "kill", 2, NOSCRIPT | ALLOW_BUSY),
    ),
    with_acl(SCRIPTING_ACL, sub("function", "help", 2, LOADING | STALE)),
];

/// ACL's subcommands (server/src/acl.rs runs them).
pub static ACL_SUBS: &[CommandSpec] = &[
    acl_sub(
        "cat",
        -2,
        NOSCRIPT | LOADING | STALE | SENTINEL,
        "List the ACL categories or the commands inside a category",
    ),
    acl_sub(
        "deluser",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL,
        "Remove the specified ACL users and the associated rules",
    ),
    CommandSpec {
        since: "7.0.0",
        ..acl_sub(
            "dryrun",
            -4,
            ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL,
            "Returns whether the user can execute the given command without executing the command.",
        )
    },
    acl_sub(
        "genpass",
        -2,
        NOSCRIPT | LOADING | STALE | SENTINEL,
        "Generate a pseudorandom secure password to use for ACL users",
    ),
    acl_sub(
        "getuser",
        3,
        ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL,
        "Get the rules for a specific ACL user",
    ),
    acl_sub(
        "help",
        2,
        LOADING | STALE | SENTINEL,
        "Show helpful text about the different subcommands",
    ),
    acl_sub(
        "list",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL,
        "List the current ACL rules in ACL config file format",
    ),
    acl_sub(
        "load",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL,
        "Reload the ACLs from the configured ACL file",
    ),
    acl_sub(
        "log",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL,
        "List latest events denied because of ACLs in place",
    ),
    acl_sub(
        "save",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL,
        "Save the current ACL rules in the configured ACL file",
    ),
    acl_sub(
        "setuser",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL,
        "Modify or create the rules for a specific ACL user",
    ),
    acl_sub(
        "users",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE | SENTINEL,
        "List the username of all the configured ACL rules",
    ),
    acl_sub(
        "whoami",
        2,
        NOSCRIPT | LOADING | STALE | SENTINEL,
        "Return the name of the user associated to the current connection",
    ),
];

const fn acl_sub(name: &'static str, arity: i32, flags: u32, summary: &'static str) -> CommandSpec {
    CommandSpec {
        since: "6.0.0",
        group: SERVER,
        summary,
        ..sub("acl", name, arity, flags)
    }
}

const TX: &str = "transactions";

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "acl",
        arity: -2,
        flags: SENTINEL,
        group: SERVER,
        since: "6.0.0",
        summary: "A container for Access List Control commands",
        exec: Exec::Container,
        subcommands: ACL_SUBS,
        ..BASE
    },
    with_acl(
        TX_ACL,
        srv(
            "multi",
            1,
            NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
            TX,
        ),
    ),
    with_acl(
        TX_ACL,
        srv(
            "exec",
            1,
            NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG | CORE,
            TX,
        ),
    ),
    with_acl(
        TX_ACL,
        srv(
            "discard",
            1,
            NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | CORE,
            TX,
        ),
    ),
    CommandSpec {
        keys: crate::engine::spec::Keys::Range {
            first: 1,
            last: -1,
            step: 1,
        },
        acl: TX_ACL,
        ..srv(
            "watch",
            -2,
            NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | CORE,
            TX,
        )
    },
    with_acl(
        TX_ACL,
        srv(
            "unwatch",
            1,
            NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | CORE,
            TX,
        ),
    ),
    srv("monitor", 1, ADMIN | NOSCRIPT | LOADING | STALE, SERVER),
    CommandSpec {
        name: "function",
        arity: -2,
        group: "scripting",
        exec: Exec::Container,
        subcommands: FUNCTION_SUBS,
        ..BASE
    },
    with_acl(CONN_ACL, srv("ping", -1, FAST, CONN)),
    with_acl(CONN_ACL, srv("echo", 2, FAST | LOADING | STALE, CONN)),
    with_acl(
        CONN_ACL,
        srv(
            "quit",
            -1,
            ALLOW_BUSY | NO_AUTH | LOADING | STALE | FAST | NOSCRIPT,
            CONN,
        ),
    ),
    with_acl(
        CONN_ACL,
        srv(
            "reset",
            1,
            NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | CORE,
            CONN,
        ),
    ),
    with_acl(
        CONN_ACL,
        srv(
            "auth",
            -2,
            NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | SENTINEL | ALLOW_BUSY,
            CONN,
        ),
    ),
    with_acl(
        CONN_ACL,
        srv(
            "hello",
            -1,
            NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | SENTINEL | ALLOW_BUSY,
            CONN,
        ),
    ),
    with_acl(
        CONN_ACL,
        eng("select", 2, LOADING | STALE | FAST, CONN, select),
    ),
    CommandSpec {
        name: "client",
        arity: -2,
        flags: SENTINEL,
        group: CONN,
        exec: Exec::Container,
        subcommands: CLIENT_SUBS,
        ..BASE
    },
    CommandSpec {
        name: "config",
        arity: -2,
        group: SERVER,
        exec: Exec::Container,
        subcommands: CONFIG_SUBS,
        ..BASE
    },
    CommandSpec {
        name: "latency",
        arity: -2,
        group: SERVER,
        exec: Exec::Container,
        subcommands: LATENCY_SUBS,
        ..BASE
    },
    CommandSpec {
        name: "command",
        acl: CONN_ACL,
        arity: -1,
        flags: LOADING | STALE | SENTINEL,
        group: SERVER,
        exec: Exec::Server,
        subcommands: COMMAND_SUBS,
        ..BASE
    },
    with_acl(
        &["dangerous"],
        srv("info", -1, LOADING | STALE | SENTINEL | CORE, SERVER),
    ),
    eng("time", 1, LOADING | STALE | FAST, SERVER, time),
    with_acl(
        &["keyspace"],
        eng("dbsize", 1, READONLY | FAST, SERVER, dbsize),
    ),
    with_acl(
        &["keyspace", "dangerous"],
        eng("flushdb", -1, WRITE, SERVER, flushdb),
    ),
    with_acl(
        &["keyspace", "dangerous"],
        eng("flushall", -1, WRITE, SERVER, flushall),
    ),
    with_acl(
        &["keyspace", "dangerous"],
        eng("swapdb", 3, WRITE | FAST, SERVER, swapdb),
    ),
    with_acl(CONN_ACL, srv("wait", 3, NOSCRIPT, "generic")),
    with_acl(
        &["admin", "dangerous"],
        srv(
            "role",
            1,
            NOSCRIPT | LOADING | STALE | FAST | SENTINEL,
            "replication",
        ),
    ),
    srv(
        "replicaof",
        3,
        ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING,
        "replication",
    ),
    srv(
        "slaveof",
        3,
        ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING,
        "replication",
    ),
    since(
        Since::redis(702),
        with_acl(CONN_ACL, srv("waitaof", 4, NOSCRIPT, "generic")),
    ),
    srv(
        "shutdown",
        -1,
        ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | SENTINEL | ALLOW_BUSY,
        SERVER,
    ),
    with_acl(
        &["admin", "dangerous"],
        eng("lastsave", 1, LOADING | STALE | FAST, SERVER, lastsave),
    ),
    srv(
        "save",
        1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI | CORE,
        SERVER,
    ),
    srv(
        "bgsave",
        -1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING | CORE,
        SERVER,
    ),
    srv(
        "debug",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE | CORE,
        SERVER,
    ),
    CommandSpec {
        name: "memory",
        arity: -2,
        group: SERVER,
        exec: Exec::Container,
        subcommands: MEMORY_SUBS,
        ..BASE
    },
];

/// MEMORY's subcommands (USAGE gives an estimate; the allocator reports are not kept).
pub static MEMORY_SUBS: &[CommandSpec] = &[
    memory_sub("doctor", memory_doctor),
    memory_sub("malloc-stats", memory_malloc_stats),
    memory_sub("purge", memory_purge),
    // The server fills it: it reads the process' memory, clients and the Lua VM.
    CommandSpec {
        exec: Exec::Server,
        flags: CORE,
        ..memory_sub("stats", memory_stats)
    },
    CommandSpec {
        name: "usage",
        parent: "memory",
        arity: -3,
        flags: READONLY,
        keys: crate::engine::spec::Keys::Range {
            first: 2,
            last: 2,
            step: 1,
        },
        group: SERVER,
        exec: Exec::Engine(memory_usage),
        ..BASE
    },
    CommandSpec {
        name: "help",
        parent: "memory",
        arity: 2,
        flags: LOADING | STALE,
        group: SERVER,
        exec: Exec::Engine(memory_help),
        ..BASE
    },
];

const fn memory_sub(name: &'static str, h: crate::engine::spec::Handler) -> CommandSpec {
    CommandSpec {
        name,
        parent: "memory",
        arity: 2,
        group: SERVER,
        exec: Exec::Engine(h),
        ..BASE
    }
}

fn memory_doctor(_: &mut Ctx, _: &[Bytes]) -> Reply {
    Reply::Verbatim(
        "txt",
        Bytes::from_static(b"Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base."),
    )
}

fn memory_malloc_stats(_: &mut Ctx, _: &[Bytes]) -> Reply {
    Reply::Verbatim(
        "txt",
        Bytes::from_static(b"Stats not supported for the current allocator"),
    )
}

fn memory_purge(_: &mut Ctx, _: &[Bytes]) -> Reply {
    Reply::ok()
}

fn memory_stats(_: &mut Ctx, _: &[Bytes]) -> Reply {
    // Never called: the row is Exec::Server.
    Reply::err("ERR MEMORY STATS is answered by the server")
}

/// MEMORY USAGE key [SAMPLES n]: an estimate of the bytes the key and its value use.
fn memory_usage(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let mut i = 3;
    while i < a.len() {
        if a[i].eq_ignore_ascii_case(b"samples") && i + 1 < a.len() {
            match parse_i64(&a[i + 1]) {
                Some(n) if n >= 0 => {}
                Some(_) => return error::syntax(),
                None => return error::not_integer(),
            }
            i += 2;
        } else {
            return error::syntax();
        }
    }
    use crate::storage::value::Value;
    use crate::storage::zset::malloc_size;
    let key_len = a[2].len();
    let slot = ctx.eng.dbs[ctx.cl.db].slot_bytes_per_key();
    let Some(e) = ctx.peek(&a[2]) else {
        return Reply::Null;
    };
    // What the allocator holds for a stream field or value (an argument's `Bytes`, kept
    // as the parser made it), as measured against the allocator (bench/memory.sh).
    let string = |n: usize| match n {
        0 | 1 => 0,
        2..=8 => malloc_size(16 + 8),
        9..=24 => malloc_size(16 + 24),
        25..=56 => malloc_size(16 + 56),
        n => malloc_size(n) + malloc_size(24),
    };
    // The value's own allocations, as the allocator counts them (chunk headers and size
    // classes included), for the types Tumbler packs; the others as before, per-item
    // overheads roughly like Redis'.
    let body: usize = match &e.value {
        Value::Str(s) => s.heap_bytes(),
        Value::Hash(h) => h.heap_bytes(),
        Value::List(l) => l.heap_bytes(),
        Value::ZSet(z) => z.heap_bytes(),
        Value::Set(s) => s.heap_bytes(),
        Value::Lock(l) => l.holders.iter().map(|h| h.owner.len() + 64).sum(),
        Value::VSet(v) => v.memory(),
        Value::Stream(s) => {
            use crate::storage::stream::{Group, Node, StreamId, StreamValue};
            // A BTreeMap of `n` pairs of `kv` bytes: one leaf of 11 slots up to 11 pairs,
            // then leaves about 2/3 full and an internal node per 8 leaves.
            let btree = |n: usize, kv: usize| match n {
                0 => 0,
                1..=11 => malloc_size(11 * kv + 16),
                n => (n.div_ceil(8) + n.div_ceil(64)) * malloc_size(11 * kv + 16),
            };
            let vec = |v: &Vec<Bytes>| {
                malloc_size(v.capacity() * std::mem::size_of::<Bytes>())
                    + v.iter().map(|x| string(x.len())).sum::<usize>()
            };
            let id = std::mem::size_of::<StreamId>();
            malloc_size(std::mem::size_of::<StreamValue>())
                + btree(s.entries.len(), id + std::mem::size_of::<Vec<Bytes>>())
                + s.entries.values().map(vec).sum::<usize>()
                + btree(s.nodes.len(), id + std::mem::size_of::<Node>())
                + s.nodes.values().map(|n| vec(&n.master)).sum::<usize>()
                + btree(s.groups.len(), 32 + std::mem::size_of::<Group>())
                + s.groups
                    .values()
                    .map(|g| btree(g.pel.len(), id + 40) + btree(g.consumers.len(), 96))
                    .sum::<usize>()
        }
    };
    // The key's place: its (key, entry) pair, its share of the slot table, past 22
    // bytes the key's own allocation (key.rs), and with a TTL its expiry heap entry (16
    // bytes, the heap's vector half grown on average).
    let key = std::mem::size_of::<(crate::storage::key::Key, crate::storage::value::Entry)>()
        + slot
        + if key_len > 22 {
            malloc_size(key_len)
        } else {
            0
        }
        + if e.expire_at().is_some() { 24 } else { 0 };
    Reply::Int((key + body) as i64)
}

fn memory_help(_: &mut Ctx, _: &[Bytes]) -> Reply {
    const HELP: &[&str] = &[
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Return memory problems reports.",
        "MALLOC-STATS",
        "    Return internal statistics report from the memory allocator.",
        "PURGE",
        "    Attempt to purge dirty pages for reclamation by the allocator.",
        "STATS",
        "    Return information about the memory usage of the server.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(HELP.iter().map(|l| Reply::simple(l)).collect())
}

fn select(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    // Redis: getIntFromObjectOrReply, then selectDb.
    let Some(n) = parse_i64(&a[1]) else {
        return error::not_integer();
    };
    if i32::try_from(n).is_err() {
        return Reply::err(
            "ERR value is out of range, value must between -2147483648 and 2147483647",
        );
    }
    if n < 0 || n as usize >= ctx.eng.dbs.len() {
        return Reply::err(DB_INDEX_OUT_OF_RANGE);
    }
    ctx.cl.db = n as usize;
    Reply::ok()
}

fn time(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    let us = ctx.eng.clock.now_us();
    Reply::Array(vec![
        Reply::bulk_str(&(us / 1_000_000).to_string()),
        Reply::bulk_str(&(us % 1_000_000).to_string()),
    ])
}

fn dbsize(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    Reply::Int(ctx.db().len() as i64)
}

fn flush_mode_ok(a: &[Bytes]) -> bool {
    match a.len() {
        1 => true,
        2 => a[1].eq_ignore_ascii_case(b"sync") || a[1].eq_ignore_ascii_case(b"async"),
        _ => false,
    }
}

/// Empties one db: WATCHers of its existing keys are touched, as in Redis.
pub fn flush_db(eng: &mut crate::engine::Engine, db: usize) {
    eng.touch_all_watched(db, true);
    let n = eng.dbs[db].len() as u64;
    eng.dbs[db].clear();
    eng.stats.dirty += n;
    // Locks held in this db are gone: their waiters are granted now.
    eng.signal_db(db);
}

fn flushdb(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if !flush_mode_ok(a) {
        return error::syntax();
    }
    let db = ctx.dbi();
    flush_db(ctx.eng, db);
    ctx.eng.tracking.flush();
    Reply::ok()
}

fn flushall(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if !flush_mode_ok(a) {
        return error::syntax();
    }
    for db in 0..ctx.eng.dbs.len() {
        flush_db(ctx.eng, db);
    }
    ctx.eng.tracking.flush();
    ctx.eng.stats.dirty += 1;
    Reply::ok()
}

fn swapdb(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (Some(x), Some(y)) = (parse_i64(&a[1]), parse_i64(&a[2])) else {
        return Reply::err("ERR invalid first DB index");
    };
    let n = ctx.eng.dbs.len() as i64;
    if x < 0 || x >= n || y < 0 || y >= n {
        return Reply::err(DB_INDEX_OUT_OF_RANGE);
    }
    let (x, y) = (x as usize, y as usize);
    ctx.eng.touch_swapped_watched(x, y);
    ctx.eng.dbs.swap(x, y);
    ctx.eng.signal_db(x);
    ctx.eng.signal_db(y);
    ctx.eng.stats.dirty += 1;
    Reply::ok()
}

fn lastsave(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    Reply::Int(ctx.eng.persist.last_save)
}

/// WAIT numreplicas timeout: no replicas to wait for.
pub fn wait(a: &[Bytes]) -> Reply {
    match (parse_i64(&a[1]), parse_i64(&a[2])) {
        (Some(_), Some(t)) if t >= 0 => Reply::Int(0),
        (Some(_), Some(_)) => Reply::err(error::TIMEOUT_NEGATIVE),
        _ => error::not_integer(),
    }
}

/// WAITAOF numlocal numreplicas timeout: no AOF and no replicas.
pub fn waitaof(a: &[Bytes]) -> Reply {
    let numlocal = match parse_i64(&a[1]) {
        Some(n @ 0..=1) => n,
        Some(_) => return Reply::err("ERR value is out of range, value must between 0 and 1"),
        None => return error::not_integer(),
    };
    match parse_i64(&a[2]) {
        Some(n) if n >= 0 => {}
        Some(_) => return Reply::err(error::NOT_POSITIVE),
        None => return error::not_integer(),
    }
    match parse_i64(&a[3]) {
        Some(t) if t >= 0 => {}
        Some(_) => return Reply::err(error::TIMEOUT_NEGATIVE),
        None => return Reply::err("ERR timeout is not an integer or out of range"),
    }
    if numlocal != 0 {
        return Reply::err(
            "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
        );
    }
    Reply::Array(vec![Reply::Int(0), Reply::Int(0)])
}
