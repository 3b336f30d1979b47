//! One process, many nodes: the commands that drive them (CLUSTER, ASKING, READONLY,
//! TUMBLER.NODE, TUMBLER.CLUSTER), the nodes' listeners and pub/sub across nodes. The
//! topology is in state/cluster.rs, the per-command slot check in conn/route.rs.

pub mod control;
pub mod nodes;

use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use lockcore::engine::spec::CommandSpec;
use lockcore::slots::{self, SLOTS};
use lockcore::{error, Reply};

use crate::conn::Conn;
use crate::state::CoreGuard;

use crate::state::cluster::*;

// ---------------------------------------------------------------- pub/sub across nodes

/// In cluster mode classic PUBLISH reaches subscribers on every node (Redis sends it over
/// the cluster bus); the count it returns is this node's, as in Redis. Sharded messages
/// and keyspace notifications stay on the node.
pub struct ClusterBroker {
    pub local: Arc<crate::state::fanout::PubSub>,
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
                // Every other dataset: other shards, and replicas with copies of their own.
                let mut done: Vec<*const crate::state::fanout::PubSub> =
                    vec![Arc::as_ptr(&self.local)];
                for i in 0..topo.nodes.len() {
                    if let Some(s) = topo.node_data(i) {
                        let p = Arc::as_ptr(&s.pubsub);
                        if !done.contains(&p) {
                            done.push(p);
                            // Only the subscriber tables: never another shard's keyspace lock.
                            s.pubsub.publish_to(channel, message, false);
                        }
                    }
                }
            }
        }
        n
    }
}

// ---------------------------------------------------------------- commands

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

/// CLUSTER FAILOVER [FORCE|TAKEOVER] sent to a replica: it becomes its shard's primary. As
/// in Redis, the default one first lets the replica catch up with its primary (no write is
/// lost) and needs the primary up; FORCE and TAKEOVER promote it with what it has applied,
/// so writes a lagging replica had not received are lost.
fn failover(topo: &Arc<Topology>, me: &Arc<Node>, a: &[Bytes]) -> Reply {
    let mode = match a.get(2) {
        None => "",
        Some(m) if a.len() == 3 && m.eq_ignore_ascii_case(b"force") => "force",
        Some(m) if a.len() == 3 && m.eq_ignore_ascii_case(b"takeover") => "takeover",
        Some(_) => return lockcore::error::syntax(),
    };
    if topo.is_primary(me) {
        return Reply::err("ERR You should send CLUSTER FAILOVER to a replica");
    }
    let primary = topo.primary_of(me.shard).index;
    if mode.is_empty() {
        if topo.nodes[primary].is_down() {
            return Reply::err("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE");
        }
        crate::repl::catch_up(topo, me.index);
    }
    crate::repl::take_over(topo, me.index);
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
        "failover" => {
            // Taken from the guard's holder: the promotion locks other datasets.
            *guard = None;
            failover(&topo, &me, a)
        }
        "myid" => Reply::bulk_str(&me.id),
        // A shard's ID is its first node's: it stays when a replica takes over.
        "myshardid" => topo
            .nodes
            .iter()
            .filter(|n| n.shard == me.shard)
            .min_by_key(|n| n.index)
            .map_or_else(|| Reply::bulk_str(&me.id), |n| Reply::bulk_str(&n.id)),
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
            // The selected database: 0 but with Valkey 9's numbered databases.
            let db = c.cl.db;
            let core = crate::state::core(guard);
            let now = core.engine.now_ms();
            let keys = core.engine.dbs[db]
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

crate::server_command!(["cluster"], |c, g, spec, a| cluster_command(c, g, spec, a));
crate::server_command!(["asking", "readonly", "readwrite"], |c, _, spec, _| {
    conn_command(c, spec.name)
});
