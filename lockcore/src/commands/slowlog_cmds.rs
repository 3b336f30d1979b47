//! SLOWLOG's command table. The log itself lives in the server (server/src/stats/slowlog.rs):
//! it records what connections ran, which the keyspace engine never sees.

use crate::engine::spec::{flag::*, CommandSpec, Exec, BASE};

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

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "slowlog",
    arity: -2,
    group: "server",
    since: "2.2.12",
    summary: "A container for slow log commands",
    exec: Exec::Container,
    subcommands: SLOWLOG_SUBS,
    ..BASE
}];
