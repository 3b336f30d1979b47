//! Native locks: a reentrant mutex (LOCK.*), a counting semaphore (SEM.*) and a read-write
//! lock (RW.*), stored under a key, with fencing tokens, leases and session binding.
//! docs/locking.md is the user-facing description; this file is the state machine.
//!
//! Waiters are not stored in the value: they are clients parked in the engine's blocked
//! queue for the key, exactly like BLPOP. When the key is `modified` (release, expiry, DEL)
//! or a waiter leaves the queue, the engine re-runs the queued commands in arrival order;
//! [`acquire`] grants only to the first lock waiter in that queue, which makes the locks
//! strictly FIFO without a second queue that could drift out of sync with the engine's.

pub mod lock_stats;
pub mod lockdep;
pub mod redisson;

use bytes::Bytes;
use std::collections::{BTreeSet, HashMap, HashSet};

use crate::engine::spec::{flag::*, CommandSpec, Ctx, Exec, Keys, BASE, KEY1};
use crate::engine::{BlockRequest, Engine};
use crate::error;
use crate::num::parse_i64;
use crate::reply::Reply;
use crate::storage::lock::{Holder, Kind, LockValue};
use crate::storage::notify;
use crate::storage::value::Value;
use crate::storage::ClientId;

/// The longest lease or wait accepted, in ms (100 years): keeps `now + ttl` far from
/// overflow while allowing any realistic value.
const MAX_MS: i64 = 100 * 365 * 24 * 3600 * 1000;

/// The commands whose blocked clients are lock waiters (used for FIFO order).
const WAITER_COMMANDS: &[&str] = &["lock.acquire", "sem.acquire", "rw.rlock", "rw.wlock"];

// ---------------------------------------------------------------- the value

// The value's types are in storage/lock.rs; what the state machine does with them is here.

impl Holder {
    fn live(&self, now: i64) -> bool {
        self.lease_until.is_none_or(|t| t > now)
    }
}

impl LockValue {
    /// Drops holders whose lease has passed and returns them.
    fn prune(&mut self, now: i64) -> Vec<Holder> {
        let (live, gone) = std::mem::take(&mut self.holders)
            .into_iter()
            .partition(|h| h.live(now));
        self.holders = live;
        gone
    }

    /// The key's TTL: the latest lease, or none while a holder is bound only to a session.
    fn key_expiry(&self) -> Option<i64> {
        let mut max = None;
        for h in &self.holders {
            let t = h.lease_until?;
            max = max.max(Some(t));
        }
        max
    }

    fn used_permits(&self) -> u64 {
        self.holders.iter().map(|h| h.holds).sum()
    }

    fn has_writer(&self) -> bool {
        self.kind == Kind::RwLock && self.holders.iter().any(|h| h.holds > 0)
    }

    fn holder_mut(&mut self, owner: &[u8]) -> Option<&mut Holder> {
        self.holders.iter_mut().find(|h| h.owner == owner)
    }
}

// ---------------------------------------------------------------- server-wide tables

/// Token room per millisecond of wall clock: a run stays below the next run's seed unless
/// it averaged over a million grants per second for its whole life. Tokens stay below
/// 2^53 (until the year 2255), so JavaScript clients read them exactly.
pub const TOKENS_PER_MS: u64 = 1000;

/// Lock state that lives outside the keyspace, on the [`Engine`].
#[derive(Debug, Default)]
pub struct LockTables {
    /// The last fencing token handed out. One counter for the whole server: tokens then
    /// increase strictly per key across release, expiry, DEL and RENAME at O(1) memory.
    last_token: u64,
    /// Per-grant lease deadlines, so waiters retry when one of several holders of a
    /// semaphore or rwlock expires (a mutex's key TTL is its lease too, but PERSIST or
    /// EXPIRE on the key must not keep its waiters asleep past the lease).
    leases: BTreeSet<(i64, usize, Bytes)>,
    /// The lock keys each connection holds with SESSION (may name keys since released).
    sessions: HashMap<ClientId, HashSet<(usize, Bytes)>>,
    /// Grants, releases, expiries, hand-off and wait times (`/metrics`).
    pub stats: crate::engine::locks::lock_stats::LockStats,
}

impl LockTables {
    /// The earliest lease deadline the timer must wake for.
    pub fn next_lease(&self) -> Option<i64> {
        self.leases.first().map(|(t, _, _)| *t)
    }

    /// Removes and returns the keys whose lease timers are due.
    pub fn due_leases(&mut self, now: i64) -> Vec<(usize, Bytes)> {
        let mut out = Vec::new();
        while let Some((t, _, _)) = self.leases.first() {
            if *t > now {
                break;
            }
            let (_, db, key) = self.leases.pop_first().unwrap();
            out.push((db, key));
        }
        out
    }

    /// The last token granted (INFO, tests).
    pub fn last_token(&self) -> u64 {
        self.last_token
    }

    /// Raises the token counter to at least `wall_ms * TOKENS_PER_MS`, so that the tokens
    /// of this run start above every token an earlier run issued (docs/locking.md, "Fencing
    /// tokens across restarts"). The server calls it once at start with the system clock.
    pub fn seed_tokens(&mut self, wall_ms: i64) {
        let floor = (wall_ms.max(0) as u64).saturating_mul(TOKENS_PER_MS);
        self.last_token = self.last_token.max(floor);
    }

    fn next_token(&mut self) -> u64 {
        self.last_token += 1;
        self.last_token
    }
}

/// A snapshot restore (engine/snapshot.rs) has put `key` back. If it is a lock, its
/// SESSION holders are dropped (a grant bound to a connection is not data), the lease
/// timers of the others are set again, and a lock nobody holds is deleted.
pub(crate) fn restored(eng: &mut Engine, db: usize, key: &Bytes) {
    let Some(Value::Lock(l)) = eng.dbs[db].get_mut(key).map(|e| &mut e.value) else {
        return;
    };
    l.holders.retain(|h| h.session.is_none());
    let leases: Vec<i64> = l.holders.iter().filter_map(|h| h.lease_until).collect();
    let empty = l.holders.is_empty();
    for t in leases {
        eng.locks.leases.insert((t, db, key.clone()));
        eng.deadline_changed = true;
    }
    if empty {
        eng.dbs[db].remove(key);
    } else {
        let at = match eng.dbs[db].get(key).map(|e| &e.value) {
            Some(Value::Lock(l)) => l.key_expiry(),
            _ => None,
        };
        eng.dbs[db].set_expire(key, at);
        eng.deadline_changed = true;
    }
}

/// Is `name` a command whose blocked clients are lock waiters?
pub(crate) fn is_waiter_command(name: &str) -> bool {
    WAITER_COMMANDS.contains(&name)
}

fn has_waiters(eng: &Engine, db: usize, key: &Bytes) -> bool {
    !eng.waiters(db, key).is_empty()
}

/// Keys holding a lock with at least one live holder, per kind (`/metrics`). Every grant
/// has a lease timer or a session binding, so the two indexes name every held lock and
/// this costs O(locks), not O(keys); entries they keep for keys since deleted or replaced
/// are checked against the keyspace.
pub fn held_counts(eng: &Engine) -> [u64; 3] {
    let now = eng.now_ms();
    let keys: HashSet<(usize, &Bytes)> = eng
        .locks
        .leases
        .iter()
        .map(|(_, db, k)| (*db, k))
        .chain(
            eng.locks
                .sessions
                .values()
                .flatten()
                .map(|(db, k)| (*db, k)),
        )
        .collect();
    let mut out = [0; 3];
    for (db, key) in keys {
        let Some(e) = eng.dbs.get(db).and_then(|d| d.get(key)) else {
            continue;
        };
        if e.expire_at().is_some_and(|t| t <= now) {
            continue;
        }
        if let Value::Lock(l) = &e.value {
            if l.holders.iter().any(|h| h.live(now)) {
                out[crate::engine::locks::lock_stats::kind_index(l.kind)] += 1;
            }
        }
    }
    out
}

// ---------------------------------------------------------------- command table

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    summary: &'static str,
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        keys,
        group: "lock",
        since: "0.1.0",
        summary,
        acl: acl_for(flags),
        exec: Exec::Engine(h),
        ..BASE
    }
}

/// ACL categories from the flags, as Redis derives @write/@read/@fast/@slow/@blocking.
const fn acl_for(flags: u32) -> &'static [&'static str] {
    let write = flags & WRITE != 0;
    let fast = flags & FAST != 0;
    if flags & BLOCKING != 0 {
        &["write", "slow", "blocking"]
    } else if write && fast {
        &["write", "fast"]
    } else if write {
        &["write", "slow"]
    } else if fast {
        &["read", "fast"]
    } else {
        &["read", "slow"]
    }
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd(
        "lock.acquire",
        -4,
        WRITE | DENYOOM | BLOCKING,
        KEY1,
        "Acquires a reentrant lock, optionally waiting in FIFO order; replies the fencing token.",
        lock_acquire,
    ),
    cmd(
        "lock.release",
        3,
        WRITE | FAST,
        KEY1,
        "Releases one hold of a lock; the next waiter is granted at once.",
        lock_release,
    ),
    cmd(
        "lock.extend",
        4,
        WRITE | FAST,
        KEY1,
        "Renews the lease of a held lock, semaphore or rwlock.",
        lock_extend,
    ),
    cmd(
        "lock.info",
        2,
        READONLY,
        KEY1,
        "Describes a lock: holders, tokens, leases, waiters.",
        lock_info,
    ),
    cmd(
        "lock.list",
        -1,
        READONLY,
        Keys::None,
        "Lists the held locks of the current database.",
        lock_list,
    ),
    cmd(
        "lock.check",
        3,
        READONLY | FAST,
        KEY1,
        "Tells whether a fencing token holds a lock right now.",
        lock_check,
    ),
    cmd(
        "fence.set",
        5,
        WRITE | DENYOOM,
        Keys::Range {
            first: 1,
            last: 3,
            step: 2,
        },
        "Sets a string only if a fencing token holds a lock right now.",
        fence_set,
    ),
    cmd(
        "sem.acquire",
        -5,
        WRITE | DENYOOM | BLOCKING,
        KEY1,
        "Acquires permits of a semaphore, optionally waiting in FIFO order.",
        sem_acquire,
    ),
    cmd(
        "sem.release",
        -3,
        WRITE | FAST,
        KEY1,
        "Releases permits of a semaphore.",
        sem_release,
    ),
    cmd(
        "sem.info",
        2,
        READONLY,
        KEY1,
        "Describes a semaphore (same as LOCK.INFO).",
        lock_info,
    ),
    cmd(
        "rw.rlock",
        -4,
        WRITE | DENYOOM | BLOCKING,
        KEY1,
        "Acquires the read side of a read-write lock.",
        rw_rlock,
    ),
    cmd(
        "rw.wlock",
        -4,
        WRITE | DENYOOM | BLOCKING,
        KEY1,
        "Acquires the write side of a read-write lock.",
        rw_wlock,
    ),
    cmd(
        "rw.runlock",
        3,
        WRITE | FAST,
        KEY1,
        "Releases one read hold of a read-write lock.",
        rw_runlock,
    ),
    cmd(
        "rw.wunlock",
        3,
        WRITE | FAST,
        KEY1,
        "Releases one write hold of a read-write lock.",
        rw_wunlock,
    ),
];

// ---------------------------------------------------------------- parsing

/// What an acquire asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Mutex,
    Sem { permits: u64, count: u64 },
    Read,
    Write,
}

impl Want {
    fn fits(self, kind: Kind) -> bool {
        matches!(
            (self, kind),
            (Want::Mutex, Kind::Mutex)
                | (Want::Sem { .. }, Kind::Semaphore { .. })
                | (Want::Read | Want::Write, Kind::RwLock)
        )
    }
    fn kind(self) -> Kind {
        match self {
            Want::Mutex => Kind::Mutex,
            Want::Sem { permits, .. } => Kind::Semaphore { permits },
            Want::Read | Want::Write => Kind::RwLock,
        }
    }
}

/// A parsed acquire command.
#[derive(Debug, Clone)]
struct Acquire {
    key: Bytes,
    owner: Bytes,
    want: Want,
    /// Lease in ms; 0 only with `session`.
    ttl: i64,
    /// `WAIT` in ms; `Some(0)` waits forever.
    wait: Option<i64>,
    session: bool,
}

fn parse_ms(a: &[u8]) -> Result<i64, Reply> {
    parse_i64(a).ok_or_else(error::not_integer)
}

/// Parses `key owner [permits] ttl [COUNT n] [WAIT ms] [SESSION]`.
fn parse_acquire(name: &str, a: &[Bytes], want: Want) -> Result<Acquire, Reply> {
    let owner = a[2].clone();
    if owner.is_empty() {
        return Err(Reply::err(error::LOCK_EMPTY_OWNER));
    }
    let mut want = want;
    let mut i = 3;
    if let Want::Sem { .. } = want {
        let permits = parse_ms(&a[3])?;
        if permits < 1 {
            return Err(Reply::err(error::SEM_PERMITS));
        }
        want = Want::Sem {
            permits: permits as u64,
            count: 1,
        };
        i = 4;
    }
    let ttl = parse_ms(&a[i])?;
    i += 1;
    let (mut wait, mut session, mut count) = (None, false, 1i64);
    while i < a.len() {
        let opt = &a[i];
        if opt.eq_ignore_ascii_case(b"session") {
            session = true;
            i += 1;
        } else if opt.eq_ignore_ascii_case(b"wait") && i + 1 < a.len() {
            let t = parse_ms(&a[i + 1])?;
            if t < 0 {
                return Err(Reply::err(error::TIMEOUT_NEGATIVE));
            }
            wait = Some(t.min(MAX_MS));
            i += 2;
        } else if opt.eq_ignore_ascii_case(b"count")
            && i + 1 < a.len()
            && matches!(want, Want::Sem { .. })
        {
            count = parse_ms(&a[i + 1])?;
            i += 2;
        } else {
            return Err(error::syntax());
        }
    }
    if ttl < 0 || (ttl == 0 && !session) || ttl > MAX_MS {
        return Err(error::invalid_expire(name));
    }
    if let Want::Sem { permits, .. } = want {
        if count < 1 || count as u64 > permits {
            return Err(Reply::err(error::SEM_COUNT));
        }
        want = Want::Sem {
            permits,
            count: count as u64,
        };
    }
    Ok(Acquire {
        key: a[1].clone(),
        owner,
        want,
        ttl,
        wait,
        session,
    })
}

fn lock_acquire(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match parse_acquire("lock.acquire", a, Want::Mutex) {
        Ok(req) => acquire(ctx, &req),
        Err(e) => e,
    }
}

fn sem_acquire(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let want = Want::Sem {
        permits: 0,
        count: 0,
    };
    match parse_acquire("sem.acquire", a, want) {
        Ok(req) => acquire(ctx, &req),
        Err(e) => e,
    }
}

fn rw_rlock(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match parse_acquire("rw.rlock", a, Want::Read) {
        Ok(req) => acquire(ctx, &req),
        Err(e) => e,
    }
}

fn rw_wlock(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    match parse_acquire("rw.wlock", a, Want::Write) {
        Ok(req) => acquire(ctx, &req),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------- acquire

/// Looks the lock up for a write: lazy key expiry, then pruning of expired holders (with the
/// epilogue, so waiters and WATCHers see it). `Err` when the key holds another type.
fn load(ctx: &mut Ctx, key: &Bytes) -> Result<Option<Kind>, ()> {
    let now = ctx.now();
    let Some(e) = ctx.write(key) else {
        return Ok(None);
    };
    let Value::Lock(l) = &mut e.value else {
        return Err(());
    };
    let kind = l.kind;
    let gone = l.prune(now);
    if !gone.is_empty() {
        let db = ctx.cl.db;
        ctx.eng.locks.stats.expired(kind, gone.len() as u64);
        if has_waiters(ctx.eng, db, key) {
            ctx.eng.locks.stats.freed(db, key);
        }
        unindex(ctx.eng, ctx.cl.db, key, &gone);
        after_change(ctx.eng, ctx.cl.db, key, "lock.expire");
        if ctx.eng.dbs[ctx.cl.db].get(key).is_none() {
            return Ok(None);
        }
    }
    Ok(Some(kind))
}

/// The write epilogue of a lock key: deletes it once nobody holds it, re-syncs the key TTL
/// with the leases, then runs `modified` (WATCH, keyspace event, waiter retry).
fn after_change(eng: &mut Engine, db: usize, key: &Bytes, event: &str) {
    let Some(e) = eng.dbs[db].get(key) else {
        return;
    };
    let Value::Lock(l) = &e.value else {
        return;
    };
    if l.holders.is_empty() {
        eng.dbs[db].remove(key);
        eng.modified(db, key, notify::LOCK, event);
        eng.notify(notify::GENERIC, "del", db, key);
        return;
    }
    let at = l.key_expiry();
    if e.expire_at() != at {
        eng.dbs[db].set_expire(key, at);
        eng.deadline_changed = true;
    }
    eng.modified(db, key, notify::LOCK, event);
}

/// Could a client blocked in command `name` be granted a lock of `kind` (None: the key is
/// free, any kind could)? A waiter of another kind stays parked until the key changes
/// type, so it must not hold up the queue of the kind the key has now.
fn waits_for(name: &str, kind: Option<Kind>) -> bool {
    match kind {
        None => WAITER_COMMANDS.contains(&name),
        Some(Kind::Mutex) => name == "lock.acquire",
        Some(Kind::Semaphore { .. }) => name == "sem.acquire",
        Some(Kind::RwLock) => name == "rw.rlock" || name == "rw.wlock",
    }
}

/// Is the calling client allowed to be granted now as far as FIFO order goes? A fresh
/// request is when no lock waiter is queued on the key; a retried waiter is when it is the
/// first lock waiter.
fn first_in_line(ctx: &Ctx, key: &Bytes, kind: Option<Kind>, retry: bool) -> bool {
    let first = ctx
        .eng
        .waiters(ctx.cl.db, key)
        .into_iter()
        .find(|(_, name)| waits_for(name, kind));
    match first {
        None => !retry,
        Some((id, _)) => retry && id == ctx.cl.id,
    }
}

/// Blocks (WAIT) or fails (no WAIT). On a retry the engine keeps the original deadline.
fn wait_or_nil(ctx: &mut Ctx, req: &Acquire) -> Reply {
    if ctx.eng.lockdep.is_some() && !matches!(req.want, Want::Sem { .. }) {
        crate::engine::locks::lockdep::native_wait(ctx, &req.owner, &req.key);
    }
    match req.wait {
        None => Reply::Null,
        Some(t) => {
            let deadline = (t > 0).then(|| ctx.now() + t);
            ctx.block = Some(BlockRequest {
                keys: vec![req.key.clone()],
                deadline,
                timeout_reply: Reply::Null,
                argv: None,
            });
            Reply::NoReply
        }
    }
}

/// The acquire state machine shared by LOCK.ACQUIRE, SEM.ACQUIRE, RW.RLOCK and RW.WLOCK.
/// Runs both for fresh requests and for retries of parked waiters.
fn acquire(ctx: &mut Ctx, req: &Acquire) -> Reply {
    let retry = ctx.eng.is_blocked(ctx.cl.id);
    let kind = match load(ctx, &req.key) {
        Ok(k) => k,
        // A waiter whose key became another type keeps waiting, as BLPOP does.
        Err(()) if retry => return wait_or_nil(ctx, req),
        Err(()) => return error::wrongtype(),
    };
    if let Some(k) = kind {
        if !req.want.fits(k) {
            return if retry {
                wait_or_nil(ctx, req)
            } else {
                error::wrongtype()
            };
        }
        if let (Kind::Semaphore { permits }, Want::Sem { permits: p, .. }) = (k, req.want) {
            if permits != p {
                return Reply::err(error::SEM_PERMITS_MISMATCH);
            }
        }
    }
    let db = ctx.cl.db;
    let now = ctx.now();
    let lease = (req.ttl > 0).then(|| now + req.ttl);
    let fifo_ok = first_in_line(ctx, &req.key, kind, retry);

    // Reentrant acquisitions by a current holder are granted at once, ahead of waiters
    // (making them wait behind waiters that wait for them would deadlock).
    if kind.is_some() {
        let Some(Value::Lock(l)) = ctx.eng.dbs[db].get_mut(&req.key).map(|e| &mut e.value) else {
            unreachable!("load saw the lock");
        };
        let avail = match l.kind {
            Kind::Semaphore { permits } => permits.saturating_sub(l.used_permits()),
            _ => 0,
        };
        if let Some(h) = l.holder_mut(&req.owner) {
            let granted = match req.want {
                Want::Mutex => {
                    h.holds += 1;
                    true
                }
                Want::Read => {
                    h.reads += 1;
                    true
                }
                Want::Write if h.holds > 0 => {
                    h.holds += 1;
                    true
                }
                Want::Write => return Reply::err(error::LOCK_UPGRADE),
                Want::Sem { count, .. } if fifo_ok && avail >= count => {
                    h.holds += count;
                    true
                }
                Want::Sem { .. } => false,
            };
            if granted {
                // The lease restarts at now + ttl (ttl 0 comes with SESSION: no lease).
                if req.session && h.session.is_none() {
                    h.session = Some(ctx.cl.id);
                }
                let old = std::mem::replace(&mut h.lease_until, lease);
                let (token, session) = (h.token, h.session);
                forget_lease(ctx.eng, db, &req.key, old);
                register(ctx, req, lease, session);
                ctx.eng
                    .locks
                    .stats
                    .granted(req.want.kind(), db, &req.key, retry);
                after_change(ctx.eng, db, &req.key, "lock.acquire");
                return Reply::Int(token as i64);
            }
            return wait_or_nil(ctx, req);
        }
    }

    // A new holder.
    let free = match ctx.eng.dbs[db].get(&req.key).map(|e| &e.value) {
        None => true,
        Some(Value::Lock(l)) => match req.want {
            Want::Mutex | Want::Write => l.holders.is_empty(),
            Want::Read => !l.has_writer(),
            Want::Sem { count, .. } => {
                let Kind::Semaphore { permits } = l.kind else {
                    return error::wrongtype();
                };
                permits.saturating_sub(l.used_permits()) >= count
            }
        },
        Some(_) => return error::wrongtype(),
    };
    if !(free && fifo_ok) {
        return wait_or_nil(ctx, req);
    }
    if ctx.eng.lockdep.is_some() && !matches!(req.want, Want::Sem { .. }) {
        if let Err(e) = crate::engine::locks::lockdep::native_acquire(ctx, &req.owner, &req.key) {
            return e;
        }
    }
    let token = ctx.eng.locks.next_token();
    let session = req.session.then_some(ctx.cl.id);
    let holder = Holder {
        owner: req.owner.clone(),
        holds: match req.want {
            Want::Mutex | Want::Write => 1,
            Want::Read => 0,
            Want::Sem { count, .. } => count,
        },
        reads: u64::from(req.want == Want::Read),
        token,
        lease_until: lease,
        session,
    };
    match ctx.eng.dbs[db].get_mut(&req.key).map(|e| &mut e.value) {
        Some(Value::Lock(l)) => l.holders.push(holder),
        _ => {
            let v = LockValue {
                kind: req.want.kind(),
                holders: vec![holder],
            };
            crate::engine::store(ctx.eng, db, req.key.clone(), Value::Lock(Box::new(v)), None);
        }
    }
    register(ctx, req, lease, session);
    ctx.eng
        .locks
        .stats
        .granted(req.want.kind(), db, &req.key, retry);
    after_change(ctx.eng, db, &req.key, "lock.acquire");
    Reply::Int(token as i64)
}

/// Records a grant's lease timer (multi-holder kinds) and session binding.
fn register(ctx: &mut Ctx, req: &Acquire, lease: Option<i64>, session: Option<ClientId>) {
    let db = ctx.cl.db;
    if let Some(t) = lease {
        ctx.eng.locks.leases.insert((t, db, req.key.clone()));
        ctx.eng.deadline_changed = true;
    }
    if let Some(id) = session {
        ctx.eng
            .locks
            .sessions
            .entry(id)
            .or_default()
            .insert((db, req.key.clone()));
    }
}

// ---------------------------------------------------------------- release / extend

/// Which hold a release gives back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// Mutex holds, semaphore permits, rwlock write holds.
    Holds,
    /// Rwlock read holds.
    Reads,
}

/// Gives back `count` holds of `side`; replies what the owner still holds on that side.
fn release(ctx: &mut Ctx, key: &Bytes, owner: &[u8], want: Want, side: Side, count: u64) -> Reply {
    let kind = match load(ctx, key) {
        Ok(Some(k)) => k,
        Ok(None) => return Reply::err(error::LOCK_NOT_HELD),
        Err(()) => return error::wrongtype(),
    };
    if !want.fits(kind) {
        return error::wrongtype();
    }
    let db = ctx.cl.db;
    let Some(Value::Lock(l)) = ctx.eng.dbs[db].get_mut(key).map(|e| &mut e.value) else {
        unreachable!("load saw the lock");
    };
    let Some(pos) = l.holders.iter().position(|h| h.owner == owner) else {
        return Reply::err(error::LOCK_NOT_HELD);
    };
    let h = &mut l.holders[pos];
    let held = match side {
        Side::Holds => &mut h.holds,
        Side::Reads => &mut h.reads,
    };
    if *held == 0 {
        return Reply::err(error::LOCK_NOT_HELD);
    }
    if count > *held {
        return Reply::err(error::SEM_RELEASE_COUNT);
    }
    *held -= count;
    let left = *held;
    let freed = h.holds == 0 && h.reads == 0;
    if freed {
        let gone = l.holders.remove(pos);
        forget_lease(ctx.eng, db, key, gone.lease_until);
        unindex(ctx.eng, db, key, &[gone]);
    }
    ctx.eng.locks.stats.released(kind, 1);
    if (freed || matches!(kind, Kind::Semaphore { .. })) && has_waiters(ctx.eng, db, key) {
        ctx.eng.locks.stats.freed(db, key);
    }
    after_change(ctx.eng, db, key, "lock.release");
    Reply::Int(left as i64)
}

/// Drops a departed holder's lease timer unless another holder shares its deadline.
fn forget_lease(eng: &mut Engine, db: usize, key: &Bytes, lease: Option<i64>) {
    let Some(t) = lease else { return };
    let shared = match eng.dbs[db].get(key).map(|e| &e.value) {
        Some(Value::Lock(l)) => l.holders.iter().any(|h| h.lease_until == Some(t)),
        _ => false,
    };
    if !shared {
        eng.locks.leases.remove(&(t, db, key.clone()));
    }
}

fn lock_release(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    release(ctx, &a[1], &a[2], Want::Mutex, Side::Holds, 1)
}

fn rw_runlock(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    release(ctx, &a[1], &a[2], Want::Read, Side::Reads, 1)
}

fn rw_wunlock(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    release(ctx, &a[1], &a[2], Want::Write, Side::Holds, 1)
}

fn sem_release(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let count = match a.len() {
        3 => 1,
        5 if a[3].eq_ignore_ascii_case(b"count") => match parse_i64(&a[4]) {
            Some(n) if n >= 1 => n as u64,
            Some(_) => return Reply::err(error::SEM_COUNT),
            None => return error::not_integer(),
        },
        _ => return error::syntax(),
    };
    let want = Want::Sem {
        permits: 0,
        count: 0,
    };
    release(ctx, &a[1], &a[2], want, Side::Holds, count)
}

fn lock_extend(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let ttl = match parse_ms(&a[3]) {
        Ok(t) if t > 0 && t <= MAX_MS => t,
        Ok(_) => return error::invalid_expire("lock.extend"),
        Err(e) => return e,
    };
    let key = &a[1];
    match load(ctx, key) {
        Ok(Some(_)) => {}
        Ok(None) => return Reply::err(error::LOCK_NOT_HELD),
        Err(()) => return error::wrongtype(),
    }
    let db = ctx.cl.db;
    let lease = ctx.now() + ttl;
    let Some(Value::Lock(l)) = ctx.eng.dbs[db].get_mut(key).map(|e| &mut e.value) else {
        unreachable!("load saw the lock");
    };
    let Some(h) = l.holder_mut(&a[2]) else {
        return Reply::err(error::LOCK_NOT_HELD);
    };
    let old = h.lease_until.replace(lease);
    forget_lease(ctx.eng, db, key, old);
    ctx.eng.locks.leases.insert((lease, db, key.clone()));
    after_change(ctx.eng, db, key, "lock.extend");
    Reply::Int(1)
}

// ---------------------------------------------------------------- introspection

/// Looks a lock up for reading; holders past their lease are left out.
fn read_lock(ctx: &mut Ctx, key: &[u8]) -> Result<Option<LockValue>, Reply> {
    let now = ctx.now();
    match ctx.read(key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Lock(l)) => {
            let mut l = (**l).clone();
            l.prune(now);
            Ok((!l.holders.is_empty()).then_some(l))
        }
        Some(_) => Err(error::wrongtype()),
    }
}

fn ttl_left(h: &Holder, now: i64) -> i64 {
    h.lease_until.map_or(-1, |t| t - now)
}

fn holder_reply(h: &Holder, kind: Kind, now: i64) -> Reply {
    let mut f = vec![
        (Reply::bulk_str("owner"), Reply::Bulk(h.owner.clone())),
        (Reply::bulk_str("token"), Reply::Int(h.token as i64)),
    ];
    match kind {
        Kind::Mutex => f.push((Reply::bulk_str("holds"), Reply::Int(h.holds as i64))),
        Kind::Semaphore { .. } => f.push((Reply::bulk_str("permits"), Reply::Int(h.holds as i64))),
        Kind::RwLock => {
            f.push((Reply::bulk_str("writes"), Reply::Int(h.holds as i64)));
            f.push((Reply::bulk_str("reads"), Reply::Int(h.reads as i64)));
        }
    }
    f.push((Reply::bulk_str("ttl"), Reply::Int(ttl_left(h, now))));
    f.push((
        Reply::bulk_str("session"),
        Reply::Int(h.session.is_some() as i64),
    ));
    Reply::Map(f)
}

fn lock_info(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let l = match read_lock(ctx, &a[1]) {
        Ok(Some(l)) => l,
        Ok(None) => return Reply::Null,
        Err(e) => return e,
    };
    let now = ctx.now();
    let waiters = ctx
        .eng
        .waiters(ctx.cl.db, &a[1])
        .iter()
        .filter(|(_, n)| waits_for(n, Some(l.kind)))
        .count();
    let mut f = vec![(Reply::bulk_str("type"), Reply::bulk_str(l.type_name()))];
    match l.kind {
        Kind::Mutex => {
            let h = &l.holders[0];
            if let Reply::Map(hf) = holder_reply(h, l.kind, now) {
                f.extend(hf);
            }
        }
        Kind::Semaphore { permits } => {
            f.push((Reply::bulk_str("permits"), Reply::Int(permits as i64)));
            let avail = permits.saturating_sub(l.used_permits());
            f.push((Reply::bulk_str("available"), Reply::Int(avail as i64)));
        }
        Kind::RwLock => {
            let mode = if l.has_writer() { "write" } else { "read" };
            f.push((Reply::bulk_str("mode"), Reply::bulk_str(mode)));
        }
    }
    if l.kind != Kind::Mutex {
        let hs = l.holders.iter().map(|h| holder_reply(h, l.kind, now));
        f.push((Reply::bulk_str("holders"), Reply::Array(hs.collect())));
    }
    f.push((Reply::bulk_str("waiters"), Reply::Int(waiters as i64)));
    Reply::Map(f)
}

fn lock_list(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (mut pattern, mut count) = (None, usize::MAX);
    let mut i = 1;
    while i < a.len() {
        if i + 1 >= a.len() {
            return error::syntax();
        }
        if a[i].eq_ignore_ascii_case(b"match") {
            pattern = Some(a[i + 1].clone());
        } else if a[i].eq_ignore_ascii_case(b"count") {
            match parse_i64(&a[i + 1]) {
                Some(n) if n >= 1 => count = n as usize,
                Some(_) => return error::syntax(),
                None => return error::not_integer(),
            }
        } else {
            return error::syntax();
        }
        i += 2;
    }
    let now = ctx.now();
    let mut keys: Vec<Bytes> = ctx
        .db()
        .iter()
        .filter(|(k, e)| {
            e.expire_at().is_none_or(|t| t > now)
                && matches!(&e.value, Value::Lock(l) if l.holders.iter().any(|h| h.live(now)))
                && pattern
                    .as_ref()
                    .is_none_or(|p| crate::glob::matches(p, k, false))
        })
        .map(|(k, _)| Bytes::copy_from_slice(k))
        .collect();
    keys.sort();
    keys.truncate(count);
    Reply::bulks(keys)
}

/// Is `token` a live holder of `key`? `writer` requires the write side of an rwlock.
fn token_holds(ctx: &mut Ctx, key: &[u8], token: u64, writer: bool) -> Result<bool, Reply> {
    Ok(read_lock(ctx, key)?.is_some_and(|l| {
        l.holders
            .iter()
            .any(|h| h.token == token && (!writer || l.kind != Kind::RwLock || h.holds > 0))
    }))
}

fn lock_check(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let Some(token) = parse_i64(&a[2]) else {
        return error::not_integer();
    };
    match token_holds(ctx, &a[1], token as u64, false) {
        Ok(b) => {
            ctx.eng.locks.stats.check_rejections += u64::from(!b);
            Reply::Int(b as i64)
        }
        Err(e) => e,
    }
}

fn fence_set(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (key, value, lockkey) = (&a[1], &a[2], &a[3]);
    let Some(token) = parse_i64(&a[4]) else {
        return error::not_integer();
    };
    if key == lockkey {
        return Reply::err(error::LOCK_SAME_KEY);
    }
    match token_holds(ctx, lockkey, token as u64, true) {
        Ok(true) => {}
        Ok(false) => {
            ctx.eng.locks.stats.fence_rejections += 1;
            return Reply::err(error::LOCK_FENCED);
        }
        Err(e) => return e,
    }
    let db = ctx.cl.db;
    crate::engine::store(
        ctx.eng,
        db,
        key.clone(),
        Value::Str(crate::storage::value::StrVal::from(value.clone())),
        None,
    );
    ctx.modified(key, notify::STRING, "set");
    Reply::ok()
}

// ---------------------------------------------------------------- sessions

/// Forgets the session index entries of departed holders whose connection holds nothing
/// else under this key, so the index names exactly the keys holding live SESSION grants
/// (as far as lock commands know: DEL, RENAME and expiry happen elsewhere).
fn unindex(eng: &mut Engine, db: usize, key: &Bytes, gone: &[Holder]) {
    for s in gone.iter().filter_map(|h| h.session) {
        let still = match eng.dbs[db].get(key).map(|e| &e.value) {
            Some(Value::Lock(l)) => l.holders.iter().any(|h| h.session == Some(s)),
            _ => false,
        };
        if still {
            continue;
        }
        if let Some(set) = eng.locks.sessions.get_mut(&s) {
            set.remove(&(db, key.clone()));
            if set.is_empty() {
                eng.locks.sessions.remove(&s);
            }
        }
    }
}

/// Releases every lock `id` holds with SESSION and marks the keys ready, so the server's
/// next `after_command` hands them to their waiters. Called when the connection closes.
///
/// The index normally names the keys exactly. If one of them no longer holds this
/// session's grant, the value was deleted or moved (DEL, FLUSHDB, expiry, RENAME, MOVE,
/// SWAPDB) behind the lock commands' back; a moved lease-less SESSION lock would then be
/// held forever, so this falls back to scanning every lock in the keyspace for the session.
pub fn release_session(eng: &mut Engine, id: ClientId) {
    let Some(keys) = eng.locks.sessions.remove(&id) else {
        return;
    };
    let mut missed = false;
    for (db, key) in keys {
        missed |= !release_session_key(eng, id, db, &key);
    }
    if missed {
        let found: Vec<(usize, Bytes)> = (0..eng.dbs.len())
            .flat_map(|db| {
                eng.dbs[db]
                    .iter()
                    .filter(|(_, e)| {
                        matches!(&e.value, Value::Lock(l)
                            if l.holders.iter().any(|h| h.session == Some(id)))
                    })
                    .map(move |(k, _)| (db, Bytes::copy_from_slice(k)))
                    .collect::<Vec<_>>()
            })
            .collect();
        for (db, key) in found {
            release_session_key(eng, id, db, &key);
        }
    }
}

/// Drops `id`'s SESSION grants under one key; false if it had none there.
fn release_session_key(eng: &mut Engine, id: ClientId, db: usize, key: &Bytes) -> bool {
    {
        let Some(e) = eng.lookup(db, key) else {
            return false;
        };
        let Value::Lock(l) = &mut e.value else {
            return false;
        };
        let before = l.holders.len();
        let kind = l.kind;
        let mut leases = Vec::new();
        l.holders.retain(|h| {
            let keep = h.session != Some(id);
            if !keep {
                leases.push(h.lease_until);
            }
            keep
        });
        if l.holders.len() == before {
            return false;
        }
        let removed = (before - l.holders.len()) as u64;
        eng.locks.stats.released(kind, removed);
        if has_waiters(eng, db, key) {
            eng.locks.stats.freed(db, key);
        }
        for t in leases {
            forget_lease(eng, db, key, t);
        }
    }
    after_change(eng, db, key, "lock.release");
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ClientCtx;
    use crate::storage::clock::ManualClock;
    use std::sync::Arc;

    fn setup() -> (Arc<ManualClock>, Engine) {
        let clock = ManualClock::new(1_000_000);
        let e = Engine::with_clock(16, clock.clone());
        (clock, e)
    }

    fn cl(id: u64) -> ClientCtx {
        ClientCtx {
            id,
            ..Default::default()
        }
    }

    fn run(e: &mut Engine, c: &mut ClientCtx, args: &str) -> Reply {
        let v: Vec<&[u8]> = args.split(' ').map(|s| s.as_bytes()).collect();
        e.run(c, &v)
    }

    /// Wakeup replies delivered so far, by client.
    fn woke(e: &mut Engine) -> Vec<(u64, Reply)> {
        std::mem::take(&mut e.wakeups)
    }

    #[test]
    fn acquire_release_reentrancy_and_tokens() {
        let (_c, mut e) = setup();
        let mut a = cl(1);
        assert_eq!(run(&mut e, &mut a, "lock.acquire k A 1000"), Reply::Int(1));
        assert_eq!(run(&mut e, &mut a, "lock.acquire k A 1000"), Reply::Int(1));
        assert_eq!(run(&mut e, &mut a, "lock.acquire k B 1000"), Reply::Null);
        assert_eq!(run(&mut e, &mut a, "type k"), Reply::simple("lock"));
        assert_eq!(run(&mut e, &mut a, "lock.release k A"), Reply::Int(1));
        assert_eq!(run(&mut e, &mut a, "lock.release k A"), Reply::Int(0));
        assert_eq!(run(&mut e, &mut a, "exists k"), Reply::Int(0));
        assert_eq!(
            run(&mut e, &mut a, "lock.release k A"),
            Reply::err(error::LOCK_NOT_HELD)
        );
        assert_eq!(run(&mut e, &mut a, "lock.acquire k B 1000"), Reply::Int(2));
    }

    #[test]
    fn lease_expiry_hands_over_to_the_fifo_head() {
        let (clock, mut e) = setup();
        let (mut a, mut b, mut c) = (cl(1), cl(2), cl(3));
        assert_eq!(run(&mut e, &mut a, "lock.acquire k A 100"), Reply::Int(1));
        assert_eq!(
            run(&mut e, &mut b, "lock.acquire k B 100 WAIT 0"),
            Reply::NoReply
        );
        assert_eq!(
            run(&mut e, &mut c, "lock.acquire k C 100 WAIT 0"),
            Reply::NoReply
        );
        // A fresh request does not barge ahead of the queue.
        let mut d = cl(4);
        assert_eq!(run(&mut e, &mut d, "lock.acquire k D 100"), Reply::Null);
        assert_eq!(e.next_deadline(), Some(1_000_100));
        clock.advance_ms(100);
        e.tick();
        assert_eq!(woke(&mut e), vec![(2, Reply::Int(2))]);
        assert_eq!(run(&mut e, &mut b, "lock.release k B"), Reply::Int(0));
        assert_eq!(woke(&mut e), vec![(3, Reply::Int(3))]);
    }

    #[test]
    fn wait_timeout_and_head_leaving_lets_the_next_in() {
        let (clock, mut e) = setup();
        let (mut a, mut b, mut c) = (cl(1), cl(2), cl(3));
        run(&mut e, &mut a, "sem.acquire s A 3 10000 COUNT 2");
        assert_eq!(
            run(&mut e, &mut b, "sem.acquire s B 3 10000 COUNT 2 WAIT 50"),
            Reply::NoReply
        );
        // C wants one permit, which is free, but B is ahead of it: strict FIFO.
        assert_eq!(
            run(&mut e, &mut c, "sem.acquire s C 3 10000 WAIT 500"),
            Reply::NoReply
        );
        clock.advance_ms(50);
        e.tick();
        let w = woke(&mut e);
        assert_eq!(w, vec![(2, Reply::Null), (3, Reply::Int(2))]);
    }

    #[test]
    fn session_release_grants_the_next_waiter() {
        let (_c, mut e) = setup();
        let (mut a, mut b) = (cl(1), cl(2));
        assert_eq!(
            run(&mut e, &mut a, "lock.acquire k A 0 SESSION"),
            Reply::Int(1)
        );
        assert_eq!(run(&mut e, &mut a, "pttl k"), Reply::Int(-1));
        assert_eq!(
            run(&mut e, &mut b, "lock.acquire k B 0 WAIT 0 SESSION"),
            Reply::NoReply
        );
        e.client_gone(1, &[]);
        release_session(&mut e, 1);
        e.after_command();
        assert_eq!(woke(&mut e), vec![(2, Reply::Int(2))]);
    }

    #[test]
    fn session_lock_moved_by_rename_is_still_released() {
        let (_c, mut e) = setup();
        let (mut a, mut b) = (cl(1), cl(2));
        assert_eq!(
            run(&mut e, &mut a, "lock.acquire k A 0 SESSION"),
            Reply::Int(1)
        );
        assert_eq!(
            run(&mut e, &mut a, "lock.acquire j A 0 SESSION"),
            Reply::Int(2)
        );
        assert_eq!(run(&mut e, &mut a, "lock.release j A"), Reply::Int(0));
        // Released normally: the index forgets it, so only k is left to look at.
        assert_eq!(e.locks.sessions[&1].len(), 1);
        assert_eq!(run(&mut e, &mut a, "rename k k2"), Reply::ok());
        assert_eq!(
            run(&mut e, &mut b, "lock.acquire k2 B 100 WAIT 0"),
            Reply::NoReply
        );
        e.client_gone(1, &[]);
        release_session(&mut e, 1);
        e.after_command();
        assert_eq!(woke(&mut e), vec![(2, Reply::Int(3))]);
        assert!(e.locks.sessions.is_empty());
    }

    #[test]
    fn a_waiter_for_another_kind_does_not_hold_up_the_queue() {
        let (_c, mut e) = setup();
        let (mut r, mut x, mut c) = (cl(1), cl(2), cl(3));
        run(&mut e, &mut r, "rw.wlock k R 1000");
        assert_eq!(
            run(&mut e, &mut x, "rw.wlock k X 1000 WAIT 0"),
            Reply::NoReply
        );
        // k becomes a semaphore with free permits while X still waits for an rwlock.
        run(&mut e, &mut r, "sem.acquire s R 3 1000");
        assert_eq!(run(&mut e, &mut r, "rename s k"), Reply::ok());
        assert!(woke(&mut e).is_empty());
        assert_eq!(run(&mut e, &mut c, "sem.acquire k C 3 1000"), Reply::Int(3));
        let info = run(&mut e, &mut c, "lock.info k");
        let Reply::Map(f) = info else { panic!() };
        assert_eq!(f.last(), Some(&(Reply::bulk_str("waiters"), Reply::Int(0))));
    }

    #[test]
    fn rwlock_readers_share_and_writer_preference() {
        let (_c, mut e) = setup();
        let (mut r1, mut w, mut r2) = (cl(1), cl(2), cl(3));
        assert_eq!(run(&mut e, &mut r1, "rw.rlock k R1 1000"), Reply::Int(1));
        assert_eq!(run(&mut e, &mut r2, "rw.rlock k R2 1000"), Reply::Int(2));
        assert_eq!(
            run(&mut e, &mut w, "rw.wlock k W 1000 WAIT 0"),
            Reply::NoReply
        );
        let mut r3 = cl(4);
        assert_eq!(
            run(&mut e, &mut r3, "rw.rlock k R3 1000 WAIT 0"),
            Reply::NoReply
        );
        // Reentrant read of a current reader is granted even with a writer waiting.
        assert_eq!(run(&mut e, &mut r1, "rw.rlock k R1 1000"), Reply::Int(1));
        assert_eq!(
            run(&mut e, &mut r1, "rw.wlock k R1 1000"),
            Reply::err(error::LOCK_UPGRADE)
        );
        run(&mut e, &mut r1, "rw.runlock k R1");
        run(&mut e, &mut r1, "rw.runlock k R1");
        assert!(woke(&mut e).is_empty());
        run(&mut e, &mut r2, "rw.runlock k R2");
        assert_eq!(woke(&mut e), vec![(2, Reply::Int(3))]);
        // Downgrade: the writer takes a read hold, then drops the write hold.
        assert_eq!(run(&mut e, &mut w, "rw.rlock k W 1000"), Reply::Int(3));
        assert_eq!(run(&mut e, &mut w, "rw.wunlock k W"), Reply::Int(0));
        assert_eq!(woke(&mut e), vec![(4, Reply::Int(4))]);
    }

    #[test]
    fn fencing_refuses_a_stale_holder() {
        let (clock, mut e) = setup();
        let (mut a, mut b) = (cl(1), cl(2));
        assert_eq!(run(&mut e, &mut a, "lock.acquire l A 100"), Reply::Int(1));
        assert_eq!(run(&mut e, &mut a, "fence.set data x l 1"), Reply::ok());
        clock.advance_ms(150);
        assert_eq!(run(&mut e, &mut b, "lock.acquire l B 100"), Reply::Int(2));
        assert_eq!(
            run(&mut e, &mut a, "fence.set data stale l 1"),
            Reply::err(error::LOCK_FENCED)
        );
        assert_eq!(run(&mut e, &mut b, "fence.set data fresh l 2"), Reply::ok());
        assert_eq!(run(&mut e, &mut b, "get data"), Reply::bulk_str("fresh"));
        assert_eq!(run(&mut e, &mut b, "lock.check l 1"), Reply::Int(0));
        assert_eq!(run(&mut e, &mut b, "lock.check l 2"), Reply::Int(1));
    }

    #[test]
    fn bad_input_leaves_nothing_behind() {
        let (_c, mut e) = setup();
        let mut a = cl(1);
        let cases = [
            ("lock.acquire k A -1", error::invalid_expire("lock.acquire")),
            ("lock.acquire k A 0", error::invalid_expire("lock.acquire")),
            ("lock.acquire k A x", error::not_integer()),
            (
                "lock.acquire k A 99999999999999999",
                error::invalid_expire("lock.acquire"),
            ),
            (
                "lock.acquire k A 10 WAIT -1",
                Reply::err(error::TIMEOUT_NEGATIVE),
            ),
            ("lock.acquire k A 10 WAIT", error::syntax()),
            ("lock.acquire k A 10 COUNT 2", error::syntax()),
            ("sem.acquire k A 0 10", Reply::err(error::SEM_PERMITS)),
            ("sem.acquire k A 2 10 COUNT 3", Reply::err(error::SEM_COUNT)),
            ("lock.extend k A 10", Reply::err(error::LOCK_NOT_HELD)),
        ];
        for (cmd, want) in cases {
            assert_eq!(run(&mut e, &mut a, cmd), want, "{cmd}");
        }
        assert_eq!(e.dbs[0].len(), 0);
        run(&mut e, &mut a, "set s v");
        assert_eq!(
            run(&mut e, &mut a, "lock.acquire s A 10"),
            error::wrongtype()
        );
        run(&mut e, &mut a, "sem.acquire m A 2 100");
        assert_eq!(
            run(&mut e, &mut a, "lock.acquire m A 10"),
            error::wrongtype()
        );
        assert_eq!(
            run(&mut e, &mut a, "sem.acquire m B 3 100"),
            Reply::err(error::SEM_PERMITS_MISMATCH)
        );
    }

    #[test]
    fn one_expiring_semaphore_holder_wakes_the_waiter() {
        let (clock, mut e) = setup();
        let (mut a, mut b, mut c) = (cl(1), cl(2), cl(3));
        run(&mut e, &mut a, "sem.acquire s A 2 10000");
        run(&mut e, &mut b, "sem.acquire s B 2 50");
        assert_eq!(
            run(&mut e, &mut c, "sem.acquire s C 2 100 WAIT 0"),
            Reply::NoReply
        );
        // The key lives as long as the longest lease; B's own lease timer wakes C.
        assert_eq!(run(&mut e, &mut a, "pttl s"), Reply::Int(10000));
        assert_eq!(e.next_deadline(), Some(1_000_050));
        clock.advance_ms(50);
        e.tick();
        assert_eq!(woke(&mut e), vec![(3, Reply::Int(3))]);
        assert_eq!(
            run(&mut e, &mut b, "sem.release s B"),
            Reply::err(error::LOCK_NOT_HELD)
        );
        assert_eq!(run(&mut e, &mut a, "lock.check s 2"), Reply::Int(0));
        assert_eq!(run(&mut e, &mut a, "lock.check s 3"), Reply::Int(1));
    }

    #[test]
    fn persist_on_the_key_does_not_outlive_the_lease() {
        let (clock, mut e) = setup();
        let (mut a, mut b) = (cl(1), cl(2));
        run(&mut e, &mut a, "lock.acquire k A 100");
        run(&mut e, &mut b, "lock.acquire k B 100 WAIT 0");
        clock.advance_ms(60);
        // Re-acquiring renews the lease from now; the old timer is dropped.
        assert_eq!(run(&mut e, &mut a, "lock.acquire k A 100"), Reply::Int(1));
        // Without a key TTL only the lease timer can wake B.
        assert_eq!(run(&mut e, &mut a, "persist k"), Reply::Int(1));
        assert_eq!(e.next_deadline(), Some(1_000_160));
        clock.advance_ms(100);
        e.tick();
        assert_eq!(woke(&mut e), vec![(2, Reply::Int(2))]);
    }

    #[test]
    fn del_is_a_forced_unlock_and_tokens_keep_growing() {
        let (_c, mut e) = setup();
        let (mut a, mut b) = (cl(1), cl(2));
        run(&mut e, &mut a, "lock.acquire k A 1000");
        run(&mut e, &mut b, "lock.acquire k B 1000 WAIT 0");
        run(&mut e, &mut a, "del k");
        assert_eq!(woke(&mut e), vec![(2, Reply::Int(2))]);
        run(&mut e, &mut a, "flushdb");
        assert_eq!(run(&mut e, &mut a, "lock.acquire k A 1000"), Reply::Int(3));
    }
}
