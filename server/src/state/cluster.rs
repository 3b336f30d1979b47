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
//! What is not emulated: the cluster bus, gossip and failure detection (a node marked down
//! stays in CLUSTER SLOTS until `TUMBLER.CLUSTER FAILOVER`), persistence of nodes.conf,
//! CLUSTER SETSLOT/ADDSLOTS/MEET/MIGRATE (slots move with `TUMBLER.CLUSTER MOVESLOT`).
//!
//! This is the topology; the commands are in cluster/, the per-command slot check in
//! conn/route.rs.

use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use tokio::sync::{watch, Notify};

use lockcore::engine::spec::CommandSpec;
use lockcore::slots::SLOTS;

use crate::state::Shared;

pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
pub const TRYAGAIN: &str = "TRYAGAIN Multiple keys request during rehashing of slot";
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
    /// A primary and its replicas (`--replicas`, `--sentinels`): every node its own dataset,
    /// kept in step by replication (server/src/repl/).
    pub replication: bool,
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
    pub(crate) primary: Vec<AtomicUsize>,
    pub(crate) migrations: RwLock<HashMap<u16, Migration>>,
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
                    id: super::random_run_id(),
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
            replication: false,
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

    /// Every node's dataset, by node index. Nodes of one shard share it unless they
    /// replicate (a replica then has its own copy, server/src/repl/).
    pub(crate) fn set_datasets(&self, per_node: &[Arc<Shared>]) {
        let _ = self
            .shards
            .set(per_node.iter().map(Arc::downgrade).collect());
    }

    /// The dataset of shard `i` (its primary's), while the server runs.
    pub fn shard(&self, i: usize) -> Option<Arc<Shared>> {
        self.node_data(self.primary.get(i)?.load(Ordering::Acquire))
    }

    /// The dataset node `i` serves, while the server runs.
    pub fn node_data(&self, i: usize) -> Option<Arc<Shared>> {
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

/// True if `name` is a test-control command and the feature is off: it must look as if it
/// did not exist. Cheap for every other name (a length check).
pub fn hidden_name(shared: &Shared, name: &[u8]) -> bool {
    use lockcore::commands::cluster_cmds::{CLUSTER, NODE, REPL};
    [NODE, CLUSTER, REPL]
        .iter()
        .any(|n| name.len() == n.len() && name.eq_ignore_ascii_case(n.as_bytes()))
        && !test_control(shared)
}

/// True if COMMAND and friends must leave `spec` out on this server.
pub fn hidden_spec(shared: &Shared, spec: &CommandSpec) -> bool {
    use lockcore::commands::cluster_cmds::{CLUSTER, NODE, REPL};
    let top = if spec.parent.is_empty() {
        spec.name
    } else {
        spec.parent
    };
    (top == NODE || top == CLUSTER || top == REPL) && !test_control(shared)
}

pub fn test_control(shared: &Shared) -> bool {
    shared
        .config
        .read()
        .get_bool(crate::config::key::ENABLE_TEST_CONTROL)
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
    config.get_i64(crate::config::key::NODES) > 1
        || config.get_bool(crate::config::key::CLUSTER_ENABLED)
        || replication(config)
}

/// Whether `config` asks for a primary with replicas or sentinels (server/src/repl/).
pub fn replication(config: &crate::Config) -> bool {
    !config.get_bool(crate::config::key::CLUSTER_ENABLED)
        && (config.get_i64(crate::config::key::REPLICAS) > 0
            || config.get_i64(crate::config::key::SENTINELS) > 0)
}
