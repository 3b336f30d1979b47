//! State shared by every connection: the one keyspace lock, the client registry, pub/sub,
//! config and the cron.
//!
//! # Why one `parking_lot::Mutex` around the engine
//!
//! Every command, every MULTI/EXEC and every script runs while holding `core`, so nothing
//! can interleave with it: that is the whole of Tumbler's atomicity argument, and the
//! concurrent tests in `tests/` check it. The critical sections are short and never await,
//! so a blocking mutex is right (as in mini-redis' `db.rs`); a connection takes it once per
//! batch of pipelined commands, not once per command. A script can hold it for long, so
//! waiters never block a runtime thread indefinitely: [`Shared::lock_core`] tries for a
//! bounded time, yields to the runtime and tries again, and gives up with `-BUSY` once a
//! script has run past `busy-reply-threshold`. docs/architecture.md has the measurements
//! that chose this model.
//!
//! What lives outside the lock, in `DashMap`s, is state that no command's atomicity depends
//! on and that connections touch without the keyspace: the client registry (CLIENT LIST,
//! KILL, delivering wake-ups) and the pub/sub subscriber tables. A PUBLISH that runs inside
//! the lock (from a script or a keyspace event) reads those tables; it never takes `core`
//! again, so there is no lock-order cycle.

pub mod acl;
pub mod arrival;
pub mod climits;
pub mod cluster;
pub mod cron;
pub mod fanout;
pub mod invalidations;
pub mod lockdep_config;
pub mod memory;
pub mod migrate;
pub mod repl;
pub mod sentinel_mode;
pub mod timectl;

use bytes::Bytes;
use dashmap::DashMap;
use parking_lot::{Mutex, MutexGuard, RwLock};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

use lockcore::storage::clock::{Clock, ControlledClock};
use lockcore::{ClientId, Engine, Reply};

use crate::config::Config;
use crate::state::fanout::PubSub;

/// Everything guarded by the keyspace lock.
pub struct Core {
    pub engine: Engine,
    /// The script engine's state (`scripting::Scripts`: the Lua VM and the script cache).
    /// State holds it without knowing its type; scripting reaches it with `Scripts::of`.
    pub scripts: Box<dyn ScriptState>,
}

/// What state asks of the script engine's state.
pub trait ScriptState: std::any::Any + Send {
    /// `lua-native-plans` and `lua-profiler`, applied with the rest of the config, and the
    /// personality, whose versions `redis.REDIS_VERSION` (and Valkey's `server.*`) give.
    fn configure(&mut self, plans: bool, profiler: bool, p: lockcore::personality::Personality);
    fn as_any(&mut self) -> &mut dyn std::any::Any;
    fn as_any_ref(&self) -> &dyn std::any::Any;
}

/// How a dataset makes its script state: `scripting::Scripts::boxed`, registered beside it
/// (state cannot name the Lua engine, which sits above it).
#[linkme::distributed_slice]
pub static SCRIPT_STATE: [fn() -> Box<dyn ScriptState>];

/// A dataset's empty script state.
pub fn new_scripts() -> Box<dyn ScriptState> {
    match &SCRIPT_STATE[..] {
        [new] => new(),
        other => panic!("{} script engines registered, not one", other.len()),
    }
}

/// A message to a connection task from elsewhere.
#[derive(Debug)]
pub enum Msg {
    /// An out-of-band message: pub/sub delivery, MONITOR line (encoded per protocol).
    Push(Reply),
    /// The reply to this client's blocked command.
    Wake(Reply),
    /// CLIENT KILL, output-buffer limits, shutdown.
    Kill,
}

/// A connection's incoming [`Msg`]s. The connection looks at it on every pass of its loop,
/// before reading, so the common case (nothing there) is one atomic load, plus storing the
/// task's waker when it is about to wait: tokio's unbounded channel cost about 200
/// instructions per look, twice per request at -P 1 (docs/architecture.md).
#[derive(Default)]
pub struct Mailbox {
    queue: Mutex<std::collections::VecDeque<Msg>>,
    /// `queue` is not empty (changed only under its mutex).
    ready: AtomicBool,
    waker: Mutex<Option<std::task::Waker>>,
    /// The connection has ended: messages are dropped (a closed channel did the same).
    closed: AtomicBool,
}

/// Stores `waker` in `slot` for a later wake-up, unless the one there already wakes the
/// same task (a task polled again keeps its waker: no clone, no drop).
#[inline]
pub fn keep_waker(slot: &Mutex<Option<std::task::Waker>>, waker: &std::task::Waker) {
    let mut w = slot.lock();
    match w.as_ref() {
        Some(old) if old.will_wake(waker) => {}
        _ => *w = Some(waker.clone()),
    }
}

impl Mailbox {
    pub fn send(&self, m: Msg) {
        {
            let mut q = self.queue.lock();
            if self.closed.load(Ordering::Relaxed) {
                return;
            }
            q.push_back(m);
            self.ready.store(true, Ordering::Release);
        }
        // After `ready`: a receiver that stored its waker before this lock is woken, and
        // one that stores it after sees `ready` (its second look in `poll_recv`).
        if let Some(w) = self.waker.lock().as_ref() {
            w.wake_by_ref();
        }
    }

    /// The connection has ended: drops what is queued and whatever comes later.
    pub fn close(&self) {
        let mut q = self.queue.lock();
        self.closed.store(true, Ordering::Relaxed);
        q.clear();
        self.ready.store(false, Ordering::Release);
        drop(q);
        self.waker.lock().take();
    }

    pub fn try_recv(&self) -> Option<Msg> {
        if !self.ready.load(Ordering::Acquire) {
            return None;
        }
        let mut q = self.queue.lock();
        let m = q.pop_front();
        if q.is_empty() {
            self.ready.store(false, Ordering::Release);
        }
        m
    }

    /// The next message; when there is none, `cx`'s waker is kept for the next `send`.
    pub fn poll_recv(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Msg> {
        if let Some(m) = self.try_recv() {
            return std::task::Poll::Ready(m);
        }
        keep_waker(&self.waker, cx.waker());
        match self.try_recv() {
            Some(m) => std::task::Poll::Ready(m),
            None => std::task::Poll::Pending,
        }
    }
}

/// What CLIENT LIST / CLIENT INFO show about a connection.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    pub name: Bytes,
    pub lib_name: Bytes,
    pub lib_ver: Bytes,
    pub db: usize,
    pub resp: u8,
    pub last_cmd: Option<&'static lockcore::CommandSpec>,
    pub last_interaction: Option<crate::base::mono::Mono>,
    pub flags: String,
    pub subs: usize,
    pub psubs: usize,
    pub ssubs: usize,
    pub multi: i64,
    pub user: String,
    /// CLIENT TRACKING: its CLIENT LIST flags (`t`, `R`, `B`) and `redir=` (-1 when off).
    pub tracking_flags: &'static str,
    pub tracking_redir: i64,
    /// WATCHed keys (`watch=`, Redis 7.4 and Valkey).
    pub watch: usize,
    /// CLIENT CAPA REDIRECT (Valkey 8.0): `capa=r`.
    pub capa_redirect: bool,
}

pub struct ClientHandle {
    pub id: ClientId,
    pub addr: SocketAddr,
    pub laddr: SocketAddr,
    pub created: Instant,
    pub mailbox: Mailbox,
    pub info: Mutex<ClientInfo>,
    /// Bytes of pushes queued for this client and not yet written (output buffer limits).
    pub pending_out: AtomicUsize,
    /// When `pending_out` first passed the soft limit, in ms since start (0 = not over).
    pub soft_since_ms: AtomicI64,
    pub killed: AtomicBool,
    /// It sent QUIT: gone for CLIENT TRACKING redirects, as Redis frees it after the reply.
    pub quitting: AtomicBool,
    /// Its buffer sizes, for CLIENT LIST and INFO.
    pub mem: crate::state::climits::ClientMem,
}

impl ClientHandle {
    pub fn send(&self, m: Msg) {
        self.mailbox.send(m)
    }
}

/// A running script, as other connections see it (BUSY, SCRIPT KILL).
#[derive(Debug, Default)]
pub struct ScriptStatus {
    /// When the running script started, in ms of the monotonic clock (`clock::Mono::ms`,
    /// read once when the command started); 0 when none runs.
    pub started_ms: AtomicI64,
    /// Set by SCRIPT KILL; the script's instruction hook reads it.
    pub kill: AtomicBool,
    /// The running script has written; it can no longer be killed.
    pub wrote: AtomicBool,
    /// Set by SHUTDOWN NOSAVE during a busy script.
    pub shutdown: AtomicBool,
    /// The running function's name and FCALL arguments (FUNCTION STATS, FUNCTION KILL).
    pub running_fn: std::sync::Mutex<Option<(String, Vec<bytes::Bytes>)>>,
    /// Libraries and functions loaded, for FUNCTION STATS while a script holds the lock.
    pub fn_counts: std::sync::Mutex<(usize, usize)>,
}

/// Server-wide counters for INFO.
#[derive(Debug, Default)]
pub struct Counters {
    pub connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    pub limits: crate::state::climits::LimitCounters,
}

pub struct Shared {
    pub core: Mutex<Core>,
    /// Which server this is (`personality`); immutable, so read without the config lock.
    pub personality: lockcore::personality::Personality,
    pub config: RwLock<Config>,
    pub clients: DashMap<ClientId, Arc<ClientHandle>>,
    pub pubsub: Arc<PubSub>,
    pub monitors: Monitors,
    /// Arrival order of input across connections (docs in `arrival.rs`).
    pub arrivals: Arc<crate::state::arrival::Arrivals>,
    pub clock: Arc<ControlledClock>,
    pub next_id: AtomicU64,
    /// Wakes the timer task early (an earlier deadline, time control).
    pub timer: Notify,
    /// When the timer task will next run on its own, in clock ms (i64::MAX until its first
    /// run). Written and read under the keyspace lock: a command whose new deadline is not
    /// before it needs no early wake-up (see `CoreGuard`'s drop).
    pub timer_wake_at: AtomicI64,
    pub shutdown: Notify,
    pub shutting_down: AtomicBool,
    pub script: ScriptStatus,
    pub counters: Counters,
    /// Per-command calls and time (`/metrics`, INFO commandstats).
    pub cmdstats: crate::stats::cmdstats::CommandStats,
    pub slowlog: crate::stats::slowlog::SlowLog,
    pub started: Instant,
    /// INFO's run_id: random, fixed for the life of the process, as in Redis.
    pub run_id: String,
    pub busy_threshold_ms: AtomicI64,
    /// `maxmemory` and whether `maxmemory-policy` evicts, copied out of the config so the
    /// per-command OOM check reads two atomics instead of the config table.
    pub maxmemory: AtomicI64,
    pub evicting: AtomicBool,
    /// The last eviction could not get under `maxmemory` (crate::state::memory).
    pub evict_failed: AtomicBool,
    /// Hot-path copies of `proto-max-bulk-len` and `client-query-buffer-limit`.
    pub proto_max_bulk: AtomicI64,
    pub query_buffer_limit: AtomicI64,
    /// `client-output-buffer-limit normal ...` (the pubsub class is in `pubsub`).
    pub normal_output_limit: crate::state::climits::ClassLimit,
    pub port: AtomicU64,
    /// The TLS configuration new TLS connections get (None: no TLS listener). CONFIG SET
    /// of a `tls-*` parameter swaps it (server/src/io/net/tls.rs).
    pub tls: RwLock<Option<Arc<rustls::ServerConfig>>>,
    /// ACL users and the ACL log (acl.rs).
    pub acl: acl::Acl,
    /// The nodes of this process when it runs more than one (server/src/cluster/), and
    /// which shard this dataset is.
    pub cluster: Option<Arc<crate::state::cluster::Topology>>,
    pub shard: usize,
    /// The `/metrics` port, 0 when metrics are off.
    pub metrics_port: AtomicU64,
    /// MIGRATE's cached connections to targets.
    /// Role, offsets and links to a primary or replicas (state/repl.rs).
    pub repl: crate::state::repl::ReplNode,
    pub migrate_sockets: migrate::SocketCache,
    /// Set on a sentinel's dataset (server/src/sentinel/): which sentinel it is.
    pub sentinel: std::sync::OnceLock<Arc<dyn std::any::Any + Send + Sync>>,
}

/// The MONITOR clients. Every command asks whether there are any, so emptiness is an atomic
/// counter: `DashMap::is_empty` would take a read lock on every shard, and those shared
/// cache lines showed up as the top cost of pipelined SET in a profile.
#[derive(Default)]
pub struct Monitors {
    map: DashMap<ClientId, Arc<ClientHandle>>,
    count: AtomicUsize,
}

impl Monitors {
    pub fn insert(&self, id: ClientId, h: Arc<ClientHandle>) {
        if self.map.insert(id, h).is_none() {
            self.count.fetch_add(1, Ordering::AcqRel);
        }
    }
    pub fn remove(&self, id: &ClientId) -> Option<(ClientId, Arc<ClientHandle>)> {
        let r = self.map.remove(id);
        if r.is_some() {
            self.count.fetch_sub(1, Ordering::AcqRel);
        }
        r
    }
    pub fn is_empty(&self) -> bool {
        self.count.load(Ordering::Acquire) == 0
    }
    pub fn iter(&self) -> dashmap::iter::Iter<'_, ClientId, Arc<ClientHandle>> {
        self.map.iter()
    }
}

/// The keyspace lock, held. Dropping it delivers the wake-ups that the commands run under
/// it produced and re-arms the timer if they added an earlier deadline, so no caller can
/// forget either.
pub struct CoreGuard<'a> {
    guard: MutexGuard<'a, Core>,
    shared: &'a Shared,
}

impl std::ops::Deref for CoreGuard<'_> {
    type Target = Core;
    fn deref(&self) -> &Core {
        &self.guard
    }
}

impl std::ops::DerefMut for CoreGuard<'_> {
    fn deref_mut(&mut self) -> &mut Core {
        &mut self.guard
    }
}

impl Drop for CoreGuard<'_> {
    fn drop(&mut self) {
        let eng = &mut self.guard.engine;
        // Entries for replicas leave while the lock is still held: in the order recorded.
        if let Some(cap) = eng.repl.as_deref_mut() {
            if !cap.sealed.is_empty() {
                self.shared.repl.ship(std::mem::take(&mut cap.sealed));
            }
        }
        for (id, reply) in eng.wakeups.drain(..) {
            if let Some(c) = self.shared.clients.get(&id) {
                c.send(Msg::Wake(reply));
            }
        }
        // After the wake-ups: an unblocked client's own invalidation follows its reply.
        crate::state::invalidations::deliver(self.shared, eng);
        // Only a deadline before the timer's own next run needs it early. A watchdog's or
        // a lock script's PEXPIRE renews a TTL tens of seconds out on every call; waking
        // the timer for each made it take the keyspace lock and walk every db's expiry
        // heap once per batch (about 4,200 of the 20,000 instructions of a Redisson
        // EVALSHA from one client, bench/plans-callgrind.sh).
        if eng.deadline_changed {
            eng.deadline_changed = false;
            let wake_at = self.shared.timer_wake_at.load(Ordering::Relaxed);
            if eng.next_deadline().is_some_and(|t| t < wake_at) {
                self.shared.timer.notify_one();
            }
        }
    }
}

/// Why a connection could not get the keyspace lock.
pub enum LockError {
    /// A script has run past busy-reply-threshold.
    Busy,
}

/// 40 random hex digits, from the process' random hash keys.
pub fn random_run_id() -> String {
    use std::hash::BuildHasher;
    let s = std::collections::hash_map::RandomState::new();
    (0u64..3)
        .map(|i| format!("{:016x}", s.hash_one(i)))
        .collect::<String>()[..40]
        .to_string()
}

impl Shared {
    /// The BUSY error for a command refused while a script runs: it names the kill command
    /// that applies (FUNCTION KILL for a function, SCRIPT KILL for EVAL).
    pub fn busy_err(&self) -> &'static str {
        let function = self.script.running_fn.lock().unwrap().is_some();
        crate::base::consts::busy_err(&self.personality, function)
    }

    pub fn new(config: Config) -> Arc<Shared> {
        Shared::new_node(config, None)
    }

    /// A dataset of a multi-node process: shard `.1` of topology `.0`.
    pub fn new_node(
        config: Config,
        cluster: Option<(Arc<crate::state::cluster::Topology>, usize)>,
    ) -> Arc<Shared> {
        Shared::new_node_clocked(config, cluster, ControlledClock::new())
    }

    /// [`Shared::new_node`] on a given clock: the nodes of a replication topology share
    /// one, as the processes of one host do (TUMBLER.TIME on any of them moves them all).
    pub fn new_node_clocked(
        config: Config,
        cluster: Option<(Arc<crate::state::cluster::Topology>, usize)>,
        clock: Arc<ControlledClock>,
    ) -> Arc<Shared> {
        let (cluster, shard) = match cluster {
            Some((t, s)) => (Some(t), s),
            None => (None, 0),
        };
        let dbs = config.get_i64(crate::config::key::DATABASES).max(1) as usize;
        let requirepass = config.get(crate::config::key::REQUIREPASS).to_string();
        let pubsub = Arc::new(PubSub::default());
        let mut engine = Engine::with_clock(dbs, clock.clone());
        engine.broker = pubsub.clone();
        let personality = config.personality();
        engine.config.personality = personality;
        // Fencing tokens continue above the previous run's without persistence: the
        // counter starts from the real wall clock (not the controllable one).
        engine
            .locks
            .seed_tokens(lockcore::storage::clock::Clock::now_ms(
                &lockcore::storage::clock::SystemClock,
            ));
        let shared = Arc::new(Shared {
            core: Mutex::new(Core {
                engine,
                scripts: new_scripts(),
            }),
            personality,
            busy_threshold_ms: AtomicI64::new(
                config.get_i64(crate::config::key::BUSY_REPLY_THRESHOLD),
            ),
            maxmemory: AtomicI64::new(0),
            evicting: AtomicBool::new(false),
            evict_failed: AtomicBool::new(false),
            proto_max_bulk: AtomicI64::new(config.get_i64(crate::config::key::PROTO_MAX_BULK_LEN)),
            query_buffer_limit: AtomicI64::new(
                config.get_i64(crate::config::key::CLIENT_QUERY_BUFFER_LIMIT),
            ),
            normal_output_limit: Default::default(),
            config: RwLock::new(config),
            clients: DashMap::new(),
            pubsub,
            monitors: Monitors::default(),
            arrivals: Default::default(),
            clock,
            next_id: AtomicU64::new(1),
            timer: Notify::new(),
            timer_wake_at: AtomicI64::new(i64::MAX),
            shutdown: Notify::new(),
            shutting_down: AtomicBool::new(false),
            script: ScriptStatus::default(),
            counters: Counters::default(),
            cmdstats: Default::default(),
            slowlog: Default::default(),
            started: Instant::now(),
            run_id: random_run_id(),
            port: AtomicU64::new(0),
            tls: RwLock::new(None),
            acl: acl::Acl::new(&requirepass),
            cluster,
            shard,
            metrics_port: AtomicU64::new(0),
            migrate_sockets: Default::default(),
            repl: Default::default(),
            sentinel: Default::default(),
        });
        shared.apply_config();
        shared
    }

    /// Pushes config values the engine and the hot paths use out of the config table.
    pub fn apply_config(&self) {
        let mut core = self.core.lock();
        self.apply_config_to(&mut core);
    }

    /// [`Shared::apply_config`] for a caller that already holds the keyspace lock.
    pub fn apply_config_to(&self, core: &mut Core) {
        let cfg = self.config.read();
        self.busy_threshold_ms.store(
            cfg.get_i64(crate::config::key::BUSY_REPLY_THRESHOLD),
            Ordering::Relaxed,
        );
        self.pubsub.set_limits(&cfg);
        self.slowlog.configure(&cfg);
        self.normal_output_limit.set(cfg.output_limit("normal"));
        self.query_buffer_limit.store(
            cfg.get_i64(crate::config::key::CLIENT_QUERY_BUFFER_LIMIT),
            Ordering::Relaxed,
        );
        self.proto_max_bulk.store(
            cfg.get_i64(crate::config::key::PROTO_MAX_BULK_LEN),
            Ordering::Relaxed,
        );
        self.maxmemory.store(
            cfg.get_i64(crate::config::key::MAXMEMORY),
            Ordering::Relaxed,
        );
        self.evicting.store(
            cfg.get(crate::config::key::MAXMEMORY_POLICY) != "noeviction",
            Ordering::Relaxed,
        );
        crate::state::lockdep_config::apply(&cfg, &mut core.engine);
        self.cmdstats.apply_config(&cfg);
        core.scripts.configure(
            cfg.get_bool(crate::config::key::LUA_NATIVE_PLANS),
            cfg.get_bool(crate::config::key::LUA_PROFILER),
            self.personality,
        );
        let ec = &mut core.engine.config;
        ec.notify = lockcore::storage::notify::NotifyFlags::parse(
            cfg.get(crate::config::key::NOTIFY_KEYSPACE_EVENTS)
                .as_bytes(),
        )
        .unwrap_or_default();
        ec.proto_max_bulk_len = cfg.get_i64(crate::config::key::PROTO_MAX_BULK_LEN) as usize;
        ec.hash_max_listpack_entries =
            cfg.get_i64(crate::config::key::HASH_MAX_LISTPACK_ENTRIES) as usize;
        ec.hash_max_listpack_value =
            cfg.get_i64(crate::config::key::HASH_MAX_LISTPACK_VALUE) as usize;
        ec.list_max_listpack_size = cfg.get_i64(crate::config::key::LIST_MAX_LISTPACK_SIZE);
        ec.zset_max_listpack_entries =
            cfg.get_i64(crate::config::key::ZSET_MAX_LISTPACK_ENTRIES) as usize;
        ec.zset_max_listpack_value =
            cfg.get_i64(crate::config::key::ZSET_MAX_LISTPACK_VALUE) as usize;
        ec.set_max_intset_entries =
            cfg.get_i64(crate::config::key::SET_MAX_INTSET_ENTRIES) as usize;
        ec.set_max_listpack_entries =
            cfg.get_i64(crate::config::key::SET_MAX_LISTPACK_ENTRIES) as usize;
        ec.set_max_listpack_value =
            cfg.get_i64(crate::config::key::SET_MAX_LISTPACK_VALUE) as usize;
        ec.hll_sparse_max_bytes = cfg.get_i64(crate::config::key::HLL_SPARSE_MAX_BYTES) as usize;
        ec.lfu = cfg
            .get(crate::config::key::MAXMEMORY_POLICY)
            .ends_with("-lfu");
        ec.no_shared_integers = cfg.get_i64(crate::config::key::MAXMEMORY) != 0
            && (ec.lfu
                || cfg
                    .get(crate::config::key::MAXMEMORY_POLICY)
                    .ends_with("-lru"));
        ec.lfu_log_factor = cfg.get_i64(crate::config::key::LFU_LOG_FACTOR);
        core.engine.tracking.max_keys =
            cfg.get_i64(crate::config::key::TRACKING_TABLE_MAX_KEYS) as usize;
        core.engine.tracking.enforce_max_keys();
        ec.lfu_decay_time = cfg.get_i64(crate::config::key::LFU_DECAY_TIME);
        ec.stream_node_max_entries =
            cfg.get_i64(crate::config::key::STREAM_NODE_MAX_ENTRIES) as usize;
        ec.stream_node_max_bytes = cfg.get_i64(crate::config::key::STREAM_NODE_MAX_BYTES) as usize;
        drop(cfg);
        // A lower maxmemory (or a policy that now evicts) takes effect at once, as Redis'
        // CONFIG SET maxmemory does.
        crate::state::memory::perform_evictions(self, &mut core.engine);
    }

    /// Redis' OOM state: `maxmemory` is set, used memory is over it, and eviction (if the
    /// policy evicts) could not get under it (crate::state::memory::perform_evictions).
    #[inline]
    pub fn over_maxmemory(&self) -> bool {
        crate::state::memory::over_limit(self)
            && (!self.evicting.load(Ordering::Relaxed) || self.evict_failed.load(Ordering::Relaxed))
    }

    /// How long the running script has run, in ms, if one runs.
    pub fn script_running_for(&self) -> Option<i64> {
        let s = self.script.started_ms.load(Ordering::Acquire);
        (s != 0).then(|| crate::base::mono::Mono::now().ms() - s)
    }

    /// True if a script has run past the busy threshold.
    pub fn script_busy(&self) -> bool {
        self.script_running_for()
            .is_some_and(|t| t >= self.busy_threshold_ms.load(Ordering::Relaxed))
    }

    /// Takes the keyspace lock without ever parking a runtime thread for long.
    /// With `allow_busy` false, gives up with [`LockError::Busy`] once a running script is
    /// past the busy threshold.
    pub async fn lock_core(&self, allow_busy: bool) -> Result<CoreGuard<'_>, LockError> {
        if let Some(g) = self.core.try_lock() {
            return Ok(self.guard(g));
        }
        loop {
            if !allow_busy && self.script_busy() {
                return Err(LockError::Busy);
            }
            if let Some(g) = self.core.try_lock_for(Duration::from_micros(200)) {
                return Ok(self.guard(g));
            }
            if self.script_running_for().is_some() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            } else {
                tokio::task::yield_now().await;
            }
        }
    }

    /// Takes the keyspace lock from synchronous code (timer, startup, embedding).
    pub fn lock_core_blocking(&self) -> CoreGuard<'_> {
        self.guard(self.core.lock())
    }

    fn guard<'a>(&'a self, g: MutexGuard<'a, Core>) -> CoreGuard<'a> {
        let mut g = CoreGuard {
            guard: g,
            shared: self,
        };
        // A replica first applies what its primary sent: what a client reads from it
        // includes every write the primary had answered (unless a fault holds it back).
        if self.repl.is_replica.load(Ordering::Relaxed) {
            self.repl.drain(&mut g.guard);
        }
        g
    }

    pub fn next_client_id(&self) -> ClientId {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Milliseconds since the server started (monotonic).
    pub fn uptime_ms(&self) -> i64 {
        self.started.elapsed().as_millis() as i64
    }

    /// Sends a MONITOR line to every monitor. `argv` as executed, `db`, client address.
    pub fn feed_monitors(&self, db: usize, origin: &str, argv: &[Bytes]) {
        if self.monitors.is_empty() {
            return;
        }
        let us = self.clock.now_us();
        let mut line = format!(
            "{}.{:06} [{} {}]",
            us / 1_000_000,
            us % 1_000_000,
            db,
            origin
        );
        for a in argv {
            line.push(' ');
            line.push_str(&lockcore::reply::repr(a));
        }
        let reply = Reply::Simple(line.into());
        for m in self.monitors.iter() {
            crate::state::climits::deliver_monitor(self, &m, reply.clone());
        }
    }
}

/// INFO's `used_memory`, which maxmemory is compared with (crate::state::memory).
pub fn used_memory() -> u64 {
    crate::state::memory::used_memory()
}

/// The keyspace a server command runs against; the connection took the lock for it
/// because the command's row says it needs it.
pub fn core<'g, 'a>(guard: &'g mut Option<CoreGuard<'a>>) -> &'g mut Core {
    guard
        .as_mut()
        .expect("a server command that uses the keyspace has the CORE flag in its row")
}

impl Core {
    /// A client went away: its tracking, lock sessions and lock-order state go with it.
    /// Called under the keyspace lock when a client disconnects, after its blocked command and
    /// watches are gone (session-bound native locks are released here).
    pub fn on_disconnect(&mut self, id: lockcore::ClientId) {
        self.engine.tracking.disable(id);
        lockcore::engine::locks::release_session(&mut self.engine, id);
        if let Some(ld) = self.engine.lockdep.as_deref_mut() {
            ld.client_gone(id);
        }
        // Hand the released locks to their waiters now, not at the next command.
        self.engine.after_command();
    }
}
