//! Replicas: a primary and its replicas in one process (`--replicas R`), ROLE, INFO
//! replication, REPLICAOF/SLAVEOF, WAIT/WAITAOF and TUMBLER.REPL's faults.
//!
//! The links and how entries move are in state/repl.rs; what an entry holds is in
//! lockcore/src/engine/repl.rs. This module changes who replicates whom (the functions the
//! sentinels call too: [`promote`], [`replicate`]), runs a task per link, and answers the
//! commands.

use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use lockcore::engine::repl::Capture;
use lockcore::num::parse_i64;
use lockcore::storage::clock::Clock;
use lockcore::{error, CommandSpec, Reply};

use crate::conn::{Conn, Flow};
use crate::state::cluster::Topology;
use crate::state::repl::{FullSync, Link};
use crate::state::{CoreGuard, Shared};

crate::server_command!(["role"], |c, _, _, _| role_reply(&c.shared));
crate::server_command!(["replicaof", "slaveof"], |c, g, _, a| replicaof(c, g, a));
crate::server_command!(["wait"], |c, g, _, a| wait(c, g, a, false));
crate::server_command!(["waitaof"], |c, g, _, a| wait(c, g, a, true));
crate::server_command!(["tumbler.repl"], repl_command);

/// A data node's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Master,
    Replica { of: usize },
}

fn shard(topo: &Topology, node: usize) -> Option<Arc<Shared>> {
    topo.node_data(node)
}

/// Whether `topo` is a primary with replicas (`--replicas`/`--sentinels`), not a cluster.
pub fn replication(topo: &Topology) -> bool {
    topo.replication
}

pub fn role(topo: &Topology, node: usize) -> Role {
    match shard(topo, node).and_then(|s| s.repl.upstream.read().as_ref().map(|l| l.primary)) {
        Some(of) => Role::Replica { of },
        None => Role::Master,
    }
}

/// The nodes replicating from `node`.
pub fn replicas_of(topo: &Topology, node: usize) -> Vec<usize> {
    shard(topo, node).map_or(Vec::new(), |s| {
        s.repl
            .downstream
            .links
            .read()
            .iter()
            .map(|l| l.replica)
            .collect()
    })
}

/// A primary's master_repl_offset; a replica's applied offset.
pub fn offset(topo: &Topology, node: usize) -> u64 {
    shard(topo, node).map_or(0, |s| s.repl.offset.load(Ordering::Acquire))
}

/// A replica's master_link_status is up (false for a primary).
pub fn link_up(topo: &Topology, node: usize) -> bool {
    shard(topo, node)
        .and_then(|s| s.repl.upstream.read().clone())
        .is_some_and(|l| link_is_up(topo, &l))
}

fn link_is_up(topo: &Topology, l: &Link) -> bool {
    l.synced.load(Ordering::Acquire)
        && !l.closed.load(Ordering::Acquire)
        && !topo.nodes[l.primary].is_down()
        && !topo.nodes[l.replica].is_down()
}

pub fn run_id(topo: &Topology, node: usize) -> String {
    shard(topo, node).map_or_else(String::new, |s| s.run_id.clone())
}

/// replica-priority (100 unless set; 0: never promoted).
pub fn priority(topo: &Topology, node: usize) -> i64 {
    shard(topo, node).map_or(100, |s| {
        s.config
            .read()
            .get_i64(crate::config::key::REPLICA_PRIORITY)
    })
}

/// Detaches `s` from its primary; what its link had not applied is lost.
fn detach(topo: &Topology, s: &Shared) -> Option<Arc<Link>> {
    let link = s.repl.upstream.write().take()?;
    link.closed.store(true, Ordering::Release);
    let lost = link.discard();
    if lost > 0 {
        tracing::warn!(
            "node {}: {lost} replication entries from node {} were never applied",
            link.replica,
            link.primary
        );
    }
    if let Some(p) = shard(topo, link.primary) {
        p.repl
            .downstream
            .links
            .write()
            .retain(|l| !Arc::ptr_eq(l, &link));
        p.repl.downstream.check_waiters();
    }
    link.wake.notify_one();
    Some(link)
}

/// REPLICAOF NO ONE: `node` becomes a primary with the data it has applied; entries its
/// link had not applied are lost (the writes a failover loses).
pub fn promote(topo: &Topology, node: usize) {
    let Some(s) = shard(topo, node) else { return };
    if detach(topo, &s).is_none() {
        return;
    }
    s.repl.is_replica.store(false, Ordering::SeqCst);
    let offset = s.repl.offset.load(Ordering::Acquire);
    {
        let old = std::mem::replace(&mut *s.repl.replid.lock(), crate::state::random_run_id());
        *s.repl.replid2.lock() = old;
        s.repl
            .second_offset
            .store(offset as i64 + 1, Ordering::Relaxed);
    }
    let mut g = s.lock_core_blocking();
    g.engine.repl = Some(Box::new(Capture::starting_at(offset)));
    drop(g);
    tracing::info!("node {node}: MASTER MODE enabled (user request from 'id=0 addr=tumbler')");
}

/// REPLICAOF: `node` replicates `primary` from now on, starting with a full copy of its
/// data (taken at once if both are up, else when they are).
pub fn replicate(topo: &Arc<Topology>, node: usize, primary: usize) {
    if node == primary {
        return;
    }
    let (Some(s), Some(p)) = (shard(topo, node), shard(topo, primary)) else {
        return;
    };
    detach(topo, &s);
    s.repl.is_replica.store(true, Ordering::SeqCst);
    {
        let mut g = s.lock_core_blocking();
        g.engine.repl = None;
    }
    let link = Arc::new(Link::new(primary, node, &p.repl.downstream));
    p.repl.downstream.links.write().push(link.clone());
    *s.repl.upstream.write() = Some(link.clone());
    if topo.nodes[primary].is_down() || topo.nodes[node].is_down() {
        link.down.store(true, Ordering::Release);
    } else {
        full_sync(&p, &link);
    }
    spawn_link(topo, link);
    tracing::info!(
        "node {node}: REPLICAOF {}:{} enabled",
        topo.announce_ip,
        topo.nodes[primary].port()
    );
}

/// A full copy of `p`'s data into the link, replacing what it had queued.
fn full_sync(p: &Shared, link: &Link) {
    let g = p.lock_core_blocking();
    let dbs = g
        .engine
        .dbs
        .iter()
        .map(lockcore::engine::repl::DbImage::of)
        .collect();
    let offset = p.repl.offset.load(Ordering::Acquire);
    link.restart_with(FullSync { dbs, offset });
    drop(g);
}

/// The link's task: applies entries when no client of the replica takes its lock, and
/// when a lagging entry falls due.
fn spawn_link(topo: &Arc<Topology>, link: Arc<Link>) {
    let topo = Arc::downgrade(topo);
    tokio::spawn(async move {
        loop {
            if link.closed.load(Ordering::Acquire) {
                return;
            }
            let Some(t) = topo.upgrade() else { return };
            let Some(s) = shard(&t, link.replica) else {
                return;
            };
            // Dropped for being too far behind (or never synced): a full copy once both
            // ends are up and the link is not stalled.
            if !link.synced.load(Ordering::Acquire)
                && !link.paused.load(Ordering::Acquire)
                && !t.nodes[link.primary].is_down()
                && !t.nodes[link.replica].is_down()
            {
                if let Some(p) = shard(&t, link.primary) {
                    full_sync(&p, &link);
                }
                link.down.store(false, Ordering::Release);
            }
            drop(t);
            let next = match s.lock_core(true).await {
                Ok(mut g) => s.repl.drain(&mut g),
                Err(_) => Some(0),
            };
            let wait = match next {
                Some(due) => Duration::from_millis((due - s.clock.now_ms()).clamp(1, 10) as u64),
                None => Duration::from_secs(3600),
            };
            drop(s);
            tokio::select! {
                _ = link.wake.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
    });
}

/// Starts replication: with `--replicas`, node 0 is the primary and the others its
/// replicas; in a cluster, each shard's replicas copy its primary.
pub fn setup(topo: &Arc<Topology>) {
    for (i, _) in topo.nodes.iter().enumerate() {
        if let Some(s) = topo.node_data(i) {
            s.repl.index.store(i, Ordering::Relaxed);
        }
    }
    let primaries: Vec<usize> = if topo.enabled {
        (0..topo.shard_count())
            .map(|s| topo.primary_of(s).index)
            .collect()
    } else {
        vec![0]
    };
    for &p in &primaries {
        if let Some(s) = shard(topo, p) {
            s.lock_core_blocking().engine.repl = Some(Box::default());
        }
    }
    for (i, n) in topo.nodes.iter().enumerate() {
        if !primaries.contains(&i) {
            let p = if topo.enabled {
                topo.primary_of(n.shard).index
            } else {
                0
            };
            replicate(topo, i, p);
        }
    }
}

/// A cluster replica becomes its shard's primary (TUMBLER.CLUSTER FAILOVER, CLUSTER
/// FAILOVER): with replicas keeping copies, it takes over with what it has applied and the
/// shard's other nodes, the old primary among them, copy it (what it lacked is lost).
pub fn take_over(topo: &Arc<Topology>, node: usize) {
    let shard = topo.nodes[node].shard;
    topo.set_primary(shard, node);
    if !topo.replication {
        return;
    }
    promote(topo, node);
    for j in topo.shard_nodes(shard).iter().map(|n| n.index) {
        if j != node {
            replicate(topo, j, node);
        }
    }
}

/// A manual failover's first step: the replica applies everything its primary sent,
/// whatever a fault held back.
pub fn catch_up(topo: &Topology, node: usize) {
    let Some(s) = shard(topo, node) else { return };
    let Some(l) = s.repl.upstream.read().clone() else {
        return;
    };
    let saved = (
        l.lag_ms.swap(0, Ordering::AcqRel),
        l.behind.swap(0, Ordering::AcqRel),
        l.paused.swap(false, Ordering::AcqRel),
    );
    {
        let mut g = s.lock_core_blocking();
        s.repl.drain(&mut g);
    }
    l.lag_ms.store(saved.0, Ordering::Release);
    l.behind.store(saved.1, Ordering::Release);
    l.paused.store(saved.2, Ordering::Release);
}

/// TUMBLER.NODE DOWN of `node`: its replicas first get what was already due (a write
/// the primary answered has reached them unless a fault held it back), then its links
/// stall. Call without holding any keyspace lock.
pub fn node_down(topo: &Topology, node: usize) {
    let Some(s) = shard(topo, node) else { return };
    let links: Vec<Arc<Link>> = s.repl.downstream.links.read().clone();
    for l in &links {
        if let Some(r) = shard(topo, l.replica) {
            let mut g = r.lock_core_blocking();
            r.repl.drain(&mut g);
        }
        l.down.store(true, Ordering::Release);
    }
    let up = s.repl.upstream.read().clone();
    if let Some(l) = up {
        l.down.store(true, Ordering::Release);
    }
}

/// TUMBLER.NODE UP of `node` (`flushed`: it came back empty): its links resume, and a
/// link that never had its full copy, or whose replica lost its data, gets one now.
pub fn node_up(topo: &Topology, node: usize, flushed: bool) {
    let Some(s) = shard(topo, node) else { return };
    let mut links: Vec<Arc<Link>> = s.repl.downstream.links.read().clone();
    let up = s.repl.upstream.read().clone();
    if let Some(l) = &up {
        if flushed {
            l.synced.store(false, Ordering::Release);
        }
        links.push(l.clone());
    }
    for l in links {
        if topo.nodes[l.primary].is_down() || topo.nodes[l.replica].is_down() {
            continue;
        }
        if !l.synced.load(Ordering::Acquire) {
            if let Some(p) = shard(topo, l.primary) {
                full_sync(&p, &l);
            }
        }
        l.down.store(false, Ordering::Release);
        l.wake.notify_one();
    }
}

// ---------------------------------------------------------------- commands

fn topo_of(shared: &Shared) -> Option<&Arc<Topology>> {
    shared.cluster.as_ref().filter(|t| t.replication)
}

fn role_reply(shared: &Shared) -> Reply {
    let ip = |t: &Topology| Reply::bulk_str(&t.announce_ip);
    let Some(topo) = topo_of(shared) else {
        let off = shared.repl.offset.load(Ordering::Acquire) as i64;
        return Reply::Array(vec![
            Reply::bulk_str("master"),
            Reply::Int(off),
            Reply::Array(vec![]),
        ]);
    };
    if let Some(l) = shared.repl.upstream.read().clone() {
        let up = link_is_up(topo, &l);
        return Reply::Array(vec![
            Reply::bulk_str("slave"),
            ip(topo),
            Reply::Int(topo.nodes[l.primary].port() as i64),
            Reply::bulk_str(if up { "connected" } else { "connect" }),
            Reply::Int(if up {
                l.applied.load(Ordering::Acquire) as i64
            } else {
                -1
            }),
        ]);
    }
    let links = shared.repl.downstream.links.read().clone();
    Reply::Array(vec![
        Reply::bulk_str("master"),
        Reply::Int(shared.repl.offset.load(Ordering::Acquire) as i64),
        Reply::Array(
            links
                .iter()
                .filter(|l| link_is_up(topo, l))
                .map(|l| {
                    Reply::Array(vec![
                        ip(topo),
                        Reply::bulk_str(&topo.nodes[l.replica].port().to_string()),
                        Reply::bulk_str(&l.applied.load(Ordering::Acquire).to_string()),
                    ])
                })
                .collect(),
        ),
    ])
}

/// INFO's `# Replication` section.
pub fn info_section(shared: &Shared) -> String {
    let mut out = String::from("# Replication\r\n");
    let topo = topo_of(shared);
    let offset = shared.repl.offset.load(Ordering::Acquire);
    let up = shared.repl.upstream.read().clone();
    let mut replid = shared.repl.replid.lock().clone();
    if let (Some(topo), Some(l)) = (topo, &up) {
        let link_up = link_is_up(topo, l);
        if let Some(p) = shard(topo, l.primary) {
            replid = p.repl.replid.lock().clone();
        }
        let idle = (crate::base::mono::Mono::now().ms() - l.last_io.load(Ordering::Relaxed)) / 1000;
        out.push_str(&format!(
            "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\n\
             master_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:0\r\n",
            topo.announce_ip,
            topo.nodes[l.primary].port(),
            if link_up { "up" } else { "down" },
            if link_up { idle } else { -1 },
        ));
        if !link_up {
            out.push_str(&format!("master_link_down_since_seconds:{idle}\r\n"));
        }
        out.push_str(&format!(
            "slave_read_repl_offset:{offset}\r\nslave_repl_offset:{offset}\r\nslave_priority:{}\r\n\
             slave_read_only:{}\r\nreplica_announced:1\r\n",
            shared.config.read().get_i64(crate::config::key::REPLICA_PRIORITY),
            if shared.config.read().get_bool(crate::config::key::REPLICA_READ_ONLY) { 1 } else { 0 },
        ));
    } else {
        out.push_str("role:master\r\n");
    }
    let links = shared.repl.downstream.links.read().clone();
    let live: Vec<&Arc<Link>> = match topo {
        Some(t) => links.iter().filter(|l| link_is_up(t, l)).collect(),
        None => Vec::new(),
    };
    out.push_str(&format!("connected_slaves:{}\r\n", live.len()));
    if let Some(t) = topo {
        let now = crate::base::mono::Mono::now().ms();
        for (i, l) in live.iter().enumerate() {
            out.push_str(&format!(
                "slave{i}:ip={},port={},state=online,offset={},lag={}\r\n",
                t.announce_ip,
                t.nodes[l.replica].port(),
                l.applied.load(Ordering::Acquire),
                (now - l.last_io.load(Ordering::Relaxed)).max(0) / 1000
            ));
        }
    }
    let active = topo.is_some() as u8;
    out.push_str(&format!(
        "master_failover_state:no-failover\r\nmaster_replid:{replid}\r\nmaster_replid2:{}\r\n\
         master_repl_offset:{offset}\r\nsecond_repl_offset:{}\r\nrepl_backlog_active:{active}\r\n\
         repl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:{}\r\nrepl_backlog_histlen:{}\r\n",
        shared.repl.replid2.lock(),
        shared.repl.second_offset.load(Ordering::Relaxed),
        if active == 1 { 1 } else { 0 },
        if active == 1 { offset } else { 0 },
    ));
    out
}

fn replicaof(c: &mut Conn, g: &mut Option<CoreGuard<'_>>, a: &[Bytes]) -> Reply {
    if c.shared.cluster.as_ref().is_some_and(|t| t.enabled) {
        return Reply::err("ERR REPLICAOF not allowed in cluster mode.");
    }
    let no_one = a[1].eq_ignore_ascii_case(b"no") && a[2].eq_ignore_ascii_case(b"one");
    let Some(topo) = topo_of(&c.shared).cloned() else {
        if no_one {
            return Reply::Simple("OK".into());
        }
        return Reply::err(
            "ERR Tumbler replicates only between the nodes of one process (start it with --replicas N)",
        );
    };
    let me = c.shared.repl.index.load(Ordering::Relaxed);
    // Never hold two keyspace locks.
    *g = None;
    if no_one {
        if c.shared.repl.upstream.read().is_some() {
            promote(&topo, me);
        }
        return Reply::Simple("OK".into());
    }
    let Some(port) = parse_i64(&a[2]).filter(|p| (0..=65535).contains(p)) else {
        return Reply::err("ERR Invalid master port");
    };
    let host = String::from_utf8_lossy(&a[1]).to_ascii_lowercase();
    let local =
        matches!(host.as_str(), "127.0.0.1" | "localhost" | "::1") || host == topo.announce_ip;
    let target = topo
        .nodes
        .iter()
        .position(|n| local && n.port() as i64 == port);
    let Some(target) = target.filter(|&t| t != me) else {
        return Reply::err(format!(
            "ERR Tumbler replicates only between the nodes of one process: {host}:{port} is not another node of it"
        ));
    };
    if role(&topo, me) == (Role::Replica { of: target }) {
        return Reply::Simple("OK Already connected to specified master".into());
    }
    replicate(&topo, me, target);
    Reply::Simple("OK".into())
}

/// WAIT numreplicas timeout, and WAITAOF numlocal numreplicas timeout (no AOF anywhere:
/// numlocal must be 0 and no replica acknowledges an fsync, as in Redis with appendonly no).
fn wait(c: &mut Conn, g: &mut Option<CoreGuard<'_>>, a: &[Bytes], aof: bool) -> Reply {
    let checked = if aof {
        lockcore::commands::server_cmds::waitaof(a)
    } else {
        lockcore::commands::server_cmds::wait(a)
    };
    if matches!(checked, Reply::Error(_)) {
        return checked;
    }
    let (need, timeout) = if aof {
        (parse_i64(&a[2]).unwrap_or(0), parse_i64(&a[3]).unwrap_or(0))
    } else {
        (parse_i64(&a[1]).unwrap_or(0), parse_i64(&a[2]).unwrap_or(0))
    };
    let answer = move |n: i64| {
        if aof {
            Reply::Array(vec![Reply::Int(0), Reply::Int(n)])
        } else {
            Reply::Int(n)
        }
    };
    if c.shared.repl.is_replica.load(Ordering::Relaxed) {
        return Reply::err(if aof {
            "ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated."
        } else {
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."
        });
    }
    // Release the keyspace lock: that ships this client's last write to the links.
    *g = None;
    let target = if aof {
        // Replicas without AOF never acknowledge an fsync: redis-server 8.0 answers
        // `[0, 0]` after the timeout even with replicas in sync.
        u64::MAX
    } else if c.cl.wrote {
        c.shared.repl.offset.load(Ordering::Acquire)
    } else {
        0
    };
    let down = c.shared.repl.downstream.clone();
    for l in down.links.read().iter() {
        l.wake.notify_one();
    }
    let acked = down.acked(target) as i64;
    if acked >= need || c.cl.deny_blocking || need <= 0 {
        return answer(acked);
    }
    c.flow = Flow::Blocked;
    let id = down.add_waiter(c.handle.clone(), target, need as usize, aof);
    if timeout > 0 {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(timeout as u64)).await;
            down.expire_waiter(id);
        });
    }
    Reply::NoReply
}

const HELP_REPL: &[&str] = &[
    "TUMBLER.REPL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LAG <replica> <ms>",
    "    The replica applies each write <ms> of Tumbler's clock after its primary (0: off).",
    "BEHIND <replica> <count>",
    "    The replica keeps its last <count> writes unapplied (0: off).",
    "PAUSE <replica>",
    "    The replica's link stalls: it applies nothing until RESUME.",
    "RESUME <replica>",
    "    Ends LAG, BEHIND and PAUSE: the replica catches up.",
    "LIST",
    "    One line per node: role, offsets, what is pending and the faults.",
    "HELP",
    "    Prints this help.",
];

fn repl_command(
    c: &mut Conn,
    _g: &mut Option<CoreGuard<'_>>,
    spec: &CommandSpec,
    a: &[Bytes],
) -> Reply {
    if !crate::state::cluster::test_control(&c.shared) {
        return error::unknown_command(a);
    }
    if spec.name == "help" {
        return Reply::Array(
            HELP_REPL
                .iter()
                .map(|l| Reply::Simple((*l).into()))
                .collect(),
        );
    }
    let Some(topo) = topo_of(&c.shared).cloned() else {
        return Reply::err("ERR this server has no replicas (start it with --replicas N)");
    };
    if spec.name == "list" {
        return Reply::Array(
            (0..topo.nodes.len())
                .map(|i| Reply::bulk_str(&list_line(&topo, i)))
                .collect(),
        );
    }
    let link = match parse_i64(&a[2])
        .filter(|&i| i >= 0 && (i as usize) < topo.nodes.len())
        .and_then(|i| shard(&topo, i as usize))
    {
        Some(s) => match s.repl.upstream.read().clone() {
            Some(l) => l,
            None => {
                return Reply::err(format!(
                    "ERR node {} is not a replica",
                    String::from_utf8_lossy(&a[2])
                ))
            }
        },
        None => {
            return Reply::err(format!(
                "ERR no such node '{}' (nodes are 0..{})",
                String::from_utf8_lossy(&a[2]),
                topo.nodes.len() - 1
            ))
        }
    };
    match spec.name {
        "lag" => match parse_i64(&a[3]) {
            Some(ms) if (0..=86_400_000).contains(&ms) => link.lag_ms.store(ms, Ordering::Relaxed),
            _ => return Reply::err("ERR lag must be between 0 and 86400000 milliseconds"),
        },
        "behind" => match parse_i64(&a[3]) {
            Some(n) if (0..=1_000_000).contains(&n) => {
                link.behind.store(n as usize, Ordering::Relaxed)
            }
            _ => return Reply::err("ERR count must be between 0 and 1000000"),
        },
        "pause" => link.paused.store(true, Ordering::Release),
        _ => {
            link.paused.store(false, Ordering::Release);
            link.lag_ms.store(0, Ordering::Relaxed);
            link.behind.store(0, Ordering::Relaxed);
        }
    }
    link.wake.notify_one();
    Reply::ok()
}

fn list_line(topo: &Topology, i: usize) -> String {
    let Some(s) = shard(topo, i) else {
        return format!("node={i}");
    };
    let down = topo.nodes[i].is_down() as u8;
    let up = s.repl.upstream.read().clone();
    match up {
        Some(l) => format!(
            "node={i} port={} role=replica primary={} offset={} pending={} link={} lag={} behind={} paused={} down={down}",
            topo.nodes[i].port(),
            l.primary,
            l.applied.load(Ordering::Acquire),
            l.pending(),
            if link_is_up(topo, &l) { "up" } else { "down" },
            l.lag_ms.load(Ordering::Relaxed),
            l.behind.load(Ordering::Relaxed),
            l.paused.load(Ordering::Relaxed) as u8,
        ),
        None => format!(
            "node={i} port={} role=master offset={} replicas={} down={down}",
            topo.nodes[i].port(),
            s.repl.offset.load(Ordering::Acquire),
            s.repl.downstream.links.read().len(),
        ),
    }
}
