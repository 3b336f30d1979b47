//! TUMBLER.NODE and TUMBLER.CLUSTER: faults and topology changes on command, for tests.
//!
//! They exist only with `--enable-test-control yes` (immutable at runtime); otherwise the
//! server answers as for an unknown command and COMMAND hides them, as for TUMBLER.TIME.
//! Any node can be told about any other node, so a test can take a node down through
//! another one and bring it back the same way.
//!
//! ```text
//! TUMBLER.NODE DOWN <node>            refuse connections, drop the node's clients
//! TUMBLER.NODE UP <node> [FLUSH]      listen again; FLUSH empties its dataset first
//! TUMBLER.NODE DELAY <node> <ms>      every reply batch of the node waits <ms>
//! TUMBLER.NODE DROP <node> <0..1>     that fraction of reply batches is never sent
//! TUMBLER.NODE LIST                   index, port, id, role, down, delay, drop per node
//! TUMBLER.CLUSTER FAILOVER <replica>  the replica becomes its shard's primary
//! TUMBLER.CLUSTER MOVESLOT <slot> <node> [ASK]
//!     without ASK: the slot and its keys move to <node>'s shard at once (-MOVED after);
//!     with ASK: the slot starts migrating to <node> and its keys stay until moved by
//!     MIGRATEKEYS or a final MOVESLOT without ASK (-ASK / -TRYAGAIN meanwhile)
//! TUMBLER.CLUSTER MIGRATEKEYS <slot> <count>   move up to <count> keys of a migrating slot
//! ```

use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use lockcore::num::parse_i64;
use lockcore::slots::{key_hash_slot, SLOTS};
use lockcore::CommandSpec;
use lockcore::{error, Reply};

use super::{Migration, Topology};
use crate::conn::Conn;
use crate::state::{CoreGuard, Shared};

fn node_arg(topo: &Topology, a: &[u8]) -> Result<usize, Reply> {
    match parse_i64(a) {
        Some(i) if i >= 0 && (i as usize) < topo.nodes.len() => Ok(i as usize),
        _ => Err(Reply::err(format!(
            "ERR no such node '{}' (nodes are 0..{})",
            String::from_utf8_lossy(a),
            topo.nodes.len() - 1
        ))),
    }
}

fn topo_of(c: &Conn, a: &[Bytes]) -> Result<Arc<Topology>, Reply> {
    if !super::test_control(&c.shared) {
        return Err(error::unknown_command(a));
    }
    c.shared
        .cluster
        .clone()
        .ok_or_else(|| Reply::err("ERR this server runs a single node (start it with --nodes N)"))
}

/// TUMBLER.NODE subcommands.
pub fn node_command(
    c: &mut Conn,
    guard: &mut Option<CoreGuard<'_>>,
    spec: &CommandSpec,
    a: &[Bytes],
) -> Reply {
    if spec.name == "help" {
        return help(HELP_NODE);
    }
    let topo = match topo_of(c, a) {
        Ok(t) => t,
        Err(e) => return e,
    };
    if spec.name == "list" {
        return Reply::Array(
            topo.nodes
                .iter()
                .map(|n| {
                    Reply::bulk_str(&format!(
                        "node={} port={} id={} shard={} role={} down={} delay={} drop={}",
                        n.index,
                        n.port(),
                        n.id,
                        n.shard,
                        if topo.is_primary(n) {
                            "primary"
                        } else {
                            "replica"
                        },
                        if n.is_down() { 1 } else { 0 },
                        n.delay_ms.load(Ordering::Relaxed),
                        n.drop_ppm.load(Ordering::Relaxed) as f64 / 1e6
                    ))
                })
                .collect(),
        );
    }
    let i = match node_arg(&topo, &a[2]) {
        Ok(i) => i,
        Err(e) => return e,
    };
    let node = topo.nodes[i].clone();
    match spec.name {
        "down" => {
            if topo.replication {
                // Never hold two keyspace locks: its replicas are drained first.
                *guard = None;
                crate::repl::node_down(&topo, i);
            }
            node.down.send_replace(true);
            super::nodes::stop_listening(&node);
            if let Some(s) = topo.node_data(i) {
                super::nodes::kill_clients(&s, &node);
            }
            Reply::ok()
        }
        "up" => {
            let flush = match a.get(3) {
                None => false,
                Some(f) if a.len() == 4 && f.eq_ignore_ascii_case(b"flush") => true,
                Some(_) => return error::syntax(),
            };
            if flush {
                // Never hold two keyspace locks: release ours before taking the node's.
                *guard = None;
                if let Some(s) = topo.node_data(i) {
                    flush_shard(&s);
                }
            }
            if let Err(e) = super::nodes::listen_again(&node, &topo.bind) {
                return Reply::err(format!("ERR node {i} cannot listen again: {e}"));
            }
            node.down.send_replace(false);
            if topo.replication {
                *guard = None;
                crate::repl::node_up(&topo, i, flush);
            }
            Reply::ok()
        }
        "delay" => match parse_i64(&a[3]) {
            Some(ms) if (0..=3_600_000).contains(&ms) => {
                node.delay_ms.store(ms as u64, Ordering::Relaxed);
                Reply::ok()
            }
            _ => Reply::err("ERR delay must be between 0 and 3600000 milliseconds"),
        },
        "drop" => match std::str::from_utf8(&a[3])
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
        {
            Some(p) if (0.0..=1.0).contains(&p) => {
                node.drop_ppm
                    .store((p * 1e6).round() as u32, Ordering::Relaxed);
                Reply::ok()
            }
            _ => Reply::err("ERR fraction must be a number between 0 and 1"),
        },
        _ => {
            error::unknown_subcommand(lockcore::commands::cluster_cmds::NODE, spec.name.as_bytes())
        }
    }
}

/// Empties every database of a shard, its scripts and its native locks (as after a
/// restart without persistence).
fn flush_shard(s: &Shared) {
    let mut core = s.lock_core_blocking();
    for db in 0..core.engine.dbs.len() {
        lockcore::commands::server_cmds::flush_db(&mut core.engine, db);
    }
    core.scripts = crate::state::new_scripts();
    drop(core);
    // The new script state takes the configuration (plans, profiler, version) again.
    s.apply_config();
}

/// TUMBLER.CLUSTER subcommands.
pub fn cluster_command(
    c: &mut Conn,
    guard: &mut Option<CoreGuard<'_>>,
    spec: &CommandSpec,
    a: &[Bytes],
) -> Reply {
    if spec.name == "help" {
        return help(HELP_CLUSTER);
    }
    let topo = match topo_of(c, a) {
        Ok(t) if t.enabled => t,
        Ok(_) => return Reply::err(super::DISABLED),
        Err(e) => return e,
    };
    match spec.name {
        "failover" => {
            let i = match node_arg(&topo, &a[2]) {
                Ok(i) => i,
                Err(e) => return e,
            };
            let node = &topo.nodes[i];
            if topo.is_primary(node) {
                return Reply::err("ERR You should send CLUSTER FAILOVER to a replica");
            }
            // Never hold two keyspace locks: the takeover locks the shard's datasets.
            *guard = None;
            crate::repl::take_over(&topo, i);
            Reply::ok()
        }
        "moveslot" => {
            let slot = match parse_i64(&a[2]) {
                Some(s) if (0..SLOTS as i64).contains(&s) => s as u16,
                _ => return Reply::err("ERR Invalid or out of range slot"),
            };
            let i = match node_arg(&topo, &a[3]) {
                Ok(i) => i,
                Err(e) => return e,
            };
            let ask = match a.get(4) {
                None => false,
                Some(f) if a.len() == 5 && f.eq_ignore_ascii_case(b"ask") => true,
                Some(_) => return error::syntax(),
            };
            let to = topo.nodes[i].shard;
            let (owner, _) = topo.slot(slot);
            if ask {
                if owner == to {
                    return Reply::err("ERR I'm already the owner of hash slot");
                }
                topo.set_slot(slot, owner, Some(Migration { from: owner, to }));
                return Reply::ok();
            }
            *guard = None;
            let moved = move_keys(&topo, slot, owner, to, usize::MAX);
            topo.set_slot(slot, to, None);
            Reply::Int(moved as i64)
        }
        "migratekeys" => {
            let slot = match parse_i64(&a[2]) {
                Some(s) if (0..SLOTS as i64).contains(&s) => s as u16,
                _ => return Reply::err("ERR Invalid or out of range slot"),
            };
            let Some(count) = parse_i64(&a[3]).filter(|n| *n >= 0) else {
                return error::not_integer();
            };
            let Some(mg) = topo.migration(slot) else {
                return Reply::err(
                    "ERR slot is not migrating (TUMBLER.CLUSTER MOVESLOT slot node ASK)",
                );
            };
            *guard = None;
            Reply::Int(move_keys(&topo, slot, mg.from, mg.to, count as usize) as i64)
        }
        _ => error::unknown_subcommand(
            lockcore::commands::cluster_cmds::CLUSTER,
            spec.name.as_bytes(),
        ),
    }
}

/// Moves up to `max` keys of `slot` (database 0, where cluster keys live) from shard
/// `from` to shard `to`, with their TTLs, as MIGRATE does: deleted at the source (WATCH
/// sees it), present at the target. Takes the two keyspace locks in shard order.
fn move_keys(topo: &Topology, slot: u16, from: usize, to: usize, max: usize) -> usize {
    if from == to {
        return 0;
    }
    let (Some(src), Some(dst)) = (topo.shard(from), topo.shard(to)) else {
        return 0;
    };
    let mut a;
    let mut b;
    if from < to {
        a = src.lock_core_blocking();
        b = dst.lock_core_blocking();
    } else {
        b = dst.lock_core_blocking();
        a = src.lock_core_blocking();
    }
    let keys: Vec<Bytes> = a.engine.dbs[0]
        .keys()
        .filter(|k| key_hash_slot(k) == slot)
        .take(max)
        .map(Bytes::copy_from_slice)
        .collect();
    for k in &keys {
        if let Some(e) = a.engine.dbs[0].remove(k) {
            a.engine
                .modified(0, k, lockcore::storage::notify::GENERIC, "del");
            b.engine.dbs[0].insert_entry(k.clone(), e);
            b.engine
                .modified(0, k, lockcore::storage::notify::GENERIC, "restore");
        }
    }
    b.engine.deadline_changed = true;
    keys.len()
}

const HELP_NODE: &[&str] = &[
    "TUMBLER.NODE <subcommand> [<arg> ...]. Subcommands are:",
    "DOWN <node>",
    "    Close the node's port and drop its connections.",
    "UP <node> [FLUSH]",
    "    Listen again on the same port; FLUSH empties the node's data first.",
    "DELAY <node> <milliseconds>",
    "    Delay every reply of the node (0 turns it off).",
    "DROP <node> <fraction>",
    "    Never send that fraction (0..1) of the node's replies.",
    "LIST",
    "    Show every node: index, port, id, shard, role, faults.",
    "HELP",
    "    Print this help.",
];

const HELP_CLUSTER: &[&str] = &[
    "TUMBLER.CLUSTER <subcommand> [<arg> ...]. Subcommands are:",
    "FAILOVER <replica-node>",
    "    Make the replica the primary of its shard.",
    "MOVESLOT <slot> <node> [ASK]",
    "    Move the slot and its keys to the node's shard; with ASK, start migrating it.",
    "MIGRATEKEYS <slot> <count>",
    "    Move up to count keys of a migrating slot to its target.",
    "HELP",
    "    Print this help.",
];

fn help(lines: &[&'static str]) -> Reply {
    Reply::Array(lines.iter().map(|s| Reply::simple(s)).collect())
}

crate::server_command!(["tumbler.node"], |c, g, spec, a| node_command(
    c, g, spec, a
));
crate::server_command!(["tumbler.cluster"], |c, g, spec, a| {
    cluster_command(c, g, spec, a)
});
