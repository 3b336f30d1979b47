//! Command table entries for Lua scripting (EVAL family and SCRIPT). The server runs them
//! (`server/src/scripting`): they need the Lua state, which lives next to the engine.

use crate::engine::spec::{flag::*, since, CommandSpec, Exec, Keys, BASE};
use crate::personality::Since;

/// EVAL-style key spec: `numkeys` at argument 2, keys right after it.
const EVAL_KEYS: Keys = Keys::NumKeys {
    numkeys_at: 2,
    step: 1,
};

const fn eval(name: &'static str, extra: u32) -> CommandSpec {
    CommandSpec {
        name,
        arity: -3,
        flags: NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | CORE | extra,
        keys: EVAL_KEYS,
        acl: &["slow", "scripting"],
        group: "scripting",
        since: "2.6.0",
        exec: Exec::Server,
        ..BASE
    }
}

const fn sub(name: &'static str, arity: i32, flags: u32) -> CommandSpec {
    CommandSpec {
        name,
        parent: "script",
        arity,
        flags,
        acl: &["slow", "scripting"],
        group: "scripting",
        since: "2.6.0",
        exec: Exec::Server,
        ..BASE
    }
}

pub static SCRIPT_SUBS: &[CommandSpec] = &[
    sub("exists", -3, NOSCRIPT | CORE),
    sub("debug", 3, NOSCRIPT | CORE),
    sub("kill", 2, NOSCRIPT | ALLOW_BUSY),
    sub("help", 2, LOADING | STALE),
    sub("flush", -2, NOSCRIPT | CORE),
    sub("load", 3, NOSCRIPT | STALE | CORE),
    // Valkey 8.0: a cached script's body by SHA1.
    since(
        Since::valkey(800),
        CommandSpec {
            since: "8.0.0",
            summary: "Show server-side Lua script in the script cache.",
            ..sub("show", 3, NOSCRIPT | STALE | CORE)
        },
    ),
    // Tumbler's own (docs/scripting.md): which path a script takes, and the switch.
    sub("plan", 3, NOSCRIPT | CORE),
    sub("plans", -2, NOSCRIPT | CORE),
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        summary: "Runs a server-side Lua script.",
        ..eval("eval", 0)
    },
    CommandSpec {
        summary: "Runs a server-side Lua script by SHA1 digest.",
        ..eval("evalsha", 0)
    },
    CommandSpec {
        summary: "Runs a read-only server-side Lua script.",
        since: "7.0.0",
        ..eval("eval_ro", READONLY)
    },
    CommandSpec {
        summary: "Runs a read-only server-side Lua script by SHA1 digest.",
        since: "7.0.0",
        ..eval("evalsha_ro", READONLY)
    },
    CommandSpec {
        summary: "Invokes a function.",
        since: "7.0.0",
        ..eval("fcall", 0)
    },
    CommandSpec {
        summary: "Invokes a read-only function.",
        since: "7.0.0",
        ..eval("fcall_ro", READONLY)
    },
    CommandSpec {
        name: "script",
        arity: -2,
        acl: &["slow"],
        group: "scripting",
        since: "2.6.0",
        summary: "A container for Lua scripts management commands.",
        exec: Exec::Container,
        subcommands: SCRIPT_SUBS,
        ..BASE
    },
];
