//! Generic key commands: DEL, EXISTS, TYPE, expiry and TTLs.

use bytes::Bytes;

use crate::commands::{flag::*, CommandSpec, Ctx, Exec, Keys, BASE, KEY1};
use crate::engine::delete_key;
use crate::error;
use crate::notify;
use crate::num::parse_i64;
use crate::reply::Reply;

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    h: crate::commands::Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        keys,
        group: "generic",
        acl: &["keyspace"],
        exec: Exec::Engine(h),
        ..BASE
    }
}

const ALL_KEYS: Keys = Keys::Range {
    first: 1,
    last: -1,
    step: 1,
};

pub static COMMANDS: &[CommandSpec] = &[
    cmd("del", -2, WRITE, ALL_KEYS, del),
    cmd("unlink", -2, WRITE | FAST, ALL_KEYS, del),
    cmd("exists", -2, READONLY | FAST, ALL_KEYS, exists),
    cmd("type", 2, READONLY | FAST, KEY1, type_),
    cmd("expire", -3, WRITE | FAST, KEY1, expire),
    cmd("pexpire", -3, WRITE | FAST, KEY1, pexpire),
    cmd("expireat", -3, WRITE | FAST, KEY1, expireat),
    cmd("pexpireat", -3, WRITE | FAST, KEY1, pexpireat),
    cmd("ttl", 2, READONLY | FAST, KEY1, ttl),
    cmd("pttl", 2, READONLY | FAST, KEY1, pttl),
    cmd("expiretime", 2, READONLY | FAST, KEY1, expiretime),
    cmd("pexpiretime", 2, READONLY | FAST, KEY1, pexpiretime),
    cmd("persist", 2, WRITE | FAST, KEY1, persist),
];

fn del(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let db = ctx.dbi();
    Reply::Int(a[1..].iter().filter(|k| delete_key(ctx.eng, db, k)).count() as i64)
}

fn exists(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    Reply::Int(a[1..].iter().filter(|k| ctx.read(k).is_some()).count() as i64)
}

fn type_(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match ctx.read(&a[1]) {
        Some(e) => Reply::simple(e.value.type_name()),
        None => Reply::simple("none"),
    }
}

/// EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT key n [NX|XX|GT|LT]
fn expire_generic(ctx: &mut Ctx, a: &[Bytes], unit_ms: i64, absolute: bool) -> Reply {
    let cmd = String::from_utf8_lossy(&a[0]).to_ascii_lowercase();
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &a[3..] {
        match opt.to_ascii_uppercase().as_slice() {
            b"NX" => nx = true,
            b"XX" => xx = true,
            b"GT" => gt = true,
            b"LT" => lt = true,
            _ => {
                return Reply::err(format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(opt)
                ))
            }
        }
    }
    if nx && (xx || gt || lt) {
        return Reply::err("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return Reply::err("ERR GT and LT options at the same time are not compatible");
    }
    let Some(n) = parse_i64(&a[2]) else {
        return error::not_integer();
    };
    let now = ctx.now();
    let when = n.checked_mul(unit_ms).and_then(|ms| {
        if absolute {
            Some(ms)
        } else {
            ms.checked_add(now)
        }
    });
    let Some(when) = when else {
        return error::invalid_expire(&cmd);
    };
    let key = &a[1];
    let Some(entry) = ctx.write(key) else {
        return Reply::Int(0);
    };
    let cur = entry.expire_at;
    // A key without TTL counts as infinite TTL for GT and LT.
    let refused = (nx && cur.is_some())
        || (xx && cur.is_none())
        || (gt && cur.is_none_or(|c| when <= c))
        || (lt && cur.is_some_and(|c| when >= c));
    if refused {
        return Reply::Int(0);
    }
    let db = ctx.dbi();
    if when <= now {
        delete_key(ctx.eng, db, key);
        return Reply::Int(1);
    }
    ctx.db().set_expire(key, Some(when));
    ctx.modified(key, notify::GENERIC, "expire");
    ctx.eng.deadline_changed = true;
    Reply::Int(1)
}

fn expire(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    expire_generic(ctx, a, 1000, false)
}
fn pexpire(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    expire_generic(ctx, a, 1, false)
}
fn expireat(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    expire_generic(ctx, a, 1000, true)
}
fn pexpireat(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    expire_generic(ctx, a, 1, true)
}

/// -2 if the key is missing, -1 if it has no TTL, else `f(expire_at)`.
fn ttl_generic(ctx: &mut Ctx, key: &[u8], f: impl Fn(i64, i64) -> i64) -> Reply {
    let now = ctx.now();
    match ctx.read(key) {
        None => Reply::Int(-2),
        Some(e) => match e.expire_at {
            None => Reply::Int(-1),
            Some(t) => Reply::Int(f(t, now)),
        },
    }
}

fn ttl(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    ttl_generic(ctx, &a[1], |t, now| ((t - now).max(0) + 500) / 1000)
}
fn pttl(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    ttl_generic(ctx, &a[1], |t, now| (t - now).max(0))
}
fn expiretime(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    ttl_generic(ctx, &a[1], |t, _| (t + 500) / 1000)
}
fn pexpiretime(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    ttl_generic(ctx, &a[1], |t, _| t)
}

fn persist(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let key = &a[1];
    match ctx.write(key) {
        Some(e) if e.expire_at.is_some() => {
            ctx.db().set_expire(key, None);
            ctx.modified(key, notify::GENERIC, "persist");
            Reply::Int(1)
        }
        _ => Reply::Int(0),
    }
}
