//! Hash commands. Redisson keeps a lock as a hash `{<client-id>:<thread>: hold-count}`.

use bytes::Bytes;

use crate::commands::{flag::*, CommandSpec, Ctx, Exec, Keys, BASE, KEY1};
use crate::error::{self, *};
use crate::notify;
use crate::num::parse_i64;
use crate::reply::Reply;
use crate::value::{HashValue, Value};

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
        group: "hash",
        acl: &["hash"],
        exec: Exec::Engine(h),
        ..BASE
    }
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd("hset", -4, WRITE | DENYOOM | FAST, KEY1, hset),
    cmd("hmset", -4, WRITE | DENYOOM | FAST, KEY1, hmset),
    cmd("hget", 3, READONLY | FAST, KEY1, hget),
    cmd("hexists", 3, READONLY | FAST, KEY1, hexists),
    cmd("hdel", -3, WRITE | FAST, KEY1, hdel),
    cmd("hlen", 2, READONLY | FAST, KEY1, hlen),
    cmd("hincrby", 4, WRITE | DENYOOM | FAST, KEY1, hincrby),
    cmd("hgetall", 2, READONLY, KEY1, hgetall),
];

/// Reads a hash: `Ok(None)` if absent, WRONGTYPE if not a hash.
pub fn get_hash<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Result<Option<&'a mut HashValue>, Reply> {
    match ctx.read(key) {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::Hash(h) => Ok(Some(h)),
            _ => Err(error::wrongtype()),
        },
    }
}

/// The hash at `key`, created empty if absent (the caller must leave it non-empty).
pub fn hash_for_write<'a>(ctx: &'a mut Ctx, key: &Bytes) -> Result<&'a mut HashValue, Reply> {
    let db = ctx.dbi();
    let now = ctx.now();
    if ctx.write(key).is_none() {
        ctx.eng.dbs[db].insert(key.clone(), Value::Hash(Box::default()), None, now);
    }
    match &mut ctx.eng.dbs[db].get_mut(key).unwrap().value {
        Value::Hash(h) => Ok(h),
        _ => Err(error::wrongtype()),
    }
}

/// Records the switch to "hashtable" encoding when the hash outgrows the listpack limits.
fn check_encoding(
    h: &mut HashValue,
    max_entries: usize,
    max_value: usize,
    field: &[u8],
    value: &[u8],
) {
    if !h.big && (h.map.len() > max_entries || field.len() > max_value || value.len() > max_value) {
        h.big = true;
    }
}

fn hset_generic(ctx: &mut Ctx, a: &[Bytes]) -> Result<i64, Reply> {
    if a.len() % 2 != 0 {
        return Err(error::wrong_arity(&String::from_utf8_lossy(&a[0])));
    }
    let (me, mv) = (
        ctx.eng.config.hash_max_listpack_entries,
        ctx.eng.config.hash_max_listpack_value,
    );
    let h = hash_for_write(ctx, &a[1])?;
    let mut added = 0;
    for fv in a[2..].chunks(2) {
        if h.map.insert(fv[0].clone(), fv[1].clone()).is_none() {
            added += 1;
        }
        check_encoding(h, me, mv, &fv[0], &fv[1]);
    }
    ctx.modified(&a[1], notify::HASH, "hset");
    Ok(added)
}

fn hset(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match hset_generic(ctx, a) {
        Ok(n) => Reply::Int(n),
        Err(e) => e,
    }
}

fn hmset(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match hset_generic(ctx, a) {
        Ok(_) => Reply::ok(),
        Err(e) => e,
    }
}

fn hget(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_hash(ctx, &a[1]) {
        Ok(h) => Reply::opt_bulk(h.and_then(|h| h.map.get(&a[2]).cloned())),
        Err(e) => e,
    }
}

fn hexists(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_hash(ctx, &a[1]) {
        Ok(h) => Reply::Int(h.is_some_and(|h| h.map.contains_key(&a[2])) as i64),
        Err(e) => e,
    }
}

fn hdel(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let h = match get_hash(ctx, &a[1]) {
        Ok(Some(h)) => h,
        Ok(None) => return Reply::Int(0),
        Err(e) => return e,
    };
    let n = a[2..].iter().filter(|f| h.remove(f).is_some()).count();
    let empty = h.map.is_empty();
    if n > 0 {
        ctx.modified(&a[1], notify::HASH, "hdel");
        if empty {
            let db = ctx.dbi();
            ctx.eng.dbs[db].remove(&a[1]);
            ctx.notify(notify::GENERIC, "del", &a[1]);
        }
    }
    Reply::Int(n as i64)
}

fn hlen(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_hash(ctx, &a[1]) {
        Ok(h) => Reply::Int(h.map_or(0, |h| h.map.len() as i64)),
        Err(e) => e,
    }
}

fn hincrby(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let Some(by) = parse_i64(&a[3]) else {
        return error::not_integer();
    };
    let (me, mv) = (
        ctx.eng.config.hash_max_listpack_entries,
        ctx.eng.config.hash_max_listpack_value,
    );
    let cur = match get_hash(ctx, &a[1]) {
        Ok(h) => h.and_then(|h| h.map.get(&a[2]).cloned()),
        Err(e) => return e,
    };
    let cur = match cur {
        None => 0,
        Some(v) => match parse_i64(&v) {
            Some(n) => n,
            None => return Reply::err(HASH_NOT_INTEGER),
        },
    };
    let Some(n) = cur.checked_add(by) else {
        return Reply::err(OVERFLOW);
    };
    let v = Bytes::from(itoa::Buffer::new().format(n).to_owned());
    match hash_for_write(ctx, &a[1]) {
        Ok(h) => {
            check_encoding(h, me, mv, &a[2], &v);
            h.map.insert(a[2].clone(), v);
        }
        Err(e) => return e,
    }
    ctx.modified(&a[1], notify::HASH, "hincrby");
    Reply::Int(n)
}

fn hgetall(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_hash(ctx, &a[1]) {
        Ok(Some(h)) => Reply::Map(
            h.map
                .iter()
                .map(|(k, v)| (Reply::Bulk(k.clone()), Reply::Bulk(v.clone())))
                .collect(),
        ),
        Ok(None) => Reply::Map(vec![]),
        Err(e) => e,
    }
}
