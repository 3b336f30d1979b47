//! Hash commands. Redisson keeps a lock as a hash `{<client-id>:<thread>: hold-count}`.

use bytes::Bytes;

use crate::commands::{flag::*, CommandSpec, Ctx, Keys, KEY1};
use crate::error::{self, *};
use crate::notify;
use crate::num::{fmt_incrbyfloat, parse_i64, parse_incr_float};
use crate::reply::Reply;
use crate::value::{HashValue, Value};

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    h: crate::commands::Handler,
) -> CommandSpec {
    crate::commands::engine("hash", &["hash"], name, arity, flags, keys, h)
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
    cmd("hsetnx", 4, WRITE | DENYOOM | FAST, KEY1, hsetnx),
    cmd("hmget", -3, READONLY | FAST, KEY1, hmget),
    cmd("hstrlen", 3, READONLY | FAST, KEY1, hstrlen),
    cmd(
        "hincrbyfloat",
        4,
        WRITE | DENYOOM | FAST,
        KEY1,
        hincrbyfloat,
    ),
    cmd("hkeys", 2, READONLY, KEY1, hkeys),
    cmd("hvals", 2, READONLY, KEY1, hvals),
    cmd("hscan", -3, READONLY, KEY1, hscan),
    cmd("hrandfield", -2, READONLY, KEY1, hrandfield),
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

/// The value of `field` in the hash at `key`, if both exist; WRONGTYPE if not a hash.
fn field_value(ctx: &mut Ctx, key: &[u8], field: &[u8]) -> Result<Option<Bytes>, Reply> {
    Ok(get_hash(ctx, key)?.and_then(|h| h.map.get(field).cloned()))
}

/// The hash at `key`, created empty if absent (the caller must leave it non-empty).
pub fn hash_for_write<'a>(ctx: &'a mut Ctx, key: &Bytes) -> Result<&'a mut HashValue, Reply> {
    let db = ctx.dbi();
    let now = ctx.now();
    if ctx.write(key).is_none() {
        ctx.note_new_key(key);
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

/// Sets `field` to `value` in the hash at `key` (created if absent), switching to the
/// hashtable encoding once the hash outgrows the listpack limits, then runs the write
/// epilogue with `event`. Shared by HSETNX, HINCRBY and HINCRBYFLOAT.
fn set_field(
    ctx: &mut Ctx,
    key: &Bytes,
    field: &Bytes,
    value: Bytes,
    event: &str,
) -> Result<(), Reply> {
    let (me, mv) = (
        ctx.eng.config.hash_max_listpack_entries,
        ctx.eng.config.hash_max_listpack_value,
    );
    let h = hash_for_write(ctx, key)?;
    h.map.insert(field.clone(), value.clone());
    check_encoding(h, me, mv, field, &value);
    ctx.modified(key, notify::HASH, event);
    Ok(())
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
    let cur = match field_value(ctx, &a[1], &a[2]) {
        Ok(v) => v,
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
    match set_field(ctx, &a[1], &a[2], v, "hincrby") {
        Ok(()) => Reply::Int(n),
        Err(e) => e,
    }
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

fn hsetnx(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_hash(ctx, &a[1]) {
        Ok(Some(h)) if h.map.contains_key(&a[2]) => return Reply::Int(0),
        Ok(_) => {}
        Err(e) => return e,
    }
    match set_field(ctx, &a[1], &a[2], a[3].clone(), "hset") {
        Ok(()) => Reply::Int(1),
        Err(e) => e,
    }
}

fn hmget(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_hash(ctx, &a[1]) {
        Ok(h) => Reply::Array(
            a[2..]
                .iter()
                .map(|f| Reply::opt_bulk(h.as_ref().and_then(|h| h.map.get(f).cloned())))
                .collect(),
        ),
        Err(e) => e,
    }
}

fn hstrlen(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_hash(ctx, &a[1]) {
        Ok(h) => Reply::Int(
            h.and_then(|h| h.map.get(&a[2]))
                .map_or(0, |v| v.len() as i64),
        ),
        Err(e) => e,
    }
}

fn hincrbyfloat(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let Some(by) = parse_incr_float(&a[3]) else {
        return error::not_float();
    };
    if by.is_infinite() {
        return Reply::err("ERR value is NaN or Infinity");
    }
    let cur = match field_value(ctx, &a[1], &a[2]) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let cur = match cur {
        None => 0.0,
        Some(v) => match parse_incr_float(&v) {
            Some(n) => n,
            None => return Reply::err(HASH_NOT_FLOAT),
        },
    };
    let n = cur + by;
    if !n.is_finite() {
        return Reply::err(INCR_NAN);
    }
    let v = Bytes::from(fmt_incrbyfloat(n));
    match set_field(ctx, &a[1], &a[2], v.clone(), "hincrbyfloat") {
        Ok(()) => Reply::Bulk(v),
        Err(e) => e,
    }
}

fn hkeys(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_hash(ctx, &a[1]) {
        Ok(h) => Reply::bulks(h.into_iter().flat_map(|h| h.map.keys().cloned())),
        Err(e) => e,
    }
}

fn hvals(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_hash(ctx, &a[1]) {
        Ok(h) => Reply::bulks(h.into_iter().flat_map(|h| h.map.values().cloned())),
        Err(e) => e,
    }
}

/// HSCAN key cursor [MATCH p] [COUNT n]. A small (listpack) hash is returned whole with
/// cursor 0, as Redis does.
fn hscan(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if let Err(e) = crate::keys::parse_cursor(&a[2]) {
        return e;
    }
    let hasher = ctx.eng.scan_hasher.clone();
    let h = match get_hash(ctx, &a[1]) {
        Ok(Some(h)) => h,
        Ok(None) => return crate::keys::scan_reply(0, vec![]),
        Err(e) => return e,
    };
    let args = match crate::keys::parse_scan(a, 2, false) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let (fields, next) = if h.big {
        crate::db::scan_by_hash(h.map.keys(), &hasher, args.cursor, args.count)
    } else {
        (h.map.keys().cloned().collect(), 0)
    };
    let mut out = Vec::with_capacity(fields.len() * 2);
    for f in fields {
        if let Some(p) = &args.pattern {
            if !crate::glob::matches(p, &f, false) {
                continue;
            }
        }
        let v = h.map.get(&f).cloned().unwrap_or_default();
        out.push(Reply::Bulk(f));
        out.push(Reply::Bulk(v));
    }
    crate::keys::scan_reply(next, out)
}

/// The largest negative HRANDFIELD count Tumbler serves.
const MAX_RANDOM_REPEATS: usize = 10_000_000;

/// HRANDFIELD key [count [WITHVALUES]] with Redis' cases: a negative count may repeat
/// fields, a count at least the size returns the whole hash in order, a smaller positive
/// count returns distinct random fields.
fn hrandfield(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    use rand::seq::index::sample;
    use rand::Rng;
    let mut count = None;
    let mut withvalues = false;
    if a.len() >= 3 {
        let Some(l) = parse_i64(&a[2]) else {
            return error::not_integer();
        };
        if l == i64::MIN {
            return Reply::err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807");
        }
        if a.len() > 4 || (a.len() == 4 && !a[3].eq_ignore_ascii_case(b"withvalues")) {
            return error::syntax();
        }
        if a.len() == 4 {
            withvalues = true;
            if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
                return Reply::err("ERR value is out of range");
            }
        }
        count = Some(l);
    }
    let resp3 = ctx.cl.resp3;
    let h = match get_hash(ctx, &a[1]) {
        Ok(Some(h)) => h,
        Ok(None) if count.is_some() => return Reply::Array(vec![]),
        Ok(None) => return Reply::Null,
        Err(e) => return e,
    };
    let size = h.map.len();
    let mut rng = rand::thread_rng();
    let Some(l) = count else {
        let i = rng.gen_range(0..size);
        return Reply::Bulk(h.map.get_index(i).unwrap().0.clone());
    };
    let n = l.unsigned_abs() as usize;
    // Redis would stream billions of repeats until the output limit kills the client;
    // refuse instead of allocating that much under the keyspace lock.
    if l < 0 && n > MAX_RANDOM_REPEATS {
        return Reply::err("ERR value is out of range");
    }
    if n == 0 {
        return Reply::Array(vec![]);
    }
    let picks: Vec<usize> = if l < 0 || n == 1 {
        (0..n).map(|_| rng.gen_range(0..size)).collect()
    } else if n >= size {
        (0..size).collect()
    } else {
        sample(&mut rng, size, n).into_vec()
    };
    let mut out = Vec::with_capacity(picks.len() * if withvalues { 2 } else { 1 });
    for i in picks {
        let (f, v) = h.map.get_index(i).unwrap();
        match (withvalues, resp3) {
            (false, _) => out.push(Reply::Bulk(f.clone())),
            (true, false) => {
                out.push(Reply::Bulk(f.clone()));
                out.push(Reply::Bulk(v.clone()));
            }
            (true, true) => out.push(Reply::Array(vec![
                Reply::Bulk(f.clone()),
                Reply::Bulk(v.clone()),
            ])),
        }
    }
    Reply::Array(out)
}
