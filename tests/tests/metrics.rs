//! `--metrics-port`: Prometheus metrics. The scenario in tests/clients/python/metrics.py
//! scrapes with Prometheus' own Python parser while locks are contended, released, expire
//! and fence stale tokens, and checks every counter moves as the scenario dictates.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use tumbler::embed::TestServer;
use tumbler_tests::clients::{self, require, run_scenario};

fn server() -> TestServer {
    TestServer::builder()
        .time_control(true)
        .config("metrics-port", "0")
        .spawn()
        .expect("start tumbler")
}

fn http_get(addr: std::net::SocketAddr, req: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn lock_counters_move_as_a_contention_scenario_expects() {
    let Some(python) = require(
        clients::clients_dir().join("venv/bin/python"),
        "python venv",
    ) else {
        return;
    };
    let srv = server();
    let maddr = srv.metrics_addr().expect("metrics listening");
    let mut cmd = Command::new(python);
    cmd.arg(clients::programs_dir().join("python/metrics.py"))
        .arg(srv.port().to_string())
        .arg(maddr.port().to_string());
    run_scenario(cmd, "metrics", Duration::from_secs(120));
}

#[test]
fn serves_metrics_only_at_its_path_and_only_when_configured() {
    let srv = server();
    let maddr = srv.metrics_addr().unwrap();
    assert!(maddr.ip().is_loopback(), "binds like the main port");
    let ok = http_get(maddr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
    assert!(ok.contains("\r\nContent-Type: application/openmetrics-text"));
    assert!(ok.trim_end().ends_with("# EOF"), "complete exposition");
    let nf = http_get(maddr, "GET / HTTP/1.1\r\n\r\n");
    assert!(nf.starts_with("HTTP/1.1 404"), "{nf}");
    let post = http_get(maddr, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    assert!(post.starts_with("HTTP/1.1 405"), "{post}");
    // A client that sends nothing and hangs up does not disturb the server.
    drop(TcpStream::connect(maddr).unwrap());
    let again = http_get(maddr, "GET /metrics?x=1 HTTP/1.0\r\n\r\n");
    assert!(again.starts_with("HTTP/1.1 200 OK"));

    let off = TestServer::builder().spawn().unwrap();
    assert_eq!(off.metrics_addr(), None, "off by default");
    let mut c = tumbler_tests::Raw::connect(off.addr());
    assert_eq!(
        c.cmd_str(&["CONFIG", "GET", "metrics-port"]),
        "*2\r\n$12\r\nmetrics-port\r\n$2\r\n-1\r\n"
    );
}
