//! Set commands: SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER, SCARD, SRANDMEMBER, SPOP,
//! SSCAN, SMOVE, and the algebra (SINTER, SUNION, SDIFF, their STORE forms, SINTERCARD).
//!
//! Redis keeps a set of integers as a sorted "intset" (so SMEMBERS is in numeric order),
//! from 7.2 a small set of strings as a "listpack" (insertion order), else a "hashtable";
//! [`SetValue`] (storage/set.rs) mirrors Redis' conversions so replies, OBJECT ENCODING
//! and memory match. The commands below follow t_set.c where the encoding shows: which
//! encoding SADD, SMOVE and the STORE commands start from, and the order in which SPOP and
//! SRANDMEMBER return a listpack's members.

use bytes::Bytes;
use rand::Rng;

use crate::engine::spec::{flag::*, CommandSpec, Ctx, Keys, KEY1};
use crate::error;
use crate::num::parse_i64;
use crate::reply::Reply;
use crate::storage::notify;
use crate::storage::value::{SetEncoding, SetLimits, SetValue, Value};

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

/// The encoding limits in force (config and personality).
fn limits(ctx: &Ctx) -> SetLimits {
    SetLimits::of(&ctx.eng.config)
}

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

/// SADD: a new set is sized for its arguments, an existing one converted up front if they
/// would outgrow it (Redis 7.2's `setTypeCreate`, `setTypeMaybeConvert`).
fn sadd(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let db = ctx.dbi();
    let now = ctx.now();
    let lim = limits(ctx);
    let hint = a.len() - 2;
    let s = match ctx.write(&a[1]) {
        None => {
            let s = SetValue::new_for(&a[2], hint, &lim);
            ctx.eng.dbs[db].insert(a[1].clone(), Value::Set(s), None, now);
            match &mut ctx.eng.dbs[db].get_mut(&a[1]).unwrap().value {
                Value::Set(s) => s,
                _ => unreachable!(),
            }
        }
        Some(e) => match &mut e.value {
            Value::Set(s) => {
                s.maybe_convert(hint, &lim);
                s
            }
            _ => return error::wrongtype(),
        },
    };
    let added = a[2..].iter().filter(|m| s.add(m, &lim)).count() as i64;
    if added > 0 {
        ctx.modified(&a[1], notify::SET, "sadd");
    }
    Reply::Int(added)
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
    let mut picks = rand::seq::index::sample(&mut rng, size, n).into_vec();
    if s.is_listpack() {
        // Redis walks a listpack once, picking as it goes: its members in their order.
        picks.sort_unstable();
        let all = s.ordered();
        return Reply::Array(
            picks
                .into_iter()
                .map(|i| Reply::Bulk(all[i].clone()))
                .collect(),
        );
    }
    Reply::Array(
        picks
            .into_iter()
            .map(|i| Reply::Bulk(s.get_index(i).unwrap()))
            .collect(),
    )
}

/// SPOP with a count pops member by member while what stays is more than a fifth of what
/// goes, else moves what stays into a new set (Redis' `SPOP_MOVE_STRATEGY_MUL`).
const SPOP_MOVE_STRATEGY_MUL: usize = 5;

/// Pops `n` (less than the set's size) members as Redis' `spopWithCountCommand` does: a
/// listpack in one pass, the popped members in its order; when most of the set goes, the
/// members that stay are picked and moved into a new set (a listpack, or an intset from
/// an intset), the others returned in the old set's order.
fn pop_some(s: &mut SetValue, n: usize, lim: &SetLimits, rng: &mut impl Rng) -> Vec<Bytes> {
    let size = s.len();
    let remaining = size - n;
    if remaining * SPOP_MOVE_STRATEGY_MUL > n {
        if s.is_listpack() {
            let mut at = rand::seq::index::sample(rng, size, n).into_vec();
            at.sort_unstable();
            return s.remove_positions(&at);
        }
        return (0..n)
            .map(|_| {
                let i = rng.gen_range(0..s.len());
                s.swap_remove_index(i).unwrap()
            })
            .collect();
    }
    let mut kept = if s.is_intset() {
        SetValue::default()
    } else {
        SetValue::new_listpack()
    };
    if s.is_listpack() {
        let mut at = rand::seq::index::sample(rng, size, remaining).into_vec();
        at.sort_unstable();
        for m in s.remove_positions(&at) {
            kept.add(&m, lim);
        }
    } else {
        for _ in 0..remaining {
            let i = rng.gen_range(0..s.len());
            let m = s.swap_remove_index(i).unwrap();
            kept.add(&m, lim);
        }
    }
    std::mem::replace(s, kept).ordered()
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
    let lim = limits(ctx);
    let s = match get_set_for_write(ctx, &a[1]) {
        Ok(Some(s)) => s,
        Ok(None) if count.is_some() => return Reply::Set(vec![]),
        Ok(None) => return Reply::Null,
        Err(e) => return e,
    };
    let mut rng = rand::thread_rng();
    let size = s.len();
    let n = count.unwrap_or(1).min(size);
    let mut popped = match count {
        None => {
            let i = rng.gen_range(0..size);
            vec![s.swap_remove_index(i).unwrap()]
        }
        Some(0) => vec![],
        // The whole set, as SUNION of the key would reply it.
        Some(_) if n == size => {
            let all = std::mem::take(s);
            union_of(&[&all], &lim).ordered()
        }
        Some(_) => pop_some(s, n, &lim, &mut rng),
    };
    if n > 0 {
        ctx.modified(&a[1], notify::SET, "spop");
        drop_if_empty(ctx, &a[1]);
    }
    match count {
        None => Reply::opt_bulk(popped.pop()),
        Some(_) => Reply::Set(popped.into_iter().map(Reply::Bulk).collect()),
    }
}

/// SSCAN: an intset or a listpack comes back whole with cursor 0, as in Redis.
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
    let lim = limits(ctx);
    if ctx.write(dst).is_none() {
        crate::engine::store(
            ctx.eng,
            db,
            dst.clone(),
            Value::Set(SetValue::new_for(m, 1, &lim)),
            None,
        );
    }
    if let Ok(Some(s)) = get_set_for_write(ctx, dst) {
        if s.add(m, &lim) {
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

/// SINTER, SINTERSTORE. The stored result starts as an intset if the smallest set is one,
/// else as a listpack, and ends as an intset if every member is an integer and fits
/// (Redis 7.2's `sinterGenericCommand`; under Redis 7.0 the listpack is a hashtable from
/// its first member, which comes to the same).
fn sinter_generic(ctx: &mut Ctx, keys: &[Bytes], dst: Option<&Bytes>) -> Reply {
    let lim = limits(ctx);
    // An intersection with a missing (empty) key is empty.
    let (members, smallest) = match with_sets(ctx, keys, |sets| {
        match sets.iter().copied().collect::<Option<Vec<_>>>() {
            None => (vec![], SetEncoding::Intset),
            Some(sets) => {
                let smallest = sets.iter().min_by_key(|s| s.len()).map(|s| s.encoding());
                (intersect(&sets, 0), smallest.unwrap_or(SetEncoding::Intset))
            }
        }
    }) {
        Ok(m) => m,
        Err(e) => return e,
    };
    match dst {
        Some(dst) => {
            let mut result = match smallest {
                SetEncoding::Intset => SetValue::default(),
                _ => SetValue::new_listpack(),
            };
            let mut only_integers = true;
            for m in members {
                only_integers &= parse_i64(&m).is_some();
                result.add(&m, &lim);
            }
            if only_integers {
                result.maybe_to_intset(&lim);
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

/// The union of `sets` as Redis builds it: an intset, each member added in its set's order.
fn union_of(sets: &[&SetValue], lim: &SetLimits) -> SetValue {
    let mut result = SetValue::default();
    for s in sets {
        for m in s.ordered() {
            result.add(&m, lim);
        }
    }
    result
}

/// The difference of `sets` as Redis' `sunionDiffGenericCommand` builds it (the encoding
/// of the result depends on which of its two algorithms runs). `sameset`: a later key is
/// the first one, so the result is empty.
fn diff_of(sets: &[Option<&SetValue>], sameset: bool, lim: &SetLimits) -> SetValue {
    let mut result = SetValue::default();
    let Some((Some(first), rest)) = sets.split_first() else {
        return result;
    };
    if sameset {
        return result;
    }
    // Algorithm 1, O(N*M), tests each member of the first set against the others;
    // algorithm 2, O(total), adds the first set and removes the others' members.
    let present = sets.iter().flatten().count();
    let algo_one_work = first.len() * present / 2;
    let algo_two_work: usize = sets.iter().flatten().map(|s| s.len()).sum();
    if algo_one_work <= algo_two_work {
        for m in first.ordered() {
            if !rest.iter().flatten().any(|s| s.contains(&m)) {
                result.add(&m, lim);
            }
        }
    } else {
        for m in first.ordered() {
            result.add(&m, lim);
        }
        for s in rest.iter().flatten() {
            for m in s.ordered() {
                result.remove(&m);
            }
            if result.is_empty() {
                break;
            }
        }
    }
    result
}

fn sunion_diff(ctx: &mut Ctx, keys: &[Bytes], dst: Option<&Bytes>, op: SetOp) -> Reply {
    let lim = limits(ctx);
    let sameset = keys.iter().skip(1).any(|k| *k == keys[0]);
    let result = match with_sets(ctx, keys, |sets| match op {
        SetOp::Union => union_of(&sets.iter().flatten().copied().collect::<Vec<_>>(), &lim),
        SetOp::Diff => diff_of(sets, sameset, &lim),
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
