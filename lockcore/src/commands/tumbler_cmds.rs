//! Tumbler's own commands (not in Redis). Specs only; the server runs them.
//!
//! `TUMBLER.TIME` moves the server's clock from tests: every TTL, active expiry, blocking
//! timeout and lock lease reads that clock, so a test can let a 30 s lease lapse in
//! microseconds. It exists only when the server was started with
//! `--enable-time-control yes`; otherwise the server answers exactly as for an unknown
//! command and hides it from COMMAND (server/src/commands/timectl.rs).

use crate::engine::spec::{flag::*, CommandSpec, Exec, BASE};

/// The container's name as COMMAND shows it.
pub const TIME: &str = "tumbler.time";

const fn sub(name: &'static str, arity: i32, flags: u32, summary: &'static str) -> CommandSpec {
    CommandSpec {
        name,
        parent: TIME,
        arity,
        // Every TUMBLER.TIME and TUMBLER.PROFILE subcommand runs under the keyspace lock.
        flags: flags | CORE,
        group: "server",
        since: "0.1.0",
        summary,
        exec: Exec::Server,
        ..BASE
    }
}

// NOSCRIPT: a script sees time stand still (as in Redis), so moving it from inside one
// would be meaningless. NO_MULTI: ADVANCE fires expiry and serves blocked clients, which
// must not happen between the commands of a transaction.
const FLAGS: u32 = NOSCRIPT | NO_MULTI | LOADING | STALE | FAST;

pub static TIME_SUBS: &[CommandSpec] = &[
    sub(
        "advance",
        3,
        FLAGS,
        "Moves the server clock forward by a number of milliseconds.",
    ),
    sub(
        "freeze",
        2,
        FLAGS,
        "Stops the server clock; TTLs and timeouts stop counting down.",
    ),
    sub(
        "resume",
        2,
        FLAGS,
        "Lets a frozen server clock run again from where it stopped.",
    ),
    sub(
        "now",
        2,
        FLAGS,
        "Returns the server clock in Unix milliseconds.",
    ),
    sub(
        "help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
    ),
];

/// The script profiler's container (server/src/scripting/profile.rs, docs/profiling.md).
pub const PROFILE: &str = "tumbler.profile";

const fn profile_sub(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
) -> CommandSpec {
    CommandSpec {
        parent: PROFILE,
        ..sub(name, arity, flags, summary)
    }
}

// NOSCRIPT: a script reading its own half-built profile would see nothing useful.
pub static PROFILE_SUBS: &[CommandSpec] = &[
    profile_sub(
        "get",
        -2,
        NOSCRIPT | LOADING | STALE,
        "Returns the per-line profile of one script or of every profiled script.",
    ),
    profile_sub(
        "reset",
        2,
        NOSCRIPT | LOADING | STALE,
        "Forgets every script profile.",
    ),
    profile_sub(
        "help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
    ),
];

/// RDB snapshots of the whole keyspace (server/src/commands/rdb.rs, docs/rdb.md).
pub const RDB: &str = "tumbler.rdb";

const fn rdb_sub(name: &'static str, arity: i32, flags: u32, summary: &'static str) -> CommandSpec {
    CommandSpec {
        parent: RDB,
        ..sub(name, arity, flags, summary)
    }
}

pub static RDB_SUBS: &[CommandSpec] = &[
    rdb_sub(
        "save",
        2,
        ADMIN | NOSCRIPT | NO_MULTI,
        "Returns the whole keyspace as an RDB file, writing nothing to disk.",
    ),
    rdb_sub(
        "load",
        3,
        ADMIN | NOSCRIPT | NO_MULTI,
        "Replaces every database with the contents of an RDB file.",
    ),
    rdb_sub(
        "help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
    ),
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: TIME,
        arity: -2,
        flags: 0,
        group: "server",
        since: "0.1.0",
        summary: "A container for time-control commands (tests only; --enable-time-control yes).",
        exec: Exec::Container,
        subcommands: TIME_SUBS,
        ..BASE
    },
    CommandSpec {
        name: PROFILE,
        arity: -2,
        flags: 0,
        group: "server",
        since: "0.1.0",
        summary: "A container for the Lua script profiler (CONFIG SET lua-profiler yes).",
        exec: Exec::Container,
        subcommands: PROFILE_SUBS,
        ..BASE
    },
    CommandSpec {
        name: RDB,
        arity: -2,
        flags: 0,
        group: "server",
        since: "0.1.0",
        summary: "A container for RDB snapshot commands (TUMBLER.RDB SAVE|LOAD).",
        exec: Exec::Container,
        subcommands: RDB_SUBS,
        ..BASE
    },
];
