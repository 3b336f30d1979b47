//! The `tumbler` server: networking, connections, dispatch, Lua, pub/sub fan-out, config.
//!
//! Start it from the command line (`tumbler --port 6379`) or inside a Rust process with
//! [`Server::start`], which binds (port 0 for a free port), serves on the current tokio
//! runtime and returns a handle with the address and a shutdown.

pub mod cmdstats;
pub mod config;
pub mod conn;
pub mod dispatch;
pub mod embed;
pub mod info;
pub mod metrics;
pub mod monitor;
pub mod multi;
pub mod protocol;
pub mod pubsub;
pub mod scripting;
pub mod shared;
pub mod timectl;
pub mod top;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

pub use config::Config;
pub use shared::Shared;

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    /// Where `/metrics` is served (`metrics-port`), if it is.
    pub metrics_addr: Option<SocketAddr>,
    pub shared: Arc<Shared>,
    accept: tokio::task::JoinHandle<()>,
    metrics: Option<tokio::task::JoinHandle<()>>,
}

impl Server {
    /// Binds to `bind:port` from `config` and starts serving on the current runtime.
    pub async fn start(config: Config) -> std::io::Result<Server> {
        let bind = config.get("bind").to_string();
        let port = config.get_i64("port") as u16;
        let listener = TcpListener::bind((bind.as_str(), port)).await?;
        let addr = listener.local_addr()?;
        // Off unless configured (-1); on the same address as the main port, so a loopback
        // server does not expose its metrics to the network either.
        let metrics_port = config.get_i64("metrics-port");
        let metrics_listener = if metrics_port >= 0 {
            Some(TcpListener::bind((bind.as_str(), metrics_port as u16)).await?)
        } else {
            None
        };
        let metrics_addr = match &metrics_listener {
            Some(l) => Some(l.local_addr()?),
            None => None,
        };
        let shared = Shared::new(config);
        shared.port.store(addr.port() as u64, Ordering::Relaxed);
        if let Some(m) = metrics_addr {
            shared
                .metrics_port
                .store(m.port() as u64, Ordering::Relaxed);
        }
        tokio::spawn(timer(shared.clone()));
        let accept = tokio::spawn(accept_loop(shared.clone(), listener));
        let metrics = metrics_listener.map(|l| tokio::spawn(metrics::serve(shared.clone(), l)));
        Ok(Server {
            addr,
            metrics_addr,
            shared,
            accept,
            metrics,
        })
    }

    /// Resolves when a client sends SHUTDOWN.
    pub async fn wait_shutdown_request(&self) {
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
        self.shared.shutting_down.store(true, Ordering::SeqCst);
        self.shared.shutdown.notify_waiters();
        self.shared.timer.notify_one();
        self.accept.abort();
        let _ = self.accept.await;
        if let Some(m) = self.metrics {
            m.abort();
        }
        for c in self.shared.clients.iter() {
            c.send(shared::Msg::Kill);
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
async fn timer(shared: Arc<Shared>) {
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
