//! One process, many nodes: independent servers for RedLock, or one emulated Redis Cluster.
//!
//! # Model
//!
//! A *node* is a listener (its own port, node id, faults). A *shard* is a dataset: one
//! [`Shared`] with its own keyspace, scripts, pub/sub, clients, native locks and clock.
//! Without cluster mode every node is its own shard (`--nodes 3` = three unrelated
//! servers). In cluster mode (`--cluster-enabled yes`) the first `nodes / (replicas + 1)`
//! nodes are primaries, one shard each, and the 16384 slots are split among them as
//! `redis-cli --cluster create` does; the other nodes are replicas and serve their primary's
//! shard (replication is synchronous: a replica sees every write at once).
//!
//! # The slot check
//!
//! [`check`] is Redis' `getNodeByQuery` + `clusterRedirectClient`: it runs once per command
//! in `Conn::process_command`, after the NO_MULTI check and before queueing, and reads the
//! command table's key specs (`lockcore::slots::command_slot`), the one source of truth for
//! where keys are. The slot table is an array of atomics, so the check takes no lock; only
//! a slot under migration looks at the keyspace (ASK/TRYAGAIN depend on which keys exist).
//! A node that owns every slot (a one-primary cluster, [`Topology::owns_all`]) only looks
//! for keys in two slots ([`slots::SameSlot`]), which needs no CRC for a one-key command.
//!
//! What is not emulated: the cluster bus, gossip and failure detection (a node marked down
//! stays in CLUSTER SLOTS until `TUMBLER.CLUSTER FAILOVER`), persistence of nodes.conf,
//! CLUSTER SETSLOT/ADDSLOTS/MEET/MIGRATE (slots move with `TUMBLER.CLUSTER MOVESLOT`).

pub mod control;
pub mod nodes;

use bytes::Bytes;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use tokio::sync::{watch, Notify};

use lockcore::engine::spec::{flag, CommandSpec, Keys};
use lockcore::slots::{self, CommandSlot, SLOTS};
use lockcore::{error, Reply};

use crate::conn::Conn;
use crate::shared::{CoreGuard, Shared};

pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
pub const TRYAGAIN: &str = "TRYAGAIN Multiple keys request during rehashing of slot";
const NON_LOCAL: &str = "ERR Script attempted to access a non local key in a cluster node";
pub const DISABLED: &str = "ERR This instance has cluster support disabled";

/// One listener of the process.
pub struct Node {
    pub index: usize,
    /// 40 hex digits, random per process, as CLUSTER MYID shows.
    pub id: String,
    pub shard: usize,
    pub port: AtomicU16,
    /// Down: the listener is closed and the node's connections are dropped.
    pub down: watch::Sender<bool>,
    /// Every reply of this node waits this long (TUMBLER.NODE DELAY).
    pub delay_ms: AtomicU64,
    /// Parts per million of reply batches that are never sent (TUMBLER.NODE DROP).
    pub drop_ppm: AtomicU32,
    pub config_epoch: AtomicU64,
    /// The listening socket while the node is up. The accept loop serves a duplicate of it;
    /// TUMBLER.NODE DOWN shuts this one down and UP binds a new one before they reply, so
    /// a test's next connect already sees the node down or up (server/src/cluster/nodes.rs).
    pub listener: parking_lot::Mutex<Option<std::net::TcpListener>>,
}

impl Node {
    pub fn port(&self) -> u16 {
        self.port.load(Ordering::Relaxed)
    }
    pub fn is_down(&self) -> bool {
        *self.down.borrow()
    }
}

/// A slot being moved from one shard to another (`-ASK`, `-TRYAGAIN`).
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    pub from: usize,
    pub to: usize,
}

/// The nodes of the process, which shard each serves and, in cluster mode, who owns
/// which slot. Shared by every node.
pub struct Topology {
    /// Cluster mode: slot checks, CLUSTER, ASKING/READONLY.
    pub enabled: bool,
    /// TUMBLER.NODE / TUMBLER.CLUSTER exist.
    pub test_control: bool,
    /// The address put in MOVED/ASK and CLUSTER SLOTS.
    pub announce_ip: String,
    /// The `bind` directive the nodes listen on (again, after TUMBLER.NODE UP).
    pub bind: String,
    pub nodes: Vec<Arc<Node>>,
    shards: OnceLock<Vec<Weak<Shared>>>,
    /// Per slot: the owning shard, with [`MIGRATING`] set while the slot moves.
    slots: Box<[AtomicU16]>,
    /// The shard that owns all 16384 slots with none migrating (a one-primary cluster),
    /// or `usize::MAX`: its slot check needs no slot, only whether keys span slots.
    sole_owner: AtomicUsize,
    /// Per shard: how many slots it owns and is not migrating (kept by `set_slot`).
    settled: Vec<AtomicUsize>,
    /// Per shard: the index of its primary node.
    primary: Vec<AtomicUsize>,
    migrations: RwLock<HashMap<u16, Migration>>,
    pub current_epoch: AtomicU64,
    /// SHUTDOWN on any node stops the process.
    pub shutdown: Notify,
    pub shutting_down: AtomicBool,
}

const MIGRATING: u16 = 1 << 15;

/// Slot ranges per primary, as `redis-cli --cluster create` allocates them.
pub fn split_slots(masters: usize) -> Vec<(u16, u16)> {
    let per = SLOTS as f64 / masters as f64;
    let mut first = 0i64;
    let mut cursor = 0f64;
    let mut out = Vec::new();
    for i in 0..masters {
        let mut last = (cursor + per - 1.0).round() as i64;
        if last > SLOTS as i64 || i == masters - 1 {
            last = SLOTS as i64 - 1;
        }
        if last < first {
            last = first;
        }
        out.push((first as u16, last as u16));
        first = last + 1;
        cursor += per;
    }
    out
}

/// 40 random hex digits.
fn random_id() -> String {
    use std::hash::BuildHasher;
    let s = std::collections::hash_map::RandomState::new();
    (0u64..3)
        .map(|i| format!("{:016x}", s.hash_one(i)))
        .collect::<String>()[..40]
        .to_string()
}

impl Topology {
    /// `n` nodes; in cluster mode with `replicas` replicas per primary.
    pub fn new(n: usize, cluster: bool, replicas: usize, test_control: bool, ip: &str) -> Topology {
        let masters = if cluster {
            (n / (replicas + 1)).max(1)
        } else {
            n
        };
        let nodes = (0..n)
            .map(|i| {
                Arc::new(Node {
                    index: i,
                    id: random_id(),
                    shard: if i < masters {
                        i
                    } else {
                        (i - masters) % masters
                    },
                    port: AtomicU16::new(0),
                    down: watch::channel(false).0,
                    delay_ms: AtomicU64::new(0),
                    drop_ppm: AtomicU32::new(0),
                    config_epoch: AtomicU64::new(i as u64 + 1),
                    listener: parking_lot::Mutex::new(None),
                })
            })
            .collect();
        let slots: Box<[AtomicU16]> = (0..SLOTS).map(|_| AtomicU16::new(0)).collect();
        let settled: Vec<AtomicUsize> = (0..masters).map(|_| AtomicUsize::new(0)).collect();
        for (shard, (a, b)) in split_slots(masters).into_iter().enumerate() {
            for s in a..=b {
                slots[s as usize].store(shard as u16, Ordering::Relaxed);
            }
            settled[shard].store((b - a) as usize + 1, Ordering::Relaxed);
        }
        let announce_ip = match ip {
            "" | "0.0.0.0" | "*" => "127.0.0.1",
            "::" | "::*" => "::1",
            h => h,
        }
        .to_string();
        Topology {
            enabled: cluster,
            test_control,
            announce_ip,
            bind: ip.to_string(),
            nodes,
            shards: OnceLock::new(),
            slots,
            sole_owner: AtomicUsize::new(if masters == 1 { 0 } else { usize::MAX }),
            settled,
            primary: (0..masters).map(AtomicUsize::new).collect(),
            migrations: RwLock::new(HashMap::new()),
            current_epoch: AtomicU64::new(masters as u64),
            shutdown: Notify::new(),
            shutting_down: AtomicBool::new(false),
        }
    }

    pub fn shard_count(&self) -> usize {
        self.primary.len()
    }

    pub(crate) fn set_shards(&self, shards: &[Arc<Shared>]) {
        let _ = self.shards.set(shards.iter().map(Arc::downgrade).collect());
    }

    /// The dataset of shard `i`, while the server runs.
    pub fn shard(&self, i: usize) -> Option<Arc<Shared>> {
        self.shards.get()?.get(i)?.upgrade()
    }

    /// The primary node of shard `i`.
    pub fn primary_of(&self, shard: usize) -> &Arc<Node> {
        &self.nodes[self.primary[shard].load(Ordering::Acquire)]
    }

    pub fn is_primary(&self, node: &Node) -> bool {
        self.primary[node.shard].load(Ordering::Acquire) == node.index
    }

    /// The shard that owns `slot` and whether it is being migrated.
    pub fn slot(&self, slot: u16) -> (usize, bool) {
        let v = self.slots[slot as usize].load(Ordering::Acquire);
        ((v & !MIGRATING) as usize, v & MIGRATING != 0)
    }

    /// True if `shard` owns every slot and none is migrating.
    #[inline]
    pub fn owns_all(&self, shard: usize) -> bool {
        self.sole_owner.load(Ordering::Acquire) == shard
    }

    pub fn migration(&self, slot: u16) -> Option<Migration> {
        self.migrations.read().get(&slot).copied()
    }

    pub(crate) fn set_slot(&self, slot: u16, shard: usize, migration: Option<Migration>) {
        let mut m = self.migrations.write();
        match migration {
            Some(mg) => {
                m.insert(slot, mg);
            }
            None => {
                m.remove(&slot);
            }
        }
        let flag = if migration.is_some() { MIGRATING } else { 0 };
        // The counts change only here, under the migrations lock.
        self.sole_owner.store(usize::MAX, Ordering::Release);
        let old = self.slots[slot as usize].swap(shard as u16 | flag, Ordering::AcqRel);
        if old & MIGRATING == 0 {
            self.settled[old as usize].fetch_sub(1, Ordering::Relaxed);
        }
        if flag == 0 && self.settled[shard].fetch_add(1, Ordering::Relaxed) + 1 == SLOTS {
            self.sole_owner.store(shard, Ordering::Release);
        }
        self.current_epoch.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn set_primary(&self, shard: usize, node: usize) {
        self.primary[shard].store(node, Ordering::Release);
        let e = self.current_epoch.fetch_add(1, Ordering::AcqRel) + 1;
        self.nodes[node].config_epoch.store(e, Ordering::Relaxed);
    }

    /// `ip:port` of a node, as MOVED/ASK give it.
    pub fn addr(&self, node: &Node) -> String {
        format!("{}:{}", self.announce_ip, node.port())
    }

    /// The slot ranges each shard owns, in slot order.
    pub fn ranges(&self) -> Vec<(u16, u16, usize)> {
        let mut out: Vec<(u16, u16, usize)> = Vec::new();
        for s in 0..SLOTS as u16 {
            let (shard, _) = self.slot(s);
            match out.last_mut() {
                Some((_, end, sh)) if *sh == shard && *end + 1 == s => *end = s,
                _ => out.push((s, s, shard)),
            }
        }
        out
    }

    /// Nodes of a shard: primary first, then replicas by index.
    pub fn shard_nodes(&self, shard: usize) -> Vec<&Arc<Node>> {
        let p = self.primary_of(shard);
        let mut v = vec![p];
        v.extend(
            self.nodes
                .iter()
                .filter(|n| n.shard == shard && n.index != p.index),
        );
        v
    }
}

/// A connection's cluster state.
#[derive(Default)]
pub struct ConnState {
    /// The node the client connected to; None for a plain single server.
    pub node: Option<Arc<Node>>,
    /// ASKING was sent (it covers the next command, or the whole MULTI).
    pub asking: bool,
    pub prev_asking: bool,
    /// READONLY: reads may be served by a replica.
    pub readonly: bool,
}

/// What the slot check decided.
pub enum Route {
    /// Serve the command here.
    Serve,
    /// Answer with this error (MOVED, CROSSSLOT, SELECT in cluster mode).
    Refuse(Reply),
    /// The slot is migrating to or from this node: which keys exist decides
    /// ([`check_migrating`]).
    Migrating(u16),
}

/// Redis' cluster redirection for one command (or EXEC and its queue), for a slot that is
/// not migrating. Synchronous and lock-free: it runs on every command in cluster mode.
#[inline]
pub fn check(c: &mut Conn, topo: &Topology, spec: &CommandSpec, argv: &[Bytes]) -> Route {
    if !topo.enabled {
        return Route::Serve;
    }
    let Some((my_shard, my_index)) = c.cluster.node.as_ref().map(|n| (n.shard, n.index)) else {
        return Route::Serve;
    };
    // ASKING covers one command, or every command of a transaction (Redis' resetClient).
    if !c.cluster.prev_asking && c.multi.is_none() {
        c.cluster.asking = false;
    }
    c.cluster.prev_asking = false;
    // EXEC is checked over its queue; other keyless commands are served (but SELECT).
    let queue = if matches!(spec.keys, Keys::None) {
        if !spec.parent.is_empty() {
            return Route::Serve;
        }
        match spec.name {
            "exec" => match c.multi.as_ref() {
                Some(m) => Some(&m.queue),
                None => return Route::Serve,
            },
            "select" if c.multi.is_none() => return select_check(argv),
            _ => return Route::Serve,
        }
    } else {
        None
    };
    let write = || match queue {
        Some(q) => q.iter().any(|(sp, _)| sp.has(flag::WRITE)),
        None => spec.has(flag::WRITE),
    };
    // A node that owns every slot, none migrating (a one-primary cluster), serves any
    // slot it may serve at all: only CROSSSLOT is left to find, and a command with one key
    // needs no work at all.
    if topo.owns_all(my_shard)
        && (topo.primary[my_shard].load(Ordering::Acquire) == my_index
            || (c.cluster.readonly && !write()))
    {
        let cross = match queue {
            None => slots::crosses_slots(spec, argv),
            Some(q) => {
                let mut same = slots::SameSlot::default();
                q.iter().for_each(|(sp, a)| same.add_command(sp, a));
                same.cross()
            }
        };
        return if cross {
            Route::Refuse(Reply::err(CROSSSLOT))
        } else {
            Route::Serve
        };
    }
    let write = write();
    let slot = match queue {
        Some(q) => q.iter().fold(CommandSlot::NoKeys, |s, (sp, a)| {
            s.merge(slots::command_slot(sp, a))
        }),
        None => slots::command_slot(spec, argv),
    };
    let slot = match slot {
        CommandSlot::NoKeys => return Route::Serve,
        CommandSlot::Cross => return Route::Refuse(Reply::err(CROSSSLOT)),
        CommandSlot::Slot(s) => s,
    };
    let (owner, migrating) = topo.slot(slot);
    if migrating {
        if let Some(mg) = topo.migration(slot) {
            if mg.from == my_shard || mg.to == my_shard {
                return Route::Migrating(slot);
            }
        }
    }
    if owner == my_shard
        && (topo.primary[my_shard].load(Ordering::Acquire) == my_index
            || (c.cluster.readonly && !write))
    {
        return Route::Serve;
    }
    let to = topo.primary_of(owner);
    Route::Refuse(Reply::err(format!("MOVED {slot} {}", topo.addr(to))))
}

/// [`check`] for a slot migrating from or to this node: the source serves the keys it
/// still has and answers `-ASK` for the others; the target serves a client that sent
/// ASKING, or `-TRYAGAIN` when a multi-key request finds only some keys.
pub async fn check_migrating<'a>(
    c: &mut Conn,
    shared: &'a Shared,
    guard: &mut Option<CoreGuard<'a>>,
    spec: &CommandSpec,
    argv: &[Bytes],
    slot: u16,
) -> Option<Reply> {
    let topo = shared.cluster.as_ref()?;
    let (my_shard, my_index) = c.cluster.node.as_ref().map(|n| (n.shard, n.index))?;
    let write = spec.has(flag::WRITE)
        || c.multi
            .as_ref()
            .is_some_and(|m| m.queue.iter().any(|(s, _)| s.has(flag::WRITE)));
    let (owner, _) = topo.slot(slot);
    if let Some(mg) = topo.migration(slot) {
        let (missing, multiple) = missing_keys(c, shared, guard, spec, argv).await;
        if mg.from == my_shard && missing > 0 {
            let to = topo.primary_of(mg.to);
            return Some(Reply::err(format!("ASK {slot} {}", topo.addr(to))));
        }
        if mg.to == my_shard && c.cluster.asking {
            if multiple && missing > 0 {
                return Some(Reply::err(TRYAGAIN));
            }
            return None;
        }
    }
    if owner == my_shard
        && (topo.primary[my_shard].load(Ordering::Acquire) == my_index
            || (c.cluster.readonly && !write))
    {
        return None;
    }
    let to = topo.primary_of(owner);
    Some(Reply::err(format!("MOVED {slot} {}", topo.addr(to))))
}

fn select_check(argv: &[Bytes]) -> Route {
    match argv.get(1).and_then(|a| lockcore::num::parse_i64(a)) {
        Some(n) if n != 0 => Route::Refuse(Reply::err("ERR SELECT is not allowed in cluster mode")),
        _ => Route::Serve,
    }
}

/// How many of the command's keys (EXEC: of its queue's keys) are missing here, and
/// whether it names more than one distinct key. Expired keys count as missing and are
/// left in place (Redis' LOOKUP_NOEXPIRE).
async fn missing_keys<'a>(
    c: &Conn,
    shared: &'a Shared,
    guard: &mut Option<CoreGuard<'a>>,
    spec: &CommandSpec,
    argv: &[Bytes],
) -> (usize, bool) {
    if guard.is_none() {
        match shared.lock_core(true).await {
            Ok(g) => *guard = Some(g),
            Err(_) => return (0, false),
        }
    }
    let core = guard.as_mut().expect("locked above");
    let eng = &core.engine;
    let now = eng.now_ms();
    let db = c.cl.db;
    let mut keys: Vec<&Bytes> = Vec::new();
    if spec.parent.is_empty() && spec.name == "exec" {
        for (sp, a) in c.multi.iter().flat_map(|m| m.queue.iter()) {
            sp.for_each_key(a, |i| keys.push(&a[i]));
        }
    } else {
        spec.for_each_key(argv, |i| keys.push(&argv[i]));
    }
    let multiple = keys.iter().any(|k| *k != keys[0]);
    let missing = keys
        .iter()
        .filter(|k| match eng.dbs[db].get(k) {
            Some(e) => e.expire_at().is_some_and(|t| t <= now),
            None => true,
        })
        .count();
    (missing, multiple)
}

/// The per-call check of a script in cluster mode (Redis 7.0's scriptVerifyClusterState):
/// every key a `redis.call` touches must be served by this node. (Redis 7.0 lets a script
/// touch several local slots; 7.2 added a same-slot rule, which 7.0 clients do not expect.)
pub fn script_call_check(
    shared: &Shared,
    spec: &CommandSpec,
    argv: &[Bytes],
) -> Result<(), String> {
    let Some(topo) = shared.cluster.as_ref().filter(|t| t.enabled) else {
        return Ok(());
    };
    // One shard owns every slot: only keys across slots are refused (getNodeByQuery's
    // CROSSSLOT), and one key needs no CRC.
    if topo.owns_all(shared.shard) {
        return match slots::crosses_slots(spec, argv) {
            false => Ok(()),
            true => Err(NON_LOCAL.into()),
        };
    }
    let local = |s: u16| {
        let (owner, migrating) = topo.slot(s);
        // A slot being imported here is local too: the EVAL itself passed the central
        // check, which asked for ASKING.
        owner == shared.shard
            || (migrating && topo.migration(s).is_some_and(|m| m.to == shared.shard))
    };
    match slots::command_slot(spec, argv) {
        CommandSlot::NoKeys => Ok(()),
        CommandSlot::Slot(s) if local(s) => Ok(()),
        _ => Err(NON_LOCAL.into()),
    }
}

/// True if client `id` of this shard is connected to one of its replicas (a script it runs
/// may not write, as on a Redis replica). Looked up only in clusters that have replicas.
pub fn on_replica(shared: &Shared, id: lockcore::ClientId) -> bool {
    let Some(topo) = shared.cluster.as_ref().filter(|t| t.enabled) else {
        return false;
    };
    if topo.nodes.len() == topo.shard_count() {
        return false;
    }
    let Some(port) = shared.clients.get(&id).map(|h| h.laddr.port()) else {
        return false;
    };
    topo.nodes
        .iter()
        .any(|n| n.port() == port && n.shard == shared.shard && !topo.is_primary(n))
}

// ---------------------------------------------------------------- pub/sub across nodes

/// In cluster mode classic PUBLISH reaches subscribers on every node (Redis sends it over
/// the cluster bus); the count it returns is this node's, as in Redis. Sharded messages
/// and keyspace notifications stay on the node.
pub struct ClusterBroker {
    pub local: Arc<crate::pubsub::PubSub>,
    pub topo: Weak<Topology>,
    pub shard: usize,
}

impl lockcore::storage::notify::Broker for ClusterBroker {
    fn log_warning(&self, message: &str) {
        tracing::warn!("{message}");
    }
    fn publish(&self, channel: &Bytes, message: &Bytes, sharded: bool) -> i64 {
        let n = self.local.publish_to(channel, message, sharded);
        if !sharded && !channel.starts_with(b"__key") {
            if let Some(topo) = self.topo.upgrade() {
                for i in (0..topo.shard_count()).filter(|&i| i != self.shard) {
                    if let Some(s) = topo.shard(i) {
                        // Only the subscriber tables: never another shard's keyspace lock.
                        s.pubsub.publish_to(channel, message, false);
                    }
                }
            }
        }
        n
    }
}

// ---------------------------------------------------------------- commands

fn eq(a: &[u8], s: &str) -> bool {
    a.eq_ignore_ascii_case(s.as_bytes())
}

/// ASKING, READONLY, READWRITE.
pub fn conn_command(c: &mut Conn, name: &str) -> Reply {
    if !c.shared.cluster.as_ref().is_some_and(|t| t.enabled) {
        return Reply::err(DISABLED);
    }
    match name {
        "asking" => {
            c.cluster.asking = true;
            c.cluster.prev_asking = true;
        }
        "readonly" => c.cluster.readonly = true,
        _ => c.cluster.readonly = false,
    }
    Reply::ok()
}

/// CLUSTER subcommands.
pub fn cluster_command(
    c: &mut Conn,
    guard: &mut Option<CoreGuard<'_>>,
    spec: &CommandSpec,
    a: &[Bytes],
) -> Reply {
    let Some(topo) = c.shared.cluster.clone().filter(|t| t.enabled) else {
        return Reply::err(DISABLED);
    };
    let Some(me) = c.cluster.node.clone() else {
        return Reply::err(DISABLED);
    };
    match spec.name {
        "myid" => Reply::bulk_str(&me.id),
        "keyslot" => Reply::Int(slots::key_hash_slot(&a[2]) as i64),
        "countkeysinslot" | "getkeysinslot" => {
            let Some(slot) =
                lockcore::num::parse_i64(&a[2]).filter(|s| (0..SLOTS as i64).contains(s))
            else {
                return Reply::err(if spec.name == "countkeysinslot" {
                    "ERR Invalid slot"
                } else {
                    "ERR Invalid slot or number of keys"
                });
            };
            let max = if spec.name == "getkeysinslot" {
                match lockcore::num::parse_i64(&a[3]) {
                    Some(n) if n >= 0 => n as usize,
                    _ => return Reply::err("ERR Invalid slot or number of keys"),
                }
            } else {
                usize::MAX
            };
            let core = crate::dispatch::core(guard);
            let now = core.engine.now_ms();
            let keys = core.engine.dbs[0]
                .iter()
                .filter(|(k, e)| {
                    slots::key_hash_slot(k) == slot as u16 && e.expire_at().is_none_or(|t| t > now)
                })
                .map(|(k, _)| Bytes::copy_from_slice(k));
            if spec.name == "countkeysinslot" {
                Reply::Int(keys.count() as i64)
            } else {
                // Sorted, so a partial listing is deterministic (Redis lists newest first).
                let mut v: Vec<Bytes> = keys.collect();
                v.sort();
                Reply::Array(v.into_iter().take(max).map(Reply::Bulk).collect())
            }
        }
        "info" => {
            let known = topo.nodes.len();
            let size = topo.shard_count();
            let s = format!(
                "cluster_state:ok\r\ncluster_slots_assigned:{SLOTS}\r\ncluster_slots_ok:{SLOTS}\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:{known}\r\ncluster_size:{size}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{}\r\ncluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n",
                topo.current_epoch.load(Ordering::Relaxed),
                topo.primary_of(me.shard).config_epoch.load(Ordering::Relaxed),
            );
            Reply::Verbatim("txt", Bytes::from(s))
        }
        "slots" => Reply::Array(
            topo.ranges()
                .into_iter()
                .map(|(a, b, shard)| {
                    let mut v = vec![Reply::Int(a as i64), Reply::Int(b as i64)];
                    v.extend(topo.shard_nodes(shard).into_iter().map(|n| {
                        Reply::Array(vec![
                            Reply::bulk_str(&topo.announce_ip),
                            Reply::Int(n.port() as i64),
                            Reply::bulk_str(&n.id),
                            Reply::Array(vec![]),
                        ])
                    }));
                    Reply::Array(v)
                })
                .collect(),
        ),
        "shards" => {
            let ranges = topo.ranges();
            Reply::Array(
                (0..topo.shard_count())
                    .map(|shard| {
                        let slots: Vec<Reply> = ranges
                            .iter()
                            .filter(|r| r.2 == shard)
                            .flat_map(|r| [Reply::Int(r.0 as i64), Reply::Int(r.1 as i64)])
                            .collect();
                        let nodes = topo
                            .shard_nodes(shard)
                            .into_iter()
                            .map(|n| shard_node(&topo, n))
                            .collect();
                        Reply::Map(vec![
                            (Reply::bulk_str("slots"), Reply::Array(slots)),
                            (Reply::bulk_str("nodes"), Reply::Array(nodes)),
                        ])
                    })
                    .collect(),
            )
        }
        "nodes" => Reply::Verbatim("txt", Bytes::from(nodes_text(&topo, &me))),
        "replicas" | "slaves" => {
            let Some(n) = topo
                .nodes
                .iter()
                .find(|n| n.id.as_bytes().eq_ignore_ascii_case(&a[2]))
            else {
                return Reply::err(format!(
                    "ERR Unknown node {}",
                    String::from_utf8_lossy(&a[2])
                ));
            };
            if !topo.is_primary(n) {
                return Reply::err("ERR The specified node is not a master");
            }
            Reply::Array(
                topo.shard_nodes(n.shard)
                    .into_iter()
                    .skip(1)
                    .map(|r| Reply::bulk_str(&node_line(&topo, r, &me)))
                    .collect(),
            )
        }
        "help" => Reply::Array(
            [
                "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "COUNTKEYSINSLOT <slot>",
                "GETKEYSINSLOT <slot> <count>",
                "INFO",
                "KEYSLOT <key>",
                "MYID",
                "NODES",
                "REPLICAS <node-id>",
                "SHARDS",
                "SLOTS",
                "HELP",
            ]
            .iter()
            .map(|s| Reply::simple(s))
            .collect(),
        ),
        _ => error::unknown_subcommand("cluster", spec.name.as_bytes()),
    }
}

fn shard_node(topo: &Topology, n: &Node) -> Reply {
    let role = if topo.is_primary(n) {
        "master"
    } else {
        "replica"
    };
    let health = if n.is_down() { "fail" } else { "online" };
    Reply::Map(vec![
        (Reply::bulk_str("id"), Reply::bulk_str(&n.id)),
        (Reply::bulk_str("port"), Reply::Int(n.port() as i64)),
        (Reply::bulk_str("ip"), Reply::bulk_str(&topo.announce_ip)),
        (
            Reply::bulk_str("endpoint"),
            Reply::bulk_str(&topo.announce_ip),
        ),
        (Reply::bulk_str("role"), Reply::bulk_str(role)),
        (Reply::bulk_str("replication-offset"), Reply::Int(0)),
        (Reply::bulk_str("health"), Reply::bulk_str(health)),
    ])
}

/// One CLUSTER NODES line (without the newline).
fn node_line(topo: &Topology, n: &Node, me: &Node) -> String {
    let mut flags = Vec::new();
    if n.index == me.index {
        flags.push("myself");
    }
    let primary = topo.is_primary(n);
    flags.push(if primary { "master" } else { "slave" });
    if n.is_down() {
        flags.push("fail");
    }
    let master = if primary {
        "-".to_string()
    } else {
        topo.primary_of(n.shard).id.clone()
    };
    let port = n.port();
    let link = if n.is_down() {
        "disconnected"
    } else {
        "connected"
    };
    let mut s = format!(
        "{} {}:{}@{} {} {} 0 0 {} {}",
        n.id,
        topo.announce_ip,
        port,
        port as u32 + 10000,
        flags.join(","),
        master,
        topo.primary_of(n.shard)
            .config_epoch
            .load(Ordering::Relaxed),
        link
    );
    if primary {
        for (a, b, shard) in topo.ranges() {
            if shard == n.shard {
                if a == b {
                    s.push_str(&format!(" {a}"));
                } else {
                    s.push_str(&format!(" {a}-{b}"));
                }
            }
        }
        let migs = topo.migrations.read();
        let mut migs: Vec<_> = migs.iter().collect();
        migs.sort_by_key(|(s, _)| **s);
        for (slot, mg) in migs {
            if mg.from == n.shard {
                s.push_str(&format!(" [{slot}->-{}]", topo.primary_of(mg.to).id));
            } else if mg.to == n.shard {
                s.push_str(&format!(" [{slot}-<-{}]", topo.primary_of(mg.from).id));
            }
        }
    }
    s
}

fn nodes_text(topo: &Topology, me: &Node) -> String {
    let mut out = String::new();
    for n in &topo.nodes {
        out.push_str(&node_line(topo, n, me));
        out.push('\n');
    }
    out
}

/// True if `name` is a test-control command and the feature is off: it must look as if it
/// did not exist. Cheap for every other name (a length check).
pub fn hidden_name(shared: &Shared, name: &[u8]) -> bool {
    use lockcore::commands::cluster_cmds::{CLUSTER, NODE};
    ((name.len() == NODE.len() && eq(name, NODE))
        || (name.len() == CLUSTER.len() && eq(name, CLUSTER)))
        && !test_control(shared)
}

/// True if COMMAND and friends must leave `spec` out on this server.
pub fn hidden_spec(shared: &Shared, spec: &CommandSpec) -> bool {
    use lockcore::commands::cluster_cmds::{CLUSTER, NODE};
    let top = if spec.parent.is_empty() {
        spec.name
    } else {
        spec.parent
    };
    (top == NODE || top == CLUSTER) && !test_control(shared)
}

pub fn test_control(shared: &Shared) -> bool {
    shared.config.read().get_bool("enable-test-control")
}

/// TUMBLER.NODE DELAY and DROP, applied to each batch of replies before it is written.
pub async fn faults_before_write(node: &Node, out: &mut bytes::BytesMut) {
    let delay = node.delay_ms.load(Ordering::Relaxed);
    if delay > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
    }
    let ppm = node.drop_ppm.load(Ordering::Relaxed);
    if ppm > 0 {
        use std::hash::BuildHasher;
        let r = std::collections::hash_map::RandomState::new().hash_one(std::time::Instant::now());
        if r % 1_000_000 < ppm as u64 {
            out.clear();
        }
    }
}

/// Whether `config` asks for several nodes in this process (`nodes` > 1 or cluster mode).
pub fn multi_node(config: &crate::Config) -> bool {
    config.get_i64("nodes") > 1 || config.get_bool("cluster-enabled")
}
