//! Set commands (the subset Redis' own tests and clients lean on): SADD, SREM, SMEMBERS,
//! SISMEMBER, SMISMEMBER, SCARD, SRANDMEMBER, SPOP, SSCAN.
//!
//! Redis 7.0 keeps a set of integers as a sorted "intset" (so SMEMBERS is in numeric
//! order) until it holds a non-integer or more than `set-max-intset-entries` members, then
//! a "hashtable" forever; [`SetValue`] mirrors that so replies and OBJECT ENCODING match.

use bytes::Bytes;
use rand::Rng;

use crate::commands::{flag::*, CommandSpec, Ctx, Keys, KEY1};
use crate::error;
use crate::notify;
use crate::num::parse_i64;
use crate::reply::Reply;
use crate::value::{SetValue, Value};

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    h: crate::commands::Handler,
) -> CommandSpec {
    crate::commands::engine("set", &["set"], name, arity, flags, keys, h)
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
];

/// Redis 7.0's default `set-max-intset-entries`.
const MAX_INTSET_ENTRIES: usize = 512;

fn get_set<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Result<Option<&'a mut SetValue>, Reply> {
    match ctx.read(key) {
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
            ctx.eng.dbs[db].insert(a[1].clone(), Value::Set(Box::default()), None, now);
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
    let mut added = 0;
    for m in &a[2..] {
        if s.members.insert(m.clone()) {
            added += 1;
            if s.intset && (parse_i64(m).is_none() || s.members.len() > MAX_INTSET_ENTRIES) {
                s.intset = false;
            }
        }
    }
    if added > 0 {
        ctx.modified(&a[1], notify::SET, "sadd");
    }
    Reply::Int(added)
}

/// Removes the key if the set became empty, with the "del" event after the command's own.
fn drop_if_empty(ctx: &mut Ctx, key: &Bytes) {
    let db = ctx.dbi();
    if matches!(ctx.eng.dbs[db].get(key).map(|e| &e.value), Some(Value::Set(s)) if s.members.is_empty())
    {
        ctx.eng.dbs[db].remove(key);
        ctx.notify(notify::GENERIC, "del", key);
    }
}

fn srem(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let s = match get_set(ctx, &a[1]) {
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
        Ok(s) => Reply::Int(s.is_some_and(|s| s.members.contains(&a[2])) as i64),
        Err(e) => e,
    }
}

fn smismember(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_set(ctx, &a[1]) {
        Ok(s) => Reply::Array(
            a[2..]
                .iter()
                .map(|m| Reply::Int(s.as_ref().is_some_and(|s| s.members.contains(m)) as i64))
                .collect(),
        ),
        Err(e) => e,
    }
}

fn scard(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_set(ctx, &a[1]) {
        Ok(s) => Reply::Int(s.map_or(0, |s| s.members.len() as i64)),
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
    let size = s.members.len();
    let mut rng = rand::thread_rng();
    let Some(l) = count else {
        let i = rng.gen_range(0..size);
        return Reply::Bulk(s.members.get_index(i).unwrap().clone());
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
                .map(|_| Reply::Bulk(s.members.get_index(rng.gen_range(0..size)).unwrap().clone()))
                .collect(),
        );
    }
    if n >= size {
        return Reply::Array(s.ordered().into_iter().map(Reply::Bulk).collect());
    }
    Reply::Array(
        rand::seq::index::sample(&mut rng, size, n)
            .into_iter()
            .map(|i| Reply::Bulk(s.members.get_index(i).unwrap().clone()))
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
    let s = match get_set(ctx, &a[1]) {
        Ok(Some(s)) => s,
        Ok(None) if count.is_some() => return Reply::Set(vec![]),
        Ok(None) => return Reply::Null,
        Err(e) => return e,
    };
    let mut rng = rand::thread_rng();
    let n = count.unwrap_or(1).min(s.members.len());
    let mut popped = Vec::with_capacity(n);
    for _ in 0..n {
        let i = rng.gen_range(0..s.members.len());
        popped.push(s.members.swap_remove_index(i).unwrap());
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
    if let Err(e) = crate::keys::parse_cursor(&a[2]) {
        return e;
    }
    let hasher = ctx.eng.scan_hasher.clone();
    let s = match get_set(ctx, &a[1]) {
        Ok(Some(s)) => s,
        Ok(None) => return crate::keys::scan_reply(0, vec![]),
        Err(e) => return e,
    };
    let args = match crate::keys::parse_scan(a, 2, false) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let (items, next) = if s.intset {
        (s.ordered(), 0)
    } else {
        crate::db::scan_by_hash(s.members.iter(), &hasher, args.cursor, args.count)
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
    crate::keys::scan_reply(next, out)
}
