//! The `tumbler` binary serving several nodes: `--nodes N`, `nodes` in redis.conf,
//! `TUMBLER_NODES`, one port line per node, `--cluster-enabled yes` with `redis-cli -c`
//! following redirects across the nodes, and SHUTDOWN on any node stopping them all.

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tumbler_tests::binary;
use tumbler_tests::tools;

/// A tumbler serving several nodes, and their ports.
struct Proc {
    p: binary::Proc,
    ports: Vec<u16>,
}

impl Proc {
    /// Starts tumbler and reads `n` port lines `tumbler listening on ADDR port=P node=I`.
    fn start(args: &[&str], env: &[(&str, &str)], n: usize) -> Proc {
        let mut cmd = binary::command();
        cmd.args(args).envs(env.iter().copied());
        let p = binary::Proc::spawn(cmd);
        let mut ports = Vec::new();
        for i in 0..n {
            let line = p
                .next_line(Duration::from_secs(10))
                .unwrap_or_else(|| panic!("port line {i} missing; output: {}", p.log()));
            assert!(
                line.starts_with("tumbler listening on 127.0.0.1:"),
                "{line:?}"
            );
            let rest = line.split_once(" port=").expect("port=").1;
            let (port, node) = rest.split_once(" node=").expect("node=");
            assert_eq!(node, i.to_string(), "{line:?}");
            assert!(line.starts_with(&format!("tumbler listening on 127.0.0.1:{port} ")));
            ports.push(port.parse().unwrap());
        }
        Proc { p, ports }
    }

    fn cmd(&self, node: usize, line: &str) -> String {
        binary::Proc::cmd_on(self.ports[node], line)
    }
}

#[test]
fn nodes_with_port_zero_print_one_line_each() {
    let p = Proc::start(&["--nodes", "3", "--port", "0"], &[], 3);
    assert_eq!(p.ports.len(), 3);
    p.cmd(0, "SET k 0");
    assert_eq!(p.cmd(1, "GET k"), "$-1\r\n");
    assert_eq!(p.cmd(2, "PING"), "+PONG\r\n");
    assert!(p
        .cmd(1, "INFO server")
        .contains(&format!("tcp_port:{}", p.ports[1])));
}

#[test]
fn nodes_from_the_environment_and_a_config_file() {
    let p = Proc::start(&["--port", "0"], &[("TUMBLER_NODES", "2")], 2);
    assert_eq!(p.cmd(1, "PING"), "+PONG\r\n");
    let dir = std::env::temp_dir().join(format!("tumbler-nodes-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("redis.conf");
    std::fs::write(&conf, "port 0\nnodes 2\ncluster-enabled yes\n").unwrap();
    let p = Proc::start(&[conf.to_str().unwrap()], &[], 2);
    assert!(p.cmd(0, "CLUSTER INFO").contains("cluster_size:2"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fixed_ports_are_consecutive() {
    // Find three consecutive free ports (bounded tries; others may grab ports meanwhile).
    for _ in 0..20 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = l.local_addr().unwrap().port();
        drop(l);
        if base > 65000 {
            continue;
        }
        let mut child = binary::command()
            .args(["--nodes", "3", "--port", &base.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut lines = Vec::new();
        for _ in 0..3 {
            let l = binary::tumbler_line(&mut out);
            if l.is_empty() {
                break;
            }
            lines.push(l);
        }
        let _ = child.kill();
        let _ = child.wait();
        if lines.len() == 3 {
            for (i, l) in lines.iter().enumerate() {
                assert!(
                    l.contains(&format!("port={} node={i}", base + i as u16)),
                    "{l}"
                );
            }
            return;
        }
    }
    panic!("never found three consecutive free ports");
}

#[test]
fn redis_cli_follows_redirects_across_the_cluster() {
    let Some(redis_cli) = tools::tool("redis-cli") else {
        return;
    };
    let p = Proc::start(
        &["--cluster-enabled", "yes", "--nodes", "3", "--port", "0"],
        &[],
        3,
    );
    let cli = |port: u16, args: &[&str]| {
        let o = Command::new("timeout")
            .arg("20")
            .arg(redis_cli)
            .args(["-c", "-p", &port.to_string()])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // foo is in slot 12182 (node 2), bar in 5061 (node 0), hello in 866 (node 0).
    assert!(p
        .cmd(0, "GET foo")
        .starts_with(&format!("-MOVED 12182 127.0.0.1:{}", p.ports[2])));
    assert_eq!(cli(p.ports[0], &["SET", "foo", "1"]), "OK\n");
    assert_eq!(cli(p.ports[1], &["GET", "foo"]), "1\n");
    assert_eq!(cli(p.ports[2], &["SET", "bar", "2"]), "OK\n");
    assert_eq!(cli(p.ports[1], &["GET", "bar"]), "2\n");
    let o = Command::new("timeout")
        .arg("20")
        .arg(redis_cli)
        .args(["--cluster", "check", &format!("127.0.0.1:{}", p.ports[0])])
        .output()
        .unwrap();
    let check = String::from_utf8_lossy(&o.stdout);
    assert!(check.contains("[OK] All 16384 slots covered."), "{check}");
}

#[test]
fn shutdown_on_any_node_stops_the_process() {
    let mut p = Proc::start(&["--nodes", "2", "--port", "0"], &[], 2);
    let mut s = TcpStream::connect(("127.0.0.1", p.ports[1])).unwrap();
    s.write_all(b"SHUTDOWN NOSAVE\r\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(st) = p.p.child.try_wait().unwrap() {
            assert!(st.success());
            return;
        }
        assert!(Instant::now() < deadline, "tumbler did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// TUMBLER.NODE DOWN has closed the node's port, and UP has opened it again, by the time
/// they reply: a test's next connect sees the new state, with no sleep (the Go and Java
/// packages used to poll for it).
#[test]
fn node_down_and_up_take_effect_before_the_reply() {
    let p = Proc::start(
        &[
            "--port",
            "0",
            "--nodes",
            "2",
            "--enable-test-control",
            "yes",
        ],
        &[],
        2,
    );
    let port = p.ports[1];
    for _ in 0..30 {
        assert_eq!(p.cmd(0, "TUMBLER.NODE DOWN 1"), "+OK\r\n");
        // Refused, or (a connection the kernel queued as the socket closed) reset unread.
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let _ = s.write_all(b"PING\r\n");
            let mut b = [0u8; 16];
            assert_eq!(s.read(&mut b).unwrap_or(0), 0, "node 1 answered while down");
        }
        assert_eq!(p.cmd(0, "TUMBLER.NODE UP 1"), "+OK\r\n");
        assert_eq!(p.cmd(1, "PING"), "+PONG\r\n");
    }
}
