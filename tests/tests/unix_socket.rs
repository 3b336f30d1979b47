//! The Unix socket listener (`unixsocket`, `unixsocketperm`): used like TCP by the Rust
//! client, `redis-cli -s`, redis-py's `unix_socket_path` and ioredis' `path`.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use tumbler::embed::TestServer;
use tumbler_client::{text, Client, Frame};
use tumbler_tests::clients::{self, require, run_scenario};
use tumbler_tests::tools;

fn sock_path(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("tumbler-{}-{tag}.sock", std::process::id()))
}

fn server(tag: &str) -> TestServer {
    let path = sock_path(tag);
    TestServer::builder()
        .config("unixsocket", path.to_str().unwrap())
        .config("unixsocketperm", "700")
        .spawn()
        .expect("start tumbler with a unix socket")
}

#[test]
fn rust_client_over_the_unix_socket_next_to_tcp() {
    let s = server("rust");
    let path = s.unix_path().unwrap().to_path_buf();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let mut u = Client::connect_unix(&path).unwrap();
    u.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut t = Client::connect(s.addr()).unwrap();
    assert_eq!(text(&u.cmd(&["SET", "k", "over-unix"]).unwrap()), "OK");
    assert_eq!(text(&t.cmd(&["GET", "k"]).unwrap()), "over-unix");
    // Blocking and pub/sub across transports.
    u.send(&["BLPOP", "q", "0"]).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    t.cmd(&["RPUSH", "q", "x"]).unwrap();
    match u.read().unwrap() {
        Frame::Array(v) => assert_eq!(text(&v[1]), "x"),
        f => panic!("{f:?}"),
    }
    let mut c = Client::connect(s.addr()).unwrap();
    let got: Vec<String> = match c.cmd(&["CONFIG", "GET", "unixsocket*"]).unwrap() {
        Frame::Array(v) => v.iter().map(text).collect(),
        f => panic!("{f:?}"),
    };
    assert_eq!(
        got,
        [
            "unixsocket",
            path.to_str().unwrap(),
            "unixsocketperm",
            "700"
        ]
    );
    drop(u);
    drop(s);
    // A clean stop removes the socket file, as redis-server does.
    assert!(!path.exists());
}

#[test]
fn redis_cli_dash_s() {
    let Some(cli) = tools::tool("redis-cli") else {
        return;
    };
    let s = server("cli");
    let path = s.unix_path().unwrap().to_str().unwrap().to_string();
    let o = Command::new(cli)
        .args(["-s", &path, "SET", "via", "socket"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "OK\n");
    let o = Command::new(cli)
        .args(["-s", &path, "GET", "via"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "socket\n");
}

#[test]
fn redis_py_unix_socket_path() {
    let Some(py) = require(
        clients::clients_dir().join("venv/bin/python"),
        "python venv",
    ) else {
        return;
    };
    let s = server("py");
    let mut cmd = Command::new(py);
    cmd.arg(clients::programs_dir().join("python/transports.py"))
        .args(["unix", s.unix_path().unwrap().to_str().unwrap()]);
    run_scenario(cmd, "unix", Duration::from_secs(60));
}

#[test]
fn ioredis_path_option() {
    let Some(node_dir) = require(
        clients::clients_dir().join("node/node_modules/ioredis"),
        "node client libraries",
    )
    .map(|p| p.parent().unwrap().parent().unwrap().to_path_buf()) else {
        return;
    };
    let s = server("node");
    let script = node_dir.join(format!("transports-{}-unix.mjs", std::process::id()));
    std::fs::copy(clients::programs_dir().join("node/transports.mjs"), &script).unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&script)
        .args(["unix", s.unix_path().unwrap().to_str().unwrap()]);
    run_scenario(cmd, "unix", Duration::from_secs(60));
    let _ = std::fs::remove_file(&script);
}
