//! Set commands: SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER, SCARD, SRANDMEMBER, SPOP,
//! SSCAN, SMOVE, and the algebra (SINTER, SUNION, SDIFF, their STORE forms, SINTERCARD).
//!
//! Redis 7.0 keeps a set of integers as a sorted "intset" (so SMEMBERS is in numeric
//! order) until it holds a non-integer or more than `set-max-intset-entries` members, then
//! a "hashtable" forever; [`SetValue`] mirrors that (the intset packed as Redis packs it)
//! so replies, OBJECT ENCODING and memory match.

use bytes::Bytes;
use rand::Rng;

use crate::engine::spec::{flag::*, CommandSpec, Ctx, Keys, KEY1};
use crate::error;
use crate::num::parse_i64;
use crate::reply::Reply;
use crate::storage::notify;
use crate::storage::value::{SetValue, Value};

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    crate::engine::spec::engine("set", &["set"], name, arity, flags, keys, h)
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd("sadd", -3, WRITE | DENYOOM | FAST, KEY1, sadd),
    cmd("srem", -3, WRITE | FAST, KEY1, srem),
    cmd("smembers", 2, READONLY, KEY1, smembers),
    cmd("sismember", 3, READONLY | FAST, KEY1, sismember),
    cmd("smismember", -3, READONLY | FAST, KEY1, smismember),
    cmd("scard", 2, READONLY | FAST, KEY1, scard),
    cmd("srandmember", -2, READONLY, KEY1, srandmember),
    cmd("spop", -2, WRITE | FAST, KEY1, spop),
    cmd("sscan", -3, READONLY, KEY1, sscan),
    cmd("smove", 4, WRITE | FAST, KEY_SRC_DST, smove),
    cmd("sinter", -2, READONLY, ALL_KEYS, sinter),
    cmd("sinterstore", -3, WRITE | DENYOOM, ALL_KEYS, sinterstore),
    cmd("sintercard", -3, READONLY, NUMKEYS, sintercard),
    cmd("sunion", -2, READONLY, ALL_KEYS, sunion),
    cmd("sunionstore", -3, WRITE | DENYOOM, ALL_KEYS, sunionstore),
    cmd("sdiff", -2, READONLY, ALL_KEYS, sdiff),
    cmd("sdiffstore", -3, WRITE | DENYOOM, ALL_KEYS, sdiffstore),
];

const KEY_SRC_DST: Keys = Keys::Range {
    first: 1,
    last: 2,
    step: 1,
};
const ALL_KEYS: Keys = Keys::Range {
    first: 1,
    last: -1,
    step: 1,
};
const NUMKEYS: Keys = Keys::NumKeys {
    numkeys_at: 1,
    step: 1,
};

/// Redis 7.0's default `set-max-intset-entries`.
const MAX_INTSET_ENTRIES: usize = 512;

fn get_set<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Result<Option<&'a mut SetValue>, Reply> {
    set_of(ctx.read(key))
}

/// [`get_set`] for a command that writes the set: Redis' lookupKeyWrite, which counts no
/// keyspace hit or miss.
fn get_set_for_write<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Result<Option<&'a mut SetValue>, Reply> {
    set_of(ctx.write(key))
}

fn set_of(e: Option<&mut crate::storage::value::Entry>) -> Result<Option<&mut SetValue>, Reply> {
    match e {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::Set(s) => Ok(Some(s)),
            _ => Err(error::wrongtype()),
        },
    }
}

fn sadd(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let db = ctx.dbi();
    let now = ctx.now();
    let s = match ctx.write(&a[1]) {
        None => {
            ctx.eng.dbs[db].insert(a[1].clone(), Value::Set(SetValue::default()), None, now);
            match &mut ctx.eng.dbs[db].get_mut(&a[1]).unwrap().value {
                Value::Set(s) => s,
                _ => unreachable!(),
            }
        }
        Some(e) => match &mut e.value {
            Value::Set(s) => s,
            _ => return error::wrongtype(),
        },
    };
    let added = a[2..]
        .iter()
        .filter(|m| add_member(s, (*m).clone()))
        .count() as i64;
    if added > 0 {
        ctx.modified(&a[1], notify::SET, "sadd");
    }
    Reply::Int(added)
}

/// Adds `m`, leaving the intset encoding when `m` is not an integer or the set grows past
/// `set-max-intset-entries` (Redis' setTypeAdd). Returns whether `m` was new.
fn add_member(s: &mut SetValue, m: Bytes) -> bool {
    s.insert(m, MAX_INTSET_ENTRIES)
}

/// Removes the key if the set became empty, with the "del" event after the command's own.
fn drop_if_empty(ctx: &mut Ctx, key: &Bytes) {
    let db = ctx.dbi();
    if matches!(ctx.eng.dbs[db].get(key).map(|e| &e.value), Some(Value::Set(s)) if s.is_empty()) {
        ctx.eng.dbs[db].remove(key);
        ctx.notify(notify::GENERIC, "del", key);
    }
}

fn srem(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let s = match get_set_for_write(ctx, &a[1]) {
        Ok(Some(s)) => s,
        Ok(None) => return Reply::Int(0),
        Err(e) => return e,
    };
    let n = a[2..].iter().filter(|m| s.remove(m)).count();
    if n > 0 {
        ctx.modified(&a[1], notify::SET, "srem");
        drop_if_empty(ctx, &a[1]);
    }
    Reply::Int(n as i64)
}

fn smembers(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_set(ctx, &a[1]) {
        Ok(Some(s)) => Reply::Set(s.ordered().into_iter().map(Reply::Bulk).collect()),
        Ok(None) => Reply::Set(vec![]),
        Err(e) => e,
    }
}

fn sismember(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_set(ctx, &a[1]) {
        Ok(s) => Reply::Int(s.is_some_and(|s| s.contains(&a[2])) as i64),
        Err(e) => e,
    }
}

fn smismember(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_set(ctx, &a[1]) {
        Ok(s) => Reply::Array(
            a[2..]
                .iter()
                .map(|m| Reply::Int(s.as_ref().is_some_and(|s| s.contains(m)) as i64))
                .collect(),
        ),
        Err(e) => e,
    }
}

fn scard(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_set(ctx, &a[1]) {
        Ok(s) => Reply::Int(s.map_or(0, |s| s.len() as i64)),
        Err(e) => e,
    }
}

/// The largest negative SRANDMEMBER count served (Redis would stream until the client's
/// output limit; we refuse rather than allocate that much under the keyspace lock).
const MAX_RANDOM_REPEATS: usize = 10_000_000;

fn srandmember(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() > 3 {
        return error::syntax();
    }
    let count = match a.get(2) {
        None => None,
        Some(v) => match parse_i64(v) {
            Some(i64::MIN) => return Reply::err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"),
            Some(n) => Some(n),
            None => return error::not_integer(),
        },
    };
    let s = match get_set(ctx, &a[1]) {
        Ok(Some(s)) => s,
        Ok(None) if count.is_some() => return Reply::Array(vec![]),
        Ok(None) => return Reply::Null,
        Err(e) => return e,
    };
    let size = s.len();
    let mut rng = rand::thread_rng();
    let Some(l) = count else {
        let i = rng.gen_range(0..size);
        return Reply::Bulk(s.get_index(i).unwrap());
    };
    let n = l.unsigned_abs() as usize;
    if l < 0 && n > MAX_RANDOM_REPEATS {
        return Reply::err("ERR value is out of range");
    }
    if n == 0 {
        return Reply::Array(vec![]);
    }
    if l < 0 || n == 1 {
        return Reply::Array(
            (0..n)
                .map(|_| Reply::Bulk(s.get_index(rng.gen_range(0..size)).unwrap()))
                .collect(),
        );
    }
    if n >= size {
        return Reply::Array(s.ordered().into_iter().map(Reply::Bulk).collect());
    }
    Reply::Array(
        rand::seq::index::sample(&mut rng, size, n)
            .into_iter()
            .map(|i| Reply::Bulk(s.get_index(i).unwrap()))
            .collect(),
    )
}

fn spop(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() > 3 {
        return error::syntax();
    }
    let count = match a.get(2) {
        None => None,
        Some(v) => match parse_i64(v) {
            Some(n) if n >= 0 => Some(n as usize),
            _ => return Reply::err(error::NOT_POSITIVE),
        },
    };
    let s = match get_set_for_write(ctx, &a[1]) {
        Ok(Some(s)) => s,
        Ok(None) if count.is_some() => return Reply::Set(vec![]),
        Ok(None) => return Reply::Null,
        Err(e) => return e,
    };
    let mut rng = rand::thread_rng();
    let n = count.unwrap_or(1).min(s.len());
    let mut popped = Vec::with_capacity(n);
    for _ in 0..n {
        let i = rng.gen_range(0..s.len());
        popped.push(s.swap_remove_index(i).unwrap());
    }
    if n > 0 {
        ctx.modified(&a[1], notify::SET, "spop");
        drop_if_empty(ctx, &a[1]);
    }
    match count {
        None => Reply::opt_bulk(popped.pop()),
        Some(_) => Reply::Set(popped.into_iter().map(Reply::Bulk).collect()),
    }
}

/// SSCAN: an intset comes back whole with cursor 0, as in Redis.
fn sscan(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let p = ctx.eng.config.personality;
    if let Err(e) = crate::commands::keys::parse_cursor(&a[2]) {
        return e;
    }
    let hasher = ctx.eng.scan_hasher.clone();
    let s = match get_set(ctx, &a[1]) {
        Ok(Some(s)) => s,
        Ok(None) => return crate::commands::keys::scan_reply(0, vec![]),
        Err(e) => return e,
    };
    let args = match crate::commands::keys::parse_scan(&p, "sscan", a, 2) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let (items, next) = match s.table() {
        None => (s.ordered(), 0),
        Some(t) => crate::storage::db::scan_by_hash(t.iter(), &hasher, args.cursor, args.count),
    };
    let out = items
        .into_iter()
        .filter(|m| {
            args.pattern
                .as_ref()
                .is_none_or(|p| crate::glob::matches(p, m, false))
        })
        .map(Reply::Bulk)
        .collect();
    crate::commands::keys::scan_reply(next, out)
}

// ---------------------------------------------------------------- SMOVE and the algebra

fn smove(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (src, dst, m) = (&a[1], &a[2], &a[3]);
    let src_is_member = match ctx.write(src).map(|e| &e.value) {
        None => return Reply::Int(0),
        Some(Value::Set(s)) => s.contains(m),
        Some(_) => return error::wrongtype(),
    };
    if !matches!(ctx.write(dst).map(|e| &e.value), None | Some(Value::Set(_))) {
        return error::wrongtype();
    }
    if src == dst {
        return Reply::Int(src_is_member as i64);
    }
    if !src_is_member {
        return Reply::Int(0);
    }
    if let Ok(Some(s)) = get_set_for_write(ctx, src) {
        s.remove(m);
    }
    ctx.modified(src, notify::SET, "srem");
    drop_if_empty(ctx, src);
    let db = ctx.dbi();
    if ctx.write(dst).is_none() {
        crate::engine::store(
            ctx.eng,
            db,
            dst.clone(),
            Value::Set(SetValue::default()),
            None,
        );
    }
    if let Ok(Some(s)) = get_set_for_write(ctx, dst) {
        if add_member(s, m.clone()) {
            ctx.modified(dst, notify::SET, "sadd");
        }
    }
    Reply::Int(1)
}

/// Checks the sets at `keys` (lazy expiry, stats, types): WRONGTYPE if any key holds
/// another type, as Redis checks every key before computing anything. Then runs `f` on the
/// sets, in order (`None` for a missing key).
fn with_sets<R>(
    ctx: &mut Ctx,
    keys: &[Bytes],
    f: impl FnOnce(&[Option<&SetValue>]) -> R,
) -> Result<R, Reply> {
    for k in keys {
        // Redis 7.0 reads the sources with lookupKeyRead, STORE variant or not (they
        // count in keyspace_hits/misses).
        let e = ctx.read(k);
        if !matches!(e.map(|e| &e.value), None | Some(Value::Set(_))) {
            return Err(error::wrongtype());
        }
    }
    let db = &ctx.eng.dbs[ctx.cl.db];
    let sets: Vec<Option<&SetValue>> = keys
        .iter()
        .map(|k| match db.get(k).map(|e| &e.value) {
            Some(Value::Set(s)) => Some(s),
            _ => None,
        })
        .collect();
    Ok(f(&sets))
}

/// Stores `result` at `dst` (replacing its value and TTL) or deletes `dst` when the result
/// is empty, with the events Redis sends; replies with the stored cardinality.
fn store_set(ctx: &mut Ctx, dst: &Bytes, result: SetValue, event: &str) -> Reply {
    let db = ctx.dbi();
    let n = result.len();
    if n == 0 {
        if ctx.write(dst).is_some() {
            crate::engine::delete_key(ctx.eng, db, dst);
        }
        return Reply::Int(0);
    }
    ctx.write(dst);
    crate::engine::store(ctx.eng, db, dst.clone(), Value::Set(result), None);
    ctx.modified(dst, notify::SET, event);
    Reply::Int(n as i64)
}

/// The intersection in Redis' order: the members of the smallest set, in its iteration
/// order, that every other set holds. Stops after `limit` members (0: no limit).
fn intersect(sets: &[&SetValue], limit: usize) -> Vec<Bytes> {
    let mut order: Vec<&SetValue> = sets.to_vec();
    order.sort_by_key(|s| s.len());
    let Some((first, rest)) = order.split_first() else {
        return vec![];
    };
    let mut out = Vec::new();
    for m in first.ordered() {
        if rest.iter().all(|s| s.contains(&m)) {
            out.push(m);
            if out.len() == limit {
                break;
            }
        }
    }
    out
}

fn sinter_generic(ctx: &mut Ctx, keys: &[Bytes], dst: Option<&Bytes>) -> Reply {
    // An intersection with a missing (empty) key is empty.
    let members = match with_sets(ctx, keys, |sets| {
        sets.iter()
            .copied()
            .collect::<Option<Vec<_>>>()
            .map_or(vec![], |sets| intersect(&sets, 0))
    }) {
        Ok(m) => m,
        Err(e) => return e,
    };
    match dst {
        Some(dst) => {
            let mut result = SetValue::default();
            for m in members {
                add_member(&mut result, m);
            }
            store_set(ctx, dst, result, "sinterstore")
        }
        None => Reply::Set(members.into_iter().map(Reply::Bulk).collect()),
    }
}

fn sinter(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    sinter_generic(ctx, &a[1..], None)
}

fn sinterstore(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    sinter_generic(ctx, &a[2..], Some(&a[1]))
}

fn sintercard(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    const NUMKEYS_ERR: &str = "ERR numkeys should be greater than 0";
    let numkeys = match parse_i64(&a[1]) {
        Some(n) if n >= 1 => n as u64,
        _ => return Reply::err(NUMKEYS_ERR),
    };
    if numkeys > (a.len() - 2) as u64 {
        return Reply::err("ERR Number of keys can't be greater than number of args");
    }
    let end = 2 + numkeys as usize;
    let mut limit = 0usize;
    let mut j = end;
    while j < a.len() {
        if a[j].eq_ignore_ascii_case(b"limit") && j + 1 < a.len() {
            j += 1;
            limit = match parse_i64(&a[j]) {
                Some(n) if n >= 0 => n as usize,
                _ => return Reply::err("ERR LIMIT can't be negative"),
            };
        } else {
            return error::syntax();
        }
        j += 1;
    }
    match with_sets(ctx, &a[2..end], |sets| {
        sets.iter()
            .copied()
            .collect::<Option<Vec<_>>>()
            .map_or(0, |sets| intersect(&sets, limit).len())
    }) {
        Ok(n) => Reply::Int(n as i64),
        Err(e) => e,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum SetOp {
    Union,
    Diff,
}

fn sunion_diff(ctx: &mut Ctx, keys: &[Bytes], dst: Option<&Bytes>, op: SetOp) -> Reply {
    let result = match with_sets(ctx, keys, |sets| {
        let mut result = SetValue::default();
        match (op, sets.split_first()) {
            (SetOp::Union, _) => {
                for s in sets.iter().flatten() {
                    for m in s.ordered() {
                        add_member(&mut result, m);
                    }
                }
            }
            (SetOp::Diff, Some((Some(first), rest))) => {
                for m in first.ordered() {
                    if !rest.iter().flatten().any(|s| s.contains(&m)) {
                        add_member(&mut result, m);
                    }
                }
            }
            (SetOp::Diff, _) => {}
        }
        result
    }) {
        Ok(r) => r,
        Err(e) => return e,
    };
    match dst {
        Some(dst) => {
            let event = if op == SetOp::Union {
                "sunionstore"
            } else {
                "sdiffstore"
            };
            store_set(ctx, dst, result, event)
        }
        None => Reply::Set(result.ordered().into_iter().map(Reply::Bulk).collect()),
    }
}

fn sunion(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    sunion_diff(ctx, &a[1..], None, SetOp::Union)
}
fn sunionstore(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    sunion_diff(ctx, &a[2..], Some(&a[1]), SetOp::Union)
}
fn sdiff(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    sunion_diff(ctx, &a[1..], None, SetOp::Diff)
}
fn sdiffstore(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    sunion_diff(ctx, &a[2..], Some(&a[1]), SetOp::Diff)
}
