//! Stream reads and consumer groups: XREAD and XREADGROUP (with BLOCK), XGROUP, XACK,
//! XPENDING, XCLAIM and XAUTOCLAIM. The stream type itself is in `streams.rs`.
//!
//! A blocked XREAD/XREADGROUP parks on its stream keys like BLPOP (see `lists.rs`): every
//! write to a key re-runs the command as its client, in arrival order, and a re-run that
//! finds nothing new blocks again. XREAD's `$` is resolved to the stream's last ID when
//! the client blocks (the re-run gets those arguments), so entries added later are served
//! even if the stream was deleted and re-created meanwhile, as in Redis. A re-run of
//! XREADGROUP whose key was deleted or replaced, or whose group was destroyed, answers
//! Redis' `UNBLOCKED` or `NOGROUP` error.

use bytes::Bytes;
use std::ops::Bound;

use crate::commands::lists::retrying;
use crate::commands::streams::{
    entry_reply, fmt_id, get_stream, get_stream_w, id_reply, parse_bound, parse_id,
    strict_id_or_err, sub_syntax, INVALID_ID,
};
use crate::engine::spec::{flag::*, CommandSpec, Ctx, Exec, Keys, BASE};
use crate::engine::BlockRequest;
use crate::error;
use crate::num::parse_i64;
use crate::reply::Reply;
use crate::storage::notify;
use crate::storage::stream::{Consumer, Group, Nack, StreamId, StreamValue, INVALID_READ, MAX_ID};
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

const KEY1: Keys = crate::engine::spec::KEY1;
const KEY2: Keys = Keys::Range {
    first: 2,
    last: 2,
    step: 1,
};

const fn xgroup_sub(
    name: &'static str,
    arity: i32,
    flags: u32,
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        parent: "xgroup",
        arity,
        flags,
        keys: KEY2,
        group: "stream",
        acl: &["stream"],
        since: "5.0.0",
        exec: Exec::Engine(h),
        ..BASE
    }
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd("xread", -4, READONLY | BLOCKING, Keys::Movable, xread),
    cmd(
        "xreadgroup",
        -7,
        WRITE | BLOCKING,
        Keys::Movable,
        xreadgroup,
    ),
    cmd("xack", -4, WRITE | FAST, KEY1, xack),
    cmd("xpending", -3, READONLY, KEY1, xpending),
    cmd("xclaim", -6, WRITE | FAST, KEY1, xclaim),
    CommandSpec {
        since: "6.2.0",
        ..cmd("xautoclaim", -6, WRITE | FAST, KEY1, xautoclaim)
    },
    CommandSpec {
        name: "xgroup",
        arity: -2,
        group: "stream",
        since: "5.0.0",
        exec: Exec::Container,
        subcommands: XGROUP_SUBS,
        ..BASE
    },
];

pub static XGROUP_SUBS: &[CommandSpec] = &[
    xgroup_sub("create", -5, WRITE | DENYOOM, xgroup_create),
    xgroup_sub("setid", -5, WRITE, xgroup_setid),
    xgroup_sub("destroy", 4, WRITE, xgroup_destroy),
    CommandSpec {
        since: "6.2.0",
        ..xgroup_sub("createconsumer", 5, WRITE | DENYOOM, xgroup_createconsumer)
    },
    xgroup_sub("delconsumer", 5, WRITE, xgroup_delconsumer),
    CommandSpec {
        name: "help",
        parent: "xgroup",
        arity: 2,
        flags: LOADING | STALE,
        group: "stream",
        acl: &["stream"],
        since: "5.0.0",
        exec: Exec::Engine(xgroup_help),
        ..BASE
    },
];

/// `>` in XREADGROUP: Redis marks it with the maximum ID.
const NEW_ONLY: StreamId = MAX_ID;

fn nogroup(key: &[u8], group: &[u8]) -> Reply {
    Reply::err(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    ))
}

/// The consumer `name` of `g`, created (with its keyspace event) if missing; its seen
/// time is refreshed, as Redis' lookup does.
fn consumer_for<'a>(
    g: &'a mut Group,
    name: &Bytes,
    now: i64,
    created: &mut bool,
) -> &'a mut Consumer {
    let c = g.consumers.entry(name.clone()).or_insert_with(|| {
        *created = true;
        Consumer::default()
    });
    c.seen_time = now;
    c
}

// ---------------------------------------------------------------- XREAD / XREADGROUP

fn xread(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    xread_generic(ctx, a, false)
}

fn xreadgroup(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    xread_generic(ctx, a, true)
}

/// `XREAD [COUNT n] [BLOCK ms] STREAMS key... id...` and
/// `XREADGROUP GROUP g c [COUNT n] [BLOCK ms] [NOACK] STREAMS key... id...`
/// XREAD's `+` ID, the last entry (Redis 7.4, Valkey 8.0).
const XREAD_LAST: crate::personality::Since = crate::personality::Since::both(704, 800);

fn xread_generic(ctx: &mut Ctx, a: &[Bytes], grouped: bool) -> Reply {
    let name = if grouped { "xreadgroup" } else { "xread" };
    let retry = retrying(ctx);
    let mut block: Option<i64> = None;
    let mut count = 0usize;
    let mut streams_at = 0;
    let mut group: Option<(Bytes, Bytes)> = None;
    let mut noack = false;
    let mut i = 1;
    while i < a.len() {
        let more = a.len() - 1 - i;
        let o = &a[i];
        if o.eq_ignore_ascii_case(b"block") && more > 0 {
            if ctx.cl.in_script {
                return Reply::err(format!(
                    "ERR {name} command is not allowed with BLOCK option from scripts"
                ));
            }
            i += 1;
            match parse_i64(&a[i]) {
                Some(ms) if ms < 0 => return Reply::err("ERR timeout is negative"),
                Some(ms) => block = Some(ms),
                None => return Reply::err("ERR timeout is not an integer or out of range"),
            }
        } else if o.eq_ignore_ascii_case(b"count") && more > 0 {
            i += 1;
            match parse_i64(&a[i]) {
                Some(n) => count = n.max(0) as usize,
                None => return error::not_integer(),
            }
        } else if o.eq_ignore_ascii_case(b"streams") && more > 0 {
            streams_at = i + 1;
            if !(a.len() - streams_at).is_multiple_of(2) {
                return Reply::err(
                    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                );
            }
            break;
        } else if o.eq_ignore_ascii_case(b"group") && more >= 2 {
            if !grouped {
                return Reply::err(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                );
            }
            group = Some((a[i + 1].clone(), a[i + 2].clone()));
            i += 2;
        } else if o.eq_ignore_ascii_case(b"noack") {
            if !grouped {
                return Reply::err(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                );
            }
            noack = true;
        } else {
            return error::syntax();
        }
        i += 1;
    }
    if streams_at == 0 {
        return error::syntax();
    }
    if grouped && group.is_none() {
        return Reply::err("ERR Missing GROUP option for XREADGROUP");
    }
    let n = (a.len() - streams_at) / 2;
    let keys = &a[streams_at..streams_at + n];
    let id_args = &a[streams_at + n..];

    // Resolve the IDs; the key and group checks come first, per stream, as in Redis.
    let mut ids: Vec<StreamId> = Vec::with_capacity(n);
    let mut rewritten = false;
    for (key, arg) in keys.iter().zip(id_args) {
        let last = match get_stream(ctx, key) {
            Ok(s) => {
                if let Some((g, _)) = &group {
                    match &s {
                        Some(s) if s.groups.contains_key(g) => {}
                        _ if retry && s.is_none() => {
                            return Reply::err("UNBLOCKED the stream key no longer exists")
                        }
                        _ if retry => {
                            return Reply::err(
                                "NOGROUP the consumer group this client was blocked on no longer exists",
                            )
                        }
                        _ => {
                            return Reply::err(format!(
                                "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                                String::from_utf8_lossy(key),
                                String::from_utf8_lossy(g)
                            ))
                        }
                    }
                }
                s.map(|s| (s.last_id, s.last_valid_id()))
            }
            // A blocked XREAD whose key changed type keeps waiting; XREADGROUP fails.
            Err(_) if retry && !grouped => None,
            Err(_) if retry => return Reply::err("UNBLOCKED the stream key no longer exists"),
            Err(e) => return e,
        };
        if arg.as_ref() == b"$" {
            if grouped {
                return Reply::err(
                    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
                );
            }
            ids.push(last.map_or((0, 0), |l| l.0));
            rewritten = true;
        } else if arg.as_ref() == b"+" && ctx.eng.config.personality.has(XREAD_LAST) {
            // Redis 7.4 / Valkey 8.0: the stream's last entry.
            if grouped {
                return Reply::err(
                    "ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set.",
                );
            }
            let last = last.map_or((0, 0), |l| l.1);
            ids.push(crate::commands::streams::decr_id(last).unwrap_or((0, 0)));
            rewritten = true;
        } else if arg.as_ref() == b">" {
            if !grouped {
                return Reply::err(
                    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                );
            }
            ids.push(NEW_ONLY);
        } else {
            match strict_id_or_err(arg) {
                Ok(id) => ids.push(id),
                Err(e) => return e,
            }
        }
    }

    let now = ctx.now();
    let mut out: Vec<(Bytes, Reply)> = Vec::new();
    let mut created: Vec<Bytes> = Vec::new();
    let mut served_group = false;
    for (key, &gt) in keys.iter().zip(&ids) {
        let Ok(Some(s)) = get_stream_w(ctx, key) else {
            continue;
        };
        let reply = match &group {
            None => {
                if s.is_empty() || s.last_valid_id() <= gt {
                    continue;
                }
                let Some(start) = crate::commands::streams::incr_id(gt) else {
                    continue;
                };
                read_range(s, start, count)
            }
            Some((gname, cname)) => {
                let mut g = s.groups.remove(gname).expect("checked above");
                let mut made = false;
                let r = if gt == NEW_ONLY {
                    if s.is_empty() || s.last_valid_id() <= g.last_id {
                        s.groups.insert(gname.clone(), g);
                        continue;
                    }
                    consumer_for(&mut g, cname, now, &mut made);
                    deliver_new(s, &mut g, cname, count, noack, now)
                } else {
                    consumer_for(&mut g, cname, now, &mut made);
                    match crate::commands::streams::incr_id(gt) {
                        Some(start) => deliver_history(s, &mut g, cname, start, count, now),
                        None => Reply::Array(vec![]),
                    }
                };
                s.groups.insert(gname.clone(), g);
                if made {
                    created.push(key.clone());
                }
                served_group = true;
                r
            }
        };
        out.push((key.clone(), reply));
    }
    for k in &created {
        ctx.eng.stats.dirty += 1;
        ctx.notify(notify::STREAM, "xgroup-createconsumer", k);
    }
    if served_group {
        ctx.eng.stats.dirty += 1;
    }
    if !out.is_empty() {
        return if ctx.cl.resp3 {
            Reply::Map(out.into_iter().map(|(k, v)| (Reply::Bulk(k), v)).collect())
        } else {
            Reply::Array(
                out.into_iter()
                    .map(|(k, v)| Reply::Array(vec![Reply::Bulk(k), v]))
                    .collect(),
            )
        };
    }
    let Some(ms) = block else {
        return Reply::NullArray;
    };
    let deadline = if ms == 0 {
        None
    } else {
        ctx.now().checked_add(ms)
    };
    let argv = rewritten.then(|| {
        let mut v = a.to_vec();
        for (j, id) in ids.iter().enumerate() {
            v[streams_at + n + j] = fmt_id(*id);
        }
        v
    });
    ctx.block = Some(BlockRequest {
        keys: keys.to_vec(),
        deadline,
        timeout_reply: Reply::NullArray,
        argv,
    });
    Reply::NoReply
}

/// Entries from `start` on, at most `count` (0: all).
fn read_range(s: &StreamValue, start: StreamId, count: usize) -> Reply {
    let limit = if count == 0 { usize::MAX } else { count };
    Reply::Array(
        s.entries
            .range(start..)
            .take(limit)
            .map(|(k, v)| entry_reply(*k, v))
            .collect(),
    )
}

/// Delivers entries after the group's last ID to `consumer`: the group advances and, unless
/// NOACK, each entry enters the PEL (taken over from another consumer if already there).
fn deliver_new(
    s: &StreamValue,
    g: &mut Group,
    consumer: &Bytes,
    count: usize,
    noack: bool,
    now: i64,
) -> Reply {
    let limit = if count == 0 { usize::MAX } else { count };
    let start = (Bound::Excluded(g.last_id), Bound::Unbounded);
    let mut out = Vec::new();
    for (id, fields) in s.entries.range(start).take(limit) {
        if let Some(c) = g.consumers.get_mut(consumer) {
            c.active_time = Some(now);
        }
        s.advance_group(g, *id);
        out.push(entry_reply(*id, fields));
        if !noack {
            if let Some(old) = g.pel.get(id).map(|n| n.consumer.clone()) {
                if let Some(c) = g.consumers.get_mut(&old) {
                    c.pel.remove(id);
                }
            }
            g.pel.insert(
                *id,
                Nack {
                    consumer: consumer.clone(),
                    delivery_time: now,
                    delivery_count: 1,
                },
            );
            g.consumers.get_mut(consumer).unwrap().pel.insert(*id);
        }
    }
    Reply::Array(out)
}

/// Re-delivers `consumer`'s pending entries from `start`: deleted ones come back as
/// `[id, nil]`; the others count one more delivery.
fn deliver_history(
    s: &StreamValue,
    g: &mut Group,
    consumer: &Bytes,
    start: StreamId,
    count: usize,
    now: i64,
) -> Reply {
    let limit = if count == 0 { usize::MAX } else { count };
    let ids: Vec<StreamId> = g.consumers[consumer]
        .pel
        .range(start..)
        .take(limit)
        .copied()
        .collect();
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        match s.entries.get(&id) {
            Some(f) => {
                out.push(entry_reply(id, f));
                if let Some(n) = g.pel.get_mut(&id) {
                    n.delivery_time = now;
                    n.delivery_count += 1;
                }
            }
            None => out.push(Reply::Array(vec![id_reply(id), Reply::NullArray])),
        }
    }
    Reply::Array(out)
}

// ---------------------------------------------------------------- XGROUP

fn xgroup_help(_: &mut Ctx, _: &[Bytes]) -> Reply {
    const HELP: &[&str] = &[
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(HELP.iter().map(|l| Reply::simple(l)).collect())
}

/// The checks every XGROUP subcommand but HELP makes, in Redis' order: options (CREATE
/// and SETID), the key's type, the key's existence (unless MKSTREAM), and the group's
/// existence (SETID, CREATECONSUMER, DELCONSUMER). Returns MKSTREAM and ENTRIESREAD.
fn xgroup_prelude(ctx: &mut Ctx, a: &[Bytes], need_group: bool) -> Result<(bool, i64), Reply> {
    let sub = &a[1];
    let mut mkstream = false;
    let mut entries_read = INVALID_READ;
    let create = sub.eq_ignore_ascii_case(b"create");
    if create || sub.eq_ignore_ascii_case(b"setid") {
        let mut i = 5;
        while i < a.len() {
            if create && a[i].eq_ignore_ascii_case(b"mkstream") {
                mkstream = true;
                i += 1;
            } else if a[i].eq_ignore_ascii_case(b"entriesread") && i + 1 < a.len() {
                match parse_i64(&a[i + 1]) {
                    Some(n) if n < 0 && n != INVALID_READ => {
                        return Err(Reply::err(
                            "ERR value for ENTRIESREAD must be positive or -1",
                        ))
                    }
                    Some(n) => entries_read = n,
                    None => return Err(error::not_integer()),
                }
                i += 2;
            } else {
                return Err(sub_syntax(sub, "XGROUP"));
            }
        }
    }
    let exists = match get_stream_w(ctx, &a[2]) {
        Ok(s) => s.map(|s| s.groups.contains_key(&a[3])),
        Err(e) => return Err(e),
    };
    match exists {
        None if !mkstream => Err(Reply::err(
            "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
        )),
        Some(false) if need_group => Err(Reply::err(format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            String::from_utf8_lossy(&a[3]),
            String::from_utf8_lossy(&a[2])
        ))),
        _ => Ok((mkstream, entries_read)),
    }
}

fn group_event(ctx: &mut Ctx, key: &Bytes, event: &str) {
    ctx.eng.stats.dirty += 1;
    ctx.notify(notify::STREAM, event, key);
}

fn xgroup_create(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (_, entries_read) = match xgroup_prelude(ctx, a, false) {
        Ok(v) => v,
        Err(e) => return e,
    };
    if a.len() > 8 {
        return sub_syntax(&a[1], "XGROUP");
    }
    let key = &a[2];
    let last = match get_stream_w(ctx, key) {
        Ok(s) => s.map(|s| s.last_id),
        Err(e) => return e,
    };
    let id = if a[4].as_ref() == b"$" {
        last.unwrap_or((0, 0))
    } else {
        match strict_id_or_err(&a[4]) {
            Ok(id) => id,
            Err(e) => return e,
        }
    };
    if last.is_none() {
        let db = ctx.dbi();
        let t = ctx.now();
        ctx.note_new_key(key);
        ctx.eng.dbs[db].insert(key.clone(), Value::Stream(Box::default()), None, t);
        let db = ctx.dbi();
        ctx.eng.touch_watched(db, key);
    }
    let Ok(Some(s)) = get_stream_w(ctx, key) else {
        return error::wrongtype();
    };
    if s.groups.contains_key(&a[3]) {
        return Reply::err("BUSYGROUP Consumer Group name already exists");
    }
    s.groups.insert(a[3].clone(), Group::new(id, entries_read));
    group_event(ctx, key, "xgroup-create");
    Reply::ok()
}

fn xgroup_setid(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (_, entries_read) = match xgroup_prelude(ctx, a, true) {
        Ok(v) => v,
        Err(e) => return e,
    };
    if a.len() != 5 && a.len() != 7 {
        return sub_syntax(&a[1], "XGROUP");
    }
    let Ok(Some(s)) = get_stream_w(ctx, &a[2]) else {
        return error::wrongtype();
    };
    let id = if a[4].as_ref() == b"$" {
        s.last_id
    } else {
        match parse_id(&a[4], 0) {
            Some(id) => id,
            None => return Reply::err(INVALID_ID),
        }
    };
    let g = s.groups.get_mut(&a[3]).expect("checked by the prelude");
    g.last_id = id;
    g.entries_read = entries_read;
    group_event(ctx, &a[2], "xgroup-setid");
    Reply::ok()
}

fn xgroup_destroy(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if let Err(e) = xgroup_prelude(ctx, a, false) {
        return e;
    }
    let Ok(Some(s)) = get_stream_w(ctx, &a[2]) else {
        return error::wrongtype();
    };
    if s.groups.remove(&a[3]).is_none() {
        return Reply::Int(0);
    }
    group_event(ctx, &a[2], "xgroup-destroy");
    // Clients blocked in XREADGROUP on this group get -NOGROUP.
    let db = ctx.dbi();
    ctx.eng.signal_ready(db, &a[2]);
    Reply::Int(1)
}

fn xgroup_createconsumer(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if let Err(e) = xgroup_prelude(ctx, a, true) {
        return e;
    }
    let now = ctx.now();
    let Ok(Some(s)) = get_stream_w(ctx, &a[2]) else {
        return error::wrongtype();
    };
    let g = s.groups.get_mut(&a[3]).expect("checked by the prelude");
    if g.consumers.contains_key(&a[4]) {
        return Reply::Int(0);
    }
    g.consumers.insert(
        a[4].clone(),
        Consumer {
            seen_time: now,
            ..Default::default()
        },
    );
    group_event(ctx, &a[2], "xgroup-createconsumer");
    Reply::Int(1)
}

fn xgroup_delconsumer(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if let Err(e) = xgroup_prelude(ctx, a, true) {
        return e;
    }
    let Ok(Some(s)) = get_stream_w(ctx, &a[2]) else {
        return error::wrongtype();
    };
    let g = s.groups.get_mut(&a[3]).expect("checked by the prelude");
    let Some(c) = g.consumers.remove(&a[4]) else {
        return Reply::Int(0);
    };
    for id in &c.pel {
        g.pel.remove(id);
    }
    group_event(ctx, &a[2], "xgroup-delconsumer");
    Reply::Int(c.pel.len() as i64)
}

// ---------------------------------------------------------------- XACK / XPENDING

fn xack(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let has_group = match get_stream(ctx, &a[1]) {
        Ok(s) => s.is_some_and(|s| s.groups.contains_key(&a[2])),
        Err(e) => return e,
    };
    if !has_group {
        return Reply::Int(0);
    }
    let mut ids = Vec::with_capacity(a.len() - 3);
    for v in &a[3..] {
        match strict_id_or_err(v) {
            Ok(id) => ids.push(id),
            Err(e) => return e,
        }
    }
    let Ok(Some(s)) = get_stream_w(ctx, &a[1]) else {
        return Reply::Int(0);
    };
    let g = s.groups.get_mut(&a[2]).unwrap();
    let n = ids.into_iter().filter(|id| g.drop_nack(*id)).count();
    if n > 0 {
        ctx.eng.stats.dirty += 1;
    }
    Reply::Int(n as i64)
}

/// `XPENDING key group [[IDLE min-idle] start end count [consumer]]`
fn xpending(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let summary = a.len() == 3;
    if a.len() != 3 && !(6..=9).contains(&a.len()) {
        return error::syntax();
    }
    let mut range = None;
    let mut min_idle = 0i64;
    let mut consumer: Option<&Bytes> = None;
    if a.len() >= 6 {
        let mut at = 3;
        if a[3].eq_ignore_ascii_case(b"idle") {
            match parse_i64(&a[4]) {
                Some(n) => min_idle = n,
                None => return error::not_integer(),
            }
            if a.len() < 8 {
                return error::syntax();
            }
            at += 2;
        }
        let count = match parse_i64(&a[at + 2]) {
            Some(n) => n.max(0) as usize,
            None => return error::not_integer(),
        };
        let start = match parse_bound(&a[at], true) {
            Ok(v) => v,
            Err(e) => return e,
        };
        let end = match parse_bound(&a[at + 1], false) {
            Ok(v) => v,
            Err(e) => return e,
        };
        consumer = a.get(at + 3);
        range = Some((start, end, count));
    }
    let now = ctx.now();
    let s = match get_stream(ctx, &a[1]) {
        Ok(Some(s)) => s,
        Ok(None) => return nogroup(&a[1], &a[2]),
        Err(e) => return e,
    };
    let Some(g) = s.groups.get(&a[2]) else {
        return nogroup(&a[1], &a[2]);
    };
    if summary {
        let (Some(first), Some(last)) = (g.pel.keys().next(), g.pel.keys().next_back()) else {
            return Reply::Array(vec![
                Reply::Int(0),
                Reply::Null,
                Reply::Null,
                Reply::NullArray,
            ]);
        };
        let per_consumer = g
            .consumers
            .iter()
            .filter(|(_, c)| !c.pel.is_empty())
            .map(|(name, c)| {
                Reply::Array(vec![
                    Reply::Bulk(name.clone()),
                    Reply::Bulk(Bytes::from(c.pel.len().to_string())),
                ])
            })
            .collect();
        return Reply::Array(vec![
            Reply::Int(g.pel.len() as i64),
            id_reply(*first),
            id_reply(*last),
            Reply::Array(per_consumer),
        ]);
    }
    let (start, end, mut count) = range.unwrap();
    let ids: Box<dyn Iterator<Item = StreamId>> = match consumer {
        Some(name) => match g.consumers.get(name) {
            Some(c) if start <= end => Box::new(c.pel.range(start..=end).copied()),
            _ => return Reply::Array(vec![]),
        },
        None if start <= end => Box::new(g.pel.range(start..=end).map(|(k, _)| *k)),
        None => return Reply::Array(vec![]),
    };
    let mut out = Vec::new();
    for id in ids {
        if count == 0 {
            break;
        }
        let n = &g.pel[&id];
        if min_idle != 0 && now - n.delivery_time < min_idle {
            continue;
        }
        count -= 1;
        out.push(Reply::Array(vec![
            id_reply(id),
            Reply::Bulk(n.consumer.clone()),
            Reply::Int((now - n.delivery_time).max(0)),
            Reply::Int(n.delivery_count as i64),
        ]));
    }
    Reply::Array(out)
}

// ---------------------------------------------------------------- XCLAIM / XAUTOCLAIM

/// Gives the pending entry `id` to `consumer` (creating the consumer if needed).
fn claim(g: &mut Group, id: StreamId, consumer: &Bytes, now: i64, made: &mut bool) {
    consumer_for(g, consumer, now, made).active_time = Some(now);
    let old = g.pel[&id].consumer.clone();
    if old != *consumer {
        if let Some(c) = g.consumers.get_mut(&old) {
            c.pel.remove(&id);
        }
        g.consumers.get_mut(consumer).unwrap().pel.insert(id);
        g.pel.get_mut(&id).unwrap().consumer = consumer.clone();
    }
}

/// `XCLAIM key group consumer min-idle-time id... [IDLE ms] [TIME ms] [RETRYCOUNT n]
/// [FORCE] [JUSTID] [LASTID id]`
fn xclaim(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let key = &a[1];
    match get_stream_w(ctx, key) {
        Ok(Some(s)) if s.groups.contains_key(&a[2]) => {}
        Ok(_) => return nogroup(key, &a[2]),
        Err(e) => return e,
    }
    let Some(min_idle) = parse_i64(&a[4]) else {
        return Reply::err("ERR Invalid min-idle-time argument for XCLAIM");
    };
    let min_idle = min_idle.max(0);
    let mut j = 5;
    let mut ids = Vec::new();
    while j < a.len() {
        match crate::commands::streams::parse_strict_id(&a[j], 0) {
            Some(id) => ids.push(id),
            None => break,
        }
        j += 1;
    }
    let now = ctx.now();
    let (mut force, mut justid) = (false, false);
    let mut delivery: Option<i64> = None;
    let mut retrycount: Option<i64> = None;
    let mut last_id = (0, 0);
    while j < a.len() {
        let more = a.len() - 1 - j;
        let o = &a[j];
        let int_arg = |v: &Bytes, what: &str| {
            parse_i64(v)
                .ok_or_else(|| Reply::err(format!("ERR Invalid {what} option argument for XCLAIM")))
        };
        if o.eq_ignore_ascii_case(b"force") {
            force = true;
        } else if o.eq_ignore_ascii_case(b"justid") {
            justid = true;
        } else if o.eq_ignore_ascii_case(b"idle") && more > 0 {
            j += 1;
            match int_arg(&a[j], "IDLE") {
                Ok(v) => delivery = Some(now.wrapping_sub(v)),
                Err(e) => return e,
            }
        } else if o.eq_ignore_ascii_case(b"time") && more > 0 {
            j += 1;
            match int_arg(&a[j], "TIME") {
                Ok(v) => delivery = Some(v),
                Err(e) => return e,
            }
        } else if o.eq_ignore_ascii_case(b"retrycount") && more > 0 {
            j += 1;
            match int_arg(&a[j], "RETRYCOUNT") {
                Ok(v) => retrycount = Some(v),
                Err(e) => return e,
            }
        } else if o.eq_ignore_ascii_case(b"lastid") && more > 0 {
            j += 1;
            match strict_id_or_err(&a[j]) {
                Ok(v) => last_id = v,
                Err(e) => return e,
            }
        } else {
            return Reply::err(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                String::from_utf8_lossy(o)
            ));
        }
        j += 1;
    }
    let delivery = match delivery {
        Some(t) if t >= 0 && t <= now => t,
        _ => now,
    };
    let Ok(Some(s)) = get_stream_w(ctx, key) else {
        return error::wrongtype();
    };
    let mut g = s.groups.remove(&a[2]).unwrap();
    if last_id > g.last_id {
        g.last_id = last_id;
    }
    let consumer = &a[3];
    let mut made = false;
    let mut out = Vec::new();
    let mut dirty = false;
    for id in ids {
        if !s.entries.contains_key(&id) {
            // The entry is gone: its pending record goes too.
            dirty |= g.drop_nack(id);
            continue;
        }
        if !g.pel.contains_key(&id) {
            if !force {
                continue;
            }
            // FORCE: a PEL entry is created for the claiming consumer.
            consumer_for(&mut g, consumer, now, &mut made).active_time = Some(now);
            g.pel.insert(
                id,
                Nack {
                    consumer: consumer.clone(),
                    delivery_time: now,
                    delivery_count: 0,
                },
            );
            g.consumers.get_mut(consumer).unwrap().pel.insert(id);
        } else if min_idle > 0 && now - g.pel[&id].delivery_time < min_idle {
            continue;
        } else {
            claim(&mut g, id, consumer, now, &mut made);
        }
        let n = g.pel.get_mut(&id).unwrap();
        n.delivery_time = delivery;
        match retrycount {
            Some(r) => n.delivery_count = r as u64,
            None if !justid => n.delivery_count += 1,
            None => {}
        }
        dirty = true;
        out.push(if justid {
            id_reply(id)
        } else {
            entry_reply(id, &s.entries[&id])
        });
    }
    s.groups.insert(a[2].clone(), g);
    if made {
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    if dirty || made {
        ctx.eng.stats.dirty += 1;
    }
    Reply::Array(out)
}

/// `XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]`
fn xautoclaim(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let Some(min_idle) = parse_i64(&a[4]) else {
        return Reply::err("ERR Invalid min-idle-time argument for XAUTOCLAIM");
    };
    let min_idle = min_idle.max(0);
    let start = match parse_bound(&a[5], true) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < a.len() {
        let more = a.len() - 1 - j;
        if a[j].eq_ignore_ascii_case(b"count") && more > 0 {
            // LONG_MAX / max(sizeof(streamID), attempts factor 10) in Redis.
            match parse_i64(&a[j + 1]) {
                Some(n) if (1..=i64::MAX / 16).contains(&n) => count = n,
                _ => return Reply::err("ERR COUNT must be > 0"),
            }
            j += 1;
        } else if a[j].eq_ignore_ascii_case(b"justid") {
            justid = true;
        } else {
            return error::syntax();
        }
        j += 1;
    }
    let key = &a[1];
    let now = ctx.now();
    let s = match get_stream_w(ctx, key) {
        Ok(Some(s)) if s.groups.contains_key(&a[2]) => s,
        Ok(_) => return nogroup(key, &a[2]),
        Err(e) => return e,
    };
    let mut g = s.groups.remove(&a[2]).unwrap();
    let consumer = &a[3];
    let mut attempts = count.saturating_mul(10);
    let mut made = false;
    let mut out = Vec::new();
    let mut deleted = Vec::new();
    let mut last_seen: Option<StreamId> = None;
    let mut cursor_from = start;
    loop {
        if attempts == 0 || count == 0 {
            break;
        }
        let next = if let Some(l) = last_seen {
            g.pel
                .range((Bound::Excluded(l), Bound::Unbounded))
                .next()
                .map(|(k, _)| *k)
        } else {
            g.pel.range(cursor_from..).next().map(|(k, _)| *k)
        };
        let Some(id) = next else {
            last_seen = None;
            cursor_from = MAX_ID;
            break;
        };
        attempts -= 1;
        last_seen = Some(id);
        if !s.entries.contains_key(&id) {
            g.drop_nack(id);
            deleted.push(id_reply(id));
            count -= 1;
            continue;
        }
        if min_idle > 0 && now - g.pel[&id].delivery_time < min_idle {
            continue;
        }
        claim(&mut g, id, consumer, now, &mut made);
        let n = g.pel.get_mut(&id).unwrap();
        n.delivery_time = now;
        if !justid {
            n.delivery_count += 1;
        }
        count -= 1;
        out.push(if justid {
            id_reply(id)
        } else {
            entry_reply(id, &s.entries[&id])
        });
    }
    // The cursor: the next pending ID after the last one looked at, or 0-0 at the end.
    let cursor = match last_seen {
        Some(l) => g
            .pel
            .range((Bound::Excluded(l), Bound::Unbounded))
            .next()
            .map(|(k, _)| *k),
        None if cursor_from == MAX_ID => None,
        None => g.pel.range(cursor_from..).next().map(|(k, _)| *k),
    }
    .unwrap_or((0, 0));
    let changed = made || !out.is_empty() || !deleted.is_empty();
    s.groups.insert(a[2].clone(), g);
    if made {
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    if changed {
        ctx.eng.stats.dirty += 1;
    }
    Reply::Array(vec![
        id_reply(cursor),
        Reply::Array(out),
        Reply::Array(deleted),
    ])
}
