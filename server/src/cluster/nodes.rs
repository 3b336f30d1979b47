//! Starting N nodes in one process, and their listeners, which can go down and come back.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use super::{ClusterBroker, Node, Topology};
use crate::config::Config;
use crate::state::{Msg, Shared};

/// Binds every node's listener, creates one dataset per shard and starts serving.
/// Returns the topology, each shard's state and each node's address; the accept loops
/// run until the returned handles are aborted.
pub async fn start(
    config: Config,
) -> std::io::Result<(
    Arc<Topology>,
    Vec<Arc<Shared>>,
    Vec<SocketAddr>,
    Vec<tokio::task::JoinHandle<()>>,
)> {
    let replication = crate::state::cluster::replication(&config);
    let mut n = config.get_i64(crate::config::key::NODES).max(1) as usize;
    let cluster = config.get_bool(crate::config::key::CLUSTER_ENABLED);
    if replication {
        if n > 1 {
            return Err(std::io::Error::other(
                "replicas and sentinels watch one primary: leave nodes at 1 (in cluster mode use cluster-replicas)",
            ));
        }
        n = 1 + config.get_i64(crate::config::key::REPLICAS) as usize;
    }
    let replicas = config.get_i64(crate::config::key::CLUSTER_REPLICAS) as usize;
    let test_control = config.get_bool(crate::config::key::ENABLE_TEST_CONTROL);
    let bind = config.get(crate::config::key::BIND).to_string();
    // With TLS, every node's one port speaks TLS, as a Redis Cluster started with `port 0
    // tls-port P tls-cluster yes` does: `tls-port` is then the base port (0: free ports), and
    // the ports CLUSTER SLOTS and -MOVED name are the TLS ones.
    let (tls, warnings) = crate::io::net::tls_config(&config)?;
    for w in warnings {
        tracing::warn!("{w}");
    }
    let base = if tls.is_some() {
        config.get_i64(crate::config::key::TLS_PORT)
    } else {
        config.get_i64(crate::config::key::PORT)
    };
    if base != 0 && base + n as i64 - 1 > 65535 {
        return Err(std::io::Error::other(format!(
            "ports {base}..{} do not fit",
            base + n as i64 - 1
        )));
    }
    let mut topo = Topology::new(n, cluster, replicas, test_control, &bind);
    // Replicas keep their own copies: a primary with replicas, or a cluster's replicas.
    topo.replication = replication || (cluster && replicas > 0 && n > topo.shard_count());
    let topo = Arc::new(topo);
    // One host: the nodes of a replication topology (and its sentinels) share one clock.
    let clock = lockcore::storage::clock::ControlledClock::new();
    // Bind everything first: a port conflict fails the start before anything serves.
    let mut listeners = Vec::with_capacity(n);
    let mut addrs = Vec::with_capacity(n);
    for i in 0..n {
        let port = if base == 0 { 0 } else { base as u16 + i as u16 };
        let l = crate::io::net::bind_one(&bind, port)?;
        let addr = l.local_addr()?;
        topo.nodes[i].port.store(addr.port(), Ordering::Relaxed);
        addrs.push(addr);
        listeners.push(TcpListener::from_std(l.try_clone()?)?);
        *topo.nodes[i].listener.lock() = Some(l);
    }
    // One dataset per shard, or per node when replicas keep their own copies.
    let per_node = topo.replication;
    let count = if per_node { n } else { topo.shard_count() };
    let shards: Vec<Arc<Shared>> = (0..count)
        .map(|d| {
            let (s, port) = if per_node {
                (topo.nodes[d].shard, topo.nodes[d].port())
            } else {
                (d, topo.primary_of(d).port())
            };
            let shared = if replication {
                Shared::new_node_clocked(config.clone(), Some((topo.clone(), s)), clock.clone())
            } else {
                Shared::new_node(config.clone(), Some((topo.clone(), s)))
            };
            *shared.tls.write() = tls.clone();
            shared.port.store(port as u64, Ordering::Relaxed);
            if cluster {
                let broker: Arc<dyn lockcore::storage::notify::Broker> = Arc::new(ClusterBroker {
                    local: shared.pubsub.clone(),
                    topo: Arc::downgrade(&topo),
                    shard: s,
                });
                shared.lock_core_blocking().engine.broker = broker;
            }
            shared
        })
        .collect();
    let datasets: Vec<Arc<Shared>> = (0..n)
        .map(|i| shards[if per_node { i } else { topo.nodes[i].shard }].clone())
        .collect();
    topo.set_datasets(&datasets);
    if per_node {
        crate::repl::setup(&topo);
    }
    let mut tasks = Vec::new();
    for s in &shards {
        tasks.push(tokio::spawn(crate::state::cron::run(s.clone())));
    }
    for (i, l) in listeners.into_iter().enumerate() {
        let node = topo.nodes[i].clone();
        let shared = datasets[i].clone();
        tasks.push(tokio::spawn(node_loop(shared, node, l, bind.clone())));
    }
    Ok((topo, shards, addrs, tasks))
}

/// Accepts for one node; while the node is down its listener is closed (connections are
/// refused) and it re-binds the same port when the node comes back up.
async fn node_loop(shared: Arc<Shared>, node: Arc<Node>, listener: TcpListener, bind: String) {
    let mut down = node.down.subscribe();
    let mut listener = Some(listener);
    loop {
        if shared.shutting_down.load(Ordering::SeqCst) {
            return;
        }
        if listener.is_none() && !*down.borrow_and_update() {
            // Up, and not serving yet (after UP, or a DOWN and UP that came together): serve
            // a duplicate of the socket UP bound before it replied.
            let again = {
                let mut slot = node.listener.lock();
                if slot.is_none() {
                    *slot = crate::io::net::bind_one(&bind, node.port()).ok();
                }
                slot.as_ref()
                    .map(|l| l.try_clone().and_then(TcpListener::from_std))
            };
            match again {
                Some(Ok(l)) => listener = Some(l),
                Some(Err(e)) => {
                    tracing::warn!("node {} cannot listen again: {e}", node.index);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                None => {
                    tracing::warn!(
                        "node {} cannot listen again on port {}",
                        node.index,
                        node.port()
                    );
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            }
        }
        let Some(l) = listener.as_ref() else {
            // Down: wait for UP.
            if down.changed().await.is_err() {
                return;
            }
            continue;
        };
        let mut close = false;
        tokio::select! {
            r = l.accept() => match r {
                Ok((stream, addr)) => {
                    if !node.is_down() {
                        let _ = stream.set_nodelay(true);
                        let laddr = stream.local_addr().unwrap_or(addr);
                        let tls = shared.tls.read().clone();
                        match tls {
                            Some(config) => {
                                let (shared, node) = (shared.clone(), node.clone());
                                tokio::spawn(async move {
                                    match tokio_rustls::TlsAcceptor::from(config).accept(stream).await {
                                        Ok(s) => {
                                            crate::conn::serve_node(
                                                shared,
                                                s,
                                                addr,
                                                laddr,
                                                crate::io::stream::Transport::Tls,
                                                Some(node),
                                            )
                                            .await
                                        }
                                        Err(e) => tracing::debug!(
                                            "Error accepting a client connection: {e} (addr={addr})"
                                        ),
                                    }
                                });
                            }
                            None => {
                                tokio::spawn(crate::conn::serve_node(
                                    shared.clone(),
                                    stream,
                                    addr,
                                    laddr,
                                    crate::io::stream::Transport::Tcp,
                                    Some(node.clone()),
                                ));
                            }
                        }
                    }
                }
                Err(e) => {
                    // TUMBLER.NODE DOWN shuts the socket down under the accept.
                    if !node.is_down() {
                        tracing::warn!("accept failed: {e}");
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            r = down.changed() => {
                if r.is_err() {
                    return;
                }
                // Down, or down and up again: either way this socket was shut down; the top
                // of the loop takes the new one if the node is up.
                close = true;
            }
        }
        if close {
            listener = None;
        }
    }
}

/// TUMBLER.NODE DOWN's listener half: stops the node's socket listening now (a listening
/// socket shut down refuses new connections at once; the accept loop then drops its
/// duplicate), before the command replies.
pub fn stop_listening(node: &Node) {
    if let Some(l) = node.listener.lock().take() {
        use std::os::fd::AsRawFd;
        // SAFETY: `l` is open until it drops at the end of this block.
        unsafe { libc::shutdown(l.as_raw_fd(), libc::SHUT_RDWR) };
    }
}

/// TUMBLER.NODE UP's listener half: binds the node's port again before the command replies,
/// so connections queue from then on; the accept loop serves them once it wakes.
pub fn listen_again(node: &Node, bind: &str) -> std::io::Result<()> {
    let mut slot = node.listener.lock();
    if slot.is_none() {
        *slot = Some(crate::io::net::bind_one(bind, node.port())?);
    }
    Ok(())
}

/// Drops every connection of `node` (TUMBLER.NODE DOWN).
pub fn kill_clients(shared: &Shared, node: &Node) {
    let port = node.port();
    for h in shared.clients.iter() {
        if h.laddr.port() == port {
            h.killed.store(true, Ordering::Relaxed);
            h.send(Msg::Kill);
        }
    }
}
