//! The engine: every database, the clock, the write epilogue, blocked clients and WATCH.
//!
//! An `Engine` is plain data behind `&mut self`. The server keeps exactly one, behind one
//! lock, and holds that lock for a whole command, a whole MULTI/EXEC or a whole script; that
//! is what makes each of them atomic and serializable (see docs/architecture.md). Nothing in
//! here does I/O: publishing goes through the [`Broker`] the server supplies, and replies
//! for woken clients are queued in [`Engine::wakeups`] for the server to deliver.

use bytes::Bytes;
use std::collections::hash_map::RandomState;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use crate::reply::Reply;
use crate::storage::clock::{Clock, SystemClock};
use crate::storage::config::EngineConfig;
use crate::storage::db::{Db, Probe};
use crate::storage::notify::{self, Broker, NoBroker};
use crate::storage::value::{Entry, Value};

pub mod evict;
pub mod locks;
pub mod repl;
pub mod report;
pub mod snapshot;
pub mod spec;
pub mod tracking;

use crate::storage::ClientId;
use spec::{CommandSpec, Ctx, Exec};

/// What the engine needs to know about the client running a command.
#[derive(Debug, Clone, Default)]
pub struct ClientCtx {
    pub id: ClientId,
    pub db: usize,
    pub resp3: bool,
    /// Inside MULTI/EXEC or a script: blocking commands return their timeout reply at once.
    pub deny_blocking: bool,
    /// Running inside a Lua script.
    pub in_script: bool,
    /// CLIENT NO-TOUCH: reads do not update the LRU clock.
    pub no_touch: bool,
    /// Set by the engine when the command blocked; the server then waits for a wake-up.
    pub blocked: bool,
    /// Why SORT may not use BY/GET patterns for this call, if it may not: "in Cluster
    /// mode", or "due to insufficient ACL permissions" when the user lacks read access to
    /// every key. The server sets it before each SORT/SORT_RO.
    pub sort_patterns_denied: Option<&'static str>,
    /// `CLIENT CACHING yes|no` applies to this command (tracking OPTIN/OPTOUT).
    pub tracking_caching: bool,
    /// This client has written since it connected (WAIT waits for replicas only then).
    pub wrote: bool,
}

/// A handler's request to block until one of `keys` is ready or `deadline` passes.
#[derive(Debug, Clone)]
pub struct BlockRequest {
    pub keys: Vec<Bytes>,
    /// Absolute deadline in ms on the engine clock; `None` blocks forever.
    pub deadline: Option<i64>,
    /// The reply on timeout (a null array for BLPOP, nil for native locks, ...).
    pub timeout_reply: Reply,
    /// The arguments to re-run the command with when a key becomes ready, if not the
    /// original ones (XREAD resolves `$` to the stream's last ID at block time).
    pub argv: Option<Vec<Bytes>>,
}

#[derive(Debug)]
struct Blocked {
    cl: ClientCtx,
    argv: Vec<Bytes>,
    spec: &'static CommandSpec,
    keys: Vec<Bytes>,
    deadline: Option<i64>,
    timeout_reply: Reply,
}

/// What INFO's Persistence section and LASTSAVE report.
#[derive(Debug, Default, Clone)]
pub struct Persist {
    /// Unix seconds of the last successful save (or of the start, or of the last load).
    pub last_save: i64,
    /// `stats.dirty` at that save: rdb_changes_since_last_save is the difference.
    pub dirty_at_save: u64,
    pub bgsave_in_progress: bool,
    /// BGSAVE SCHEDULE while one ran: another starts when it ends.
    pub bgsave_scheduled: bool,
    pub last_bgsave_ok: bool,
    /// Successful saves (INFO rdb_saves).
    pub saves: u64,
    /// Unix ms the running BGSAVE started, and how long the last one took (seconds, -1
    /// for none).
    pub bgsave_started_ms: i64,
    pub last_bgsave_secs: i64,
    /// What the last RDB load read (INFO rdb_last_load_keys_loaded / _expired).
    pub last_load_keys_loaded: u64,
    pub last_load_keys_expired: u64,
}

/// Counters INFO reports.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub dirty: u64,
    pub expired_keys: u64,
    pub evicted_keys: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    pub commands_processed: u64,
    /// Hash fields deleted because their TTL passed (INFO expired_subkeys).
    pub expired_subkeys: u64,
}

pub struct Engine {
    pub dbs: Vec<Db>,
    pub clock: Arc<dyn Clock>,
    pub broker: Arc<dyn Broker>,
    pub config: EngineConfig,
    pub stats: Stats,
    /// DEBUG SET-ACTIVE-EXPIRE 0 turns background expiry off (keys still expire lazily).
    pub active_expire_enabled: bool,
    /// Seeds the process-wide hash that orders SCAN cursors.
    pub scan_hasher: RandomState,
    /// When set, "now" for expiry checks (a script sees time stand still, as in Redis).
    pub time_snapshot: Option<i64>,
    /// "Now" read once at the start of the running command, so one command sees one
    /// instant and the clock is read once per command rather than once per lookup.
    cmd_now: Option<i64>,
    /// Replies for clients woken by this command (served or timed out), to be delivered.
    pub wakeups: Vec<(ClientId, Reply)>,
    /// Set when a deadline earlier than any the timer knew about was added.
    pub deadline_changed: bool,
    /// When the engine was created (INFO uptime), in ms.
    pub started_ms: i64,
    /// SAVE/BGSAVE bookkeeping: the server writes the files, LASTSAVE and INFO read this.
    pub persist: Persist,
    /// Native locks' server-wide state: token counter, lease timers, session index.
    pub locks: crate::engine::locks::LockTables,
    /// The lock-order checker, when `lockdep` is on (crate::engine::locks::lockdep); `None` costs every
    /// lock hook one check.
    pub lockdep: Option<Box<crate::engine::locks::lockdep::Lockdep>>,
    /// maxmemory's eviction pool (engine/evict.rs), kept between evictions as Redis does.
    pub evict_pool: crate::engine::evict::Pool,
    /// TUMBLER.SNAPSHOT's copies of databases (engine/snapshot.rs).
    pub snapshots: crate::engine::snapshot::Snapshots,

    watched: HashMap<usize, HashMap<Bytes, Vec<ClientId>>>,
    dirty_cas: HashSet<ClientId>,
    /// Client-side caching (CLIENT TRACKING).
    pub tracking: crate::engine::tracking::Tracking,
    /// What a primary with replicas records for them (engine/repl.rs); `None` elsewhere.
    pub repl: Option<Box<crate::engine::repl::Capture>>,

    blocked: HashMap<ClientId, Blocked>,
    blocked_on: HashMap<(usize, Bytes), VecDeque<ClientId>>,
    block_deadlines: BTreeSet<(i64, ClientId)>,
    ready: Vec<(usize, Bytes)>,
    ready_set: HashSet<(usize, Bytes)>,
}

impl Engine {
    pub fn new(databases: usize) -> Engine {
        Engine::with_clock(databases, Arc::new(SystemClock))
    }

    pub fn with_clock(databases: usize, clock: Arc<dyn Clock>) -> Engine {
        Engine {
            dbs: (0..databases.max(1)).map(|_| Db::default()).collect(),
            clock: clock.clone(),
            broker: Arc::new(NoBroker),
            config: EngineConfig::default(),
            stats: Stats::default(),
            active_expire_enabled: true,
            scan_hasher: RandomState::new(),
            time_snapshot: None,
            cmd_now: None,
            wakeups: Vec::new(),
            deadline_changed: false,
            started_ms: clock.now_ms(),
            persist: Persist {
                last_save: clock.now_ms() / 1000,
                last_bgsave_ok: true,
                last_bgsave_secs: -1,
                ..Persist::default()
            },
            locks: Default::default(),
            lockdep: None,
            evict_pool: Default::default(),
            snapshots: Default::default(),
            watched: HashMap::new(),
            dirty_cas: HashSet::new(),
            tracking: Default::default(),
            repl: None,
            blocked: HashMap::new(),
            blocked_on: HashMap::new(),
            block_deadlines: BTreeSet::new(),
            ready: Vec::new(),
            ready_set: HashSet::new(),
        }
    }

    /// "Now" in ms for expiry: the script's snapshot while a script runs, else the clock.
    pub fn now_ms(&self) -> i64 {
        self.time_snapshot
            .or(self.cmd_now)
            .unwrap_or_else(|| self.clock.now_ms())
    }

    // ---------------------------------------------------------------- command execution

    /// Runs one engine command for `cl`. Lookup and arity were checked by the caller.
    /// If the command blocks, `cl.blocked` is set and the reply comes later via `wakeups`.
    pub fn call(
        &mut self,
        cl: &mut ClientCtx,
        spec: &'static CommandSpec,
        argv: &[Bytes],
    ) -> Reply {
        let Exec::Engine(handler) = spec.exec else {
            return Reply::err(format!("ERR '{}' cannot run here", spec.full_name()));
        };
        self.stats.commands_processed += 1;
        if let Some(ld) = self.lockdep.as_deref_mut() {
            ld.command = spec.name;
        }
        let outer_now = self.cmd_now;
        if outer_now.is_none() && self.time_snapshot.is_none() {
            self.cmd_now = Some(self.clock.now_ms());
        }
        let outer_current = std::mem::replace(&mut self.tracking.current, cl.id);
        let mut ctx = Ctx {
            eng: self,
            cl,
            block: None,
        };
        let reply = handler(&mut ctx, argv);
        let block = ctx.block.take();
        self.tracking.current = outer_current;
        if spec.has(spec::flag::READONLY) && self.tracking.is_tracking(cl.id) {
            // Redis 7.0: a read inside a script remembers the script's declared keys.
            let keys: Vec<Bytes> = if cl.in_script {
                self.tracking.script_keys.clone()
            } else {
                spec.key_positions(argv)
                    .into_iter()
                    .map(|i| argv[i].clone())
                    .collect()
            };
            self.tracking
                .remember(cl.id, cl.tracking_caching, keys.into_iter());
        }
        self.cmd_now = outer_now;
        if let Some(req) = block {
            if cl.deny_blocking {
                return req.timeout_reply;
            }
            self.block_client(cl, spec, argv, req);
            return Reply::NoReply;
        }
        reply
    }

    /// Serves clients blocked on keys that became ready. The server calls this after every
    /// command, EXEC or script, never in the middle of one, as Redis does.
    pub fn after_command(&mut self) {
        self.repl_seal();
        while !self.ready.is_empty() {
            let ready = std::mem::take(&mut self.ready);
            self.ready_set.clear();
            for (db, key) in ready {
                self.serve_blocked_on(db, key);
            }
            // What serving the blocked clients changed (a BLPOP's pop) is an entry of its own.
            self.repl_seal();
        }
    }

    // ---------------------------------------------------------------- keyspace access

    /// Looks up a key for reading or writing, deleting it first if it has expired. One
    /// hash and one probe: the expiry check reads the entry the lookup found. Counts no
    /// hit or miss and leaves the access time alone.
    pub fn lookup(&mut self, db: usize, key: &[u8]) -> Option<&mut Entry> {
        self.lookup_write(db, key, false)
    }

    /// Db `db` if it holds enough keys for a prefetch (`Db::prefetch`) to pay for finding
    /// the keys to prefetch ([`crate::storage::db::PREFETCH_MIN_KEYS`]).
    pub fn worth_prefetching(&self, db: usize) -> Option<&Db> {
        self.dbs
            .get(db)
            .filter(|d| d.len() >= crate::storage::db::PREFETCH_MIN_KEYS)
    }

    /// Sets a found entry's access time to `now` (its LFU counter with an LFU policy), as
    /// Redis' lookupKey does unless LOOKUP_NOTOUCH.
    fn touched(c: &EngineConfig, e: &mut Entry, now: i64) {
        e.lru_ms = if c.lfu {
            crate::storage::lfu::touched(e.lru_ms, now, c.lfu_log_factor, c.lfu_decay_time)
        } else {
            now
        };
    }

    /// [`Engine::lookup`] for a write command: with `touch`, the entry's access time is set
    /// as Redis' lookupKeyWrite sets it; no hit or miss is counted.
    pub fn lookup_write(&mut self, db: usize, key: &[u8], touch: bool) -> Option<&mut Entry> {
        let now = self.now_ms();
        let live: *mut Entry = match self.dbs[db].probe(key, now) {
            Probe::Live(e) => {
                if touch {
                    Self::touched(&self.config, e, now);
                }
                e
            }
            Probe::Absent => return None,
            Probe::Expired(gone) => {
                self.expired(db, key, &gone);
                return None;
            }
        };
        // SAFETY: `live` points into `self.dbs[db]`'s map and nothing has touched the map
        // since `probe` returned it; the result borrows `self` mutably, so nothing can
        // until it is dropped. (Returning the borrow straight from the match is sound but
        // rejected by today's borrow checker, because another arm uses `self` again.)
        Some(unsafe { &mut *live })
    }

    /// [`Engine::lookup`] for a read: counts the hit or miss and, with `touch`, sets the
    /// entry's access time to `now`.
    pub fn lookup_read(
        &mut self,
        db: usize,
        key: &[u8],
        now: i64,
        touch: bool,
    ) -> Option<&mut Entry> {
        let live: *mut Entry = match self.dbs[db].probe(key, now) {
            Probe::Live(e) => {
                self.stats.keyspace_hits += 1;
                if touch {
                    Self::touched(&self.config, e, now);
                }
                e
            }
            Probe::Absent => {
                self.stats.keyspace_misses += 1;
                return None;
            }
            Probe::Expired(gone) => {
                self.expired(db, key, &gone);
                self.stats.keyspace_misses += 1;
                return None;
            }
        };
        // SAFETY: as in `lookup_write`.
        Some(unsafe { &mut *live })
    }

    /// [`Engine::lookup`] for a write that creates the key with `make()` if it is absent
    /// (or just expired): the `new` event, no TTL.
    pub fn lookup_or_insert(
        &mut self,
        db: usize,
        key: &Bytes,
        touch: bool,
        make: impl FnOnce() -> Value,
    ) -> &mut Entry {
        let now = self.now_ms();
        let live: *mut Entry = match self.dbs[db].probe(key, now) {
            Probe::Live(e) => {
                if touch {
                    Self::touched(&self.config, e, now);
                }
                e
            }
            found => {
                if let Probe::Expired(gone) = found {
                    self.expired(db, key, &gone);
                }
                self.note_new_key(db, key);
                self.dbs[db].insert(key.clone(), make(), None, now)
            }
        };
        // SAFETY: as in `lookup_write`.
        unsafe { &mut *live }
    }

    /// Deletes `key` if its TTL has passed; returns true if it did.
    pub fn expire_if_needed(&mut self, db: usize, key: &[u8]) -> bool {
        let now = self.now_ms();
        match self.dbs[db].probe(key, now) {
            Probe::Expired(gone) => {
                self.expired(db, key, &gone);
                true
            }
            _ => false,
        }
    }

    fn delete_expired(&mut self, db: usize, key: &[u8]) {
        if let Some(gone) = self.dbs[db].remove(key) {
            self.expired(db, key, &gone);
        }
    }

    /// The epilogue of a key removed because its TTL passed.
    fn expired(&mut self, db: usize, key: &[u8], gone: &Entry) {
        let key = Bytes::copy_from_slice(key);
        self.stats.expired_keys += 1;
        if let Value::Lock(l) = &gone.value {
            let waiters = !self.waiters(db, &key).is_empty();
            self.locks.stats.key_expired(db, &key, l, waiters);
        }
        self.modified(db, &key, notify::EXPIRED, "expired");
    }

    /// Active expiry: deletes up to `limit` keys whose TTL has passed, in all databases.
    /// Returns how many were deleted.
    pub fn active_expire(&mut self, limit: usize) -> usize {
        if self.time_snapshot.is_some() {
            return 0;
        }
        let now = self.now_ms();
        let mut n = 0;
        for db in 0..self.dbs.len() {
            for key in self.dbs[db].due_keys(now, limit - n) {
                self.delete_expired(db, &key);
                n += 1;
            }
            if n >= limit {
                break;
            }
        }
        if n < limit {
            n += self.active_expire_fields(now, limit - n);
        }
        n
    }

    /// Active expiry of hash fields: deletes the fields whose TTL is `<= now` of up to
    /// `limit` hashes, one `hexpired` event per hash, and the hash once it is empty
    /// (`del`), as Redis' `hashTypeDbActiveExpire`. Returns how many hashes it looked at.
    fn active_expire_fields(&mut self, now: i64, limit: usize) -> usize {
        let mut n = 0;
        for db in 0..self.dbs.len() {
            for key in self.dbs[db].hfe_due(now, limit - n) {
                n += 1;
                self.expire_fields(db, &key, now);
            }
            if n >= limit {
                break;
            }
        }
        n
    }

    /// Deletes the fields of the hash at `key` whose TTL is `<= now`; see
    /// [`Self::active_expire_fields`].
    pub fn expire_fields(&mut self, db: usize, key: &Bytes, now: i64) {
        let Some(e) = self.dbs[db].get_mut(key) else {
            return;
        };
        // A key whose own TTL passed is left to key expiry.
        if e.expire_at().is_some_and(|t| t <= now) {
            return;
        }
        let Value::Hash(h) = &mut e.value else {
            return;
        };
        let due = h.due_fields(now);
        for f in &due {
            h.remove(f);
        }
        let (empty, next) = (h.is_empty(), h.min_ttl());
        if due.is_empty() {
            // Redis visits a hash at its registered time; then it registers the next TTL,
            // or no longer the hash.
            if h.meta_min().is_some_and(|m| m <= now) {
                h.set_meta_min(next);
            }
            if let Some(t) = next {
                self.dbs[db].hfe_note(key, t);
            }
            return;
        }
        h.set_meta_min(next);
        self.stats.expired_subkeys += due.len() as u64;
        self.modified(db, key, notify::HASH, "hexpired");
        if empty {
            self.dbs[db].remove(key);
            self.notify(notify::GENERIC, "del", db, key);
        } else if let Some(t) = next {
            self.dbs[db].hfe_note(key, t);
        }
    }

    /// The earliest instant at which the timer has work: a key to expire or a blocked
    /// client to time out.
    pub fn next_deadline(&self) -> Option<i64> {
        let keys = self
            .dbs
            .iter()
            .flat_map(|d| [d.next_expiry(), d.hfe_next()])
            .flatten()
            .min();
        let blocks = self.block_deadlines.first().map(|(t, _)| *t);
        let leases = self.locks.next_lease();
        [keys, blocks, leases].into_iter().flatten().min()
    }

    /// The background timer's step: active expiry, then blocked-client timeouts, then the
    /// hand-off to waiters that expiry made possible.
    pub fn tick(&mut self) {
        while self.active_expire_enabled && self.active_expire(1000) == 1000 {}
        let now = self.now_ms();
        while let Some(&(t, id)) = self.block_deadlines.first() {
            if t > now {
                break;
            }
            if let Some(b) = self.unblock(id) {
                self.signal_keys(&b);
                self.wakeups.push((id, b.timeout_reply));
            }
        }
        // Lock leases that ended: waiters on those keys retry (and prune the holders).
        for (db, key) in self.locks.due_leases(now) {
            self.signal_ready(db, &key);
        }
        self.after_command();
    }

    // ---------------------------------------------------------------- write epilogue

    /// The epilogue every write goes through: invalidates WATCH, sends the keyspace event,
    /// bumps the dirty counter and marks the key ready for clients blocked on it.
    pub fn modified(&mut self, db: usize, key: &Bytes, class: u32, event: &str) {
        self.touch_watched(db, key);
        self.stats.dirty += 1;
        self.notify(class, event, db, key);
        self.signal_ready(db, key);
    }

    /// Sends the `new` event (class `n`) if `key` does not exist in `db`: the caller is
    /// about to create it (Redis fires it from `dbAdd`, before the command's own event).
    pub fn note_new_key(&mut self, db: usize, key: &Bytes) {
        if self.config.notify.wants(notify::NEW) && !self.dbs[db].contains(key) {
            self.notify(notify::NEW, "new", db, key);
        }
    }

    /// Sends a keyspace notification if the class is enabled.
    pub fn notify(&mut self, class: u32, event: &str, db: usize, key: &Bytes) {
        if let Some(cap) = self.repl.as_deref_mut() {
            cap.event(class, event, db, key);
        }
        if !self.config.notify.wants(class) {
            return;
        }
        notify::publish(&*self.broker, self.config.notify, event, db, key);
    }

    /// Marks a key ready so clients blocked on it are re-tried after this command.
    pub fn signal_ready(&mut self, db: usize, key: &Bytes) {
        if self.blocked_on.is_empty() {
            return;
        }
        let k = (db, key.clone());
        if self.blocked_on.contains_key(&k) && self.ready_set.insert(k.clone()) {
            self.ready.push(k);
        }
    }

    // ---------------------------------------------------------------- WATCH

    pub fn watch(&mut self, id: ClientId, db: usize, key: Bytes) {
        let v = self.watched.entry(db).or_default().entry(key).or_default();
        if !v.contains(&id) {
            v.push(id);
        }
    }

    /// Forgets all of a client's watches (UNWATCH, EXEC, DISCARD, disconnect).
    pub fn unwatch(&mut self, id: ClientId, keys: &[(usize, Bytes)]) {
        for (db, key) in keys {
            if let Some(m) = self.watched.get_mut(db) {
                if let Some(v) = m.get_mut(key) {
                    v.retain(|c| *c != id);
                    if v.is_empty() {
                        m.remove(key);
                    }
                }
                if m.is_empty() {
                    self.watched.remove(db);
                }
            }
        }
        self.dirty_cas.remove(&id);
    }

    /// True if a watched key was touched since WATCH.
    pub fn watch_broken(&self, id: ClientId) -> bool {
        self.dirty_cas.contains(&id)
    }

    /// Marks the watchers of one key dirty.
    pub fn touch_watched(&mut self, db: usize, key: &[u8]) {
        self.tracking.invalidate(key);
        if let Some(cap) = self.repl.as_deref_mut() {
            cap.key(db, key);
        }
        if self.watched.is_empty() {
            return;
        }
        if let Some(v) = self.watched.get(&db).and_then(|m| m.get(key)) {
            self.dirty_cas.extend(v.iter().copied());
        }
    }

    /// Marks the watchers of every key of `db` dirty (FLUSHDB, SWAPDB), or, with
    /// `only_existing`, of the keys that exist.
    pub fn touch_all_watched(&mut self, db: usize, only_existing: bool) {
        if let Some(cap) = self.repl.as_deref_mut() {
            cap.whole_db(db);
        }
        if let Some(m) = self.watched.get(&db) {
            for (k, v) in m {
                if !only_existing || self.dbs[db].contains(k) {
                    self.dirty_cas.extend(v.iter().copied());
                }
            }
        }
    }

    /// SWAPDB: watchers of a key in `a` or `b` are touched if the key exists on either
    /// side of the swap (Redis' `touchAllWatchedKeysInDb(emptied, replaced_with)`); a
    /// watched key missing from both dbs is logically unchanged.
    pub fn touch_swapped_watched(&mut self, a: usize, b: usize) {
        if let Some(cap) = self.repl.as_deref_mut() {
            cap.whole_db(a);
            cap.whole_db(b);
        }
        for (db, other) in [(a, b), (b, a)] {
            if let Some(m) = self.watched.get(&db) {
                for (k, v) in m {
                    if self.dbs[db].contains(k) || self.dbs[other].contains(k) {
                        self.dirty_cas.extend(v.iter().copied());
                    }
                }
            }
        }
    }

    // ---------------------------------------------------------------- blocking

    fn block_client(
        &mut self,
        cl: &mut ClientCtx,
        spec: &'static CommandSpec,
        argv: &[Bytes],
        req: BlockRequest,
    ) {
        let id = cl.id;
        cl.blocked = true;
        if crate::engine::locks::is_waiter_command(spec.name) {
            self.locks.stats.wait_started(id);
        }
        for k in &req.keys {
            let q = self.blocked_on.entry((cl.db, k.clone())).or_default();
            if !q.contains(&id) {
                q.push_back(id);
            }
        }
        if let Some(t) = req.deadline {
            if self.block_deadlines.first().is_none_or(|(f, _)| t < *f) {
                self.deadline_changed = true;
            }
            self.block_deadlines.insert((t, id));
        }
        let mut stored = cl.clone();
        stored.blocked = false;
        self.blocked.insert(
            id,
            Blocked {
                cl: stored,
                argv: req.argv.unwrap_or_else(|| argv.to_vec()),
                spec,
                keys: req.keys,
                deadline: req.deadline,
                timeout_reply: req.timeout_reply,
            },
        );
    }

    /// Removes a blocked client from every queue. Returns its record if it was blocked.
    fn unblock(&mut self, id: ClientId) -> Option<Blocked> {
        let b = self.blocked.remove(&id)?;
        self.locks.stats.wait_ended(id);
        for k in &b.keys {
            let kk = (b.cl.db, k.clone());
            if let Some(q) = self.blocked_on.get_mut(&kk) {
                q.retain(|c| *c != id);
                if q.is_empty() {
                    self.blocked_on.remove(&kk);
                }
            }
        }
        if let Some(t) = b.deadline {
            self.block_deadlines.remove(&(t, id));
        }
        Some(b)
    }

    pub fn is_blocked(&self, id: ClientId) -> bool {
        self.blocked.contains_key(&id)
    }

    pub fn blocked_count(&self) -> usize {
        self.blocked.len()
    }

    /// CLIENT UNBLOCK: wakes `id` with `reply` (its timeout reply when `None`).
    pub fn unblock_with(&mut self, id: ClientId, reply: Option<Reply>) -> bool {
        match self.unblock(id) {
            Some(b) => {
                self.signal_keys(&b);
                self.wakeups.push((id, reply.unwrap_or(b.timeout_reply)));
                true
            }
            None => false,
        }
    }

    /// Forgets a client that disconnected: its blocked command and its watches.
    pub fn client_gone(&mut self, id: ClientId, watched: &[(usize, Bytes)]) {
        if let Some(b) = self.unblock(id) {
            self.signal_keys(&b);
        }
        self.unwatch(id, watched);
    }

    /// A client left the queues of its keys without being served (timeout, CLIENT UNBLOCK,
    /// disconnect): the clients behind it get a new look, so a FIFO lock or semaphore
    /// whose head waiter gave up is granted to the next one at once.
    fn signal_keys(&mut self, b: &Blocked) {
        for k in &b.keys {
            self.signal_ready(b.cl.db, k);
        }
    }

    /// Marks every key of `db` that has blocked clients ready (FLUSHDB frees locks).
    pub fn signal_db(&mut self, db: usize) {
        let keys: Vec<Bytes> = self
            .blocked_on
            .keys()
            .filter(|(d, _)| *d == db)
            .map(|(_, k)| k.clone())
            .collect();
        for k in keys {
            self.signal_ready(db, &k);
        }
    }

    /// The clients blocked on `key`, in arrival order, with the name of the command each
    /// is blocked in. Native locks use it to serve waiters strictly FIFO.
    pub fn waiters(&self, db: usize, key: &Bytes) -> Vec<(ClientId, &'static str)> {
        let Some(q) = self.blocked_on.get(&(db, key.clone())) else {
            return Vec::new();
        };
        q.iter()
            .filter_map(|id| self.blocked.get(id).map(|b| (*id, b.spec.name)))
            .collect()
    }

    fn serve_blocked_on(&mut self, db: usize, key: Bytes) {
        let Some(queue) = self.blocked_on.get(&(db, key.clone())) else {
            return;
        };
        let waiting: Vec<ClientId> = queue.iter().copied().collect();
        for id in waiting {
            // Re-run the blocked command as its client. If it can be served it replies;
            // if it asks to block again it stays where it is in the queue.
            let Some(b) = self.blocked.get(&id) else {
                continue;
            };
            let (mut cl, spec, argv) = (b.cl.clone(), b.spec, b.argv.clone());
            let Exec::Engine(handler) = spec.exec else {
                continue;
            };
            let mut ctx = Ctx {
                eng: self,
                cl: &mut cl,
                block: None,
            };
            ctx.cl.deny_blocking = false;
            let reply = handler(&mut ctx, &argv);
            if ctx.block.is_some() {
                continue;
            }
            self.unblock(id);
            self.wakeups.push((id, reply));
            if !self.blocked_on.contains_key(&(db, key.clone())) {
                break;
            }
        }
    }
}

/// Deletes the key and runs the epilogue with a `del` event. Shared by DEL, UNLINK, GETDEL.
pub fn delete_key(eng: &mut Engine, db: usize, key: &Bytes) -> bool {
    if eng.lookup(db, key).is_none() {
        return false;
    }
    eng.dbs[db].remove(key);
    eng.modified(db, key, notify::GENERIC, "del");
    true
}

/// Stores `value` under `key` (replacing any value and TTL) and runs no epilogue.
pub fn store(eng: &mut Engine, db: usize, key: Bytes, value: Value, expire_at: Option<i64>) {
    let now = eng.now_ms();
    eng.note_new_key(db, &key);
    eng.dbs[db].insert(key, value, expire_at, now);
}
