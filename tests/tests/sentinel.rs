//! Tumbler's sentinels (`--replicas 2 --sentinels 3`) against a real set started by the
//! test: a redis-server primary, two `--replicaof` replicas and three `redis-server conf
//! --sentinel`. Compared: the SENTINEL replies' shapes (field names and order, flags) and
//! errors, INFO and ROLE of a sentinel, unknown commands, the events of SENTINEL FAILOVER,
//! and a failover after the primary goes down (real: SIGSTOP of the primary the test
//! started; Tumbler: TUMBLER.NODE DOWN and TUMBLER.TIME ADVANCE), with the old primary
//! rejoining as a replica. Ports, ids and timings are normalised.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tumbler_tests::{binary, encode_cmd, reply_len, tools, Raw};

// ---------------------------------------------------------------- RESP values

#[derive(Debug, Clone, PartialEq)]
enum V {
    S(String),
    E(String),
    I(i64),
    B(Option<String>),
    A(Option<Vec<V>>),
}

fn parse(b: &[u8]) -> V {
    fn one(b: &[u8], pos: &mut usize) -> V {
        let eol = *pos + b[*pos..].windows(2).position(|w| w == b"\r\n").unwrap();
        let line = String::from_utf8_lossy(&b[*pos + 1..eol]).into_owned();
        let tag = b[*pos];
        *pos = eol + 2;
        match tag {
            b'+' => V::S(line),
            b'-' => V::E(line),
            b':' => V::I(line.parse().unwrap()),
            b'$' => {
                let n: i64 = line.parse().unwrap();
                if n < 0 {
                    return V::B(None);
                }
                let s = String::from_utf8_lossy(&b[*pos..*pos + n as usize]).into_owned();
                *pos += n as usize + 2;
                V::B(Some(s))
            }
            b'*' => {
                let n: i64 = line.parse().unwrap();
                if n < 0 {
                    return V::A(None);
                }
                V::A(Some((0..n).map(|_| one(b, pos)).collect()))
            }
            t => panic!("unexpected RESP2 type {:?}", t as char),
        }
    }
    let mut pos = 0;
    one(b, &mut pos)
}

impl V {
    fn items(&self) -> Vec<V> {
        match self {
            V::A(Some(v)) => v.clone(),
            other => panic!("not an array: {other:?}"),
        }
    }
    fn text(&self) -> String {
        match self {
            V::S(s) | V::E(s) | V::B(Some(s)) => s.clone(),
            V::I(i) => i.to_string(),
            V::A(Some(v)) => format!("{:?}", v.iter().map(|x| x.text()).collect::<Vec<_>>()),
            other => panic!("not a string: {other:?}"),
        }
    }
    /// A flat field/value array as pairs.
    fn pairs(&self) -> Vec<(String, String)> {
        self.items()
            .chunks(2)
            .map(|c| (c[0].text(), c[1].text()))
            .collect()
    }
}

fn field(pairs: &[(String, String)], k: &str) -> String {
    pairs
        .iter()
        .find(|(f, _)| f == k)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no field {k} in {pairs:?}"))
}

fn keys(pairs: &[(String, String)]) -> Vec<String> {
    pairs.iter().map(|(k, _)| k.clone()).collect()
}

fn cmd(addr: SocketAddr, args: &[&str]) -> V {
    let mut r = Raw::connect(addr);
    parse(&r.cmd(args))
}

fn cmd_raw(addr: SocketAddr, args: &[&str]) -> String {
    let mut r = Raw::connect(addr);
    r.cmd_str(args)
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------- the two sets

/// A primary, two replicas, three sentinels: addresses, and the ports to normalise.
trait Set {
    fn data(&self) -> Vec<SocketAddr>;
    fn sentinels(&self) -> Vec<SocketAddr>;
    /// Port -> placeholder (`P0`..`P2` data nodes, `S0`..`S2` sentinels).
    fn normalise(&self, s: &str) -> String {
        let mut out = s.to_string();
        let mut all: Vec<(u16, String)> = Vec::new();
        for (i, a) in self.data().iter().enumerate() {
            all.push((a.port(), format!("P{i}")));
        }
        for (i, a) in self.sentinels().iter().enumerate() {
            all.push((a.port(), format!("S{i}")));
        }
        // Longest first, so that no port is replaced inside another.
        all.sort_by_key(|(p, _)| std::cmp::Reverse(p.to_string().len()));
        for (p, name) in all {
            out = out.replace(&p.to_string(), &name);
        }
        out
    }
}

struct Real {
    dir: std::path::PathBuf,
    data: Vec<(SocketAddr, Child)>,
    sentinels: Vec<(SocketAddr, Child)>,
}

impl Drop for Real {
    fn drop(&mut self) {
        for (_, c) in self.data.iter_mut().chain(self.sentinels.iter_mut()) {
            let _ = Command::new("kill")
                .args(["-CONT", &c.id().to_string()])
                .status();
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ping_ok(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let _ = s.write_all(b"PING\r\n");
    let mut b = [0u8; 7];
    s.read_exact(&mut b).is_ok() && &b == b"+PONG\r\n"
}

fn spawn(bin: &str, args: &[String]) -> Option<Child> {
    match Command::new(bin)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => Some(c),
        Err(e) => {
            tools::missing(&format!("{bin} ({e})"));
            None
        }
    }
}

fn free_ports(n: usize) -> Vec<u16> {
    // Held together, so they differ.
    let ls: Vec<_> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    ls.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

impl Real {
    fn start() -> Option<Real> {
        let bin = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let ports = free_ports(6);
        let dir = std::env::temp_dir().join(format!(
            "tumbler-sentinel-{}-{}",
            std::process::id(),
            ports[0]
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let addr = |p: u16| -> SocketAddr { format!("127.0.0.1:{p}").parse().unwrap() };
        let mut real = Real {
            dir: dir.clone(),
            data: Vec::new(),
            sentinels: Vec::new(),
        };
        for (i, &p) in ports[..3].iter().enumerate() {
            let mut args: Vec<String> = [
                "--port",
                &p.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            if i > 0 {
                args.extend([
                    "--replicaof".into(),
                    "127.0.0.1".into(),
                    ports[0].to_string(),
                ]);
            }
            let c = spawn(&bin, &args)?;
            real.data.push((addr(p), c));
            wait_until("a real data node", Duration::from_secs(10), || {
                ping_ok(addr(p))
            });
        }
        // The replicas are in sync before the sentinels start.
        for &(a, _) in &real.data[1..] {
            wait_until("a replica's link", Duration::from_secs(10), || {
                cmd_raw(a, &["INFO", "replication"]).contains("master_link_status:up")
            });
        }
        for (j, &p) in ports[3..].iter().enumerate() {
            let conf = dir.join(format!("sentinel{j}.conf"));
            std::fs::write(
                &conf,
                format!(
                    "port {p}\nbind 127.0.0.1\ndir {}\nsentinel monitor mymaster 127.0.0.1 {} 2\nsentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 10000\n",
                    dir.display(),
                    ports[0]
                ),
            )
            .unwrap();
            let c = spawn(&bin, &[conf.display().to_string(), "--sentinel".into()])?;
            real.sentinels.push((addr(p), c));
            wait_until("a real sentinel", Duration::from_secs(10), || {
                ping_ok(addr(p))
            });
        }
        // Every sentinel knows both replicas and the two other sentinels.
        for s in real.sentinels() {
            wait_until(
                "the real sentinels to discover",
                Duration::from_secs(20),
                || {
                    let m = cmd(s, &["SENTINEL", "MASTER", "mymaster"]).pairs();
                    field(&m, "num-slaves") == "2" && field(&m, "num-other-sentinels") == "2"
                },
            );
            wait_until(
                "the real sentinels to connect",
                Duration::from_secs(20),
                || {
                    let ss = cmd(s, &["SENTINEL", "SENTINELS", "mymaster"]).items();
                    ss.iter()
                        .all(|r| !field(&r.pairs(), "flags").contains("disconnected"))
                },
            );
        }
        Some(real)
    }

    fn pid(&self, node: usize) -> u32 {
        self.data[node].1.id()
    }
}

impl Set for Real {
    fn data(&self) -> Vec<SocketAddr> {
        self.data.iter().map(|d| d.0).collect()
    }
    fn sentinels(&self) -> Vec<SocketAddr> {
        self.sentinels.iter().map(|d| d.0).collect()
    }
}

struct Tumbler {
    p: binary::Proc,
    data: Vec<SocketAddr>,
    sentinels: Vec<SocketAddr>,
}

impl Tumbler {
    fn start(extra: &[&str]) -> Tumbler {
        let mut c = binary::command();
        c.args([
            "--port",
            "0",
            "--replicas",
            "2",
            "--sentinels",
            "3",
            "--enable-time-control",
            "yes",
            "--enable-test-control",
            "yes",
            "--personality",
            "redis-7.0",
        ])
        .args(extra);
        let p = binary::Proc::spawn(c);
        let mut data = Vec::new();
        let mut sentinels = Vec::new();
        for i in 0..6 {
            let line = p
                .next_line(Duration::from_secs(15))
                .unwrap_or_else(|| panic!("listening line {i} missing; output: {}", p.log()));
            let port = binary::port_of(&line, "port=");
            let a: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            if i < 3 {
                let role = if i == 0 { "master" } else { "replica" };
                assert!(line.ends_with(&format!(" node={i} role={role}")), "{line}");
                data.push(a);
            } else {
                assert!(line.ends_with(&format!(" sentinel={}", i - 3)), "{line}");
                sentinels.push(a);
            }
        }
        Tumbler { p, data, sentinels }
    }
}

impl Set for Tumbler {
    fn data(&self) -> Vec<SocketAddr> {
        self.data.clone()
    }
    fn sentinels(&self) -> Vec<SocketAddr> {
        self.sentinels.clone()
    }
}

/// The real set, or None when redis-server is missing and TUMBLER_SKIP_MISSING=1.
fn real() -> Option<Real> {
    Real::start()
}

// ---------------------------------------------------------------- events

/// A `PSUBSCRIBE *` connection to a sentinel, collecting `(channel, message)` events.
struct Events {
    s: TcpStream,
    buf: Vec<u8>,
    got: Vec<(String, String)>,
}

impl Events {
    fn subscribe(addr: SocketAddr) -> Events {
        Events::subscribe_auth(addr, None)
    }

    fn subscribe_auth(addr: SocketAddr, pass: Option<&str>) -> Events {
        let mut s = TcpStream::connect(addr).unwrap();
        if let Some(p) = pass {
            s.write_all(&encode_cmd(&["AUTH", p])).unwrap();
            let mut b = [0u8; 5];
            s.read_exact(&mut b).unwrap();
            assert_eq!(&b, b"+OK\r\n");
        }
        s.write_all(&encode_cmd(&["PSUBSCRIBE", "*"])).unwrap();
        let mut e = Events {
            s,
            buf: Vec::new(),
            got: Vec::new(),
        };
        // The subscription's confirmation.
        e.poll(Duration::from_secs(5), |g| !g.is_empty());
        assert_eq!(e.got, [("psubscribe".to_string(), String::new())]);
        e.got.clear();
        e
    }

    /// Reads events until `done` says so for the list so far, or `limit` passes.
    fn poll(&mut self, limit: Duration, done: impl Fn(&[(String, String)]) -> bool) {
        let deadline = Instant::now() + limit;
        loop {
            while let Some(n) = reply_len(&self.buf) {
                let v = parse(&self.buf[..n]);
                self.buf.drain(..n);
                let items = v.items();
                if items[0].text() == "pmessage" {
                    self.got.push((items[2].text(), items[3].text()));
                } else {
                    // psubscribe's confirmation
                    self.got.push(("psubscribe".into(), String::new()));
                }
            }
            if done(&self.got) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            self.s
                .set_read_timeout(Some(left.min(Duration::from_millis(200))))
                .unwrap();
            let mut b = [0u8; 16384];
            match self.s.read(&mut b) {
                Ok(0) => return,
                Ok(n) => self.buf.extend_from_slice(&b[..n]),
                Err(_) => {}
            }
        }
    }

    fn has(&self, kind: &str) -> bool {
        self.got.iter().any(|(k, _)| k == kind)
    }
}

/// Events normalised: ports, and sentinel ids (40 hex digits) as `ID`.
fn norm_events(set: &dyn Set, ev: &[(String, String)]) -> Vec<String> {
    ev.iter()
        .map(|(k, m)| {
            let m = m
                .split(' ')
                .map(|w| {
                    if w.len() == 40 && w.bytes().all(|b| b.is_ascii_hexdigit()) {
                        "ID"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ");
            format!("{k} {}", set.normalise(&m))
        })
        .collect()
}

/// The kinds of events that say what a failover did (not the timing-dependent
/// `±role-change` and `+convert-to-slave`, which follow the old primary's own reports).
fn core_kinds(ev: &[String]) -> Vec<String> {
    ev.iter()
        .map(|e| e.split(' ').next().unwrap().to_string())
        .filter(|k| {
            !matches!(
                k.as_str(),
                "+role-change" | "-role-change" | "+convert-to-slave" | "+reboot"
            )
        })
        .collect()
}

/// The port index (`P1`) a sentinel names as the primary.
fn master_of(set: &dyn Set, s: SocketAddr) -> String {
    let v = cmd(s, &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"]).items();
    assert_eq!(v[0].text(), "127.0.0.1");
    set.normalise(&v[1].text())
}

// ---------------------------------------------------------------- tests

/// The shapes of the SENTINEL replies and the errors, on both sets.
#[test]
fn sentinel_replies_match_redis() {
    let Some(real) = real() else { return };
    let tum = Tumbler::start(&[]);
    let sets: [&dyn Set; 2] = [&real, &tum];
    let mut seen: Vec<Vec<String>> = vec![Vec::new(), Vec::new()];
    for (i, set) in sets.iter().enumerate() {
        let s0 = set.sentinels()[0];
        let out = &mut seen[i];
        // MASTERS / MASTER: field names in order, the flags and the counts.
        let masters = cmd(s0, &["SENTINEL", "MASTERS"]).items();
        assert_eq!(masters.len(), 1);
        let m = masters[0].pairs();
        out.push(format!("masters keys {:?}", keys(&m)));
        for f in [
            "name",
            "ip",
            "flags",
            "num-slaves",
            "num-other-sentinels",
            "quorum",
        ] {
            out.push(format!("master {f}={}", field(&m, f)));
        }
        out.push(format!("master port={}", set.normalise(&field(&m, "port"))));
        let m1 = cmd(s0, &["SENTINEL", "MASTER", "mymaster"]).pairs();
        out.push(format!("master keys {:?}", keys(&m1)));
        // REPLICAS / SLAVES, sorted by name (Redis lists them in its dict's order).
        for sub in ["REPLICAS", "SLAVES"] {
            let mut rs: Vec<Vec<(String, String)>> = cmd(s0, &["SENTINEL", sub, "mymaster"])
                .items()
                .iter()
                .map(|r| r.pairs())
                .collect();
            rs.sort_by_key(|r| set.normalise(&field(r, "name")));
            for r in &rs {
                out.push(format!("replica keys {:?}", keys(r)));
                for f in ["name", "port", "master-port"] {
                    out.push(format!("replica {f}={}", set.normalise(&field(r, f))));
                }
                for f in [
                    "ip",
                    "flags",
                    "master-host",
                    "slave-priority",
                    "master-link-status",
                ] {
                    out.push(format!("replica {f}={}", field(r, f)));
                }
            }
        }
        // SENTINELS: the two others.
        let mut ss: Vec<Vec<(String, String)>> = cmd(s0, &["SENTINEL", "SENTINELS", "mymaster"])
            .items()
            .iter()
            .map(|r| r.pairs())
            .collect();
        ss.sort_by_key(|r| set.normalise(&field(r, "port")));
        for r in &ss {
            out.push(format!("sentinel keys {:?}", keys(r)));
            out.push(format!(
                "sentinel port={}",
                set.normalise(&field(r, "port"))
            ));
            out.push(format!("sentinel flags={}", field(r, "flags")));
            assert_eq!(field(r, "name"), field(r, "runid"));
            assert_eq!(field(r, "name").len(), 40);
        }
        // MYID: 40 hex digits, one of the ids the others list.
        let id = cmd(s0, &["SENTINEL", "MYID"]).text();
        assert_eq!(id.len(), 40, "{id}");
        let others = cmd(set.sentinels()[1], &["SENTINEL", "SENTINELS", "mymaster"]).items();
        assert!(others.iter().any(|r| field(&r.pairs(), "name") == id));
        let mport = set.data()[0].port().to_string();
        // Replies compared whole after normalising.
        for line in [
            vec!["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"],
            vec!["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "nope"],
            vec!["SENTINEL", "CKQUORUM", "mymaster"],
            vec!["SENTINEL", "CKQUORUM", "nope"],
            vec!["SENTINEL", "MASTER", "nope"],
            vec!["SENTINEL", "REPLICAS", "nope"],
            vec!["SENTINEL", "SENTINELS", "nope"],
            vec!["SENTINEL", "FAILOVER", "nope"],
            vec![
                "SENTINEL",
                "IS-MASTER-DOWN-BY-ADDR",
                "127.0.0.1",
                &mport,
                "0",
                "*",
            ],
            vec![
                "SENTINEL",
                "IS-MASTER-DOWN-BY-ADDR",
                "127.0.0.1",
                &mport,
                "x",
                "*",
            ],
            vec!["SENTINEL", "CONFIG", "GET", "announce-*"],
            vec!["SENTINEL", "CONFIG", "GET", "nope"],
            vec!["SENTINEL", "CONFIG", "SET", "announce-port", "x"],
            vec!["SENTINEL", "CONFIG", "SET", "nope", "1"],
            vec!["SENTINEL", "CONFIG", "GET"],
            vec!["SENTINEL", "CONFIG"],
            vec!["SENTINEL", "SET", "mymaster", "quorum", "0"],
            vec!["SENTINEL", "SET", "mymaster", "foo", "1"],
            vec!["SENTINEL", "SET", "nope", "quorum", "2"],
            vec!["SENTINEL", "SET", "mymaster"],
            vec!["SENTINEL", "MONITOR", "mymaster", "127.0.0.1", &mport, "2"],
            vec!["SENTINEL", "REMOVE", "nope"],
            vec!["SENTINEL", "SIMULATE-FAILURE", "HELP"],
            vec!["SENTINEL", "PENDING-SCRIPTS"],
            vec!["SENTINEL", "DEBUG"],
            vec!["SENTINEL", "HELP"],
            vec!["SENTINEL", "HELP", "x"],
            vec!["SENTINEL", "MYID", "x"],
            vec!["SENTINEL", "FOO"],
            vec!["SENTINEL"],
            vec!["ROLE"],
            vec!["PING"],
            vec!["GET", "x"],
            vec!["SET", "a", "b"],
            vec!["CONFIG", "GET", "maxmemory"],
            vec!["DBSIZE"],
            vec!["QUIT"],
            vec!["MULTI"],
            vec!["PUBLISH", "a", "b"],
            vec!["SENTINEL", "RESET", "nope"],
        ] {
            let r = cmd_raw(s0, &line);
            out.push(set.normalise(&format!("{line:?} -> {r}")));
        }
        // INFO: the sections, and the Sentinel section's lines.
        let info = cmd(s0, &["INFO"]).text();
        let heads: Vec<&str> = info.lines().filter(|l| l.starts_with('#')).collect();
        out.push(format!("INFO sections {heads:?}"));
        assert!(info.contains("redis_mode:sentinel\r\n"), "{info}");
        let sen = cmd(s0, &["INFO", "sentinel"]).text();
        out.push(format!("INFO sentinel {}", set.normalise(&sen)));
        let hello = cmd(s0, &["HELLO", "2"]).pairs();
        out.push(format!("HELLO mode={}", field(&hello, "mode")));
        out.push(format!(
            "COMMAND COUNT -> {}",
            cmd(s0, &["COMMAND", "COUNT"]).text()
        ));
    }
    let (r, t) = (&seen[0], &seen[1]);
    let mut diffs = Vec::new();
    for (a, b) in r.iter().zip(t.iter()) {
        if a != b {
            diffs.push(format!("redis:   {a}\ntumbler: {b}"));
        }
    }
    assert_eq!(r.len(), t.len(), "{r:#?}\n{t:#?}");
    // Tumbler's sentinel has no SENTINEL row in its command table: COMMAND COUNT is one
    // less (docs/cluster.md).
    diffs.retain(|d| !d.contains("COMMAND COUNT"));
    assert!(diffs.is_empty(), "{}", diffs.join("\n\n"));
}

/// SENTINEL FAILOVER: the leader's events and the others', in Redis' order and formats.
#[test]
fn sentinel_failover_events_match_redis() {
    let Some(real) = real() else { return };
    let tum = Tumbler::start(&[]);
    let sets: [&dyn Set; 2] = [&real, &tum];
    let mut seen = Vec::new();
    for set in sets {
        let mut subs: Vec<Events> = set
            .sentinels()
            .iter()
            .map(|&a| Events::subscribe(a))
            .collect();
        let r = cmd_raw(set.sentinels()[0], &["SENTINEL", "FAILOVER", "mymaster"]);
        assert_eq!(r, "+OK\r\n");
        let again = cmd_raw(set.sentinels()[0], &["SENTINEL", "FAILOVER", "mymaster"]);
        for s in subs.iter_mut() {
            s.poll(Duration::from_secs(30), |ev| {
                ev.iter().any(|(k, _)| k == "+switch-master")
                    && ev.iter().filter(|(k, _)| k == "+slave").count() >= 2
            });
            assert!(s.has("+switch-master"), "{:?}", s.got);
        }
        let new = master_of(set, set.sentinels()[0]);
        assert!(new == "P1" || new == "P2", "{new}");
        for &s in &set.sentinels()[1..] {
            assert_eq!(master_of(set, s), new);
        }
        let lead = norm_events(set, &subs[0].got);
        let other = norm_events(set, &subs[1].got);
        // The selected replica differs by run id, so compare with it named NEW and the
        // other replica OTHER.
        let name = |v: Vec<String>| -> Vec<String> {
            let other_port = if new == "P1" { "P2" } else { "P1" };
            v.into_iter()
                .map(|e| e.replace(&new, "NEW").replace(other_port, "OTHER"))
                .collect()
        };
        seen.push((
            set.normalise(&again),
            name(lead.clone()),
            core_kinds(&lead),
            name(other.clone()),
            core_kinds(&other),
        ));
    }
    let (r, t) = (&seen[0], &seen[1]);
    assert_eq!(r.0, "-INPROG Failover already in progress\r\n");
    assert_eq!(t.0, r.0);
    // The leader: every step, each event's text equal (up to +switch-master and the
    // +slave lines, with the role reports left out).
    let steps = |v: &Vec<String>| -> Vec<String> {
        v.iter()
            .filter(|e| core_kinds(&[e.to_string()]).len() == 1)
            .cloned()
            .collect()
    };
    assert_eq!(
        steps(&t.1),
        steps(&r.1),
        "\nredis: {:#?}\ntumbler: {:#?}",
        r.1,
        t.1
    );
    assert_eq!(
        steps(&t.3),
        steps(&r.3),
        "\nredis: {:#?}\ntumbler: {:#?}",
        r.3,
        t.3
    );
}

/// The primary goes down: +sdown, +odown, the failover, +switch-master on every sentinel,
/// GET-MASTER-ADDR-BY-NAME follows, and the old primary rejoins as a replica.
#[test]
fn failover_after_the_primary_goes_down() {
    let Some(real) = real() else { return };
    let tum = Tumbler::start(&[]);
    let sets: [&dyn Set; 2] = [&real, &tum];
    let mut kinds = Vec::new();
    for (i, set) in sets.iter().enumerate() {
        let mut subs: Vec<Events> = set
            .sentinels()
            .iter()
            .map(|&a| Events::subscribe(a))
            .collect();
        let started = Instant::now();
        if i == 0 {
            let st = Command::new("kill")
                .args(["-STOP", &real.pid(0).to_string()])
                .status()
                .unwrap();
            assert!(st.success());
        } else {
            let n = set.data()[1];
            assert_eq!(cmd_raw(n, &["TUMBLER.NODE", "DOWN", "0"]), "+OK\r\n");
            let r = cmd_raw(set.sentinels()[2], &["TUMBLER.TIME", "ADVANCE", "30000"]);
            assert!(r.starts_with(':'), "{r}");
        }
        for s in subs.iter_mut() {
            s.poll(Duration::from_secs(40), |ev| {
                ev.iter().any(|(k, _)| k == "+switch-master")
                    && ev
                        .iter()
                        .any(|(k, m)| k == "+sdown" && m.starts_with("slave"))
            });
            assert!(s.has("+switch-master"), "{:?}", s.got);
            assert!(s.has("+sdown"), "{:?}", s.got);
        }
        let took = started.elapsed();
        if i == 1 {
            // Tumbler's clock: no real waiting.
            assert!(took < Duration::from_secs(3), "{took:?}");
        }
        let new = master_of(*set, set.sentinels()[0]);
        assert!(new == "P1" || new == "P2", "{new}");
        for &s in &set.sentinels()[1..] {
            assert_eq!(master_of(*set, s), new);
        }
        // The leader's steps, and what every sentinel says of the old primary.
        let leader = subs
            .iter()
            .find(|s| s.has("+elected-leader"))
            .expect("a leader");
        let lead = norm_events(*set, &leader.got);
        for kind in [
            "+sdown",
            "+odown",
            "+new-epoch",
            "+try-failover",
            "+vote-for-leader",
            "+elected-leader",
            "+selected-slave",
            "+promoted-slave",
            "+failover-end",
            "+switch-master",
            "+slave",
        ] {
            assert!(
                lead.iter().any(|e| e.starts_with(&format!("{kind} "))),
                "{kind} in {lead:#?}"
            );
        }
        let pos = |k: &str| {
            lead.iter()
                .position(|e| e.starts_with(&format!("{k} ")))
                .unwrap()
        };
        assert!(pos("+sdown") < pos("+odown"));
        assert!(pos("+odown") < pos("+try-failover"));
        assert!(pos("+elected-leader") < pos("+selected-slave"));
        assert!(pos("+promoted-slave") < pos("+failover-end"));
        assert!(pos("+failover-end") < pos("+switch-master"));
        assert!(
            lead.contains(&"+sdown master mymaster 127.0.0.1 P0".to_string()),
            "{lead:#?}"
        );
        assert!(lead.contains(&format!(
            "+switch-master mymaster 127.0.0.1 P0 127.0.0.1 {new}"
        )));
        assert!(lead.contains(&format!(
            "+sdown slave 127.0.0.1:P0 127.0.0.1 P0 @ mymaster 127.0.0.1 {new}"
        )));
        kinds.push(BTreeSet::from_iter(core_kinds(&lead)));
        // The replicas as the sentinel lists them: the old primary is s_down.
        let rs = cmd(set.sentinels()[0], &["SENTINEL", "REPLICAS", "mymaster"]).items();
        let old = rs
            .iter()
            .map(|r| r.pairs())
            .find(|r| set.normalise(&field(r, "port")) == "P0")
            .expect("the old primary among the replicas");
        assert!(field(&old, "flags").starts_with("s_down,slave"), "{old:?}");
        // The new primary says so; the other replica follows it.
        let nidx: usize = new[1..].parse().unwrap();
        wait_until("the new primary's role", Duration::from_secs(20), || {
            cmd(set.data()[nidx], &["ROLE"]).items()[0].text() == "master"
        });
        let other = 3 - nidx;
        wait_until(
            "the other replica to follow",
            Duration::from_secs(20),
            || {
                let r = cmd(set.data()[other], &["ROLE"]).items();
                r[0].text() == "slave" && r[2].text() == set.data()[nidx].port().to_string()
            },
        );
        // The old primary comes back and is made a replica of the new one.
        if i == 0 {
            Command::new("kill")
                .args(["-CONT", &real.pid(0).to_string()])
                .status()
                .unwrap();
        } else {
            assert_eq!(
                cmd_raw(set.data()[1], &["TUMBLER.NODE", "UP", "0"]),
                "+OK\r\n"
            );
        }
        wait_until(
            "the old primary to rejoin as a replica",
            Duration::from_secs(40),
            || {
                let r = cmd(set.data()[0], &["ROLE"]).items();
                r[0].text() == "slave" && r[2].text() == set.data()[nidx].port().to_string()
            },
        );
        for s in subs.iter_mut() {
            s.poll(Duration::from_secs(20), |ev| {
                ev.iter()
                    .any(|(k, m)| k == "-sdown" && m.starts_with("slave"))
            });
            assert!(s.has("-sdown"), "{:?}", s.got);
        }
    }
    // The leader's kinds of events are Redis' (but -odown, which Redis publishes only when
    // its failover outlasts the primary's odown state).
    let strip = |s: &BTreeSet<String>| -> BTreeSet<String> {
        s.iter().filter(|k| *k != "-odown").cloned().collect()
    };
    assert_eq!(strip(&kinds[1]), strip(&kinds[0]));
}

/// Tumbler only: a sentinel's own password (`sentinel-requirepass`), SHUTDOWN, a replica
/// that goes down, and TUMBLER.TIME on a sentinel moving the data nodes' clock.
#[test]
fn sentinel_auth_replica_down_and_shutdown() {
    let mut tum = Tumbler::start(&["--sentinel-requirepass", "spass"]);
    let s0 = tum.sentinels[0];
    assert_eq!(
        cmd_raw(s0, &["SENTINEL", "MASTERS"]),
        "-NOAUTH Authentication required.\r\n"
    );
    let mut r = Raw::connect(s0);
    assert_eq!(r.cmd_str(&["AUTH", "spass"]), "+OK\r\n");
    assert!(r.cmd_str(&["SENTINEL", "MASTERS"]).starts_with("*1\r\n"));
    // ACL users of a sentinel are its own.
    assert_eq!(
        r.cmd_str(&["ACL", "SETUSER", "ops", "on", ">opspass", "+@all"]),
        "+OK\r\n"
    );
    let mut o = Raw::connect(s0);
    assert_eq!(o.cmd_str(&["AUTH", "ops", "opspass"]), "+OK\r\n");
    assert!(o.cmd_str(&["SENTINEL", "MASTERS"]).starts_with("*1\r\n"));
    let mut o1 = Raw::connect(tum.sentinels[1]);
    assert!(o1
        .cmd_str(&["AUTH", "ops", "opspass"])
        .starts_with("-WRONGPASS"));
    // announce-ip / announce-port: what the other sentinels list for this one.
    assert_eq!(o1.cmd_str(&["AUTH", "spass"]), "+OK\r\n");
    for (k, v) in [("announce-ip", "10.0.0.9"), ("announce-port", "26999")] {
        assert_eq!(o1.cmd_str(&["SENTINEL", "CONFIG", "SET", k, v]), "+OK\r\n");
    }
    let listed = parse(&r.cmd(&["SENTINEL", "SENTINELS", "mymaster"])).items();
    assert!(
        listed.iter().any(|x| {
            let p = x.pairs();
            field(&p, "ip") == "10.0.0.9" && field(&p, "port") == "26999"
        }),
        "{listed:?}"
    );
    // The data nodes keep theirs (none).
    assert_eq!(cmd_raw(tum.data[0], &["PING"]), "+PONG\r\n");
    // A replica down for down-after-milliseconds is +sdown, and -sdown when back.
    let mut ev = Events::subscribe_auth(tum.sentinels[1], Some("spass"));
    assert_eq!(
        cmd_raw(tum.data[0], &["TUMBLER.NODE", "DOWN", "2"]),
        "+OK\r\n"
    );
    let t0 = cmd(tum.data[1], &["TIME"]).items()[0].text();
    let adv = cmd_raw(tum.data[0], &["TUMBLER.TIME", "ADVANCE", "30000"]);
    assert!(adv.starts_with(':'), "{adv}");
    // One clock: a data node's TIME moved too.
    let t1 = cmd(tum.data[1], &["TIME"]).items()[0].text();
    assert!(t1.parse::<i64>().unwrap() >= t0.parse::<i64>().unwrap() + 30);
    ev.poll(Duration::from_secs(5), |g| {
        g.iter().any(|(k, _)| k == "+sdown")
    });
    let p2 = tum.data[2].port();
    let p0 = tum.data[0].port();
    assert!(
        ev.got.contains(&(
            "+sdown".into(),
            format!("slave 127.0.0.1:{p2} 127.0.0.1 {p2} @ mymaster 127.0.0.1 {p0}")
        )),
        "{:?}",
        ev.got
    );
    // No failover for a replica.
    assert!(!ev.has("+odown"));
    assert_eq!(
        cmd_raw(tum.data[0], &["TUMBLER.NODE", "UP", "2"]),
        "+OK\r\n"
    );
    ev.poll(Duration::from_secs(5), |g| {
        g.iter().any(|(k, _)| k == "-sdown")
    });
    assert!(ev.has("-sdown"), "{:?}", ev.got);
    // SHUTDOWN on a sentinel stops the process.
    r.send(&["SHUTDOWN", "NOSAVE"]);
    let st = tum.p.wait_exit();
    assert!(st.success(), "{st:?}");
}
