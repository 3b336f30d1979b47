//! Lock hand-off benchmark: N clients contending on one lock.
//!
//! (a) native: `LOCK.ACQUIRE lock owner ttl WAIT 0` on tumbler (server-side FIFO queue);
//! (b) a Redisson-style protocol on tumbler: EVALSHA acquire script (hash owner->count,
//!     PEXPIRE lease, reply nil or the PTTL), SUBSCRIBE to the lock's channel, wait for the
//!     unlock message (or the PTTL) and retry; EVALSHA unlock script that DELs and PUBLISHes;
//! (c) the same protocol on redis-server, started side by side.
//!
//! Each holder does one INCR inside the lock (checked at the end: no lost or extra
//! increments). Hand-off latency = time from the holder sending its release to the next
//! grant reply being received by any client. Throughput = grants per second.
//!
//! Usage: `cargo run --release -p tumbler-bench --bin lockbench -- [clients] [seconds]`
//! (defaults 16 clients, 3 s per mode). Scripts are our own, written from the protocol's
//! description (docs/locking.md).

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tumbler_client::{Client, Error, Frame};

const LEASE_MS: &str = "30000";

const ACQUIRE_LUA: &str = "\
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then \
  redis.call('hincrby', KEYS[1], ARGV[2], 1) \
  redis.call('pexpire', KEYS[1], ARGV[1]) \
  return nil \
end \
return redis.call('pttl', KEYS[1])";

const RELEASE_LUA: &str = "\
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end \
local n = redis.call('hincrby', KEYS[1], ARGV[3], -1) \
if n > 0 then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 end \
redis.call('del', KEYS[1]) \
redis.call('publish', KEYS[2], ARGV[1]) \
return 1";

/// Shared between the clients of one run.
struct Run {
    start: Instant,
    stop: AtomicBool,
    /// Nanoseconds since `start` at which the last release was sent (0: none pending).
    released_at: AtomicU64,
    handoffs: Mutex<Vec<u64>>,
    grants: AtomicU64,
}

impl Run {
    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
    fn granted(&self, lat: &mut Vec<u64>) {
        let r = self.released_at.swap(0, Ordering::SeqCst);
        if r != 0 {
            lat.push(self.now_ns().saturating_sub(r));
        }
        self.grants.fetch_add(1, Ordering::Relaxed);
    }
    fn releasing(&self) {
        self.released_at
            .store(self.now_ns().max(1), Ordering::SeqCst);
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Native,
    Redisson,
}

fn connect(addr: SocketAddr) -> Client {
    let mut c = Client::connect(addr).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c
}

fn native_client(addr: SocketAddr, id: usize, run: Arc<Run>) -> (u64, Vec<u64>) {
    let mut c = connect(addr);
    let owner = format!("bench-{id}");
    let (mut n, mut lat) = (0, Vec::new());
    while !run.stop.load(Ordering::Relaxed) {
        let t = c
            .lock_acquire("bench:lock", &owner, 30_000, Some(0), false)
            .expect("acquire");
        assert!(t.is_some());
        run.granted(&mut lat);
        c.cmd(&["INCR", "bench:counter"]).unwrap();
        n += 1;
        run.releasing();
        c.lock_release("bench:lock", &owner).unwrap();
    }
    (n, lat)
}

fn redisson_client(
    addr: SocketAddr,
    id: usize,
    run: Arc<Run>,
    shas: (String, String),
) -> (u64, Vec<u64>) {
    let mut c = connect(addr);
    let mut sub = connect(addr);
    sub.send(&["SUBSCRIBE", "bench:chan"]).unwrap();
    sub.read().unwrap();
    let owner = format!("uuid-{id}:1");
    let (mut n, mut lat) = (0, Vec::new());
    'outer: while !run.stop.load(Ordering::Relaxed) {
        loop {
            let r = c
                .cmd(&["EVALSHA", &shas.0, "1", "bench:lock", LEASE_MS, &owner])
                .expect("acquire script");
            let ttl = match r {
                Frame::Null => break,
                Frame::Integer(t) => t,
                f => panic!("acquire script replied {f:?}"),
            };
            // Wait for an unlock message, at most the remaining lease.
            let wait = Duration::from_millis(ttl.clamp(1, 200) as u64);
            sub.set_read_timeout(Some(wait)).unwrap();
            match sub.read() {
                Ok(_) => {}
                Err(Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("subscriber: {e}"),
            }
            if run.stop.load(Ordering::Relaxed) {
                break 'outer;
            }
        }
        run.granted(&mut lat);
        c.cmd(&["INCR", "bench:counter"]).unwrap();
        n += 1;
        run.releasing();
        let r = c
            .cmd(&[
                "EVALSHA",
                &shas.1,
                "2",
                "bench:lock",
                "bench:chan",
                "0",
                LEASE_MS,
                &owner,
            ])
            .expect("release script");
        assert_eq!(r, Frame::Integer(1));
    }
    (n, lat)
}

struct Outcome {
    grants: u64,
    per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    min_client: u64,
    max_client: u64,
}

fn run_mode(addr: SocketAddr, mode: Mode, clients: usize, secs: f64) -> Result<Outcome, String> {
    let mut admin = connect(addr);
    admin.cmd(&["DEL", "bench:lock", "bench:counter"]).ok();
    let shas = if mode == Mode::Redisson {
        let load = |c: &mut Client, s: &str| match c.cmd(&["SCRIPT", "LOAD", s]) {
            Ok(Frame::BulkString(b)) => Ok(String::from_utf8(b).unwrap()),
            other => Err(format!("SCRIPT LOAD: {other:?}")),
        };
        let a = load(&mut admin, ACQUIRE_LUA)?;
        let r = load(&mut admin, RELEASE_LUA)?;
        // Probe: scripting must really run (a stub that answers SCRIPT LOAD is not enough).
        match admin.cmd(&["EVALSHA", &a, "1", "bench:probe", "1000", "probe"]) {
            Ok(Frame::Null) => {}
            other => return Err(format!("EVALSHA probe: {other:?}")),
        }
        admin.cmd(&["DEL", "bench:probe"]).ok();
        (a, r)
    } else {
        Default::default()
    };
    let run = Arc::new(Run {
        start: Instant::now(),
        stop: AtomicBool::new(false),
        released_at: AtomicU64::new(0),
        handoffs: Mutex::new(Vec::new()),
        grants: AtomicU64::new(0),
    });
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let run = run.clone();
            let shas = shas.clone();
            std::thread::spawn(move || match mode {
                Mode::Native => native_client(addr, i, run),
                Mode::Redisson => redisson_client(addr, i, run, shas),
            })
        })
        .collect();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    run.stop.store(true, Ordering::SeqCst);
    let elapsed = t0.elapsed().as_secs_f64();
    // The queue drains by itself: every client still queued is granted in turn, releases
    // and sees the stop flag.
    let mut per_client = Vec::new();
    let mut lat_all = Vec::new();
    for th in threads {
        let (n, lat) = th.join().map_err(|_| "client panicked".to_string())?;
        per_client.push(n);
        lat_all.extend(lat);
    }
    run.handoffs.lock().unwrap().extend(lat_all);
    let grants: u64 = per_client.iter().sum();
    let counter = match admin.cmd(&["GET", "bench:counter"]) {
        Ok(Frame::BulkString(b)) => String::from_utf8(b).unwrap().parse::<u64>().unwrap(),
        other => return Err(format!("GET counter: {other:?}")),
    };
    if counter != grants {
        return Err(format!("counter {counter} != grants {grants}"));
    }
    let mut lat = run.handoffs.lock().unwrap().clone();
    lat.sort_unstable();
    let pct = |p: f64| {
        if lat.is_empty() {
            0.0
        } else {
            lat[((lat.len() - 1) as f64 * p) as usize] as f64 / 1000.0
        }
    };
    Ok(Outcome {
        grants,
        per_sec: grants as f64 / elapsed,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        min_client: *per_client.iter().min().unwrap_or(&0),
        max_client: *per_client.iter().max().unwrap_or(&0),
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_redis() -> Option<(Child, SocketAddr)> {
    let port = free_port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(mut c) = Client::connect(addr) {
            if c.cmd(&["PING"]).is_ok() {
                return Some((child, addr));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn start_tumbler() -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut cfg = tumbler::Config::default();
            cfg.set("port", "0").unwrap();
            let server = tumbler::Server::start(cfg).await.expect("start tumbler");
            tx.send(server.addr).unwrap();
            std::future::pending::<()>().await;
        });
    });
    rx.recv().unwrap()
}

fn print(name: &str, r: &Result<Outcome, String>) {
    match r {
        Ok(o) => println!(
            "{name:<34} grants {:>7}  {:>9.0}/s  hand-off p50 {:>8.1} us  p99 {:>9.1} us  per-client min/max {}/{}",
            o.grants, o.per_sec, o.p50_us, o.p99_us, o.min_client, o.max_client
        ),
        Err(e) => println!("{name:<34} not run: {}", e.chars().take(90).collect::<String>()),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let clients: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(16);
    let secs: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    println!("lockbench: {clients} clients on one lock, {secs} s per mode, 1 INCR per hold");
    let tumbler = start_tumbler();
    let a = run_mode(tumbler, Mode::Native, clients, secs);
    print("(a) tumbler native LOCK.ACQUIRE", &a);
    let b = run_mode(tumbler, Mode::Redisson, clients, secs);
    print("(b) tumbler Redisson-style Lua", &b);
    let redis = start_redis();
    let c = match &redis {
        Some((_, addr)) => run_mode(*addr, Mode::Redisson, clients, secs),
        None => Err("redis-server did not start".into()),
    };
    print("(c) redis-server Redisson-style", &c);
    if let Some((mut child, _)) = redis {
        let _ = child.kill();
        let _ = child.wait();
    }
    let ratio = |x: &Result<Outcome, String>, y: &Result<Outcome, String>| match (x, y) {
        (Ok(x), Ok(y)) => format!(
            "throughput x{:.2}, p50 hand-off x{:.2} faster, p99 x{:.2} faster",
            x.per_sec / y.per_sec,
            y.p50_us / x.p50_us.max(0.001),
            y.p99_us / x.p99_us.max(0.001)
        ),
        _ => "n/a".into(),
    };
    println!("ratio (a) vs (c): {}", ratio(&a, &c));
    println!("ratio (a) vs (b): {}", ratio(&a, &b));
    println!("ratio (b) vs (c): {}", ratio(&b, &c));
}
