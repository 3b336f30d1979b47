//! `tumbler bench`: runs one workload against one or more servers, rounds interleaved
//! (A B A B A B), and reports throughput, latency percentiles, server CPU per call and the
//! ratios against the first server (docs/benchmarking.md).
//!
//! What it sends: `--script FILE` (SCRIPT LOAD once, then EVALSHA with the `--keys` and
//! `--args` templates), `--workload NAME` (server/src/tools/bench/workloads.rs), or a raw
//! command after `--`. Where it reports: a table on stdout (a progress bar too when stdout
//! is a terminal), `--json FILE`, `--html FILE`.

pub mod load;
pub mod profile;
pub mod report;
pub mod target;
pub mod template;
pub mod tls;
pub mod workloads;

use std::io::IsTerminal;
use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;

use load::{Budget, Plan, Progress};
use report::{Header, Run};
use target::{OwnServer, Target};
use template::{CmdTemplate, Template};
use workloads::Arg;

#[derive(Parser, Debug)]
#[command(
    name = "tumbler bench",
    about = "Benchmark a workload against one or more servers, rounds interleaved, with ratios against the first",
    after_help = "Templates: {rand} (uniform over --keyspace, 12 digits as redis-benchmark's __rand_int__), \
{client}, {seq}, {round}; {{ and }} are literal braces (hash tags: lock:{{user}}).\n\n\
Examples:\n  tumbler bench --workload redisson-lock --url redis://127.0.0.1:6379 --url redis://127.0.0.1:6380\n  \
tumbler bench --script lock.lua --keys 'lock:{rand}' --args 30000 'owner-{client}'\n  \
tumbler bench --clients 50 --pipeline 16 -- GET 'key:{rand}'\n  tumbler bench --workload list"
)]
struct Opts {
    /// A server: redis://[user:pass@]host:port[/db], or rediss://... for TLS. Repeat to
    /// compare; the first is the reference for ratios. None: start a Tumbler on a free port.
    #[arg(long = "url", value_name = "URL")]
    urls: Vec<String>,
    /// rediss://: the PEM CA bundle that verifies the servers' certificates [default: the
    /// system's bundle].
    #[arg(long, value_name = "FILE")]
    cacert: Option<PathBuf>,
    /// rediss://: a client certificate (PEM), for servers with tls-auth-clients yes.
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<PathBuf>,
    /// rediss://: the client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
    /// rediss://: accept any server certificate (no verification).
    #[arg(long, conflicts_with = "cacert")]
    insecure: bool,
    /// rediss://: the server name to send and verify [default: the URL's host].
    #[arg(long, value_name = "NAME")]
    sni: Option<String>,
    /// A Lua script to load once and send as EVALSHA.
    #[arg(long, value_name = "FILE", conflicts_with = "workload")]
    script: Option<PathBuf>,
    /// The script's KEYS, as templates.
    #[arg(long, num_args = 1.., value_name = "TEMPLATE", requires = "script")]
    keys: Vec<String>,
    /// The script's ARGV, as templates.
    #[arg(long, num_args = 1.., value_name = "TEMPLATE", requires = "script", allow_negative_numbers = true)]
    args: Vec<String>,
    /// A built-in workload (`--workload list` names them).
    #[arg(long, value_name = "NAME")]
    workload: Option<String>,
    /// {rand} is drawn from 0..KEYSPACE.
    #[arg(long, default_value_t = 1_000_000)]
    keyspace: u64,
    #[arg(short = 'c', long, default_value_t = 50)]
    clients: usize,
    /// Commands each client writes before reading their replies.
    #[arg(short = 'P', long, default_value_t = 1)]
    pipeline: usize,
    /// Requests per server per round [default: 100000].
    #[arg(short = 'n', long, conflicts_with = "duration")]
    requests: Option<u64>,
    /// Seconds per server per round (instead of --requests), e.g. 10 or 2.5.
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Client threads [default: 1, as redis-benchmark].
    #[arg(long)]
    threads: Option<usize>,
    /// Write the report as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write a self-contained HTML page with the charts.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Turn the script profiler on for the run and print its per-line table.
    #[arg(long)]
    profile: bool,
    /// A raw command, as redis-benchmark takes it: -- GET key:{rand}
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

/// What the user asked to send, before it is loaded on any server.
enum Source {
    Script { path: String, src: String },
    Builtin(workloads::Workload),
    Raw(Vec<String>),
}

/// Runs `tumbler bench ARGS`; returns the exit status (0 ok, 1 failed or errors, 2 usage).
pub fn run(args: &[String]) -> i32 {
    let argv = std::iter::once("tumbler bench".to_string()).chain(args.iter().cloned());
    let o = match Opts::try_parse_from(argv) {
        Ok(o) => o,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match bench(o) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tumbler bench: {e}");
            1
        }
    }
}

/// Compiles the script with the Lua 5.1 parser Redis and Tumbler both embed, so a syntax
/// error is reported with its line before anything is sent (or any server is reached).
pub fn check_syntax(path: &str, src: &str) -> Result<(), String> {
    let lua = mlua::Lua::new();
    match lua.load(src).set_name(format!("={path}")).into_function() {
        Ok(_) => Ok(()),
        Err(mlua::Error::SyntaxError { message, .. }) => Err(format!("syntax error in {message}")),
        Err(e) => Err(format!("{path}: {e}")),
    }
}

fn source(o: &Opts) -> Result<Source, String> {
    let chosen = [
        o.script.is_some(),
        o.workload.is_some(),
        !o.command.is_empty(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if chosen != 1 {
        return Err(
            "give exactly one of --script FILE, --workload NAME or -- CMD ARGS... (see --help)"
                .into(),
        );
    }
    if let Some(p) = &o.script {
        let path = p.display().to_string();
        let src = std::fs::read_to_string(p).map_err(|e| format!("cannot read {path}: {e}"))?;
        check_syntax(&path, &src)?;
        return Ok(Source::Script { path, src });
    }
    if let Some(w) = &o.workload {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        return match workloads::builtin(w, now) {
            Some(w) => Ok(Source::Builtin(w)),
            None => Err(format!(
                "unknown workload \"{w}\" (known: {})",
                workloads::NAMES.join(", ")
            )),
        };
    }
    Ok(Source::Raw(o.command.clone()))
}

/// The commands of one round on one server, scripts loaded there.
struct Prepared {
    setup: Vec<CmdTemplate>,
    cycle: Vec<CmdTemplate>,
    /// Top-level command names, for INFO commandstats.
    names: Vec<String>,
    /// The SHAs of the scripts loaded, for the profiler's report.
    shas: Vec<String>,
}

/// Parses every template once, with placeholder SHAs, so a bad one fails before any
/// server is touched.
fn check_templates(src: &Source, o: &Opts) -> Result<(), String> {
    let fake = "0".repeat(40);
    match src {
        Source::Script { .. } => {
            for t in o.keys.iter().chain(&o.args) {
                Template::parse(t).map_err(|e| e.to_string())?;
            }
        }
        Source::Builtin(w) => {
            let shas = vec![fake; w.scripts.len()];
            for c in w.setup.iter().chain(&w.cycle) {
                workloads::resolve(c, &shas).map_err(|e| e.to_string())?;
            }
        }
        Source::Raw(cmd) => {
            CmdTemplate::parse(cmd).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn prepare(src: &Source, o: &Opts, admin: &mut target::Admin) -> Result<Prepared, String> {
    let mut loaded = Vec::new();
    let (setup, cycle) = match src {
        Source::Script { src, .. } => {
            let sha = admin.script_load(src)?;
            loaded.push(sha.clone());
            let mut args = vec!["EVALSHA".to_string(), sha, o.keys.len().to_string()];
            args.extend(o.keys.iter().cloned());
            args.extend(o.args.iter().cloned());
            let mut cmd = CmdTemplate::parse(&args).map_err(|e| e.to_string())?;
            // The SHA is literal, whatever the server returned.
            cmd.set_literal(1, args[1].as_bytes());
            (vec![], vec![cmd])
        }
        Source::Builtin(w) => {
            let shas = w
                .scripts
                .iter()
                .map(|s| admin.script_load(s))
                .collect::<Result<Vec<_>, _>>()?;
            loaded.extend(shas.iter().cloned());
            let r = |cs: &[Vec<Arg>]| {
                cs.iter()
                    .map(|c| workloads::resolve(c, &shas).map_err(|e| e.to_string()))
                    .collect::<Result<Vec<_>, _>>()
            };
            (r(&w.setup)?, r(&w.cycle)?)
        }
        Source::Raw(cmd) => (
            vec![],
            vec![CmdTemplate::parse(cmd).map_err(|e| e.to_string())?],
        ),
    };
    let mut names: Vec<String> = cycle.iter().map(|c| c.name()).collect();
    names.sort();
    names.dedup();
    Ok(Prepared {
        setup,
        cycle,
        names,
        shas: loaded,
    })
}

fn describe(src: &Source, o: &Opts) -> String {
    match src {
        Source::Script { path, .. } => format!(
            "script {path}: EVALSHA <sha> {} {} {}",
            o.keys.len(),
            o.keys.join(" "),
            o.args.join(" ")
        ),
        Source::Builtin(w) => format!("workload {}: {}", w.name, w.about),
        Source::Raw(c) => format!("command: {}", c.join(" ")),
    }
}

fn bench(o: Opts) -> Result<i32, String> {
    if o.workload.as_deref() == Some("list") {
        for n in workloads::NAMES {
            let w = workloads::builtin(n, 0).expect("listed");
            println!("{n:<20} {}", w.about);
        }
        return Ok(0);
    }
    if o.clients == 0 || o.pipeline == 0 || o.rounds == 0 {
        return Err("--clients, --pipeline and --rounds must be at least 1".into());
    }
    if o.duration.is_some_and(|d| !(d > 0.0 && d.is_finite())) {
        return Err("--duration must be a positive number of seconds".into());
    }
    if o.requests == Some(0) {
        return Err("--requests must be at least 1".into());
    }
    // Everything the user wrote is checked before any server is reached.
    let src = source(&o)?;
    check_templates(&src, &o)?;
    let mut targets = o
        .urls
        .iter()
        .map(|u| Target::parse(u))
        .collect::<Result<Vec<_>, _>>()?;
    let tls_opts = tls::TlsOptions {
        cacert: o.cacert.clone(),
        cert: o.cert.clone(),
        key: o.key.clone(),
        insecure: o.insecure,
        sni: o.sni.clone(),
    };
    let mut tls_targets = if targets.iter().any(|t| t.tls) {
        let config = tls_opts.config()?;
        targets
            .iter()
            .map(|t| t.tls.then(|| tls_opts.target(&config, &t.host)).transpose())
            .collect::<Result<Vec<_>, _>>()?
    } else if tls_opts.any() {
        return Err(
            "--cacert, --cert, --key, --insecure and --sni apply to rediss:// URLs, and none was given"
                .into(),
        );
    } else {
        vec![None; targets.len()]
    };
    let _own = if targets.is_empty() {
        let s = OwnServer::start()?;
        targets.push(Target::parse(&format!("redis://127.0.0.1:{}", s.port))?);
        tls_targets.push(None);
        Some(s)
    } else {
        None
    };
    let mut admins = targets
        .iter()
        .zip(&tls_targets)
        .map(|(t, tls)| t.admin(tls.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut addrs = Vec::new();
    for t in &targets {
        let a = (t.host.as_str(), t.port)
            .to_socket_addrs()
            .map_err(|e| format!("{}: {e}", t.display()))?
            .next()
            .ok_or_else(|| format!("{}: no address", t.display()))?;
        addrs.push(a);
    }
    let servers: Vec<String> = targets
        .iter()
        .zip(admins.iter_mut())
        .map(|(t, a)| {
            if _own.is_some() {
                format!("{} (tumbler started by the bench)", t.display())
            } else {
                match a.identity() {
                    id if id.is_empty() => t.display(),
                    id => format!("{} ({id})", t.display()),
                }
            }
        })
        .collect();
    let prepared = admins
        .iter_mut()
        .map(|a| prepare(&src, &o, a))
        .collect::<Result<Vec<_>, _>>()?;
    if o.profile {
        for a in &mut admins {
            println!("{}", profile::switch_on(a));
        }
    }

    let budget = match o.duration {
        Some(d) => Budget::Duration(Duration::from_secs_f64(d)),
        None => Budget::Requests(o.requests.unwrap_or(100_000)),
    };
    let header = Header {
        what: describe(&src, &o),
        clients: o.clients,
        pipeline: o.pipeline,
        budget: match budget {
            Budget::Requests(n) => format!("{n} requests"),
            Budget::Duration(d) => format!("{:.1} s", d.as_secs_f64()),
        },
        rounds: o.rounds,
        keyspace: o.keyspace,
    };
    let tty = std::io::stdout().is_terminal();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(o.threads.unwrap_or(1).max(1))
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    if tty {
        println!("{}", header.line());
    }
    let mut runs = Vec::new();
    for round in 1..=o.rounds {
        for (i, t) in targets.iter().enumerate() {
            let p = &prepared[i];
            let admin = &mut admins[i];
            for c in &p.setup {
                let v = template::Vars {
                    round: round as u64,
                    ..Default::default()
                };
                admin
                    .call(&c.expand(&v))
                    .map_err(|e| format!("{}: set-up command failed: {e}", admin.url))?;
            }
            let plan = Arc::new(Plan {
                cycle: p.cycle.clone(),
                keyspace: o.keyspace,
                round: round as u64,
                handshake: t.handshake(),
                tls: tls_targets[i].clone(),
            });
            let before = admin.stats()?;
            let progress = Arc::new(Progress::default());
            let bar = tty.then(|| progress_bar(&budget, &report::letter(i), round, &servers[i]));
            let outcome = rt.block_on(async {
                let job = tokio::spawn(load::run(
                    addrs[i],
                    plan,
                    o.clients,
                    o.pipeline,
                    budget,
                    progress.clone(),
                ));
                if let Some(bar) = &bar {
                    let t0 = Instant::now();
                    while !job.is_finished() {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        match budget {
                            Budget::Requests(_) => {
                                bar.set_position(progress.done.load(Ordering::Relaxed))
                            }
                            Budget::Duration(_) => {
                                bar.set_position(t0.elapsed().as_millis() as u64)
                            }
                        }
                    }
                }
                job.await.map_err(|e| e.to_string())?
            });
            let outcome = outcome.map_err(|e| format!("{}: {e}", servers[i]))?;
            let after = admin.stats()?;
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            let (mut calls, mut calls_source) = target::calls_between(&before, &after, &p.names);
            // A server without commandstats whose total also counts the commands run inside
            // scripts (three per Redisson acquire) would divide its CPU by the wrong figure:
            // then the calls are the requests this bench sent.
            if calls_source == "total_commands_processed"
                && calls > outcome.requests + outcome.requests / 100 + 10
            {
                calls = outcome.requests;
                calls_source =
                    "requests sent (total_commands_processed counts commands inside scripts too)";
            }
            let cpu = after.cpu_s - before.cpu_s;
            let secs = outcome.elapsed.as_secs_f64();
            let run = Run {
                server: i,
                url: targets[i].display(),
                round,
                requests: outcome.requests,
                secs,
                ops_per_sec: outcome.requests as f64 / secs.max(1e-9),
                hist: outcome.hist,
                calls,
                calls_source,
                // A server that did not count most of the calls (unknown commands are in no
                // counter) gets no per-call figure rather than a made-up one.
                cpu_us_per_call: (cpu > 0.0 && calls > 0 && calls * 2 >= outcome.requests)
                    .then(|| cpu * 1e6 / calls as f64),
                errors: outcome.errors,
            };
            if tty {
                println!(
                    "{} round {round}: {:.0} ops/sec, p50 {:.1} us, p99 {:.1} us, {} errors",
                    report::letter(i),
                    run.ops_per_sec,
                    run.pct_us(0.5),
                    run.pct_us(0.99),
                    run.error_total()
                );
            }
            runs.push(run);
        }
    }
    if tty {
        println!();
    }
    print!("{}", report::table(&header, &servers, &runs));
    if o.profile {
        for (a, p) in admins.iter_mut().zip(&prepared) {
            print!("{}", profile::report(a, &p.shas));
        }
    }
    if let Some(p) = &o.json {
        let urls: Vec<String> = targets.iter().map(|t| t.display()).collect();
        let j = report::json(&header, &urls, &servers, &runs);
        let text = serde_json::to_string_pretty(&j).expect("json");
        std::fs::write(p, text + "\n").map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    if let Some(p) = &o.html {
        std::fs::write(p, report::html(&header, &servers, &runs))
            .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    // Error replies do not stop a run (they are counted above, by type), but a run that had
    // them did not measure what was asked: say so in one line and exit non-zero.
    let failed: Vec<String> = runs
        .iter()
        .filter(|r| r.error_total() > 0)
        .map(|r| r.server)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|i| {
            let n: u64 = runs
                .iter()
                .filter(|r| r.server == i)
                .map(|r| r.error_total())
                .sum();
            let total: u64 = runs
                .iter()
                .filter(|r| r.server == i)
                .map(|r| r.requests)
                .sum();
            let first = runs
                .iter()
                .filter(|r| r.server == i)
                .flat_map(|r| r.errors.values())
                .next()
                .map_or(String::new(), |e| e.example.clone());
            format!(
                "{} of {total} calls to {} failed (first: {first})",
                n, servers[i]
            )
        })
        .collect();
    if !failed.is_empty() {
        eprintln!(
            "tumbler bench: error replies during the run: {}",
            failed.join("; ")
        );
        return Ok(1);
    }
    Ok(0)
}

fn progress_bar(budget: &Budget, letter: &str, round: usize, url: &str) -> indicatif::ProgressBar {
    let len = match budget {
        Budget::Requests(n) => *n,
        Budget::Duration(d) => d.as_millis() as u64,
    };
    let bar = indicatif::ProgressBar::new(len);
    let unit = match budget {
        Budget::Requests(_) => "{pos}/{len} requests",
        Budget::Duration(_) => "{pos}/{len} ms",
    };
    let style = indicatif::ProgressStyle::with_template(&format!(
        "{letter} round {round} {{bar:30}} {unit} {url}"
    ))
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}
