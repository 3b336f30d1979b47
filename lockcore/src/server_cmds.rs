//! Connection and server commands. Most are run by the server (they touch connection
//! state, the client registry or the config); the ones that only need the keyspace run here.

use bytes::Bytes;

use crate::commands::{flag::*, CommandSpec, Ctx, Exec, BASE};
use crate::error::{self, *};
use crate::num::parse_i64;
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
    h: crate::commands::Handler,
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
const SERVER: &str = "server";

pub static CLIENT_SUBS: &[CommandSpec] = &[
    sub("client", "id", 2, NOSCRIPT | LOADING | STALE),
    sub("client", "info", 2, NOSCRIPT | LOADING | STALE),
    sub("client", "list", -2, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("client", "setname", 3, NOSCRIPT | LOADING | STALE),
    sub("client", "getname", 2, NOSCRIPT | LOADING | STALE),
    sub("client", "setinfo", 4, NOSCRIPT | LOADING | STALE),
    sub("client", "kill", -3, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("client", "reply", 3, NOSCRIPT | LOADING | STALE),
    sub("client", "no-evict", 3, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("client", "no-touch", 3, NOSCRIPT | LOADING | STALE),
    sub("client", "pause", -3, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("client", "unpause", 2, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("client", "unblock", -3, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("client", "getredir", 2, NOSCRIPT | LOADING | STALE),
    sub("client", "tracking", -3, NOSCRIPT | LOADING | STALE),
    sub("client", "caching", 3, NOSCRIPT | LOADING | STALE),
    sub("client", "trackinginfo", 2, NOSCRIPT | LOADING | STALE),
    sub("client", "help", 2, LOADING | STALE),
];

pub static CONFIG_SUBS: &[CommandSpec] = &[
    sub("config", "get", -3, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("config", "set", -4, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("config", "resetstat", 2, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("config", "rewrite", 2, ADMIN | NOSCRIPT | LOADING | STALE),
    sub("config", "help", 2, LOADING | STALE),
];

pub static COMMAND_SUBS: &[CommandSpec] = &[
    sub("command", "count", 2, LOADING | STALE),
    sub("command", "info", -2, LOADING | STALE),
    sub("command", "docs", -2, LOADING | STALE),
    sub("command", "list", -2, LOADING | STALE),
    sub("command", "getkeys", -3, LOADING | STALE),
    sub("command", "getkeysandflags", -3, LOADING | STALE),
    sub("command", "help", 2, LOADING | STALE),
];

pub static FUNCTION_SUBS: &[CommandSpec] = &[
    sub("function", "flush", -2, WRITE | NOSCRIPT),
    sub("function", "list", -2, NOSCRIPT),
    sub("function", "stats", 2, NOSCRIPT | ALLOW_BUSY),
    sub("function", "load", -3, WRITE | DENYOOM | NOSCRIPT),
    sub("function", "delete", 3, WRITE | NOSCRIPT),
    sub("function", "dump", 2, NOSCRIPT),
    sub("function", "restore", -3, WRITE | DENYOOM | NOSCRIPT),
    sub("function", "kill", 2, NOSCRIPT | ALLOW_BUSY),
    sub("function", "help", 2, LOADING | STALE),
];

const TX: &str = "transactions";

pub static COMMANDS: &[CommandSpec] = &[
    srv(
        "multi",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
        TX,
    ),
    srv("exec", 1, NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG, TX),
    srv(
        "discard",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
        TX,
    ),
    CommandSpec {
        keys: crate::commands::Keys::Range {
            first: 1,
            last: -1,
            step: 1,
        },
        ..srv(
            "watch",
            -2,
            NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
            TX,
        )
    },
    srv(
        "unwatch",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
        TX,
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
    srv("ping", -1, FAST, CONN),
    srv("echo", 2, FAST, CONN),
    srv(
        "quit",
        -1,
        ALLOW_BUSY | NO_AUTH | LOADING | STALE | FAST,
        CONN,
    ),
    srv(
        "reset",
        1,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY,
        CONN,
    ),
    srv(
        "auth",
        -2,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | SENTINEL | ALLOW_BUSY,
        CONN,
    ),
    srv(
        "hello",
        -1,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | SENTINEL | ALLOW_BUSY,
        CONN,
    ),
    eng("select", 2, LOADING | STALE | FAST, CONN, select),
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
        name: "command",
        arity: -1,
        flags: LOADING | STALE | SENTINEL,
        group: SERVER,
        exec: Exec::Server,
        subcommands: COMMAND_SUBS,
        ..BASE
    },
    srv("info", -1, LOADING | STALE | SENTINEL, SERVER),
    eng("time", 1, LOADING | STALE | FAST, SERVER, time),
    eng("dbsize", 1, READONLY | FAST, SERVER, dbsize),
    eng("flushdb", -1, WRITE, SERVER, flushdb),
    eng("flushall", -1, WRITE, SERVER, flushall),
    eng("swapdb", 3, WRITE | FAST, SERVER, swapdb),
    srv("wait", 3, NOSCRIPT, "generic"),
    srv("waitaof", 4, NOSCRIPT, "generic"),
    srv(
        "shutdown",
        -1,
        ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | SENTINEL | ALLOW_BUSY,
        SERVER,
    ),
    eng("lastsave", 1, LOADING | STALE | FAST, SERVER, lastsave),
    srv(
        "save",
        1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI,
        SERVER,
    ),
    srv("bgsave", -1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING, SERVER),
    srv("debug", -2, ADMIN | NOSCRIPT | LOADING | STALE, SERVER),
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
    memory_sub("stats", memory_stats),
    CommandSpec {
        name: "usage",
        parent: "memory",
        arity: -3,
        flags: READONLY,
        keys: crate::commands::Keys::Range {
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

const fn memory_sub(name: &'static str, h: crate::commands::Handler) -> CommandSpec {
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
    Reply::err("ERR MEMORY STATS is not supported by tumbler; see INFO memory")
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
    use crate::value::Value;
    let key_len = a[2].len();
    let Some(e) = ctx.write(&a[2]) else {
        return Reply::Null;
    };
    // Per-item overheads roughly like Redis' (dict entry, robj and sds headers).
    let body: usize = match &e.value {
        Value::Str(s) => s.len() + 16,
        Value::Hash(h) => h.map.iter().map(|(k, v)| k.len() + v.len() + 24).sum(),
        Value::List(l) => l.iter().map(|v| v.len() + 11).sum(),
        Value::ZSet(z) => z.len() * 48,
        Value::Set(s) => s.members.iter().map(|m| m.len() + 24).sum(),
        Value::Lock(l) => l.holders.iter().map(|h| h.owner.len() + 64).sum(),
        Value::Stream(s) => s
            .entries
            .values()
            .map(|f| 16 + f.iter().map(|x| x.len() + 8).sum::<usize>())
            .sum(),
    };
    Reply::Int((key_len + 40 + body) as i64)
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
    Reply::ok()
}

fn flushall(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if !flush_mode_ok(a) {
        return error::syntax();
    }
    for db in 0..ctx.eng.dbs.len() {
        flush_db(ctx.eng, db);
    }
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
    Reply::Int(ctx.eng.started_ms / 1000)
}
