//! String commands: GET, SET and friends, counters, ranges.

use bytes::{Bytes, BytesMut};

use crate::engine::spec::{flag::*, since, with_acl, CommandSpec, Ctx, Keys, KEY1};
use crate::engine::store;
use crate::error::{self, *};
use crate::num::{
    add_long_double, fmt_long_double_human, parse_i64, parse_long_double, LongDouble,
};
use crate::personality::Since;
use crate::reply::Reply;
use crate::storage::notify;
use crate::storage::value::Value;
use rustc_apfloat::Float;

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    crate::engine::spec::engine("string", &["string"], name, arity, flags, keys, h)
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd("get", 2, READONLY | FAST, KEY1, get),
    cmd("set", -3, WRITE | DENYOOM, KEY1, set),
    cmd("setnx", 3, WRITE | DENYOOM | FAST, KEY1, setnx),
    cmd("setex", 4, WRITE | DENYOOM, KEY1, setex),
    cmd("psetex", 4, WRITE | DENYOOM, KEY1, psetex),
    cmd("getset", 3, WRITE | DENYOOM | FAST, KEY1, getset),
    cmd("getdel", 2, WRITE | FAST, KEY1, getdel),
    // Valkey 9.0's compare-and-delete.
    since(
        Since::valkey(900),
        cmd("delifeq", 3, WRITE | FAST, KEY1, delifeq),
    ),
    cmd("getex", -2, WRITE | FAST, KEY1, getex),
    cmd(
        "mget",
        -2,
        READONLY | FAST,
        Keys::Range {
            first: 1,
            last: -1,
            step: 1,
        },
        mget,
    ),
    cmd(
        "mset",
        -3,
        WRITE | DENYOOM,
        Keys::Range {
            first: 1,
            last: -1,
            step: 2,
        },
        mset,
    ),
    cmd(
        "msetnx",
        -3,
        WRITE | DENYOOM,
        Keys::Range {
            first: 1,
            last: -1,
            step: 2,
        },
        msetnx,
    ),
    // Valkey 9.1: MSET with NX/XX and one expiry for every key.
    since(
        Since::valkey(901),
        cmd(
            "msetex",
            -4,
            WRITE | DENYOOM,
            Keys::NumKeys {
                numkeys_at: 1,
                step: 2,
            },
            msetex,
        ),
    ),
    cmd("incr", 2, WRITE | DENYOOM | FAST, KEY1, incr),
    cmd("decr", 2, WRITE | DENYOOM | FAST, KEY1, decr),
    cmd("incrby", 3, WRITE | DENYOOM | FAST, KEY1, incrby),
    cmd("decrby", 3, WRITE | DENYOOM | FAST, KEY1, decrby),
    cmd("incrbyfloat", 3, WRITE | DENYOOM | FAST, KEY1, incrbyfloat),
    cmd("append", 3, WRITE | DENYOOM | FAST, KEY1, append),
    cmd("strlen", 2, READONLY | FAST, KEY1, strlen),
    cmd("getrange", 4, READONLY, KEY1, getrange),
    cmd("substr", 4, READONLY, KEY1, getrange),
    cmd("setrange", 4, WRITE | DENYOOM, KEY1, setrange),
    with_acl(&["bitmap"], cmd("setbit", 4, WRITE | DENYOOM, KEY1, setbit)),
    with_acl(&["bitmap"], cmd("getbit", 3, READONLY | FAST, KEY1, getbit)),
    cmd(
        "lcs",
        -3,
        READONLY,
        Keys::Range {
            first: 1,
            last: 2,
            step: 1,
        },
        lcs,
    ),
];

/// Reads a string key: `Ok(None)` if absent, WRONGTYPE if not a string.
pub fn get_string(ctx: &mut Ctx, key: &[u8]) -> Result<Option<Bytes>, Reply> {
    string_of(ctx.read(key))
}

/// [`get_string`] for a command that writes the key (INCRBYFLOAT, APPEND, SETRANGE):
/// Redis' lookupKeyWrite, which counts no keyspace hit or miss.
fn get_string_for_write(ctx: &mut Ctx, key: &[u8]) -> Result<Option<Bytes>, Reply> {
    string_of(ctx.write(key))
}

/// The length of the string at `key`, looked up for writing: `Ok(None)` if absent,
/// WRONGTYPE if not a string.
fn get_len_for_write(ctx: &mut Ctx, key: &[u8]) -> Result<Option<usize>, Reply> {
    match ctx.write(key) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::Str(s) => Ok(Some(s.len())),
            _ => Err(error::wrongtype()),
        },
    }
}

fn string_of(e: Option<&mut crate::storage::value::Entry>) -> Result<Option<Bytes>, Reply> {
    match e {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::Str(s) => Ok(Some(s.to_bytes())),
            _ => Err(error::wrongtype()),
        },
    }
}

fn get(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_string(ctx, &a[1]) {
        Ok(v) => Reply::opt_bulk(v),
        Err(e) => e,
    }
}

/// When a SET-like command sets the expiry.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ttl {
    None,
    Keep,
    At(i64),
}

#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum Cond {
    #[default]
    Always,
    Nx,
    Xx,
    /// Valkey 8.1's `IFEQ value`: only if the key holds this string.
    IfEq,
}

/// SET's IFEQ option (Valkey 8.1).
const SET_IFEQ: Since = Since::valkey(801);

struct SetArgs<'a> {
    cond: Cond,
    ttl: Ttl,
    get: bool,
    /// IFEQ's comparison value.
    ifeq: Option<&'a Bytes>,
}

/// Parses an expire amount in `unit_ms` (1000 for seconds) relative to now, or absolute.
/// Redis refuses values <= 0 and values that overflow when turned into ms.
fn expire_at(ctx: &Ctx, cmd: &str, v: &[u8], unit_ms: i64, absolute: bool) -> Result<i64, Reply> {
    let n = parse_i64(v).ok_or_else(error::not_integer)?;
    if n <= 0 {
        return Err(error::invalid_expire(cmd));
    }
    let ms = n
        .checked_mul(unit_ms)
        .ok_or_else(|| error::invalid_expire(cmd))?;
    if absolute {
        Ok(ms)
    } else {
        ms.checked_add(ctx.now())
            .ok_or_else(|| error::invalid_expire(cmd))
    }
}

fn parse_set<'a>(ctx: &Ctx, a: &'a [Bytes]) -> Result<SetArgs<'a>, Reply> {
    let mut s = SetArgs {
        cond: Cond::Always,
        ttl: Ttl::None,
        get: false,
        ifeq: None,
    };
    let ifeq_ok = ctx.eng.config.personality.has(SET_IFEQ);
    let mut i = 3;
    // Which of EX, PX, EXAT, PXAT and KEEPTTL was given: Redis accepts the same one again
    // (the last value counts) but not two different ones.
    let mut ttl_opt: Option<&'static [u8]> = None;
    // Redis checks the whole syntax before the expire value (`SET k v EX 0 junk` is a
    // syntax error), so the value is only remembered here.
    let mut expire: Option<(&Bytes, i64, bool)> = None;
    while i < a.len() {
        let opt = a[i].to_ascii_uppercase();
        let next = a.get(i + 1);
        let ttl_free = ttl_opt.is_none_or(|o| o == opt.as_slice());
        match opt.as_slice() {
            b"NX" if !matches!(s.cond, Cond::Xx | Cond::IfEq) => s.cond = Cond::Nx,
            b"XX" if !matches!(s.cond, Cond::Nx | Cond::IfEq) => s.cond = Cond::Xx,
            // IFEQ excludes NX, XX and a second IFEQ (Valkey: syntax error).
            b"IFEQ" if ifeq_ok && s.cond == Cond::Always && next.is_some() => {
                s.cond = Cond::IfEq;
                s.ifeq = next;
                i += 1;
            }
            b"GET" => s.get = true,
            b"KEEPTTL" if ttl_free => {
                s.ttl = Ttl::Keep;
                ttl_opt = Some(b"KEEPTTL");
            }
            b"EX" | b"PX" | b"EXAT" | b"PXAT" if ttl_free && next.is_some() => {
                let (unit, abs, name): (i64, bool, &'static [u8]) = match opt.as_slice() {
                    b"EX" => (1000, false, b"EX"),
                    b"PX" => (1, false, b"PX"),
                    b"EXAT" => (1000, true, b"EXAT"),
                    _ => (1, true, b"PXAT"),
                };
                expire = Some((next.unwrap(), unit, abs));
                ttl_opt = Some(name);
                i += 1;
            }
            _ => return Err(error::syntax()),
        }
        i += 1;
    }
    if let Some((arg, unit, abs)) = expire {
        s.ttl = Ttl::At(expire_at(ctx, "set", arg, unit, abs)?);
    }
    Ok(s)
}

/// The core of SET: applies the condition, stores, replies per GET.
fn set_generic(ctx: &mut Ctx, key: &Bytes, val: &Bytes, args: SetArgs) -> Reply {
    // IFEQ checks the key's type first, with or without GET (Valkey: WRONGTYPE).
    let current = if args.cond == Cond::IfEq {
        match get_string_for_write(ctx, key) {
            Ok(v) => v,
            Err(e) => return e,
        }
    } else {
        None
    };
    let old = if args.get {
        match get_string(ctx, key) {
            Ok(v) => Some(v),
            Err(e) => return e,
        }
    } else {
        None
    };
    let exists = ctx.exists(key);
    let blocked = match args.cond {
        Cond::Nx => exists,
        Cond::Xx => !exists,
        Cond::IfEq => current.as_ref() != args.ifeq,
        Cond::Always => false,
    };
    if ctx.eng.lockdep.is_some() && args.cond == Cond::Nx && matches!(args.ttl, Ttl::At(_)) {
        if let Err(e) = crate::engine::locks::lockdep::set_nx(ctx, key, val, !blocked) {
            return e;
        }
    }
    if blocked {
        return if args.get {
            Reply::opt_bulk(old.flatten())
        } else {
            Reply::Null
        };
    }
    let db = ctx.dbi();
    let expire = match args.ttl {
        Ttl::None => None,
        Ttl::At(t) => Some(t),
        Ttl::Keep => ctx.write(key).and_then(|e| e.expire_at()),
    };
    store(
        ctx.eng,
        db,
        key.clone(),
        Value::Str(crate::storage::value::StrVal::new(val)),
        expire,
    );
    ctx.modified(key, notify::STRING, "set");
    if let Some(t) = expire {
        ctx.notify(notify::GENERIC, "expire", key);
        // An expiry in the past (EXAT/PXAT) deletes at once, as Redis does.
        if t <= ctx.now() {
            ctx.eng.expire_if_needed(db, key);
        }
        ctx.eng.deadline_changed = true;
    }
    if args.get {
        Reply::opt_bulk(old.flatten())
    } else {
        Reply::ok()
    }
}

fn set(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match parse_set(ctx, a) {
        Ok(args) => set_generic(ctx, &a[1], &a[2], args),
        Err(e) => e,
    }
}

fn setnx(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let args = SetArgs {
        cond: Cond::Nx,
        ttl: Ttl::None,
        get: false,
        ifeq: None,
    };
    match set_generic(ctx, &a[1], &a[2], args) {
        Reply::Null => Reply::Int(0),
        Reply::Error(e) => Reply::Error(e),
        _ => Reply::Int(1),
    }
}

fn setex_generic(ctx: &mut Ctx, a: &[Bytes], cmd: &str, unit: i64) -> Reply {
    let at = match expire_at(ctx, cmd, &a[2], unit, false) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let args = SetArgs {
        cond: Cond::Always,
        ttl: Ttl::At(at),
        get: false,
        ifeq: None,
    };
    set_generic(ctx, &a[1], &a[3], args)
}

fn setex(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    setex_generic(ctx, a, "setex", 1000)
}

fn psetex(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    setex_generic(ctx, a, "psetex", 1)
}

fn getset(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let args = SetArgs {
        cond: Cond::Always,
        ttl: Ttl::None,
        get: true,
        ifeq: None,
    };
    set_generic(ctx, &a[1], &a[2], args)
}

fn getdel(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_string(ctx, &a[1]) {
        Ok(Some(v)) => {
            let db = ctx.dbi();
            crate::engine::delete_key(ctx.eng, db, &a[1]);
            Reply::Bulk(v)
        }
        Ok(None) => Reply::Null,
        Err(e) => e,
    }
}

/// DELIFEQ key value (Valkey 9.0): deletes the key if it holds exactly `value`; 1 if it
/// did, 0 otherwise, WRONGTYPE for a key that is not a string.
fn delifeq(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_string_for_write(ctx, &a[1]) {
        Ok(Some(v)) if v == a[2] => {
            let db = ctx.dbi();
            crate::engine::delete_key(ctx.eng, db, &a[1]);
            Reply::Int(1)
        }
        Ok(_) => Reply::Int(0),
        Err(e) => e,
    }
}

fn getex(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    // Redis checks the syntax, then the key (nil if missing, WRONGTYPE), and only then the
    // expire value: `GETEX missing EX 0` is nil, not an invalid-expire error.
    let mut expire: Option<(&Bytes, i64, bool)> = None;
    let mut persist = false;
    let mut i = 2;
    while i < a.len() {
        let opt = a[i].to_ascii_uppercase();
        let set_once = expire.is_none() && !persist;
        match opt.as_slice() {
            b"PERSIST" if set_once => persist = true,
            b"EX" | b"PX" | b"EXAT" | b"PXAT" if set_once && i + 1 < a.len() => {
                let (unit, abs) = match opt.as_slice() {
                    b"EX" => (1000, false),
                    b"PX" => (1, false),
                    b"EXAT" => (1000, true),
                    _ => (1, true),
                };
                expire = Some((&a[i + 1], unit, abs));
                i += 1;
            }
            _ => return error::syntax(),
        }
        i += 1;
    }
    let v = match get_string(ctx, &a[1]) {
        Ok(Some(v)) => v,
        Ok(None) => return Reply::Null,
        Err(e) => return e,
    };
    let mut ttl = Ttl::None;
    if let Some((arg, unit, abs)) = expire {
        match expire_at(ctx, "getex", arg, unit, abs) {
            Ok(t) => ttl = Ttl::At(t),
            Err(e) => return e,
        }
    }
    let db = ctx.dbi();
    let key = &a[1];
    if let Ttl::At(t) = ttl {
        if t <= ctx.now() {
            crate::engine::delete_key(ctx.eng, db, key);
        } else {
            ctx.db().set_expire(key, Some(t));
            ctx.modified(key, notify::GENERIC, "expire");
            ctx.eng.deadline_changed = true;
        }
    } else if persist && ctx.write(key).is_some_and(|e| e.expire_at().is_some()) {
        ctx.db().set_expire(key, None);
        ctx.modified(key, notify::GENERIC, "persist");
    }
    Reply::Bulk(v)
}

fn mget(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    Reply::Array(
        a[1..]
            .iter()
            .map(|k| match get_string(ctx, k) {
                Ok(Some(v)) => Reply::Bulk(v),
                _ => Reply::Null,
            })
            .collect(),
    )
}

fn mset(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() % 2 == 0 {
        return error::wrong_arity(&String::from_utf8_lossy(&a[0]));
    }
    let db = ctx.dbi();
    for kv in a[1..].chunks(2) {
        store(
            ctx.eng,
            db,
            kv[0].clone(),
            Value::Str(crate::storage::value::StrVal::new(&kv[1])),
            None,
        );
        ctx.modified(&kv[0], notify::STRING, "set");
    }
    Reply::ok()
}

fn msetnx(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() % 2 == 0 {
        return error::wrong_arity(&String::from_utf8_lossy(&a[0]));
    }
    if a[1..].chunks(2).any(|kv| ctx.exists(&kv[0])) {
        return Reply::Int(0);
    }
    mset(ctx, a);
    Reply::Int(1)
}

/// MSETEX numkeys key value [key value ...] [NX | XX] [EX s | PX ms | EXAT t | PXAT t |
/// KEEPTTL] (Valkey 9.1): sets every pair, all or none under NX/XX; 1 if set, 0 if not.
fn msetex(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let n = match parse_i64(&a[1]) {
        Some(n) if n > 0 && n <= (i32::MAX / 2) as i64 => n as usize,
        _ => return Reply::err("ERR invalid numkeys value or out of range"),
    };
    let opts_at = 2 + 2 * n;
    if opts_at > a.len() {
        return error::syntax();
    }
    let mut cond = Cond::Always;
    let mut ttl_opt: Option<&'static [u8]> = None;
    let mut keep = false;
    let mut expire: Option<(&Bytes, i64, bool)> = None;
    let mut i = opts_at;
    while i < a.len() {
        let opt = a[i].to_ascii_uppercase();
        let ttl_free = ttl_opt.is_none_or(|o| o == opt.as_slice());
        match opt.as_slice() {
            b"NX" if cond != Cond::Xx => cond = Cond::Nx,
            b"XX" if cond != Cond::Nx => cond = Cond::Xx,
            b"KEEPTTL" if ttl_free => {
                keep = true;
                ttl_opt = Some(b"KEEPTTL");
            }
            b"EX" | b"PX" | b"EXAT" | b"PXAT" if ttl_free && i + 1 < a.len() => {
                let (unit, abs, name): (i64, bool, &'static [u8]) = match opt.as_slice() {
                    b"EX" => (1000, false, b"EX"),
                    b"PX" => (1, false, b"PX"),
                    b"EXAT" => (1000, true, b"EXAT"),
                    _ => (1, true, b"PXAT"),
                };
                expire = Some((&a[i + 1], unit, abs));
                ttl_opt = Some(name);
                i += 1;
            }
            _ => return error::syntax(),
        }
        i += 1;
    }
    let at = match expire {
        Some((arg, unit, abs)) => match expire_at(ctx, "msetex", arg, unit, abs) {
            Ok(t) => Some(t),
            Err(e) => return e,
        },
        None => None,
    };
    let pairs = &a[2..opts_at];
    let blocked = match cond {
        Cond::Nx => pairs.chunks(2).any(|kv| ctx.exists(&kv[0])),
        Cond::Xx => pairs.chunks(2).any(|kv| !ctx.exists(&kv[0])),
        _ => false,
    };
    if blocked {
        return Reply::Int(0);
    }
    for kv in pairs.chunks(2) {
        let args = SetArgs {
            cond: Cond::Always,
            ttl: match (keep, at) {
                (true, _) => Ttl::Keep,
                (false, Some(t)) => Ttl::At(t),
                (false, None) => Ttl::None,
            },
            get: false,
            ifeq: None,
        };
        set_generic(ctx, &kv[0], &kv[1], args);
    }
    Reply::Int(1)
}

/// Adds `by` to the integer at `key`, keeping its TTL.
fn incr_generic(ctx: &mut Ctx, key: &Bytes, by: i64) -> Reply {
    let now = ctx.now();
    let new_value = |n: i64| {
        Value::Str(crate::storage::value::StrVal::from_slice(
            itoa::Buffer::new().format(n).as_bytes(),
        ))
    };
    // One probe: the entry found is updated in place. A write lookup, as Redis' (no
    // keyspace hit or miss).
    let n = match ctx.write(key) {
        Some(e) => {
            let Value::Str(v) = &e.value else {
                return error::wrongtype();
            };
            let Some(cur) = parse_i64(v) else {
                return error::not_integer();
            };
            let Some(n) = cur.checked_add(by) else {
                return Reply::err(OVERFLOW);
            };
            e.value = new_value(n);
            e.lru_ms = now;
            e.set_raw(false);
            n
        }
        None => {
            ctx.note_new_key(key);
            ctx.db().insert(key.clone(), new_value(by), None, now);
            by
        }
    };
    ctx.modified(key, notify::STRING, "incrby");
    Reply::Int(n)
}

fn incr(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    incr_generic(ctx, &a[1], 1)
}

fn decr(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    incr_generic(ctx, &a[1], -1)
}

fn incrby(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match parse_i64(&a[2]) {
        Some(by) => incr_generic(ctx, &a[1], by),
        None => error::not_integer(),
    }
}

fn decrby(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match parse_i64(&a[2]) {
        Some(i64::MIN) => Reply::err("ERR decrement would overflow"),
        Some(by) => incr_generic(ctx, &a[1], -by),
        None => error::not_integer(),
    }
}

fn incrbyfloat(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    // Redis checks the key's type and value before the increment (unlike INCRBY), so a
    // bad increment on a hash is WRONGTYPE.
    let cur = match get_string_for_write(ctx, &a[1]) {
        Ok(Some(v)) => match parse_long_double(&v) {
            Some(n) => n,
            None => return error::not_float(),
        },
        Ok(None) => LongDouble::ZERO,
        Err(e) => return e,
    };
    let Some(by) = parse_long_double(&a[2]) else {
        return error::not_float();
    };
    let Some(n) = add_long_double(cur, by) else {
        return Reply::err(INCR_NAN);
    };
    let s = Bytes::from(fmt_long_double_human(n));
    let now = ctx.now();
    ctx.note_new_key(&a[1]);
    ctx.db().replace_value(
        &a[1],
        Value::Str(crate::storage::value::StrVal::from(s.clone())),
        now,
    );
    ctx.modified(&a[1], notify::STRING, "incrbyfloat");
    Reply::Bulk(s)
}

fn check_len(ctx: &Ctx, len: usize) -> Result<(), Reply> {
    if len > ctx.eng.config.proto_max_bulk_len {
        Err(Reply::err(STRING_TOO_LONG))
    } else {
        Ok(())
    }
}

fn append(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let cur_len = match get_len_for_write(ctx, &a[1]) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let existed = cur_len.is_some();
    let value = match cur_len {
        None => crate::storage::value::StrVal::new(&a[2]),
        Some(n) => {
            if let Err(e) = check_len(ctx, n + a[2].len()) {
                return e;
            }
            // The string's own buffer, grown where it is. Past `inline::SHARE_MIN` it
            // keeps its spare capacity, so a run of APPENDs is amortized linear, as with
            // Redis' sds; below, each APPEND reallocates at most 4 KiB.
            let (mut b, _) = match take_string(ctx, &a[1], 0) {
                Ok(v) => v,
                Err(e) => return e,
            };
            b.extend_from_slice(&a[2]);
            crate::storage::value::StrVal::from_mut(b)
        }
    };
    let len = value.len() as i64;
    let now = ctx.now();
    ctx.note_new_key(&a[1]);
    ctx.db().replace_value(&a[1], Value::Str(value), now);
    // APPEND to a missing key stores the argument as SET would (int/embstr/raw by content,
    // Redis' tryObjectEncoding); only appending to an existing string makes it raw.
    if existed {
        ctx.db().set_raw(&a[1]);
    }
    ctx.modified(&a[1], notify::STRING, "append");
    Reply::Int(len)
}

fn strlen(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match get_string(ctx, &a[1]) {
        Ok(v) => Reply::Int(v.map_or(0, |v| v.len() as i64)),
        Err(e) => e,
    }
}

fn getrange(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (Some(mut start), Some(mut end)) = (parse_i64(&a[2]), parse_i64(&a[3])) else {
        return error::not_integer();
    };
    let v = match get_string(ctx, &a[1]) {
        Ok(Some(v)) => v,
        Ok(None) => return Reply::bulk(Bytes::new()),
        Err(e) => return e,
    };
    let len = v.len() as i64;
    if start < 0 && end < 0 && start > end {
        return Reply::bulk(Bytes::new());
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return Reply::bulk(Bytes::new());
    }
    Reply::Bulk(v.slice(start as usize..=end as usize))
}

fn setrange(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let Some(offset) = parse_i64(&a[2]) else {
        return error::not_integer();
    };
    if offset < 0 {
        return Reply::err(OFFSET_OUT_OF_RANGE);
    }
    let cur = match get_string_for_write(ctx, &a[1]) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let value = &a[3];
    let cur_len = cur.as_ref().map_or(0, |c| c.len());
    if value.is_empty() {
        return Reply::Int(cur_len as i64);
    }
    if let Err(e) = check_len(ctx, offset as usize + value.len()) {
        return e;
    }
    let offset = offset as usize;
    let mut b = BytesMut::from(cur.as_deref().unwrap_or(b""));
    if b.len() < offset + value.len() {
        b.resize(offset + value.len(), 0);
    }
    b[offset..offset + value.len()].copy_from_slice(value);
    let len = b.len() as i64;
    let now = ctx.now();
    ctx.note_new_key(&a[1]);
    ctx.db().replace_value(
        &a[1],
        Value::Str(crate::storage::value::StrVal::from(b.freeze())),
        now,
    );
    ctx.db().set_raw(&a[1]);
    ctx.modified(&a[1], notify::STRING, "setrange");
    Reply::Int(len)
}

const BIT_OFFSET_ERR: &str = "ERR bit offset is not an integer or out of range";

/// A bit offset: a non-negative integer whose byte fits in proto-max-bulk-len.
fn bit_offset(ctx: &Ctx, v: &[u8]) -> Result<usize, Reply> {
    match parse_i64(v) {
        Some(n) if n >= 0 && ((n as u64) >> 3) < ctx.eng.config.proto_max_bulk_len as u64 => {
            Ok(n as usize)
        }
        _ => Err(Reply::err(BIT_OFFSET_ERR)),
    }
}

fn setbit(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let offset = match bit_offset(ctx, &a[2]) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let on = match parse_i64(&a[3]) {
        Some(b @ (0 | 1)) => b == 1,
        _ => return Reply::err("ERR bit is not an integer or out of range"),
    };
    let byte = offset >> 3;
    let (mut b, grown) = match take_string(ctx, &a[1], byte + 1) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let mask = 1u8 << (7 - (offset & 7));
    let old = b[byte] & mask != 0;
    if on {
        b[byte] |= mask;
    } else {
        b[byte] &= !mask;
    }
    put_string(ctx, &a[1], b);
    // Only a created or grown string, or a flipped bit, is a change (event, dirty).
    if grown || old != on {
        ctx.modified(&a[1], notify::STRING, "setbit");
    }
    Reply::Int(old as i64)
}

fn getbit(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let offset = match bit_offset(ctx, &a[2]) {
        Ok(o) => o,
        Err(e) => return e,
    };
    match get_string(ctx, &a[1]) {
        Ok(Some(v)) => {
            let bit = v
                .get(offset >> 3)
                .is_some_and(|b| b & (1u8 << (7 - (offset & 7))) != 0);
            Reply::Int(bit as i64)
        }
        Ok(None) => Reply::Int(0),
        Err(e) => e,
    }
}

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN], with Redis' dynamic
/// programming table and its backward walk, so ranges come out in the same order.
fn lcs(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let mut strs = [Bytes::new(), Bytes::new()];
    for (i, k) in a[1..3].iter().enumerate() {
        match get_string(ctx, k) {
            Ok(v) => strs[i] = v.unwrap_or_default(),
            Err(_) => return Reply::err("ERR The specified keys must contain string values"),
        }
    }
    let (mut getlen, mut getidx, mut withmatchlen, mut minmatchlen) = (false, false, false, 0i64);
    let mut j = 3;
    while j < a.len() {
        let opt = &a[j];
        if opt.eq_ignore_ascii_case(b"idx") {
            getidx = true;
        } else if opt.eq_ignore_ascii_case(b"len") {
            getlen = true;
        } else if opt.eq_ignore_ascii_case(b"withmatchlen") {
            withmatchlen = true;
        } else if opt.eq_ignore_ascii_case(b"minmatchlen") && j + 1 < a.len() {
            match parse_i64(&a[j + 1]) {
                Some(n) => minmatchlen = n.max(0),
                None => return error::not_integer(),
            }
            j += 1;
        } else {
            return error::syntax();
        }
        j += 1;
    }
    if getidx && getlen {
        return Reply::err("ERR If you want both the length and indexes, please just use IDX.");
    }
    let (sa, sb) = (&strs[0][..], &strs[1][..]);
    let (alen, blen) = (sa.len(), sb.len());
    let cells = (alen + 1).saturating_mul(blen + 1);
    // Redis refuses when it cannot allocate the table; we refuse beyond a 256 MiB table
    // (about 8000 x 8000 bytes) so one LCS cannot exhaust memory under the keyspace lock.
    if cells > (1 << 26) {
        return Reply::err("ERR Insufficient memory, failed allocating transient memory for LCS");
    }
    let w = blen + 1;
    let mut t = vec![0u32; cells];
    for i in 1..=alen {
        for jj in 1..=blen {
            t[i * w + jj] = if sa[i - 1] == sb[jj - 1] {
                t[(i - 1) * w + jj - 1] + 1
            } else {
                t[(i - 1) * w + jj].max(t[i * w + jj - 1])
            };
        }
    }
    let total = t[alen * w + blen] as usize;
    let mut idx = total;
    let mut result = vec![0u8; total];
    let mut matches = Vec::new();
    let computelcs = getidx || !getlen;
    let (mut i, mut jj) = (alen, blen);
    // `alen` as arange_start means "no range open".
    let (mut as_, mut ae, mut bs, mut be) = (alen, 0usize, 0usize, 0usize);
    while computelcs && i > 0 && jj > 0 {
        let mut emit = false;
        if sa[i - 1] == sb[jj - 1] {
            result[idx - 1] = sa[i - 1];
            if as_ == alen {
                as_ = i - 1;
                ae = i - 1;
                bs = jj - 1;
                be = jj - 1;
            } else if as_ == i && bs == jj {
                as_ -= 1;
                bs -= 1;
            } else {
                emit = true;
            }
            if as_ == 0 || bs == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            jj -= 1;
        } else {
            if t[(i - 1) * w + jj] > t[i * w + jj - 1] {
                i -= 1;
            } else {
                jj -= 1;
            }
            if as_ != alen {
                emit = true;
            }
        }
        let match_len = ae.wrapping_sub(as_).wrapping_add(1);
        if emit {
            if getidx && (minmatchlen == 0 || match_len as i64 >= minmatchlen) {
                let mut m = vec![
                    Reply::Array(vec![Reply::Int(as_ as i64), Reply::Int(ae as i64)]),
                    Reply::Array(vec![Reply::Int(bs as i64), Reply::Int(be as i64)]),
                ];
                if withmatchlen {
                    m.push(Reply::Int(match_len as i64));
                }
                matches.push(Reply::Array(m));
            }
            as_ = alen;
        }
    }
    if getidx {
        Reply::Map(vec![
            (Reply::bulk_str("matches"), Reply::Array(matches)),
            (Reply::bulk_str("len"), Reply::Int(total as i64)),
        ])
    } else if getlen {
        Reply::Int(total as i64)
    } else {
        Reply::Bulk(Bytes::from(result))
    }
}

/// The string at `key` for in-place bit writes, grown with zero bytes to `min_len`
/// (a missing key is an empty string), and whether it was created or grown (Redis'
/// lookupStringForBitCommand). WRONGTYPE for other types.
pub(crate) fn take_string(
    ctx: &mut Ctx,
    key: &Bytes,
    min_len: usize,
) -> Result<(BytesMut, bool), Reply> {
    let (mut b, mut grown) = match ctx.write(key) {
        None => (BytesMut::new(), true),
        Some(e) => match &mut e.value {
            Value::Str(s) => (std::mem::take(s).into_mut(), false),
            _ => return Err(error::wrongtype()),
        },
    };
    if b.len() < min_len {
        b.resize(min_len, 0);
        grown = true;
    }
    Ok((b, grown))
}

/// Stores a string written by [`take_string`] back, keeping the key's TTL.
pub(crate) fn put_string(ctx: &mut Ctx, key: &Bytes, s: BytesMut) {
    let now = ctx.now();
    ctx.note_new_key(key);
    ctx.db().replace_value(
        key,
        Value::Str(crate::storage::value::StrVal::from_mut(s)),
        now,
    );
    ctx.db().set_raw(key);
}
