//! The `tumbler` server: networking, connections, dispatch, Lua, pub/sub fan-out, config.
//!
//! Start it from the command line (`tumbler --port 6379`) or inside a Rust process with
//! [`Server::start`], which binds (port 0 for a free port), serves on the current tokio
//! runtime and returns a handle with the address and a shutdown.

// Layers, lowest first; a module imports only from its own layer and those below
// (scripts/ci/layers.py checks it in CI): base <- resp <- config <- stats <- state <- io <-
// conn <- acl, cluster <- scripting <- observe <- commands <- tools <- embed, lib, main.
// Feature state (ACL users, cluster topology, MIGRATE's sockets) sits in state, feature
// code above conn. What would point up registers itself at link time instead: server
// commands' handlers with conn (conn::SERVER_COMMANDS), the Lua engine's state with state
// (state::SCRIPT_STATE).
pub mod base;
pub mod resp;

pub mod config;
pub mod stats;

pub mod state;

pub mod io;

pub mod conn;

pub mod acl;
pub mod cluster;
pub mod commands;
pub mod observe;
pub mod repl;
pub mod scripting;
pub mod sentinel;

pub mod tools;

pub mod embed;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub use config::Config;
pub use state::Shared;

/// The runtime's worker threads for the `worker-threads` setting; anything but 0 is taken
/// as is. 0, the default, is one worker on a machine of up to two cores and one per core
/// beyond: on two cores one worker costs less CPU per request at -P 1 (half the context
/// switches, no lock hand-offs between workers) and the same at -P 16, and a long script
/// still leaves the server answering because it moves off the worker
/// (docs/architecture.md, "One worker or two"). Larger machines were not measured, so they
/// keep a worker per core.
pub fn worker_threads(setting: i64) -> usize {
    match setting {
        0 => match std::thread::available_parallelism().map_or(1, |n| n.get()) {
            n if n <= 2 => 1,
            n => n,
        },
        n => n as usize,
    }
}

/// A running server.
pub struct Server {
    /// The first plaintext TCP address, or the first TLS one when TLS is all there is
    /// (with several nodes: the first node's).
    pub addr: SocketAddr,
    /// Every listener's address (TCP, TLS, Unix socket) of a one-node server.
    pub listen: io::net::Addrs,
    /// The first node's dataset (the only one of a one-node server).
    pub shared: Arc<Shared>,
    accept: Vec<tokio::task::JoinHandle<()>>,
    /// Every node's address and dataset, and with `nodes` > 1 or `cluster-enabled`, the
    /// topology (server/src/cluster/).
    pub addrs: Vec<SocketAddr>,
    pub shards: Vec<Arc<Shared>>,
    pub topology: Option<Arc<state::cluster::Topology>>,
    /// The sentinels of a replication topology (`sentinels` > 0, server/src/sentinel/).
    pub sentinels: Option<Arc<sentinel::Sentinels>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// Where `/metrics` is served (`metrics-port`), if it is.
    pub metrics_addr: Option<SocketAddr>,
}

impl Server {
    /// Binds what `config` asks for (`bind`, `port`, `tls-port`, `unixsocket`) and starts
    /// serving on the current runtime. With `nodes N` (or `cluster-enabled yes`), serves N
    /// nodes on ports port..port+N-1 (each a free port if `port` is 0).
    pub async fn start(config: Config) -> std::io::Result<Server> {
        if state::cluster::multi_node(&config) {
            let sconfig = config.clone();
            let (topo, shards, addrs, mut tasks) = cluster::nodes::start(config).await?;
            let sentinels = match sentinel::start(&sconfig, &topo).await? {
                Some((s, t)) => {
                    tasks.extend(t);
                    Some(s)
                }
                None => None,
            };
            return Ok(Server {
                addr: addrs[0],
                listen: io::net::Addrs {
                    tcp: addrs.clone(),
                    ..Default::default()
                },
                shared: shards[0].clone(),
                accept: Vec::new(),
                addrs,
                shards,
                topology: Some(topo),
                sentinels,
                tasks,
                metrics_addr: None,
            });
        }
        let bound = io::net::bind(&config)?;
        for w in &bound.warnings {
            tracing::warn!("{w}");
        }
        Server::serve(bound, config)
    }

    /// Serves listeners bound earlier with [`io::net::bind`] (the binary binds before it forks
    /// for `daemonize`). One node only.
    pub fn serve(bound: io::net::Bound, config: Config) -> std::io::Result<Server> {
        let users = acl::users_from_config(&config)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let listen = bound.addrs();
        let addr = listen
            .tcp
            .first()
            .or(listen.tls.first())
            .copied()
            .unwrap_or(io::net::UNIX_PEER);
        let metrics_listener = bind_metrics(&config)?;
        let metrics_addr = match &metrics_listener {
            Some(l) => Some(l.local_addr()?),
            None => None,
        };
        crate::observe::info::note_startup_memory();
        let shared = Shared::new(config);
        crate::acl::install_startup_users(&shared, users);
        // The RDB file, when `dir` or `dbfilename` was given, before any client is served.
        crate::commands::rdb::load_at_startup(&shared)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        shared.port.store(
            listen.tcp.first().map_or(0, |a| a.port()) as u64,
            Ordering::Relaxed,
        );
        if let Some(m) = metrics_addr {
            shared
                .metrics_port
                .store(m.port() as u64, Ordering::Relaxed);
        }
        let accept = conn::accept::serve(bound, &shared)?;
        tokio::spawn(state::cron::run(shared.clone()));
        let tasks = metrics_listener
            .map(|l| tokio::spawn(observe::metrics::serve(shared.clone(), l)))
            .into_iter()
            .collect();
        Ok(Server {
            addr,
            listen,
            shared: shared.clone(),
            accept,
            addrs: vec![addr],
            shards: vec![shared],
            topology: None,
            sentinels: None,
            tasks,
            metrics_addr,
        })
    }

    /// The TLS listener's address, if there is one.
    pub fn tls_addr(&self) -> Option<SocketAddr> {
        self.listen.tls.first().copied()
    }

    /// Resolves when a client sends SHUTDOWN.
    pub async fn wait_shutdown_request(&self) {
        if let Some(t) = &self.topology {
            loop {
                let notified = t.shutdown.notified();
                if t.shutting_down.load(Ordering::SeqCst) {
                    return;
                }
                notified.await;
            }
        }
        loop {
            let notified = self.shared.shutdown.notified();
            if self.shared.shutting_down.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    /// Stops accepting, disconnects every client and stops the timer.
    pub async fn shutdown(mut self) {
        for a in self.accept.iter().chain(&self.tasks) {
            a.abort();
        }
        let (accept, tasks) = (
            std::mem::take(&mut self.accept),
            std::mem::take(&mut self.tasks),
        );
        for a in accept.into_iter().chain(tasks) {
            let _ = a.await;
        }
        self.stop_sync();
    }

    /// What stopping does without waiting: shards marked shutting down, clients killed, the
    /// nodes' sockets closed (they are kept for TUMBLER.NODE DOWN/UP, and must close now,
    /// not when the last reference to the topology goes), the Unix socket file removed.
    pub(crate) fn stop_sync(&self) {
        if let Some(topo) = &self.topology {
            for n in &topo.nodes {
                cluster::nodes::stop_listening(n);
            }
        }
        if let Some(all) = &self.sentinels {
            sentinel::stop(all);
        }
        for s in &self.shards {
            s.shutting_down.store(true, Ordering::SeqCst);
            s.shutdown.notify_waiters();
            s.timer.notify_one();
            for c in s.clients.iter() {
                c.send(state::Msg::Kill);
            }
        }
        if let Some(p) = &self.listen.unix {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The `/metrics` listener, if `metrics-port` is set (-1, the default, is off): on the
/// first `bind` address, so a loopback server does not expose its metrics either.
fn bind_metrics(config: &Config) -> std::io::Result<Option<tokio::net::TcpListener>> {
    let port = config.get_i64(crate::config::key::METRICS_PORT);
    if port < 0 {
        return Ok(None);
    }
    let bind = config.get(crate::config::key::BIND);
    let host = bind
        .split_whitespace()
        .next()
        .unwrap_or("127.0.0.1")
        .trim_start_matches('-');
    let l = std::net::TcpListener::bind((host, port as u16))?;
    l.set_nonblocking(true)?;
    tokio::net::TcpListener::from_std(l).map(Some)
}
