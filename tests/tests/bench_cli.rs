//! `tumbler bench` end to end: the built binary runs small workloads against a Tumbler and a
//! redis-server (both on free ports), and the tests read its table, its `--json` report and
//! its `--html` page, then check the keys it left on the servers. Every bad input gets one
//! line on stderr and a non-zero exit. A missing redis-server fails (tumbler_tests::tools).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::time::Duration;

use tumbler::embed::TestServer;

use tumbler_tests::binary;
use tumbler_tests::certs::Certs;
use tumbler_tests::RedisServer;

fn url(a: SocketAddr) -> String {
    format!("redis://{a}")
}

/// One command over raw RESP; the reply's bytes (one read is enough for these small ones).
fn cmd(addr: SocketAddr, args: &[&str]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut out = format!("*{}\r\n", args.len());
    for a in args {
        out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(out.as_bytes()).unwrap();
    let mut b = vec![0u8; 64 * 1024];
    let n = s.read(&mut b).unwrap();
    String::from_utf8_lossy(&b[..n]).into_owned()
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `tumbler bench ARGS`, killed after 120 s.
fn bench(args: &[&str]) -> Out {
    bench_env(args, &[])
}

/// `bench` with extra environment variables.
fn bench_env(args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = binary::command();
    cmd.envs(env.iter().copied())
        .arg("bench")
        .args(args)
        .stdin(Stdio::null());
    let (o, killed) = binary::output_within(&mut cmd, Duration::from_secs(120));
    assert!(!killed, "tumbler bench {args:?} did not finish in 120 s");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tumbler-bench-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// One clear line on stderr and a non-zero exit.
fn assert_one_line_failure(o: &Out, needle: &str) {
    assert_ne!(o.code, 0, "exit status; stdout {}", o.stdout);
    let lines: Vec<&str> = o.stderr.trim_end().lines().collect();
    assert_eq!(lines.len(), 1, "stderr: {}", o.stderr);
    assert!(lines[0].starts_with("tumbler bench: "), "{}", lines[0]);
    assert!(lines[0].contains(needle), "{:?} lacks {needle:?}", lines[0]);
}

#[test]
fn redisson_lock_on_tumbler_and_redis_json_and_html() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = TestServer::builder().spawn().unwrap();
    let (json, html) = (tmp("lock.json"), tmp("lock.html"));
    let o = bench(&[
        "--workload",
        "redisson-lock",
        "--url",
        &url(t.addr()),
        "--url",
        &url(redis.addr),
        "--requests",
        "2000",
        "--clients",
        "4",
        "--rounds",
        "2",
        "--json",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 0, "stdout {}\nstderr {}", o.stdout, o.stderr);
    // Not a terminal: the plain table, every round of both servers, then the ratios.
    assert!(
        o.stdout.contains("server round     ops/sec"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("B/A throughput     x"), "{}", o.stdout);
    assert!(o.stdout.contains("B/A cpu/call"), "{}", o.stdout);
    // Each server named as INFO server names it.
    assert!(
        o.stdout
            .contains(&format!("A = {} (tumbler ", url(t.addr()))),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains(&format!("B = {} (redis 7.", url(redis.addr))),
        "{}",
        o.stdout
    );

    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = j["runs"].as_array().unwrap();
    // Interleaved: A B A B.
    let order: Vec<(String, u64)> = runs
        .iter()
        .map(|r| {
            (
                r["url"].as_str().unwrap().to_string(),
                r["round"].as_u64().unwrap(),
            )
        })
        .collect();
    let (a, b) = (url(t.addr()), url(redis.addr));
    assert_eq!(
        order,
        vec![
            (a.clone(), 1),
            (b.clone(), 1),
            (a.clone(), 2),
            (b.clone(), 2)
        ]
    );
    for r in runs {
        for f in ["ops_per_sec", "p50_us", "p99_us", "p999_us", "max_us"] {
            assert!(r[f].as_f64().unwrap() > 0.0, "{f} in {r}");
        }
        assert!(r["p50_us"].as_f64() <= r["p99_us"].as_f64());
        assert!(r["p99_us"].as_f64() <= r["p999_us"].as_f64());
        assert!(r["p999_us"].as_f64() <= r["max_us"].as_f64());
        assert_eq!(r["requests"], 2000);
        assert_eq!(r["errors"], serde_json::json!({}));
        assert!(r["server_cpu_us_per_call"].as_f64().unwrap() > 0.0, "{r}");
    }
    // redis-server counts the EVALSHA calls in INFO commandstats: exactly the requests.
    assert_eq!(runs[1]["server_calls"], 2000);
    assert_eq!(runs[1]["server_calls_source"], "commandstats");
    // So does Tumbler (INFO commandstats, as Redis prints it).
    assert_eq!(runs[0]["server_calls"], 2000);
    assert_eq!(runs[0]["server_calls_source"], "commandstats");
    let ratios = j["ratios"].as_array().unwrap();
    assert!(ratios
        .iter()
        .any(|r| r["metric"] == "throughput" && r["median"].as_f64().unwrap() > 0.0));

    // The scripts really ran: each round left its locks, a hash holding one owner.
    for addr in [t.addr(), redis.addr] {
        let keys = cmd(addr, &["KEYS", "bench:2:lock:*"]);
        let first = keys.lines().nth(2).expect("a lock key").to_string();
        assert_eq!(first.len(), "bench:2:lock:".len() + 12, "{first}");
        assert!(cmd(addr, &["TYPE", &first]).starts_with("+hash"));
        assert!(cmd(addr, &["HGETALL", &first]).contains("bench-uuid:"));
    }

    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "the page fetches nothing"
    );
    assert!(!page.contains("<script") && !page.contains("<link"));
    assert!(page.contains(r#"<svg class="chart" id="throughput""#));
    assert!(page.contains(r#"<svg class="chart" id="latency""#));
    assert_eq!(
        page.matches("<rect ").count(),
        4,
        "one bar per server and round"
    );
    assert_eq!(
        page.matches("<polyline ").count(),
        2,
        "one latency curve per server"
    );
}

#[test]
fn script_file_with_templates_and_its_own_server() {
    let script = tmp("set.lua");
    std::fs::write(
        &script,
        "-- a user's script\nredis.call('SET', KEYS[1], ARGV[1])\nreturn 1\n",
    )
    .unwrap();
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let o = bench(&[
        "--script",
        script.to_str().unwrap(),
        "--keys",
        "user:{client}",
        "--args",
        "v-{seq}",
        "--url",
        &url(redis.addr),
        "--requests",
        "300",
        "--clients",
        "3",
        "--rounds",
        "1",
    ]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains("EVALSHA <sha> 1 user:{client} v-{seq}"),
        "{}",
        o.stdout
    );
    for c in 0..3 {
        let v = cmd(redis.addr, &["GET", &format!("user:{c}")]);
        assert!(v.contains("v-"), "user:{c} = {v:?}");
    }
    // Loaded once, under the SHA of the file's text.
    assert_eq!(
        cmd(
            redis.addr,
            &[
                "SCRIPT",
                "EXISTS",
                "82a76389038e7be594190dd3952dbce2e2bcf5d6"
            ]
        ),
        "*1\r\n:1\r\n"
    );

    // --profile on a server without the profiler: its answer is printed, the run goes on.
    let o = bench(&[
        "--script",
        script.to_str().unwrap(),
        "--keys",
        "user:{client}",
        "--args",
        "v",
        "--url",
        &url(redis.addr),
        "--requests",
        "50",
        "--rounds",
        "1",
        "--profile",
    ]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stdout
            .contains("CONFIG SET lua-profiler yes: ERR Unknown option"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("profile of 82a76389038e7be594190dd3952dbce2e2bcf5d6 on"),
        "{}",
        o.stdout
    );

    // No --url: it starts a Tumbler itself, runs on it and stops it.
    let o = bench(&[
        "--requests",
        "500",
        "--rounds",
        "1",
        "--clients",
        "2",
        "--",
        "PING",
    ]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains("(tumbler started by the bench)"),
        "{}",
        o.stdout
    );
}

#[test]
fn bad_input_gets_one_line_and_a_failure_exit() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    // Unreachable.
    let o = bench(&["--url", &url(closed), "--requests", "10", "--", "PING"]);
    assert_one_line_failure(&o, &format!("cannot connect to {}", url(closed)));

    // A template that does not parse, caught before any server is reached.
    let o = bench(&["--url", &url(closed), "--", "GET", "key:{rnd}"]);
    assert_one_line_failure(&o, "bad template \"key:{rnd}\": unknown placeholder {rnd}");
    let o = bench(&["--url", &url(closed), "--", "GET", "key:{rand"]);
    assert_one_line_failure(&o, "unclosed '{'");

    // A syntax error in the script, with its line, before any load is sent.
    let bad = tmp("bad.lua");
    std::fs::write(&bad, "local a = 1\nlocal b = 2\nif a == b then return 1\n").unwrap();
    let o = bench(&["--script", bad.to_str().unwrap(), "--url", &url(closed)]);
    assert_one_line_failure(&o, &format!("syntax error in {}:4:", bad.display()));
    std::fs::write(&bad, "local a = 1\nlocal = 2\n").unwrap();
    let o = bench(&["--script", bad.to_str().unwrap(), "--url", &url(closed)]);
    assert_one_line_failure(&o, &format!("{}:2:", bad.display()));

    // An unknown workload names the known ones.
    let o = bench(&["--workload", "redlock", "--url", &url(closed)]);
    assert_one_line_failure(&o, "unknown workload \"redlock\" (known: redisson-lock");

    // Failed AUTH, on tumbler and on redis-server.
    let t = TestServer::builder()
        .config("requirepass", "secret")
        .spawn()
        .unwrap();
    let wrong = format!("redis://:wrong@{}", t.addr());
    let o = bench(&["--url", &wrong, "--requests", "10", "--", "PING"]);
    assert_one_line_failure(&o, "AUTH failed: WRONGPASS");
    assert!(!o.stderr.contains("wrong"), "the password is not printed");
    let o = bench(&["--url", &url(t.addr()), "--requests", "10", "--", "PING"]);
    assert_one_line_failure(&o, "NOAUTH");
    let ok = format!("redis://:secret@{}", t.addr());
    let o = bench(&[
        "--url",
        &ok,
        "--requests",
        "100",
        "--rounds",
        "1",
        "--",
        "PING",
    ]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);

    let Some(redis) = RedisServer::start_with(&["--requirepass", "secret"]) else {
        return;
    };
    let o = bench(&[
        "--url",
        &format!("redis://:wrong@{}", redis.addr),
        "--requests",
        "10",
        "--",
        "PING",
    ]);
    assert_one_line_failure(&o, "AUTH failed: WRONGPASS");

    // A script error raised during the run: the run completes, the errors are counted by
    // type in the table and the JSON, and the exit says so in one line.
    let raising = tmp("raise.lua");
    std::fs::write(
        &raising,
        "if tonumber(ARGV[1]) % 2 == 0 then\n  return redis.error_reply('MYERR even call')\nend\nreturn 1\n",
    )
    .unwrap();
    let json = tmp("raise.json");
    let o = bench(&[
        "--script",
        raising.to_str().unwrap(),
        "--args",
        "{seq}",
        "--url",
        &format!("redis://:secret@{}", redis.addr),
        "--requests",
        "200",
        "--clients",
        "2",
        "--rounds",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_one_line_failure(&o, "error replies during the run: ");
    assert!(
        o.stderr.contains("(first: MYERR even call)"),
        "{}",
        o.stderr
    );
    assert!(o.stdout.contains("A MYERR: "), "{}", o.stdout);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let n = j["runs"][0]["errors"]["MYERR"].as_u64().unwrap();
    assert!(n > 0 && n < 200, "{n}");
}

/// `--profile` against Tumbler: where the server has the script profiler (`lua-profiler`,
/// TUMBLER.PROFILE), the deliberately slow line heads the per-line table; where it does not
/// yet, the server's error is printed and the run still completes.
#[test]
fn profile_puts_the_slow_line_first() {
    let t = TestServer::builder().spawn().unwrap();
    let has_profiler = !cmd(t.addr(), &["CONFIG", "GET", "lua-profiler"]).starts_with("*0");
    let script = tmp("slow.lua");
    std::fs::write(
        &script,
        "local n = 0\nfor i = 1, 3000 do n = n + i end\nredis.call('SET', KEYS[1], n)\nreturn n\n",
    )
    .unwrap();
    let o = bench(&[
        "--script",
        script.to_str().unwrap(),
        "--keys",
        "slow:{rand}",
        "--url",
        &url(t.addr()),
        "--requests",
        "200",
        "--clients",
        "2",
        "--rounds",
        "1",
        "--profile",
    ]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    if has_profiler {
        assert!(
            o.stdout.contains("CONFIG SET lua-profiler yes: OK"),
            "{}",
            o.stdout
        );
        let table: Vec<&str> = o
            .stdout
            .lines()
            .skip_while(|l| !l.contains("command_usec  %time  source"))
            .skip(1)
            .collect();
        assert!(
            table
                .first()
                .is_some_and(|l| l.contains("for i = 1, 3000 do")),
            "{}",
            o.stdout
        );
        assert!(o.stdout.contains("path lua: 200 calls"), "{}", o.stdout);
        // Switched off again after the run.
        assert!(cmd(t.addr(), &["CONFIG", "GET", "lua-profiler"]).contains("no"));
    } else {
        assert!(
            o.stdout.contains("CONFIG SET lua-profiler yes: ERR"),
            "{}",
            o.stdout
        );
    }
}

/// A file of the test certificates (tumbler_tests::certs: a CA, server and client
/// certificates from it for `localhost` and `127.0.0.1`, a `rogue` client certificate from
/// another CA, `rogue-ca.crt`).
fn cert_file(c: &Certs, name: &str) -> String {
    c.dir.join(name).to_str().unwrap().to_string()
}

/// The `runs` of a JSON report: every one against `url`, without errors.
fn tls_runs(json: &std::path::Path, url: &str, rounds: usize, requests: u64) {
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs.len(), rounds, "{j}");
    for (i, r) in runs.iter().enumerate() {
        assert_eq!(r["url"], url, "{r}");
        assert_eq!(r["round"], i as u64 + 1, "{r}");
        assert_eq!(r["requests"], requests, "{r}");
        assert_eq!(r["errors"], serde_json::json!({}), "{r}");
        assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["p50_us"].as_f64().unwrap() > 0.0, "{r}");
    }
}

#[test]
fn rediss_verifies_the_server_with_cacert_insecure_and_sni() {
    let f = Certs::new();
    let t = TestServer::builder()
        .tls(
            &cert_file(&f, "server.crt"),
            &cert_file(&f, "server.key"),
            None,
        )
        .spawn()
        .unwrap();
    let port = t.tls_addr().unwrap().port();
    let u = format!("rediss://127.0.0.1:{port}");
    let json = tmp("tls-verify.json");
    let j = json.to_str().unwrap();
    let ca = cert_file(&f, "ca.crt");
    let o = bench(&[
        "--url",
        &u,
        "--cacert",
        &ca,
        "--requests",
        "200",
        "--clients",
        "4",
        "--rounds",
        "2",
        "--json",
        j,
        "--",
        "PING",
    ]);
    assert_eq!(o.code, 0, "stdout {}\nstderr {}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains(&format!("A = {u} (tumbler ")),
        "{}",
        o.stdout
    );
    tls_runs(&json, &u, 2, 200);
    // The server saw the PINGs on its TLS port (the plaintext one was never used by the
    // bench): commandstats counts them.
    let stats = cmd(t.addr(), &["INFO", "commandstats"]);
    assert!(stats.contains("cmdstat_ping:calls="), "{stats}");

    // The name checked defaults to the URL's host; --sni names another one.
    let local = format!("rediss://localhost:{port}/0");
    let o = bench(&[
        "--url",
        &local,
        "--cacert",
        &ca,
        "--requests",
        "200",
        "--rounds",
        "1",
        "--json",
        j,
        "--",
        "SET",
        "k:{rand}",
        "v",
    ]);
    assert_eq!(o.code, 0, "stdout {}\nstderr {}", o.stdout, o.stderr);
    tls_runs(&json, &format!("rediss://localhost:{port}"), 1, 200);
    let o = bench(&[
        "--url",
        &u,
        "--cacert",
        &ca,
        "--sni",
        "localhost",
        "--requests",
        "200",
        "--rounds",
        "1",
        "--",
        "PING",
    ]);
    assert_eq!(o.code, 0, "stdout {}\nstderr {}", o.stdout, o.stderr);
    let o = bench(&[
        "--url",
        &u,
        "--cacert",
        &ca,
        "--sni",
        "db.example.com",
        "--requests",
        "200",
        "--",
        "PING",
    ]);
    assert_one_line_failure(&o, "TLS handshake failed: invalid peer certificate");
    // No --cacert: the system's bundle, which SSL_CERT_FILE names.
    let o = bench_env(
        &[
            "--url",
            &u,
            "--requests",
            "200",
            "--rounds",
            "1",
            "--",
            "PING",
        ],
        &[("SSL_CERT_FILE", &ca)],
    );
    assert_eq!(o.code, 0, "stdout {}\nstderr {}", o.stdout, o.stderr);
    let o = bench_env(
        &["--url", &u, "--requests", "200", "--", "PING"],
        &[("SSL_CERT_FILE", &cert_file(&f, "rogue-ca.crt"))],
    );
    assert_one_line_failure(&o, "UnknownIssuer");
    // --insecure: no CA at all.
    let o = bench(&[
        "--url",
        &u,
        "--insecure",
        "--requests",
        "200",
        "--rounds",
        "1",
        "--json",
        j,
        "--",
        "PING",
    ]);
    assert_eq!(o.code, 0, "stdout {}\nstderr {}", o.stdout, o.stderr);
    tls_runs(&json, &u, 1, 200);

    // A CA that did not sign the server's certificate.
    let other = cert_file(&f, "rogue-ca.crt");
    let o = bench(&[
        "--url",
        &u,
        "--cacert",
        &other,
        "--requests",
        "200",
        "--",
        "PING",
    ]);
    assert_one_line_failure(
        &o,
        "TLS handshake failed: invalid peer certificate: UnknownIssuer",
    );
    // Files that are not CA bundles.
    let missing = cert_file(&f, "nope.crt");
    let o = bench(&["--url", &u, "--cacert", &missing, "--", "PING"]);
    assert_one_line_failure(&o, "--cacert ");
    let o = bench(&[
        "--url",
        &u,
        "--cacert",
        &cert_file(&f, "server.key"),
        "--",
        "PING",
    ]);
    assert_one_line_failure(&o, "no PEM certificate");
    // TLS options without a rediss:// URL, and TLS against the plaintext port.
    let o = bench(&["--url", &url(t.addr()), "--cacert", &ca, "--", "PING"]);
    assert_one_line_failure(&o, "apply to rediss:// URLs");
    let plain = format!("rediss://127.0.0.1:{}", t.addr().port());
    let o = bench(&["--url", &plain, "--cacert", &ca, "--", "PING"]);
    assert_one_line_failure(&o, "TLS handshake failed");
}

#[test]
fn rediss_with_a_client_certificate() {
    let f = Certs::new();
    let t = TestServer::builder()
        .tls(
            &cert_file(&f, "server.crt"),
            &cert_file(&f, "server.key"),
            Some(&cert_file(&f, "ca.crt")),
        )
        .config("requirepass", "s3cret")
        .spawn()
        .unwrap();
    // AUTH and SELECT go over TLS too, on the bench's own connection and on every client's.
    let u = format!("rediss://:s3cret@{}/2", t.tls_addr().unwrap());
    let shown = format!("rediss://:***@{}/2", t.tls_addr().unwrap());
    let json = tmp("tls-mutual.json");
    let (ca, cert, key) = (
        cert_file(&f, "ca.crt"),
        cert_file(&f, "client.crt"),
        cert_file(&f, "client.key"),
    );
    let o = bench(&[
        "--url",
        &u,
        "--cacert",
        &ca,
        "--cert",
        &cert,
        "--key",
        &key,
        "--requests",
        "200",
        "--clients",
        "4",
        "--rounds",
        "2",
        "--json",
        json.to_str().unwrap(),
        "--",
        "PING",
    ]);
    assert_eq!(o.code, 0, "stdout {}\nstderr {}", o.stdout, o.stderr);
    tls_runs(&json, &shown, 2, 200);
    // Without a client certificate the server refuses the connection: one line.
    let o = bench(&[
        "--url",
        &u,
        "--cacert",
        &ca,
        "--requests",
        "200",
        "--",
        "PING",
    ]);
    assert_one_line_failure(&o, "the server requires a client certificate (give --cert");
    assert!(
        o.stderr.contains(&shown) && !o.stderr.contains("s3cret"),
        "{}",
        o.stderr
    );
    // A certificate from a CA the server does not trust.
    let o = bench(&[
        "--url",
        &u,
        "--cacert",
        &ca,
        "--cert",
        &cert_file(&f, "rogue.crt"),
        "--key",
        &cert_file(&f, "rogue.key"),
        "--",
        "PING",
    ]);
    assert_one_line_failure(&o, "the server refused the TLS connection (alert");
    // --cert without --key is a usage error.
    let o = bench(&["--url", &u, "--cacert", &ca, "--cert", &cert, "--", "PING"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
}
