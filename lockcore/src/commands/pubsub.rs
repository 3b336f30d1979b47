//! Pub/sub commands. Subscriptions are connection state and live in the server; PUBLISH runs
//! here so that scripts and MULTI can publish through the same path.

use bytes::Bytes;

use crate::engine::spec::{flag::*, CommandSpec, Ctx, Exec, Keys, BASE, KEY1};
use crate::reply::Reply;

const fn srv(name: &'static str, arity: i32, flags: u32, keys: Keys) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        keys,
        group: "pubsub",
        acl: &["pubsub"],
        exec: Exec::Server,
        ..BASE
    }
}

const fn sub(name: &'static str, arity: i32) -> CommandSpec {
    CommandSpec {
        name,
        parent: "pubsub",
        arity,
        flags: PUBSUB | LOADING | STALE,
        group: "pubsub",
        exec: Exec::Server,
        ..BASE
    }
}

pub static PUBSUB_SUBS: &[CommandSpec] = &[
    sub("channels", -2),
    sub("numsub", -2),
    sub("numpat", 2),
    sub("shardchannels", -2),
    sub("shardnumsub", -2),
    CommandSpec {
        flags: LOADING | STALE,
        ..sub("help", 2)
    },
];

const ALL: Keys = Keys::Range {
    first: 1,
    last: -1,
    step: 1,
};

pub static COMMANDS: &[CommandSpec] = &[
    srv(
        "subscribe",
        -2,
        PUBSUB | NOSCRIPT | LOADING | STALE,
        Keys::None,
    ),
    srv(
        "unsubscribe",
        -1,
        PUBSUB | NOSCRIPT | LOADING | STALE,
        Keys::None,
    ),
    srv(
        "psubscribe",
        -2,
        PUBSUB | NOSCRIPT | LOADING | STALE,
        Keys::None,
    ),
    srv(
        "punsubscribe",
        -1,
        PUBSUB | NOSCRIPT | LOADING | STALE,
        Keys::None,
    ),
    srv("ssubscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE, ALL),
    srv("sunsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE, ALL),
    CommandSpec {
        exec: Exec::Engine(publish),
        ..srv(
            "publish",
            3,
            PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE,
            Keys::None,
        )
    },
    CommandSpec {
        exec: Exec::Engine(spublish),
        ..srv(
            "spublish",
            3,
            PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE,
            KEY1,
        )
    },
    CommandSpec {
        exec: Exec::Container,
        subcommands: PUBSUB_SUBS,
        acl: &[],
        ..srv("pubsub", -2, 0, Keys::None)
    },
];

fn publish(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    Reply::Int(ctx.eng.broker.publish(&a[1], &a[2], false))
}

fn spublish(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    Reply::Int(ctx.eng.broker.publish(&a[1], &a[2], true))
}
