//! Sorted-set commands. Redisson's fair lock keeps waiter deadlines in a sorted set
//! (`redisson_lock_timeout:{name}`), so ZADD/ZSCORE/ZREM/ZRANGE/ZINCRBY must match Redis
//! exactly, down to the `%.17g` score formatting of Redis 7.0.
//!
//! The data structure lives in `zset.rs`; this file parses arguments into typed ranges and
//! options, runs them against a `ZSet` and builds the reply.

use bytes::Bytes;
use std::collections::HashMap;

use crate::commands;
use crate::commands::lists::{parse_timeout, retrying};
use crate::engine::spec::{flag::*, CommandSpec, Ctx, Exec, Keys, BASE, KEY1};
use crate::engine::{self, BlockRequest};
use crate::error::{self, *};
use crate::num::{parse_i64, parse_strtod};
use crate::reply::Reply;
use crate::storage::notify;
use crate::storage::value::Value;
use crate::storage::zset::ZSet;

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    acl: &'static [&'static str],
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        keys,
        group: "sorted-set",
        acl,
        exec: Exec::Engine(h),
        ..BASE
    }
}

const W_FAST: &[&str] = &["write", "sortedset", "fast"];
const W_SLOW: &[&str] = &["write", "sortedset", "slow"];
const R_FAST: &[&str] = &["read", "sortedset", "fast"];
const R_SLOW: &[&str] = &["read", "sortedset", "slow"];
const W_BLOCK: &[&str] = &["write", "sortedset", "fast", "blocking"];
const KEYS_1_2: Keys = Keys::Range {
    first: 1,
    last: 2,
    step: 1,
};
const KEYS_BUT_LAST: Keys = Keys::Range {
    first: 1,
    last: -2,
    step: 1,
};
const STORE_KEYS: Keys = Keys::DestNumKeys {
    dest: 1,
    numkeys_at: 2,
};
const NUM_KEYS_1: Keys = Keys::NumKeys {
    numkeys_at: 1,
    step: 1,
};

pub static COMMANDS: &[CommandSpec] = &[
    cmd("zadd", -4, WRITE | DENYOOM | FAST, KEY1, W_FAST, zadd),
    cmd("zincrby", 4, WRITE | DENYOOM | FAST, KEY1, W_FAST, zincrby),
    cmd("zrem", -3, WRITE | FAST, KEY1, W_FAST, zrem),
    cmd("zcard", 2, READONLY | FAST, KEY1, R_FAST, zcard),
    cmd("zscore", 3, READONLY | FAST, KEY1, R_FAST, zscore),
    cmd("zmscore", -3, READONLY | FAST, KEY1, R_FAST, zmscore),
    cmd("zcount", 4, READONLY | FAST, KEY1, R_FAST, zcount),
    cmd("zlexcount", 4, READONLY | FAST, KEY1, R_FAST, zlexcount),
    cmd("zrank", -3, READONLY | FAST, KEY1, R_FAST, zrank),
    cmd("zrevrank", -3, READONLY | FAST, KEY1, R_FAST, zrevrank),
    cmd("zrange", -4, READONLY, KEY1, R_SLOW, zrange),
    cmd(
        "zrangestore",
        -5,
        WRITE | DENYOOM,
        KEYS_1_2,
        W_SLOW,
        zrangestore,
    ),
    cmd("zrevrange", -4, READONLY, KEY1, R_SLOW, zrevrange),
    cmd("zrangebyscore", -4, READONLY, KEY1, R_SLOW, zrangebyscore),
    cmd(
        "zrevrangebyscore",
        -4,
        READONLY,
        KEY1,
        R_SLOW,
        zrevrangebyscore,
    ),
    cmd("zrangebylex", -4, READONLY, KEY1, R_SLOW, zrangebylex),
    cmd("zrevrangebylex", -4, READONLY, KEY1, R_SLOW, zrevrangebylex),
    cmd("zremrangebyscore", 4, WRITE, KEY1, W_SLOW, zremrangebyscore),
    cmd("zremrangebyrank", 4, WRITE, KEY1, W_SLOW, zremrangebyrank),
    cmd("zremrangebylex", 4, WRITE, KEY1, W_SLOW, zremrangebylex),
    cmd("zpopmin", -2, WRITE | FAST, KEY1, W_FAST, zpopmin),
    cmd("zpopmax", -2, WRITE | FAST, KEY1, W_FAST, zpopmax),
    cmd(
        "bzpopmin",
        -3,
        WRITE | FAST | NOSCRIPT | BLOCKING,
        KEYS_BUT_LAST,
        W_BLOCK,
        bzpopmin,
    ),
    cmd(
        "bzpopmax",
        -3,
        WRITE | FAST | NOSCRIPT | BLOCKING,
        KEYS_BUT_LAST,
        W_BLOCK,
        bzpopmax,
    ),
    cmd("zmpop", -4, WRITE, NUM_KEYS_1, W_SLOW, zmpop),
    cmd(
        "bzmpop",
        -5,
        WRITE | BLOCKING,
        Keys::NumKeys {
            numkeys_at: 2,
            step: 1,
        },
        &["write", "sortedset", "slow", "blocking"],
        bzmpop,
    ),
    cmd("zrandmember", -2, READONLY, KEY1, R_SLOW, zrandmember),
    cmd("zscan", -3, READONLY, KEY1, R_SLOW, zscan),
    cmd(
        "zunionstore",
        -4,
        WRITE | DENYOOM,
        STORE_KEYS,
        W_SLOW,
        zunionstore,
    ),
    cmd(
        "zinterstore",
        -4,
        WRITE | DENYOOM,
        STORE_KEYS,
        W_SLOW,
        zinterstore,
    ),
    cmd(
        "zdiffstore",
        -4,
        WRITE | DENYOOM,
        STORE_KEYS,
        W_SLOW,
        zdiffstore,
    ),
    cmd("zunion", -3, READONLY, NUM_KEYS_1, R_SLOW, zunion),
    cmd("zinter", -3, READONLY, NUM_KEYS_1, R_SLOW, zinter),
    cmd("zdiff", -3, READONLY, NUM_KEYS_1, R_SLOW, zdiff),
    cmd("zintercard", -3, READONLY, NUM_KEYS_1, R_SLOW, zintercard),
];

const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";

// ---------------------------------------------------------------- access helpers

/// The sorted set at `key`: `Ok(None)` if absent, WRONGTYPE if another type.
pub(crate) fn get_zset<'a>(
    ctx: &'a mut Ctx,
    key: &[u8],
    read: bool,
) -> Result<Option<&'a mut ZSet>, Reply> {
    let e = if read { ctx.read(key) } else { ctx.write(key) };
    match e {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::ZSet(z) => Ok(Some(z)),
            _ => Err(error::wrongtype()),
        },
    }
}

/// The write epilogue of a removal: the event, then "del" if the set emptied.
fn removed(ctx: &mut Ctx, key: &Bytes, event: &str) {
    let db = ctx.dbi();
    ctx.eng.touch_watched(db, key);
    ctx.eng.stats.dirty += 1;
    ctx.notify(notify::ZSET, event, key);
    let empty = matches!(ctx.eng.dbs[db].get(key), Some(e) if matches!(&e.value, Value::ZSet(z) if z.is_empty()));
    if empty {
        ctx.eng.dbs[db].remove(key);
        ctx.notify(notify::GENERIC, "del", key);
    }
    ctx.eng.signal_ready(db, key);
}

/// A member/score pair as a reply element: flat in RESP2, a nested pair in RESP3 when
/// `nested` (Redis 7.0's shape for WITHSCORES, ZPOPMIN with COUNT, ZMPOP...).
fn push_pair(out: &mut Vec<Reply>, m: Bytes, s: f64, withscores: bool, nested: bool) {
    if !withscores {
        out.push(Reply::Bulk(m));
    } else if nested {
        out.push(Reply::Array(vec![Reply::Bulk(m), Reply::Double(s)]));
    } else {
        out.push(Reply::Bulk(m));
        out.push(Reply::Double(s));
    }
}

fn pairs_reply(ctx: &Ctx, items: Vec<(Bytes, f64)>, withscores: bool) -> Reply {
    let nested = ctx.cl.resp3;
    let mut out = Vec::with_capacity(items.len() * if withscores && !nested { 2 } else { 1 });
    for (m, s) in items {
        push_pair(&mut out, m, s, withscores, nested);
    }
    Reply::Array(out)
}

// ---------------------------------------------------------------- ranges

/// A score range as ZRANGEBYSCORE takes it: `(1`, `5`, `-inf`, `+inf`.
#[derive(Debug, Clone, Copy)]
struct ScoreRange {
    min: f64,
    minex: bool,
    max: f64,
    maxex: bool,
}

fn parse_score_bound(a: &[u8]) -> Option<(f64, bool)> {
    let (ex, s) = match a.first() {
        Some(b'(') => (true, &a[1..]),
        _ => (false, a),
    };
    // A bare strtod: leading spaces are skipped and "" reads as 0.
    parse_strtod(s, false).map(|v| (v, ex))
}

impl ScoreRange {
    fn parse(min: &[u8], max: &[u8]) -> Result<ScoreRange, Reply> {
        match (parse_score_bound(min), parse_score_bound(max)) {
            (Some((min, minex)), Some((max, maxex))) => Ok(ScoreRange {
                min,
                minex,
                max,
                maxex,
            }),
            _ => Err(Reply::err(MIN_MAX_NOT_FLOAT)),
        }
    }
    fn below_min(&self, s: f64) -> bool {
        if self.minex {
            s <= self.min
        } else {
            s < self.min
        }
    }
    fn within_max(&self, s: f64) -> bool {
        if self.maxex {
            s < self.max
        } else {
            s <= self.max
        }
    }
    fn empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.minex || self.maxex))
    }
    /// Ascending ranks `start..end` of the elements in range.
    fn ranks(&self, z: &ZSet) -> (usize, usize) {
        if self.empty() {
            return (0, 0);
        }
        let start = z.count_before(&|s, _| self.below_min(s));
        let end = z.count_before(&|s, _| self.below_min(s) || self.within_max(s));
        (start, end.max(start))
    }
}

#[derive(Debug, Clone)]
enum LexBound {
    Min,
    Max,
    Incl(Bytes),
    Excl(Bytes),
}

#[derive(Debug, Clone)]
struct LexRange {
    min: LexBound,
    max: LexBound,
}

fn parse_lex_bound(a: &Bytes) -> Option<LexBound> {
    match a.first() {
        Some(b'+') if a.len() == 1 => Some(LexBound::Max),
        Some(b'-') if a.len() == 1 => Some(LexBound::Min),
        Some(b'[') => Some(LexBound::Incl(a.slice(1..))),
        Some(b'(') => Some(LexBound::Excl(a.slice(1..))),
        _ => None,
    }
}

impl LexRange {
    fn parse(min: &Bytes, max: &Bytes) -> Result<LexRange, Reply> {
        match (parse_lex_bound(min), parse_lex_bound(max)) {
            (Some(min), Some(max)) => Ok(LexRange { min, max }),
            _ => Err(Reply::err(MIN_MAX_NOT_STRING)),
        }
    }
    fn below_min(&self, m: &[u8]) -> bool {
        match &self.min {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Incl(b) => m < &b[..],
            LexBound::Excl(b) => m <= &b[..],
        }
    }
    fn within_max(&self, m: &[u8]) -> bool {
        match &self.max {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Incl(b) => m <= &b[..],
            LexBound::Excl(b) => m < &b[..],
        }
    }
    fn ranks(&self, z: &ZSet) -> (usize, usize) {
        let start = z.count_before(&|_, m| self.below_min(m));
        let end = z.count_before(&|_, m| self.below_min(m) || self.within_max(m));
        (start, end.max(start))
    }
}

/// Rank range normalisation shared by ZRANGE and ZREMRANGEBYRANK: ascending ranks
/// `start..end`.
fn rank_range(start: i64, end: i64, len: usize) -> (usize, usize) {
    let len = len as i64;
    let mut start = if start < 0 { start + len } else { start };
    let mut end = if end < 0 { end + len } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return (0, 0);
    }
    if end >= len {
        end = len - 1;
    }
    (start as usize, end as usize + 1)
}

// ---------------------------------------------------------------- ZADD / ZINCRBY

#[derive(Default)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

fn zadd_generic(ctx: &mut Ctx, a: &[Bytes], mut f: AddFlags) -> Reply {
    let key = &a[1];
    let mut i = 2;
    while i < a.len() {
        let o = &a[i];
        if o.eq_ignore_ascii_case(b"nx") {
            f.nx = true
        } else if o.eq_ignore_ascii_case(b"xx") {
            f.xx = true
        } else if o.eq_ignore_ascii_case(b"ch") {
            f.ch = true
        } else if o.eq_ignore_ascii_case(b"incr") {
            f.incr = true
        } else if o.eq_ignore_ascii_case(b"gt") {
            f.gt = true
        } else if o.eq_ignore_ascii_case(b"lt") {
            f.lt = true
        } else {
            break;
        }
        i += 1;
    }
    let rest = &a[i..];
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return error::syntax();
    }
    if f.xx && f.nx {
        return Reply::err("ERR XX and NX options at the same time are not compatible");
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return Reply::err("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if f.incr && rest.len() > 2 {
        return Reply::err("ERR INCR option supports a single increment-element pair");
    }
    let mut pairs = Vec::with_capacity(rest.len() / 2);
    for p in rest.chunks(2) {
        match parse_strtod(&p[0], true) {
            Some(s) => pairs.push((s, p[1].clone())),
            None => return error::not_float(),
        }
    }
    let db = ctx.dbi();
    let now = ctx.now();
    match get_zset(ctx, key, false) {
        Err(e) => return e,
        Ok(Some(_)) => {}
        Ok(None) => {
            if f.xx {
                return if f.incr { Reply::Null } else { Reply::Int(0) };
            }
            let big = ctx.eng.config.zset_max_listpack_entries == 0
                || ctx.eng.config.zset_max_listpack_value < pairs[0].1.len();
            let z = if big {
                ZSet::new_big()
            } else {
                ZSet::default()
            };
            ctx.note_new_key(key);
            ctx.eng.dbs[db].insert(key.clone(), Value::ZSet(z), None, now);
        }
    }
    let (me, mv) = (
        ctx.eng.config.zset_max_listpack_entries,
        ctx.eng.config.zset_max_listpack_value,
    );
    let Some(Value::ZSet(z)) = ctx.eng.dbs[db].get_mut(key).map(|e| &mut e.value) else {
        unreachable!("checked above");
    };
    let (mut added, mut updated, mut processed) = (0, 0, 0);
    let mut last = 0.0;
    let mut nan = false;
    for (score, member) in pairs {
        let mut score = score;
        match z.score(&member) {
            Some(cur) => {
                if f.nx {
                    continue;
                }
                if f.incr {
                    score += cur;
                    if score.is_nan() {
                        nan = true;
                        break;
                    }
                }
                if (f.lt && score >= cur) || (f.gt && score <= cur) {
                    continue;
                }
                last = score;
                processed += 1;
                if score != cur {
                    z.insert(member, score);
                    updated += 1;
                }
            }
            None => {
                if f.xx {
                    continue;
                }
                let len = member.len();
                z.insert(member, score);
                if !z.is_big() && (z.len() > me || len > mv) {
                    z.to_big();
                }
                last = score;
                added += 1;
                processed += 1;
            }
        }
    }
    if added + updated > 0 {
        ctx.modified(key, notify::ZSET, if f.incr { "zincr" } else { "zadd" });
    }
    if nan {
        return Reply::err(NAN_SCORE);
    }
    if f.incr {
        if processed > 0 {
            Reply::Double(last)
        } else {
            Reply::Null
        }
    } else {
        Reply::Int(if f.ch { added + updated } else { added })
    }
}

pub(crate) fn zadd(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    zadd_generic(ctx, a, AddFlags::default())
}

fn zincrby(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    zadd_generic(
        ctx,
        a,
        AddFlags {
            incr: true,
            ..Default::default()
        },
    )
}

// ---------------------------------------------------------------- simple reads/writes

fn zrem(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let z = match get_zset(ctx, &a[1], false) {
        Ok(Some(z)) => z,
        Ok(None) => return Reply::Int(0),
        Err(e) => return e,
    };
    let mut n = 0;
    for m in &a[2..] {
        if z.remove(m).is_some() {
            n += 1;
            if z.is_empty() {
                break;
            }
        }
    }
    if n > 0 {
        removed(ctx, &a[1], "zrem");
    }
    Reply::Int(n)
}

fn zcard(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_zset(ctx, &a[1], true) {
        Ok(z) => Reply::Int(z.map_or(0, |z| z.len() as i64)),
        Err(e) => e,
    }
}

fn zscore(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_zset(ctx, &a[1], true) {
        Ok(z) => z
            .and_then(|z| z.score(&a[2]))
            .map_or(Reply::Null, Reply::Double),
        Err(e) => e,
    }
}

fn zmscore(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_zset(ctx, &a[1], true) {
        Ok(z) => Reply::Array(
            a[2..]
                .iter()
                .map(|m| {
                    z.as_ref()
                        .and_then(|z| z.score(m))
                        .map_or(Reply::Null, Reply::Double)
                })
                .collect(),
        ),
        Err(e) => e,
    }
}

/// How many members of the set at `key` fall in the rank span `ranks` gives (ZCOUNT,
/// ZLEXCOUNT): 0 for a missing key.
fn count_in(ctx: &mut Ctx, key: &[u8], ranks: impl FnOnce(&ZSet) -> (usize, usize)) -> Reply {
    match get_zset(ctx, key, true) {
        Ok(Some(z)) => {
            let (s, e) = ranks(z);
            Reply::Int((e - s) as i64)
        }
        Ok(None) => Reply::Int(0),
        Err(e) => e,
    }
}

fn zcount(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match ScoreRange::parse(&a[2], &a[3]) {
        Ok(r) => count_in(ctx, &a[1], |z| r.ranks(z)),
        Err(e) => e,
    }
}

fn zlexcount(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match LexRange::parse(&a[2], &a[3]) {
        Ok(r) => count_in(ctx, &a[1], |z| r.ranks(z)),
        Err(e) => e,
    }
}

/// ZRANK / ZREVRANK key member [WITHSCORE] (WITHSCORE from 7.2; before it the arity is 3,
/// see `CommandSpec::arity_in`).
fn rank_generic(ctx: &mut Ctx, a: &[Bytes], rev: bool) -> Reply {
    if a.len() > 4 {
        return error::wrong_arity(if rev { "zrevrank" } else { "zrank" });
    }
    let withscore = match a.get(3) {
        None => false,
        Some(w) if w.eq_ignore_ascii_case(b"withscore") => true,
        Some(_) => return error::syntax(),
    };
    let none = if withscore {
        Reply::NullArray
    } else {
        Reply::Null
    };
    match get_zset(ctx, &a[1], true) {
        Ok(Some(z)) => match z.rank(&a[2]) {
            Some(r) => {
                let rank = Reply::Int(if rev { z.len() - 1 - r } else { r } as i64);
                match withscore {
                    false => rank,
                    true => Reply::Array(vec![
                        rank,
                        z.score(&a[2]).map_or(Reply::Null, Reply::Double),
                    ]),
                }
            }
            None => none,
        },
        Ok(None) => none,
        Err(e) => e,
    }
}

fn zrank(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    rank_generic(ctx, a, false)
}
fn zrevrank(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    rank_generic(ctx, a, true)
}

// ---------------------------------------------------------------- ZRANGE family

#[derive(Clone, Copy, PartialEq, Eq)]
enum RangeType {
    Rank,
    Score,
    Lex,
}

enum Range {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

struct RangeQuery {
    range: Range,
    rev: bool,
    withscores: bool,
    /// (offset, count); count < 0 means no limit.
    limit: Option<(i64, i64)>,
}

/// Parses `min max [options]` at `a[at..]` the way Redis' zrangeGenericCommand does.
/// `ty`/`rev` are fixed by the legacy commands (ZRANGEBYSCORE...) and free for ZRANGE.
fn parse_range(
    a: &[Bytes],
    at: usize,
    mut ty: Option<RangeType>,
    mut rev: Option<bool>,
    store: bool,
) -> Result<RangeQuery, Reply> {
    let mut withscores = false;
    let mut limit = None;
    let mut j = at + 2;
    while j < a.len() {
        let left = a.len() - j - 1;
        let o = &a[j];
        if !store && o.eq_ignore_ascii_case(b"withscores") {
            withscores = true;
        } else if o.eq_ignore_ascii_case(b"limit") && left >= 2 {
            match (parse_i64(&a[j + 1]), parse_i64(&a[j + 2])) {
                (Some(off), Some(cnt)) => limit = Some((off, cnt)),
                _ => return Err(error::not_integer()),
            }
            j += 2;
        } else if rev.is_none() && o.eq_ignore_ascii_case(b"rev") {
            rev = Some(true);
        } else if ty.is_none() && o.eq_ignore_ascii_case(b"bylex") {
            ty = Some(RangeType::Lex);
        } else if ty.is_none() && o.eq_ignore_ascii_case(b"byscore") {
            ty = Some(RangeType::Score);
        } else {
            return Err(error::syntax());
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    let ty = ty.unwrap_or(RangeType::Rank);
    // Redis only refuses a LIMIT count other than its default -1 for rank ranges (its
    // check is `opt_limit != -1`), and then ignores the offset: `LIMIT 5 -1` is accepted.
    if ty == RangeType::Rank && matches!(limit, Some((_, c)) if c != -1) {
        return Err(Reply::err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if ty == RangeType::Rank {
        limit = None;
    }
    if withscores && ty == RangeType::Lex {
        return Err(Reply::err(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut lo, mut hi) = (&a[at], &a[at + 1]);
    if rev && ty != RangeType::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    let range = match ty {
        RangeType::Rank => match (parse_i64(lo), parse_i64(hi)) {
            (Some(s), Some(e)) => Range::Rank(s, e),
            _ => return Err(error::not_integer()),
        },
        RangeType::Score => Range::Score(ScoreRange::parse(lo, hi)?),
        RangeType::Lex => Range::Lex(LexRange::parse(lo, hi)?),
    };
    Ok(RangeQuery {
        range,
        rev,
        withscores,
        limit,
    })
}

/// Runs a range query: the selected elements in reply order.
fn run_range(z: &ZSet, q: &RangeQuery) -> Vec<(Bytes, f64)> {
    let len = z.len();
    let (start, end) = match &q.range {
        Range::Rank(s, e) => {
            // For REV, ranks count from the highest score.
            let (s, e) = rank_range(*s, *e, len);
            if q.rev {
                let (s2, e2) = (len - e, len - s);
                let mut v = z.range(s2, e2);
                v.reverse();
                return v;
            }
            (s, e)
        }
        Range::Score(r) => r.ranks(z),
        Range::Lex(r) => r.ranks(z),
    };
    let (offset, count) = q.limit.unwrap_or((0, -1));
    if offset < 0 || count == 0 {
        return vec![];
    }
    let avail = end - start;
    let offset = (offset as u64).min(avail as u64) as usize;
    let take = if count < 0 {
        avail - offset
    } else {
        (count as u64).min((avail - offset) as u64) as usize
    };
    if q.rev {
        let mut v = z.range(end - offset - take, end - offset);
        v.reverse();
        v
    } else {
        z.range(start + offset, start + offset + take)
    }
}

fn range_reply(ctx: &mut Ctx, a: &[Bytes], ty: Option<RangeType>, rev: Option<bool>) -> Reply {
    let q = match parse_range(a, 2, ty, rev, false) {
        Ok(q) => q,
        Err(e) => return e,
    };
    let items = match get_zset(ctx, &a[1], true) {
        Ok(Some(z)) => run_range(z, &q),
        Ok(None) => return Reply::Array(vec![]),
        Err(e) => return e,
    };
    pairs_reply(ctx, items, q.withscores)
}

fn zrange(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    range_reply(ctx, a, None, None)
}
fn zrevrange(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    range_reply(ctx, a, Some(RangeType::Rank), Some(true))
}
fn zrangebyscore(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    range_reply(ctx, a, Some(RangeType::Score), Some(false))
}
fn zrevrangebyscore(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    range_reply(ctx, a, Some(RangeType::Score), Some(true))
}
fn zrangebylex(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    range_reply(ctx, a, Some(RangeType::Lex), Some(false))
}
fn zrevrangebylex(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    range_reply(ctx, a, Some(RangeType::Lex), Some(true))
}

/// Stores `items` as a new sorted set at `dst` (replacing it and its TTL), or deletes
/// `dst` when empty, with the events Redis sends. Returns the stored cardinality.
pub(crate) fn store_result(
    ctx: &mut Ctx,
    dst: &Bytes,
    items: Vec<(Bytes, f64)>,
    event: &str,
) -> Reply {
    let db = ctx.dbi();
    if items.is_empty() {
        if ctx.write(dst).is_some() {
            engine::delete_key(ctx.eng, db, dst);
        }
        return Reply::Int(0);
    }
    let maxlen = items.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
    let mut z = ZSet::default();
    if items.len() > ctx.eng.config.zset_max_listpack_entries
        || maxlen > ctx.eng.config.zset_max_listpack_value
    {
        // Built big directly (one insert into a pack is a copy of it), with the scores
        // the pack would have kept: -0 as +0.
        z = ZSet::new_big();
        for (m, s) in items {
            z.insert(m, if s == 0.0 { 0.0 } else { s });
        }
    } else {
        for (m, s) in items {
            z.insert(m, s);
        }
    }
    let n = z.len() as i64;
    ctx.write(dst);
    engine::store(ctx.eng, db, dst.clone(), Value::ZSet(z), None);
    ctx.modified(dst, notify::ZSET, event);
    Reply::Int(n)
}

fn zrangestore(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let q = match parse_range(a, 3, None, None, true) {
        Ok(q) => q,
        Err(e) => return e,
    };
    let items = match get_zset(ctx, &a[2], true) {
        Ok(Some(z)) => run_range(z, &q),
        Ok(None) => vec![],
        Err(e) => return e,
    };
    store_result(ctx, &a[1], items, "zrangestore")
}

// ---------------------------------------------------------------- ZREMRANGEBY*

fn zremrange_generic(ctx: &mut Ctx, a: &[Bytes], ty: RangeType) -> Reply {
    let range = match ty {
        RangeType::Rank => match (parse_i64(&a[2]), parse_i64(&a[3])) {
            (Some(s), Some(e)) => Range::Rank(s, e),
            _ => return error::not_integer(),
        },
        RangeType::Score => match ScoreRange::parse(&a[2], &a[3]) {
            Ok(r) => Range::Score(r),
            Err(e) => return e,
        },
        RangeType::Lex => match LexRange::parse(&a[2], &a[3]) {
            Ok(r) => Range::Lex(r),
            Err(e) => return e,
        },
    };
    let z = match get_zset(ctx, &a[1], false) {
        Ok(Some(z)) => z,
        Ok(None) => return Reply::Int(0),
        Err(e) => return e,
    };
    let (s, e) = match &range {
        Range::Rank(s, e) => rank_range(*s, *e, z.len()),
        Range::Score(r) => r.ranks(z),
        Range::Lex(r) => r.ranks(z),
    };
    let victims: Vec<Bytes> = z.range(s, e).into_iter().map(|(m, _)| m).collect();
    for m in &victims {
        z.remove(m);
    }
    if !victims.is_empty() {
        let ev = match ty {
            RangeType::Rank => "zremrangebyrank",
            RangeType::Score => "zremrangebyscore",
            RangeType::Lex => "zremrangebylex",
        };
        removed(ctx, &a[1], ev);
    }
    Reply::Int(victims.len() as i64)
}

fn zremrangebyscore(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    zremrange_generic(ctx, a, RangeType::Score)
}
fn zremrangebyrank(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    zremrange_generic(ctx, a, RangeType::Rank)
}
fn zremrangebylex(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    zremrange_generic(ctx, a, RangeType::Lex)
}

// ---------------------------------------------------------------- pops

/// Pops up to `count` lowest (`max == false`) or highest elements of `key`, which must
/// hold a non-empty sorted set, with the events Redis sends.
fn pop_from(ctx: &mut Ctx, key: &Bytes, max: bool, count: usize) -> Vec<(Bytes, f64)> {
    let Ok(Some(z)) = get_zset(ctx, key, false) else {
        return vec![];
    };
    let n = count.min(z.len());
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let i = if max { z.len() - 1 } else { 0 };
        let Some((s, m)) = z.nth_owned(i) else {
            break;
        };
        z.remove(&m);
        out.push((m, s));
    }
    removed(ctx, key, if max { "zpopmax" } else { "zpopmin" });
    out
}

fn zpop_generic(ctx: &mut Ctx, a: &[Bytes], max: bool) -> Reply {
    if a.len() > 3 {
        return error::syntax();
    }
    let count = match a.get(2) {
        None => None,
        Some(c) => match parse_i64(c) {
            None => return Reply::err(NOT_POSITIVE),
            Some(n) if n < 0 => return Reply::err(NOT_POSITIVE),
            Some(n) => Some(n as usize),
        },
    };
    match get_zset(ctx, &a[1], false) {
        Ok(Some(_)) => {}
        Ok(None) => return Reply::Array(vec![]),
        Err(e) => return e,
    }
    if count == Some(0) {
        return Reply::Array(vec![]);
    }
    let items = pop_from(ctx, &a[1], max, count.unwrap_or(1));
    let nested = ctx.cl.resp3 && count.is_some();
    let mut out = Vec::new();
    for (m, s) in items {
        push_pair(&mut out, m, s, true, nested);
    }
    Reply::Array(out)
}

fn zpopmin(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    zpop_generic(ctx, a, false)
}
fn zpopmax(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    zpop_generic(ctx, a, true)
}

fn bzpop_generic(ctx: &mut Ctx, a: &[Bytes], max: bool) -> Reply {
    let deadline = match parse_timeout(ctx, &a[a.len() - 1]) {
        Ok(d) => d,
        Err(e) => return e,
    };
    let keys = &a[1..a.len() - 1];
    let retry = retrying(ctx);
    for k in keys {
        match get_zset(ctx, k, false) {
            Ok(Some(z)) if !z.is_empty() => {
                let mut out = vec![Reply::Bulk(k.clone())];
                for (m, s) in pop_from(ctx, k, max, 1) {
                    out.push(Reply::Bulk(m));
                    out.push(Reply::Double(s));
                }
                return Reply::Array(out);
            }
            Ok(_) => {}
            Err(_) if retry => {}
            Err(e) => return e,
        }
    }
    ctx.block = Some(BlockRequest {
        keys: keys.to_vec(),
        deadline,
        timeout_reply: Reply::NullArray,
        argv: None,
    });
    Reply::NoReply
}

fn bzpopmin(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    bzpop_generic(ctx, a, false)
}
fn bzpopmax(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    bzpop_generic(ctx, a, true)
}

/// `MIN` -> false, `MAX` -> true.
fn min_max(w: &[u8]) -> Option<bool> {
    if w.eq_ignore_ascii_case(b"min") {
        Some(false)
    } else if w.eq_ignore_ascii_case(b"max") {
        Some(true)
    } else {
        None
    }
}

/// ZMPOP's body: `Ok(None)` when no key holds a sorted set.
fn zmpop_keys(
    ctx: &mut Ctx,
    keys: &[Bytes],
    max: bool,
    count: usize,
    retry: bool,
) -> Result<Option<Reply>, Reply> {
    for k in keys {
        match get_zset(ctx, k, false) {
            Ok(Some(z)) if !z.is_empty() => {
                let items = pop_from(ctx, k, max, count);
                let mut out = Vec::new();
                for (m, s) in items {
                    push_pair(&mut out, m, s, true, true);
                }
                return Ok(Some(Reply::Array(vec![
                    Reply::Bulk(k.clone()),
                    Reply::Array(out),
                ])));
            }
            Ok(_) => {}
            Err(_) if retry => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

fn zmpop(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (keys, max, count) = match commands::parse_mpop(a, 1, min_max) {
        Ok(p) => p,
        Err(e) => return e,
    };
    match zmpop_keys(ctx, &keys, max, count, false) {
        Ok(r) => r.unwrap_or(Reply::NullArray),
        Err(e) => e,
    }
}

fn bzmpop(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let deadline = match parse_timeout(ctx, &a[1]) {
        Ok(d) => d,
        Err(e) => return e,
    };
    let (keys, max, count) = match commands::parse_mpop(a, 2, min_max) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let retry = retrying(ctx);
    match zmpop_keys(ctx, &keys, max, count, retry) {
        Ok(Some(r)) => r,
        Ok(None) => {
            ctx.block = Some(BlockRequest {
                keys,
                deadline,
                timeout_reply: Reply::NullArray,
                argv: None,
            });
            Reply::NoReply
        }
        Err(e) => e,
    }
}

// ---------------------------------------------------------------- ZRANDMEMBER / ZSCAN

fn zrandmember(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    use rand::Rng;
    if a.len() > 4 {
        return error::syntax();
    }
    let count = match a.get(2) {
        None => None,
        Some(c) => match parse_i64(c) {
            None => return error::not_integer(),
            Some(i64::MIN) => {
                return Reply::err(
                    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
                )
            }
            Some(n) => Some(n),
        },
    };
    let withscores = match a.get(3) {
        None => false,
        Some(w) if w.eq_ignore_ascii_case(b"withscores") => true,
        Some(_) => return error::syntax(),
    };
    if withscores {
        if let Some(c) = count {
            if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&c) {
                return Reply::err("ERR value is out of range");
            }
        }
    }
    let resp3 = ctx.cl.resp3;
    let z = match get_zset(ctx, &a[1], true) {
        Ok(Some(z)) => z,
        Ok(None) => {
            return if count.is_some() {
                Reply::Array(vec![])
            } else {
                Reply::Null
            }
        }
        Err(e) => return e,
    };
    let mut rng = rand::thread_rng();
    let len = z.len();
    let Some(count) = count else {
        let i = rng.gen_range(0..len);
        return Reply::Bulk(z.nth_owned(i).unwrap().1);
    };
    // Redis would stream billions of repeats until memory runs out; refuse instead of
    // letting one request take the server down.
    if count < -(1 << 27) {
        return Reply::err("ERR value is out of range");
    }
    let picks: Vec<usize> = if count < 0 {
        (0..count.unsigned_abs())
            .map(|_| rng.gen_range(0..len))
            .collect()
    } else if count as usize >= len {
        // Redis returns the whole set in its own order when asked for at least as many.
        (0..len).collect()
    } else {
        rand::seq::index::sample(&mut rng, len, count as usize).into_vec()
    };
    // A pack is read once rather than scanned for each pick.
    let all = (!z.is_big()).then(|| z.range(0, len));
    let mut out = Vec::new();
    for i in picks {
        let (s, m) = match &all {
            Some(v) => (v[i].1, v[i].0.clone()),
            None => z.nth_owned(i).unwrap(),
        };
        push_pair(&mut out, m, s, withscores, resp3);
    }
    Reply::Array(out)
}

fn zscan(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let cursor = match std::str::from_utf8(&a[2])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        Some(c) => c,
        None => return Reply::err("ERR invalid cursor"),
    };
    let mut pattern: Option<Bytes> = None;
    let mut count = 10usize;
    let mut no_scores = false;
    let personality = ctx.eng.config.personality;
    let mut j = 3;
    while j < a.len() {
        let more = a.len() - j - 1;
        if a[j].eq_ignore_ascii_case(b"count") && more >= 1 {
            match parse_i64(&a[j + 1]) {
                None => return error::not_integer(),
                Some(c) if c < 1 => return error::syntax(),
                Some(c) => count = c as usize,
            }
            j += 2;
        } else if a[j].eq_ignore_ascii_case(b"match") && more >= 1 {
            pattern = Some(a[j + 1].clone());
            j += 2;
        } else {
            match crate::commands::keys::scan_flag(&personality, "zscan", &a[j]) {
                Ok(true) => {
                    no_scores = true;
                    j += 1;
                }
                Ok(false) => return error::syntax(),
                Err(e) => return e,
            }
        }
    }
    let hasher = ctx.eng.scan_hasher.clone();
    let fmt = ctx.eng.config.personality.doubles();
    let z = match get_zset(ctx, &a[1], true) {
        Ok(Some(z)) => z,
        Ok(None) => {
            return Reply::Array(vec![Reply::bulk_str("0"), Reply::Array(vec![])]);
        }
        Err(e) => return e,
    };
    // Small sets (listpack in Redis) come back whole, in order, with cursor 0.
    let (members, next): (Vec<Bytes>, u64) = match z.big() {
        None => (z.range(0, z.len()).into_iter().map(|(m, _)| m).collect(), 0),
        Some(b) => crate::storage::db::scan_by_hash(b.members(), &hasher, cursor, count),
    };
    let mut out = Vec::new();
    for m in members {
        if let Some(p) = &pattern {
            if !crate::glob::matches(p, &m, false) {
                continue;
            }
        }
        let s = z.score(&m).unwrap_or(0.0);
        out.push(Reply::Bulk(m));
        if !no_scores {
            out.push(Reply::Bulk(Bytes::from(fmt.d2string(s))));
        }
    }
    Reply::Array(vec![
        Reply::Bulk(Bytes::from(next.to_string())),
        Reply::Array(out),
    ])
}

// ---------------------------------------------------------------- union / inter / diff

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

fn aggregate(agg: Aggregate, acc: &mut f64, v: f64) {
    match agg {
        Aggregate::Sum => {
            *acc += v;
            if acc.is_nan() {
                *acc = 0.0;
            }
        }
        Aggregate::Min => {
            if v < *acc {
                *acc = v
            }
        }
        Aggregate::Max => {
            if v > *acc {
                *acc = v
            }
        }
    }
}

/// Parses and computes ZUNION/ZINTER/ZDIFF[STORE]: `numkeys_at` is where numkeys is.
/// Returns the result in sorted order and whether WITHSCORES was given.
fn setop(
    ctx: &mut Ctx,
    a: &[Bytes],
    numkeys_at: usize,
    op: SetOp,
    store: bool,
) -> Result<(Vec<(Bytes, f64)>, bool), Reply> {
    let Some(n) = parse_i64(&a[numkeys_at]) else {
        return Err(error::not_integer());
    };
    if n < 1 {
        let name = String::from_utf8_lossy(&a[0]).to_ascii_lowercase();
        return Err(Reply::err(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    if n as u64 > (a.len() - numkeys_at - 1) as u64 {
        return Err(error::syntax());
    }
    let n = n as usize;
    let keys = &a[numkeys_at + 1..numkeys_at + 1 + n];
    let mut sets: Vec<Option<Vec<(Bytes, f64)>>> = Vec::with_capacity(n);
    for k in keys {
        // lookupKeyRead in Redis 7.0, STORE variant or not (keyspace_hits/misses).
        let e = ctx.read(k);
        match e {
            None => sets.push(None),
            Some(e) => match &e.value {
                Value::ZSet(z) => sets.push(Some(z.range(0, z.len()))),
                // Plain sets take part with every score 1, as in Redis.
                Value::Set(st) => {
                    sets.push(Some(st.ordered().into_iter().map(|m| (m, 1.0)).collect()))
                }
                _ => return Err(error::wrongtype()),
            },
        }
    }
    let mut weights = vec![1.0; n];
    let mut agg = Aggregate::Sum;
    let mut withscores = false;
    let mut j = numkeys_at + 1 + n;
    while j < a.len() {
        let remaining = a.len() - j;
        if op != SetOp::Diff && remaining > n && a[j].eq_ignore_ascii_case(b"weights") {
            j += 1;
            for w in weights.iter_mut() {
                match parse_strtod(&a[j], true) {
                    Some(v) => *w = v,
                    None => return Err(Reply::err("ERR weight value is not a float")),
                }
                j += 1;
            }
        } else if op != SetOp::Diff && remaining >= 2 && a[j].eq_ignore_ascii_case(b"aggregate") {
            let v = &a[j + 1];
            agg = if v.eq_ignore_ascii_case(b"sum") {
                Aggregate::Sum
            } else if v.eq_ignore_ascii_case(b"min") {
                Aggregate::Min
            } else if v.eq_ignore_ascii_case(b"max") {
                Aggregate::Max
            } else {
                return Err(error::syntax());
            };
            j += 2;
        } else if !store && a[j].eq_ignore_ascii_case(b"withscores") {
            withscores = true;
            j += 1;
        } else {
            return Err(error::syntax());
        }
    }
    let weighted = |s: f64, w: f64| {
        let v = s * w;
        if v.is_nan() {
            0.0
        } else {
            v
        }
    };
    let mut result: Vec<(Bytes, f64)> = match op {
        SetOp::Union => {
            let mut acc: HashMap<Bytes, f64> = HashMap::new();
            for (i, s) in sets.iter().enumerate() {
                for (m, sc) in s.iter().flatten() {
                    let v = weighted(*sc, weights[i]);
                    match acc.get_mut(m) {
                        Some(t) => aggregate(agg, t, v),
                        None => {
                            acc.insert(m.clone(), v);
                        }
                    }
                }
            }
            acc.into_iter().collect()
        }
        SetOp::Inter => {
            if sets.iter().any(|s| s.is_none()) {
                vec![]
            } else {
                let maps: Vec<HashMap<&Bytes, f64>> = sets
                    .iter()
                    .map(|s| s.as_ref().unwrap().iter().map(|(m, s)| (m, *s)).collect())
                    .collect();
                // Walk the smallest set, as Redis does; the accumulation order across the
                // other sets follows the (cardinality-sorted) key order.
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by_key(|&i| maps[i].len());
                let first = order[0];
                let mut out = Vec::new();
                for (m, sc) in sets[first].as_ref().unwrap() {
                    let mut v = weighted(*sc, weights[first]);
                    let mut all = true;
                    for &i in &order[1..] {
                        match maps[i].get(m) {
                            Some(s2) => aggregate(agg, &mut v, weighted(*s2, weights[i])),
                            None => {
                                all = false;
                                break;
                            }
                        }
                    }
                    if all {
                        out.push((m.clone(), v));
                    }
                }
                out
            }
        }
        SetOp::Diff => match &sets[0] {
            None => vec![],
            Some(first) => {
                let others: Vec<HashMap<&Bytes, ()>> = sets[1..]
                    .iter()
                    .flatten()
                    .map(|s| s.iter().map(|(m, _)| (m, ())).collect())
                    .collect();
                first
                    .iter()
                    .filter(|(m, _)| !others.iter().any(|o| o.contains_key(m)))
                    .cloned()
                    .collect()
            }
        },
    };
    result.sort_by(|x, y| crate::storage::zset::cmp_entry(x.1, &x.0, y.1, &y.0));
    Ok((result, withscores))
}

fn setop_store(ctx: &mut Ctx, a: &[Bytes], op: SetOp, event: &str) -> Reply {
    match setop(ctx, a, 2, op, true) {
        Ok((items, _)) => store_result(ctx, &a[1], items, event),
        Err(e) => e,
    }
}

fn setop_reply(ctx: &mut Ctx, a: &[Bytes], op: SetOp) -> Reply {
    match setop(ctx, a, 1, op, false) {
        Ok((items, ws)) => pairs_reply(ctx, items, ws),
        Err(e) => e,
    }
}

fn zunionstore(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    setop_store(ctx, a, SetOp::Union, "zunionstore")
}
fn zinterstore(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    setop_store(ctx, a, SetOp::Inter, "zinterstore")
}
fn zdiffstore(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    setop_store(ctx, a, SetOp::Diff, "zdiffstore")
}
fn zunion(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    setop_reply(ctx, a, SetOp::Union)
}
fn zinter(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    setop_reply(ctx, a, SetOp::Inter)
}
fn zdiff(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    setop_reply(ctx, a, SetOp::Diff)
}

fn zintercard(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let n = match parse_i64(&a[1]) {
        Some(n) if n >= 1 => n as usize,
        Some(_) => {
            return Reply::err("ERR at least 1 input key is needed for 'zintercard' command")
        }
        None => return error::not_integer(),
    };
    if n > a.len() - 2 {
        return error::syntax();
    }
    // Redis looks the keys up (WRONGTYPE) before it parses LIMIT.
    let mut sets = Vec::with_capacity(n);
    for k in &a[2..2 + n] {
        match ctx.read(k).map(|e| &e.value) {
            Some(Value::ZSet(z)) => sets.push(Some(z.members())),
            Some(Value::Set(st)) => sets.push(Some(st.ordered())),
            Some(_) => return error::wrongtype(),
            None => sets.push(None),
        }
    }
    let mut limit = 0usize;
    let mut j = 2 + n;
    while j < a.len() {
        if a[j].eq_ignore_ascii_case(b"limit") && j + 1 < a.len() {
            match parse_i64(&a[j + 1]) {
                Some(l) if l >= 0 => limit = l as usize,
                _ => return Reply::err("ERR LIMIT can't be negative"),
            }
            j += 2;
        } else {
            return error::syntax();
        }
    }
    if sets.iter().any(|s| s.is_none()) {
        return Reply::Int(0);
    }
    let sets: Vec<Vec<Bytes>> = sets.into_iter().flatten().collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| sets[i].len());
    let others: Vec<std::collections::HashSet<&Bytes>> = order[1..]
        .iter()
        .map(|&i| sets[i].iter().collect())
        .collect();
    let mut c = 0usize;
    for m in &sets[order[0]] {
        if others.iter().all(|o| o.contains(m)) {
            c += 1;
            if limit > 0 && c >= limit {
                break;
            }
        }
    }
    Reply::Int(c as i64)
}
