//! Hash field expiration: HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT, HTTL, HPTTL,
//! HEXPIRETIME, HPEXPIRETIME, HPERSIST (Redis 7.4, Valkey 9.0) and HGETEX, HSETEX (Redis
//! 8.0, Valkey 9.0), HGETDEL (Redis 8.0, Valkey 9.1).
//!
//! A field's TTL lives in its hash (storage/value.rs, `HashTable`); the db keeps an index
//! of the hashes with TTLs for active expiry (storage/db.rs, `hfe`), and every hash
//! command skips or lazily deletes expired fields (hashes.rs). Replies follow Redis'
//! `t_hash.c` per field: -2 no such field, 0 condition not met, 1 done, 2 deleted (a
//! deadline already past). Valkey parses the arguments its own way and words its errors
//! differently: `Style` picks the personality's.

use bytes::Bytes;

use crate::engine::spec::{flag::*, since, CommandSpec, Ctx, Keys, KEY1};
use crate::error;
use crate::num::parse_i64;
use crate::personality::Since;
use crate::reply::Reply;
use crate::storage::notify;
use crate::storage::value::{HashValue, Value};

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    crate::engine::spec::engine("hash", &["hash"], name, arity, flags, keys, h)
}

pub static COMMANDS: &[CommandSpec] = &[
    since(
        Since::both(704, 900),
        cmd("hexpire", -6, WRITE | FAST, KEY1, hexpire),
    ),
    since(
        Since::both(704, 900),
        cmd("hpexpire", -6, WRITE | FAST, KEY1, hpexpire),
    ),
    since(
        Since::both(704, 900),
        cmd("hexpireat", -6, WRITE | FAST, KEY1, hexpireat),
    ),
    since(
        Since::both(704, 900),
        cmd("hpexpireat", -6, WRITE | FAST, KEY1, hpexpireat),
    ),
    since(
        Since::both(704, 900),
        cmd("httl", -5, READONLY | FAST, KEY1, httl),
    ),
    since(
        Since::both(704, 900),
        cmd("hpttl", -5, READONLY | FAST, KEY1, hpttl),
    ),
    since(
        Since::both(704, 900),
        cmd("hexpiretime", -5, READONLY | FAST, KEY1, hexpiretime),
    ),
    since(
        Since::both(704, 900),
        cmd("hpexpiretime", -5, READONLY | FAST, KEY1, hpexpiretime),
    ),
    since(
        Since::both(704, 900),
        cmd("hpersist", -5, WRITE | FAST, KEY1, hpersist),
    ),
    since(
        Since::both(800, 900),
        cmd("hgetex", -5, WRITE | FAST, KEY1, hgetex),
    ),
    since(
        Since::both(800, 900),
        cmd("hsetex", -6, WRITE | DENYOOM | FAST, KEY1, hsetex),
    ),
    since(
        Since::both(800, 901),
        cmd("hgetdel", -5, WRITE | FAST, KEY1, hgetdel),
    ),
];

/// Reads the hash at `key` (HTTL's lookup: stats, lazy key expiry, WRONGTYPE).
fn get_hash<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Result<Option<&'a mut HashValue>, Reply> {
    match ctx.read(key) {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::Hash(h) => Ok(Some(h)),
            _ => Err(error::wrongtype()),
        },
    }
}

/// The hash at `key`, created empty if absent (the caller must leave it non-empty).
fn hash_for_write<'a>(ctx: &'a mut Ctx, key: &Bytes) -> Result<&'a mut HashValue, Reply> {
    match &mut ctx
        .write_or_create(key, || Value::Hash(HashValue::default()))
        .value
    {
        Value::Hash(h) => Ok(h),
        _ => Err(error::wrongtype()),
    }
}

/// The largest field deadline Redis accepts, in Unix ms (`EB_EXPIRE_TIME_MAX >> 2`).
const REDIS_MAX_MS: i64 = ((1i64 << 48) - 1) >> 2;

const NUMFIELDS_MISMATCH: &str = "ERR The `numfields` parameter must match the number of arguments";
const FIELDS_MISSING: &str =
    "ERR Mandatory argument FIELDS is missing or not at the right position";
const NUMFIELDS_POSITIVE: &str = "ERR Number of fields must be a positive integer";
const VALKEY_NUMFIELDS: &str =
    "ERR numfields should be greater than 0 and match the provided number of fields";

/// Per-field results of setting a TTL (Redis' `SetExRes`).
const NO_FIELD: i64 = -2;
const NO_CONDITION: i64 = 0;
const SET_OK: i64 = 1;
const DELETED: i64 = 2;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cond {
    None,
    Nx,
    Xx,
    Gt,
    Lt,
}

fn valkey(ctx: &Ctx) -> bool {
    ctx.eng.config.personality.is_valkey()
}

/// Reads the hash at `key` for a command that may write it: `Ok(None)` if absent.
fn hash_write<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Result<Option<&'a mut HashValue>, Reply> {
    match ctx.write(key) {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::Hash(h) => Ok(Some(h)),
            _ => Err(error::wrongtype()),
        },
    }
}

/// The hash at `key` in the current db, found without any lookup side effect.
fn hash_mut<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Option<&'a mut HashValue> {
    let db = ctx.dbi();
    match ctx.eng.dbs[db].get_mut(key).map(|e| &mut e.value) {
        Some(Value::Hash(h)) => Some(h),
        _ => None,
    }
}

/// Deletes `field` of the hash at `key` because its TTL passed (Redis' lazy expiry in
/// `hashTypeGetValue`): with `events`, `hexpired` (and `del` for the last field); with
/// `del_hash`, an emptied hash is deleted. Returns true if the hash was deleted.
pub fn drop_expired_field(
    ctx: &mut Ctx,
    key: &Bytes,
    field: &[u8],
    events: bool,
    del_hash: bool,
) -> bool {
    // Valkey hides an expired field from reads and leaves it to active expiry.
    if valkey(ctx) {
        return false;
    }
    let empty = match hash_mut(ctx, key) {
        Some(h) => {
            if !h.remove(field) {
                return false;
            }
            h.is_empty()
        }
        None => return false,
    };
    ctx.eng.stats.expired_subkeys += 1;
    let db = ctx.dbi();
    if events {
        ctx.notify(notify::HASH, "hexpired", key);
    }
    let mut deleted = false;
    if empty && del_hash {
        ctx.eng.dbs[db].remove(key);
        if events {
            ctx.notify(notify::GENERIC, "del", key);
        }
        deleted = true;
    }
    if events {
        ctx.eng.touch_watched(db, key);
    }
    deleted
}

/// Before a write that reads `field` (HSETNX, HINCRBY, HINCRBYFLOAT): an expired field
/// is deleted first. Redis does it as a read does ([`drop_expired_field`]); Valkey
/// silently, the write then setting the field anew.
pub fn expire_field_on_write(ctx: &mut Ctx, key: &Bytes, field: &[u8]) {
    if valkey(ctx) {
        if let Some(h) = hash_mut(ctx, key) {
            h.remove(field);
        }
        return;
    }
    drop_expired_field(ctx, key, field, true, true);
}

/// After a command changed field TTLs: the db's index learns the hash's earliest one.
fn note_ttls(ctx: &mut Ctx, key: &[u8]) {
    let db = ctx.dbi();
    let min = hash_mut(ctx, key).and_then(|h| h.min_ttl());
    if let Some(t) = min {
        let before = ctx.eng.dbs[db].hfe_next();
        ctx.eng.dbs[db].hfe_note(key, t);
        if before.is_none_or(|b| t < b) {
            ctx.eng.deadline_changed = true;
        }
    }
}

/// The events of a command that set field TTLs: Redis sends `hdel` if a deadline already
/// past deleted a field, else `hexpire`; Valkey sends `hexpire` for the TTLs set and
/// `hexpired` for the fields deleted. `after_write`: the command's write epilogue ran
/// already (HSETEX's `hset`).
fn ttl_events(
    ctx: &mut Ctx,
    key: &Bytes,
    valkey: bool,
    updated: bool,
    deleted: bool,
    after_write: bool,
) {
    let mut events: Vec<&str> = Vec::new();
    if valkey {
        if updated {
            events.push("hexpire");
        }
        if deleted {
            events.push("hexpired");
        }
    } else if deleted {
        events.push("hdel");
    } else if updated {
        events.push("hexpire");
    }
    for (i, ev) in events.into_iter().enumerate() {
        if i == 0 && !after_write {
            ctx.modified(key, notify::HASH, ev);
        } else {
            ctx.notify(notify::HASH, ev, key);
        }
    }
}

/// Deletes the hash at `key` if the command left it empty, with the `del` event.
fn delete_if_empty(ctx: &mut Ctx, key: &Bytes) -> bool {
    if hash_mut(ctx, key).is_some_and(|h| h.is_empty()) {
        let db = ctx.dbi();
        ctx.eng.dbs[db].remove(key);
        ctx.notify(notify::GENERIC, "del", key);
        return true;
    }
    false
}

/// Redis' `parseExpireTime`: `val` in `ms` (else seconds) after `base`, as a deadline in
/// Unix ms; Valkey has no 48-bit bound, only overflow.
fn parse_expire(ctx: &Ctx, cmd: &str, arg: &[u8], ms: bool, base: i64) -> Result<i64, Reply> {
    let Some(v) = parse_i64(arg) else {
        return Err(error::not_integer());
    };
    let invalid = || error::invalid_expire(cmd);
    if v < 0 {
        return Err(if valkey(ctx) {
            invalid()
        } else {
            Reply::err("ERR invalid expire time, must be >= 0")
        });
    }
    if valkey(ctx) {
        let v = if ms { Some(v) } else { v.checked_mul(1000) };
        return v.and_then(|v| v.checked_add(base)).ok_or_else(invalid);
    }
    let mut v = v;
    if !ms {
        if v > REDIS_MAX_MS / 1000 {
            return Err(invalid());
        }
        v *= 1000;
    }
    if v > REDIS_MAX_MS - base {
        return Err(invalid());
    }
    Ok(v + base)
}

/// `FIELDS numfields field...` at `a[at..]`: the fields, or the personality's error.
/// `zero_msg` is Redis' message for a bad count (it differs between commands); `family`
/// is Valkey's wording family (`Ttl`: HTTL and its siblings answer "syntax error").
fn parse_fields<'a>(
    ctx: &Ctx,
    a: &'a [Bytes],
    at: usize,
    zero_msg: &'static str,
    ttl_family: bool,
) -> Result<&'a [Bytes], Reply> {
    if valkey(ctx) {
        let bad = || {
            if ttl_family {
                error::syntax()
            } else {
                Reply::err(VALKEY_NUMFIELDS)
            }
        };
        if at >= a.len() || !a[at].eq_ignore_ascii_case(b"fields") {
            return Err(if ttl_family {
                error::syntax()
            } else {
                Reply::err(VALKEY_NUMFIELDS)
            });
        }
        let Some(n) = a.get(at + 1).and_then(|n| parse_i64(n)) else {
            return Err(if a.get(at + 1).is_none() {
                bad()
            } else {
                error::not_integer()
            });
        };
        if n <= 0 || n as usize != a.len() - at - 2 {
            return Err(bad());
        }
        return Ok(&a[at + 2..]);
    }
    if at >= a.len() || !a[at].eq_ignore_ascii_case(b"fields") {
        return Err(Reply::err(FIELDS_MISSING));
    }
    let n = match a.get(at + 1).and_then(|n| parse_i64(n)) {
        Some(n) if n >= 1 => n,
        _ => return Err(Reply::err(zero_msg)),
    };
    if n as usize != a.len() - at - 2 || a.len() < at + 2 {
        return Err(Reply::err(NUMFIELDS_MISMATCH));
    }
    Ok(&a[at + 2..])
}

/// Redis' `hashTypeSetEx` for one field: sets (`Some`) or removes (`None`) its TTL under
/// `cond`, deleting it if the deadline is not after `now`. The hash must be prepared.
///
/// `min_fields` tracks, as Redis' `HashTypeSetEx.minExpireFields`, the earliest of the
/// changed fields' old and new deadlines (for [`SetEx::done`]).
fn set_field_ttl(
    h: &mut HashValue,
    field: &[u8],
    at: Option<i64>,
    cond: Cond,
    now: i64,
    min_fields: &mut i64,
) -> i64 {
    if !h.contains(field) {
        return NO_FIELD;
    }
    let prev = h.ttl(field);
    let Some(at) = at else {
        if prev.is_none() {
            return NO_CONDITION;
        }
        h.set_ttl(field, None);
        return SET_OK;
    };
    match prev {
        None if matches!(cond, Cond::Xx | Cond::Gt) => return NO_CONDITION,
        Some(p)
            if (cond == Cond::Gt && p >= at)
                || (cond == Cond::Lt && p <= at)
                || cond == Cond::Nx =>
        {
            return NO_CONDITION
        }
        _ => {}
    }
    if let Some(p) = prev {
        *min_fields = (*min_fields).min(p);
    }
    if at <= now {
        h.remove(field);
        return DELETED;
    }
    *min_fields = (*min_fields).min(at);
    h.set_ttl(field, Some(at));
    SET_OK
}

/// Redis' `hashTypeSetExInit` / `hashTypeSetExDone` around TTL changes: the hash's
/// registered earliest TTL (`HashTable::meta_min`) moves only when a changed field could
/// have moved it, and by 4 s or more.
struct SetEx {
    init: i64,
    min_fields: i64,
}

/// "No deadline" in Redis' unsigned comparisons.
const INVALID: i64 = i64::MAX;

impl SetEx {
    fn start(h: &HashValue) -> SetEx {
        SetEx {
            init: h.meta_min().unwrap_or(INVALID),
            min_fields: INVALID,
        }
    }

    fn done(self, h: &mut HashValue) {
        if h.is_empty() || self.init < self.min_fields {
            return;
        }
        let new = h.min_ttl().unwrap_or(INVALID);
        if self.init.abs_diff(new) < 4000 {
            return;
        }
        h.set_meta_min((new != INVALID).then_some(new));
    }
}

/// Readies a hash for field TTLs: Redis makes a listpack a "listpackex", Valkey a
/// "hashtable".
fn prepare(h: &mut HashValue, valkey: bool) {
    if valkey {
        if !h.is_table() || h.is_listpackex() {
            h.convert();
        }
    } else {
        h.prepare_ttls();
    }
}

// ---------------------------------------------------------------- HEXPIRE family

pub fn hexpire(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    hexpire_generic(ctx, a, "hexpire", false, now)
}
pub fn hpexpire(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    hexpire_generic(ctx, a, "hpexpire", true, now)
}
pub fn hexpireat(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    hexpire_generic(ctx, a, "hexpireat", false, 0)
}
pub fn hpexpireat(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    hexpire_generic(ctx, a, "hpexpireat", true, 0)
}

fn cond_of(s: &[u8]) -> Option<Cond> {
    [
        (&b"nx"[..], Cond::Nx),
        (b"xx", Cond::Xx),
        (b"gt", Cond::Gt),
        (b"lt", Cond::Lt),
    ]
    .into_iter()
    .find(|(n, _)| s.eq_ignore_ascii_case(n))
    .map(|(_, c)| c)
}

/// Valkey's `[NX|XX|GT|LT]...` before FIELDS: repeats allowed, incompatible pairs refused
/// as EXPIRE refuses them. Returns the condition and where FIELDS should be.
fn valkey_conds(a: &[Bytes], mut at: usize) -> Result<(Cond, usize), Reply> {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    while at < a.len() {
        match cond_of(&a[at]) {
            Some(Cond::Nx) => nx = true,
            Some(Cond::Xx) => xx = true,
            Some(Cond::Gt) => gt = true,
            Some(Cond::Lt) => lt = true,
            _ => break,
        }
        at += 1;
    }
    if nx && (xx || gt || lt) {
        return Err(Reply::err(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(Reply::err(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    let c = if nx {
        Cond::Nx
    } else if gt {
        Cond::Gt
    } else if lt {
        Cond::Lt
    } else if xx {
        Cond::Xx
    } else {
        Cond::None
    };
    Ok((c, at))
}

fn hexpire_generic(ctx: &mut Ctx, a: &[Bytes], cmd: &str, ms: bool, base: i64) -> Reply {
    let now = ctx.now();
    let vk = valkey(ctx);
    let exists = match hash_write(ctx, &a[1]) {
        Ok(h) => h.is_some(),
        Err(e) => return e,
    };
    let at = match parse_expire(ctx, cmd, &a[2], ms, base) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let (cond, fields_at) = if vk {
        match valkey_conds(a, 3) {
            Ok(c) => c,
            Err(e) => return e,
        }
    } else {
        match cond_of(&a[3]) {
            Some(c) => (c, 4),
            None => (Cond::None, 3),
        }
    };
    let fields = match parse_fields(
        ctx,
        a,
        fields_at,
        "ERR Parameter `numFields` should be greater than 0",
        false,
    ) {
        Ok(f) => f,
        Err(e) => return e,
    };
    if !exists {
        return Reply::Array(fields.iter().map(|_| Reply::Int(NO_FIELD)).collect());
    }
    let h = hash_mut(ctx, &a[1]).expect("looked up above");
    prepare(h, vk);
    let mut ex = SetEx::start(h);
    let codes: Vec<i64> = fields
        .iter()
        .map(|f| set_field_ttl(h, f, Some(at), cond, now, &mut ex.min_fields))
        .collect();
    ex.done(h);
    let deleted = codes.iter().filter(|&&c| c == DELETED).count();
    let updated = codes.iter().filter(|&&c| c == SET_OK).count();
    ctx.eng.stats.expired_subkeys += deleted as u64;
    ttl_events(ctx, &a[1], vk, updated > 0, deleted > 0, false);
    if !delete_if_empty(ctx, &a[1]) {
        note_ttls(ctx, &a[1]);
    }
    Reply::Array(codes.into_iter().map(Reply::Int).collect())
}

// ---------------------------------------------------------------- HTTL family

pub fn httl(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    httl_generic(ctx, a, false, now)
}
pub fn hpttl(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    httl_generic(ctx, a, true, now)
}
pub fn hexpiretime(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    httl_generic(ctx, a, false, 0)
}
pub fn hpexpiretime(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    httl_generic(ctx, a, true, 0)
}

fn httl_generic(ctx: &mut Ctx, a: &[Bytes], ms: bool, base: i64) -> Reply {
    let now = ctx.now();
    if let Err(e) = get_hash(ctx, &a[1]) {
        return e;
    }
    let fields = match parse_fields(ctx, a, 2, NUMFIELDS_POSITIVE, true) {
        Ok(f) => f,
        Err(e) => return e,
    };
    let Some(h) = hash_mut(ctx, &a[1]) else {
        return Reply::Array(fields.iter().map(|_| Reply::Int(NO_FIELD)).collect());
    };
    let lpex = h.is_listpackex();
    Reply::Array(
        fields
            .iter()
            .map(|f| {
                if !h.contains(f) {
                    return Reply::Int(NO_FIELD);
                }
                let Some(t) = h.ttl(f) else {
                    return Reply::Int(-1);
                };
                // Redis' listpackex reads a field as gone at its deadline, a hashtable
                // only after it.
                if t < now || (lpex && t == now) {
                    return Reply::Int(NO_FIELD);
                }
                Reply::Int(if ms {
                    t - base
                } else {
                    (t + 999 - base) / 1000
                })
            })
            .collect(),
    )
}

// ---------------------------------------------------------------- HPERSIST

pub fn hpersist(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    let exists = match hash_write(ctx, &a[1]) {
        Ok(h) => h.is_some(),
        Err(e) => return e,
    };
    let fields = match parse_fields(ctx, a, 2, NUMFIELDS_POSITIVE, false) {
        Ok(f) => f,
        Err(e) => return e,
    };
    if !exists {
        return Reply::Array(fields.iter().map(|_| Reply::Int(NO_FIELD)).collect());
    }
    let h = hash_mut(ctx, &a[1]).expect("looked up above");
    let mut changed = false;
    let codes: Vec<Reply> = fields
        .iter()
        .map(|f| {
            if !h.contains(f) {
                return Reply::Int(NO_FIELD);
            }
            match h.ttl(f) {
                None => Reply::Int(-1),
                Some(t) if t < now => Reply::Int(NO_FIELD),
                Some(_) => {
                    h.set_ttl(f, None);
                    changed = true;
                    Reply::Int(1)
                }
            }
        })
        .collect();
    if changed {
        ctx.modified(&a[1], notify::HASH, "hpersist");
    }
    Reply::Array(codes)
}

// ---------------------------------------------------------------- HGETDEL

pub fn hgetdel(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    let vk = valkey(ctx);
    let exists = match hash_write(ctx, &a[1]) {
        Ok(h) => h.is_some(),
        Err(e) => return e,
    };
    let fields = if valkey(ctx) {
        if !a[2].eq_ignore_ascii_case(b"fields") {
            return error::syntax();
        }
        parse_fields(ctx, a, 2, NUMFIELDS_POSITIVE, false)
    } else {
        parse_fields(ctx, a, 2, NUMFIELDS_POSITIVE, false)
    };
    let fields = match fields {
        Ok(f) => f,
        Err(e) => return e,
    };
    if !exists {
        return Reply::Array(fields.iter().map(|_| Reply::Null).collect());
    }
    let h = hash_mut(ctx, &a[1]).expect("looked up above");
    let had_ttls = h.has_ttls();
    let (mut expired, mut deleted) = (0, 0);
    let out: Vec<Reply> = fields
        .iter()
        .map(|f| {
            if h.is_expired(f, now) {
                // Valkey hides it; Redis deletes it (no event of its own).
                if !vk {
                    h.remove(f);
                    expired += 1;
                }
                return Reply::Null;
            }
            match h.get_bytes(f) {
                Some(v) => {
                    h.remove(f);
                    deleted += 1;
                    Reply::Bulk(v)
                }
                None => Reply::Null,
            }
        })
        .collect();
    if had_ttls && !h.has_ttls() {
        h.set_meta_min(None);
    }
    ctx.eng.stats.expired_subkeys += expired;
    if expired > 0 {
        ctx.modified(&a[1], notify::HASH, "hexpired");
    }
    if deleted > 0 {
        ctx.modified(&a[1], notify::HASH, "hdel");
    }
    if expired + deleted > 0 {
        delete_if_empty(ctx, &a[1]);
    }
    Reply::Array(out)
}

// ---------------------------------------------------------------- HGETEX

#[derive(Clone, Copy, PartialEq, Eq)]
enum GetEx {
    None,
    At(i64),
    Persist,
}

pub fn hgetex(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    let vk = valkey(ctx);
    let exists = match hash_write(ctx, &a[1]) {
        Ok(h) => h.is_some(),
        Err(e) => return e,
    };
    let opt = a[2].to_ascii_lowercase();
    let timed = match opt.as_slice() {
        b"ex" => Some((false, now)),
        b"px" => Some((true, now)),
        b"exat" => Some((false, 0)),
        b"pxat" => Some((true, 0)),
        _ => None,
    };
    let (mode, fields_at) = if let Some((ms, base)) = timed {
        if vk && a.len() > 3 && a[3].eq_ignore_ascii_case(b"fields") {
            return error::syntax();
        }
        match parse_expire(ctx, "hgetex", &a[3], ms, base) {
            Ok(t) => (GetEx::At(t), 4),
            Err(e) => return e,
        }
    } else if opt == b"persist" {
        (GetEx::Persist, 3)
    } else {
        (GetEx::None, 2)
    };
    if vk
        && !a
            .get(fields_at)
            .is_some_and(|f| f.eq_ignore_ascii_case(b"fields"))
    {
        return error::syntax();
    }
    let fields = match parse_fields(ctx, a, fields_at, NUMFIELDS_POSITIVE, false) {
        Ok(f) => f,
        Err(e) => return e,
    };
    if !exists {
        return Reply::Array(fields.iter().map(|_| Reply::Null).collect());
    }
    let h = hash_mut(ctx, &a[1]).expect("looked up above");
    // Valkey converts the hash for field TTLs only when a field gets one: HGETEX of fields
    // that do not exist leaves its encoding (and MEMORY USAGE) alone.
    if mode != GetEx::None
        && (!vk
            || fields
                .iter()
                .any(|f| h.get_bytes(f).is_some() && !h.is_expired(f, now)))
    {
        prepare(h, vk);
    }
    let mut ex = SetEx::start(h);
    let (mut expired, mut deleted, mut updated) = (0u64, 0, 0);
    let out: Vec<Reply> = fields
        .iter()
        .map(|f| {
            if h.is_expired(f, now) {
                if !vk {
                    h.remove(f);
                    expired += 1;
                }
                return Reply::Null;
            }
            let Some(v) = h.get_bytes(f) else {
                return Reply::Null;
            };
            let code = match mode {
                GetEx::None => NO_CONDITION,
                GetEx::At(t) => set_field_ttl(h, f, Some(t), Cond::None, now, &mut ex.min_fields),
                GetEx::Persist => set_field_ttl(h, f, None, Cond::None, now, &mut ex.min_fields),
            };
            match code {
                DELETED => deleted += 1,
                SET_OK => updated += 1,
                _ => {}
            }
            Reply::Bulk(v)
        })
        .collect();
    if mode != GetEx::None {
        ex.done(h);
    }
    ctx.eng.stats.expired_subkeys += expired + deleted as u64;
    if expired > 0 {
        ctx.modified(&a[1], notify::HASH, "hexpired");
    }
    if updated > 0 && mode == GetEx::Persist {
        ctx.modified(&a[1], notify::HASH, "hpersist");
    } else {
        ttl_events(ctx, &a[1], vk, updated > 0, deleted > 0, false);
    }
    if !delete_if_empty(ctx, &a[1]) {
        note_ttls(ctx, &a[1]);
    }
    Reply::Array(out)
}

// ---------------------------------------------------------------- HSETEX

#[derive(Default)]
struct SetExArgs {
    fxx: bool,
    fnx: bool,
    keepttl: bool,
    at: Option<i64>,
    fields_at: usize,
}

/// HSETEX's options up to FIELDS, as Redis parses them.
fn hsetex_args_redis(ctx: &Ctx, a: &[Bytes], now: i64) -> Result<SetExArgs, Reply> {
    let mut o = SetExArgs::default();
    let arity = || error::wrong_arity("hsetex");
    let expiry_twice =
        || Reply::err("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified");
    let mut i = 2;
    while i < a.len() {
        let w = a[i].to_ascii_lowercase();
        match w.as_slice() {
            b"fields" => {
                if i + 3 >= a.len() {
                    return Err(arity());
                }
                let n = match parse_i64(&a[i + 1]) {
                    Some(n) if (1..=i32::MAX as i64).contains(&n) => n as usize,
                    _ => return Err(Reply::err("ERR invalid number of fields")),
                };
                let rest = a.len() - i - 2;
                if rest % 2 != 0 || n != rest / 2 {
                    return Err(arity());
                }
                o.fields_at = i + 2;
                return Ok(o);
            }
            b"ex" | b"px" | b"exat" | b"pxat" => {
                if o.at.is_some() || o.keepttl {
                    return Err(expiry_twice());
                }
                if i + 1 >= a.len() {
                    return Err(Reply::err("ERR missing expire time"));
                }
                let ms = w[0] == b'p';
                let base = if w.len() == 2 { now } else { 0 };
                o.at = Some(parse_expire(ctx, "hsetex", &a[i + 1], ms, base)?);
                i += 1;
            }
            b"keepttl" => {
                if o.at.is_some() || o.keepttl {
                    return Err(expiry_twice());
                }
                o.keepttl = true;
            }
            b"fxx" | b"fnx" => {
                if o.fxx || o.fnx {
                    return Err(Reply::err(
                        "ERR Only one of FXX or FNX arguments can be specified",
                    ));
                }
                if w == b"fxx" {
                    o.fxx = true;
                } else {
                    o.fnx = true;
                }
            }
            _ => {
                return Err(Reply::err(format!(
                    "ERR unknown argument: {}",
                    String::from_utf8_lossy(&a[i])
                )))
            }
        }
        i += 1;
    }
    Err(arity())
}

/// HSETEX's options as Valkey parses them: the same option twice is accepted, two
/// different expiry options or FNX with FXX are a syntax error.
fn hsetex_args_valkey(ctx: &Ctx, a: &[Bytes], now: i64) -> Result<SetExArgs, Reply> {
    let mut o = SetExArgs::default();
    let mut kind: Option<Vec<u8>> = None;
    let mut i = 2;
    while i < a.len() {
        let w = a[i].to_ascii_lowercase();
        match w.as_slice() {
            b"fields" => {
                let n = match a.get(i + 1) {
                    None => return Err(Reply::err(VALKEY_NUMFIELDS)),
                    Some(n) => match parse_i64(n) {
                        Some(n) => n,
                        None => return Err(error::not_integer()),
                    },
                };
                let rest = a.len() - i - 2;
                if n <= 0 || rest % 2 != 0 || n as usize != rest / 2 {
                    return Err(Reply::err(VALKEY_NUMFIELDS));
                }
                o.fields_at = i + 2;
                return Ok(o);
            }
            b"ex" | b"px" | b"exat" | b"pxat" | b"keepttl" => {
                if kind.as_ref().is_some_and(|k| *k != w) {
                    return Err(error::syntax());
                }
                if w == b"keepttl" {
                    o.keepttl = true;
                } else {
                    let Some(t) = a.get(i + 1) else {
                        return Err(error::syntax());
                    };
                    let ms = w[0] == b'p';
                    let base = if w.len() == 2 { now } else { 0 };
                    o.at = Some(parse_expire(ctx, "hsetex", t, ms, base)?);
                    i += 1;
                }
                kind = Some(w);
            }
            b"fxx" | b"fnx" => {
                if (w == b"fxx" && o.fnx) || (w == b"fnx" && o.fxx) {
                    return Err(error::syntax());
                }
                if w == b"fxx" {
                    o.fxx = true;
                } else {
                    o.fnx = true;
                }
            }
            _ => return Err(error::syntax()),
        }
        i += 1;
    }
    Err(error::syntax())
}

pub fn hsetex(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let now = ctx.now();
    let vk = valkey(ctx);
    let o = match if vk {
        hsetex_args_valkey(ctx, a, now)
    } else {
        hsetex_args_redis(ctx, a, now)
    } {
        Ok(o) => o,
        Err(e) => return e,
    };
    let pairs = &a[o.fields_at..];
    let exists = match hash_write(ctx, &a[1]) {
        Ok(h) => h.is_some(),
        Err(e) => return e,
    };
    if !exists && o.fxx {
        return Reply::Int(0);
    }
    let (me, mv) = (
        ctx.eng.config.hash_max_listpack_entries,
        ctx.eng.config.hash_max_listpack_value,
    );
    let h = match hash_for_write(ctx, &a[1]) {
        Ok(h) => h,
        Err(e) => return e,
    };
    if o.fxx || o.fnx {
        // Expired fields read as absent and are deleted silently (no event), as Redis'
        // HFE_LAZY_NO_NOTIFICATION lookups.
        let mut found = 0;
        for f in pairs.iter().step_by(2) {
            let mut here = h.contains(f);
            if here && h.is_expired(f, now) {
                if !vk {
                    h.remove(f);
                }
                here = false;
            }
            found += here as usize;
            if (o.fxx && !here) || (o.fnx && here) {
                break;
            }
        }
        let n = pairs.len() / 2;
        if (o.fnx && found != 0) || (o.fxx && found != n) {
            delete_if_empty(ctx, &a[1]);
            return Reply::Int(0);
        }
    }
    let h = hash_mut(ctx, &a[1]).expect("created above");
    if !h.is_table() || h.is_listpackex() {
        let long = pairs.iter().any(|s| s.len() > mv);
        if pairs.len() / 2 > me || long {
            h.convert();
        }
    }
    if o.at.is_some() {
        prepare(h, vk);
    }
    let keep = o.at.is_some() || o.keepttl;
    let (mut updated, mut deleted) = (0, 0);
    let mut ex = SetEx::start(h);
    for fv in pairs.chunks(2) {
        h.set_with(&fv[0], &fv[1], me, mv, keep);
        if let Some(t) = o.at {
            match set_field_ttl(h, &fv[0], Some(t), Cond::None, now, &mut ex.min_fields) {
                SET_OK => updated += 1,
                DELETED => deleted += 1,
                _ => {}
            }
        }
    }
    if o.at.is_some() {
        ex.done(h);
    }
    ctx.eng.stats.expired_subkeys += deleted as u64;
    ctx.modified(&a[1], notify::HASH, "hset");
    // Valkey's HSETEX announces the TTL even of the fields a past deadline deletes.
    ttl_events(
        ctx,
        &a[1],
        vk,
        updated > 0 || (vk && deleted > 0),
        deleted > 0,
        true,
    );
    if !delete_if_empty(ctx, &a[1]) {
        note_ttls(ctx, &a[1]);
    }
    Reply::Int(1)
}
