//! `metrics-port` from the three places a directive can come from: `--metrics-port`, a
//! redis.conf file and `TUMBLER_METRICS_PORT`, on the binary itself. The endpoint's
//! contents are tested in tests/tests/metrics.rs.

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tumbler_tests::binary;

/// Starts the binary and returns it with the addresses from its two stdout lines.
fn start(cmd: &mut Command) -> (Child, String, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run tumbler");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let main = binary::tumbler_line(&mut out);
    let metrics = binary::tumbler_line(&mut out);
    assert!(main.starts_with("tumbler listening on "), "{main:?}");
    assert!(
        metrics.starts_with("tumbler metrics on http://"),
        "{metrics:?}"
    );
    let host = metrics
        .trim()
        .strip_prefix("tumbler metrics on http://")
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    (child, main, host)
}

fn scrape(host: &str) -> String {
    let mut s = TcpStream::connect(host).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut r = String::new();
    s.read_to_string(&mut r).unwrap();
    r
}

fn check(mut cmd: Command) {
    let (mut child, main, host) = start(&mut cmd);
    assert!(
        host.starts_with("127.0.0.1:"),
        "loopback like the main port: {host}"
    );
    assert!(main.contains("127.0.0.1:"), "{main}");
    let r = scrape(&host);
    assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
    assert!(r.contains("# TYPE tumbler_lock_grants counter"), "{r}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn from_the_command_line() {
    let mut c = binary::command();
    c.args(["--port", "0", "--metrics-port", "0"]);
    check(c);
}

#[test]
fn from_a_config_file() {
    let dir = std::env::temp_dir().join(format!("tumbler-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("redis.conf");
    std::fs::write(&conf, "port 0\nmetrics-port 0\n").unwrap();
    let mut c = binary::command();
    c.arg(&conf);
    check(c);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn from_the_environment() {
    let mut c = binary::command();
    c.args(["--port", "0"]).env("TUMBLER_METRICS_PORT", "0");
    check(c);
}

#[test]
fn a_bad_value_is_refused() {
    let out = binary::command()
        .args(["--port", "0", "--metrics-port", "70000"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("metrics-port"));
}
