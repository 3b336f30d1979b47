//! `tumbler [config-file] [--name value ...]`: starts the server.
//!
//! Like redis-server, every config directive can be given as `--name value`, so scripts
//! written for redis-server run unchanged. clap renders `--help` and `--version` from the
//! documented options; the directive pairs are parsed redis-style, because redis.conf names
//! are open-ended and an unknown one must be a warning, not an error.

use clap::{Arg, ArgAction, Command};
use std::io::Write;

use tumbler::config::{self, Config};

/// Counts allocated bytes for INFO's `used_memory` and maxmemory (server/src/state/memory.rs).
#[global_allocator]
static ALLOC: tumbler::state::memory::CountingAlloc = tumbler::state::memory::CountingAlloc;

fn cli() -> Command {
    Command::new("tumbler")
        .version(env!("CARGO_PKG_VERSION"))
        .about("A lightweight, in-memory, Redis-compatible server with native lock primitives")
        .after_help(
            "Any redis.conf directive can be passed as --name value (e.g. --save \"\" --appendonly no).\n\
             Unknown directives are ignored with a warning.\n\n\
             Examples:\n  tumbler\n  tumbler --port 0\n  tumbler /etc/redis/redis.conf --port 7777 --requirepass secret\n  tumbler --metrics-port 9121          # Prometheus metrics at http://127.0.0.1:9121/metrics\n  tumbler top --port 6379              # live view of the locks on a server\n  tumbler bench --help                 # benchmark a workload on one or more servers",
        )
        .arg(Arg::new("config-file").help("redis.conf-style configuration file").required(false))
        .arg(Arg::new("port").long("port").value_name("PORT").help("TCP port; 0 picks a free port and prints it [default: 6379]"))
        .arg(Arg::new("bind").long("bind").value_name("ADDR").help("Address to listen on [default: 127.0.0.1]"))
        .arg(Arg::new("requirepass").long("requirepass").value_name("PASSWORD").help("Require AUTH with this password"))
        .arg(Arg::new("databases").long("databases").value_name("N").help("Number of databases [default: 16]"))
        .arg(Arg::new("loglevel").long("loglevel").value_name("LEVEL").help("debug, verbose, notice, warning [default: notice]"))
        .arg(
            Arg::new("enable-time-control")
                .long("enable-time-control")
                .value_name("yes|no")
                .help("Enable TUMBLER.TIME ADVANCE/FREEZE/RESUME for tests [default: no]"),
        )
        .arg(Arg::new("tls-port").long("tls-port").value_name("PORT").help("TLS port (with --tls-cert-file, --tls-key-file, --tls-ca-cert-file ...; docs/deployment.md); 0 picks a free port"))
        .arg(Arg::new("unixsocket").long("unixsocket").value_name("PATH").help("Also listen on this Unix socket"))
        .arg(Arg::new("daemonize").long("daemonize").value_name("yes|no").help("Fork into the background once listening (with --pidfile, --logfile)"))
        .arg(Arg::new("nodes").long("nodes").value_name("N").help("Serve N independent nodes on ports PORT..PORT+N-1 (0: a free port each) [default: 1]"))
        .arg(
            Arg::new("cluster-enabled")
                .long("cluster-enabled")
                .value_name("yes|no")
                .help("Make the nodes one Redis Cluster, slots split as redis-cli --cluster create does [default: no]"),
        )
        .arg(Arg::new("cluster-replicas").long("cluster-replicas").value_name("R").help("Replicas per primary in cluster mode [default: 0]"))
        .arg(
            Arg::new("enable-test-control")
                .long("enable-test-control")
                .value_name("yes|no")
                .help("Enable TUMBLER.NODE (down/up/delay/drop) and TUMBLER.CLUSTER (failover, slot moves) for tests [default: no]"),
        )
        .arg(
            Arg::new("metrics-port")
                .long("metrics-port")
                .value_name("PORT")
                .help("Serve Prometheus metrics at http://<bind>:PORT/metrics; 0 picks a free port [default: off]"),
        )
        .arg(Arg::new("version-flag").short('v').action(ArgAction::Version).help("Print version"))
        .arg(
            Arg::new("healthcheck")
                .long("healthcheck")
                .action(ArgAction::SetTrue)
                .help("Ping the server at --bind/--port (default 127.0.0.1:6379) and exit 0 if it answers; for container HEALTHCHECKs, which have no shell or redis-cli"),
        )
}

/// `tumbler --healthcheck [--port P] [--bind A]`: exit status 0 if a server answers PING
/// there (`-NOAUTH` counts: it is alive, just password-protected), 1 otherwise.
fn healthcheck(cfg: &Config) -> ! {
    use std::io::Read;
    use std::net::ToSocketAddrs;
    use std::time::Duration;
    let host = match cfg.get(tumbler::config::key::BIND) {
        "0.0.0.0" | "*" | "" => "127.0.0.1",
        "::" | "::*" => "::1",
        h => h,
    };
    let port = cfg.get_i64(tumbler::config::key::PORT);
    let probe = || -> std::io::Result<bool> {
        let addr = (host, port as u16)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| std::io::Error::other("no address"))?;
        let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        s.write_all(b"PING\r\n")?;
        let mut b = [0u8; 64];
        let n = s.read(&mut b)?;
        Ok(b[..n].starts_with(b"+PONG") || b[..n].starts_with(b"-NOAUTH"))
    };
    match probe() {
        Ok(true) => std::process::exit(0),
        Ok(false) => {
            eprintln!("tumbler: {host}:{port} did not answer PONG");
            std::process::exit(1)
        }
        Err(e) => {
            eprintln!("tumbler: {host}:{port}: {e}");
            std::process::exit(1)
        }
    }
}

/// One directive from the command line: its words, and its text as Redis shows it in an
/// error (`port "6379" "6380"`).
struct Directive {
    args: Vec<String>,
    text: String,
}

/// Splits argv into what clap should see (help, version, the config file) and redis-style
/// directives, by redis-server's own rules (server.c `main`): `--name` starts a directive
/// and the arguments after it are its values, even ones that start with `--` when the name
/// came alone (`--logfile --my--file`); `"--name value"` in one argument is a whole
/// directive; a `--save` with nothing after it, or followed by another `--name`, is
/// `save ""`.
fn split_args(args: &[String]) -> (Vec<String>, Vec<Directive>) {
    let mut for_clap = vec!["tumbler".to_string()];
    let mut directives: Vec<Directive> = Vec::new();
    let mut i = 1;
    if let Some(first) = args.get(1) {
        if !first.starts_with('-') {
            for_clap.push(first.clone());
            i = 2;
        }
    }
    // Whether the last directive is complete, so that a `--word` starts a new one.
    let mut complete = true;
    while i < args.len() {
        let a = &args[i];
        if matches!(
            a.as_str(),
            "-h" | "--help" | "-v" | "-V" | "--version" | "--healthcheck"
        ) {
            for_clap.push(a.clone());
            i += 1;
            continue;
        }
        match a.strip_prefix("--") {
            Some(rest) if complete => {
                let words: Vec<String> = tumbler::resp::split_args(rest.as_bytes())
                    .unwrap_or_default()
                    .into_iter()
                    .map(|w| String::from_utf8_lossy(&w).into_owned())
                    .collect();
                let alone = words.len() <= 1;
                let mut d = Directive {
                    args: if words.is_empty() {
                        vec![String::new()]
                    } else {
                        words
                    },
                    text: rest.to_string(),
                };
                complete = !alone;
                if alone && d.args[0].eq_ignore_ascii_case("save") {
                    let last = i + 1 == args.len();
                    if last || args[i + 1].starts_with("--") {
                        d.args.push(String::new());
                        d.text.push_str(" \"\"");
                        complete = !last;
                    }
                }
                directives.push(d);
            }
            _ => match directives.last_mut() {
                Some(d) => {
                    d.args.push(a.clone());
                    d.text.push(' ');
                    d.text.push_str(&lockcore::reply::repr(a.as_bytes()));
                    complete = true;
                }
                None => {
                    eprintln!("tumbler: unexpected argument '{a}'");
                    std::process::exit(1);
                }
            },
        }
        i += 1;
    }
    (for_clap, directives)
}

/// `TUMBLER_<PARAM>` environment variables (`TUMBLER_ENABLE_TIME_CONTROL=yes`,
/// `TUMBLER_REQUIREPASS=...`) set defaults that a config file and `--name value` override.
/// CI service containers (GitHub Actions `services:`) can set env but not arguments.
/// Variables that name no parameter are left alone (they may be meant for something else).
fn apply_env(cfg: &mut Config) {
    let mut vars: Vec<(String, String)> = std::env::vars()
        .filter_map(|(k, v)| {
            let name = k
                .strip_prefix("TUMBLER_")?
                .to_ascii_lowercase()
                .replace('_', "-");
            config::find(&name).map(|_| (name, v))
        })
        .collect();
    vars.sort();
    for (name, value) in vars {
        if let Err(e) = cfg.set(&name, &value) {
            let var = format!("TUMBLER_{}", name.to_ascii_uppercase().replace('-', "_"));
            eprintln!("tumbler: {var}={value}: {e}");
            std::process::exit(1);
        }
    }
}

/// A listener could not be set up: Redis' two lines in the log (where launchers and Redis'
/// test suite look for `Address already in use` to retry on another port), then exit 1.
fn listen_failed(e: &std::io::Error, port: i64) -> ! {
    if tumbler::base::log::discarded() {
        // A daemon without a log file: its parent, still waiting, says why.
        eprintln!("tumbler: cannot listen: {e}");
    }
    tracing::warn!("Warning: {e}");
    if e.kind() == std::io::ErrorKind::AddrInUse {
        tracing::warn!("Failed listening on port {port} (tcp), aborting.");
    }
    std::process::exit(1)
}

/// SIGTERM and SIGINT from the start of `main` until tokio's handlers replace these (they
/// chain to them, so a late signal only sets the flag again).
#[cfg(unix)]
mod early_signals {
    use std::sync::atomic::{AtomicI32, Ordering};

    static SIGNAL: AtomicI32 = AtomicI32::new(0);

    extern "C" fn record(sig: libc::c_int) {
        SIGNAL.store(sig, Ordering::SeqCst);
    }

    pub fn install() {
        let handler = record as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(libc::SIGTERM, handler);
            libc::signal(libc::SIGINT, handler);
        }
    }

    /// Redis' line for a signal that came before the server was ready, if one did.
    pub fn received() -> Option<&'static str> {
        match SIGNAL.load(Ordering::SeqCst) {
            libc::SIGTERM => Some("Received SIGTERM scheduling shutdown..."),
            libc::SIGINT => Some("Received SIGINT scheduling shutdown..."),
            _ => None,
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `tumbler top ...`: the live lock view (server/src/top), not a server.
    if args.get(1).map(String::as_str) == Some("top") {
        std::process::exit(tumbler::tools::top::run(&args[2..]));
    }
    // `tumbler bench ...`: the benchmark client (server/src/benchcmd), not a server.
    if args.get(1).map(String::as_str) == Some("bench") {
        std::process::exit(tumbler::tools::bench::run(&args[2..]));
    }
    let (for_clap, directives) = split_args(&args);
    // SIGTERM or SIGINT before tokio's handlers are in (the port is bound before the
    // runtime starts) is remembered, not fatal: a launcher that connects and stops the
    // server at once must get a clean shutdown, as redis-server gives.
    #[cfg(unix)]
    early_signals::install();
    // redis-server's version line, which launchers parse (pytest-redis reads `v=`).
    if for_clap[1..]
        .iter()
        .any(|a| matches!(a.as_str(), "-v" | "-V" | "--version"))
    {
        println!("{}", tumbler::base::log::version_line());
        return;
    }
    let m = cli().get_matches_from(for_clap);

    let mut cfg = Config::default();
    let mut warnings = Vec::new();
    apply_env(&mut cfg);
    // redis-server appends the command-line directives to the file's text after one more
    // newline: its error messages count lines that way.
    let mut first_option_line = 2;
    if let Some(path) = m.get_one::<String>("config-file") {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("tumbler: cannot read config file {path}: {e}");
                std::process::exit(1);
            }
        };
        cfg.file = std::fs::canonicalize(path).ok();
        first_option_line = text.matches('\n').count() + 2;
        match config::load_file(&mut cfg, &text) {
            Ok(w) => warnings.extend(w),
            Err(e) => {
                eprintln!("tumbler: bad config file {path}: {e}");
                std::process::exit(1);
            }
        }
    }
    for (n, d) in directives.iter().enumerate() {
        if let Err(e) = config::apply_args(&mut cfg, &d.args, &mut warnings) {
            // redis-server's words: the directives after the config file are its last lines.
            eprintln!(
                "\n*** FATAL CONFIG FILE ERROR (Redis {}) ***\nReading the configuration file, at line {}\n>>> '{}'\n{e}",
                tumbler::base::consts::REDIS_VERSION,
                first_option_line + n,
                d.text.trim()
            );
            std::process::exit(1);
        }
    }

    if m.get_flag("healthcheck") {
        healthcheck(&cfg);
    }

    let logfile = match tumbler::base::process::open_logfile(cfg.get(tumbler::config::key::LOGFILE))
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("Can't open the log file: {e}");
            std::process::exit(1);
        }
    };
    let discard = cfg.get_bool(tumbler::config::key::DAEMONIZE) && logfile.is_none();
    tumbler::base::log::init(cfg.get(tumbler::config::key::LOGLEVEL), logfile, discard);
    // Redis' first lines, in its words and levels (server.c `main`).
    let persona = cfg.personality();
    let server = if persona.is_valkey() {
        "Valkey"
    } else {
        "Redis"
    };
    tracing::info!("oO0OoO0OoO0Oo {server} is starting oO0OoO0OoO0Oo");
    tracing::info!(
        "{server} version={}, bits={}, commit=00000000, modified=0, pid={}, just started",
        persona.version,
        usize::BITS,
        std::process::id()
    );
    if args.len() == 1 {
        tracing::warn!("Warning: no config file specified, using the default config. In order to specify a config file use {} /path/to/redis.conf", args[0]);
    } else {
        tracing::info!("Configuration loaded");
    }
    for w in &warnings {
        tracing::warn!("{w}");
    }

    // Bind before forking (server/src/base/process.rs says why). Several nodes bind their ports
    // themselves once the runtime runs (server/src/cluster/nodes.rs).
    let bound = if tumbler::state::cluster::multi_node(&cfg) {
        None
    } else {
        match tumbler::io::net::bind(&cfg) {
            Ok(b) => Some(b),
            Err(e) => listen_failed(&e, cfg.get_i64(tumbler::config::key::PORT)),
        }
    };
    for w in bound.iter().flat_map(|b| &b.warnings) {
        tracing::warn!("{w}");
    }
    let daemon = if cfg.get_bool(tumbler::config::key::DAEMONIZE) {
        match tumbler::base::process::daemonize() {
            Ok(d) => Some(d),
            Err(e) => {
                eprintln!("tumbler: cannot daemonize: {e}");
                std::process::exit(1);
            }
        }
    } else {
        None
    };
    let pidfile = cfg.get(tumbler::config::key::PIDFILE).to_string();

    let workers = tumbler::worker_threads(cfg.get_i64(tumbler::config::key::WORKER_THREADS));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_stack_size(tumbler::base::consts::THREAD_STACK)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let port = cfg.get_i64(tumbler::config::key::PORT);
    let tls_on = tumbler::io::net::tls_enabled(&cfg);
    // Tumbler's own listener lines, only where redis-server has nothing to match them: a
    // port 0 that Tumbler picked (redis-server does not listen then), several nodes, or the
    // metrics endpoint. A command line redis-server would take prints what it prints.
    let print_ports = cfg.get_i64(tumbler::config::key::PORT) == 0
        || (tls_on && cfg.get_i64(tumbler::config::key::TLS_PORT) == 0)
        || cfg.is_set("metrics-port")
        || tumbler::state::cluster::multi_node(&cfg);
    // Redis shows its logo on a terminal without a log file, or when asked to.
    let show_logo = cfg.get_bool(tumbler::config::key::ALWAYS_SHOW_LOGO)
        || (cfg.get(tumbler::config::key::LOGFILE).is_empty()
            && std::io::IsTerminal::is_terminal(&std::io::stdout()));
    let mode = if cfg.get_bool(tumbler::config::key::CLUSTER_ENABLED) {
        "cluster"
    } else {
        "standalone"
    };
    let watch_stdin = cfg.get_bool(tumbler::config::key::WATCH_STDIN)
        && !cfg.get_bool(tumbler::config::key::DAEMONIZE);
    rt.block_on(async move {
        let started = match bound {
            Some(bound) => tumbler::Server::serve(bound, cfg),
            None => tumbler::Server::start(cfg).await,
        };
        let server = match started {
            Ok(s) => s,
            Err(e) => listen_failed(&e, port),
        };
        tumbler::base::log::set_initialised();
        tracing::info!("monotonic clock: POSIX clock_gettime");
        let shown_port = server
            .listen
            .tcp
            .first()
            .or(server.listen.tls.first())
            .map_or(0, |a| a.port());
        tumbler::base::log::banner(show_logo, mode, shown_port, &persona);
        tracing::info!("Server initialized");
        // Signal handlers go in before anyone can learn the port: a supervisor that reads
        // the port line and sends SIGTERM at once must get a clean shutdown, not a kill.
        #[cfg(unix)]
        let (mut sigterm, mut sigint) = {
            use tokio::signal::unix::{signal, SignalKind};
            (
                signal(SignalKind::terminate()).expect("SIGTERM handler"),
                signal(SignalKind::interrupt()).expect("SIGINT handler"),
            )
        };
        // Machine-readable lines for scripts (and `--port 0`), one per listener (or node), the
        // plaintext one first; then Redis' own log line, which Testcontainers-style wait
        // strategies look for. Only when there is a port to report (`print_ports`): with a
        // log file redis-server writes nothing to stdout, and a launcher may never read it.
        // (Written, not println!: a closed stdout must not stop the server.)
        let a = &server.listen;
        let mut out: Box<dyn Write> = if print_ports {
            Box::new(std::io::stdout().lock())
        } else {
            Box::new(std::io::sink())
        };
        if server.topology.is_some() {
            // With TLS every node's port is a TLS port (server/src/cluster/nodes.rs).
            let key = if tls_on { "tls-port" } else { "port" };
            let replication = server
                .topology
                .as_ref()
                .is_some_and(|t| t.replication && !t.enabled);
            for (i, t) in server.addrs.iter().enumerate() {
                let role = match (replication, i) {
                    (false, _) => "",
                    (true, 0) => " role=master",
                    (true, _) => " role=replica",
                };
                let _ = writeln!(
                    out,
                    "tumbler listening on {t} {key}={} node={i}{role}",
                    t.port()
                );
            }
            for s in server.sentinels.iter().flat_map(|s| &s.list) {
                let t = s.addr;
                let _ = writeln!(out, "tumbler listening on {t} port={} sentinel={}", t.port(), s.index);
            }
        } else {
            for t in &a.tcp {
                let _ = writeln!(out, "tumbler listening on {t} port={}", t.port());
            }
        }
        for t in &a.tls {
            let _ = writeln!(out, "tumbler listening on {t} tls-port={}", t.port());
        }
        if let Some(m) = server.metrics_addr {
            let _ = writeln!(
                out,
                "tumbler metrics on http://{m}/metrics metrics-port={}",
                m.port()
            );
        }
        if let Some(u) = &a.unix {
            let u = u.display();
            let _ = writeln!(out, "tumbler listening on {u} unixsocket={u}");
        }
        let _ = out.flush();
        drop(out);
        if !pidfile.is_empty() {
            if let Err(e) = tumbler::base::process::write_pidfile(&pidfile) {
                tracing::warn!("Failed to write PID file: {e}");
            }
        }
        if let Some(d) = daemon {
            d.ready();
        }
        if !a.tcp.is_empty() {
            tracing::info!("Ready to accept connections tcp");
        }
        if !a.tls.is_empty() {
            tracing::info!("Ready to accept connections tls");
        }
        if a.unix.is_some() {
            tracing::info!("Ready to accept connections unix");
        }
        // `--watch-stdin yes`: a parent that keeps our stdin open and never writes to it
        // (the pip, npm, Maven and Go packages) takes the server with it when it dies, even
        // by SIGKILL, since the kernel closes the pipe.
        let stdin_closed = async move {
            if !watch_stdin {
                return std::future::pending::<()>().await;
            }
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            std::thread::spawn(move || {
                use std::io::Read;
                let mut buf = [0u8; 512];
                let mut stdin = std::io::stdin();
                loop {
                    match stdin.read(&mut buf) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
                let _ = tx.send(());
            });
            let _ = rx.await;
        };
        #[cfg(unix)]
        let early = early_signals::received();
        #[cfg(unix)]
        tokio::select! {
            _ = async {}, if early.is_some() => tumbler::base::log::from_signal_handler(early.unwrap_or_default()),
            _ = sigint.recv() => tumbler::base::log::from_signal_handler("Received SIGINT scheduling shutdown..."),
            _ = sigterm.recv() => tumbler::base::log::from_signal_handler("Received SIGTERM scheduling shutdown..."),
            _ = stdin_closed => tracing::warn!("stdin closed (watch-stdin yes): shutting down"),
            _ = server.wait_shutdown_request() => {}
        }
        #[cfg(not(unix))]
        tokio::select! {
            _ = tokio::signal::ctrl_c() => tumbler::base::log::from_signal_handler("Received SIGINT scheduling shutdown..."),
            _ = stdin_closed => tracing::warn!("stdin closed (watch-stdin yes): shutting down"),
            _ = server.wait_shutdown_request() => {}
        }
        tracing::info!("User requested shutdown...");
        if !pidfile.is_empty() {
            tracing::info!("Removing the pid file.");
            let _ = std::fs::remove_file(&pidfile);
        }
        if server.listen.unix.is_some() {
            tracing::info!("Removing the unix socket file.");
        }
        server.shutdown().await;
        tracing::warn!("Redis is now ready to exit, bye bye...");
    });
    rt.shutdown_timeout(std::time::Duration::from_millis(100));
}
