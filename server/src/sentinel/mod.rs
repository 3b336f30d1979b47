//! Redis Sentinel, emulated in the process that serves the data nodes of a replication
//! topology (`--replicas R --sentinels S`, docs/cluster.md).
//!
//! # Model
//!
//! Each sentinel is a listener with its own dataset ([`Shared`]) in sentinel mode: its own
//! run id and myid, clients, pub/sub, `requirepass` and ACL users, and only the commands
//! redis 7.0's `redis-server --sentinel` has (state/sentinel_mode.rs). They monitor one
//! primary (`sentinel-master-name`) and share one view of it ([`State`]): a sentinel in
//! this process cannot be partitioned from the others, so every sentinel sees what the
//! others see, at the same instant. Failure detection runs on Tumbler's clock (the
//! topology's, which `TUMBLER.TIME ADVANCE` moves): a data node that has been down
//! (`TUMBLER.NODE DOWN`) for `down-after-milliseconds` is `+sdown`; with `quorum`
//! sentinels (all of them agree) the primary is `+odown`, and one sentinel, the leader,
//! runs the failover at once (Redis' promotion and reconfiguration steps, each of which
//! waits for INFO replies and timers in Redis, happen in one pass here) with the events
//! Redis publishes, on each sentinel's pub/sub as that sentinel would publish them.
//!
//! What is not emulated: sentinels going down or being partitioned, hello messages
//! between sentinels over the data nodes' `__sentinel__:hello` channel, TILT, scripts
//! (`notification-script`, `client-reconfig-script`), config rewriting, monitoring more
//! than one primary, and `parallel-syncs` (all replicas are reconfigured at once).

pub mod command;
pub mod data;
pub mod monitor;

use parking_lot::Mutex;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::net::TcpListener;

use crate::config::Config;
use crate::state::cluster::Topology;
use crate::state::Shared;

pub use monitor::State;

/// The sentinels of a topology.
pub struct Sentinels {
    pub topo: Arc<Topology>,
    pub list: Vec<Sentinel>,
    pub state: Mutex<State>,
    /// Wakes the monitor early (a node went down or came up, SENTINEL FAILOVER).
    pub wake: tokio::sync::Notify,
}

/// One sentinel.
pub struct Sentinel {
    pub index: usize,
    /// SENTINEL MYID: 40 hex digits (INFO's run_id is another one, as in Redis).
    pub id: String,
    pub shared: Arc<Shared>,
    pub addr: SocketAddr,
}

/// What a sentinel's dataset carries (`Shared::sentinel`): its sentinels and its index.
pub struct Me {
    pub all: Weak<Sentinels>,
    pub index: usize,
}

impl Sentinels {
    /// The sentinels of a dataset in sentinel mode, and its index among them.
    pub fn of(shared: &Shared) -> Option<(Arc<Sentinels>, usize)> {
        let me = shared.sentinel.get()?.clone().downcast::<Me>().ok()?;
        Some((me.all.upgrade()?, me.index))
    }

    /// The time of the topology's clock, in ms.
    pub fn now_ms(&self) -> i64 {
        lockcore::storage::clock::Clock::now_ms(&*self.list[0].shared.clock)
    }
}

/// 40 random hex digits.
pub fn random_id() -> String {
    use std::hash::BuildHasher;
    let s = std::collections::hash_map::RandomState::new();
    (0u64..3)
        .map(|i| format!("{:016x}", s.hash_one(i)))
        .collect::<String>()[..40]
        .to_string()
}

/// A directive's value, or `default` where the directive is absent or empty.
fn directive_i64(config: &Config, name: &str, default: i64) -> i64 {
    config.get_by_name(name).parse().unwrap_or(default)
}

/// How many sentinels `config` asks for.
pub fn count(config: &Config) -> usize {
    directive_i64(config, "sentinels", 0).max(0) as usize
}

/// Binds S sentinels' listeners after the data nodes' (ports `port + nodes ..` when `port`
/// is fixed, free ports otherwise) and starts serving them and their monitor.
pub async fn start(
    config: &Config,
    topo: &Arc<Topology>,
) -> std::io::Result<Option<(Arc<Sentinels>, Vec<tokio::task::JoinHandle<()>>)>> {
    let s = count(config);
    if s == 0 {
        return Ok(None);
    }
    let bind = config.get(crate::config::key::BIND).to_string();
    let base = config.get_i64(crate::config::key::PORT);
    let first = base + topo.nodes.len() as i64;
    if base != 0 && first + s as i64 - 1 > 65535 {
        return Err(std::io::Error::other(format!(
            "sentinel ports {first}..{} do not fit",
            first + s as i64 - 1
        )));
    }
    // A sentinel's own configuration: its `requirepass` is `sentinel-requirepass` (the data
    // nodes' password is not the sentinels', as with separate sentinel.conf files).
    let mut sconf = config.clone();
    let _ = sconf.set("requirepass", config.get_by_name("sentinel-requirepass"));
    let users = crate::acl::users_from_config(&sconf)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut listeners = Vec::with_capacity(s);
    let mut list = Vec::with_capacity(s);
    for j in 0..s {
        let port = if base == 0 {
            0
        } else {
            (first + j as i64) as u16
        };
        let l = crate::io::net::bind_one(&bind, port)?;
        let addr = l.local_addr()?;
        let shared = new_shared(&sconf, topo);
        crate::acl::install_startup_users(&shared, users.clone());
        shared.port.store(addr.port() as u64, Ordering::Relaxed);
        listeners.push(TcpListener::from_std(l)?);
        list.push(Sentinel {
            index: j,
            id: random_id(),
            shared,
            addr,
        });
    }
    let state = State::new(config, topo, s);
    let all = Arc::new(Sentinels {
        topo: topo.clone(),
        list,
        state: Mutex::new(state),
        wake: tokio::sync::Notify::new(),
    });
    for sen in &all.list {
        let _ = sen.shared.sentinel.set(Arc::new(Me {
            all: Arc::downgrade(&all),
            index: sen.index,
        }));
    }
    monitor::started(&all);
    let mut tasks = Vec::new();
    for (sen, l) in all.list.iter().zip(listeners) {
        tasks.push(tokio::spawn(crate::state::cron::run(sen.shared.clone())));
        tasks.push(tokio::spawn(accept_loop(sen.shared.clone(), l)));
    }
    tasks.push(tokio::spawn(monitor::run(all.clone())));
    Ok(Some((all, tasks)))
}

/// A sentinel's dataset: in the topology (TUMBLER.NODE, TUMBLER.TIME and SHUTDOWN reach
/// every node from it) and on the topology's clock.
fn new_shared(config: &Config, topo: &Arc<Topology>) -> Arc<Shared> {
    let node = Some((topo.clone(), 0));
    match topo.shard(0) {
        Some(s) => Shared::new_node_clocked(config.clone(), node, s.clock.clone()),
        None => Shared::new_node(config.clone(), node),
    }
}

async fn accept_loop(shared: Arc<Shared>, listener: TcpListener) {
    loop {
        if shared.shutting_down.load(Ordering::SeqCst) {
            return;
        }
        match listener.accept().await {
            Ok((stream, addr)) => {
                let _ = stream.set_nodelay(true);
                let laddr = stream.local_addr().unwrap_or(addr);
                tokio::spawn(crate::conn::serve_node(
                    shared.clone(),
                    stream,
                    addr,
                    laddr,
                    crate::io::stream::Transport::Tcp,
                    None,
                ));
            }
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Stops the sentinels' clients (the process is shutting down).
pub fn stop(all: &Sentinels) {
    for s in &all.list {
        s.shared.shutting_down.store(true, Ordering::SeqCst);
        s.shared.shutdown.notify_waiters();
        s.shared.timer.notify_one();
        for c in s.shared.clients.iter() {
            c.send(crate::state::Msg::Kill);
        }
    }
}

#[linkme::distributed_slice(crate::conn::SENTINEL_HOOK)]
static HOOK: crate::conn::SentinelHook = command::hook;
