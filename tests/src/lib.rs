//! Test harness: start tumbler in-process or redis-server as a child process (both on port
//! 0 / a free port, so runs never collide), talk raw RESP to them, and compare replies.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;

pub mod binary;
pub mod certs;
pub mod clients;
pub mod cluster;
pub mod fuzz;
pub mod rdb;
pub mod replset;
pub mod tools;

/// A tumbler server running in this process on its own runtime thread
/// (a thin wrapper over [`tumbler::embed::TestServer`]).
pub struct Tumbler {
    pub addr: SocketAddr,
    pub shared: std::sync::Arc<tumbler::Shared>,
    server: tumbler::embed::TestServer,
}

impl Tumbler {
    pub fn start() -> Tumbler {
        Tumbler::start_with(&[])
    }

    /// Starts with config directives, e.g. `&[("requirepass", "secret")]`.
    ///
    /// `TUMBLER_TEST_LOCKDEP=yes|strict` in the environment turns the lock-order checker on
    /// for every server a test starts (unless the test sets `lockdep` itself), so any test
    /// file can be run a second time with it on (scripts/test.sh does, for the lock tests).
    pub fn start_with(directives: &[(&str, &str)]) -> Tumbler {
        let mut b = tumbler::embed::TestServer::builder();
        if let Ok(mode) = std::env::var("TUMBLER_TEST_LOCKDEP") {
            if !directives.iter().any(|(k, _)| *k == "lockdep") {
                b = b.config("lockdep", &mode);
            }
        }
        // `TUMBLER_TEST_WORKERS=N` runs every server a test starts on N runtime workers
        // (unless the test sets `worker-threads` itself), to check a test under another
        // thread count.
        if let Ok(n) = std::env::var("TUMBLER_TEST_WORKERS") {
            if !directives.iter().any(|(k, _)| *k == "worker-threads") {
                b = b.config("worker-threads", &n);
            }
        }
        // `TUMBLER_TEST_EVENT_LOOP=no` runs every server's TCP connections on tokio instead
        // of the event loop of our own (server/src/io/evloop.rs, the default) unless the test
        // sets `event-loop` itself.
        if let Ok(v) = std::env::var("TUMBLER_TEST_EVENT_LOOP") {
            if !directives.iter().any(|(k, _)| *k == "event-loop") {
                b = b.config("event-loop", &v);
            }
        }
        for (k, v) in directives {
            b = b.config(k, v);
        }
        let server = b.spawn().unwrap_or_else(|e| panic!("start tumbler: {e}"));
        Tumbler {
            addr: server.addr(),
            shared: server.shared().clone(),
            server,
        }
    }

    /// A tumbler with the personality that imitates `reference` (`redis-7.0` for
    /// redis-server 7.0.15), and `directives`.
    pub fn like(reference: &RedisServer, directives: &[(&str, &str)]) -> Tumbler {
        let mut d = vec![("personality", reference.personality)];
        d.extend_from_slice(directives);
        Tumbler::start_with(&d)
    }

    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Every node's address (one for a one-node server).
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.server.addrs().to_vec()
    }

    pub fn raw(&self) -> Raw {
        Raw::connect(self.addr)
    }

    /// Direct control of the server clock.
    pub fn time(&self) -> tumbler::embed::TimeHandle {
        self.server.time()
    }
}

/// A real redis-server child process on a free loopback port.
pub struct RedisServer {
    pub addr: SocketAddr,
    /// The Tumbler personality that imitates this server ("redis-7.0", "valkey-9.1"), from
    /// its INFO server.
    pub personality: &'static str,
    child: Child,
}

/// The personality imitating reference binary `bin` (a path or a name), without starting
/// it: `redis8-server` is redis-8.0, `valkey9-server` valkey-9.1, any other redis-server
/// 7.0.15's redis-7.0.
pub fn personality_of_bin(bin: &str) -> &'static str {
    let name = std::path::Path::new(bin)
        .file_name()
        .map_or(bin.to_string(), |n| n.to_string_lossy().into_owned());
    match name.as_str() {
        "redis8-server" => "redis-8.0",
        "valkey9-server" => "valkey-9.1",
        _ => "redis-7.0",
    }
}

/// The personality of the server whose INFO server is `info`: its flavor and major.minor.
pub fn personality_of(info: &str) -> &'static str {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    let (flavor, version) = match field("valkey_version:") {
        Some(v) => ("valkey", v),
        None => (
            "redis",
            field("redis_version:").expect("INFO server has redis_version"),
        ),
    };
    let minor: String = version.split('.').take(2).collect::<Vec<_>>().join(".");
    let name = format!("{flavor}-{minor}");
    lockcore::personality::Personality::parse(&name)
        .unwrap_or_else(|| panic!("no personality imitates {name}"))
        .name
}

/// A free loopback port (bound, then released), for a server that is given a fixed port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The `process_id` of the server on `s` and its personality (INFO server).
fn server_pid(s: &mut TcpStream) -> Option<(u32, &'static str)> {
    s.write_all(b"INFO server\r\n").ok()?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&buf);
        if let Some(rest) = text.split("process_id:").nth(1) {
            if let Some(end) = rest.find("\r\n") {
                let pid = rest[..end].parse().ok()?;
                return Some((pid, personality_of(&text)));
            }
        }
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

impl RedisServer {
    /// Starts redis-server (`REDIS_SERVER` names another binary). When it is not installed
    /// the test fails, or with `TUMBLER_SKIP_MISSING=1` this returns `None` and the caller
    /// skips ([`tools::missing`]).
    pub fn start() -> Option<RedisServer> {
        RedisServer::start_with(&[])
    }

    /// [`RedisServer::start`] with extra arguments (`--tls-port`, ...).
    pub fn start_with(extra: &[&str]) -> Option<RedisServer> {
        let bin = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        RedisServer::start_bin(&bin, extra)
    }

    /// [`RedisServer::start_with`] of another reference binary (`redis8-server`).
    pub fn start_bin(bin: &str, extra: &[&str]) -> Option<RedisServer> {
        for _ in 0..5 {
            let port = free_port();
            let child = Command::new(&bin)
                .args([
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--daemonize",
                    "no",
                ])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn();
            let mut child = match child {
                Ok(c) => c,
                Err(e) => {
                    tools::missing(&format!("{bin} ({e})"));
                    return None;
                }
            };
            let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(mut s) = TcpStream::connect(addr) {
                    // With `--requirepass P` (extra), AUTH first.
                    if let Some(w) = extra.windows(2).find(|w| w[0] == "--requirepass") {
                        let _ = s.write_all(&encode_cmd(&["AUTH", w[1]]));
                        let mut ok = [0u8; 5];
                        if s.read_exact(&mut ok).is_err() || &ok != b"+OK\r\n" {
                            std::thread::sleep(Duration::from_millis(20));
                            continue;
                        }
                    }
                    let _ = s.write_all(b"PING\r\n");
                    let mut b = [0u8; 7];
                    if s.read_exact(&mut b).is_ok() && &b == b"+PONG\r\n" {
                        // Another test's server may have taken the port first (ours then
                        // fails to bind and exits): only our own child counts.
                        if let Some((pid, personality)) = server_pid(&mut s) {
                            if pid == child.id() {
                                return Some(RedisServer {
                                    addr,
                                    personality,
                                    child,
                                });
                            }
                        }
                        break;
                    }
                }
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis-server did not start");
    }

    pub fn raw(&self) -> Raw {
        Raw::connect(self.addr)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw RESP connection: send commands or bytes, read whole replies as raw bytes.
pub struct Raw {
    pub stream: TcpStream,
    pub buf: Vec<u8>,
}

/// Encodes a command as a RESP multibulk (the Rust client's encoder).
pub use tumbler_client::encode as encode_cmd;

/// Length of the first complete reply in `buf` (RESP2 or RESP3), if there is one.
///
/// A counter of elements still to come, not a recursive decoder: script replies nest
/// thousands of levels deep (Redis stops them near 8000), more than a test thread's stack
/// holds in a recursive descent.
pub fn reply_len(buf: &[u8]) -> Option<usize> {
    let undecodable = || -> ! {
        panic!("undecodable reply {:?}", String::from_utf8_lossy(buf));
    };
    let mut pos = 0usize;
    let mut pending = 1u64;
    while pending > 0 {
        let tag = *buf.get(pos)?;
        let eol = pos + buf[pos..].windows(2).position(|w| w == b"\r\n")?;
        let line = &buf[pos + 1..eol];
        let n = || -> i64 {
            std::str::from_utf8(line)
                .ok()
                .and_then(|l| l.parse().ok())
                .unwrap_or_else(|| undecodable())
        };
        pos = eol + 2;
        pending -= 1;
        match tag {
            b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => {}
            b'$' | b'!' | b'=' => {
                if n() >= 0 {
                    pos += n() as usize + 2;
                    if pos > buf.len() {
                        return None;
                    }
                }
            }
            b'*' | b'~' | b'>' => pending += n().max(0) as u64,
            b'%' => pending += 2 * n().max(0) as u64,
            // An attribute map, then the value it describes.
            b'|' => pending += 2 * n().max(0) as u64 + 1,
            _ => undecodable(),
        }
    }
    Some(pos)
}

impl Raw {
    pub fn connect(addr: SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Raw {
            stream,
            buf: Vec::new(),
        }
    }

    pub fn send_bytes(&mut self, b: &[u8]) {
        self.stream.write_all(b).expect("write");
    }

    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        self.send_bytes(&encode_cmd(args));
    }

    /// Reads one complete reply and returns its raw bytes.
    pub fn read_reply(&mut self) -> Bytes {
        loop {
            if let Some(n) = reply_len(&self.buf) {
                let r: Vec<u8> = self.buf.drain(..n).collect();
                return Bytes::from(r);
            }
            let mut chunk = [0u8; 16384];
            let n = self.stream.read(&mut chunk).expect("read reply");
            assert!(
                n > 0,
                "connection closed while waiting for a reply; got so far: {:?}",
                String::from_utf8_lossy(&self.buf)
            );
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends a command and returns its raw reply.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Bytes {
        self.send(args);
        self.read_reply()
    }

    /// Sends a command and returns its reply as a string (for readable assertions).
    pub fn cmd_str<A: AsRef<[u8]>>(&mut self, args: &[A]) -> String {
        String::from_utf8_lossy(&self.cmd(args)).into_owned()
    }

    /// True if the server closed the connection (reads EOF within the timeout).
    pub fn is_closed(&mut self) -> bool {
        self.stream
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let mut b = [0u8; 1024];
        loop {
            match self.stream.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(_) => return false,
            }
        }
    }
}

/// The payload of a raw bulk-string reply (`$n\r\n...\r\n`, as [`Raw::cmd`] returns it);
/// panics, showing the reply, if it is not one.
pub fn bulk_payload(reply: &[u8]) -> Vec<u8> {
    assert_eq!(
        reply.first(),
        Some(&b'$'),
        "not a bulk reply: {}",
        String::from_utf8_lossy(reply)
    );
    let nl = reply.iter().position(|&b| b == b'\n').unwrap();
    let n: usize = std::str::from_utf8(&reply[1..nl - 1])
        .unwrap()
        .parse()
        .unwrap();
    reply[nl + 1..nl + 1 + n].to_vec()
}

/// Splits a whitespace-separated command line, honouring double quotes (for test scripts).
pub fn split_line(line: &str) -> Vec<Vec<u8>> {
    tumbler::resp::split_args(line.as_bytes()).expect("balanced quotes")
}

/// Runs `script` (one command per line; `#` comments) against both servers on fresh
/// connections and asserts every reply is byte-for-byte identical.
pub fn diff_script(t: &mut Raw, r: &mut Raw, script: &str) {
    for (i, line) in script.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let args = split_line(line);
        let a = t.cmd(&args);
        let b = r.cmd(&args);
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "line {}: `{}`: tumbler (left) and redis-server (right) disagree",
            i + 1,
            line
        );
    }
}

/// Starts a fresh tumbler and redis-server and runs `script` on both with
/// [`diff_script`]. Without redis-server it fails, or skips under `TUMBLER_SKIP_MISSING=1`.
pub fn diff_against_redis(script: &str) {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    diff_script(&mut t.raw(), &mut redis.raw(), script);
}

/// [`diff_against_redis`] against reference binary `bin` (`redis8-server`,
/// `valkey9-server`), with tumbler in the personality that imitates it.
pub fn diff_against(bin: &str, script: &str) {
    let Some(redis) = RedisServer::start_bin(bin, &[]) else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    diff_script(&mut t.raw(), &mut redis.raw(), script);
}

/// [`diff_against_redis`] on connections switched to RESP3 first (HELLO's reply names the
/// server version, so it is not compared).
pub fn diff_against_redis_resp3(script: &str) {
    let bin = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    diff_against_resp3(&bin, script);
}

/// [`diff_against`] on connections switched to RESP3 first.
pub fn diff_against_resp3(bin: &str, script: &str) {
    let Some(redis) = RedisServer::start_bin(bin, &[]) else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let (mut a, mut b) = (t.raw(), redis.raw());
    a.cmd(&["HELLO", "3"]);
    b.cmd(&["HELLO", "3"]);
    diff_script(&mut a, &mut b, script);
}
