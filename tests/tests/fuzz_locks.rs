//! Seeded model-based fuzzer for the native lock commands (docs/fuzzing.md). Redis has no
//! LOCK.*/SEM.*/RW.*/FENCE.SET, so every reply is checked against a small model of their
//! semantics as docs/locking.md states them (lockcore/src/engine/locks/mod.rs is the implementation;
//! this file shares no code with it).
//!
//! Three client connections issue random acquires (with and without WAIT and SESSION),
//! releases, extends, LOCK.CHECK, FENCE.SET, LOCK.INFO, PTTL/TYPE/EXISTS/DEL of lock keys,
//! lock commands inside MULTI/EXEC and EVAL, connection drops, and moves of a frozen
//! server clock (TUMBLER.TIME), over two lock keys and two data keys. Because the clock
//! only moves when the test says so, every reply, including PTTL, LOCK.INFO's ttl fields,
//! timeouts and the grants handed to parked waiters, is exact: nothing is normalised.
//!
//! Environment: `FUZZ_SEED`, `FUZZ_LOCKS_COUNT` (sequences), `FUZZ_SECS` (time cap).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use tumbler_tests::fuzz::{self, cli_line, lua_quote, Resp, Settings, Wire};
use tumbler_tests::Tumbler;

const CONNS: usize = 3;

/// Coverage counters for the summary line: commands parked, parked commands later served
/// with a token, and with nil (timeout).
static PARKED: AtomicUsize = AtomicUsize::new(0);
static SERVED_TOKEN: AtomicUsize = AtomicUsize::new(0);
static SERVED_NIL: AtomicUsize = AtomicUsize::new(0);
const NOTHELD: &str = "NOTHELD the lock is not held by this owner";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";
const UPGRADE: &str = "ERR cannot upgrade a read lock to a write lock: release the read lock first";
const FENCED: &str = "FENCED the token does not hold the lock";
const SAME_KEY: &str = "ERR key and lockkey must be different keys";
const PERMITS: &str = "ERR permits must be a positive integer";
const PERMITS_MISMATCH: &str = "ERR permits does not match the semaphore's permits";
const SEM_COUNT: &str = "ERR COUNT must be between 1 and permits";
const RELEASE_COUNT: &str = "ERR COUNT is more than the permits held by this owner";
const EMPTY_OWNER: &str = "ERR owner must not be empty";
const TIMEOUT_NEG: &str = "ERR timeout is negative";

type Args = Vec<Vec<u8>>;

fn err(s: &str) -> Resp {
    Resp::Error(s.as_bytes().to_vec())
}

fn bulk(s: &str) -> Resp {
    Resp::Bulk(s.as_bytes().to_vec())
}

// ---------------------------------------------------------------- the model

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Mutex,
    Sem(u64),
    Rw,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Want {
    Mutex,
    Sem { permits: u64, count: u64 },
    Read,
    Write,
}

impl Want {
    fn kind(self) -> Kind {
        match self {
            Want::Mutex => Kind::Mutex,
            Want::Sem { permits, .. } => Kind::Sem(permits),
            Want::Read | Want::Write => Kind::Rw,
        }
    }
    fn fits(self, k: Kind) -> bool {
        matches!(
            (self, k),
            (Want::Mutex, Kind::Mutex)
                | (Want::Sem { .. }, Kind::Sem(_))
                | (Want::Read | Want::Write, Kind::Rw)
        )
    }
}

#[derive(Clone, Debug)]
struct Acq {
    key: Vec<u8>,
    owner: Vec<u8>,
    want: Want,
    ttl: i64,
    wait: Option<i64>,
    session: bool,
}

#[derive(Clone, Debug)]
struct Holder {
    owner: Vec<u8>,
    holds: u64,
    reads: u64,
    token: u64,
    lease: Option<i64>,
    session: Option<usize>,
}

#[derive(Clone, Debug)]
enum Val {
    Lock { kind: Kind, holders: Vec<Holder> },
    Str(Vec<u8>),
}

#[derive(Clone, Debug)]
struct Waiter {
    conn: usize,
    req: Acq,
    deadline: Option<i64>,
}

#[derive(Default)]
struct Model {
    now: i64,
    last_token: u64,
    keys: HashMap<Vec<u8>, Val>,
    /// Parked lock commands, in arrival order.
    waiters: Vec<Waiter>,
    /// The key each client served from the queue was waiting on.
    served_keys: HashMap<usize, Vec<u8>>,
}

/// What one command did in the model: its reply (None: the client is parked).
type Out = Option<Resp>;

fn parse_i64(a: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(a).ok()?;
    let v: i64 = s.parse().ok()?;
    (v.to_string() == s).then_some(v)
}

const MAX_MS: i64 = 100 * 365 * 24 * 3600 * 1000;

/// Parses `key owner [permits] ttl [COUNT n] [WAIT ms] [SESSION]` like docs/locking.md says.
fn parse_acquire(name: &str, a: &[Vec<u8>], want: Want) -> Result<Acq, Resp> {
    if a[2].is_empty() {
        return Err(err(EMPTY_OWNER));
    }
    let int = |x: &[u8]| parse_i64(x).ok_or_else(|| err(NOT_INT));
    let mut want = want;
    let mut i = 3;
    if let Want::Sem { .. } = want {
        let p = int(&a[3])?;
        if p < 1 {
            return Err(err(PERMITS));
        }
        want = Want::Sem {
            permits: p as u64,
            count: 1,
        };
        i = 4;
    }
    let ttl = int(&a[i])?;
    i += 1;
    let (mut wait, mut session, mut count) = (None, false, 1);
    while i < a.len() {
        let o = a[i].to_ascii_uppercase();
        if o == b"SESSION" {
            session = true;
            i += 1;
        } else if o == b"WAIT" && i + 1 < a.len() {
            let t = int(&a[i + 1])?;
            if t < 0 {
                return Err(err(TIMEOUT_NEG));
            }
            wait = Some(t.min(MAX_MS));
            i += 2;
        } else if o == b"COUNT" && i + 1 < a.len() && matches!(want, Want::Sem { .. }) {
            count = int(&a[i + 1])?;
            i += 2;
        } else {
            return Err(err(SYNTAX));
        }
    }
    if ttl < 0 || (ttl == 0 && !session) || ttl > MAX_MS {
        return Err(err(&format!("ERR invalid expire time in '{name}' command")));
    }
    if let Want::Sem { permits, .. } = want {
        if count < 1 || count as u64 > permits {
            return Err(err(SEM_COUNT));
        }
        want = Want::Sem {
            permits,
            count: count as u64,
        };
    }
    Ok(Acq {
        key: a[1].clone(),
        owner: a[2].clone(),
        want,
        ttl,
        wait,
        session,
    })
}

fn waits_for(w: Want, k: Option<Kind>) -> bool {
    match k {
        None => true,
        Some(k) => w.fits(k),
    }
}

impl Model {
    /// Drops holders whose lease passed, and lock keys nobody holds.
    fn prune(&mut self) {
        let now = self.now;
        self.keys.retain(|_, v| match v {
            Val::Lock { holders, .. } => {
                holders.retain(|h| h.lease.is_none_or(|t| t > now));
                !holders.is_empty()
            }
            Val::Str(_) => true,
        });
    }

    fn kind_of(&self, key: &[u8]) -> Result<Option<Kind>, ()> {
        match self.keys.get(key) {
            None => Ok(None),
            Some(Val::Lock { kind, .. }) => Ok(Some(*kind)),
            Some(Val::Str(_)) => Err(()),
        }
    }

    /// The first parked client that could be granted a lock of the key's current kind.
    fn first_waiter(&self, key: &[u8], k: Option<Kind>) -> Option<usize> {
        self.waiters
            .iter()
            .find(|w| w.req.key == key && waits_for(w.req.want, k))
            .map(|w| w.conn)
    }

    /// An acquire, fresh (`retry: None`) or re-run for parked client `retry`.
    /// `can_block`: false inside MULTI and scripts.
    fn acquire(&mut self, conn: usize, req: &Acq, retry: bool, can_block: bool) -> Out {
        self.prune();
        let wait_or_nil = |m: &mut Model| -> Out {
            match req.wait {
                Some(t) if can_block || retry => {
                    if !retry {
                        let deadline = (t > 0).then_some(m.now + t);
                        m.waiters.push(Waiter {
                            conn,
                            req: req.clone(),
                            deadline,
                        });
                    }
                    None
                }
                _ => Some(Resp::Nil),
            }
        };
        let kind = match self.kind_of(&req.key) {
            Ok(k) => k,
            Err(()) if retry => return wait_or_nil(self),
            Err(()) => return Some(err(WRONGTYPE)),
        };
        if let Some(k) = kind {
            if !req.want.fits(k) {
                return if retry {
                    wait_or_nil(self)
                } else {
                    Some(err(WRONGTYPE))
                };
            }
            if let (Kind::Sem(p), Want::Sem { permits, .. }) = (k, req.want) {
                if p != permits {
                    return Some(err(PERMITS_MISMATCH));
                }
            }
        }
        let first = self.first_waiter(&req.key, kind);
        let fifo_ok = match first {
            None => !retry,
            Some(c) => retry && c == conn,
        };
        let now = self.now;
        let lease = (req.ttl > 0).then_some(now + req.ttl);
        if let Some(Val::Lock { kind, holders }) = self.keys.get_mut(&req.key) {
            let used: u64 = holders.iter().map(|h| h.holds).sum();
            let avail = match kind {
                Kind::Sem(p) => p.saturating_sub(used),
                _ => 0,
            };
            if let Some(h) = holders.iter_mut().find(|h| h.owner == req.owner) {
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
                    Want::Write => return Some(err(UPGRADE)),
                    Want::Sem { count, .. } if fifo_ok && avail >= count => {
                        h.holds += count;
                        true
                    }
                    Want::Sem { .. } => false,
                };
                if granted {
                    if req.session && h.session.is_none() {
                        h.session = Some(conn);
                    }
                    h.lease = lease;
                    return Some(Resp::Int(h.token as i64));
                }
                return wait_or_nil(self);
            }
        }
        let free = match self.keys.get(&req.key) {
            None => true,
            Some(Val::Lock { kind, holders }) => match req.want {
                Want::Mutex | Want::Write => holders.is_empty(),
                Want::Read => !(*kind == Kind::Rw && holders.iter().any(|h| h.holds > 0)),
                Want::Sem { count, .. } => {
                    let Kind::Sem(p) = kind else { unreachable!() };
                    p.saturating_sub(holders.iter().map(|h| h.holds).sum()) >= count
                }
            },
            Some(Val::Str(_)) => unreachable!(),
        };
        if !(free && fifo_ok) {
            return wait_or_nil(self);
        }
        self.last_token += 1;
        let h = Holder {
            owner: req.owner.clone(),
            holds: match req.want {
                Want::Mutex | Want::Write => 1,
                Want::Read => 0,
                Want::Sem { count, .. } => count,
            },
            reads: u64::from(req.want == Want::Read),
            token: self.last_token,
            lease,
            session: req.session.then_some(conn),
        };
        match self.keys.get_mut(&req.key) {
            Some(Val::Lock { holders, .. }) => holders.push(h),
            _ => {
                self.keys.insert(
                    req.key.clone(),
                    Val::Lock {
                        kind: req.want.kind(),
                        holders: vec![h],
                    },
                );
            }
        }
        Some(Resp::Int(self.last_token as i64))
    }

    /// Gives back `count` holds (`reads`: the read side) of `owner`.
    fn release(&mut self, key: &[u8], owner: &[u8], want: Want, reads: bool, count: u64) -> Resp {
        self.prune();
        let Some(v) = self.keys.get_mut(key) else {
            return err(NOTHELD);
        };
        let Val::Lock { kind, holders } = v else {
            return err(WRONGTYPE);
        };
        if !want.fits(*kind) {
            return err(WRONGTYPE);
        }
        let Some(pos) = holders.iter().position(|h| h.owner == owner) else {
            return err(NOTHELD);
        };
        let h = &mut holders[pos];
        let held = if reads { &mut h.reads } else { &mut h.holds };
        if *held == 0 {
            return err(NOTHELD);
        }
        if count > *held {
            return err(RELEASE_COUNT);
        }
        *held -= count;
        let left = *held;
        if h.holds == 0 && h.reads == 0 {
            holders.remove(pos);
        }
        self.prune();
        Resp::Int(left as i64)
    }

    fn live_lock(&mut self, key: &[u8]) -> Result<Option<(Kind, Vec<Holder>)>, Resp> {
        self.prune();
        match self.keys.get(key) {
            None => Ok(None),
            Some(Val::Lock { kind, holders }) => Ok(Some((*kind, holders.clone()))),
            Some(Val::Str(_)) => Err(err(WRONGTYPE)),
        }
    }

    fn token_holds(&mut self, key: &[u8], token: u64, writer: bool) -> Result<bool, Resp> {
        Ok(self.live_lock(key)?.is_some_and(|(k, hs)| {
            hs.iter()
                .any(|h| h.token == token && (!writer || k != Kind::Rw || h.holds > 0))
        }))
    }

    fn info(&mut self, key: &[u8]) -> Resp {
        let (kind, hs) = match self.live_lock(key) {
            Ok(Some(l)) => l,
            Ok(None) => return Resp::Nil,
            Err(e) => return e,
        };
        let now = self.now;
        let holder = |h: &Holder| {
            let mut f = vec![
                bulk("owner"),
                Resp::Bulk(h.owner.clone()),
                bulk("token"),
                Resp::Int(h.token as i64),
            ];
            match kind {
                Kind::Mutex => f.extend([bulk("holds"), Resp::Int(h.holds as i64)]),
                Kind::Sem(_) => f.extend([bulk("permits"), Resp::Int(h.holds as i64)]),
                Kind::Rw => f.extend([
                    bulk("writes"),
                    Resp::Int(h.holds as i64),
                    bulk("reads"),
                    Resp::Int(h.reads as i64),
                ]),
            }
            f.extend([
                bulk("ttl"),
                Resp::Int(h.lease.map_or(-1, |t| t - now)),
                bulk("session"),
                Resp::Int(h.session.is_some() as i64),
            ]);
            f
        };
        let name = match kind {
            Kind::Mutex => "lock",
            Kind::Sem(_) => "semaphore",
            Kind::Rw => "rwlock",
        };
        let mut f = vec![bulk("type"), bulk(name)];
        match kind {
            Kind::Mutex => f.extend(holder(&hs[0])),
            Kind::Sem(p) => {
                let used: u64 = hs.iter().map(|h| h.holds).sum();
                f.extend([
                    bulk("permits"),
                    Resp::Int(p as i64),
                    bulk("available"),
                    Resp::Int(p.saturating_sub(used) as i64),
                ]);
            }
            Kind::Rw => {
                let mode = if hs.iter().any(|h| h.holds > 0) {
                    "write"
                } else {
                    "read"
                };
                f.extend([bulk("mode"), bulk(mode)]);
            }
        }
        if kind != Kind::Mutex {
            f.push(bulk("holders"));
            f.push(Resp::Array(
                hs.iter().map(|h| Resp::Array(holder(h))).collect(),
            ));
        }
        let waiting = self
            .waiters
            .iter()
            .filter(|w| w.req.key == key && w.req.want.fits(kind))
            .count();
        f.extend([bulk("waiters"), Resp::Int(waiting as i64)]);
        Resp::Array(f)
    }

    /// Runs one command from `conn`. `can_block`: false inside MULTI and scripts.
    fn run(&mut self, conn: usize, a: &Args, can_block: bool) -> Out {
        let name = String::from_utf8_lossy(&a[0]).to_ascii_lowercase();
        let int = |x: &[u8]| parse_i64(x).ok_or_else(|| err(NOT_INT));
        let r = match name.as_str() {
            "lock.acquire" | "sem.acquire" | "rw.rlock" | "rw.wlock" => {
                let want = match name.as_str() {
                    "lock.acquire" => Want::Mutex,
                    "sem.acquire" => Want::Sem {
                        permits: 0,
                        count: 0,
                    },
                    "rw.rlock" => Want::Read,
                    _ => Want::Write,
                };
                return match parse_acquire(&name, a, want) {
                    Ok(req) => self.acquire(conn, &req, false, can_block),
                    Err(e) => Some(e),
                };
            }
            "lock.release" => self.release(&a[1], &a[2], Want::Mutex, false, 1),
            "rw.runlock" => self.release(&a[1], &a[2], Want::Read, true, 1),
            "rw.wunlock" => self.release(&a[1], &a[2], Want::Write, false, 1),
            "sem.release" => {
                let count = match a.len() {
                    3 => Ok(1),
                    5 if a[3].eq_ignore_ascii_case(b"count") => match parse_i64(&a[4]) {
                        Some(n) if n >= 1 => Ok(n as u64),
                        Some(_) => Err(err(SEM_COUNT)),
                        None => Err(err(NOT_INT)),
                    },
                    _ => Err(err(SYNTAX)),
                };
                match count {
                    Ok(n) => self.release(
                        &a[1],
                        &a[2],
                        Want::Sem {
                            permits: 0,
                            count: 0,
                        },
                        false,
                        n,
                    ),
                    Err(e) => e,
                }
            }
            "lock.extend" => match int(&a[3]) {
                Ok(t) if t > 0 && t <= MAX_MS => {
                    let now = self.now;
                    match self.live_lock(&a[1]) {
                        Err(e) => e,
                        Ok(None) => err(NOTHELD),
                        Ok(Some(_)) => {
                            let Some(Val::Lock { holders, .. }) = self.keys.get_mut(&a[1]) else {
                                unreachable!()
                            };
                            match holders.iter_mut().find(|h| h.owner == a[2]) {
                                None => err(NOTHELD),
                                Some(h) => {
                                    h.lease = Some(now + t);
                                    Resp::Int(1)
                                }
                            }
                        }
                    }
                }
                Ok(_) => err("ERR invalid expire time in 'lock.extend' command"),
                Err(e) => e,
            },
            "lock.check" => match int(&a[2]) {
                Err(e) => e,
                Ok(t) => match self.token_holds(&a[1], t as u64, false) {
                    Ok(b) => Resp::Int(b as i64),
                    Err(e) => e,
                },
            },
            "fence.set" => match int(&a[4]) {
                Err(e) => e,
                Ok(_) if a[1] == a[3] => err(SAME_KEY),
                Ok(t) => match self.token_holds(&a[3], t as u64, true) {
                    Err(e) => e,
                    Ok(false) => err(FENCED),
                    Ok(true) => {
                        self.keys.insert(a[1].clone(), Val::Str(a[2].clone()));
                        Resp::Simple(b"OK".to_vec())
                    }
                },
            },
            "lock.info" | "sem.info" => self.info(&a[1]),
            "get" => {
                self.prune();
                match self.keys.get(&a[1]) {
                    None => Resp::Nil,
                    Some(Val::Str(v)) => Resp::Bulk(v.clone()),
                    Some(_) => err(WRONGTYPE),
                }
            }
            "del" => {
                self.prune();
                Resp::Int(self.keys.remove(&a[1]).is_some() as i64)
            }
            "exists" => {
                self.prune();
                Resp::Int(self.keys.contains_key(&a[1]) as i64)
            }
            "type" => {
                self.prune();
                Resp::Simple(
                    match self.keys.get(&a[1]) {
                        None => "none",
                        Some(Val::Str(_)) => "string",
                        Some(Val::Lock {
                            kind: Kind::Mutex, ..
                        }) => "lock",
                        Some(Val::Lock {
                            kind: Kind::Sem(_), ..
                        }) => "semaphore",
                        Some(Val::Lock { kind: Kind::Rw, .. }) => "rwlock",
                    }
                    .as_bytes()
                    .to_vec(),
                )
            }
            "pttl" => {
                self.prune();
                let now = self.now;
                Resp::Int(match self.keys.get(&a[1]) {
                    None => -2,
                    Some(Val::Str(_)) => -1,
                    Some(Val::Lock { holders, .. }) => {
                        let mut max = Some(i64::MIN);
                        for h in holders {
                            max = match (max, h.lease) {
                                (Some(m), Some(t)) => Some(m.max(t)),
                                _ => None,
                            };
                        }
                        max.map_or(-1, |t| t - now)
                    }
                })
            }
            other => panic!("model has no command {other}"),
        };
        Some(r)
    }

    /// Re-runs parked clients until nothing changes, as the server does after every
    /// command: in arrival order, each one that gets a reply leaves the queue.
    fn serve_waiters(&mut self) -> Vec<(usize, Resp)> {
        let mut served = Vec::new();
        loop {
            let mut progress = false;
            let mut i = 0;
            while i < self.waiters.len() {
                let w = self.waiters[i].clone();
                match self.acquire(w.conn, &w.req, true, true) {
                    Some(r) => {
                        self.waiters.retain(|x| x.conn != w.conn);
                        self.served_keys.insert(w.conn, w.req.key.clone());
                        served.push((w.conn, r));
                        progress = true;
                    }
                    None => i += 1,
                }
            }
            if !progress {
                return served;
            }
        }
    }

    /// The clock moves: timed-out waiters get nil first, then expired leases free locks.
    fn advance(&mut self, ms: i64) -> Vec<(usize, Resp)> {
        self.now += ms;
        let now = self.now;
        let mut out = Vec::new();
        self.waiters.retain(|w| {
            let due = w.deadline.is_some_and(|d| d <= now);
            if due {
                out.push((w.conn, Resp::Nil));
            }
            !due
        });
        out.extend(self.serve_waiters());
        out
    }

    /// Connection `conn` closed: its SESSION grants go, and it leaves any queue.
    fn disconnect(&mut self, conn: usize) -> Vec<(usize, Resp)> {
        self.waiters.retain(|w| w.conn != conn);
        for v in self.keys.values_mut() {
            if let Val::Lock { holders, .. } = v {
                holders.retain(|h| h.session != Some(conn));
            }
        }
        self.prune();
        self.serve_waiters()
    }
}

// ---------------------------------------------------------------- generation

#[derive(Clone, Debug)]
enum Step {
    Cmd(usize, Args),
    /// MULTI, the commands, EXEC, all from one connection.
    Multi(usize, Vec<Args>),
    /// `EVAL "return redis.pcall(...)" 0`.
    Eval(usize, Args),
    Advance(i64),
    Drop(usize),
}

impl Step {
    fn show(&self) -> String {
        match self {
            Step::Cmd(c, a) => format!("[conn {c}] {}", cli_line(a)),
            Step::Multi(c, v) => {
                let inner: Vec<String> = v.iter().map(|a| cli_line(a)).collect();
                format!("[conn {c}] MULTI; {}; EXEC", inner.join("; "))
            }
            Step::Eval(c, a) => format!("[conn {c}] {}", cli_line(&eval_args(a))),
            Step::Advance(ms) => format!("TUMBLER.TIME ADVANCE {ms}"),
            Step::Drop(c) => format!("[conn {c}] (connection closed)"),
        }
    }
}

fn eval_args(a: &Args) -> Args {
    let parts: Vec<String> = a.iter().map(|x| lua_quote(x)).collect();
    let body = format!("return redis.pcall({})", parts.join(", "));
    vec![b"EVAL".to_vec(), body.into_bytes(), b"0".to_vec()]
}

struct Gen {
    rng: StdRng,
}

fn s(x: &str) -> Vec<u8> {
    x.as_bytes().to_vec()
}

impl Gen {
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        *v.choose(&mut self.rng).unwrap()
    }
    fn lkey(&mut self) -> Vec<u8> {
        if self.rng.gen_bool(0.03) {
            return self.dkey();
        }
        s(self.pick(&["L0", "L1"]))
    }
    fn dkey(&mut self) -> Vec<u8> {
        s(self.pick(&["d0", "d1"]))
    }
    fn owner(&mut self) -> Vec<u8> {
        if self.rng.gen_bool(0.02) {
            return Vec::new();
        }
        s(self.pick(&["o0", "o1", "o2", "o3"]))
    }
    fn ttl(&mut self) -> Vec<u8> {
        if self.rng.gen_bool(0.08) {
            return s(self.pick(&["0", "-1", "x", "99999999999999999"]));
        }
        s(self.pick(&["100", "500", "2000", "30000", "500"]))
    }
    /// Mostly a recent token (a placeholder the runner resolves), else a bad one.
    fn token(&mut self) -> Vec<u8> {
        if self.rng.gen_bool(0.85) {
            return format!("$T{}", self.rng.gen_range(0..4)).into_bytes();
        }
        s(self.pick(&["0", "-1", "x", "99999999999"]))
    }
    fn opts(&mut self, a: &mut Args, sem: bool) {
        if sem && self.rng.gen_bool(0.3) {
            a.extend([s("COUNT"), s(self.pick(&["1", "2", "3", "0", "4"]))]);
        }
        if self.rng.gen_bool(0.4) {
            a.extend([
                s("WAIT"),
                s(self.pick(&["50", "500", "3000", "0", "50", "-1"])),
            ]);
        }
        if self.rng.gen_bool(0.3) {
            a.push(s(self.pick(&["SESSION", "session", "SESSION", "BOGUS"])));
        }
    }
    fn lock_cmd(&mut self) -> Args {
        let (k, o) = (self.lkey(), self.owner());
        match self.rng.gen_range(0..24) {
            0..=3 => {
                let mut a = vec![s("LOCK.ACQUIRE"), k, o, self.ttl()];
                self.opts(&mut a, false);
                a
            }
            4..=6 => vec![s("LOCK.RELEASE"), k, o],
            7 | 8 => {
                let p = s(self.pick(&["2", "3", "3", "0"]));
                let mut a = vec![s("SEM.ACQUIRE"), k, o, p, self.ttl()];
                self.opts(&mut a, true);
                a
            }
            9 | 10 => {
                let mut a = vec![s("SEM.RELEASE"), k, o];
                if self.rng.gen_bool(0.3) {
                    a.extend([s("COUNT"), s(self.pick(&["1", "2", "0"]))]);
                }
                a
            }
            11 | 12 => {
                let name = self.pick(&["RW.RLOCK", "RW.WLOCK"]);
                let mut a = vec![s(name), k, o, self.ttl()];
                self.opts(&mut a, false);
                a
            }
            13 | 14 => vec![s(self.pick(&["RW.RUNLOCK", "RW.WUNLOCK"])), k, o],
            15 => vec![
                s("LOCK.EXTEND"),
                k,
                o,
                s(self.pick(&["1000", "50", "0", "x"])),
            ],
            16 => vec![s("LOCK.CHECK"), k, self.token()],
            17 | 18 => {
                let d = if self.rng.gen_bool(0.9) {
                    self.dkey()
                } else {
                    self.lkey()
                };
                let v = s(self.pick(&["v1", "v2", "v3"]));
                vec![s("FENCE.SET"), d, v, k, self.token()]
            }
            19 => vec![s(self.pick(&["LOCK.INFO", "SEM.INFO"])), k],
            20 => vec![s("PTTL"), k],
            21 => vec![s(self.pick(&["TYPE", "EXISTS"])), k],
            22 => vec![s("GET"), self.dkey()],
            _ => vec![s("DEL"), k],
        }
    }
    fn step(&mut self) -> Step {
        let r = self.rng.gen_range(0..100);
        if r < 12 {
            return Step::Advance(self.pick(&[1, 10, 49, 50, 99, 100, 400, 1000, 3000]));
        }
        let c = self.rng.gen_range(0..CONNS);
        match r {
            12..=14 => Step::Drop(self.rng.gen_range(0..CONNS)),
            15..=19 => {
                let n = self.rng.gen_range(1..4);
                Step::Multi(c, (0..n).map(|_| self.lock_cmd()).collect())
            }
            20..=24 => Step::Eval(c, self.lock_cmd()),
            _ => Step::Cmd(c, self.lock_cmd()),
        }
    }
}

// ---------------------------------------------------------------- running

struct Rig {
    addr: SocketAddr,
    ctl: Wire,
    conns: Vec<Wire>,
    ids: Vec<i64>,
}

fn client_id(w: &mut Wire) -> Result<i64, String> {
    match w.cmd(&["CLIENT", "ID"])? {
        Resp::Int(i) => Ok(i),
        r => Err(format!("CLIENT ID: {}", r.show())),
    }
}

impl Rig {
    /// Closes connection `c` and waits until the server has run its cleanup (the registry
    /// entry goes last), so the next command sees the released SESSION grants.
    fn drop_conn(&mut self, c: usize) -> Result<(), String> {
        let _ = self.conns[c].stream.shutdown(std::net::Shutdown::Both);
        let id = self.ids[c].to_string();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let list = self.ctl.cmd(&["CLIENT", "LIST", "ID", &id])?;
            match list {
                Resp::Bulk(b) if b.is_empty() => break,
                Resp::Bulk(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                r => return Err(format!("connection {c} not cleaned up: {}", r.show())),
            }
        }
        self.conns[c] = Wire::connect(self.addr)?;
        self.ids[c] = client_id(&mut self.conns[c])?;
        Ok(())
    }

    /// Waits until the server has `n` blocked clients: a command sent on one connection is
    /// not ordered with commands on the others, so a WAIT the model parks must have reached
    /// the server before the next step goes out on another connection.
    fn wait_blocked(&mut self, n: usize) -> Result<(), String> {
        let want = format!("blocked_clients:{n}\r\n");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.ctl.cmd(&["INFO", "clients"])? {
                Resp::Bulk(b) if String::from_utf8_lossy(&b).contains(&want) => return Ok(()),
                Resp::Bulk(b) if Instant::now() > deadline => {
                    return Err(format!(
                        "server never had {n} blocked clients: {}",
                        String::from_utf8_lossy(&b)
                    ))
                }
                Resp::Bulk(_) => std::thread::sleep(Duration::from_micros(200)),
                r => return Err(format!("INFO: {}", r.show())),
            }
        }
    }

    /// Fresh connections, empty keyspace, and the model's starting point.
    fn reset(&mut self) -> Result<Model, String> {
        for c in 0..CONNS {
            self.drop_conn(c)?;
        }
        self.ctl.cmd(&["FLUSHALL"])?;
        let now = match self.ctl.cmd(&["TUMBLER.TIME", "NOW"])? {
            Resp::Int(n) => n,
            r => return Err(format!("TUMBLER.TIME NOW: {}", r.show())),
        };
        let last = match self.ctl.cmd(&["LOCK.ACQUIRE", "probe", "p", "1000"])? {
            Resp::Int(t) => t as u64,
            r => return Err(format!("probe: {}", r.show())),
        };
        self.ctl.cmd(&["DEL", "probe"])?;
        Ok(Model {
            now,
            last_token: last,
            ..Default::default()
        })
    }
}

#[derive(Debug)]
struct Mismatch {
    step: usize,
    what: String,
}

fn check(i: usize, who: &str, got: &Resp, want: &Resp) -> Result<(), Mismatch> {
    if got == want {
        return Ok(());
    }
    Err(Mismatch {
        step: i,
        what: format!(
            "{who}: tumbler replied {}, model expects {}",
            got.show(),
            want.show()
        ),
    })
}

fn run_case(rig: &mut Rig, steps: &[Step]) -> Result<(), Mismatch> {
    let fail = |step, what: String| Mismatch { step, what };
    let mut m = rig.reset().map_err(|e| fail(0, format!("reset: {e}")))?;
    // Which connections are parked in a WAIT.
    let mut parked = [false; CONNS];
    for (i, st) in steps.iter().enumerate() {
        let io = |e: String| fail(i, e);
        if let Step::Cmd(c, _) | Step::Eval(c, _) | Step::Multi(c, _) = st {
            if parked[*c] {
                continue; // a parked connection cannot send; the step is skipped
            }
        }
        let last_before = m.last_token;
        let served: Vec<(usize, Resp)> = match st {
            Step::Cmd(c, a) => {
                let a = &resolve(a, &m);
                let w = &mut rig.conns[*c];
                w.send(a).map_err(io)?;
                match m.run(*c, a, true) {
                    Some(want) => {
                        let got = w.read().map_err(io)?;
                        check(i, "reply", &got, &want)?;
                    }
                    None => {
                        parked[*c] = true;
                        PARKED.fetch_add(1, Ordering::Relaxed);
                        let n = parked.iter().filter(|p| **p).count();
                        rig.wait_blocked(n).map_err(io)?;
                    }
                }
                m.serve_waiters()
            }
            Step::Eval(c, a) => {
                let a = &resolve(a, &m);
                let w = &mut rig.conns[*c];
                let got = w.cmd(&eval_args(a)).map_err(io)?;
                let want = m.run(*c, a, false).expect("no blocking in scripts");
                check(i, "script reply", &got, &want)?;
                m.serve_waiters()
            }
            Step::Multi(c, v) => {
                let v: Vec<Args> = v.iter().map(|a| resolve(a, &m)).collect();
                let w = &mut rig.conns[*c];
                w.send(&["MULTI"]).map_err(io)?;
                for a in &v {
                    w.send(a).map_err(io)?;
                }
                w.send(&["EXEC"]).map_err(io)?;
                for _ in 0..=v.len() {
                    let r = w.read().map_err(io)?;
                    if r.is_error() {
                        return Err(fail(i, format!("MULTI/queueing: {}", r.show())));
                    }
                }
                let got = w.read().map_err(io)?;
                let want: Vec<Resp> = v
                    .iter()
                    .map(|a| m.run(*c, a, false).expect("no blocking in MULTI"))
                    .collect();
                check(i, "EXEC", &got, &Resp::Array(want))?;
                m.serve_waiters()
            }
            Step::Advance(ms) => {
                let got = rig
                    .ctl
                    .cmd(&["TUMBLER.TIME", "ADVANCE", &ms.to_string()])
                    .map_err(io)?;
                let served = m.advance(*ms);
                check(i, "ADVANCE", &got, &Resp::Int(m.now))?;
                served
            }
            Step::Drop(c) => {
                rig.drop_conn(*c).map_err(io)?;
                parked[*c] = false;
                m.disconnect(*c)
            }
        };
        let mut replies = Vec::new();
        for (c, want) in served {
            assert!(parked[c], "model served a client that is not parked");
            parked[c] = false;
            let got = rig.conns[c].read().map_err(io)?;
            match got {
                Resp::Int(_) => SERVED_TOKEN.fetch_add(1, Ordering::Relaxed),
                _ => SERVED_NIL.fetch_add(1, Ordering::Relaxed),
            };
            replies.push((c, want, got));
        }
        if replies.iter().any(|(_, w, g)| w != g) {
            // Waiters on different keys granted in one step (a clock move that ends two
            // leases) take their new tokens in the engine's order of keys, which nothing
            // specifies; per key the order is exact. Accept a permutation of the new
            // tokens across distinct keys, and carry the server's numbering on.
            let fresh = |r: &Resp| matches!(r, Resp::Int(t) if *t as u64 > last_before);
            let moved: Vec<_> = replies.iter().filter(|(_, w, g)| w != g).collect();
            let mut keys: Vec<&Vec<u8>> = moved.iter().map(|(c, _, _)| &m.served_keys[c]).collect();
            keys.sort();
            keys.dedup();
            let mut want_t: Vec<&Resp> = moved.iter().map(|(_, w, _)| w).collect();
            let mut got_t: Vec<&Resp> = moved.iter().map(|(_, _, g)| g).collect();
            want_t.sort();
            got_t.sort();
            let permuted = moved.iter().all(|(_, w, g)| fresh(w) && fresh(g))
                && keys.len() == moved.len()
                && want_t == got_t;
            if !permuted {
                let (c, want, got) = moved[0];
                check(i, &format!("parked conn {c}"), got, want)?;
            }
            let map: HashMap<u64, u64> = moved
                .iter()
                .map(|(_, w, g)| match (w, g) {
                    (Resp::Int(w), Resp::Int(g)) => (*w as u64, *g as u64),
                    _ => unreachable!(),
                })
                .collect();
            for v in m.keys.values_mut() {
                if let Val::Lock { holders, .. } = v {
                    for h in holders {
                        if let Some(t) = map.get(&h.token) {
                            h.token = *t;
                        }
                    }
                }
            }
        }
    }
    // Nothing more may arrive: idle connections answer PING next; parked ones stay silent.
    let n = steps.len();
    for (c, w) in rig.conns.iter_mut().enumerate() {
        if parked[c] {
            if w.has_data(Duration::from_millis(2)) {
                let r = w.read().map_err(|e| fail(n, e))?;
                return Err(fail(
                    n,
                    format!("conn {c} should be parked but got {}", r.show()),
                ));
            }
        } else {
            let r = w.cmd(&["PING"]).map_err(|e| fail(n, e))?;
            check(
                n,
                &format!("final PING on conn {c}"),
                &r,
                &Resp::Simple(b"PONG".to_vec()),
            )?;
        }
    }
    Ok(())
}

fn generate(seed: u64) -> Vec<Step> {
    let mut g = Gen {
        rng: StdRng::seed_from_u64(seed),
    };
    let len = g.rng.gen_range(10..70);
    (0..len).map(|_| g.step()).collect()
}

/// Replaces token placeholders: `$Tk` is the k-th latest token granted (0: the last one).
fn resolve(a: &Args, m: &Model) -> Args {
    a.iter()
        .map(|x| match x.strip_prefix(b"$T") {
            Some(k) => {
                let k: u64 = std::str::from_utf8(k).unwrap().parse().unwrap();
                m.last_token.saturating_sub(k).to_string().into_bytes()
            }
            None => x.clone(),
        })
        .collect()
}

fn shrink(rig: &mut Rig, mut steps: Vec<Step>) -> (Vec<Step>, Mismatch) {
    let mut last = match run_case(rig, &steps) {
        Err(m) => m,
        Ok(()) => {
            let m = Mismatch {
                step: usize::MAX,
                what: "did not reproduce on re-run".into(),
            };
            return (steps, m);
        }
    };
    steps.truncate(last.step + 1);
    let mut chunk = steps.len().div_ceil(2).max(1);
    loop {
        let mut i = 0;
        let mut removed = false;
        while i < steps.len() {
            let mut cand = steps.clone();
            cand.drain(i..(i + chunk).min(steps.len()));
            match run_case(rig, &cand) {
                Err(m) => {
                    cand.truncate((m.step + 1).min(cand.len()));
                    steps = cand;
                    last = m;
                    removed = true;
                }
                Ok(()) => i += chunk,
            }
        }
        if chunk == 1 && !removed {
            return (steps, last);
        }
        chunk = (chunk / 2).max(1);
    }
}

#[test]
fn lock_commands_match_the_model() {
    // CI: 2000 fixed sequences (about 15 s in release), capped at 30 s.
    let set = Settings::from_env("FUZZ_LOCKS", 2000, 30);
    fuzz::count_panics();
    let t = Tumbler::start_with(&[("enable-time-control", "yes")]);
    let mut ctl = Wire::connect(t.addr).unwrap();
    assert_eq!(
        ctl.cmd(&["TUMBLER.TIME", "FREEZE"]).unwrap(),
        Resp::Simple(b"OK".to_vec())
    );
    let mut conns = Vec::new();
    let mut ids = Vec::new();
    for _ in 0..CONNS {
        let mut w = Wire::connect(t.addr).unwrap();
        ids.push(client_id(&mut w).unwrap());
        conns.push(w);
    }
    let mut rig = Rig {
        addr: t.addr,
        ctl,
        conns,
        ids,
    };
    let start = Instant::now();
    let (mut done, mut nsteps, mut failures) = (0u64, 0usize, Vec::new());
    for i in 0..set.count {
        if set.secs > 0 && start.elapsed().as_secs() >= set.secs {
            eprintln!("time cap of {} s reached", set.secs);
            break;
        }
        let seed = set.seed + i;
        let steps = generate(seed);
        nsteps += steps.len();
        if let Err(m) = run_case(&mut rig, &steps) {
            eprintln!("seed {seed}: mismatch at step {}: {}", m.step, m.what);
            let (min, m) = shrink(&mut rig, steps);
            let mut report = format!(
                "MISMATCH seed {seed} (replay: FUZZ_SEED={seed} cargo test -p tumbler-tests --test fuzz_locks)\n"
            );
            report.push_str("  ($Tk below is the k-th latest fencing token granted)\n");
            for st in &min {
                report.push_str(&format!("  {}\n", st.show()));
            }
            report.push_str(&format!("{}\n", m.what));
            eprintln!("{report}");
            failures.push(report);
            if failures.len() >= 10 {
                break;
            }
        }
        done += 1;
        if done % 10_000 == 0 {
            eprintln!(
                "{done} lock sequences, {} mismatches, {:.0} s",
                failures.len(),
                start.elapsed().as_secs_f64()
            );
        }
    }
    let panics = fuzz::panics();
    println!(
        "lock model fuzz: {done} sequences ({nsteps} steps) from seed {}, {} parked, {} handed a token later, {} timed out, {} mismatches, {} server panics, {:.1} s",
        set.seed,
        PARKED.load(Ordering::Relaxed),
        SERVED_TOKEN.load(Ordering::Relaxed),
        SERVED_NIL.load(Ordering::Relaxed),
        failures.len(),
        panics,
        start.elapsed().as_secs_f64()
    );
    assert_eq!(panics, 0, "the server panicked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
