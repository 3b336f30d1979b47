//! The `tumbler` server: networking, connections, dispatch, Lua, pub/sub fan-out, config.
//!
//! Start it from the command line (`tumbler --port 6379`) or inside a Rust process with
//! [`Server::start`], which binds (port 0 for a free port), serves on the current tokio
//! runtime and returns a handle with the address and a shutdown.

pub mod acl;
pub mod climits;
pub mod config;
pub mod conn;
pub mod dispatch;
pub mod embed;
pub mod info;
pub mod monitor;
pub mod multi;
pub mod net;
pub mod process;
pub mod protocol;
pub mod pubsub;
pub mod scripting;
pub mod shared;
pub mod timectl;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

pub use config::Config;
pub use shared::Shared;

/// Stack size of the runtime threads that run commands and scripts. Every nested
/// conversion (cjson, cmsgpack, script replies, reply encoding) is bounded by Lua's stack
/// limit at under 8000 levels (docs/scripting.md, "Nesting limits"); this leaves room for
/// them many times over, also in debug builds. Untouched stack pages cost no memory.
pub const THREAD_STACK: usize = 16 << 20;

/// A running server.
pub struct Server {
    /// The first plaintext TCP address, or the first TLS one when TLS is all there is.
    pub addr: SocketAddr,
    /// Every listener's address (TCP, TLS, Unix socket).
    pub addrs: net::Addrs,
    pub shared: Arc<Shared>,
    accept: Vec<tokio::task::JoinHandle<()>>,
}

impl Server {
    /// Binds what `config` asks for (`bind`, `port`, `tls-port`, `unixsocket`) and starts
    /// serving on the current runtime.
    pub async fn start(config: Config) -> std::io::Result<Server> {
        let bound = net::bind(&config)?;
        for w in &bound.warnings {
            tracing::warn!("{w}");
        }
        Server::serve(bound, config)
    }

    /// Serves listeners bound earlier with [`net::bind`] (the binary binds before it forks
    /// for `daemonize`).
    pub fn serve(bound: net::Bound, config: Config) -> std::io::Result<Server> {
        let users = acl::users_from_config(&config)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let addrs = bound.addrs();
        let addr = addrs
            .tcp
            .first()
            .or(addrs.tls.first())
            .copied()
            .unwrap_or(net::UNIX_PEER);
        let shared = Shared::new(config);
        crate::acl::install_startup_users(&shared, users);
        shared.port.store(
            addrs.tcp.first().map_or(0, |a| a.port()) as u64,
            Ordering::Relaxed,
        );
        let accept = bound.serve(&shared)?;
        tokio::spawn(timer(shared.clone()));
        Ok(Server {
            addr,
            addrs,
            shared,
            accept,
        })
    }

    /// The TLS listener's address, if there is one.
    pub fn tls_addr(&self) -> Option<SocketAddr> {
        self.addrs.tls.first().copied()
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
        for a in &self.accept {
            a.abort();
        }
        for a in self.accept {
            let _ = a.await;
        }
        for c in self.shared.clients.iter() {
            c.send(shared::Msg::Kill);
        }
        if let Some(p) = &self.addrs.unix {
            let _ = std::fs::remove_file(p);
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
