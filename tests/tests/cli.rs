//! The `tumbler` binary as a drop-in for redis-server: command line, config files, the
//! machine-readable port line, logs, signals, the container health check, and Redis' own
//! tools (redis-cli info/monitor/--latency, redis-benchmark) against it.
//!
//! The binary is the current build's (tumbler_tests::binary says how it is found).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tumbler_tests::binary::{self, Proc};
use tumbler_tests::{free_port, tools};

/// Runs tumbler to completion (for arguments that must make it exit); killed after 10 s,
/// so a command line that starts a server instead fails the test rather than hanging it.
fn run(args: &[&str]) -> Output {
    binary::output_within(binary::command().args(args), Duration::from_secs(10)).0
}

#[test]
fn version_and_help() {
    for flag in ["--version", "-v", "-V"] {
        let o = run(&[flag]);
        assert!(o.status.success(), "{flag}");
        let line = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let want = format!(
            "Redis server v={} sha=00000000:0 malloc=libc bits=64 build=",
            tumbler::base::consts::REDIS_VERSION
        );
        assert!(line.starts_with(&want), "{line}");
        assert!(
            line.ends_with(&format!(" tumbler={}", env!("CARGO_PKG_VERSION"))),
            "{line}"
        );
    }
    for flag in ["--help", "-h"] {
        let o = run(&[flag]);
        assert!(o.status.success(), "{flag}");
        let help = String::from_utf8_lossy(&o.stdout);
        for word in [
            "--port",
            "--enable-time-control",
            "--healthcheck",
            "config-file",
        ] {
            assert!(help.contains(word), "{flag} lacks {word}: {help}");
        }
    }
}

#[test]
fn port_zero_prints_a_machine_readable_port_and_the_redis_ready_line() {
    let p = Proc::start(&["--port", "0", "--save", "", "--appendonly", "no"]);
    assert_ne!(p.port, 0);
    assert_eq!(p.cmd("PING"), "+PONG\r\n");
    let log = p.wait_log("Ready to accept connections");
    assert!(log.contains("Ready to accept connections"), "{log}");
    // Not a terminal: no colour codes for log scrapers to trip over.
    assert!(!log.contains('\u{1b}'), "{log:?}");
    assert_eq!(p.cmd("CONFIG GET save"), "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
}

#[test]
fn redis_conf_with_unknown_directives_starts_with_warnings_and_flags_override_it() {
    let dir = std::env::temp_dir().join(format!("tumbler-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("redis.conf");
    std::fs::write(
        &conf,
        "# a redis.conf written for redis-server\n\
         bind 127.0.0.1 -::1\n\
         port 6399\n\
         daemonize no\n\
         save 900 1\n\
         save 300 10\n\
         appendonly no\n\
         requirepass \"from file\"\n\
         maxclients 500\n\
         some-future-directive yes\n\
         lazyfree-lazy-user-del yes\n",
    )
    .unwrap();
    let p = Proc::start(&[
        conf.to_str().unwrap(),
        "--port",
        "0",
        "--requirepass",
        "from-flag",
    ]);
    let log = p.wait_log("some-future-directive");
    assert!(
        log.contains("ignoring unsupported directive 'some-future-directive'"),
        "{log}"
    );
    assert!(p.cmd("PING").starts_with("-NOAUTH"));
    p.exchange(
        b"AUTH from-flag\r\nCONFIG GET maxclients\r\nCONFIG GET save\r\n",
        "+OK\r\n*2\r\n$10\r\nmaxclients\r\n$3\r\n500\r\n*2\r\n$4\r\nsave\r\n$12\r\n900 1 300 10\r\n",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tumbler_env_vars_set_defaults_that_flags_override() {
    // What a CI service container (env only, no arguments) relies on.
    let mut child = binary::command()
        .env("TUMBLER_ENABLE_TIME_CONTROL", "yes")
        .env("TUMBLER_REQUIREPASS", "from-env")
        .env("TUMBLER_PORT", "0")
        .env("TUMBLER_NOT_A_PARAMETER", "ignored")
        .args(["--requirepass", "from-flag"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let line = binary::tumbler_line(&mut BufReader::new(child.stdout.take().unwrap()));
    let port: u16 = line.trim().rsplit_once("port=").unwrap().1.parse().unwrap();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"AUTH from-flag\r\nCONFIG GET enable-time-control\r\n")
        .unwrap();
    let want = "+OK\r\n*2\r\n$19\r\nenable-time-control\r\n$3\r\nyes\r\n";
    let mut got = Vec::new();
    let mut b = [0u8; 256];
    while got.len() < want.len() {
        let n = s.read(&mut b).unwrap();
        assert!(n > 0);
        got.extend_from_slice(&b[..n]);
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(String::from_utf8_lossy(&got), want);

    let o = binary::command()
        .env("TUMBLER_DATABASES", "many")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("TUMBLER_DATABASES=many"));
}

#[test]
fn bad_values_and_files_fail_fast_with_a_message() {
    let o = run(&["--port", "70000"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(">>> 'port \"70000\"'"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run(&["/nonexistent/redis.conf"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read config file"));
    let o = run(&["--enable-time-control", "maybe"]);
    assert!(!o.status.success());
}

#[test]
fn healthcheck_mode_reports_whether_a_server_answers() {
    let p = Proc::start(&["--port", "0"]);
    let port = p.port.to_string();
    assert!(run(&["--healthcheck", "--port", &port]).status.success());
    // Password-protected servers are alive too.
    let q = Proc::start(&["--port", "0", "--requirepass", "x"]);
    assert!(run(&["--healthcheck", "--port", &q.port.to_string()])
        .status
        .success());
    drop(p);
    let o = run(&["--healthcheck", "--port", &port]);
    assert!(!o.status.success());
}

#[test]
fn sigterm_and_shutdown_exit_cleanly() {
    let mut p = Proc::start(&["--port", "0"]);
    let st = Command::new("kill")
        .args(["-TERM", &p.child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    assert!(p.wait_exit().success());
    assert!(p.wait_log("bye bye").contains("Received SIGTERM"));

    let mut p = Proc::start(&["--port", "0"]);
    let mut s = TcpStream::connect(("127.0.0.1", p.port)).unwrap();
    s.write_all(b"SHUTDOWN NOSAVE\r\n").unwrap();
    assert!(p.wait_exit().success());
}

#[test]
fn redis_cli_info_and_plain_commands() {
    let Some(cli) = tools::tool("redis-cli") else {
        return;
    };
    let p = Proc::start(&["--port", "0"]);
    let port = p.port.to_string();
    let o = Command::new(cli)
        .args(["-p", &port, "info", "server"])
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&o.stdout);
    assert!(info.contains("redis_version:"), "{info}");
    assert!(info.contains(&format!("tcp_port:{port}")), "{info}");
    let o = Command::new(cli)
        .args(["-p", &port, "set", "k", "v"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "OK\n");
    let o = Command::new(cli)
        .args(["-p", &port, "get", "k"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "v\n");
}

#[test]
fn redis_cli_latency_runs_briefly() {
    let Some(cli) = tools::tool("redis-cli") else {
        return;
    };
    let p = Proc::start(&["--port", "0"]);
    let mut lat = Command::new(cli)
        .args(["-p", &p.port.to_string(), "--latency"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Not on a terminal, redis-cli samples for about a second, prints one
    // "min max avg samples" line and exits; SIGINT (bounding the test) also prints it.
    let deadline = Instant::now() + Duration::from_secs(5);
    while lat.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if lat.try_wait().unwrap().is_none() {
        Command::new("kill")
            .args(["-INT", &lat.id().to_string()])
            .status()
            .unwrap();
    }
    let o = lat.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let fields: Vec<&str> = out.split_whitespace().collect();
    assert!(
        fields.len() >= 4,
        "{out:?} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let samples: u64 = fields[fields.len() - 1].parse().unwrap();
    assert!(samples > 0, "{out:?}");
}

#[test]
fn redis_cli_monitor_sees_commands() {
    let Some(cli) = tools::tool("redis-cli") else {
        return;
    };
    let p = Proc::start(&["--port", "0"]);
    let port = p.port.to_string();
    let mut mon = Command::new(cli)
        .args(["-p", &port, "monitor"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(mon.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "OK");
    p.cmd("SET monitored yes");
    let line = lines.next().unwrap().unwrap();
    let _ = mon.kill();
    let _ = mon.wait();
    assert!(line.ends_with("\"SET\" \"monitored\" \"yes\""), "{line}");
}

#[test]
fn redis_benchmark_runs_against_tumbler() {
    let Some(bench) = tools::tool("redis-benchmark") else {
        return;
    };
    let p = Proc::start(&["--port", "0"]);
    let o = Command::new(bench)
        .args([
            "-p",
            &p.port.to_string(),
            "-n",
            "1000",
            "-c",
            "4",
            "-q",
            "-t",
            "ping,set,get,incr,mset",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    for t in ["PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "MSET"] {
        assert!(
            out.split(['\r', '\n']).any(|l| {
                let l = l.trim_start();
                l.starts_with(&format!("{t}: ")) || l.starts_with(&format!("{t} ("))
            }),
            "no result for {t}: {out}"
        );
    }
    assert!(!out.contains("ERR"), "{out}");
    // It wrote its 3-byte values under its usual key name.
    assert!(p.cmd("GET key:__rand_int__").starts_with("$3\r\n"));
}

/// CONFIG REWRITE writes the running configuration and the ACL users back to the file the
/// server started from (comments and unknown directives kept), and a restart from that
/// file comes back with them; without a file it is Redis' error.
#[test]
fn config_rewrite_persists_settings_and_users_across_a_restart() {
    let dir = std::env::temp_dir().join(format!("tumbler-rewrite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("redis.conf");
    std::fs::write(
        &conf,
        "# keep this comment\nport 0\nmaxclients 500\nsome-future-directive yes\n",
    )
    .unwrap();
    let path = conf.to_str().unwrap();
    let p = Proc::start(&[path]);
    assert_eq!(p.cmd("CONFIG SET maxclients 600"), "+OK\r\n");
    assert_eq!(p.cmd("CONFIG SET notify-keyspace-events Kx"), "+OK\r\n");
    assert_eq!(
        p.cmd("ACL SETUSER app on >secret ~app:* +get +set"),
        "+OK\r\n"
    );
    assert_eq!(p.cmd("CONFIG REWRITE"), "+OK\r\n");
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(
        text.starts_with(
            "# keep this comment\nport 0\nmaxclients 600\nsome-future-directive yes\n"
        ),
        "{text}"
    );
    assert!(text.contains("\n# Generated by CONFIG REWRITE\n"), "{text}");
    drop(p);

    let p = Proc::start(&[path]);
    assert_eq!(
        p.cmd("CONFIG GET maxclients"),
        "*2\r\n$10\r\nmaxclients\r\n$3\r\n600\r\n"
    );
    assert!(p.cmd("CONFIG GET notify-keyspace-events").contains("xK"));
    let users = p.cmd("ACL LIST");
    assert!(
        users.contains("user app on #") && users.contains("~app:*"),
        "{users}"
    );
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);

    let p = Proc::start(&["--port", "0"]);
    assert_eq!(
        p.cmd("CONFIG REWRITE"),
        "-ERR The server is running without a config file\r\n"
    );
}

/// The two lines of redis-server's FATAL CONFIG error that name the directive and the
/// reason (`>>> 'port "6379" "6380"'`, `wrong number of arguments`).
fn config_error(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().collect();
    match lines.iter().position(|l| l.starts_with(">>> ")) {
        Some(i) => lines[i..(i + 2).min(lines.len())].join("\n"),
        None => text.into_owned(),
    }
}

/// Command lines parsed by redis-server's rules (server.c): the same directive, value and
/// reason in the error for each bad one, and the same settings from the good ones
/// (`--name value` in one argument, values that start with `--`, `--save` with no value,
/// several words for a multi-argument directive).
#[test]
fn command_line_parsing_matches_redis_server() {
    let redis = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let Some(redis) = tools::tool(&redis) else {
        return;
    };
    for args in [
        &["--port"][..],
        &["--port", "6380", "--loglevel"],
        &["--port", "6379", "6380"],
        &["--port", "--loglevel", "verbose"],
        &["--port", "--bla", "--loglevel", "verbose"],
        &["--logfile", "--my--log--file", "--loglevel", "--bla"],
        &["--shutdown-on-sigint"],
        &["--shutdown-on-sigint", "now force", "--shutdown-on-sigterm"],
        &["--maxmemory 1x"],
        &["--save", "x y"],
    ] {
        let t = run(args);
        let r = Command::new(redis).args(args).output().unwrap();
        assert!(!t.status.success() && !r.status.success(), "{args:?}");
        assert_eq!(config_error(&t.stderr), config_error(&r.stderr), "{args:?}");
    }
    for (args, want) in [
        (
            &["--maxmemory 700mb", "--maxmemory-policy volatile-lru"][..],
            &[
                ("maxmemory", "734003200"),
                ("maxmemory-policy", "volatile-lru"),
            ][..],
        ),
        (
            &["--maxmemory '700mb'", "--maxmemory-policy 'volatile-lru'"],
            &[
                ("maxmemory", "734003200"),
                ("maxmemory-policy", "volatile-lru"),
            ],
        ),
        (
            &[
                "--proc-title-template",
                "--my--title",
                "--loglevel",
                "verbose",
            ],
            &[
                ("proc-title-template", "--my--title"),
                ("loglevel", "verbose"),
            ],
        ),
        (
            &["--save", "--loglevel", "verbose"],
            &[("save", ""), ("loglevel", "verbose")],
        ),
        (
            &["--loglevel", "verbose", "--save"],
            &[("save", ""), ("loglevel", "verbose")],
        ),
        (
            &[
                "--proc-title-template",
                "--save",
                "--save",
                "",
                "--loglevel",
                "verbose",
            ],
            &[
                ("proc-title-template", "--save"),
                ("save", ""),
                ("loglevel", "verbose"),
            ],
        ),
        (
            &[
                "--shutdown-on-sigint",
                "nosave",
                "force",
                "now",
                "--shutdown-on-sigterm",
                "nosave force",
            ],
            &[
                ("shutdown-on-sigint", "nosave now force"),
                ("shutdown-on-sigterm", "nosave force"),
            ],
        ),
    ] {
        let mut full = vec!["--port", "0"];
        full.extend_from_slice(args);
        let p = Proc::start(&full);
        for (name, value) in want {
            assert_eq!(
                p.cmd(&format!("CONFIG GET {name}")),
                format!(
                    "*2\r\n${}\r\n{name}\r\n${}\r\n{value}\r\n",
                    name.len(),
                    value.len()
                ),
                "{args:?}"
            );
        }
    }
}

/// `--user` with the whole rule list in one argument (docs/clients.md) defines that user.
#[test]
fn user_flag_with_a_quoted_rule_list_defines_the_user() {
    let p = Proc::start(&["--port", "0", "--user", "app on >secret ~app:* +get +set"]);
    p.exchange(
        b"AUTH app secret\r\nSET app:1 v\r\nDEL app:1\r\n",
        "+OK\r\n+OK\r\n-NOPERM this user has no permissions to run the 'del' command\r\n",
    );
}

/// Starts `bin args...`, waits for `Ready to accept connections` on stdout (bounded),
/// SIGTERMs it and returns (pid, stdout).
fn run_and_stop(bin: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> (u32, String) {
    let bin = bin.as_ref();
    let mut child = Command::new(bin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{bin:?}: {e}"));
    let pid = child.id();
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = log.clone();
    let out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            let Ok(l) = l else { break };
            let mut s = sink.lock().unwrap();
            s.push_str(&l);
            s.push('\n');
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while !log.lock().unwrap().contains("Ready to accept connections") {
        assert!(
            Instant::now() < deadline,
            "{bin:?} did not start: {}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = child.wait();
    reader.join().unwrap();
    let text = log.lock().unwrap().clone();
    (pid, text)
}

/// Redis' log line: `pid:role dd Mon yyyy HH:MM:SS.mmm <level> message`, or its signal
/// handler's `pid:signal-handler (unixtime) message`. Returns (level, message).
fn parse_log_line(line: &str, pid: u32) -> Option<(char, String)> {
    let rest = line.strip_prefix(&format!("{pid}:"))?;
    if let Some(r) = rest.strip_prefix("signal-handler (") {
        let (secs, msg) = r.split_once(") ")?;
        assert!(secs.bytes().all(|b| b.is_ascii_digit()), "{line}");
        return Some(('#', msg.to_string()));
    }
    let (role, r) = rest.split_at(1);
    assert!(matches!(role, "C" | "M" | "S" | "X"), "{line}");
    let r = r.strip_prefix(' ')?;
    // `27 Nov 2026 14:35:07.006 `: 25 bytes.
    let (ts, r) = r.split_at(25);
    let b = ts.as_bytes();
    let shape = b[0..2].iter().all(u8::is_ascii_digit)
        && b[2] == b' '
        && b[3].is_ascii_uppercase()
        && b[4..6].iter().all(u8::is_ascii_lowercase)
        && b[6] == b' '
        && b[7..11].iter().all(u8::is_ascii_digit)
        && &ts[11..12] == " "
        && ts[12..24].chars().enumerate().all(|(i, c)| match i {
            2 | 5 => c == ':',
            8 => c == '.',
            _ => c.is_ascii_digit(),
        })
        && b[24] == b' ';
    assert!(shape, "timestamp shape: {line}");
    let mut chars = r.chars();
    let level = chars.next()?;
    assert!(matches!(level, '.' | '-' | '*' | '#'), "{line}");
    let msg = chars.as_str().strip_prefix(' ')?.to_string();
    Some((level, msg))
}

/// The redis-server surface that launchers read, checked against redis-server itself:
/// `--version`, the log format on stdout, the messages they wait for with their levels,
/// the banner's `PID:` line under `always-show-logo yes`, and `Running mode=...` without it.
/// Levels are compared with the newest reference (Redis 8.0, whose startup and shutdown
/// lines are 7.2's, the version Tumbler announces) when it is installed, and the words with
/// every reference.
#[test]
fn version_banner_and_log_match_redis_server() {
    let mut refs = vec![std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into())];
    refs.push("redis8-server".into());
    let shape = |line: &str| {
        let w: Vec<&str> = line.split(' ').collect();
        w.len() >= 6
            && matches!(w[0], "Redis" | "Valkey")
            && w[1] == "server"
            && w[2]
                .strip_prefix("v=")
                .is_some_and(|v| v.split('.').count() == 3)
            && w[3] == "sha=00000000:0"
            && w[4].starts_with("malloc=")
            && w[5] == "bits=64"
    };
    let o = run(&["--version"]);
    let ours = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert!(shape(&ours), "{ours}");
    // Messages whose words and order launchers and Redis' test suite rely on.
    let key = [
        "oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo",
        "Redis version=",
        "Configuration loaded",
        "monotonic clock: ",
        "Server initialized",
        "Ready to accept connections",
        "Received SIGTERM scheduling shutdown...",
        "User requested shutdown...",
        "Redis is now ready to exit, bye bye...",
    ];
    let pick = |text: &str, pid: u32| -> Vec<(char, &'static str)> {
        let lines: Vec<(char, String)> = text
            .lines()
            .filter_map(|l| parse_log_line(l, pid))
            .collect();
        key.iter()
            .filter_map(|k| {
                lines
                    .iter()
                    .find(|(_, m)| m.starts_with(k))
                    .map(|(c, _)| (*c, *k))
            })
            .collect()
    };
    let tport = free_port().to_string();
    let (tpid, tlog) = run_and_stop(
        binary::path(),
        &["--port", &tport, "--always-show-logo", "yes"],
    );
    for line in tlog.lines().filter(|l| l.starts_with(&format!("{tpid}:"))) {
        parse_log_line(line, tpid).unwrap_or_else(|| panic!("not Redis' format: {line}"));
    }
    assert!(tlog.contains(&format!(" PID: {tpid}\n")), "{tlog}");
    assert!(tlog.contains(&format!(" Port: {tport}\n")), "{tlog}");
    let ours_key = pick(&tlog, tpid);
    assert_eq!(ours_key.len(), key.len(), "{tlog}");
    for r in &refs {
        if tools::tool(r).is_none() {
            continue;
        }
        let v = Command::new(r).arg("--version").output().unwrap();
        let theirs = String::from_utf8_lossy(&v.stdout).trim().to_string();
        assert!(shape(&theirs), "{theirs}");
        let rport = free_port().to_string();
        let args = [
            "--port",
            &rport,
            "--always-show-logo",
            "yes",
            "--save",
            "",
            "--appendonly",
            "no",
        ];
        let (rpid, rlog) = run_and_stop(r, &args);
        assert!(rlog.contains(&format!(" PID: {rpid}\n")), "{rlog}");
        assert!(rlog.contains(&format!(" Port: {rport}\n")), "{rlog}");
        let theirs_key = pick(&rlog, rpid);
        let words = |k: &[(char, &str)]| k.iter().map(|(_, m)| m.to_string()).collect::<Vec<_>>();
        assert_eq!(words(&ours_key), words(&theirs_key), "{r}:\n{rlog}");
        if r == "redis8-server" {
            assert_eq!(ours_key, theirs_key, "levels, against {r}:\n{rlog}");
        }
        // Without the logo: one `Running mode=standalone, port=P.` line.
        let (tpid2, tlog2) = run_and_stop(binary::path(), &["--port", &tport]);
        let (rpid2, rlog2) = run_and_stop(r, &["--port", &rport, "--save", ""]);
        for (pid, log, port) in [(tpid2, &tlog2, &tport), (rpid2, &rlog2, &rport)] {
            let want = format!("Running mode=standalone, port={port}.");
            assert!(
                log.lines()
                    .filter_map(|l| parse_log_line(l, pid))
                    .any(|(c, m)| c == '*' && m == want),
                "{log}"
            );
            assert!(!log.contains(" PID: "), "{log}");
        }
    }
}
