//! TLS end to end: the embedding API starts a TLS server with certificates generated per
//! test (tests/src/certs.rs); the Rust client, redis-cli, redis-py and ioredis connect with
//! and without client certificates; every feature (pub/sub, blocking commands, native lock
//! waits, MONITOR, time control) runs over TLS; bad certificates and plaintext clients get
//! a disconnect, never a hang; CONFIG SET reloads certificates; and redis-server with TLS
//! (Debian's is built with it) is the reference for the error texts.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tumbler::embed::TestServer;
use tumbler_client::{text, Client, Frame};
use tumbler_tests::certs::Certs;
use tumbler_tests::clients::{self, require, run_scenario};
use tumbler_tests::{free_port, tools};

fn p(path: &std::path::Path) -> &str {
    path.to_str().unwrap()
}

/// A TLS server (next to a plaintext port) requiring client certificates from the test CA.
fn mtls_server(c: &Certs) -> TestServer {
    TestServer::builder()
        .tls(p(&c.server_cert), p(&c.server_key), Some(p(&c.ca)))
        .time_control(true)
        .spawn()
        .expect("start tumbler with TLS")
}

fn tls_client(s: &TestServer, cfg: Arc<rustls::ClientConfig>) -> Client {
    let mut c = Client::connect_tls(s.tls_addr().unwrap(), "localhost", cfg).expect("TLS connect");
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c
}

fn bulk(f: &Frame) -> String {
    text(f)
}

#[test]
fn every_feature_works_over_tls_with_a_client_certificate() {
    let certs = Certs::new();
    let s = mtls_server(&certs);
    let cfg = certs.client_config(true, false);
    let mut a = tls_client(&s, cfg.clone());
    let mut b = tls_client(&s, cfg.clone());

    assert_eq!(bulk(&a.cmd(&["PING"]).unwrap()), "PONG");
    a.cmd(&["SET", "k", "v"]).unwrap();
    assert_eq!(bulk(&b.cmd(&["GET", "k"]).unwrap()), "v");
    // A large value crosses many TLS records both ways.
    let big = "x".repeat(1 << 20);
    a.cmd(&["SET", "big", &big]).unwrap();
    assert_eq!(bulk(&b.cmd(&["GET", "big"]).unwrap()).len(), 1 << 20);

    // Pub/sub.
    let mut sub = tls_client(&s, cfg.clone());
    sub.send(&["SUBSCRIBE", "news"]).unwrap();
    match sub.read().unwrap() {
        Frame::Array(v) => assert_eq!(bulk(&v[0]), "subscribe"),
        f => panic!("{f:?}"),
    }
    assert_eq!(bulk(&a.cmd(&["PUBLISH", "news", "hello"]).unwrap()), "1");
    match sub.read().unwrap() {
        Frame::Array(v) => assert_eq!(bulk(&v[2]), "hello"),
        f => panic!("{f:?}"),
    }

    // A blocking command woken by another TLS client.
    b.send(&["BLPOP", "queue", "0"]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while bulk(&a.cmd(&["CLIENT", "LIST"]).unwrap())
        .matches("cmd=blpop")
        .count()
        == 0
    {
        assert!(Instant::now() < deadline, "BLPOP never blocked");
        std::thread::sleep(Duration::from_millis(5));
    }
    a.cmd(&["LPUSH", "queue", "job"]).unwrap();
    match b.read().unwrap() {
        Frame::Array(v) => assert_eq!(bulk(&v[1]), "job"),
        f => panic!("{f:?}"),
    }

    // A native lock wait, granted when the holder releases.
    let t = a
        .lock_acquire("res", "owner-a", 30_000, None, false)
        .unwrap();
    assert!(t.is_some());
    b.send(&["LOCK.ACQUIRE", "res", "owner-b", "30000", "WAIT", "0"])
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(a.lock_release("res", "owner-a").unwrap(), 0);
    let granted = b.read().unwrap();
    assert!(matches!(granted, Frame::Integer(n) if n > 0), "{granted:?}");

    // MONITOR.
    let mut mon = tls_client(&s, cfg.clone());
    assert_eq!(bulk(&mon.cmd(&["MONITOR"]).unwrap()), "OK");
    a.cmd(&["SET", "watched", "1"]).unwrap();
    let line = bulk(&mon.read().unwrap());
    assert!(line.ends_with("\"SET\" \"watched\" \"1\""), "{line}");

    // Time control over TLS: a lease lapses without sleeping.
    a.cmd(&["SET", "lease", "x", "PX", "30000"]).unwrap();
    a.cmd(&["TUMBLER.TIME", "ADVANCE", "30001"]).unwrap();
    assert_eq!(b.cmd(&["GET", "lease"]).unwrap(), Frame::Null);
}

/// Reads until the server closes the connection or fails it; panics on a hang.
fn expect_refused(mut c: Client) -> String {
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    match c.cmd(&["PING"]) {
        Ok(f) => panic!("a refused client got a reply: {f:?}"),
        Err(tumbler_client::Error::Io(e)) => {
            assert!(
                !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
                "the server left a refused client hanging: {e}"
            );
            e.to_string()
        }
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_missing_or_untrusted_client_certificate_is_refused_without_a_hang() {
    let certs = Certs::new();
    let s = mtls_server(&certs);
    // TLS 1.3: the client finishes its side of the handshake before the server checks the
    // certificate, so the refusal shows on the first read.
    let no_cert = Client::connect_tls(
        s.tls_addr().unwrap(),
        "localhost",
        certs.client_config(false, false),
    );
    if let Ok(c) = no_cert {
        let e = expect_refused(c);
        assert!(
            e.contains("CertificateRequired")
                || e.contains("certificate")
                || e.contains("eof")
                || e.contains("reset"),
            "{e}"
        );
    }
    let rogue = Client::connect_tls(
        s.tls_addr().unwrap(),
        "localhost",
        certs.client_config(false, true),
    );
    if let Ok(c) = rogue {
        expect_refused(c);
    }
    // The server is fine afterwards.
    let mut ok = tls_client(&s, certs.client_config(true, false));
    assert_eq!(bulk(&ok.cmd(&["PING"]).unwrap()), "PONG");
}

#[test]
fn optional_client_certificates_and_tls_only() {
    let certs = Certs::new();
    let s = TestServer::builder()
        .tls(
            p(&certs.server_cert),
            p(&certs.server_key),
            Some(p(&certs.ca)),
        )
        .config("tls-auth-clients", "optional")
        .config("port", "0")
        .spawn()
        .unwrap();
    // `port 0` given with a tls-port: TLS only, as in Redis.
    assert_eq!(s.addr(), s.tls_addr().unwrap());
    for with_cert in [false, true] {
        let mut c = tls_client(&s, certs.client_config(with_cert, false));
        assert_eq!(bulk(&c.cmd(&["PING"]).unwrap()), "PONG");
    }
    // A certificate from an untrusted CA is still refused.
    if let Ok(c) = Client::connect_tls(
        s.tls_addr().unwrap(),
        "localhost",
        certs.client_config(false, true),
    ) {
        expect_refused(c);
    }
    let mut c = tls_client(&s, certs.client_config(false, false));
    let info = bulk(&c.cmd(&["INFO", "server"]).unwrap());
    assert!(info.contains("tcp_port:0"), "{info}");
}

/// A plaintext PING on a TLS port: never a RESP reply, at most a TLS alert record (content
/// type 21), then the connection closes; a hang fails.
fn expect_plaintext_disconnected(addr: std::net::SocketAddr) {
    let mut raw = TcpStream::connect(addr).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    raw.write_all(b"PING\r\n").unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 512];
    loop {
        match raw.read(&mut b) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&b[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("plaintext client left hanging: {e}"),
        }
    }
    assert!(got.is_empty() || got[0] == 21, "{got:?}");
}

#[test]
fn a_plaintext_client_on_the_tls_port_is_disconnected() {
    let certs = Certs::new();
    let s = mtls_server(&certs);
    expect_plaintext_disconnected(s.tls_addr().unwrap());
    // The plaintext port still serves plaintext.
    let mut plain = Client::connect(s.addr()).unwrap();
    assert_eq!(bulk(&plain.cmd(&["PING"]).unwrap()), "PONG");
}

#[test]
fn config_get_shows_tls_parameters_and_set_reloads_the_certificate() {
    let certs = Certs::new();
    let s = TestServer::builder()
        .tls(p(&certs.server_cert), p(&certs.server_key), None)
        .spawn()
        .unwrap();
    let mut plain = Client::connect(s.addr()).unwrap();
    let get = |c: &mut Client, name: &str| match c.cmd(&["CONFIG", "GET", name]).unwrap() {
        Frame::Array(v) => bulk(&v[1]),
        f => panic!("{f:?}"),
    };
    // As given: 0, a free port (the listener's port is in `tls_addr`).
    assert_eq!(get(&mut plain, "tls-port"), "0");
    assert_eq!(get(&mut plain, "tls-cert-file"), p(&certs.server_cert));
    assert_eq!(get(&mut plain, "tls-auth-clients"), "no");
    assert_eq!(get(&mut plain, "tls-session-caching"), "yes");
    assert_eq!(get(&mut plain, "tls-protocols"), "");

    let peer_cn = || -> String {
        let cfg = certs.client_config(false, false);
        let mut conn = rustls::ClientConnection::new(cfg, "localhost".try_into().unwrap()).unwrap();
        let mut sock = TcpStream::connect(s.tls_addr().unwrap()).unwrap();
        while conn.is_handshaking() {
            conn.complete_io(&mut sock).unwrap();
        }
        let der = conn.peer_certificates().unwrap()[0].to_vec();
        // The CN is stored as UTF8String/PrintableString bytes in the DER; find the name.
        ["server", "reloaded"]
            .iter()
            .find(|n| der.windows(n.len()).any(|w| w == n.as_bytes()))
            .unwrap()
            .to_string()
    };
    assert_eq!(peer_cn(), "server");
    let (c2, k2) = certs.another_server_cert("reloaded");
    let r = plain
        .cmd(&[
            "CONFIG",
            "SET",
            "tls-cert-file",
            p(&c2),
            "tls-key-file",
            p(&k2),
        ])
        .unwrap();
    assert_eq!(bulk(&r), "OK");
    assert_eq!(peer_cn(), "reloaded");

    // A bad file: Redis' error, and the running configuration is kept.
    let e = plain
        .cmd(&["CONFIG", "SET", "tls-cert-file", "/nonexistent/cert.pem"])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "server: ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs."
    );
    assert_eq!(get(&mut plain, "tls-cert-file"), p(&c2));
    assert_eq!(peer_cn(), "reloaded");
    let e = plain
        .cmd(&["CONFIG", "SET", "tls-protocols", "TLSv1.2 bogus"])
        .unwrap_err();
    assert!(
        e.to_string().contains("Unable to update TLS configuration"),
        "{e}"
    );
    // TLS 1.2 only still serves clients (rustls negotiates 1.2).
    assert_eq!(
        bulk(
            &plain
                .cmd(&["CONFIG", "SET", "tls-protocols", "TLSv1.2"])
                .unwrap()
        ),
        "OK"
    );
    let mut c = tls_client(&s, certs.client_config(false, false));
    assert_eq!(bulk(&c.cmd(&["PING"]).unwrap()), "PONG");
}

/// The same CONFIG SET errors against redis-server built with TLS.
#[test]
fn tls_config_errors_match_redis_server() {
    let certs = Certs::new();
    let Some(redis) = tumbler_tests::RedisServer::start_with(&[
        "--tls-port",
        &free_port().to_string(),
        "--tls-cert-file",
        p(&certs.server_cert),
        "--tls-key-file",
        p(&certs.server_key),
        "--tls-auth-clients",
        "no",
    ]) else {
        return;
    };
    let s = TestServer::builder()
        .tls(p(&certs.server_cert), p(&certs.server_key), None)
        .spawn()
        .unwrap();
    for cmd in [
        vec!["CONFIG", "SET", "tls-cert-file", "/nonexistent/cert.pem"],
        vec!["CONFIG", "SET", "tls-protocols", "TLSv1.2 bogus"],
        vec!["CONFIG", "SET", "tls-auth-clients", "maybe"],
        vec!["CONFIG", "SET", "tls-auth-clients", "yes"],
        vec!["CONFIG", "GET", "tls-auth-clients"],
        vec!["CONFIG", "GET", "tls-session-cache-size"],
        vec!["CONFIG", "SET", "tls-session-caching", "no"],
        vec!["CONFIG", "GET", "tls-session-caching"],
        vec!["CONFIG", "SET", "tls-prefer-server-ciphers", "yes"],
        vec!["CONFIG", "GET", "tls-prefer-server-ciphers"],
    ] {
        let mut t = tumbler_tests::Raw::connect(s.addr());
        let mut r = redis.raw();
        t.send(&cmd);
        r.send(&cmd);
        assert_eq!(
            String::from_utf8_lossy(&t.read_reply()),
            String::from_utf8_lossy(&r.read_reply()),
            "{cmd:?}"
        );
    }
}

fn redis_cli() -> Option<&'static str> {
    tools::tool("redis-cli")
}

fn run_bounded(cmd: &mut Command) -> std::process::Output {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{cmd:?} hung");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn redis_cli_tls_with_and_without_client_certificates() {
    let Some(cli) = redis_cli() else { return };
    let certs = Certs::new();
    let s = mtls_server(&certs);
    let port = s.tls_addr().unwrap().port().to_string();
    let o = run_bounded(Command::new(cli).args([
        "--tls",
        "--cacert",
        p(&certs.ca),
        "--cert",
        p(&certs.client_cert),
        "--key",
        p(&certs.client_key),
        "-p",
        &port,
        "SET",
        "via",
        "redis-cli",
    ]));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "OK\n", "{o:?}");
    // No client certificate while the server requires one: an error, not a hang.
    let o = run_bounded(Command::new(cli).args([
        "--tls",
        "--cacert",
        p(&certs.ca),
        "-p",
        &port,
        "PING",
    ]));
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(!out.contains("PONG"), "{out}");

    // tls-auth-clients no: redis-cli needs no certificate.
    let s2 = TestServer::builder()
        .tls(p(&certs.server_cert), p(&certs.server_key), None)
        .spawn()
        .unwrap();
    let o = run_bounded(Command::new(cli).args([
        "--tls",
        "--cacert",
        p(&certs.ca),
        "-p",
        &s2.tls_addr().unwrap().port().to_string(),
        "PING",
    ]));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "PONG\n", "{o:?}");
    // A server certificate the client does not trust: redis-cli refuses it.
    let o = run_bounded(Command::new(cli).args([
        "--tls",
        "--cacert",
        p(&certs.rogue_cert),
        "-p",
        &s2.tls_addr().unwrap().port().to_string(),
        "PING",
    ]));
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(!out.contains("PONG"), "{out}");
}

fn python() -> Option<std::path::PathBuf> {
    require(
        clients::clients_dir().join("venv/bin/python"),
        "python venv",
    )
}

#[test]
fn redis_py_with_ssl_true() {
    let Some(py) = python() else { return };
    let certs = Certs::new();
    let s = mtls_server(&certs);
    let mut cmd = Command::new(py);
    cmd.arg(clients::programs_dir().join("python/transports.py"))
        .args(["tls", &s.tls_addr().unwrap().port().to_string()])
        .args([p(&certs.ca), p(&certs.client_cert), p(&certs.client_key)]);
    run_scenario(cmd, "tls", Duration::from_secs(60));
}

/// Runs tests/clients/node/transports.mjs from next to node_modules (ES modules resolve
/// packages from the script's own directory).
pub fn node_transports(args: &[&str]) {
    let Some(node_dir) = require(
        clients::clients_dir().join("node/node_modules/ioredis"),
        "node client libraries",
    )
    .map(|p| p.parent().unwrap().parent().unwrap().to_path_buf()) else {
        return;
    };
    let script = node_dir.join(format!("transports-{}-{}.mjs", std::process::id(), args[0]));
    std::fs::copy(clients::programs_dir().join("node/transports.mjs"), &script).unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&script).args(args);
    run_scenario(cmd, args[0], Duration::from_secs(60));
    let _ = std::fs::remove_file(&script);
}

#[test]
fn ioredis_with_tls_options() {
    let certs = Certs::new();
    let s = mtls_server(&certs);
    node_transports(&[
        "tls",
        &s.tls_addr().unwrap().port().to_string(),
        p(&certs.ca),
        p(&certs.client_cert),
        p(&certs.client_key),
    ]);
}

/// With `--nodes`, every node's port speaks TLS when TLS is configured (as a Redis Cluster
/// started with `port 0 tls-port P tls-cluster yes`), and CLUSTER SLOTS names those ports;
/// before, the `tls-*` directives were silently ignored and the nodes spoke plaintext.
#[test]
fn nodes_and_cluster_serve_tls_on_every_node() {
    let certs = Certs::new();
    let s = TestServer::builder()
        .tls(
            p(&certs.server_cert),
            p(&certs.server_key),
            Some(p(&certs.ca)),
        )
        .nodes(3)
        .cluster(0)
        .spawn()
        .expect("start a TLS cluster");
    let cfg = certs.client_config(true, false);
    let ports: Vec<u16> = s.addrs().iter().map(|a| a.port()).collect();
    assert_eq!(ports.len(), 3);
    for a in s.addrs() {
        let mut c = Client::connect_tls(*a, "localhost", cfg.clone()).expect("TLS connect");
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert_eq!(bulk(&c.cmd(&["PING"]).unwrap()), "PONG");
        let slots = format!("{:?}", c.cmd(&["CLUSTER", "SLOTS"]).unwrap());
        for port in &ports {
            assert!(slots.contains(&port.to_string()), "{slots}");
        }
        // A plaintext client on a node's port gets no reply, only a close.
        expect_plaintext_disconnected(*a);
    }
}
