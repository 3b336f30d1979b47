//! Cluster commands and Tumbler's test-control commands. Specs only; the server runs them
//! (server/src/cluster/).
//!
//! `CLUSTER ...`, `ASKING`, `READONLY` and `READWRITE` are Redis' own. `TUMBLER.NODE` (faults
//! on a node: down, up, delay, drop) and `TUMBLER.CLUSTER` (failover, slot moves) exist
//! only when the server was started with `--enable-test-control yes`; otherwise the server
//! answers exactly as for an unknown command and hides them from COMMAND, as for
//! `TUMBLER.TIME`.

use crate::engine::spec::{flag::*, since, CommandSpec, Exec, BASE};
use crate::personality::Since;

/// Container names, as COMMAND shows them.
pub const NODE: &str = "tumbler.node";
pub const CLUSTER: &str = "tumbler.cluster";
pub const REPL: &str = "tumbler.repl";

const fn sub(
    parent: &'static str,
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
) -> CommandSpec {
    CommandSpec {
        name,
        parent,
        arity,
        flags,
        group: "cluster",
        since: "3.0.0",
        summary,
        exec: Exec::Server,
        ..BASE
    }
}

const fn top(name: &'static str, arity: i32, flags: u32, summary: &'static str) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        group: "cluster",
        since: "3.0.0",
        acl: &["connection"],
        summary,
        exec: Exec::Server,
        ..BASE
    }
}

pub static CLUSTER_SUBS: &[CommandSpec] = &[
    since(
        Since::redis(702),
        CommandSpec {
            since: "7.2.0",
            ..sub(
                "cluster",
                "myshardid",
                2,
                STALE,
                "Returns the shard ID of a node.",
            )
        },
    ),
    sub(
        "cluster",
        "slots",
        2,
        LOADING | STALE,
        "Returns the mapping of cluster slots to nodes.",
    ),
    sub(
        "cluster",
        "shards",
        2,
        LOADING | STALE,
        "Returns the mapping of cluster slots to shards.",
    ),
    sub(
        "cluster",
        "nodes",
        2,
        LOADING | STALE,
        "Returns the cluster configuration for a node.",
    ),
    sub(
        "cluster",
        "myid",
        2,
        LOADING | STALE,
        "Returns the ID of a node.",
    ),
    sub(
        "cluster",
        "info",
        2,
        LOADING | STALE,
        "Returns information about the state of a node.",
    ),
    sub(
        "cluster",
        "keyslot",
        3,
        STALE,
        "Returns the hash slot for a key.",
    ),
    sub(
        "cluster",
        "countkeysinslot",
        3,
        STALE | CORE,
        "Returns the number of keys in a hash slot.",
    ),
    sub(
        "cluster",
        "getkeysinslot",
        4,
        STALE | CORE,
        "Returns the key names in a hash slot.",
    ),
    sub(
        "cluster",
        "failover",
        -2,
        ADMIN | STALE | NO_ASYNC_LOADING,
        "Forces a replica to perform a manual failover of its master.",
    ),
    sub(
        "cluster",
        "replicas",
        3,
        ADMIN | STALE,
        "Lists the replica nodes of a master node.",
    ),
    sub(
        "cluster",
        "slaves",
        3,
        ADMIN | STALE,
        "Lists the replica nodes of a master node.",
    ),
    sub(
        "cluster",
        "help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
    ),
];

// NOSCRIPT and NO_MULTI: a fault or a topology change happens between commands, never
// inside a script or a transaction.
const CTL: u32 = NOSCRIPT | NO_MULTI | LOADING | STALE;

pub static NODE_SUBS: &[CommandSpec] = &[
    sub(
        NODE,
        "down",
        3,
        CTL,
        "Marks a node down: it refuses connections and drops its clients.",
    ),
    sub(
        NODE,
        "up",
        -3,
        CTL,
        "Brings a node back up, with its data or empty (FLUSH).",
    ),
    sub(
        NODE,
        "delay",
        4,
        CTL,
        "Delays every reply of a node by some milliseconds.",
    ),
    sub(
        NODE,
        "drop",
        4,
        CTL,
        "Drops a fraction (0..1) of a node's replies.",
    ),
    sub(
        NODE,
        "list",
        2,
        CTL,
        "Lists the nodes with their port, role and faults.",
    ),
    sub(
        NODE,
        "help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
    ),
];

pub static TCLUSTER_SUBS: &[CommandSpec] = &[
    sub(
        CLUSTER,
        "failover",
        3,
        CTL,
        "Promotes a replica to primary of its shard.",
    ),
    sub(
        CLUSTER,
        "moveslot",
        -4,
        CTL,
        "Moves a slot to another node, or starts migrating it (ASK).",
    ),
    sub(
        CLUSTER,
        "migratekeys",
        4,
        CTL,
        "Moves up to COUNT keys of a migrating slot to its target.",
    ),
    sub(
        CLUSTER,
        "help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
    ),
];

pub static REPL_SUBS: &[CommandSpec] = &[
    sub(
        REPL,
        "lag",
        4,
        CTL,
        "A replica applies each write some milliseconds (of Tumbler's clock) late.",
    ),
    sub(
        REPL,
        "behind",
        4,
        CTL,
        "A replica stays a number of writes behind its primary.",
    ),
    sub(
        REPL,
        "pause",
        3,
        CTL,
        "A replica's link stalls: it applies nothing.",
    ),
    sub(
        REPL,
        "resume",
        3,
        CTL,
        "Ends a replica's lag and stall: it catches up.",
    ),
    sub(
        REPL,
        "list",
        2,
        CTL,
        "Lists the nodes with their role, offsets and lag.",
    ),
    sub(
        REPL,
        "help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
    ),
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        exec: Exec::Container,
        subcommands: CLUSTER_SUBS,
        // Redis 7.0 puts the container in @slow only (ASKING/READONLY/READWRITE are
        // @connection).
        acl: &[],
        ..top("cluster", -2, 0, "A container for Redis Cluster commands.")
    },
    top(
        "asking",
        1,
        FAST,
        "Signals that a cluster client is following an -ASK redirect.",
    ),
    top(
        "readonly",
        1,
        FAST | LOADING | STALE,
        "Enables read-only queries for a connection to a Redis Cluster replica node.",
    ),
    top(
        "readwrite",
        1,
        FAST | LOADING | STALE,
        "Enables read-write queries for a connection to a Redis Cluster replica node.",
    ),
    CommandSpec {
        exec: Exec::Container,
        subcommands: NODE_SUBS,
        since: "0.1.0",
        ..top(
            NODE,
            -2,
            0,
            "Faults on a node (tests only; --enable-test-control yes).",
        )
    },
    CommandSpec {
        exec: Exec::Container,
        subcommands: TCLUSTER_SUBS,
        since: "0.1.0",
        ..top(
            CLUSTER,
            -2,
            0,
            "Cluster topology changes (tests only; --enable-test-control yes).",
        )
    },
    CommandSpec {
        exec: Exec::Container,
        subcommands: REPL_SUBS,
        since: "0.1.0",
        ..top(
            REPL,
            -2,
            0,
            "Replication faults: lag, stalls (tests only; --enable-test-control yes).",
        )
    },
];
