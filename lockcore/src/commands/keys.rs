//! Generic key commands: DEL, EXISTS, TYPE, expiry and TTLs, RENAME, COPY, MOVE, KEYS,
//! SCAN, RANDOMKEY, TOUCH and OBJECT.

use bytes::Bytes;

use crate::engine::delete_key;
use crate::engine::spec::{flag::*, with_acl, CommandSpec, Ctx, Exec, Keys, BASE, KEY1};
use crate::error;
use crate::glob;
use crate::num::parse_i64;
use crate::personality::{Personality, Since};
use crate::reply::Reply;
use crate::storage::notify;
use crate::storage::value::Value;

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    crate::engine::spec::engine("generic", &["keyspace"], name, arity, flags, keys, h)
}

const ALL_KEYS: Keys = Keys::Range {
    first: 1,
    last: -1,
    step: 1,
};

pub static COMMANDS: &[CommandSpec] = &[
    cmd("del", -2, WRITE, ALL_KEYS, del),
    cmd("unlink", -2, WRITE | FAST, ALL_KEYS, del),
    cmd("exists", -2, READONLY | FAST, ALL_KEYS, exists),
    cmd("type", 2, READONLY | FAST, KEY1, type_),
    cmd("expire", -3, WRITE | FAST, KEY1, expire),
    cmd("pexpire", -3, WRITE | FAST, KEY1, pexpire),
    cmd("expireat", -3, WRITE | FAST, KEY1, expireat),
    cmd("pexpireat", -3, WRITE | FAST, KEY1, pexpireat),
    cmd("ttl", 2, READONLY | FAST, KEY1, ttl),
    cmd("pttl", 2, READONLY | FAST, KEY1, pttl),
    cmd("expiretime", 2, READONLY | FAST, KEY1, expiretime),
    cmd("pexpiretime", 2, READONLY | FAST, KEY1, pexpiretime),
    cmd("persist", 2, WRITE | FAST, KEY1, persist),
    cmd("rename", 3, WRITE, KEY2, rename),
    cmd("renamenx", 3, WRITE | FAST, KEY2, renamenx),
    cmd("copy", -3, WRITE | DENYOOM, KEY2, copy),
    cmd("move", 3, WRITE | FAST, KEY1, move_),
    with_acl(
        &["keyspace", "dangerous"],
        cmd("keys", 2, READONLY, Keys::None, keys),
    ),
    cmd("scan", -2, READONLY, Keys::None, scan),
    cmd("randomkey", 1, READONLY, Keys::None, randomkey),
    cmd("touch", -2, READONLY | FAST, ALL_KEYS, touch),
    cmd("dump", 2, READONLY, KEY1, dump),
    with_acl(
        &["keyspace", "dangerous"],
        cmd("restore", -4, WRITE | DENYOOM, KEY1, restore),
    ),
    // Run by the server (server/src/commands/migrate.rs): it opens a connection to another server.
    CommandSpec {
        name: "migrate",
        arity: -6,
        flags: WRITE | MAY_REPLICATE | CORE,
        keys: Keys::Migrate,
        acl: &["keyspace", "dangerous"],
        group: "generic",
        exec: Exec::Server,
        ..BASE
    },
    CommandSpec {
        name: "object",
        arity: -2,
        group: "generic",
        exec: Exec::Container,
        subcommands: OBJECT_SUBS,
        ..BASE
    },
];

/// OBJECT's subcommands.
pub static OBJECT_SUBS: &[CommandSpec] = &[
    object_sub("encoding", 3, object_encoding),
    object_sub("refcount", 3, object_refcount),
    object_sub("idletime", 3, object_idletime),
    object_sub("freq", 3, object_freq),
    CommandSpec {
        name: "help",
        parent: "object",
        arity: 2,
        flags: LOADING | STALE,
        acl: &["keyspace"],
        group: "generic",
        exec: Exec::Engine(object_help),
        ..BASE
    },
];

const fn object_sub(
    name: &'static str,
    arity: i32,
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        parent: "object",
        arity,
        flags: READONLY,
        keys: Keys::Range {
            first: 2,
            last: 2,
            step: 1,
        },
        group: "generic",
        acl: &["keyspace"],
        exec: Exec::Engine(h),
        ..BASE
    }
}

/// Source and destination keys at arguments 1 and 2.
const KEY2: Keys = Keys::Range {
    first: 1,
    last: 2,
    step: 1,
};

fn del(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let db = ctx.dbi();
    Reply::Int(a[1..].iter().filter(|k| delete_key(ctx.eng, db, k)).count() as i64)
}

fn exists(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    Reply::Int(
        a[1..]
            .iter()
            .filter(|k| ctx.read_notouch(k).is_some())
            .count() as i64,
    )
}

fn type_(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match ctx.read_notouch(&a[1]) {
        Some(e) => Reply::simple(e.value.type_name()),
        None => Reply::simple("none"),
    }
}

/// EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT key n [NX|XX|GT|LT]
fn expire_generic(ctx: &mut Ctx, a: &[Bytes], unit_ms: i64, absolute: bool) -> Reply {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &a[3..] {
        match opt.to_ascii_uppercase().as_slice() {
            b"NX" => nx = true,
            b"XX" => xx = true,
            b"GT" => gt = true,
            b"LT" => lt = true,
            _ => {
                return Reply::err(format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(opt)
                ))
            }
        }
    }
    if nx && (xx || gt || lt) {
        return Reply::err("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return Reply::err("ERR GT and LT options at the same time are not compatible");
    }
    let Some(n) = parse_i64(&a[2]) else {
        return error::not_integer();
    };
    let now = ctx.now();
    let when = n.checked_mul(unit_ms).and_then(|ms| {
        if absolute {
            Some(ms)
        } else {
            ms.checked_add(now)
        }
    });
    let Some(when) = when else {
        // The name only for the error: lowercasing it on every call allocated.
        return error::invalid_expire(&String::from_utf8_lossy(&a[0]).to_ascii_lowercase());
    };
    let key = &a[1];
    let Some(entry) = ctx.write(key) else {
        return Reply::Int(0);
    };
    let cur = entry.expire_at();
    // A key without TTL counts as infinite TTL for GT and LT.
    let refused = (nx && cur.is_some())
        || (xx && cur.is_none())
        || (gt && cur.is_none_or(|c| when <= c))
        || (lt && cur.is_some_and(|c| when >= c));
    if refused {
        return Reply::Int(0);
    }
    let db = ctx.dbi();
    if when <= now {
        delete_key(ctx.eng, db, key);
        return Reply::Int(1);
    }
    ctx.db().set_expire(key, Some(when));
    ctx.modified(key, notify::GENERIC, "expire");
    ctx.eng.deadline_changed = true;
    Reply::Int(1)
}

fn expire(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    expire_generic(ctx, a, 1000, false)
}
fn pexpire(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    expire_generic(ctx, a, 1, false)
}
fn expireat(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    expire_generic(ctx, a, 1000, true)
}
fn pexpireat(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    expire_generic(ctx, a, 1, true)
}

/// -2 if the key is missing, -1 if it has no TTL, else `f(expire_at)`.
fn ttl_generic(ctx: &mut Ctx, key: &[u8], f: impl Fn(i64, i64) -> i64) -> Reply {
    let now = ctx.now();
    match ctx.read_notouch(key) {
        None => Reply::Int(-2),
        Some(e) => match e.expire_at() {
            None => Reply::Int(-1),
            Some(t) => Reply::Int(f(t, now)),
        },
    }
}

fn ttl(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    ttl_generic(ctx, &a[1], |t, now| ((t - now).max(0) + 500) / 1000)
}
fn pttl(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if ctx.eng.lockdep.is_some() && ctx.cl.in_script {
        crate::engine::locks::lockdep::pttl_read(ctx, &a[1]);
    }
    ttl_generic(ctx, &a[1], |t, now| (t - now).max(0))
}
fn expiretime(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    // Rounded as `(expire + 500) / 1000`, which for deadlines within 500 ms of LLONG_MAX
    // (PEXPIREAT 9223372036854775807) overflows a long long; redis-server 7.0.15 replies
    // with the exact quotient (9223372036854776), so it is computed wide here (a plain
    // `+` panicked in debug builds).
    ttl_generic(ctx, &a[1], |t, _| ((t as i128 + 500) / 1000) as i64)
}
fn pexpiretime(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    ttl_generic(ctx, &a[1], |t, _| t)
}

fn persist(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let key = &a[1];
    match ctx.write(key) {
        Some(e) if e.expire_at().is_some() => {
            ctx.db().set_expire(key, None);
            ctx.modified(key, notify::GENERIC, "persist");
            Reply::Int(1)
        }
        _ => Reply::Int(0),
    }
}

/// RENAME/RENAMENX: moves the value and its TTL; the destination loses its own TTL.
fn rename_generic(ctx: &mut Ctx, a: &[Bytes], nx: bool) -> Reply {
    let (src, dst) = (&a[1], &a[2]);
    if ctx.write(src).is_none() {
        return Reply::err(error::NO_SUCH_KEY);
    }
    if src == dst {
        return if nx { Reply::Int(0) } else { Reply::ok() };
    }
    let db = ctx.dbi();
    if ctx.write(dst).is_some() {
        if nx {
            return Reply::Int(0);
        }
        ctx.eng.dbs[db].remove(dst);
    }
    let mut entry = ctx.eng.dbs[db].remove(src).unwrap();
    entry.lru_ms = ctx.now();
    ctx.note_new_key(dst);
    ctx.eng.dbs[db].insert_entry(dst.clone(), entry);
    ctx.modified(src, notify::GENERIC, "rename_from");
    ctx.modified(dst, notify::GENERIC, "rename_to");
    ctx.eng.stats.dirty -= 1; // one rename is one change, as in Redis
    if nx {
        Reply::Int(1)
    } else {
        Reply::ok()
    }
}

fn rename(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    rename_generic(ctx, a, false)
}
fn renamenx(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    rename_generic(ctx, a, true)
}

/// Parses a db number as SELECT-like commands do: an integer, then a range check.
fn parse_db(ctx: &Ctx, v: &[u8]) -> Result<usize, Reply> {
    let n = parse_i64(v)
        .filter(|n| i32::try_from(*n).is_ok())
        .ok_or_else(error::not_integer)?;
    if n < 0 || n as usize >= ctx.eng.dbs.len() {
        return Err(Reply::err(error::DB_INDEX_OUT_OF_RANGE));
    }
    Ok(n as usize)
}

/// COPY source destination [DB destination-db] [REPLACE]
fn copy(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let src_db = ctx.dbi();
    let mut dst_db = src_db;
    let mut replace = false;
    let mut i = 3;
    while i < a.len() {
        if a[i].eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if a[i].eq_ignore_ascii_case(b"db") && i + 1 < a.len() {
            match parse_db(ctx, &a[i + 1]) {
                Ok(d) => dst_db = d,
                Err(e) => return e,
            }
            i += 1;
        } else {
            return error::syntax();
        }
        i += 1;
    }
    let (src, dst) = (&a[1], &a[2]);
    if src_db == dst_db && src == dst {
        return Reply::err(error::SAME_OBJECT);
    }
    let Some(e) = ctx.read(src) else {
        return Reply::Int(0);
    };
    let mut entry = e.clone();
    let dst_exists = ctx.eng.lookup(dst_db, dst).is_some();
    if dst_exists && !replace {
        return Reply::Int(0);
    }
    // Redis 8's vector sets are module values without a copy callback.
    if matches!(entry.value, Value::VSet(_)) {
        return Reply::err("ERR not supported for this module key");
    }
    if dst_exists {
        ctx.eng.dbs[dst_db].remove(dst);
    }
    entry.lru_ms = ctx.now();
    if let Value::Hash(h) = &mut entry.value {
        // A copy is built afresh: Redis re-creates a hashtable with no deleted holes; the
        // encoding is kept.
        h.shrink_to_fit();
    }
    ctx.eng.note_new_key(dst_db, dst);
    ctx.eng.dbs[dst_db].insert_entry(dst.clone(), entry);
    ctx.eng.modified(dst_db, dst, notify::GENERIC, "copy_to");
    Reply::Int(1)
}

/// MOVE key db: only if the key is absent from the target db; the TTL moves along.
fn move_(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let dst_db = match parse_db(ctx, &a[2]) {
        Ok(d) => d,
        Err(e) => return e,
    };
    let src_db = ctx.dbi();
    if src_db == dst_db {
        return Reply::err(error::SAME_OBJECT);
    }
    let key = &a[1];
    if ctx.write(key).is_none() || ctx.eng.lookup(dst_db, key).is_some() {
        return Reply::Int(0);
    }
    let entry = ctx.eng.dbs[src_db].remove(key).unwrap();
    ctx.eng.note_new_key(dst_db, key);
    ctx.eng.dbs[dst_db].insert_entry(key.clone(), entry);
    ctx.eng.modified(src_db, key, notify::GENERIC, "move_from");
    ctx.eng.modified(dst_db, key, notify::GENERIC, "move_to");
    ctx.eng.stats.dirty -= 1;
    Reply::Int(1)
}

/// True if the entry is logically expired at `now` (still stored until someone deletes it).
fn is_expired(e: &crate::storage::value::Entry, now: i64) -> bool {
    e.expire_at().is_some_and(|t| t <= now)
}

fn keys(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let pat = &a[1];
    let all = pat.as_ref() == b"*";
    let now = ctx.now();
    Reply::Array(
        ctx.db()
            .iter()
            .filter(|(k, e)| !is_expired(e, now) && (all || glob::matches(pat, k, false)))
            .map(|(k, _)| Reply::Bulk(Bytes::copy_from_slice(k)))
            .collect(),
    )
}

/// Parses a SCAN cursor as Redis' `strtoul` does: decimal, an optional sign (a negative
/// number wraps), no spaces, no overflow; the empty string is cursor 0.
pub fn parse_cursor(v: &[u8]) -> Result<u64, Reply> {
    let invalid = || Reply::err("ERR invalid cursor");
    let (neg, digits) = match v.first() {
        Some(b'-') => (true, &v[1..]),
        Some(b'+') => (false, &v[1..]),
        _ => (false, v),
    };
    if digits.is_empty() && !v.is_empty() {
        return Err(invalid());
    }
    let mut n: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return Err(invalid());
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add((c - b'0') as u64))
            .ok_or_else(invalid)?;
    }
    Ok(if neg { n.wrapping_neg() } else { n })
}

/// The options of SCAN/HSCAN/ZSCAN/SSCAN (TYPE only for SCAN).
pub struct ScanArgs {
    pub cursor: u64,
    pub pattern: Option<Bytes>,
    pub count: usize,
    pub type_: Option<Bytes>,
    /// HSCAN's NOVALUES.
    pub no_values: bool,
}

/// HSCAN's NOVALUES (Redis 7.4, Valkey 8.0).
pub const SCAN_NOVALUES: Since = Since::both(704, 800);
/// ZSCAN's NOSCORES (Valkey 8.0).
pub const SCAN_NOSCORES: Since = Since::valkey(800);

/// Whether `opt` is the flag of scan command `cmd` ("hscan" NOVALUES, "zscan" NOSCORES)
/// in personality `p`; the other commands refuse it with the error naming its command.
pub fn scan_flag(p: &Personality, cmd: &str, opt: &[u8]) -> Result<bool, Reply> {
    if p.has(SCAN_NOVALUES) && opt.eq_ignore_ascii_case(b"novalues") {
        return match cmd {
            "hscan" => Ok(true),
            _ => Err(Reply::err("ERR NOVALUES option can only be used in HSCAN")),
        };
    }
    if p.has(SCAN_NOSCORES) && opt.eq_ignore_ascii_case(b"noscores") {
        return match cmd {
            "zscan" => Ok(true),
            _ => Err(Reply::err("ERR NOSCORES option can only be used in ZSCAN")),
        };
    }
    Ok(false)
}

/// Parses `cursor [MATCH p] [COUNT n] [TYPE t]` (TYPE for SCAN, NOVALUES for HSCAN)
/// starting at `a[at]`, for scan command `cmd` in personality `p`.
pub fn parse_scan(p: &Personality, cmd: &str, a: &[Bytes], at: usize) -> Result<ScanArgs, Reply> {
    let allow_type = cmd == "scan";
    let mut s = ScanArgs {
        cursor: parse_cursor(&a[at])?,
        pattern: None,
        count: 10,
        type_: None,
        no_values: false,
    };
    let mut i = at + 1;
    while i < a.len() {
        let has_value = i + 1 < a.len();
        let opt = &a[i];
        if opt.eq_ignore_ascii_case(b"count") && has_value {
            let n = parse_i64(&a[i + 1]).ok_or_else(error::not_integer)?;
            if n < 1 {
                return Err(error::syntax());
            }
            s.count = n as usize;
        } else if opt.eq_ignore_ascii_case(b"match") && has_value {
            let p = a[i + 1].clone();
            s.pattern = (p.as_ref() != b"*").then_some(p);
        } else if allow_type && opt.eq_ignore_ascii_case(b"type") && has_value {
            s.type_ = Some(a[i + 1].clone());
        } else if scan_flag(p, cmd, opt)? {
            s.no_values = true;
            i += 1;
            continue;
        } else {
            return Err(error::syntax());
        }
        i += 2;
    }
    Ok(s)
}

/// The `[cursor, [items...]]` reply of every SCAN variant.
pub fn scan_reply(cursor: u64, items: Vec<Reply>) -> Reply {
    Reply::Array(vec![
        Reply::bulk_str(&cursor.to_string()),
        Reply::Array(items),
    ])
}

fn scan(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let p = ctx.eng.config.personality;
    let args = match parse_scan(&p, "scan", a, 1) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let db = ctx.dbi();
    let (found, next) = ctx.eng.dbs[db].scan(args.cursor, args.count);
    let mut out = Vec::with_capacity(found.len());
    for k in found {
        // Expired keys are deleted on the way, as Redis' SCAN does.
        if ctx.eng.expire_if_needed(db, &k) {
            continue;
        }
        if let Some(p) = &args.pattern {
            if !glob::matches(p, &k, false) {
                continue;
            }
        }
        if let Some(t) = &args.type_ {
            let Some(e) = ctx.eng.dbs[db].get(&k) else {
                continue;
            };
            if !e.value.type_name().as_bytes().eq_ignore_ascii_case(t) {
                continue;
            }
        }
        out.push(Reply::Bulk(k));
    }
    scan_reply(next, out)
}

fn randomkey(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    let db = ctx.dbi();
    // Each miss deletes an expired key, so this ends; the bound keeps a huge db of expired
    // keys from stalling others.
    for _ in 0..100 {
        let Some(k) = ctx.eng.dbs[db].random_key() else {
            return Reply::Null;
        };
        if !ctx.eng.expire_if_needed(db, &k) {
            return Reply::Bulk(k);
        }
    }
    Reply::Null
}

fn touch(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    Reply::Int(a[1..].iter().filter(|k| ctx.read(k).is_some()).count() as i64)
}

/// OBJECT subcommands look the key up without touching its access time.
fn object_entry<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Option<&'a mut crate::storage::value::Entry> {
    ctx.peek(key)
}

fn object_encoding(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let listpack_lists = ctx.eng.config.personality.has(Since::redis(702));
    match object_entry(ctx, &a[2]) {
        Some(e) if matches!(e.value, Value::List(_)) => Reply::bulk_str(
            crate::storage::qlist::encoding_name(e.encoding(), listpack_lists),
        ),
        Some(e) => Reply::bulk_str(e.encoding()),
        None => Reply::Null,
    }
}

fn object_refcount(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let unshared = ctx.eng.config.no_shared_integers;
    match object_entry(ctx, &a[2]) {
        // Redis shares the integers 0..9999 and reports them with refcount INT_MAX, unless
        // maxmemory with an LRU/LFU policy needs per-key access data. (Redis decides when
        // the value is created; this reads the current config.)
        Some(e) => match &e.value {
            Value::Str(s)
                if !e.raw()
                    && !unshared
                    && parse_i64(s).is_some_and(|n| (0..10000).contains(&n)) =>
            {
                Reply::Int(i32::MAX as i64)
            }
            _ => Reply::Int(1),
        },
        None => Reply::Null,
    }
}

fn object_idletime(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    let lfu = ctx.eng.config.lfu;
    match object_entry(ctx, &a[2]) {
        Some(_) if lfu => Reply::err("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."),
        Some(e) => Reply::Int((now - e.lru_ms).max(0) / 1000),
        None => Reply::Null,
    }
}

fn object_freq(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    let (lfu, decay) = (ctx.eng.config.lfu, ctx.eng.config.lfu_decay_time);
    match object_entry(ctx, &a[2]) {
        Some(e) if lfu => Reply::Int(crate::storage::lfu::decayed(e.lru_ms, now, decay) as i64),
        Some(_) => Reply::err("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."),
        None => Reply::Null,
    }
}

fn object_help(_: &mut Ctx, _: &[Bytes]) -> Reply {
    const HELP: &[&str] = &[
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(HELP.iter().map(|l| Reply::simple(l)).collect())
}

fn dump(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let fill = ctx.eng.config.list_max_listpack_size;
    let ver = ctx.eng.config.personality.rdb_version();
    match ctx.read(&a[1]) {
        None => Reply::Null,
        Some(e) => match crate::storage::rdb::dump(&e.value, fill, ver) {
            Some(p) => Reply::Bulk(Bytes::from(p)),
            None => Reply::err("ERR DUMP of this type is not supported by tumbler"),
        },
    }
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], checks in Redis' order.
fn restore(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<i64>, Option<i64>) = (None, None);
    let mut j = 4;
    while j < a.len() {
        let more = j + 1 < a.len();
        let o = &a[j];
        if o.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if o.eq_ignore_ascii_case(b"absttl") {
            absttl = true;
        } else if o.eq_ignore_ascii_case(b"idletime") && more && freq.is_none() {
            let Some(n) = parse_i64(&a[j + 1]) else {
                return error::not_integer();
            };
            if n < 0 {
                return Reply::err("ERR Invalid IDLETIME value, must be >= 0");
            }
            idle = Some(n);
            j += 1;
        } else if o.eq_ignore_ascii_case(b"freq") && more && idle.is_none() {
            let Some(n) = parse_i64(&a[j + 1]) else {
                return error::not_integer();
            };
            if !(0..=255).contains(&n) {
                return Reply::err("ERR Invalid FREQ value, must be >= 0 and <= 255");
            }
            freq = Some(n);
            j += 1;
        } else {
            return error::syntax();
        }
        j += 1;
    }
    let key = &a[1];
    if !replace && ctx.write(key).is_some() {
        return Reply::err("BUSYKEY Target key name already exists.");
    }
    let Some(mut ttl) = parse_i64(&a[2]) else {
        return error::not_integer();
    };
    if ttl < 0 {
        return Reply::err("ERR Invalid TTL value, must be >= 0");
    }
    let ver = ctx.eng.config.personality.rdb_version();
    if !crate::storage::rdb::verify(&a[3], ver) {
        return Reply::err("ERR DUMP payload version or checksum are wrong");
    }
    let cfg = &ctx.eng.config;
    let Some(value) =
        crate::storage::rdb::load(&a[3], ver).and_then(|l| crate::storage::rdb::to_value(l, cfg))
    else {
        return Reply::err("ERR Bad data format");
    };
    let db = ctx.dbi();
    let now = ctx.now();
    let deleted = replace && ctx.eng.dbs[db].remove(key).is_some();
    if ttl != 0 && !absttl {
        ttl = ttl.saturating_add(now);
    }
    if ttl != 0 && ttl <= now {
        // Already expired: nothing is created, but a replaced key is gone.
        if deleted {
            ctx.modified(key, notify::GENERIC, "del");
        }
        return Reply::ok();
    }
    let expire = (ttl != 0).then_some(ttl);
    ctx.note_new_key(key);
    ctx.eng.dbs[db].insert(key.clone(), value, expire, now);
    // As Redis' objectSetLRUOrLFU: FREQ counts under an LFU policy, IDLETIME otherwise.
    let lfu = ctx.eng.config.lfu;
    if let Some(e) = ctx.eng.dbs[db].get_mut(key) {
        match (lfu, idle, freq) {
            (false, Some(i), _) => e.lru_ms = now - i.saturating_mul(1000),
            (true, _, Some(f)) => e.lru_ms = crate::storage::lfu::encode(now, f as u8),
            _ => {}
        }
    }
    if expire.is_some() {
        ctx.eng.deadline_changed = true;
    }
    ctx.modified(key, notify::GENERIC, "restore");
    Reply::ok()
}
