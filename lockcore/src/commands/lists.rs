//! List commands, including the blocking pops. Redisson's fair lock keeps its waiter queue
//! in a list (`redisson_lock_queue:{name}`), so RPUSH/LINDEX/LPOP/LREM/LRANGE must match
//! Redis exactly.
//!
//! Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) try to serve at once; when
//! they cannot, they set `ctx.block` and the engine parks the client. When a key they wait
//! on is modified the engine re-runs the same handler; a re-run that still finds nothing to
//! pop (the key is missing, or holds another type) asks to block again, as Redis does.

use bytes::Bytes;

use crate::commands;
use crate::engine::spec::{flag::*, CommandSpec, Ctx, Exec, Keys, BASE, KEY1};
use crate::engine::BlockRequest;
use crate::error::{self, *};
use crate::num::parse_i64;
use crate::personality::Since;
use crate::reply::Reply;
use crate::storage::notify;
use crate::storage::value::Value;

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
        group: "list",
        acl,
        exec: Exec::Engine(h),
        ..BASE
    }
}

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
const W_FAST: &[&str] = &["write", "list", "fast"];
const W_SLOW: &[&str] = &["write", "list", "slow"];
const R_FAST: &[&str] = &["read", "list", "fast"];
const R_SLOW: &[&str] = &["read", "list", "slow"];
const W_BLOCK: &[&str] = &["write", "list", "slow", "blocking"];

pub static COMMANDS: &[CommandSpec] = &[
    cmd("lpush", -3, WRITE | DENYOOM | FAST, KEY1, W_FAST, lpush),
    cmd("rpush", -3, WRITE | DENYOOM | FAST, KEY1, W_FAST, rpush),
    cmd("lpushx", -3, WRITE | DENYOOM | FAST, KEY1, W_FAST, lpushx),
    cmd("rpushx", -3, WRITE | DENYOOM | FAST, KEY1, W_FAST, rpushx),
    cmd("lpop", -2, WRITE | FAST, KEY1, W_FAST, lpop),
    cmd("rpop", -2, WRITE | FAST, KEY1, W_FAST, rpop),
    cmd("llen", 2, READONLY | FAST, KEY1, R_FAST, llen),
    cmd("lindex", 3, READONLY, KEY1, R_SLOW, lindex),
    cmd("lrange", 4, READONLY, KEY1, R_SLOW, lrange),
    cmd("lset", 4, WRITE | DENYOOM, KEY1, W_SLOW, lset),
    cmd("linsert", 5, WRITE | DENYOOM, KEY1, W_SLOW, linsert),
    cmd("lrem", 4, WRITE, KEY1, W_SLOW, lrem),
    cmd("ltrim", 4, WRITE, KEY1, W_SLOW, ltrim),
    cmd("lpos", -3, READONLY, KEY1, R_SLOW, lpos),
    cmd("lmove", 5, WRITE | DENYOOM, KEYS_1_2, W_SLOW, lmove),
    cmd("rpoplpush", 3, WRITE | DENYOOM, KEYS_1_2, W_SLOW, rpoplpush),
    cmd(
        "lmpop",
        -4,
        WRITE,
        Keys::NumKeys {
            numkeys_at: 1,
            step: 1,
        },
        W_SLOW,
        lmpop,
    ),
    cmd(
        "blpop",
        -3,
        WRITE | NOSCRIPT | BLOCKING,
        KEYS_BUT_LAST,
        W_BLOCK,
        blpop,
    ),
    cmd(
        "brpop",
        -3,
        WRITE | NOSCRIPT | BLOCKING,
        KEYS_BUT_LAST,
        W_BLOCK,
        brpop,
    ),
    cmd(
        "blmove",
        6,
        WRITE | DENYOOM | NOSCRIPT | BLOCKING,
        KEYS_1_2,
        W_BLOCK,
        blmove,
    ),
    cmd(
        "brpoplpush",
        4,
        WRITE | DENYOOM | NOSCRIPT | BLOCKING,
        KEYS_1_2,
        W_BLOCK,
        brpoplpush,
    ),
    cmd(
        "blmpop",
        -5,
        WRITE | BLOCKING,
        Keys::NumKeys {
            numkeys_at: 2,
            step: 1,
        },
        W_BLOCK,
        blmpop,
    ),
];

type List = crate::storage::qlist::ListValue;

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Left,
    Right,
}

impl End {
    fn parse(a: &[u8]) -> Option<End> {
        if a.eq_ignore_ascii_case(b"left") {
            Some(End::Left)
        } else if a.eq_ignore_ascii_case(b"right") {
            Some(End::Right)
        } else {
            None
        }
    }
    fn pop_event(self) -> &'static str {
        match self {
            End::Left => "lpop",
            End::Right => "rpop",
        }
    }
    fn push_event(self) -> &'static str {
        match self {
            End::Left => "lpush",
            End::Right => "rpush",
        }
    }
}

fn pop_end(l: &mut List, end: End) -> Option<Bytes> {
    l.pop(end == End::Left)
}

fn push_end(l: &mut List, fill: i64, end: End, v: &[u8]) {
    l.push(fill, end == End::Left, &[v])
}

/// `list-max-listpack-size`.
fn fill(ctx: &Ctx) -> i64 {
    ctx.eng.config.list_max_listpack_size
}

/// The list at `key`: `Ok(None)` if absent, WRONGTYPE if another type. `read` selects a
/// read lookup (hit/miss stats) over a write lookup.
fn get_list<'a>(ctx: &'a mut Ctx, key: &[u8], read: bool) -> Result<Option<&'a mut List>, Reply> {
    let e = if read { ctx.read(key) } else { ctx.write(key) };
    match e {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::List(l) => Ok(Some(l)),
            _ => Err(error::wrongtype()),
        },
    }
}

/// The list at `key`, created empty if absent (the caller must leave it non-empty).
fn list_for_write<'a>(ctx: &'a mut Ctx, key: &Bytes) -> Result<&'a mut List, Reply> {
    let db = ctx.dbi();
    let now = ctx.now();
    if ctx.write(key).is_none() {
        ctx.note_new_key(key);
        ctx.eng.dbs[db].insert(key.clone(), Value::List(List::default()), None, now);
    }
    match &mut ctx.eng.dbs[db].get_mut(key).unwrap().value {
        Value::List(l) => Ok(l),
        _ => Err(error::wrongtype()),
    }
}

/// Deletes `key` with a "del" event if its list became empty.
fn delete_if_empty(ctx: &mut Ctx, key: &Bytes) {
    let db = ctx.dbi();
    let empty = matches!(ctx.eng.dbs[db].get(key), Some(e) if matches!(&e.value, Value::List(l) if l.is_empty()));
    if empty {
        ctx.eng.dbs[db].remove(key);
        ctx.notify(notify::GENERIC, "del", key);
    }
}

/// The epilogue of a pop-like write: the event, then "del" if the list emptied (else the
/// list may turn back into a listpack, as Redis' `LIST_CONV_SHRINKING`).
fn popped(ctx: &mut Ctx, key: &Bytes, event: &str) {
    let db = ctx.dbi();
    let fill = fill(ctx);
    if let Some(e) = ctx.eng.dbs[db].get_mut(key) {
        if let Value::List(l) = &mut e.value {
            l.try_shrink(fill, true);
        }
    }
    ctx.eng.touch_watched(db, key);
    ctx.eng.stats.dirty += 1;
    ctx.notify(notify::LIST, event, key);
    delete_if_empty(ctx, key);
    ctx.eng.signal_ready(db, key);
}

// ---------------------------------------------------------------- push

fn push_generic(ctx: &mut Ctx, a: &[Bytes], end: End, only_existing: bool) -> Reply {
    if only_existing {
        match get_list(ctx, &a[1], false) {
            Ok(None) => return Reply::Int(0),
            Ok(Some(_)) => {}
            Err(e) => return e,
        }
    }
    let fill = fill(ctx);
    let l = match list_for_write(ctx, &a[1]) {
        Ok(l) => l,
        Err(e) => return e,
    };
    let items: Vec<&[u8]> = a[2..].iter().map(|v| &v[..]).collect();
    l.push(fill, end == End::Left, &items);
    let n = l.len() as i64;
    ctx.modified(&a[1], notify::LIST, end.push_event());
    Reply::Int(n)
}

fn lpush(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    push_generic(ctx, a, End::Left, false)
}
fn rpush(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    push_generic(ctx, a, End::Right, false)
}
fn lpushx(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    push_generic(ctx, a, End::Left, true)
}
fn rpushx(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    push_generic(ctx, a, End::Right, true)
}

// ---------------------------------------------------------------- pop

fn pop_generic(ctx: &mut Ctx, a: &[Bytes], end: End) -> Reply {
    if a.len() > 3 {
        return error::wrong_arity(&String::from_utf8_lossy(&a[0]));
    }
    let count = match a.get(2) {
        None => None,
        Some(c) => match parse_i64(c) {
            Some(n) if n < 0 => return Reply::err(NOT_POSITIVE),
            None => return Reply::err(NOT_POSITIVE),
            Some(n) => Some(n as usize),
        },
    };
    let l = match get_list(ctx, &a[1], false) {
        Ok(Some(l)) => l,
        Ok(None) => {
            return if count.is_some() {
                Reply::NullArray
            } else {
                Reply::Null
            }
        }
        Err(e) => return e,
    };
    let reply = match count {
        None => Reply::opt_bulk(pop_end(l, end)),
        Some(0) => return Reply::Array(vec![]),
        Some(n) => {
            let n = n.min(l.len());
            Reply::bulks((0..n).filter_map(|_| pop_end(l, end)).collect::<Vec<_>>())
        }
    };
    popped(ctx, &a[1], end.pop_event());
    reply
}

fn lpop(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    pop_generic(ctx, a, End::Left)
}
fn rpop(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    pop_generic(ctx, a, End::Right)
}

// ---------------------------------------------------------------- reads

fn llen(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_list(ctx, &a[1], true) {
        Ok(l) => Reply::Int(l.map_or(0, |l| l.len() as i64)),
        Err(e) => e,
    }
}

/// A Redis list index (negative from the tail) resolved against `len`.
fn resolve_index(i: i64, len: usize) -> Option<usize> {
    let i = if i < 0 { i + len as i64 } else { i };
    (i >= 0 && (i as usize) < len).then_some(i as usize)
}

fn lindex(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let Some(i) = parse_i64(&a[2]) else {
        return error::not_integer();
    };
    match get_list(ctx, &a[1], true) {
        Ok(Some(l)) => Reply::opt_bulk(resolve_index(i, l.len()).and_then(|i| l.get(i))),
        Ok(None) => Reply::Null,
        Err(e) => e,
    }
}

/// LRANGE/LTRIM index normalisation: the inclusive range `start..=end`, or `None` if empty.
fn resolve_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { start + len } else { start };
    let mut end = if end < 0 { end + len } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, end as usize))
}

fn lrange(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (Some(s), Some(e)) = (parse_i64(&a[2]), parse_i64(&a[3])) else {
        return error::not_integer();
    };
    match get_list(ctx, &a[1], true) {
        Ok(Some(l)) => match resolve_range(s, e, l.len()) {
            Some((s, e)) => Reply::bulks(l.range(s, e)),
            None => Reply::Array(vec![]),
        },
        Ok(None) => Reply::Array(vec![]),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------- in-place writes

fn lset(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let Some(i) = parse_i64(&a[2]) else {
        return error::not_integer();
    };
    let fill = fill(ctx);
    let l = match get_list(ctx, &a[1], false) {
        Ok(Some(l)) => l,
        Ok(None) => return Reply::err(NO_SUCH_KEY),
        Err(e) => return e,
    };
    let Some(i) = resolve_index(i, l.len()) else {
        return Reply::err(INDEX_OUT_OF_RANGE);
    };
    l.set(fill, i, &a[3]);
    ctx.modified(&a[1], notify::LIST, "lset");
    Reply::ok()
}

fn linsert(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let after = if a[2].eq_ignore_ascii_case(b"after") {
        true
    } else if a[2].eq_ignore_ascii_case(b"before") {
        false
    } else {
        return error::syntax();
    };
    let fill = fill(ctx);
    let l = match get_list(ctx, &a[1], false) {
        Ok(Some(l)) => l,
        Ok(None) => return Reply::Int(0),
        Err(e) => return e,
    };
    let Some(pos) = l.iter().position(|v| *v == a[3]) else {
        return Reply::Int(-1);
    };
    l.insert(fill, if after { pos + 1 } else { pos }, &a[4]);
    let n = l.len() as i64;
    ctx.modified(&a[1], notify::LIST, "linsert");
    Reply::Int(n)
}

fn lrem(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let Some(count) = parse_i64(&a[2]) else {
        return error::not_integer();
    };
    let fill = fill(ctx);
    let l = match get_list(ctx, &a[1], false) {
        Ok(Some(l)) => l,
        Ok(None) => return Reply::Int(0),
        Err(e) => return e,
    };
    let limit = if count == 0 {
        usize::MAX
    } else {
        count.unsigned_abs() as usize
    };
    // Mark the victims first (scanning from the tail for a negative count), then drop
    // them in one pass: O(n) however many match.
    let n = l.len();
    let mut victim = vec![false; n];
    let mut removed = 0usize;
    let mut mark = |i: usize, v: &[u8]| {
        if removed < limit && v == &a[3][..] {
            victim[i] = true;
            removed += 1;
        }
    };
    if count >= 0 {
        l.iter().enumerate().for_each(|(i, v)| mark(i, v));
    } else {
        l.iter()
            .rev()
            .enumerate()
            .for_each(|(i, v)| mark(n - 1 - i, v));
    }
    if removed > 0 {
        l.retain(fill, |i, _| !victim[i]);
    }
    if removed > 0 {
        popped(ctx, &a[1], "lrem");
    }
    Reply::Int(removed as i64)
}

fn ltrim(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (Some(s), Some(e)) = (parse_i64(&a[2]), parse_i64(&a[3])) else {
        return error::not_integer();
    };
    let fill = fill(ctx);
    let l = match get_list(ctx, &a[1], false) {
        Ok(Some(l)) => l,
        Ok(None) => return Reply::ok(),
        Err(e) => return e,
    };
    match resolve_range(s, e, l.len()) {
        Some((s, e)) => l.trim(fill, s, e),
        None => l.clear(),
    }
    popped(ctx, &a[1], "ltrim");
    Reply::ok()
}

fn lpos(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (mut rank, mut count, mut maxlen) = (1i64, None::<i64>, 0i64);
    let mut j = 3;
    while j < a.len() {
        let more = j + 1 < a.len();
        let opt = &a[j];
        if opt.eq_ignore_ascii_case(b"rank") && more {
            j += 1;
            match parse_i64(&a[j]) {
                None => return error::not_integer(),
                // Redis 7.2 refuses LONG_MIN; 7.0 negated it, which left it negative (it
                // then matched at once).
                Some(i64::MIN) if ctx.eng.config.personality.has(Since::redis(702)) => {
                    return Reply::err(
                        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
                    )
                }
                Some(i64::MIN) => rank = -1,
                Some(0) => return Reply::err(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ),
                Some(r) => rank = r,
            }
        } else if opt.eq_ignore_ascii_case(b"count") && more {
            j += 1;
            match parse_i64(&a[j]) {
                None => return error::not_integer(),
                Some(c) if c < 0 => return Reply::err("ERR COUNT can't be negative"),
                Some(c) => count = Some(c),
            }
        } else if opt.eq_ignore_ascii_case(b"maxlen") && more {
            j += 1;
            match parse_i64(&a[j]) {
                None => return error::not_integer(),
                Some(m) if m < 0 => return Reply::err("ERR MAXLEN can't be negative"),
                Some(m) => maxlen = m,
            }
        } else {
            return error::syntax();
        }
        j += 1;
    }
    let l = match get_list(ctx, &a[1], true) {
        Ok(Some(l)) => l,
        Ok(None) => {
            return if count.is_some() {
                Reply::Array(vec![])
            } else {
                Reply::Null
            }
        }
        Err(e) => return e,
    };
    let len = l.len();
    let want = match count {
        None => 1,
        Some(0) => usize::MAX,
        Some(c) => c as usize,
    };
    let mut skip = rank.unsigned_abs() - 1;
    let mut found = Vec::new();
    let scan = if maxlen == 0 {
        len
    } else {
        (maxlen as usize).min(len)
    };
    let items: Box<dyn Iterator<Item = &[u8]>> = if rank > 0 {
        Box::new(l.iter())
    } else {
        Box::new(l.iter().rev())
    };
    for (step, v) in items.take(scan).enumerate() {
        let i = if rank > 0 { step } else { len - 1 - step };
        if v == &a[2][..] {
            if skip > 0 {
                skip -= 1;
            } else {
                found.push(Reply::Int(i as i64));
                if found.len() >= want {
                    break;
                }
            }
        }
    }
    match count {
        Some(_) => Reply::Array(found),
        None => found.pop().unwrap_or(Reply::Null),
    }
}

// ---------------------------------------------------------------- move

/// Moves one element from `src` to `dst`. `Ok(None)` when `src` is missing or empty.
fn move_one(
    ctx: &mut Ctx,
    src: &Bytes,
    dst: &Bytes,
    from: End,
    to: End,
    retrying: bool,
) -> Result<Option<Bytes>, Reply> {
    match get_list(ctx, src, false) {
        Ok(Some(l)) if !l.is_empty() => {}
        Ok(_) => return Ok(None),
        Err(_) if retrying => return Ok(None),
        Err(e) => return Err(e),
    }
    get_list(ctx, dst, false)?;
    let fill = fill(ctx);
    let v = pop_end(get_list(ctx, src, false)?.unwrap(), from).unwrap();
    push_end(list_for_write(ctx, dst)?, fill, to, &v);
    ctx.modified(dst, notify::LIST, to.push_event());
    popped(ctx, src, from.pop_event());
    Ok(Some(v))
}

fn lmove(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (Some(from), Some(to)) = (End::parse(&a[3]), End::parse(&a[4])) else {
        return error::syntax();
    };
    match move_one(ctx, &a[1], &a[2], from, to, false) {
        Ok(v) => Reply::opt_bulk(v),
        Err(e) => e,
    }
}

fn rpoplpush(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match move_one(ctx, &a[1], &a[2], End::Right, End::Left, false) {
        Ok(v) => Reply::opt_bulk(v),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------- multi-key pops

/// Pops up to `count` from the first non-empty list among `keys`: `[key, [elements]]`.
fn mpop(
    ctx: &mut Ctx,
    keys: &[Bytes],
    end: End,
    count: usize,
    retrying: bool,
) -> Result<Option<Reply>, Reply> {
    for k in keys {
        match get_list(ctx, k, false) {
            Ok(Some(l)) if !l.is_empty() => {
                let n = count.min(l.len());
                let items: Vec<Bytes> = (0..n).filter_map(|_| pop_end(l, end)).collect();
                popped(ctx, k, end.pop_event());
                return Ok(Some(Reply::Array(vec![
                    Reply::Bulk(k.clone()),
                    Reply::bulks(items),
                ])));
            }
            Ok(_) => {}
            Err(_) if retrying => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

fn lmpop(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (keys, end, count) = match commands::parse_mpop(a, 1, End::parse) {
        Ok(p) => p,
        Err(e) => return e,
    };
    match mpop(ctx, &keys, end, count, false) {
        Ok(r) => r.unwrap_or(Reply::NullArray),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------- blocking

/// Parses a blocking command's timeout (float seconds) into an absolute deadline on the
/// engine clock; `None` waits forever. As Redis 7.0 does: milliseconds are rounded up
/// (0.0001 waits 1 ms, not forever), values too large for a long long come out negative
/// ("timeout is negative"), and a deadline that overflows never fires.
pub fn parse_timeout(ctx: &Ctx, arg: &[u8]) -> Result<Option<i64>, Reply> {
    let Some(secs) = crate::num::parse_strtod(arg, true) else {
        return Err(Reply::err(TIMEOUT_NOT_FLOAT));
    };
    let ms = (secs * 1000.0).ceil();
    // `ms < 2^63` is false for +inf too; C's conversion then yields LLONG_MIN.
    if !(0.0..9_223_372_036_854_775_808.0).contains(&ms) {
        return Err(Reply::err(TIMEOUT_NEGATIVE));
    }
    let ms = ms as i64;
    if ms == 0 {
        return Ok(None);
    }
    Ok(ctx.now().checked_add(ms))
}

/// True while the engine re-runs a parked client's command because a key became ready.
pub fn retrying(ctx: &Ctx) -> bool {
    ctx.eng.is_blocked(ctx.cl.id)
}

fn block_on(ctx: &mut Ctx, keys: Vec<Bytes>, deadline: Option<i64>, timeout_reply: Reply) -> Reply {
    ctx.block = Some(BlockRequest {
        keys,
        deadline,
        timeout_reply,
        argv: None,
    });
    Reply::NoReply
}

fn bpop_generic(ctx: &mut Ctx, a: &[Bytes], end: End) -> Reply {
    let deadline = match parse_timeout(ctx, &a[a.len() - 1]) {
        Ok(d) => d,
        Err(e) => return e,
    };
    let keys = &a[1..a.len() - 1];
    let retry = retrying(ctx);
    for k in keys {
        match get_list(ctx, k, false) {
            Ok(Some(l)) if !l.is_empty() => {
                let v = pop_end(l, end).unwrap();
                popped(ctx, k, end.pop_event());
                return Reply::Array(vec![Reply::Bulk(k.clone()), Reply::Bulk(v)]);
            }
            Ok(_) => {}
            Err(_) if retry => {}
            Err(e) => return e,
        }
    }
    block_on(ctx, keys.to_vec(), deadline, Reply::NullArray)
}

fn blpop(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    bpop_generic(ctx, a, End::Left)
}
fn brpop(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    bpop_generic(ctx, a, End::Right)
}

fn bmove_generic(ctx: &mut Ctx, a: &[Bytes], from: End, to: End, timeout_at: usize) -> Reply {
    let deadline = match parse_timeout(ctx, &a[timeout_at]) {
        Ok(d) => d,
        Err(e) => return e,
    };
    let retry = retrying(ctx);
    match move_one(ctx, &a[1], &a[2], from, to, retry) {
        Ok(Some(v)) => Reply::Bulk(v),
        // Inside MULTI/scripts Redis answers a null bulk at once, though a real timeout
        // answers a null array.
        Ok(None) if ctx.cl.deny_blocking => Reply::Null,
        Ok(None) => block_on(ctx, vec![a[1].clone()], deadline, Reply::NullArray),
        Err(e) => e,
    }
}

fn blmove(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (Some(from), Some(to)) = (End::parse(&a[3]), End::parse(&a[4])) else {
        return error::syntax();
    };
    bmove_generic(ctx, a, from, to, 5)
}

fn brpoplpush(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    bmove_generic(ctx, a, End::Right, End::Left, 3)
}

fn blmpop(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let deadline = match parse_timeout(ctx, &a[1]) {
        Ok(d) => d,
        Err(e) => return e,
    };
    let (keys, end, count) = match commands::parse_mpop(a, 2, End::parse) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let retry = retrying(ctx);
    match mpop(ctx, &keys, end, count, retry) {
        Ok(Some(r)) => r,
        Ok(None) => block_on(ctx, keys, deadline, Reply::NullArray),
        Err(e) => e,
    }
}
