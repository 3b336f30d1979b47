//! SLOWLOG's command table. The log itself lives in the server (server/src/stats/slowlog.rs):
//! it records what connections ran, which the keyspace engine never sees.

use crate::engine::spec::{flag::*, since, CommandSpec, Exec, BASE};
use crate::personality::Since;

const fn sub(name: &'static str, arity: i32, flags: u32) -> CommandSpec {
    CommandSpec {
        name,
        parent: "slowlog",
        arity,
        flags,
        group: "server",
        exec: Exec::Server,
        ..BASE
    }
}

pub static SLOWLOG_SUBS: &[CommandSpec] = &[
    sub("get", -2, ADMIN | LOADING | STALE),
    sub("len", 2, ADMIN | LOADING | STALE),
    sub("reset", 2, ADMIN | LOADING | STALE),
    sub("help", 2, LOADING | STALE),
];

const fn clog(name: &'static str, arity: i32, flags: u32, summary: &'static str) -> CommandSpec {
    CommandSpec {
        parent: "commandlog",
        since: "8.1.0",
        summary,
        ..sub(name, arity, flags)
    }
}

/// Valkey 8.1's COMMANDLOG: its `slow` type is the slow log.
pub static COMMANDLOG_SUBS: &[CommandSpec] = &[
    clog(
        "get",
        4,
        ADMIN | LOADING | STALE,
        "Returns the specified command log's entries.",
    ),
    clog(
        "help",
        2,
        LOADING | STALE,
        "Shows helpful text about the different subcommands.",
    ),
    clog(
        "len",
        3,
        ADMIN | LOADING | STALE,
        "Returns the number of entries in the specified type of command log.",
    ),
    clog(
        "reset",
        3,
        ADMIN | LOADING | STALE,
        "Clears all entries from the specified type of command log.",
    ),
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "slowlog",
        arity: -2,
        group: "server",
        since: "2.2.12",
        summary: "A container for slow log commands",
        exec: Exec::Container,
        subcommands: SLOWLOG_SUBS,
        ..BASE
    },
    since(
        Since::valkey(801),
        CommandSpec {
            name: "commandlog",
            arity: -2,
            group: "server",
            since: "8.1.0",
            summary: "A container for command log commands.",
            exec: Exec::Container,
            subcommands: COMMANDLOG_SUBS,
            ..BASE
        },
    ),
];
