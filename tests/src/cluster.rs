//! A real 3-node Redis Cluster for differential tests: three `redis-server --cluster-enabled
//! yes` children on free ports joined by `redis-cli --cluster create`, torn down on drop;
//! and a comparison of replies with node ids and ports normalised.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{tools, Raw};

pub struct RedisCluster {
    pub addrs: Vec<SocketAddr>,
    children: Vec<Child>,
    dir: PathBuf,
}

/// A free port whose cluster bus port (+10000) is free too.
fn free_cluster_port() -> u16 {
    loop {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = l.local_addr().unwrap().port();
        if p < 55000 && TcpListener::bind(("127.0.0.1", p + 10000)).is_ok() {
            return p;
        }
    }
}

fn pong(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = s.write_all(b"PING\r\n");
    let mut b = [0u8; 7];
    s.read_exact(&mut b).is_ok() && &b == b"+PONG\r\n"
}

impl RedisCluster {
    /// Starts the cluster; without redis-server it fails, or with `TUMBLER_SKIP_MISSING=1`
    /// returns `None` (skip).
    pub fn start() -> Option<RedisCluster> {
        let dir = std::env::temp_dir().join(format!(
            "tumbler-redis-cluster-{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos() ^ rand::random::<u64>() as u128
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut rc = RedisCluster {
            addrs: Vec::new(),
            children: Vec::new(),
            dir,
        };
        for _ in 0..3 {
            let port = free_cluster_port();
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args([
                    "--cluster-enabled",
                    "yes",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ])
                .arg("--cluster-config-file")
                .arg(rc.dir.join(format!("nodes-{port}.conf")))
                .arg("--dir")
                .arg(&rc.dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn();
            match child {
                Ok(c) => rc.children.push(c),
                Err(e) => {
                    tools::missing(&format!("redis-server ({e})"));
                    return None;
                }
            }
            rc.addrs.push(format!("127.0.0.1:{port}").parse().unwrap());
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while !rc.addrs.iter().all(|a| pong(*a)) {
            assert!(
                Instant::now() < deadline,
                "redis-server nodes did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = Command::new("timeout")
            .arg("60")
            .arg("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(rc.addrs.iter().map(|a| a.to_string()))
            .arg("--cluster-yes")
            .output()
            .expect("run redis-cli --cluster create");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        // Wait until every node agrees on the whole map.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ok = rc.addrs.iter().all(|a| {
                let mut c = Raw::connect(*a);
                c.cmd_str(&["CLUSTER", "INFO"]).contains("cluster_state:ok")
                    && c.cmd_str(&["CLUSTER", "SLOTS"]).starts_with("*3\r\n")
            });
            if ok {
                return Some(rc);
            }
            assert!(Instant::now() < deadline, "redis cluster did not converge");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Node ids in node order.
    pub fn ids(&self) -> Vec<String> {
        node_ids(&self.addrs)
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// CLUSTER MYID of each node.
pub fn node_ids(addrs: &[SocketAddr]) -> Vec<String> {
    addrs
        .iter()
        .map(|a| {
            let r = Raw::connect(*a).cmd_str(&["CLUSTER", "MYID"]);
            r.lines().nth(1).unwrap_or_default().to_string()
        })
        .collect()
}

/// Replaces node ids, `ip:port` and bare ports (as RESP integers or bulk strings) of the
/// nodes with `ID<i>` / `P<i>`, so two clusters' replies can be compared.
pub fn normalise(reply: &str, addrs: &[SocketAddr], ids: &[String]) -> String {
    let mut s = reply.to_string();
    for (i, id) in ids.iter().enumerate() {
        if !id.is_empty() {
            s = s.replace(id, &format!("ID{i}"));
        }
    }
    for (i, a) in addrs.iter().enumerate() {
        let p = a.port();
        s = s.replace(&format!(":{p}\r\n"), &format!(":P{i}\r\n"));
        s = s.replace(&format!("127.0.0.1:{p}"), &format!("127.0.0.1:P{i}"));
        s = s.replace(&format!("$5\r\n{p}\r\n"), &format!("$P{i}\r\n"));
    }
    s
}
