//! The tumbler binary's process surface, as redis-server's: `daemonize` with `pidfile`
//! (the CI snippet), `logfile`, SIGTERM/SIGINT log lines, several `bind` addresses, the
//! Unix socket, and the TLS listener's port line and startup errors.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tumbler_tests::binary::{self, port_of, Proc};
use tumbler_tests::certs::Certs;
use tumbler_tests::{free_port, tools};

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tumbler-proc-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn alive(pid: u32) -> bool {
    Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn ping(port: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"PING\r\n").unwrap();
    let mut b = [0u8; 64];
    let n = s.read(&mut b).unwrap();
    String::from_utf8_lossy(&b[..n]).into_owned()
}

/// Done-when of issue 12, verbatim: the CI-style snippet works unchanged.
#[test]
fn ci_snippet_daemonize_pidfile_ping_kill() {
    if tools::tool("redis-cli").is_none() {
        return;
    }
    let dir = tmpdir("ci");
    let pidfile = dir.join("redis.pid");
    let port = free_port();
    let path = format!(
        "{}:{}",
        binary::path().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = r#"
set -e
tumbler --daemonize yes --pidfile "$P" --port "$X"
redis-cli -p "$X" ping
cat "$P"
kill $(cat "$P")
"#;
    let mut child = Command::new("bash")
        .args(["-c", script])
        .env("PATH", path)
        .env("P", &pidfile)
        .env("X", port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the CI snippet hung");
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let lines: Vec<&str> = out.lines().collect();
    let at = lines.iter().position(|l| *l == "PONG").expect("PONG");
    let pid: u32 = lines[at + 1].trim().parse().unwrap();
    // The daemon is not the process bash started, and it exits cleanly on the kill,
    // removing its pid file.
    wait_until("the daemon to exit", || !alive(pid));
    wait_until("the pid file to go", || !pidfile.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn daemonized_server_logs_to_its_logfile_and_reports_its_port() {
    let dir = tmpdir("daemon-log");
    let pidfile = dir.join("t.pid");
    let log = dir.join("t.log");
    let o = binary::command()
        .args(["--daemonize", "yes", "--port", "0", "--pidfile"])
        .arg(&pidfile)
        .arg("--logfile")
        .arg(&log)
        .output()
        .unwrap();
    assert!(o.status.success());
    // `--port 0` still reports the port it picked, before the parent returns.
    let out = String::from_utf8_lossy(&o.stdout);
    let port: u16 = out.trim().rsplit_once("port=").unwrap().1.parse().unwrap();
    assert_eq!(ping(port), "+PONG\r\n");
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(pid));
    assert!(Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    wait_until("the daemon to exit", || !alive(pid));
    let text = std::fs::read_to_string(&log).unwrap();
    for line in [
        "Ready to accept connections tcp",
        "Received SIGINT scheduling shutdown...",
        "User requested shutdown...",
        "Removing the pid file.",
        "Redis is now ready to exit, bye bye...",
    ] {
        assert!(text.contains(line), "{line:?} missing from\n{text}");
    }
    assert!(!pidfile.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A foreground tumbler; returns it and its listener lines (`tumbler listening on ...`).
fn start(args: &[&str]) -> (Proc, Vec<String>) {
    let mut cmd = binary::command();
    cmd.args(args);
    let p = Proc::spawn(cmd);
    let lines = p.startup_lines();
    (p, lines)
}

#[test]
fn bind_several_addresses_including_optional_ones() {
    // 192.0.2.1 (TEST-NET) is on no interface: optional, so skipped; ::1 where IPv6 is.
    let (child, lines) = start(&["--bind", "127.0.0.1", "-::1", "-192.0.2.1", "--port", "0"]);
    assert!(!lines.is_empty() && lines.len() <= 2, "{lines:?}");
    let port = port_of(&lines[0], "port=");
    assert_eq!(ping(port), "+PONG\r\n");
    if lines.len() == 2 {
        assert!(lines[1].contains("[::1]"), "{lines:?}");
        assert_eq!(port_of(&lines[1], "port="), port);
        let mut s = TcpStream::connect(("::1", port)).unwrap();
        s.write_all(b"CONFIG GET bind\r\n").unwrap();
        let mut b = [0u8; 256];
        let n = s.read(&mut b).unwrap();
        assert!(String::from_utf8_lossy(&b[..n]).contains("127.0.0.1 -::1 -192.0.2.1"));
    }
    child.stop();
    // A required address that is not there fails at once, with a message.
    let o = binary::command()
        .args(["--bind", "192.0.2.1", "--port", "0"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("192.0.2.1"));
}

#[test]
fn unixsocket_with_redis_cli_dash_s_and_its_file_removed_on_exit() {
    let dir = tmpdir("unix");
    let sock = dir.join("tumbler.sock");
    let (child, lines) = start(&[
        "--port",
        "0",
        "--unixsocket",
        sock.to_str().unwrap(),
        "--unixsocketperm",
        "770",
    ]);
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with(&format!("unixsocket={}", sock.display()))),
        "{lines:?}"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777,
        0o770
    );
    if tools::tool("redis-cli").is_some() {
        let o = Command::new("redis-cli")
            .args(["-s", sock.to_str().unwrap(), "ping"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout), "PONG\n");
    }
    let log = child.stop();
    assert!(log.contains("Removing the unix socket file."), "{log}");
    assert!(!sock.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tls_port_line_tls_only_and_redis_cli_tls() {
    let certs = Certs::new();
    let (c, k, ca) = (
        Certs::path(&certs.server_cert),
        Certs::path(&certs.server_key),
        Certs::path(&certs.ca),
    );
    let (child, lines) = start(&[
        "--port",
        "0",
        "--tls-port",
        "0",
        "--tls-cert-file",
        c,
        "--tls-key-file",
        k,
        "--tls-ca-cert-file",
        ca,
        "--tls-auth-clients",
        "no",
    ]);
    // `port 0` given with `tls-port`: TLS only (Redis' rule), so just the TLS line.
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("tumbler listening on 127.0.0.1:"),
        "{lines:?}"
    );
    let tls_port = port_of(&lines[0], "tls-port=");
    if tools::tool("redis-cli").is_some() {
        let o = Command::new("redis-cli")
            .args(["--tls", "--cacert", ca, "-p", &tls_port.to_string(), "ping"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout), "PONG\n", "{o:?}");
    }
    let log = child.stop();
    assert!(log.contains("Ready to accept connections tls"), "{log}");

    // Next to a plaintext port: one line each, plaintext first.
    let plain = free_port();
    let (child, lines) = start(&[
        "--port",
        &plain.to_string(),
        "--tls-port",
        "0",
        "--tls-cert-file",
        c,
        "--tls-key-file",
        k,
        "--tls-auth-clients",
        "no",
        "--tls-ciphers",
        "HIGH:!aNULL",
    ]);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(port_of(&lines[0], "port="), plain);
    assert!(port_of(&lines[1], "tls-port=") != 0);
    assert_eq!(ping(plain), "+PONG\r\n");
    let log = child.stop();
    // OpenSSL cipher rules rustls cannot apply: one clear warning each.
    assert!(
        log.contains("tls-ciphers: 'HIGH' is an OpenSSL cipher rule"),
        "{log}"
    );
}

#[test]
fn tls_startup_errors_are_clear_and_fatal() {
    let certs = Certs::new();
    let (c, k) = (
        Certs::path(&certs.server_cert),
        Certs::path(&certs.server_key),
    );
    for (args, want) in [
        (vec!["--tls-port", "0"], "No tls-cert-file configured!"),
        (
            vec!["--tls-port", "0", "--tls-cert-file", c, "--tls-key-file", k],
            "Either tls-ca-cert-file or tls-ca-cert-dir must be specified",
        ),
        (
            vec![
                "--tls-port",
                "0",
                "--tls-cert-file",
                "/nonexistent.crt",
                "--tls-key-file",
                k,
                "--tls-auth-clients",
                "no",
            ],
            "Failed to load certificate: /nonexistent.crt",
        ),
        (
            vec![
                "--tls-port",
                "0",
                "--tls-cert-file",
                c,
                "--tls-key-file",
                k,
                "--tls-auth-clients",
                "no",
                "--tls-key-file-pass",
                "x",
            ],
            "tls-key-file-pass",
        ),
        (
            vec![
                "--tls-port",
                "0",
                "--tls-cert-file",
                c,
                "--tls-key-file",
                k,
                "--tls-auth-clients",
                "no",
                "--tls-protocols",
                "TLSv1.1",
            ],
            "none of the protocols is supported by rustls",
        ),
    ] {
        let mut all = vec!["--port", "0"];
        all.extend(args);
        let o = binary::command().args(&all).output().unwrap();
        // Redis logs why it cannot start (to stdout without a logfile).
        let err = String::from_utf8_lossy(&o.stdout) + String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{all:?} started");
        assert!(err.contains(want), "{all:?}: {err}");
    }
}
