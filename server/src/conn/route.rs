//! The cluster checks every command passes: MOVED, ASK, CROSSSLOT, TRYAGAIN; the
//! topology they read is in state/cluster.rs.
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

use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use lockcore::engine::spec::{flag, CommandSpec, Keys};
use lockcore::slots::{self, CommandSlot};
use lockcore::Reply;

use crate::conn::Conn;
use crate::state::{CoreGuard, Shared};

use crate::state::cluster::*;

const NON_LOCAL: &str = "ERR Script attempted to access a non local key in a cluster node";

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
            "select" if c.multi.is_none() => return select_check(c, argv),
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

/// SELECT in cluster mode: Redis allows only database 0; Valkey 9.0 the first
/// `cluster-databases`.
fn select_check(c: &Conn, argv: &[Bytes]) -> Route {
    let Some(n) = argv.get(1).and_then(|a| lockcore::num::parse_i64(a)) else {
        return Route::Serve;
    };
    if c.shared
        .personality
        .has(lockcore::personality::Since::valkey(900))
    {
        let max = c
            .shared
            .config
            .read()
            .get_i64(crate::config::key::CLUSTER_DATABASES);
        return if n >= 0 && n < max {
            Route::Serve
        } else {
            Route::Refuse(Reply::err(lockcore::error::DB_INDEX_OUT_OF_RANGE))
        };
    }
    match n {
        0 => Route::Serve,
        _ => Route::Refuse(Reply::err("ERR SELECT is not allowed in cluster mode")),
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
