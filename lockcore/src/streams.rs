//! A minimal stream type: XADD (with NOMKSTREAM and MAXLEN/MINID trimming), XLEN, XRANGE,
//! XREVRANGE and XDEL, with Redis' ID rules and error texts. Consumer groups and XREAD
//! are not implemented (see docs: not supported).

use bytes::Bytes;
use std::collections::BTreeMap;

use crate::commands::{flag::*, CommandSpec, Ctx, Exec, Keys, BASE, KEY1};
use crate::error;
use crate::notify;
use crate::num::parse_i64;
use crate::reply::Reply;
use crate::value::Value;

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
        group: "stream",
        acl: &["stream"],
        since: "5.0.0",
        exec: Exec::Engine(h),
        ..BASE
    }
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd("xadd", -5, WRITE | DENYOOM | FAST, KEY1, xadd),
    cmd("xlen", 2, READONLY | FAST, KEY1, xlen),
    cmd("xrange", -4, READONLY, KEY1, xrange),
    cmd("xrevrange", -4, READONLY, KEY1, xrevrange),
    cmd("xdel", -3, WRITE | FAST, KEY1, xdel),
];

/// A stream entry ID: milliseconds and sequence.
pub type StreamId = (u64, u64);

/// Entries in ID order, and the last ID ever added (XADD never goes below it).
#[derive(Debug, Clone, Default)]
pub struct StreamValue {
    pub entries: BTreeMap<StreamId, Vec<Bytes>>,
    pub last_id: StreamId,
}

const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";
/// Redis' default stream-node-max-entries: "~" trimming only drops whole nodes of this size.
const NODE_ENTRIES: usize = 100;

fn fmt_id(id: StreamId) -> Bytes {
    Bytes::from(format!("{}-{}", id.0, id.1))
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// `ms[-seq]`; a missing seq is `missing_seq`.
fn parse_id(s: &[u8], missing_seq: u64) -> Option<StreamId> {
    match s.iter().position(|&c| c == b'-') {
        Some(i) => Some((parse_u64(&s[..i])?, parse_u64(&s[i + 1..])?)),
        None => Some((parse_u64(s)?, missing_seq)),
    }
}

fn get_stream<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Result<Option<&'a mut StreamValue>, Reply> {
    match ctx.read(key) {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::Stream(s) => Ok(Some(s)),
            _ => Err(error::wrongtype()),
        },
    }
}

/// What XADD was asked for an ID.
enum IdSpec {
    Auto,
    /// `ms-*`
    AutoSeq(u64),
    Explicit(StreamId),
}

enum Trim {
    MaxLen(usize),
    MinId(StreamId),
}

fn xadd(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let mut i = 2;
    let mut nomkstream = false;
    let mut trim: Option<(Trim, bool)> = None;
    let mut limit_given = false;
    while i < a.len() {
        let o = &a[i];
        let more = a.len() - i - 1;
        if o.as_ref() == b"*" || parse_id(o, 0).is_some() || o.ends_with(b"-*") {
            break;
        } else if o.eq_ignore_ascii_case(b"nomkstream") {
            nomkstream = true;
        } else if (o.eq_ignore_ascii_case(b"maxlen") || o.eq_ignore_ascii_case(b"minid"))
            && more >= 1
        {
            let maxlen = o.eq_ignore_ascii_case(b"maxlen");
            let mut approx = false;
            let mut v = &a[i + 1];
            if (v.as_ref() == b"~" || v.as_ref() == b"=") && more >= 2 {
                approx = v.as_ref() == b"~";
                i += 1;
                v = &a[i + 1];
            }
            let t = if maxlen {
                match parse_i64(v) {
                    Some(n) if n >= 0 => Trim::MaxLen(n as usize),
                    Some(_) => return Reply::err("ERR The MAXLEN argument must be >= 0."),
                    None => return error::not_integer(),
                }
            } else {
                match parse_id(v, 0) {
                    Some(id) => Trim::MinId(id),
                    None => return Reply::err(INVALID_ID),
                }
            };
            trim = Some((t, approx));
            i += 1;
        } else if o.eq_ignore_ascii_case(b"limit") && more >= 1 {
            match parse_i64(&a[i + 1]) {
                Some(n) if n >= 0 => {}
                Some(_) => return Reply::err("ERR The LIMIT argument must be >= 0."),
                None => return error::not_integer(),
            }
            limit_given = true;
            i += 1;
        } else {
            break;
        }
        i += 1;
    }
    if limit_given {
        match &trim {
            None => {
                return Reply::err(
                    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
                )
            }
            Some((_, false)) => {
                return Reply::err(
                    "ERR syntax error, LIMIT cannot be used without the special ~ option",
                )
            }
            _ => {}
        }
    }
    if i >= a.len() {
        return error::syntax();
    }
    let idarg = &a[i];
    let spec = if idarg.as_ref() == b"*" {
        IdSpec::Auto
    } else if let Some(ms) = idarg.strip_suffix(b"-*") {
        match parse_u64(ms) {
            Some(ms) => IdSpec::AutoSeq(ms),
            None => return Reply::err(INVALID_ID),
        }
    } else {
        match parse_id(idarg, 0) {
            Some(id) => IdSpec::Explicit(id),
            None => return Reply::err(INVALID_ID),
        }
    };
    let fields = &a[i + 1..];
    if fields.is_empty() || !fields.len().is_multiple_of(2) {
        return error::wrong_arity("xadd");
    }
    if let IdSpec::Explicit((0, 0)) = spec {
        return Reply::err("ERR The ID specified in XADD must be greater than 0-0");
    }
    let now = ctx.now().max(0) as u64;
    let key = &a[1];
    let db = ctx.dbi();
    let exists = match get_stream(ctx, key) {
        Ok(s) => s.is_some(),
        Err(e) => return e,
    };
    if !exists {
        if nomkstream {
            return Reply::Null;
        }
        let t = ctx.now();
        ctx.eng.dbs[db].insert(key.clone(), Value::Stream(Box::default()), None, t);
    }
    let Some(Value::Stream(s)) = ctx.eng.dbs[db].get_mut(key).map(|e| &mut e.value) else {
        return error::wrongtype();
    };
    let last = s.last_id;
    let too_small = || {
        Reply::err(
            "ERR The ID specified in XADD is equal or smaller than the target stream top item",
        )
    };
    let id = match spec {
        IdSpec::Auto => {
            if now > last.0 {
                (now, 0)
            } else if last.1 < u64::MAX {
                (last.0, last.1 + 1)
            } else {
                (last.0 + 1, 0)
            }
        }
        IdSpec::AutoSeq(ms) => {
            if ms > last.0 {
                (ms, 0)
            } else if ms == last.0 && last.1 < u64::MAX {
                (ms, last.1 + 1)
            } else {
                return too_small();
            }
        }
        IdSpec::Explicit(id) => {
            if id <= last {
                return too_small();
            }
            id
        }
    };
    s.entries.insert(id, fields.to_vec());
    s.last_id = id;
    let mut trimmed = false;
    if let Some((t, approx)) = trim {
        let before = s.entries.len();
        match t {
            Trim::MaxLen(max) => {
                let mut excess = s.entries.len().saturating_sub(max);
                if approx {
                    excess -= excess % NODE_ENTRIES;
                }
                for _ in 0..excess {
                    s.entries.pop_first();
                }
            }
            Trim::MinId(min) => {
                let below: Vec<StreamId> = s.entries.range(..min).map(|(k, _)| *k).collect();
                let n = if approx {
                    below.len() - below.len() % NODE_ENTRIES
                } else {
                    below.len()
                };
                for k in &below[..n] {
                    s.entries.remove(k);
                }
            }
        }
        trimmed = s.entries.len() != before;
    }
    ctx.modified(key, notify::STREAM, "xadd");
    if trimmed {
        ctx.notify(notify::STREAM, "xtrim", key);
    }
    Reply::Bulk(fmt_id(id))
}

fn xlen(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_stream(ctx, &a[1]) {
        Ok(s) => Reply::Int(s.map_or(0, |s| s.entries.len() as i64)),
        Err(e) => e,
    }
}

/// A range bound: `-`, `+`, `ms[-seq]`, or exclusive `(ms[-seq]`.
fn parse_bound(s: &[u8], start: bool) -> Result<Option<StreamId>, Reply> {
    let missing = if start { 0 } else { u64::MAX };
    match s {
        b"-" => return Ok(Some((0, 0))),
        b"+" => return Ok(Some((u64::MAX, u64::MAX))),
        _ => {}
    }
    if let Some(rest) = s.strip_prefix(b"(") {
        let id = parse_id(rest, missing).ok_or_else(|| Reply::err(INVALID_ID))?;
        // Exclusive: step past the bound; an impossible step means an empty range.
        let stepped = if start {
            match id {
                (ms, u64::MAX) => ms.checked_add(1).map(|m| (m, 0)),
                (ms, seq) => Some((ms, seq + 1)),
            }
        } else {
            match id {
                (ms, 0) => ms.checked_sub(1).map(|m| (m, u64::MAX)),
                (ms, seq) => Some((ms, seq - 1)),
            }
        };
        return match stepped {
            Some(id) => Ok(Some(id)),
            None if start => Err(Reply::err("ERR invalid start ID for the interval")),
            None => Err(Reply::err("ERR invalid end ID for the interval")),
        };
    }
    parse_id(s, missing)
        .map(Some)
        .ok_or_else(|| Reply::err(INVALID_ID))
}

fn entry_reply(id: StreamId, fields: &[Bytes]) -> Reply {
    Reply::Array(vec![
        Reply::Bulk(fmt_id(id)),
        Reply::Array(fields.iter().cloned().map(Reply::Bulk).collect()),
    ])
}

fn range_generic(ctx: &mut Ctx, a: &[Bytes], rev: bool) -> Reply {
    let (start_arg, end_arg) = if rev { (&a[3], &a[2]) } else { (&a[2], &a[3]) };
    let start = match parse_bound(start_arg, true) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let end = match parse_bound(end_arg, false) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let mut count: Option<usize> = None;
    let mut i = 4;
    while i < a.len() {
        if a[i].eq_ignore_ascii_case(b"count") && i + 1 < a.len() {
            match parse_i64(&a[i + 1]) {
                Some(n) => count = Some(n.max(0) as usize),
                None => return error::not_integer(),
            }
            i += 2;
        } else {
            return error::syntax();
        }
    }
    let s = match get_stream(ctx, &a[1]) {
        Ok(Some(s)) => s,
        Ok(None) => return Reply::Array(vec![]),
        Err(e) => return e,
    };
    if count == Some(0) {
        return Reply::NullArray;
    }
    let (Some(start), Some(end)) = (start, end) else {
        return Reply::Array(vec![]);
    };
    if start > end {
        return Reply::Array(vec![]);
    }
    let limit = count.unwrap_or(usize::MAX);
    let it = s.entries.range(start..=end);
    let out: Vec<Reply> = if rev {
        it.rev()
            .take(limit)
            .map(|(k, v)| entry_reply(*k, v))
            .collect()
    } else {
        it.take(limit).map(|(k, v)| entry_reply(*k, v)).collect()
    };
    Reply::Array(out)
}

fn xrange(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    range_generic(ctx, a, false)
}

fn xrevrange(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    range_generic(ctx, a, true)
}

fn xdel(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let mut ids = Vec::new();
    for v in &a[2..] {
        match parse_id(v, 0) {
            Some(id) => ids.push(id),
            None => return Reply::err(INVALID_ID),
        }
    }
    let s = match get_stream(ctx, &a[1]) {
        Ok(Some(s)) => s,
        Ok(None) => return Reply::Int(0),
        Err(e) => return e,
    };
    let n = ids
        .iter()
        .filter(|id| s.entries.remove(id).is_some())
        .count();
    if n > 0 {
        ctx.modified(&a[1], notify::STREAM, "xdel");
    }
    Reply::Int(n as i64)
}
