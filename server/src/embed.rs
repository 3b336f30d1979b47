//! Running tumbler inside a test process.
//!
//! A [`TestServer`] listens on a free loopback port, serves real TCP clients (any Redis
//! client library) and gives the test a [`TimeHandle`] to move the server's clock directly,
//! so a 30 s lock lease or a TTL can lapse without sleeping. It starts in either of two
//! ways:
//!
//! - [`Builder::start`] (async) serves on the *current* tokio runtime, for `#[tokio::test]`.
//!   Call [`TestServer::shutdown`] at the end, or just drop it (dropping stops accepting and
//!   disconnects clients; the runtime's end reaps the rest).
//! - [`Builder::spawn`] (blocking) runs the server on its own runtime thread, for plain
//!   `#[test]` functions and synchronous clients. Dropping it stops the server and joins
//!   the thread.
//!
//! ```
//! use std::time::Duration;
//!
//! let server = tumbler::embed::TestServer::builder().spawn().unwrap();
//! let conn = std::net::TcpStream::connect(server.addr()).unwrap();
//! // ... SET lock token PX 30000 with any client ...
//! server.time().advance(Duration::from_millis(30_001)); // the lease has now lapsed
//! drop(conn);
//! ```
//!
//! docs/embedding.md has complete examples with the `redis` crate.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use lockcore::storage::clock::Clock;

use crate::config::Config;
use crate::state::Shared;
use crate::Server;

/// Configures a [`TestServer`]. Defaults: `bind 127.0.0.1`, `port 0` (a free port), time
/// control over the wire off, everything else as `tumbler` with no arguments.
#[derive(Debug, Clone)]
pub struct Builder {
    config: Config,
    error: Option<String>,
}

impl Default for Builder {
    fn default() -> Self {
        let mut config = Config::default();
        // Infallible: both are valid values of known parameters.
        config.preset("bind", "127.0.0.1").expect("bind");
        config.preset("port", "0").expect("port");
        Builder {
            config,
            error: None,
        }
    }
}

impl Builder {
    /// Sets any config parameter, as `--name value` would (e.g. `("requirepass", "s3cret")`).
    /// An unknown name or bad value makes `start`/`spawn` fail with that message.
    pub fn config(mut self, name: &str, value: &str) -> Self {
        if name == "user" {
            // An ACL user line, e.g. `config("user", "worker on >pass ~jobs:* +@all")`.
            self.config
                .acl_users
                .push(value.split_whitespace().map(str::to_string).collect());
            return self;
        }
        if let Err(e) = self.config.set(name, value) {
            self.error
                .get_or_insert_with(|| format!("config {name} {value:?}: {e}"));
        }
        self
    }

    /// Adds a TLS listener on a free port (`tls-port 0`) with this certificate and key
    /// (PEM files), next to the plaintext one. `ca_file` verifies client certificates; with
    /// `None`, clients need none (`tls-auth-clients no`). Any other `tls-*` parameter can be
    /// set with [`Builder::config`]; `.config("port", "0")` after this makes it TLS only.
    pub fn tls(self, cert_file: &str, key_file: &str, ca_file: Option<&str>) -> Self {
        let b = self
            .config("tls-port", "0")
            .config("tls-cert-file", cert_file)
            .config("tls-key-file", key_file);
        match ca_file {
            Some(ca) => b
                .config("tls-ca-cert-file", ca)
                .config("tls-auth-clients", "yes"),
            None => b.config("tls-auth-clients", "no"),
        }
    }

    /// Runs the lock-order checker: `"yes"` or `"strict"` (docs/lockdep.md); see
    /// [`TestServer::assert_no_lock_inversions`].
    pub fn lockdep(self, mode: &str) -> Self {
        self.config("lockdep", mode)
    }

    /// Also lets clients move the clock with `TUMBLER.TIME` (the [`TimeHandle`] works
    /// either way).
    pub fn time_control(self, on: bool) -> Self {
        self.config("enable-time-control", if on { "yes" } else { "no" })
    }

    /// Serves `n` nodes from this one server: independent servers, or one Redis Cluster
    /// with [`Builder::cluster`]. [`TestServer::addrs`] lists them.
    pub fn nodes(self, n: usize) -> Self {
        self.config("nodes", &n.to_string())
    }

    /// Makes the nodes one Redis Cluster (`cluster-enabled yes`), with `replicas` replicas
    /// per primary (`cluster-replicas`).
    pub fn cluster(self, replicas: usize) -> Self {
        self.config("cluster-enabled", "yes")
            .config("cluster-replicas", &replicas.to_string())
    }

    /// Serves a primary and `n` replicas (`replicas`): node 0 the primary, nodes 1..=n its
    /// replicas, each with its own copy kept by replication (docs/cluster.md).
    pub fn replicas(self, n: usize) -> Self {
        self.config("replicas", &n.to_string())
    }

    /// Lets clients inject faults and move slots (`TUMBLER.NODE`, `TUMBLER.CLUSTER`).
    pub fn test_control(self, on: bool) -> Self {
        self.config("enable-test-control", if on { "yes" } else { "no" })
    }

    fn checked(self) -> std::io::Result<Config> {
        match self.error {
            Some(e) => Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)),
            None => Ok(self.config),
        }
    }

    /// Starts serving on the current tokio runtime (`#[tokio::test]`, either flavour).
    /// Scripts then run on that runtime's threads: deeply nested script values (thousands
    /// of levels) need more than the default 2 MiB stack, so a test that builds them
    /// should use [`Builder::spawn`], whose threads get [`crate::base::consts::THREAD_STACK`].
    pub async fn start(self) -> std::io::Result<TestServer> {
        let server = Server::start(self.checked()?).await?;
        Ok(TestServer {
            addr: server.addr,
            addrs: server.addrs.clone(),
            listen: server.listen.clone(),
            shared: server.shared.clone(),
            run: Run::Local(Some(server)),
        })
    }

    /// Starts the server on its own runtime thread and returns once it accepts connections.
    /// For synchronous tests and blocking clients; it has its own threads, so it also works
    /// from `#[tokio::test]` (drop it with [`TestServer::shutdown`] there, since dropping
    /// joins the thread).
    pub fn spawn(self) -> std::io::Result<TestServer> {
        let config = self.checked()?;
        let workers = crate::worker_threads(config.get_i64(crate::config::key::WORKER_THREADS));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("tumbler-embedded".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(workers)
                    .thread_name("tumbler-embedded-worker")
                    .thread_stack_size(crate::base::consts::THREAD_STACK)
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                rt.block_on(async move {
                    let server = match Server::start(config).await {
                        Ok(s) => s,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok((
                        server.addr,
                        server.addrs.clone(),
                        server.listen.clone(),
                        server.shared.clone(),
                    )));
                    // Stop on request, on drop of the handle (sender dropped), or on SHUTDOWN.
                    tokio::select! {
                        _ = stop_rx => {}
                        _ = server.wait_shutdown_request() => {}
                    }
                    server.shutdown().await;
                });
                rt.shutdown_timeout(Duration::from_millis(100));
            })?;
        match ready_rx.recv() {
            Ok(Ok((addr, addrs, listen, shared))) => Ok(TestServer {
                addr,
                addrs,
                listen,
                shared,
                run: Run::Thread {
                    stop: Some(stop_tx),
                    thread: Some(thread),
                },
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(std::io::Error::other("tumbler server thread exited early"))
            }
        }
    }
}

enum Run {
    /// Serving on the caller's runtime.
    Local(Option<Server>),
    /// Serving on its own runtime thread.
    Thread {
        stop: Option<tokio::sync::oneshot::Sender<()>>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
}

/// A tumbler server running inside this process. See the [module docs](self).
pub struct TestServer {
    addr: SocketAddr,
    addrs: Vec<SocketAddr>,
    listen: crate::io::net::Addrs,
    shared: Arc<Shared>,
    run: Run,
}

impl TestServer {
    /// A builder with test defaults (loopback, free port).
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The address clients connect to (`127.0.0.1:<port>`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every node's address, node 0 first (one entry unless started with
    /// [`Builder::nodes`]).
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `redis://127.0.0.1:<port>/`, for client libraries that take a URL.
    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    /// The TLS listener's address, if [`Builder::tls`] (or `tls-port`) configured one.
    pub fn tls_addr(&self) -> Option<SocketAddr> {
        self.listen.tls.first().copied()
    }

    /// `rediss://127.0.0.1:<tls-port>/`, if there is a TLS listener.
    pub fn tls_url(&self) -> Option<String> {
        self.tls_addr().map(|a| format!("rediss://{a}/"))
    }

    /// The Unix socket path, if `unixsocket` was set.
    pub fn unix_path(&self) -> Option<&std::path::Path> {
        self.listen.unix.as_deref()
    }

    /// Where `/metrics` is served, when started with `.config("metrics-port", "0")`.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        match self.shared.metrics_port.load(Ordering::Relaxed) {
            0 => None,
            p => Some(SocketAddr::new(self.addr.ip(), p as u16)),
        }
    }

    /// Direct control of the server's clock (no TUMBLER.TIME needed).
    pub fn time(&self) -> TimeHandle {
        TimeHandle {
            shared: self.shared.clone(),
        }
    }

    /// The lock-order checker's findings, the JSON document `TUMBLER.LOCKDEP REPORT`
    /// returns (docs/lockdep.md); `None` unless started with `.lockdep("yes")` or `"strict"`.
    pub fn lockdep_report(&self) -> Option<String> {
        let core = self.shared.lock_core_blocking();
        core.engine.lockdep.as_deref().map(|ld| ld.report())
    }

    /// Panics, naming each cycle and its owners, if the lock-order checker found lock order
    /// inversions or deadlocks; the one call that fails a test run which nested locks in
    /// an order that can deadlock. Panics too if the server runs without lockdep.
    pub fn assert_no_lock_inversions(&self) {
        let core = self.shared.lock_core_blocking();
        let found = core.engine.lockdep.as_deref().map(|ld| ld.describe());
        drop(core); // not poisoned or held by the panic below
        let Some(found) = found else {
            panic!("lockdep is off: start the server with TestServer::builder().lockdep(\"yes\")");
        };
        assert!(found.is_empty(), "the lock-order checker found:\n{found}");
    }

    /// Copies database `db` into the in-memory snapshot `name`, as `TUMBLER.SNAPSHOT SAVE`
    /// does (docs/snapshots.md): seed the fixtures once, then [`TestServer::restore`] or
    /// [`TestServer::restore_after`] around each test.
    pub fn snapshot(&self, db: usize, name: &str) {
        let mut core = self.shared.lock_core_blocking();
        assert!(db < core.engine.dbs.len(), "no database {db}");
        lockcore::engine::snapshot::save(&mut core.engine, db, name.as_bytes().to_vec().into());
    }

    /// Makes database `db` what snapshot `name` holds, as `TUMBLER.SNAPSHOT RESTORE` does;
    /// panics if there is no such snapshot.
    pub fn restore(&self, db: usize, name: &str) {
        assert!(
            self.try_restore(db, name),
            "no database {db} or no snapshot '{name}'"
        );
    }

    /// [`TestServer::restore`] without the panic: false if there is no such database or
    /// snapshot.
    fn try_restore(&self, db: usize, name: &str) -> bool {
        let mut core = self.shared.lock_core_blocking();
        let done = db < core.engine.dbs.len()
            && lockcore::engine::snapshot::restore(&mut core.engine, db, name.as_bytes());
        if done {
            // Clients blocked on keys the restore filled are served now, as after a command.
            core.engine.after_command();
        }
        done
    }

    /// The one call around a test: returns a guard that restores snapshot `name` into
    /// database `db` when it goes out of scope. If the test is panicking then and
    /// `TUMBLER_ARTIFACTS` names a directory, the guard first writes the keyspace there
    /// ([`TestServer::write_state`]: `.rdb` and `.txt`, named after the test's thread).
    pub fn restore_after(&self, db: usize, name: &str) -> RestoreGuard<'_> {
        RestoreGuard {
            server: self,
            db,
            name: name.to_string(),
        }
    }

    /// The whole keyspace as readable text: what `TUMBLER.STATE` returns.
    pub fn state(&self) -> String {
        let core = self.shared.lock_core_blocking();
        lockcore::engine::report::render(&core.engine)
    }

    /// Writes `<dir>/<name>.rdb`, the keyspace as an RDB file (`TUMBLER.RDB SAVE`), and
    /// `<dir>/<name>.txt`, the keyspace as [`TestServer::state`] prints it, creating `dir`
    /// if needed. Characters of `name` other than letters, digits, `-`, `_` and `.` become
    /// `_`. Returns the paths written.
    pub fn write_state(
        &self,
        dir: &std::path::Path,
        name: &str,
    ) -> std::io::Result<Vec<std::path::PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let stem: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let (rdb, txt) = {
            let mut core = self.shared.lock_core_blocking();
            let rdb = crate::commands::rdb::snapshot(&self.shared, &mut core).bytes;
            (rdb, lockcore::engine::report::render(&core.engine))
        };
        let (rdb_path, txt_path) = (
            dir.join(format!("{stem}.rdb")),
            dir.join(format!("{stem}.txt")),
        );
        std::fs::write(&rdb_path, rdb)?;
        std::fs::write(&txt_path, txt)?;
        Ok(vec![rdb_path, txt_path])
    }

    /// The server's shared state, for white-box assertions.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Stops the server: stops accepting, disconnects every client, stops the timer and
    /// (for a spawned server) joins its thread. Safe from any context.
    pub async fn shutdown(mut self) {
        if let Run::Local(server) = &mut self.run {
            if let Some(s) = server.take() {
                s.shutdown().await;
            }
        } else {
            // Joining the server thread blocks; do it off the async worker.
            let _ = tokio::task::spawn_blocking(move || drop(self)).await;
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        match &mut self.run {
            Run::Local(server) => {
                if let Some(s) = server.take() {
                    // The synchronous part of `Server::shutdown`: what cannot wait for an
                    // executor. Connection tasks see the kill when the runtime polls them.
                    s.stop_now();
                }
            }
            Run::Thread { stop, thread } => {
                if let Some(s) = stop.take() {
                    let _ = s.send(());
                }
                if let Some(t) = thread.take() {
                    let _ = t.join();
                }
            }
        }
    }
}

/// Restores a snapshot when dropped: [`TestServer::restore_after`].
pub struct RestoreGuard<'a> {
    server: &'a TestServer,
    db: usize,
    name: String,
}

impl Drop for RestoreGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            if let Some(dir) = std::env::var_os("TUMBLER_ARTIFACTS") {
                let test = std::thread::current().name().unwrap_or("test").to_string();
                match self.server.write_state(std::path::Path::new(&dir), &test) {
                    Ok(paths) => eprintln!("tumbler: keyspace of the failed test in {paths:?}"),
                    Err(e) => eprintln!("tumbler: could not write the keyspace to {dir:?}: {e}"),
                }
            }
        }
        // In a drop, possibly while panicking: a missing snapshot is not worth a second panic.
        self.server.try_restore(self.db, &self.name);
    }
}

/// Moves an embedded server's clock. Cloneable; every method is synchronous and takes the
/// keyspace lock only for as long as it takes to fire what became due.
#[derive(Clone)]
pub struct TimeHandle {
    shared: Arc<Shared>,
}

impl TimeHandle {
    /// Moves the clock forward by `by` and, before returning, fires everything now due:
    /// expired keys are deleted (with keyspace events), blocked commands whose timeout
    /// passed get their timeout reply, waiters on freed keys are served. Exactly what
    /// `TUMBLER.TIME ADVANCE` does.
    pub fn advance(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis())
            .unwrap_or(i64::MAX)
            .min(crate::commands::timectl::MAX_ADVANCE_MS);
        let mut core = self.shared.lock_core_blocking();
        self.shared.clock.advance_ms(ms);
        core.engine.tick();
        drop(core);
        self.shared.timer.notify_one();
    }

    /// Stops the clock: TTLs and timeouts stop counting down until [`TimeHandle::resume`].
    pub fn freeze(&self) {
        let core = self.shared.lock_core_blocking();
        self.shared.clock.freeze();
        drop(core);
        self.shared.timer.notify_one();
    }

    /// Lets a frozen clock run again from the instant it stopped.
    pub fn resume(&self) {
        let core = self.shared.lock_core_blocking();
        self.shared.clock.resume();
        drop(core);
        self.shared.timer.notify_one();
    }

    /// True while frozen.
    pub fn is_frozen(&self) -> bool {
        self.shared.clock.is_frozen()
    }

    /// The server clock in Unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        self.shared.clock.now_ms()
    }
}

impl Server {
    /// Stops accepting, flags shutdown and tells every client to disconnect, without
    /// awaiting anything (for `Drop`).
    pub(crate) fn stop_now(self) {
        for a in self.accept.iter().chain(&self.tasks) {
            a.abort();
        }
        self.stop_sync();
    }
}

/// Runs the examples in docs/embedding.md as doctests, so the guide cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../docs/embedding.md")]
pub struct EmbeddingGuide;
