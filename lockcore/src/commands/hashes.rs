//! Hash commands. Redisson keeps a lock as a hash `{<client-id>:<thread>: hold-count}`.

use bytes::Bytes;

use crate::engine::spec::{flag::*, CommandSpec, Ctx, Keys, KEY1};
use crate::error::{self, *};
use crate::num::{
    add_long_double, fmt_long_double_human, parse_i64, parse_long_double, LongDouble,
};
use crate::reply::Reply;
use crate::storage::notify;
use crate::storage::value::{HashValue, Value};
use rustc_apfloat::Float;

pub use crate::commands::hash_ttl::{drop_expired_field, expire_field_on_write};

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    crate::engine::spec::engine("hash", &["hash"], name, arity, flags, keys, h)
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
    hash_of(ctx.read(key))
}

/// [`get_hash`] for a command that writes the hash (HDEL, HSETNX, HINCRBY[FLOAT]): Redis'
/// lookupKeyWrite, which counts no keyspace hit or miss.
fn get_hash_for_write<'a>(
    ctx: &'a mut Ctx,
    key: &[u8],
) -> Result<Option<&'a mut HashValue>, Reply> {
    hash_of(ctx.write(key))
}

fn hash_of(e: Option<&mut crate::storage::value::Entry>) -> Result<Option<&mut HashValue>, Reply> {
    match e {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::Hash(h) => Ok(Some(h)),
            _ => Err(error::wrongtype()),
        },
    }
}

/// The value of `field` in the hash at `key`, if both exist; WRONGTYPE if not a hash.
fn field_value(ctx: &mut Ctx, key: &Bytes, field: &[u8]) -> Result<Option<Bytes>, Reply> {
    let now = ctx.now();
    match get_hash_for_write(ctx, key)? {
        Some(h) if h.is_expired(field, now) => {}
        h => return Ok(h.and_then(|h| h.get_bytes(field))),
    }
    expire_field_on_write(ctx, key, field);
    Ok(None)
}

/// Lazy expiry before a write that reads `field` (HSETNX, HINCRBY): an expired field is
/// deleted (with `hexpired`, and `del` if it was the last), as Redis' HFE_LAZY_EXPIRE.
fn expire_field_for_write(ctx: &mut Ctx, key: &Bytes, field: &[u8]) -> Result<(), Reply> {
    let now = ctx.now();
    if get_hash_for_write(ctx, key)?.is_some_and(|h| h.is_expired(field, now)) {
        expire_field_on_write(ctx, key, field);
    }
    Ok(())
}

/// The hash at `key`, created empty if absent (the caller must leave it non-empty).
pub fn hash_for_write<'a>(ctx: &'a mut Ctx, key: &Bytes) -> Result<&'a mut HashValue, Reply> {
    match &mut ctx
        .write_or_create(key, || Value::Hash(HashValue::default()))
        .value
    {
        Value::Hash(h) => Ok(h),
        _ => Err(error::wrongtype()),
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
    h.set_with(field, &value, me, mv, true);
    ctx.modified(key, notify::HASH, event);
    Ok(())
}

fn hset_generic(ctx: &mut Ctx, a: &[Bytes]) -> Result<i64, Reply> {
    if a.len() % 2 != 0 {
        return Err(error::wrong_arity(&String::from_utf8_lossy(&a[0])));
    }
    if ctx.eng.lockdep.is_some() {
        lockdep_hset(ctx, a)?;
    }
    let (me, mv) = (
        ctx.eng.config.hash_max_listpack_entries,
        ctx.eng.config.hash_max_listpack_value,
    );
    // Valkey counts a field whose TTL passed as added; Redis as overwritten.
    let (valkey, now) = (ctx.eng.config.personality.is_valkey(), ctx.now());
    let h = hash_for_write(ctx, &a[1])?;
    let mut added = 0;
    for fv in a[2..].chunks(2) {
        let expired = valkey && h.is_expired(&fv[0], now);
        if h.set(&fv[0], &fv[1], me, mv) || expired {
            added += 1;
        }
    }
    ctx.modified(&a[1], notify::HASH, "hset");
    Ok(added)
}

/// The lock-order checker's look at an HSET before it writes: a holder field set to a
/// positive count where it had none is an acquisition (Redisson's fair and read-write locks).
fn lockdep_hset(ctx: &mut Ctx, a: &[Bytes]) -> Result<(), Reply> {
    for fv in a[2..].chunks(2) {
        if parse_i64(&fv[1]).is_none_or(|n| n <= 0) {
            continue;
        }
        // A plain look, not `read`: the checker must not count keyspace hits.
        let (db, now) = (ctx.cl.db, ctx.now());
        let had = match ctx.eng.dbs[db].get(&a[1]) {
            Some(e) if e.expire_at().is_none_or(|t| t > now) => match &e.value {
                Value::Hash(h) => h.get(&fv[0]).and_then(parse_i64).is_some_and(|n| n > 0),
                _ => return Ok(()),
            },
            Some(_) => false,
            None => {
                crate::engine::locks::lockdep::hash_first_hold_absent(ctx, &a[1], &fv[0])?;
                continue;
            }
        };
        if !had {
            crate::engine::locks::lockdep::hash_first_hold(ctx, &a[1], &fv[0])?;
        }
    }
    Ok(())
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
    let now = ctx.now();
    match get_hash(ctx, &a[1]) {
        Ok(Some(h)) if h.is_expired(&a[2], now) => {}
        Ok(h) => return Reply::opt_bulk(h.and_then(|h| h.get_bytes(&a[2]))),
        Err(e) => return e,
    }
    drop_expired_field(ctx, &a[1], &a[2], true, true);
    Reply::Null
}

fn hexists(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    match get_hash(ctx, &a[1]) {
        Ok(Some(h)) if h.is_expired(&a[2], now) => {
            drop_expired_field(ctx, &a[1], &a[2], true, true);
            Reply::Int(0)
        }
        Ok(h) => {
            let found = h.is_some_and(|h| h.contains(&a[2]));
            if !found && ctx.eng.lockdep.is_some() && ctx.cl.in_script {
                crate::engine::locks::lockdep::hash_probe_missed(ctx, &a[1], &a[2]);
            }
            Reply::Int(found as i64)
        }
        Err(e) => e,
    }
}

fn hdel(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let h = match get_hash_for_write(ctx, &a[1]) {
        Ok(Some(h)) => h,
        Ok(None) => return Reply::Int(0),
        Err(e) => return e,
    };
    let had_ttls = h.has_ttls();
    let n = a[2..].iter().filter(|f| h.remove(f)).count();
    if had_ttls && !h.has_ttls() {
        // The last field with a TTL went: Redis unregisters the hash from active expiry.
        h.set_meta_min(None);
    }
    let empty = h.is_empty();
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
        Ok(h) => Reply::Int(h.map_or(0, |h| h.len() as i64)),
        Err(e) => e,
    }
}

fn hincrby(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let Some(by) = parse_i64(&a[3]) else {
        return error::not_integer();
    };
    if ctx.eng.lockdep.is_some() {
        return hincrby_checked(ctx, a, by);
    }
    let (me, mv) = (
        ctx.eng.config.hash_max_listpack_entries,
        ctx.eng.config.hash_max_listpack_value,
    );
    if let Err(e) = expire_field_for_write(ctx, &a[1], &a[2]) {
        return e;
    }
    // One probe, the value read in place. A key created here is an empty hash, and then
    // nothing below fails (the field counts from 0, and 0 + by cannot overflow): no error
    // leaves an empty hash behind.
    let h = match hash_for_write(ctx, &a[1]) {
        Ok(h) => h,
        Err(e) => return e,
    };
    let n = match incremented(h.get(&a[2]), by) {
        Ok((_, n)) => n,
        Err(e) => return e,
    };
    h.set_with(&a[2], &crate::num::int_bytes(n), me, mv, true);
    ctx.modified(&a[1], notify::HASH, "hincrby");
    Reply::Int(n)
}

/// HINCRBY while the lock-order checker runs: it looks at the count before the write.
fn hincrby_checked(ctx: &mut Ctx, a: &[Bytes], by: i64) -> Reply {
    if let Err(e) = expire_field_for_write(ctx, &a[1], &a[2]) {
        return e;
    }
    let cur = match get_hash_for_write(ctx, &a[1]) {
        Ok(h) => incremented(h.and_then(|h| h.get(&a[2])), by),
        Err(e) => return e,
    };
    let (cur, n) = match cur {
        Ok(c) => c,
        Err(e) => return e,
    };
    if cur <= 0 && n > 0 {
        if let Err(e) = crate::engine::locks::lockdep::hash_first_hold(ctx, &a[1], &a[2]) {
            return e;
        }
    }
    let v = crate::num::int_bytes(n);
    match set_field(ctx, &a[1], &a[2], v, "hincrby") {
        Ok(()) => Reply::Int(n),
        Err(e) => e,
    }
}

/// A field's count (0 if absent) and the count plus `by`, or HINCRBY's error.
fn incremented(field: Option<&[u8]>, by: i64) -> Result<(i64, i64), Reply> {
    let cur = match field.map(parse_i64) {
        None => 0,
        Some(Some(n)) => n,
        Some(None) => return Err(Reply::err(HASH_NOT_INTEGER)),
    };
    match cur.checked_add(by) {
        Some(n) => Ok((cur, n)),
        None => Err(Reply::err(OVERFLOW)),
    }
}

fn hgetall(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    match get_hash(ctx, &a[1]) {
        Ok(Some(h)) => Reply::Map(
            h.iter()
                .filter(|(k, _)| !h.is_expired(k, now))
                .map(|(k, v)| {
                    (
                        Reply::Bulk(Bytes::copy_from_slice(k)),
                        Reply::Bulk(Bytes::copy_from_slice(v)),
                    )
                })
                .collect(),
        ),
        Ok(None) => Reply::Map(vec![]),
        Err(e) => e,
    }
}

fn hsetnx(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if let Err(e) = expire_field_for_write(ctx, &a[1], &a[2]) {
        return e;
    }
    match get_hash_for_write(ctx, &a[1]) {
        Ok(Some(h)) if h.contains(&a[2]) => return Reply::Int(0),
        Ok(_) => {}
        Err(e) => return e,
    }
    match set_field(ctx, &a[1], &a[2], a[3].clone(), "hset") {
        Ok(()) => Reply::Int(1),
        Err(e) => e,
    }
}

fn hmget(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    let out: Vec<Reply> = match get_hash(ctx, &a[1]) {
        Ok(h) => a[2..]
            .iter()
            .map(|f| match &h {
                Some(h) if h.is_expired(f, now) => Reply::NullArray,
                h => Reply::opt_bulk(h.as_ref().and_then(|h| h.get_bytes(f))),
            })
            .collect(),
        Err(e) => return e,
    };
    if ctx.eng.config.personality.is_valkey() {
        // Valkey hides expired fields without deleting them.
        let out = out
            .into_iter()
            .map(|r| match r {
                Reply::NullArray => Reply::Null,
                r => r,
            })
            .collect();
        return Reply::Array(out);
    }
    if !out.iter().any(|r| matches!(r, Reply::NullArray)) {
        return Reply::Array(out);
    }
    // Expired fields (marked above) are deleted, one `hexpired` event for them all; once
    // the hash is gone the fields after read as absent, as in Redis.
    let mut deleted = false;
    let out = a[2..]
        .iter()
        .zip(out)
        .map(|(f, r)| match r {
            Reply::NullArray => {
                if !deleted {
                    deleted = drop_expired_field(ctx, &a[1], f, false, true);
                }
                Reply::Null
            }
            r => r,
        })
        .collect();
    ctx.notify(notify::HASH, "hexpired", &a[1]);
    if deleted {
        ctx.notify(notify::GENERIC, "del", &a[1]);
    }
    Reply::Array(out)
}

fn hstrlen(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    match get_hash(ctx, &a[1]) {
        Ok(Some(h)) if h.is_expired(&a[2], now) => {
            drop_expired_field(ctx, &a[1], &a[2], true, true);
            Reply::Int(0)
        }
        Ok(h) => Reply::Int(h.and_then(|h| h.get(&a[2])).map_or(0, |v| v.len() as i64)),
        Err(e) => e,
    }
}

fn hincrbyfloat(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let Some(by) = parse_long_double(&a[3]) else {
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
        None => LongDouble::ZERO,
        Some(v) => match parse_long_double(&v) {
            Some(n) => n,
            None => return Reply::err(HASH_NOT_FLOAT),
        },
    };
    let Some(n) = add_long_double(cur, by) else {
        return Reply::err(INCR_NAN);
    };
    let v = Bytes::from(fmt_long_double_human(n));
    match set_field(ctx, &a[1], &a[2], v.clone(), "hincrbyfloat") {
        Ok(()) => Reply::Bulk(v),
        Err(e) => e,
    }
}

fn hkeys(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    match get_hash(ctx, &a[1]) {
        Ok(h) => Reply::bulks(h.into_iter().flat_map(|h| {
            let h = &*h;
            h.iter()
                .filter(move |(k, _)| !h.is_expired(k, now))
                .map(|(k, _)| Bytes::copy_from_slice(k))
        })),
        Err(e) => e,
    }
}

fn hvals(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    match get_hash(ctx, &a[1]) {
        Ok(h) => Reply::bulks(h.into_iter().flat_map(|h| {
            let h = &*h;
            h.iter()
                .filter(move |(k, _)| !h.is_expired(k, now))
                .map(|(_, v)| Bytes::copy_from_slice(v))
        })),
        Err(e) => e,
    }
}

/// HSCAN key cursor [MATCH p] [COUNT n]. A small (listpack) hash is returned whole with
/// cursor 0, as Redis does.
fn hscan(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let p = ctx.eng.config.personality;
    if let Err(e) = crate::commands::keys::parse_cursor(&a[2]) {
        return e;
    }
    let hasher = ctx.eng.scan_hasher.clone();
    let now = ctx.now();
    let h = match get_hash(ctx, &a[1]) {
        Ok(Some(h)) => h,
        Ok(None) => return crate::commands::keys::scan_reply(0, vec![]),
        Err(e) => return e,
    };
    let args = match crate::commands::keys::parse_scan(&p, "hscan", a, 2) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let (fields, next) = match &*h {
        HashValue::Table(m) => {
            crate::storage::db::scan_by_hash(m.fields(), &hasher, args.cursor, args.count)
        }
        HashValue::Pack(p) => (
            p.iter().map(|(k, _)| Bytes::copy_from_slice(k)).collect(),
            0,
        ),
    };
    let mut out = Vec::with_capacity(fields.len() * 2);
    for f in fields {
        if h.is_expired(&f, now) {
            continue;
        }
        if let Some(p) = &args.pattern {
            if !crate::glob::matches(p, &f, false) {
                continue;
            }
        }
        if args.no_values {
            out.push(Reply::Bulk(f));
            continue;
        }
        let v = h.get_bytes(&f).unwrap_or_default();
        out.push(Reply::Bulk(f));
        out.push(Reply::Bulk(v));
    }
    crate::commands::keys::scan_reply(next, out)
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
    let now = ctx.now();
    let due = match get_hash(ctx, &a[1]) {
        Ok(Some(h)) => h.min_ttl().is_some_and(|t| t < now),
        Ok(None) if count.is_some() => return Reply::Array(vec![]),
        Ok(None) => return Reply::Null,
        Err(e) => return e,
    };
    let db = ctx.dbi();
    let valkey = ctx.eng.config.personality.is_valkey();
    if due && !valkey {
        // Redis' hashTypeExpireIfNeeded: every due field goes first.
        ctx.eng.expire_fields(db, &a[1], now);
    }
    let h = match hash_of(ctx.eng.dbs[db].get_mut(&a[1])) {
        Ok(Some(h)) => h,
        Ok(None) if count.is_some() => return Reply::Array(vec![]),
        Ok(None) => return Reply::Null,
        Err(e) => return e,
    };
    // Valkey picks among the fields not expired, leaving the others in place.
    let live;
    let h: &HashValue = if due && valkey {
        let mut v = HashValue::default();
        v.convert();
        for (f, x) in h.iter().filter(|(f, _)| !h.is_expired(f, now)) {
            v.set(
                &Bytes::copy_from_slice(f),
                &Bytes::copy_from_slice(x),
                usize::MAX,
                usize::MAX,
            );
        }
        live = v;
        if live.is_empty() {
            return if count.is_some() {
                Reply::Array(vec![])
            } else {
                Reply::Null
            };
        }
        &live
    } else {
        h
    };
    let size = h.len();
    let mut rng = rand::thread_rng();
    let Some(l) = count else {
        let i = rng.gen_range(0..size);
        return Reply::Bulk(Bytes::copy_from_slice(h.get_index(i).unwrap().0));
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
        let (f, v) = h.get_index(i).unwrap();
        let (f, v) = (Bytes::copy_from_slice(f), Bytes::copy_from_slice(v));
        match (withvalues, resp3) {
            (false, _) => out.push(Reply::Bulk(f)),
            (true, false) => {
                out.push(Reply::Bulk(f));
                out.push(Reply::Bulk(v));
            }
            (true, true) => out.push(Reply::Array(vec![Reply::Bulk(f), Reply::Bulk(v)])),
        }
    }
    Reply::Array(out)
}
