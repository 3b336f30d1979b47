//! The lock-order checker ("lockdep" for distributed locks): who holds which lock, the
//! order in which owners nest lock classes, order inversions and live deadlocks.
//! docs/lockdep.md is the user-facing description.
//!
//! It is off unless the server sets [`Engine::lockdep`]; every hook in the command
//! handlers is one `Option` check then. When on, the hooks report:
//! - an **acquisition** by an owner: a native LOCK.ACQUIRE / RW.RLOCK / RW.WLOCK grant to
//!   a new holder; a `SET key token NX PX|EX` that stored (the owner is the connection); a
//!   hash write that gives a Redisson-shaped holder field (`uuid:threadId`, `...:write`)
//!   its first hold (reentry, a count going 1 -> 2, is not an acquisition);
//! - a **failed attempt** (the owner waits): a native acquire that queues or answers nil, a
//!   `SET NX` that found the key, and a script that probed a lock hash for its holder field
//!   (`HEXISTS` answering 0) and then read the lock's `PTTL`, which is what every Redisson
//!   acquire script does when the lock is taken.
//!
//! Releases are not hooked at all: what an owner holds is checked against the keyspace when
//! it is needed (at its next acquisition or wait), so DEL, HINCRBY -1, a Lua
//! compare-and-delete, expiry, FLUSHALL and RENAME are all seen the same way, and a
//! release-then-acquire leaves no nesting behind.

use bytes::Bytes;
use serde::Serialize;
use std::collections::{HashMap, HashSet, VecDeque};

/// Owner ids and lock names come from clients: keyed aHash, as the keyspace uses
/// (crate::storage::key::KeyHasher), resists flooding at a fraction of SipHash's cost.
type Map<K, V> = HashMap<K, V, crate::storage::key::KeyHasher>;
use std::fmt::Write as _;

use crate::engine::spec::{flag::*, CommandSpec, Ctx, Exec, BASE};
use crate::engine::Engine;
use crate::reply::Reply;
use crate::storage::value::Value;
use crate::storage::ClientId;

/// The channel each new finding is published on.
pub const CHANNEL: &str = "__tumbler__:lockdep";

/// How long a failed attempt counts as waiting when the lock it wants has no TTL.
const WAIT_WITHOUT_TTL_MS: i64 = 30_000;

/// How a lock name becomes its class: which parts are replaced by `*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassRules {
    pub uuids: bool,
    pub hash_tags: bool,
    pub digits: bool,
}

impl Default for ClassRules {
    fn default() -> Self {
        ClassRules {
            uuids: true,
            hash_tags: true,
            digits: true,
        }
    }
}

impl ClassRules {
    /// Parses the `lockdep-classes` config: letters `u` (UUIDs), `t` (hash-tag contents),
    /// `d` (digit runs); the empty string makes every lock name its own class.
    pub fn parse(s: &str) -> Option<ClassRules> {
        let mut r = ClassRules {
            uuids: false,
            hash_tags: false,
            digits: false,
        };
        for c in s.chars() {
            match c {
                'u' => r.uuids = true,
                't' => r.hash_tags = true,
                'd' => r.digits = true,
                _ => return None,
            }
        }
        Some(r)
    }

    /// The canonical config string.
    pub fn to_config_string(self) -> String {
        let mut s = String::new();
        for (on, c) in [(self.uuids, 'u'), (self.hash_tags, 't'), (self.digits, 'd')] {
            if on {
                s.push(c);
            }
        }
        s
    }

    /// The class of a lock name: `order:{42}:line:7` -> `order:{*}:line:*`.
    pub fn class_of(self, key: &[u8]) -> String {
        let mut out = Vec::with_capacity(key.len());
        self.class_into(key, &mut out);
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    /// The bytes of [`ClassRules::class_of`] into `out` (cleared first), so a hot path can
    /// reuse one buffer and allocate nothing.
    pub fn class_into(self, key: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.reserve(key.len());
        // The usual name has no `{` and no `-`, so neither a hash tag nor a UUID: one pass
        // replacing digit runs. Anything else takes the general path below.
        let (mut i, mut plain) = (0, 0);
        while i < key.len() {
            let c = key[i];
            if c == b'{' || c == b'-' {
                out.clear();
                return self.class_into_general(key, out);
            }
            i += 1;
            if self.digits && c.is_ascii_digit() {
                out.extend_from_slice(&key[plain..i - 1]);
                out.push(b'*');
                while i < key.len() && key[i].is_ascii_digit() {
                    i += 1;
                }
                plain = i;
            }
        }
        out.extend_from_slice(&key[plain..]);
    }

    fn class_into_general(self, key: &[u8], out: &mut Vec<u8>) {
        let b = key;
        // Redis' hash tag: the first `{` and the next `}` after it, with something between.
        let tag = self
            .hash_tags
            .then(|| {
                let open = b.iter().position(|&c| c == b'{')?;
                let close = open + 1 + b[open + 1..].iter().position(|&c| c == b'}')?;
                (close > open + 1).then_some((open + 1, close))
            })
            .flatten();
        // Bytes in, bytes out: every part replaced is ASCII, so multi-byte UTF-8 sequences
        // (all bytes >= 0x80) are copied whole.
        // Plain bytes are copied a run at a time.
        let (mut i, mut plain) = (0, 0);
        while i < b.len() {
            let c = b[i];
            let next = if tag.is_some_and(|(s, _)| s == i) {
                tag.map_or(i, |(_, e)| e)
            } else if self.uuids
                && c.is_ascii_hexdigit()
                && i + 36 <= b.len()
                && b[i + 8] == b'-'
                && is_uuid_bytes(&b[i..i + 36])
            {
                i + 36
            } else if self.digits && c.is_ascii_digit() {
                i + b[i..].iter().take_while(|c| c.is_ascii_digit()).count()
            } else {
                i += 1;
                continue;
            };
            out.extend_from_slice(&b[plain..i]);
            out.push(b'*');
            i = next;
            plain = i;
        }
        out.extend_from_slice(&b[plain..]);
    }
}

fn is_uuid_bytes(b: &[u8]) -> bool {
    crate::engine::locks::redisson::is_uuid_bytes(b)
}

/// What kind of lock an owner holds, and how to tell it still holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LockKind {
    /// A native LOCK.* or RW.* lock: the key's lock value lists the owner.
    Native,
    /// A Redisson hash: the owner's field (`owner` or `owner:write`) has a positive count.
    Redisson,
    /// `SET key token NX PX`: the key still holds the token.
    SetNx(Bytes),
}

/// Where and when an acquisition or an attempt happened.
#[derive(Debug, Clone)]
struct Site {
    time: i64,
    command: String,
}

/// What one owner holds, by class, so that an acquisition looks at one lock per class it
/// holds, however many locks of one class it holds (an owner may hold thousands).
#[derive(Debug, Default)]
struct Holdings {
    /// The owner's first lock, while it is the only one recorded: an owner that holds one
    /// lock makes no edge, so its class is worked out only once the owner takes another
    /// lock (or waits), by [`Holdings::settle`]. Set only while `classes` is empty.
    first: Option<(usize, Bytes, LockKind)>,
    /// Few per owner: a list, not a map.
    classes: Vec<(String, ClassHolds)>,
}

impl Holdings {
    /// Files the first lock under its class.
    fn settle(&mut self, rules: ClassRules) {
        if let Some((db, key, kind)) = self.first.take() {
            let mut ch = ClassHolds::default();
            let class = rules.class_of(&key);
            ch.locks.insert((db, key), kind);
            self.classes.push((class, ch));
        }
    }
}

#[derive(Debug, Default)]
struct ClassHolds {
    locks: Map<(usize, Bytes), LockKind>,
    /// The size at which the next full check of `locks` runs (amortised O(1) pruning).
    prune_at: usize,
}

/// One edge of the order graph: the first time an owner holding `held` took `lock`.
#[derive(Debug, Clone)]
struct Edge {
    owner: String,
    held: Bytes,
    lock: Bytes,
    site: Site,
}

#[derive(Debug, Clone)]
struct Wait {
    db: usize,
    key: Bytes,
    site: Site,
    until: i64,
}

/// One finding, as TUMBLER.LOCKDEP REPORT lists it and [`CHANNEL`] publishes it: the cycle
/// (classes for an inversion, lock names for a deadlock) and its edges.
#[derive(Debug, Clone, Serialize)]
struct Finding<E> {
    cycle: Vec<String>,
    edges: Vec<E>,
    /// One line for logs and panics.
    #[serde(skip)]
    text: String,
}

/// An edge of an inversion: `owner`, holding `held` (of class `from`), took `lock` (of
/// class `to`).
#[derive(Debug, Clone, Serialize)]
struct InversionEdge {
    from: String,
    to: String,
    owner: String,
    held: String,
    lock: String,
    time: i64,
    command: String,
}

/// An edge of a deadlock: `owner` holds `holds` and waits for `lock`.
#[derive(Debug, Clone, Serialize)]
struct DeadlockEdge {
    owner: String,
    holds: String,
    lock: String,
    time: i64,
    command: String,
}

/// The document TUMBLER.LOCKDEP REPORT returns.
#[derive(Serialize)]
struct Report<'a> {
    mode: &'static str,
    inversions: &'a [Finding<InversionEdge>],
    deadlocks: &'a [Finding<DeadlockEdge>],
}

fn json(v: &impl Serialize) -> String {
    serde_json::to_string(v).expect("strings and integers serialize")
}

/// See [`Lockdep::last_uuid`].
#[derive(Debug)]
struct UuidMemo([u8; 36]);

impl Default for UuidMemo {
    fn default() -> Self {
        UuidMemo([0; 36])
    }
}

/// The checker's state, on the engine (so every hook runs under the keyspace lock).
#[derive(Debug, Default)]
pub struct Lockdep {
    /// Strict mode: an acquisition that closes a cycle is refused with an error.
    pub strict: bool,
    pub rules: ClassRules,
    /// The running top-level command, for edges (`set`, `lock.acquire`, ...).
    pub command: &'static str,
    /// The running script's SHA, while a script runs.
    in_script: bool,
    /// Its SHA (the buffer is reused from script to script).
    script_sha: String,
    /// A script probed a lock hash for this owner's field and found none.
    probe: Option<(String, usize, Bytes)>,
    /// hashbrown's map for `entry_ref`: an acquisition hashes its owner once, and clones
    /// it only for an owner not seen holding anything.
    held: hashbrown::HashMap<String, Holdings, crate::storage::key::KeyHasher>,
    /// The class of the lock being acquired is built here (no allocation per acquisition).
    class_buf: Vec<u8>,
    /// The last holder-field UUID found valid (all zeros, not a UUID, until then).
    last_uuid: UuidMemo,
    /// Owners' count at which the next sweep of released holds runs.
    sweep_at: usize,
    /// class -> class -> the first edge seen.
    graph: Map<String, Map<String, Edge>>,
    waits: Map<String, Wait>,
    inversions: Vec<Finding<InversionEdge>>,
    deadlocks: Vec<Finding<DeadlockEdge>>,
    seen_cycles: HashSet<Vec<String>>,
    seen_deadlocks: HashSet<Vec<String>>,
    /// The owner of each `SET NX` lock taken (checked against its token when read; pruned
    /// with the owners).
    setnx_owners: Map<(usize, Bytes), (String, Bytes)>,
    setnx_sweep_at: usize,
    /// CLIENT SETNAME names, for `SET NX` owners.
    names: HashMap<ClientId, String>,
    pub acquisitions: u64,
    pub waits_seen: u64,
    pub refused: u64,
}

impl Lockdep {
    pub fn new(strict: bool, rules: ClassRules) -> Lockdep {
        Lockdep {
            strict,
            rules,
            sweep_at: 1024,
            ..Default::default()
        }
    }

    /// Forgets every edge, hold, wait and finding (TUMBLER.LOCKDEP RESET).
    pub fn reset(&mut self) {
        *self = Lockdep {
            names: std::mem::take(&mut self.names),
            ..Lockdep::new(self.strict, self.rules)
        };
    }

    /// Changes the class rules (`lockdep-classes`). Locks already held keep the class they
    /// were taken under.
    pub fn set_rules(&mut self, rules: ClassRules) {
        if rules != self.rules {
            let old = self.rules;
            self.held.values_mut().for_each(|h| h.settle(old));
            self.rules = rules;
        }
    }

    pub fn begin_script(&mut self, sha: &str) {
        self.in_script = true;
        self.script_sha.clear();
        self.script_sha.push_str(sha);
        self.probe = None;
    }
    pub fn end_script(&mut self) {
        self.in_script = false;
        self.probe = None;
    }

    /// Records a connection's CLIENT SETNAME (its `SET NX` owner name).
    pub fn set_client_name(&mut self, id: ClientId, name: &[u8]) {
        if name.is_empty() {
            self.names.remove(&id);
        } else {
            self.names
                .insert(id, String::from_utf8_lossy(name).into_owned());
        }
    }
    pub fn client_gone(&mut self, id: ClientId) {
        self.names.remove(&id);
    }

    fn site(&self, now: i64) -> Site {
        Site {
            time: now,
            command: match self.in_script {
                true => format!("script {}", self.script_sha),
                false => self.command.to_string(),
            },
        }
    }

    fn client_owner(&self, id: ClientId) -> String {
        match self.names.get(&id) {
            Some(n) => n.clone(),
            None => format!("client:{id}"),
        }
    }

    pub fn inversion_count(&self) -> usize {
        self.inversions.len()
    }
    pub fn deadlock_count(&self) -> usize {
        self.deadlocks.len()
    }
    pub fn edge_count(&self) -> usize {
        self.graph.values().map(|m| m.len()).sum()
    }
    pub fn class_count(&self) -> usize {
        let mut c: HashSet<&String> = self.graph.keys().collect();
        c.extend(self.graph.values().flat_map(|m| m.keys()));
        c.len()
    }
    pub fn owner_count(&self) -> usize {
        self.held.len()
    }

    /// The JSON document TUMBLER.LOCKDEP REPORT returns.
    pub fn report(&self) -> String {
        json(&Report {
            mode: if self.strict { "strict" } else { "yes" },
            inversions: &self.inversions,
            deadlocks: &self.deadlocks,
        })
    }

    /// Every finding, one line each (inversions, then deadlocks); empty if none.
    pub fn describe(&self) -> String {
        let inversions = self.inversions.iter().map(|f| f.text.as_str());
        inversions
            .chain(self.deadlocks.iter().map(|f| f.text.as_str()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The counters of INFO's `lockdep` section.
    pub fn info(&self) -> String {
        format!(
            "lockdep_mode:{}\r\nlockdep_classes:{}\r\nlockdep_edges:{}\r\nlockdep_owners:{}\r\nlockdep_acquisitions:{}\r\nlockdep_waits:{}\r\nlockdep_inversions:{}\r\nlockdep_deadlocks:{}\r\nlockdep_refused:{}\r\n",
            if self.strict { "strict" } else { "yes" },
            self.class_count(),
            self.edge_count(),
            self.owner_count(),
            self.acquisitions,
            self.waits_seen,
            self.inversions.len(),
            self.deadlocks.len(),
            self.refused,
        )
    }
}

// ---------------------------------------------------------------- holding

/// Does `owner` still hold `key`, by the keyspace as it is now?
fn alive(eng: &Engine, owner: &str, db: usize, key: &Bytes, kind: &LockKind, now: i64) -> bool {
    let Some(e) = eng.dbs.get(db).and_then(|d| d.get(key)) else {
        return false;
    };
    if e.expire_at().is_some_and(|t| t <= now) {
        return false;
    }
    match (kind, &e.value) {
        (LockKind::Native, Value::Lock(l)) => l.holders.iter().any(|x| {
            x.owner.as_ref() == owner.as_bytes()
                && (x.holds > 0 || x.reads > 0)
                && x.lease_until.is_none_or(|t| t > now)
        }),
        (LockKind::Redisson, Value::Hash(hv)) => {
            let count = |f: &[u8]| {
                hv.get(f)
                    .and_then(crate::num::parse_i64)
                    .is_some_and(|n| n > 0)
            };
            count(owner.as_bytes()) || count(format!("{owner}:write").as_bytes())
        }
        (LockKind::SetNx(token), Value::Str(v)) => v == token,
        _ => false,
    }
}

/// One lock of this class the owner still holds, dropping the released ones it meets on
/// the way (so repeated calls cost amortised O(1)).
fn live_one(eng: &Engine, owner: &str, ch: &mut ClassHolds, now: i64) -> Option<Bytes> {
    let mut dead = Vec::new();
    let mut found = None;
    for ((db, key), kind) in &ch.locks {
        if alive(eng, owner, *db, key, kind, now) {
            found = Some(key.clone());
            break;
        }
        dead.push((*db, key.clone()));
    }
    for d in dead {
        ch.locks.remove(&d);
    }
    found
}

/// Does `owner` hold `key` (of `class`) right now?
fn holds(
    eng: &Engine,
    ld: &Lockdep,
    owner: &str,
    class: &str,
    db: usize,
    key: &Bytes,
    now: i64,
) -> bool {
    let h = ld.held.get(owner);
    if let Some((fdb, fkey, kind)) = h.and_then(|h| h.first.as_ref()) {
        return *fdb == db && fkey == key && alive(eng, owner, db, key, kind, now);
    }
    h.and_then(|h| h.classes.iter().find(|(c, _)| c == class))
        .map(|(_, ch)| ch)
        .and_then(|ch| ch.locks.get(&(db, key.clone())))
        .is_some_and(|kind| alive(eng, owner, db, key, kind, now))
}

/// One lock the owner still holds per class (other than `except`), as (class, key).
fn held_classes(
    eng: &Engine,
    ld: &mut Lockdep,
    owner: &str,
    except: &str,
    now: i64,
) -> Vec<(String, Bytes)> {
    let Some(h) = ld.held.get_mut(owner) else {
        return Vec::new();
    };
    h.settle(ld.rules);
    let mut out = Vec::new();
    for (class, ch) in h.classes.iter_mut() {
        if class != except {
            if let Some(key) = live_one(eng, owner, ch, now) {
                out.push((class.clone(), key));
            }
        }
    }
    h.classes.retain(|(_, ch)| !ch.locks.is_empty());
    if h.classes.is_empty() {
        ld.held.remove(owner);
    }
    out
}

/// Now and then, drops owners that hold nothing any more, so memory follows the locks held
/// now rather than every owner ever seen. Amortised O(1) per acquisition.
fn maybe_sweep(eng: &Engine, ld: &mut Lockdep, now: i64) {
    if ld.held.len() < ld.sweep_at {
        return;
    }
    ld.held.retain(|owner, h| {
        if let Some((db, key, kind)) = &h.first {
            return alive(eng, owner, *db, key, kind, now);
        }
        h.classes.retain_mut(|(_, ch)| {
            ch.locks
                .retain(|(db, key), kind| alive(eng, owner, *db, key, kind, now));
            !ch.locks.is_empty()
        });
        !h.classes.is_empty()
    });
    ld.waits.retain(|_, w| w.until > now);
    prune_setnx_owners(eng, ld);
    // Eight times what is left: each owner still holding is checked a seventh of a time
    // per acquisition, amortised (twice cost a whole check per acquisition).
    ld.sweep_at = (ld.held.len() * 8).max(1024);
}

/// Drops `SET NX` locks whose key no longer holds the token.
fn prune_setnx_owners(eng: &Engine, ld: &mut Lockdep) {
    ld.setnx_owners.retain(|(db, key), (_, token)| {
        eng.dbs[*db]
            .get(key)
            .is_some_and(|e| matches!(&e.value, Value::Str(v) if v == token))
    });
}

/// Takes the checker off the engine for a hook (it needs the keyspace too) and puts it back.
fn with<R>(eng: &mut Engine, f: impl FnOnce(&mut Engine, &mut Lockdep) -> R) -> Option<R> {
    let mut ld = eng.lockdep.take()?;
    let r = f(eng, &mut ld);
    eng.lockdep = Some(ld);
    Some(r)
}

/// An owner acquires a lock it did not hold. Records the order edges from every lock it
/// holds; `Err` (strict mode only) refuses the acquisition that closes a cycle, before the
/// caller changes anything.
fn acquire(
    eng: &mut Engine,
    ld: &mut Lockdep,
    owner: &str,
    db: usize,
    key: &Bytes,
    kind: LockKind,
) -> Result<(), Reply> {
    let now = eng.now_ms();
    let mut buf = std::mem::take(&mut ld.class_buf);
    let r = acquire_class(eng, ld, owner, &mut buf, db, key, kind, now);
    ld.class_buf = buf;
    r
}

#[allow(clippy::too_many_arguments)]
fn acquire_class(
    eng: &mut Engine,
    ld: &mut Lockdep,
    owner: &str,
    buf: &mut Vec<u8>,
    db: usize,
    key: &Bytes,
    kind: LockKind,
    now: i64,
) -> Result<(), Reply> {
    let rules = ld.rules;
    let h = match ld.held.entry_ref(owner) {
        hashbrown::hash_map::EntryRef::Vacant(v) => {
            // It holds nothing, so this acquisition can make no edge: only record the hold
            // (its class is not even needed yet).
            v.insert(Holdings {
                // Copies: an argument slice would pin the whole read buffer it came from.
                first: Some((db, Bytes::copy_from_slice(key), kind)),
                classes: Vec::new(),
            });
            acquired(eng, ld, owner, db, key, now);
            return Ok(());
        }
        hashbrown::hash_map::EntryRef::Occupied(o) => o.into_mut(),
    };
    h.settle(rules);
    rules.class_into(key, buf);
    // Classes are compared as bytes; a name that is not ASCII gets its class as a (lossy)
    // string first, as the class strings held are.
    let lossy;
    let class_b: &[u8] = match buf.is_ascii() {
        true => buf,
        false => {
            lossy = String::from_utf8_lossy(buf);
            lossy.as_bytes()
        }
    };
    // One lock it still holds per other class, dropping released ones on the way.
    let mut held: Vec<(String, Bytes)> = Vec::new();
    for (c, ch) in h.classes.iter_mut() {
        if c.as_bytes() != class_b {
            if let Some(k) = live_one(eng, owner, ch, now) {
                held.push((c.clone(), k));
            }
        }
    }
    h.classes.retain(|(_, ch)| !ch.locks.is_empty());
    if held.is_empty() {
        // Nothing else held (only locks of this class): no edge. One hash of the lock
        // finds a reentry or records the hold.
        let ch = class_holds(h, class_b);
        match ch.locks.entry((db, Bytes::copy_from_slice(key))) {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                if alive(eng, owner, db, key, e.get(), now) {
                    // Another side of a lock it already holds (a Redisson read-write
                    // lock's write hold next to its read hold): reentry, not a new lock.
                    return Ok(());
                }
                e.insert(kind);
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(kind);
            }
        }
        prune(eng, ch, owner, now);
        acquired(eng, ld, owner, db, key, now);
        return Ok(());
    }
    let class = std::str::from_utf8(class_b).unwrap_or_default();
    if let Some((_, ch)) = h.classes.iter().find(|(c, _)| c == class) {
        if ch
            .locks
            .get(&(db, key.clone()))
            .is_some_and(|k| alive(eng, owner, db, key, k, now))
        {
            // Reentry, as above.
            return Ok(());
        }
    }
    let site = ld.site(now);
    let mut new_edges = Vec::new();
    for (held_class, held_key) in &held {
        if ld
            .graph
            .get(held_class)
            .is_some_and(|m| m.contains_key(class))
        {
            continue;
        }
        let edge = Edge {
            owner: owner.to_string(),
            held: held_key.clone(),
            lock: Bytes::copy_from_slice(key),
            site: site.clone(),
        };
        if let Some(path) = path(&ld.graph, class, held_class) {
            let mut cycle = vec![held_class.clone(), class.to_string()];
            let mut edges = vec![(held_class.clone(), class.to_string(), edge.clone())];
            for (from, to) in path {
                cycle.push(to.clone());
                let e = ld.graph[&from][&to].clone();
                edges.push((from, to, e));
            }
            cycle.pop(); // back at the start
            let mut canon = cycle.clone();
            canon.sort();
            if ld.seen_cycles.insert(canon) {
                let what = format!(
                    "lock order inversion {} (owner {owner} holds {} and acquires {})",
                    cycle_text(&cycle),
                    String::from_utf8_lossy(held_key),
                    String::from_utf8_lossy(key)
                );
                let finding = Finding {
                    cycle: cycle.clone(),
                    edges: edges
                        .iter()
                        .map(|(from, to, e)| InversionEdge {
                            from: from.clone(),
                            to: to.clone(),
                            owner: e.owner.clone(),
                            held: lossy_string(&e.held),
                            lock: lossy_string(&e.lock),
                            time: e.site.time,
                            command: e.site.command.clone(),
                        })
                        .collect(),
                    text: what,
                };
                publish(eng, &finding.text, &json(&finding));
                ld.inversions.push(finding);
            }
            if ld.strict {
                ld.refused += 1;
                return Err(Reply::err(format!(
                    "LOCKDEP lock order inversion {}: {owner} holds {} and acquires {}",
                    cycle_text(&cycle),
                    String::from_utf8_lossy(held_key),
                    String::from_utf8_lossy(key)
                )));
            }
        }
        new_edges.push((held_class.clone(), edge));
    }
    for (from, edge) in new_edges {
        ld.graph
            .entry(from)
            .or_default()
            .entry(class.to_string())
            .or_insert(edge);
    }
    let h = ld.held.entry_ref(owner).or_default();
    add_hold(eng, h, owner, class, db, key, kind, now);
    acquired(eng, ld, owner, db, key, now);
    Ok(())
}

/// Records that `owner` holds `key` (of `class`).
#[allow(clippy::too_many_arguments)]
fn add_hold(
    eng: &Engine,
    holdings: &mut Holdings,
    owner: &str,
    class: &str,
    db: usize,
    key: &Bytes,
    kind: LockKind,
    now: i64,
) {
    let ch = class_holds(holdings, class.as_bytes());
    // Copies: an argument slice would pin the whole read buffer it came from.
    ch.locks.insert((db, Bytes::copy_from_slice(key)), kind);
    prune(eng, ch, owner, now);
}

/// The owner's holds of `class`, added if it has none.
fn class_holds<'h>(holdings: &'h mut Holdings, class: &[u8]) -> &'h mut ClassHolds {
    let at = match holdings
        .classes
        .iter()
        .position(|(c, _)| c.as_bytes() == class)
    {
        Some(at) => at,
        None => {
            holdings.classes.push((
                String::from_utf8_lossy(class).into_owned(),
                ClassHolds::default(),
            ));
            holdings.classes.len() - 1
        }
    };
    &mut holdings.classes[at].1
}

/// Drops released locks from `ch` when it has grown eightfold since the last time.
fn prune(eng: &Engine, ch: &mut ClassHolds, owner: &str, now: i64) {
    if ch.locks.len() >= ch.prune_at.max(16) {
        ch.locks
            .retain(|(db, key), kind| alive(eng, owner, *db, key, kind, now));
        ch.prune_at = ch.locks.len() * 8;
    }
}

/// The bookkeeping after any recorded acquisition: counts, the owner's wait for this lock
/// is over, and now and then a sweep of owners that hold nothing.
fn acquired(eng: &Engine, ld: &mut Lockdep, owner: &str, db: usize, key: &Bytes, now: i64) {
    ld.acquisitions += 1;
    if ld
        .waits
        .get(owner)
        .is_some_and(|w| w.db == db && w.key == *key)
    {
        ld.waits.remove(owner);
    }
    maybe_sweep(eng, ld, now);
}

/// A path `from` ->* `to` in the order graph (breadth first: the shortest), as its edges.
fn path(
    graph: &Map<String, Map<String, Edge>>,
    from: &str,
    to: &str,
) -> Option<Vec<(String, String)>> {
    let mut parent: HashMap<&str, &str> = HashMap::new();
    let mut queue = VecDeque::from([from]);
    let mut seen = HashSet::from([from]);
    while let Some(c) = queue.pop_front() {
        if c == to {
            let mut out = Vec::new();
            let mut at = to;
            while at != from {
                let p = parent[at];
                out.push((p.to_string(), at.to_string()));
                at = p;
            }
            out.reverse();
            return Some(out);
        }
        for next in graph.get(c).into_iter().flat_map(|m| m.keys()) {
            if seen.insert(next) {
                parent.insert(next, c);
                queue.push_back(next);
            }
        }
    }
    None
}

// ---------------------------------------------------------------- waiting

/// An owner failed to take `key`. If it holds another lock, it waits; if the owners it
/// waits for wait, in turn, for it, that is a deadlock.
fn wait(eng: &mut Engine, ld: &mut Lockdep, owner: String, db: usize, key: &Bytes) {
    let now = eng.now_ms();
    let class = ld.rules.class_of(key);
    if holds(eng, ld, &owner, &class, db, key, now)
        || held_classes(eng, ld, &owner, "", now).is_empty()
    {
        // It holds nothing (so it cannot be in a deadlock), or already holds this lock.
        ld.waits.remove(&owner);
        return;
    }
    let ttl = eng.dbs[db]
        .get(key)
        .and_then(|e| e.expire_at())
        .map_or(WAIT_WITHOUT_TTL_MS, |t| (t - now).max(0));
    ld.waits_seen += 1;
    let site = ld.site(now);
    let fresh = Wait {
        db,
        key: Bytes::copy_from_slice(key),
        // Until the lease it waits for ends, and a second more for the retry.
        until: now + ttl + 1000,
        site,
    };
    match ld.waits.get_mut(&owner) {
        Some(w) if w.db == db && w.key == *key => w.until = fresh.until,
        _ => {
            ld.waits.insert(owner.clone(), fresh);
        }
    }
    if let Some(cycle) = wait_cycle(eng, ld, &owner, now) {
        let mut canon: Vec<String> = cycle
            .iter()
            .map(|(o, w)| format!("{o}\u{0}{}", String::from_utf8_lossy(&w.key)))
            .collect();
        canon.sort();
        if ld.seen_deadlocks.insert(canon) {
            let names: Vec<String> = cycle
                .iter()
                .map(|(_, w)| String::from_utf8_lossy(&w.key).into_owned())
                .collect();
            let what = format!("deadlock {}", cycle_text(&names));
            let what = format!(
                "{what} (owners {})",
                cycle
                    .iter()
                    .map(|(o, _)| o.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let n = cycle.len();
            let finding = Finding {
                cycle: names,
                edges: cycle
                    .iter()
                    .enumerate()
                    .map(|(i, (o, w))| DeadlockEdge {
                        owner: o.clone(),
                        // The lock this owner holds is the one the previous owner waits for.
                        holds: lossy_string(&cycle[(i + n - 1) % n].1.key),
                        lock: lossy_string(&w.key),
                        time: w.site.time,
                        command: w.site.command.clone(),
                    })
                    .collect(),
                text: what,
            };
            publish(eng, &finding.text, &json(&finding));
            ld.deadlocks.push(finding);
        }
    }
}

/// The owners currently holding `key`, by the checker's records checked against the keyspace.
/// Read from the lock itself (its holder list or holder fields), so the cost is the number
/// of holders, not of owners; a `SET NX` lock's owner comes from `setnx_owners`.
fn holders_of(eng: &Engine, ld: &Lockdep, db: usize, key: &Bytes, now: i64) -> Vec<String> {
    let Some(e) = eng.dbs.get(db).and_then(|d| d.get(key)) else {
        return Vec::new();
    };
    if e.expire_at().is_some_and(|t| t <= now) {
        return Vec::new();
    }
    match &e.value {
        Value::Lock(l) => l
            .holders
            .iter()
            .filter(|h| (h.holds > 0 || h.reads > 0) && h.lease_until.is_none_or(|t| t > now))
            .map(|h| String::from_utf8_lossy(&h.owner).into_owned())
            .collect(),
        Value::Hash(h) if h.len() <= 64 => {
            let mut out = Vec::new();
            let mut add = |f: &[u8], v: &[u8]| {
                let holder = std::str::from_utf8(f)
                    .ok()
                    .and_then(crate::engine::locks::redisson::parse_holder_field);
                if let Some((o, _)) = holder {
                    if crate::num::parse_i64(v).is_some_and(|n| n > 0)
                        && !out.iter().any(|x| x == o)
                    {
                        out.push(o.to_string());
                    }
                }
            };
            match h {
                crate::storage::value::HashValue::Pack(p) => p.iter().for_each(|(f, v)| add(f, v)),
                crate::storage::value::HashValue::Table(m) => m.iter().for_each(|(f, v)| add(f, v)),
            }
            out
        }
        Value::Str(v) => match ld.setnx_owners.get(&(db, key.clone())) {
            Some((owner, token)) if token[..] == v[..] => vec![owner.clone()],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// A cycle of waits through `start`: each owner with the wait that points to the next.
fn wait_cycle(eng: &Engine, ld: &Lockdep, start: &str, now: i64) -> Option<Vec<(String, Wait)>> {
    fn dfs(
        eng: &Engine,
        ld: &Lockdep,
        start: &str,
        at: &str,
        now: i64,
        path: &mut Vec<(String, Wait)>,
    ) -> bool {
        if path.len() > 16 {
            return false;
        }
        let Some(w) = ld.waits.get(at).filter(|w| w.until > now) else {
            return false;
        };
        path.push((at.to_string(), w.clone()));
        for h in holders_of(eng, ld, w.db, &w.key, now) {
            if h == start {
                return true;
            }
            if path.iter().all(|(o, _)| *o != h) && dfs(eng, ld, start, &h, now, path) {
                return true;
            }
        }
        path.pop();
        false
    }
    let mut path = Vec::new();
    dfs(eng, ld, start, start, now, &mut path).then_some(path)
}

// ---------------------------------------------------------------- findings

fn publish(eng: &Engine, what: &str, json: &str) {
    eng.broker.log_warning(&format!("lockdep: {what}"));
    eng.broker.publish(
        &Bytes::from_static(CHANNEL.as_bytes()),
        &Bytes::from(json.to_string()),
        false,
    );
}

fn cycle_text(cycle: &[String]) -> String {
    let mut s = cycle.join(" -> ");
    if let Some(first) = cycle.first() {
        let _ = write!(s, " -> {first}");
    }
    s
}

fn lossy_string(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---------------------------------------------------------------- hooks

/// LOCK.ACQUIRE / RW.RLOCK / RW.WLOCK grant a lock to `owner`, who did not hold it.
pub fn native_acquire(ctx: &mut Ctx, owner: &[u8], key: &Bytes) -> Result<(), Reply> {
    let db = ctx.cl.db;
    let owner = String::from_utf8_lossy(owner);
    with(ctx.eng, |eng, ld| {
        acquire(eng, ld, &owner, db, key, LockKind::Native)
    })
    .unwrap_or(Ok(()))
}

/// A native acquire could not be granted now (it queues, or answers nil).
pub fn native_wait(ctx: &mut Ctx, owner: &[u8], key: &Bytes) {
    let db = ctx.cl.db;
    let owner = String::from_utf8_lossy(owner).into_owned();
    with(ctx.eng, |eng, ld| wait(eng, ld, owner, db, key));
}

/// `SET key token NX PX|EX` is about to store (`stored`) or found the key taken.
pub fn set_nx(ctx: &mut Ctx, key: &Bytes, token: &Bytes, stored: bool) -> Result<(), Reply> {
    let (db, id) = (ctx.cl.db, ctx.cl.id);
    with(ctx.eng, |eng, ld| {
        let owner = ld.client_owner(id);
        if stored {
            let token = Bytes::copy_from_slice(token);
            ld.setnx_owners.insert(
                (db, Bytes::copy_from_slice(key)),
                (owner.clone(), token.clone()),
            );
            if ld.setnx_owners.len() >= ld.setnx_sweep_at.max(1024) {
                prune_setnx_owners(eng, ld);
                ld.setnx_sweep_at = ld.setnx_owners.len() * 2;
            }
            let r = acquire(eng, ld, &owner, db, key, LockKind::SetNx(token));
            if r.is_err() {
                ld.setnx_owners.remove(&(db, key.clone()));
            }
            r
        } else {
            wait(eng, ld, owner, db, key);
            Ok(())
        }
    })
    .unwrap_or(Ok(()))
}

/// Is the hash at `key` shaped like a Redisson lock (only holder fields with counts, and
/// `mode`)? Absent counts as yes: the write is about to create it.
fn lock_shaped(eng: &Engine, db: usize, key: &[u8]) -> bool {
    let Some(e) = eng.dbs[db].get(key) else {
        return true;
    };
    let Value::Hash(h) = &e.value else {
        return false;
    };
    if h.len() > 64 {
        return false;
    }
    let ok = |f: &[u8], v: &[u8]| {
        (f == b"mode" && (v == b"read" || v == b"write"))
            || (std::str::from_utf8(f)
                .ok()
                .and_then(crate::engine::locks::redisson::parse_holder_field)
                .is_some()
                && crate::num::parse_i64(v).is_some_and(|n| n > 0))
    };
    match h {
        crate::storage::value::HashValue::Pack(p) => p.iter().all(|(f, v)| ok(f, v)),
        crate::storage::value::HashValue::Table(m) => m.iter().all(|(f, v)| ok(f, v)),
    }
}

/// A hash write is about to give `field` of `key` its first hold (it had none, and gets a
/// positive count). If the field names a Redisson holder and the hash looks like a lock,
/// that is an acquisition by the holder. In strict mode, one that closes a cycle is
/// refused: the caller returns the error before writing.
pub fn hash_first_hold(ctx: &mut Ctx, key: &Bytes, field: &[u8]) -> Result<(), Reply> {
    first_hold(ctx, key, field, false)
}

/// [`hash_first_hold`] for a caller that just saw that `key` does not exist (so the hash
/// the write creates is lock-shaped, and need not be looked up again).
pub fn hash_first_hold_absent(ctx: &mut Ctx, key: &Bytes, field: &[u8]) -> Result<(), Reply> {
    first_hold(ctx, key, field, true)
}

fn first_hold(ctx: &mut Ctx, key: &Bytes, field: &[u8], absent: bool) -> Result<(), Reply> {
    let Some(ld) = ctx.eng.lockdep.as_deref_mut() else {
        return Ok(());
    };
    let Some(owner) = holder_owner(&mut ld.last_uuid.0, field) else {
        return Ok(());
    };
    let db = ctx.cl.db;
    if !absent && !lock_shaped(ctx.eng, db, key) {
        return Ok(());
    }
    let r = with(ctx.eng, |eng, ld| {
        ld.probe = None;
        acquire(eng, ld, owner, db, key, LockKind::Redisson)
    })
    .unwrap_or(Ok(()));
    if r.is_err() {
        // A read-write lock's acquire script sets `mode` before the holder field: a hash
        // left with `mode` and no holder (and no TTL yet) would block the lock for ever.
        // It held nothing before this script, so removing it restores the state before.
        let orphan = matches!(
            ctx.eng.dbs[db].get(key).map(|e| &e.value),
            Some(Value::Hash(h)) if h.len() == 1 && h.contains(b"mode")
        );
        if orphan {
            ctx.eng.dbs[db].remove(key);
        }
    }
    r
}

/// The owner a Redisson holder field names, as [`crate::engine::locks::redisson::parse_holder_field`]
/// does, but remembering the last UUID that passed: a Redisson client's owners all share
/// its one UUID, so it is checked once rather than on every hold.
fn holder_owner<'f>(last_uuid: &mut [u8; 36], field: &'f [u8]) -> Option<&'f str> {
    let f = std::str::from_utf8(field).ok()?;
    let owner = f.strip_suffix(":write").unwrap_or(f);
    let b = owner.as_bytes();
    if !(b.len() > 37 && b[36] == b':' && b[37..].iter().all(u8::is_ascii_digit)) {
        return None;
    }
    if b[..36] != last_uuid[..] {
        if !crate::engine::locks::redisson::is_uuid_bytes(&b[..36]) {
            return None;
        }
        last_uuid.copy_from_slice(&b[..36]);
    }
    Some(owner)
}

/// HEXISTS answered 0 inside a script: remember the probe; a PTTL of the same lock later in
/// the same script is a failed acquire attempt.
pub fn hash_probe_missed(ctx: &mut Ctx, key: &Bytes, field: &[u8]) {
    let Some(owner) = std::str::from_utf8(field)
        .ok()
        .and_then(crate::engine::locks::redisson::parse_holder_field)
        .map(|(o, _)| o.to_string())
    else {
        return;
    };
    let db = ctx.cl.db;
    if !ctx.eng.dbs[db].contains(key) || !lock_shaped(ctx.eng, db, key) {
        return;
    }
    if let Some(ld) = ctx.eng.lockdep.as_deref_mut() {
        ld.probe = Some((owner, db, Bytes::copy_from_slice(key)));
    }
}

/// PTTL inside a script: after a missed probe of the same lock, the owner failed to take it.
pub fn pttl_read(ctx: &mut Ctx, key: &Bytes) {
    let db = ctx.cl.db;
    with(ctx.eng, |eng, ld| {
        let Some((owner, pdb, pkey)) = ld.probe.take() else {
            return;
        };
        if pdb == db && pkey == *key {
            wait(eng, ld, owner, db, key);
        }
    });
}

// ---------------------------------------------------------------- TUMBLER.LOCKDEP

pub const LOCKDEP: &str = "tumbler.lockdep";

const fn sub(
    name: &'static str,
    flags: u32,
    summary: &'static str,
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        parent: LOCKDEP,
        arity: 2,
        flags,
        group: "server",
        since: "0.1.0",
        summary,
        acl: &["slow"],
        exec: Exec::Engine(h),
        ..BASE
    }
}

pub static LOCKDEP_SUBS: &[CommandSpec] = &[
    sub(
        "report",
        NOSCRIPT | LOADING | STALE,
        "Returns the lock-order checker's findings as a JSON document.",
        report_cmd,
    ),
    sub(
        "reset",
        NOSCRIPT | LOADING | STALE,
        "Forgets the lock-order checker's order graph, holds and findings.",
        reset_cmd,
    ),
];

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: LOCKDEP,
    arity: -2,
    flags: 0,
    group: "server",
    since: "0.1.0",
    summary: "A container for the lock-order checker (--lockdep yes|strict).",
    exec: Exec::Container,
    subcommands: LOCKDEP_SUBS,
    ..BASE
}];

fn report_cmd(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    let doc = match ctx.eng.lockdep.as_deref() {
        Some(ld) => ld.report(),
        None => json(&Report {
            mode: "no",
            inversions: &[],
            deadlocks: &[],
        }),
    };
    Reply::Bulk(Bytes::from(doc))
}

fn reset_cmd(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    if let Some(ld) = ctx.eng.lockdep.as_deref_mut() {
        ld.reset();
    }
    Reply::ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_replace_digits_uuids_and_hash_tags() {
        let r = ClassRules::default();
        assert_eq!(r.class_of(b"lock:000123"), "lock:*");
        assert_eq!(r.class_of(b"a1b22c-3"), "a*b*c-*");
        assert_eq!(r.class_of(b"12{x}-9"), "*{*}-*");
        assert_eq!(r.class_of("é7ü".as_bytes()), "é*ü");
        assert_eq!(
            r.class_of(b"5f0c1a8e-7b7d-4f0e-9a39-3c2b8e1d0a11:57"),
            "*:*"
        );
        assert_eq!(r.class_of(b"order:{42}"), "order:{*}");
        assert_eq!(r.class_of(b"order:{43}"), "order:{*}");
        assert_eq!(r.class_of(b"stock:7:line:12"), "stock:*:line:*");
        assert_eq!(
            r.class_of(b"job:5f0c1a8e-7b7d-4f0e-9a39-3c2b8e1d0a11:x"),
            "job:*:x"
        );
        assert_eq!(r.class_of(b"{user1}:cart"), "{*}:cart");
        assert_eq!(r.class_of(b"plain"), "plain");
        let none = ClassRules::parse("").unwrap();
        assert_eq!(none.class_of(b"order:{42}"), "order:{42}");
        let digits = ClassRules::parse("d").unwrap();
        assert_eq!(digits.class_of(b"order:{a42}"), "order:{a*}");
        assert_eq!(ClassRules::parse("dut").unwrap().to_config_string(), "utd");
        assert!(ClassRules::parse("x").is_none());
    }

    fn run(eng: &mut Engine, cl: &mut crate::engine::ClientCtx, args: &[&str]) -> Reply {
        let argv: Vec<Bytes> = args.iter().map(|a| Bytes::from(a.to_string())).collect();
        // The lock commands' and TUMBLER.LOCKDEP's own rows (this layer), not the registry
        // in `commands` above.
        let mut spec = crate::engine::locks::COMMANDS
            .iter()
            .chain(COMMANDS.iter())
            .find(|c| c.name == args[0])
            .unwrap();
        if !spec.subcommands.is_empty() {
            spec = spec.subcommands.iter().find(|c| c.name == args[1]).unwrap();
        }
        eng.call(cl, spec, &argv)
    }

    #[test]
    fn an_owner_holding_many_locks_of_one_class_costs_one_look_per_class() {
        let mut eng = Engine::new(1);
        eng.lockdep = Some(Box::new(Lockdep::new(false, ClassRules::default())));
        let mut cl = crate::engine::ClientCtx::default();
        // 10,000 locks of one class: quadratic work would take minutes here.
        for i in 0..10_000 {
            let r = run(
                &mut eng,
                &mut cl,
                &["lock.acquire", &format!("k:{i}"), "w", "60000"],
            );
            assert!(matches!(r, Reply::Int(_)), "{r:?}");
        }
        run(&mut eng, &mut cl, &["lock.acquire", "other", "w", "60000"]);
        let ld = eng.lockdep.as_deref().unwrap();
        assert_eq!(ld.edge_count(), 1);
        assert_eq!(ld.acquisitions, 10_001);
        // A class it no longer holds is dropped at its next acquisition.
        for i in 0..10_000 {
            run(&mut eng, &mut cl, &["lock.release", &format!("k:{i}"), "w"]);
        }
        run(&mut eng, &mut cl, &["lock.release", "other", "w"]);
        run(&mut eng, &mut cl, &["lock.acquire", "k:0", "w", "60000"]);
        let ld = eng.lockdep.as_deref().unwrap();
        assert_eq!(ld.held["w"].classes.len(), 1);
    }

    #[test]
    fn a_first_lock_keeps_the_class_it_was_taken_under() {
        let mut eng = Engine::new(1);
        eng.lockdep = Some(Box::new(Lockdep::new(false, ClassRules::default())));
        let mut cl = crate::engine::ClientCtx::default();
        run(&mut eng, &mut cl, &["lock.acquire", "k:1", "w", "60000"]);
        let ld = eng.lockdep.as_deref_mut().unwrap();
        assert!(
            ld.held["w"].first.is_some(),
            "one lock: no class worked out yet"
        );
        ld.set_rules(ClassRules::parse("").unwrap());
        run(&mut eng, &mut cl, &["lock.acquire", "k:2", "w", "60000"]);
        let ld = eng.lockdep.as_deref().unwrap();
        assert!(ld.graph["k:*"].contains_key("k:2"), "{:?}", ld.graph.keys());
        assert_eq!(ld.edge_count(), 1);
    }

    #[test]
    fn holder_owners_match_redissons_parser() {
        let id = "5f0c1a8e-7b7d-4f0e-9a39-3c2b8e1d0a11";
        let mut last = [0u8; 36];
        for f in [
            format!("{id}:1"),
            format!("{id}:57:write"),
            format!("{id}:"),
            format!("{id}:x"),
            format!("{}:1", id.replace('5', "g")),
            format!("{id}:1"),
            format!("{}:1", &id[1..]),
            "mode".to_string(),
            format!("{id}:1:write:write"),
        ] {
            let want = crate::engine::locks::redisson::parse_holder_field(&f).map(|(o, _)| o);
            assert_eq!(holder_owner(&mut last, f.as_bytes()), want, "{f}");
        }
        assert_eq!(holder_owner(&mut last, b"\xff"), None);
    }

    fn run_bytes(eng: &mut Engine, cl: &mut crate::engine::ClientCtx, args: &[&[u8]]) -> Reply {
        let argv: Vec<Bytes> = args.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        // The lock commands' own rows (this layer), as `run` above.
        let spec = crate::engine::locks::COMMANDS
            .iter()
            .find(|c| c.name.as_bytes() == args[0])
            .unwrap();
        eng.call(cl, spec, &argv)
    }

    /// An inversion and a deadlock between owners and keys with a quote, a backslash, a
    /// control byte, a line feed, non-ASCII text and a byte that is not UTF-8: the report
    /// and each entry are JSON that parses back to those names.
    fn findings_with_awkward_names() -> Engine {
        let clock = crate::storage::clock::ManualClock::new(1_700_000_000_000);
        let mut eng = Engine::with_clock(1, clock);
        eng.lockdep = Some(Box::new(Lockdep::new(
            false,
            ClassRules::parse("").unwrap(),
        )));
        let (a, b): (&[u8], &[u8]) = (b"a\"q\"\\\x01\n\xc3\xa9", b"b\xff\t");
        let (w1, w2): (&[u8], &[u8]) = (b"w\"1\\", b"w2\x1f");
        let mut c1 = crate::engine::ClientCtx::default();
        let mut c2 = crate::engine::ClientCtx::default();
        // An inversion: w1 takes x then y, releases both; w2 takes y then x.
        let (x, y): (&[u8], &[u8]) = (b"x\"\x02", b"y\\\r");
        for (c, w, first, second) in [(&mut c1, w1, x, y), (&mut c2, w2, y, x)] {
            run_bytes(&mut eng, c, &[b"lock.acquire", first, w, b"60000"]);
            run_bytes(&mut eng, c, &[b"lock.acquire", second, w, b"60000"]);
            run_bytes(&mut eng, c, &[b"lock.release", second, w]);
            run_bytes(&mut eng, c, &[b"lock.release", first, w]);
        }
        // A deadlock: each holds one and waits for the other's.
        run_bytes(&mut eng, &mut c1, &[b"lock.acquire", a, w1, b"60000"]);
        run_bytes(&mut eng, &mut c2, &[b"lock.acquire", b, w2, b"60000"]);
        run_bytes(
            &mut eng,
            &mut c1,
            &[b"lock.acquire", b, w1, b"60000", b"WAIT", b"5000"],
        );
        run_bytes(
            &mut eng,
            &mut c2,
            &[b"lock.acquire", a, w2, b"60000", b"WAIT", b"5000"],
        );
        eng
    }

    #[test]
    fn report_is_json_with_awkward_names() {
        let eng = findings_with_awkward_names();
        let report = eng.lockdep.as_deref().unwrap().report();
        // What the hand-written JSON gave: serde_json writes the same bytes, but for tab,
        // line feed and carriage return, which it escapes as \t, \n and \r rather than
        // \u0009, \u000a and \u000d (the same strings once parsed).
        const BEFORE: &str = r#"{"mode":"yes","inversions":[{"cycle":["y\\\u000d","x\"\u0002"],"edges":[{"from":"y\\\u000d","to":"x\"\u0002","owner":"w2\u001f","held":"y\\\u000d","lock":"x\"\u0002","time":1700000000000,"command":"lock.acquire"},{"from":"x\"\u0002","to":"y\\\u000d","owner":"w\"1\\","held":"x\"\u0002","lock":"y\\\u000d","time":1700000000000,"command":"lock.acquire"}]}],"deadlocks":[{"cycle":["a\"q\"\\\u0001\u000aé","b�\u0009"],"edges":[{"owner":"w2\u001f","holds":"b�\u0009","lock":"a\"q\"\\\u0001\u000aé","time":1700000000000,"command":"lock.acquire"},{"owner":"w\"1\\","holds":"a\"q\"\\\u0001\u000aé","lock":"b�\u0009","time":1700000000000,"command":"lock.acquire"}]}]}"#;
        let expected = BEFORE
            .replace(r"\u0009", r"\t")
            .replace(r"\u000a", r"\n")
            .replace(r"\u000d", r"\r");
        assert_eq!(report, expected);
        let v: serde_json::Value = serde_json::from_str(&report).unwrap();
        let lock = &v["deadlocks"][0]["edges"][0];
        assert_eq!(lock["owner"], "w2\u{1f}");
        assert_eq!(lock["lock"], "a\"q\"\\\u{1}\né");
        assert_eq!(lock["holds"], "b\u{fffd}\t");
        let edge = &v["inversions"][0]["edges"][1];
        assert_eq!(edge["owner"], "w\"1\\");
        assert_eq!(edge["held"], "x\"\u{2}");
        assert_eq!(edge["lock"], "y\\\r");
    }

    #[test]
    fn report_when_off() {
        let mut eng = Engine::new(1);
        let mut cl = crate::engine::ClientCtx::default();
        let r = run(&mut eng, &mut cl, &["tumbler.lockdep", "report"]);
        assert_eq!(
            r,
            Reply::Bulk(Bytes::from_static(
                br#"{"mode":"no","inversions":[],"deadlocks":[]}"#
            ))
        );
    }
}
