//! The stream commands: XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XSETID and XINFO.
//! Consumer groups, XREAD and XREADGROUP are in `stream_groups.rs`; the stream value
//! itself is in `storage/stream.rs`.

use bytes::Bytes;

use crate::engine::spec::{flag::*, CommandSpec, Ctx, Exec, Keys, BASE, KEY1};
use crate::error;
use crate::num::parse_i64;
use crate::reply::Reply;
use crate::storage::notify;
use crate::storage::stream::{StreamId, StreamValue, Trim, INVALID_READ, MAX_ID};
use crate::storage::value::Value;

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    h: crate::engine::spec::Handler,
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

const fn xinfo_sub(name: &'static str, arity: i32, h: crate::engine::spec::Handler) -> CommandSpec {
    CommandSpec {
        name,
        parent: "xinfo",
        arity,
        flags: READONLY,
        keys: Keys::Range {
            first: 2,
            last: 2,
            step: 1,
        },
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
    cmd("xtrim", -4, WRITE, KEY1, xtrim),
    cmd("xsetid", -3, WRITE | DENYOOM | FAST, KEY1, xsetid),
    CommandSpec {
        name: "xinfo",
        arity: -2,
        group: "stream",
        since: "5.0.0",
        exec: Exec::Container,
        subcommands: XINFO_SUBS,
        ..BASE
    },
];

pub static XINFO_SUBS: &[CommandSpec] = &[
    xinfo_sub("stream", -3, xinfo_stream),
    xinfo_sub("groups", 3, xinfo_groups),
    xinfo_sub("consumers", 4, xinfo_consumers),
    CommandSpec {
        name: "help",
        parent: "xinfo",
        arity: 2,
        flags: LOADING | STALE,
        group: "stream",
        acl: &["stream"],
        since: "5.0.0",
        exec: Exec::Engine(xinfo_help),
        ..BASE
    },
];

pub const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

// ---------------------------------------------------------------- IDs

pub fn fmt_id(id: StreamId) -> Bytes {
    Bytes::from(format!("{}-{}", id.0, id.1))
}

pub fn id_reply(id: StreamId) -> Reply {
    Reply::Bulk(fmt_id(id))
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    let digits = s.strip_prefix(b"+").unwrap_or(s);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// `ms[-seq]`, a missing seq being `missing_seq`; `-` and `+` are rejected (Redis' strict
/// parse).
pub fn parse_strict_id(s: &[u8], missing_seq: u64) -> Option<StreamId> {
    if s.len() > 127 {
        return None;
    }
    match s.iter().position(|&c| c == b'-') {
        Some(i) => Some((parse_u64(&s[..i])?, parse_u64(&s[i + 1..])?)),
        None => Some((parse_u64(s)?, missing_seq)),
    }
}

/// As [`parse_strict_id`], but `-` is 0-0 and `+` the maximum ID.
pub fn parse_id(s: &[u8], missing_seq: u64) -> Option<StreamId> {
    match s {
        b"-" => Some((0, 0)),
        b"+" => Some(MAX_ID),
        _ => parse_strict_id(s, missing_seq),
    }
}

pub fn strict_id_or_err(s: &[u8]) -> Result<StreamId, Reply> {
    parse_strict_id(s, 0).ok_or_else(|| Reply::err(INVALID_ID))
}

/// A range bound: `-`, `+`, `ms[-seq]`, or exclusive `(ms[-seq]`, already stepped past
/// when exclusive. `start` selects the missing-seq default and the error text.
pub fn parse_bound(s: &[u8], start: bool) -> Result<StreamId, Reply> {
    let missing = if start { 0 } else { u64::MAX };
    if s.len() > 1 && s[0] == b'(' {
        let id = parse_strict_id(&s[1..], missing).ok_or_else(|| Reply::err(INVALID_ID))?;
        let stepped = if start { incr_id(id) } else { decr_id(id) };
        return stepped.ok_or_else(|| {
            Reply::err(if start {
                "ERR invalid start ID for the interval"
            } else {
                "ERR invalid end ID for the interval"
            })
        });
    }
    parse_id(s, missing).ok_or_else(|| Reply::err(INVALID_ID))
}

pub fn incr_id(id: StreamId) -> Option<StreamId> {
    match id {
        (ms, u64::MAX) => ms.checked_add(1).map(|m| (m, 0)),
        (ms, seq) => Some((ms, seq + 1)),
    }
}

pub(crate) fn decr_id(id: StreamId) -> Option<StreamId> {
    match id {
        (ms, 0) => ms.checked_sub(1).map(|m| (m, u64::MAX)),
        (ms, seq) => Some((ms, seq - 1)),
    }
}

/// The stream at `key` for reading: `Ok(None)` if absent, WRONGTYPE if another type.
pub fn get_stream<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Result<Option<&'a mut StreamValue>, Reply> {
    match ctx.read(key) {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::Stream(s) => Ok(Some(s)),
            _ => Err(error::wrongtype()),
        },
    }
}

/// The stream at `key` for writing (no hit/miss stats).
pub fn get_stream_w<'a>(
    ctx: &'a mut Ctx,
    key: &[u8],
) -> Result<Option<&'a mut StreamValue>, Reply> {
    match ctx.write(key) {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::Stream(s) => Ok(Some(s)),
            _ => Err(error::wrongtype()),
        },
    }
}

pub fn entry_reply(id: StreamId, fields: &[Bytes]) -> Reply {
    Reply::Array(vec![
        id_reply(id),
        Reply::Array(fields.iter().cloned().map(Reply::Bulk).collect()),
    ])
}

/// Subcommand arguments Redis does not accept.
pub fn sub_syntax(sub: &[u8], cmd: &str) -> Reply {
    Reply::err(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        String::from_utf8_lossy(sub),
        cmd
    ))
}

// ---------------------------------------------------------------- XADD / XTRIM

/// What XADD and XTRIM parsed: the trimming strategy and, for XADD, the ID.
struct AddTrimArgs {
    trim: Option<Trim>,
    approx: bool,
    /// 0: no limit.
    limit: usize,
    nomkstream: bool,
    /// The ID's argument index (XADD).
    id_idx: usize,
    /// An explicit ID, and whether its sequence was given (`ms-*` has none).
    id: Option<(StreamId, bool)>,
}

/// Redis' streamParseAddOrTrimArgsOrReply.
fn parse_add_trim(ctx: &Ctx, a: &[Bytes], xadd: bool) -> Result<AddTrimArgs, Reply> {
    let mut p = AddTrimArgs {
        trim: None,
        approx: false,
        limit: 0,
        nomkstream: false,
        id_idx: 0,
        id: None,
    };
    let mut limit_given = false;
    let mut i = 2;
    while i < a.len() {
        let more = a.len() - 1 - i;
        let o = &a[i];
        if xadd && o.as_ref() == b"*" {
            break;
        } else if (o.eq_ignore_ascii_case(b"maxlen") || o.eq_ignore_ascii_case(b"minid"))
            && more > 0
        {
            if p.trim.is_some() {
                return Err(Reply::err(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            let maxlen = o.eq_ignore_ascii_case(b"maxlen");
            p.approx = false;
            let next = &a[i + 1];
            if more >= 2 && next.as_ref() == b"~" {
                p.approx = true;
                i += 1;
            } else if more >= 2 && next.as_ref() == b"=" {
                i += 1;
            }
            let v = &a[i + 1];
            p.trim = Some(if maxlen {
                match parse_i64(v) {
                    Some(n) if n >= 0 => Trim::MaxLen(n as usize),
                    Some(_) => return Err(Reply::err("ERR The MAXLEN argument must be >= 0.")),
                    None => return Err(error::not_integer()),
                }
            } else {
                Trim::MinId(strict_id_or_err(v)?)
            });
            i += 1;
        } else if o.eq_ignore_ascii_case(b"limit") && more > 0 {
            match parse_i64(&a[i + 1]) {
                Some(n) if n >= 0 => p.limit = n as usize,
                Some(_) => return Err(Reply::err("ERR The LIMIT argument must be >= 0.")),
                None => return Err(error::not_integer()),
            }
            limit_given = true;
            i += 1;
        } else if xadd && o.eq_ignore_ascii_case(b"nomkstream") {
            p.nomkstream = true;
        } else if xadd {
            // Anything else is the ID (or a bad one).
            let id = if let Some(ms) = o.strip_suffix(b"-*") {
                (
                    parse_u64(ms).ok_or_else(|| Reply::err(INVALID_ID))?,
                    0,
                    false,
                )
            } else {
                let id = strict_id_or_err(o)?;
                (id.0, id.1, true)
            };
            p.id = Some(((id.0, id.1), id.2));
            break;
        } else {
            return Err(error::syntax());
        }
        i += 1;
    }
    p.id_idx = i;
    if p.limit > 0 && p.trim.is_none() {
        return Err(Reply::err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && p.trim.is_none() {
        return Err(Reply::err(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    if p.approx {
        if !limit_given {
            let n = ctx.eng.config.stream_node_max_entries.saturating_mul(100);
            p.limit = if n == 0 { 10_000 } else { n.min(1_000_000) };
        }
    } else if limit_given {
        return Err(Reply::err(
            "ERR syntax error, LIMIT cannot be used without the special ~ option",
        ));
    }
    Ok(p)
}

fn xadd(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let p = match parse_add_trim(ctx, a, true) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let field_pos = p.id_idx + 1;
    if a.len() < field_pos + 2 || !(a.len() - field_pos).is_multiple_of(2) {
        return error::wrong_arity("xadd");
    }
    if let Some(((0, 0), true)) = p.id {
        return Reply::err("ERR The ID specified in XADD must be greater than 0-0");
    }
    let key = &a[1];
    match get_stream_w(ctx, key) {
        Ok(Some(_)) => {}
        Ok(None) if p.nomkstream => return Reply::Null,
        Ok(None) => {
            let db = ctx.dbi();
            let t = ctx.now();
            ctx.note_new_key(key);
            ctx.eng.dbs[db].insert(key.clone(), Value::Stream(Box::default()), None, t);
        }
        Err(e) => return e,
    }
    let now = ctx.now().max(0) as u64;
    let (max_entries, max_bytes) = (
        ctx.eng.config.stream_node_max_entries,
        ctx.eng.config.stream_node_max_bytes,
    );
    let Ok(Some(s)) = get_stream_w(ctx, key) else {
        return error::wrongtype();
    };
    let last = s.last_id;
    if last == MAX_ID {
        return Reply::err(
            "ERR The stream has exhausted the last possible ID, unable to add more items",
        );
    }
    let too_small = || {
        Reply::err(
            "ERR The ID specified in XADD is equal or smaller than the target stream top item",
        )
    };
    let id = match p.id {
        None => {
            if now > last.0 {
                (now, 0)
            } else {
                incr_id(last).unwrap_or(MAX_ID)
            }
        }
        Some((ms_id, false)) => {
            if ms_id.0 == last.0 {
                if last.1 == u64::MAX {
                    return too_small();
                }
                (last.0, last.1 + 1)
            } else {
                ms_id
            }
        }
        Some((id, true)) => id,
    };
    if id <= last {
        return too_small();
    }
    s.append(id, a[field_pos..].to_vec(), max_entries, max_bytes);
    let trimmed = match &p.trim {
        Some(t) => s.trim(t, p.approx, p.limit) > 0,
        None => false,
    };
    ctx.modified(key, notify::STREAM, "xadd");
    if trimmed {
        ctx.notify(notify::STREAM, "xtrim", key);
    }
    id_reply(id)
}

fn xtrim(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_stream_w(ctx, &a[1]) {
        Ok(Some(_)) => {}
        Ok(None) => return Reply::Int(0),
        Err(e) => return e,
    }
    let p = match parse_add_trim(ctx, a, false) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let Ok(Some(s)) = get_stream_w(ctx, &a[1]) else {
        return Reply::Int(0);
    };
    let n = match &p.trim {
        Some(t) => s.trim(t, p.approx, p.limit),
        None => 0,
    };
    if n > 0 {
        ctx.modified(&a[1], notify::STREAM, "xtrim");
    }
    Reply::Int(n as i64)
}

fn xlen(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_stream(ctx, &a[1]) {
        Ok(s) => Reply::Int(s.map_or(0, |s| s.len() as i64)),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------- XRANGE / XREVRANGE

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

// ---------------------------------------------------------------- XDEL / XSETID

fn xdel(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let mut ids = Vec::new();
    for v in &a[2..] {
        match strict_id_or_err(v) {
            Ok(id) => ids.push(id),
            Err(e) => return e,
        }
    }
    let s = match get_stream_w(ctx, &a[1]) {
        Ok(Some(s)) => s,
        Ok(None) => return Reply::Int(0),
        Err(e) => return e,
    };
    let n = ids.into_iter().filter(|id| s.delete(*id)).count();
    if n > 0 {
        ctx.modified(&a[1], notify::STREAM, "xdel");
    }
    Reply::Int(n as i64)
}

/// `XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id]`
fn xsetid(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let id = match strict_id_or_err(&a[2]) {
        Ok(id) => id,
        Err(e) => return e,
    };
    let mut entries_added: i64 = -1;
    let mut max_xdel = (0, 0);
    let mut i = 3;
    while i < a.len() {
        let more = a.len() - 1 - i;
        if a[i].eq_ignore_ascii_case(b"entriesadded") && more > 0 {
            match parse_i64(&a[i + 1]) {
                Some(n) if n >= 0 => entries_added = n,
                Some(_) => return Reply::err("ERR entries_added must be positive"),
                None => return error::not_integer(),
            }
            i += 2;
        } else if a[i].eq_ignore_ascii_case(b"maxdeletedid") && more > 0 {
            match strict_id_or_err(&a[i + 1]) {
                Ok(m) if id < m => {
                    return Reply::err(
                        "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                    )
                }
                Ok(m) => max_xdel = m,
                Err(e) => return e,
            }
            i += 2;
        } else {
            return error::syntax();
        }
    }
    let s = match get_stream_w(ctx, &a[1]) {
        Ok(Some(s)) => s,
        Ok(None) => return Reply::err(error::NO_SUCH_KEY),
        Err(e) => return e,
    };
    if id < s.max_deleted {
        return Reply::err(
            "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id",
        );
    }
    if !s.is_empty() {
        if id < s.last_valid_id() {
            return Reply::err(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            );
        }
        if entries_added != -1 && s.len() as i64 > entries_added {
            return Reply::err(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            );
        }
    }
    s.last_id = id;
    if entries_added != -1 {
        s.entries_added = entries_added as u64;
    }
    if max_xdel != (0, 0) {
        s.max_deleted = max_xdel;
    }
    // Redis 7.0's XSETID does not touch WATCHed keys (no signalModifiedKey).
    ctx.eng.stats.dirty += 1;
    ctx.notify(notify::STREAM, "xsetid", &a[1]);
    Reply::ok()
}

// ---------------------------------------------------------------- XINFO

fn pairs(kv: Vec<(&'static str, Reply)>) -> Reply {
    Reply::Map(
        kv.into_iter()
            .map(|(k, v)| (Reply::bulk_str(k), v))
            .collect(),
    )
}

fn opt_int(v: Option<i64>) -> Reply {
    v.map_or(Reply::Null, Reply::Int)
}

/// `radix-tree-nodes`: the nodes of Redis' radix tree over the nodes' 16-byte big-endian
/// master IDs. A rax node is a branching point (one node), a run of single-child bytes (one
/// compressed node) or a key's end (one empty leaf).
fn rax_nodes(s: &StreamValue) -> i64 {
    fn count(keys: &[[u8; 16]], depth: usize) -> i64 {
        if depth == 16 {
            return 1;
        }
        let (first, last) = (&keys[0], &keys[keys.len() - 1]);
        let lcp = (depth..16).take_while(|&i| first[i] == last[i]).count() + depth;
        if lcp > depth {
            return 1 + count(keys, lcp);
        }
        let mut total = 1;
        let mut start = 0;
        for i in 1..=keys.len() {
            if i == keys.len() || keys[i][depth] != keys[start][depth] {
                total += count(&keys[start..i], depth + 1);
                start = i;
            }
        }
        total
    }
    let keys: Vec<[u8; 16]> = s
        .nodes
        .keys()
        .map(|(ms, seq)| {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&ms.to_be_bytes());
            k[8..].copy_from_slice(&seq.to_be_bytes());
            k
        })
        .collect();
    if keys.is_empty() {
        return 1;
    }
    count(&keys, 0)
}

fn xinfo_stream(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let active_fields = ctx
        .eng
        .config
        .personality
        .has(crate::personality::Since::redis(702));
    let mut full = false;
    let mut count: usize = 10;
    if a.len() > 3 {
        if !a[3].eq_ignore_ascii_case(b"full") {
            return sub_syntax(&a[1], "XINFO");
        }
        full = true;
        if a.len() == 6 && a[4].eq_ignore_ascii_case(b"count") {
            match parse_i64(&a[5]) {
                Some(n) => count = n.max(0) as usize,
                None => return error::not_integer(),
            }
        } else if a.len() > 4 {
            return sub_syntax(&a[1], "XINFO");
        }
    }
    let now = ctx.now();
    let s = match get_stream(ctx, &a[2]) {
        Ok(Some(s)) => s,
        Ok(None) => return Reply::err(error::NO_SUCH_KEY),
        Err(e) => return e,
    };
    let mut kv = vec![
        ("length", Reply::Int(s.len() as i64)),
        ("radix-tree-keys", Reply::Int(s.nodes.len() as i64)),
        ("radix-tree-nodes", Reply::Int(rax_nodes(s))),
        ("last-generated-id", id_reply(s.last_id)),
        ("max-deleted-entry-id", id_reply(s.max_deleted)),
        ("entries-added", Reply::Int(s.entries_added as i64)),
        ("recorded-first-entry-id", id_reply(s.first_id)),
    ];
    let limit = if count == 0 { usize::MAX } else { count };
    if !full {
        kv.push(("groups", Reply::Int(s.groups.len() as i64)));
        let first = s.entries.iter().next().map(|(k, v)| entry_reply(*k, v));
        let last = s
            .entries
            .iter()
            .next_back()
            .map(|(k, v)| entry_reply(*k, v));
        kv.push(("first-entry", first.unwrap_or(Reply::Null)));
        kv.push(("last-entry", last.unwrap_or(Reply::Null)));
        return pairs(kv);
    }
    kv.push((
        "entries",
        Reply::Array(
            s.entries
                .iter()
                .take(limit)
                .map(|(k, v)| entry_reply(*k, v))
                .collect(),
        ),
    ));
    let groups = s
        .groups
        .iter()
        .map(|(name, g)| {
            let pending = g
                .pel
                .iter()
                .take(limit)
                .map(|(id, n)| {
                    Reply::Array(vec![
                        id_reply(*id),
                        Reply::Bulk(n.consumer.clone()),
                        Reply::Int(n.delivery_time),
                        Reply::Int(n.delivery_count as i64),
                    ])
                })
                .collect();
            let consumers = g
                .consumers
                .iter()
                .map(|(cname, c)| {
                    let cp = c
                        .pel
                        .iter()
                        .take(limit)
                        .map(|id| {
                            let n = &g.pel[id];
                            Reply::Array(vec![
                                id_reply(*id),
                                Reply::Int(n.delivery_time),
                                Reply::Int(n.delivery_count as i64),
                            ])
                        })
                        .collect();
                    let mut v = vec![
                        ("name", Reply::Bulk(cname.clone())),
                        ("seen-time", Reply::Int(c.seen_time)),
                    ];
                    // Redis 7.2 (and every Valkey).
                    if active_fields {
                        v.push(("active-time", Reply::Int(c.active_time.unwrap_or(-1))));
                    }
                    v.push(("pel-count", Reply::Int(c.pel.len() as i64)));
                    v.push(("pending", Reply::Array(cp)));
                    pairs(v)
                })
                .collect();
            let _ = now;
            pairs(vec![
                ("name", Reply::Bulk(name.clone())),
                ("last-delivered-id", id_reply(g.last_id)),
                (
                    "entries-read",
                    opt_int((g.entries_read != INVALID_READ).then_some(g.entries_read)),
                ),
                ("lag", opt_int(s.lag(g))),
                ("pel-count", Reply::Int(g.pel.len() as i64)),
                ("pending", Reply::Array(pending)),
                ("consumers", Reply::Array(consumers)),
            ])
        })
        .collect();
    kv.push(("groups", Reply::Array(groups)));
    pairs(kv)
}

fn xinfo_groups(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let s = match get_stream(ctx, &a[2]) {
        Ok(Some(s)) => s,
        Ok(None) => return Reply::err(error::NO_SUCH_KEY),
        Err(e) => return e,
    };
    Reply::Array(
        s.groups
            .iter()
            .map(|(name, g)| {
                pairs(vec![
                    ("name", Reply::Bulk(name.clone())),
                    ("consumers", Reply::Int(g.consumers.len() as i64)),
                    ("pending", Reply::Int(g.pel.len() as i64)),
                    ("last-delivered-id", id_reply(g.last_id)),
                    (
                        "entries-read",
                        opt_int((g.entries_read != INVALID_READ).then_some(g.entries_read)),
                    ),
                    ("lag", opt_int(s.lag(g))),
                ])
            })
            .collect(),
    )
}

fn xinfo_consumers(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let active_fields = ctx
        .eng
        .config
        .personality
        .has(crate::personality::Since::redis(702));
    let now = ctx.now();
    let s = match get_stream(ctx, &a[2]) {
        Ok(Some(s)) => s,
        Ok(None) => return Reply::err(error::NO_SUCH_KEY),
        Err(e) => return e,
    };
    let Some(g) = s.groups.get(&a[3]) else {
        return Reply::err(format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            String::from_utf8_lossy(&a[3]),
            String::from_utf8_lossy(&a[2])
        ));
    };
    Reply::Array(
        g.consumers
            .iter()
            .map(|(name, c)| {
                let mut v = vec![
                    ("name", Reply::Bulk(name.clone())),
                    ("pending", Reply::Int(c.pel.len() as i64)),
                    ("idle", Reply::Int((now - c.seen_time).max(0))),
                ];
                // Redis 7.2 (and every Valkey): since the last read or claim, -1 if none.
                if active_fields {
                    v.push((
                        "inactive",
                        Reply::Int(c.active_time.map_or(-1, |t| (now - t).max(0))),
                    ));
                }
                pairs(v)
            })
            .collect(),
    )
}

fn xinfo_help(_: &mut Ctx, _: &[Bytes]) -> Reply {
    const HELP: &[&str] = &[
        "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(HELP.iter().map(|l| Reply::simple(l)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{ClientCtx, Engine};
    use crate::storage::clock::ManualClock;

    fn run(e: &mut Engine, cl: &mut ClientCtx, line: &str) -> Reply {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        e.run(cl, &args)
    }

    fn stream(e: &mut Engine, key: &str) -> StreamValue {
        match &e.dbs[0].get(key.as_bytes()).unwrap().value {
            Value::Stream(s) => (**s).clone(),
            _ => panic!("not a stream"),
        }
    }

    #[test]
    fn nodes_fill_by_entry_count_and_approximate_trim_drops_whole_nodes() {
        let mut e = Engine::with_clock(16, ManualClock::new(1_000));
        let mut cl = ClientCtx::default();
        e.config.stream_node_max_entries = 10;
        for i in 1..=95 {
            run(&mut e, &mut cl, &format!("XADD s {i}-0 f v"));
        }
        let s = stream(&mut e, "s");
        assert_eq!(s.nodes.len(), 10);
        assert_eq!(s.nodes.values().map(|n| n.live).sum::<usize>(), 95);
        // 95 entries, nodes of 10: keeping at least 42 leaves 45.
        assert_eq!(run(&mut e, &mut cl, "XTRIM s MAXLEN ~ 42"), Reply::Int(50));
        assert_eq!(stream(&mut e, "s").first_id, (51, 0));
        // Exact trimming marks entries inside the first node.
        assert_eq!(run(&mut e, &mut cl, "XTRIM s MAXLEN 42"), Reply::Int(3));
        let s = stream(&mut e, "s");
        assert_eq!((s.len(), s.nodes.len(), s.first_id), (42, 5, (54, 0)));
        // Trimming is not deletion: no tombstone is recorded.
        assert_eq!(s.max_deleted, (0, 0));
    }

    #[test]
    fn xdel_of_a_whole_node_removes_it_and_records_the_tombstone() {
        let mut e = Engine::with_clock(16, ManualClock::new(1_000));
        let mut cl = ClientCtx::default();
        e.config.stream_node_max_entries = 2;
        for i in 1..=4 {
            run(&mut e, &mut cl, &format!("XADD s {i}-0 f v"));
        }
        assert_eq!(run(&mut e, &mut cl, "XDEL s 1-0 2-0"), Reply::Int(2));
        let s = stream(&mut e, "s");
        assert_eq!(s.nodes.len(), 1);
        assert_eq!((s.max_deleted, s.first_id), ((2, 0), (3, 0)));
    }

    #[test]
    fn lag_is_exact_without_tombstones_and_unknown_across_one() {
        let mut e = Engine::with_clock(16, ManualClock::new(1_000));
        let mut cl = ClientCtx::default();
        for i in 1..=5 {
            run(&mut e, &mut cl, &format!("XADD s {i}-0 f v"));
        }
        run(&mut e, &mut cl, "XGROUP CREATE s g 0");
        let s = stream(&mut e, "s");
        assert_eq!(s.lag(&s.groups[&b"g"[..]]), Some(5));
        run(&mut e, &mut cl, "XDEL s 3-0");
        let s = stream(&mut e, "s");
        assert_eq!(s.lag(&s.groups[&b"g"[..]]), None);
        run(&mut e, &mut cl, "XREADGROUP GROUP g c STREAMS s >");
        let s = stream(&mut e, "s");
        let g = &s.groups[&b"g"[..]];
        assert_eq!((g.entries_read, s.lag(g)), (5, Some(0)));
    }
}
