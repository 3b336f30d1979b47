//! The `tumbler` server: networking, connections, dispatch, Lua, pub/sub fan-out, config.
//!
//! Start it from the command line (`tumbler --port 6379`) or inside a Rust process with
//! [`Server::start`], which binds (port 0 for a free port), serves on the current tokio
//! runtime and returns a handle with the address and a shutdown.

pub mod cluster;
pub mod config;
pub mod conn;
pub mod dispatch;
pub mod embed;
pub mod info;
pub mod monitor;
pub mod multi;
pub mod protocol;
pub mod pubsub;
pub mod scripting;
pub mod shared;
pub mod timectl;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

pub use config::Config;
pub use shared::Shared;

/// A running server.
pub struct Server {
    /// The first node's address and dataset.
    pub addr: SocketAddr,
    pub shared: Arc<Shared>,
    accept: tokio::task::JoinHandle<()>,
    /// With `nodes` > 1 or `cluster-enabled`: every node's address, every shard's
    /// dataset, and the topology (server/src/cluster/).
    pub addrs: Vec<SocketAddr>,
    pub shards: Vec<Arc<Shared>>,
    pub topology: Option<Arc<cluster::Topology>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Server {
    /// Binds to `bind:port` from `config` and starts serving on the current runtime.
    /// With `nodes N` (or `cluster-enabled yes`), serves N nodes on ports port..port+N-1
    /// (each a free port if `port` is 0).
    pub async fn start(config: Config) -> std::io::Result<Server> {
        if config.get_i64("nodes") > 1 || config.get_bool("cluster-enabled") {
            let (topo, shards, addrs, tasks) = cluster::nodes::start(config).await?;
            return Ok(Server {
                addr: addrs[0],
                shared: shards[0].clone(),
                accept: tokio::spawn(async {}),
                addrs,
                shards,
                topology: Some(topo),
                tasks,
            });
        }
        let bind = config.get("bind").to_string();
        let port = config.get_i64("port") as u16;
        let listener = TcpListener::bind((bind.as_str(), port)).await?;
        let addr = listener.local_addr()?;
        let shared = Shared::new(config);
        shared.port.store(addr.port() as u64, Ordering::Relaxed);
        tokio::spawn(timer(shared.clone()));
        let accept = tokio::spawn(accept_loop(shared.clone(), listener));
        Ok(Server {
            addr,
            shared: shared.clone(),
            accept,
            addrs: vec![addr],
            shards: vec![shared],
            topology: None,
            tasks: Vec::new(),
        })
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
    pub async fn shutdown(self) {
        self.accept.abort();
        let _ = self.accept.await;
        for t in &self.tasks {
            t.abort();
        }
        for t in self.tasks {
            let _ = t.await;
        }
        for s in &self.shards {
            s.shutting_down.store(true, Ordering::SeqCst);
            s.shutdown.notify_waiters();
            s.timer.notify_one();
            for c in s.clients.iter() {
                c.send(shared::Msg::Kill);
            }
        }
    }
}

async fn accept_loop(shared: Arc<Shared>, listener: TcpListener) {
    loop {
        match listener.accept().await {
            Ok((stream, addr)) => {
                if shared.shutting_down.load(Ordering::SeqCst) {
                    return;
                }
                tokio::spawn(conn::serve(shared.clone(), stream, addr));
            }
            Err(e) => {
                // Out of file descriptors and similar: back off instead of spinning.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// The background timer: active expiry, blocked-client timeouts, lock leases. It sleeps
/// until the engine's next deadline (at most 100 ms) or until a command or time control
/// announces an earlier one.
pub(crate) async fn timer(shared: Arc<Shared>) {
    loop {
        if shared.shutting_down.load(Ordering::SeqCst) {
            return;
        }
        let next = {
            let Ok(mut core) = shared.lock_core(true).await else {
                continue;
            };
            core.engine.tick();
            core.engine.next_deadline()
        };
        let now = lockcore::clock::Clock::now_ms(&*shared.clock);
        let wait = next.map_or(100, |t| (t - now).clamp(1, 100)) as u64;
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(wait)) => {}
            _ = shared.timer.notified() => {}
        }
    }
}
