//! Soak driver (bench/soak.sh, docs/fuzzing.md): a mixed lock workload against a running
//! server for a fixed time, checking every reply, with the server's RSS once a minute.
//!
//! Workers, all on their own connections:
//! * Redisson RLock: EVALSHA of Redisson's lock/unlock scripts on 3 keys, waiting for the
//!   unlock message on a pub/sub connection (or the returned PTTL) when the lock is taken.
//!   Under the lock: GET + SET of a counter (a non-atomic read-modify-write that loses
//!   increments if two holders ever overlap).
//! * Native mutex: `LOCK.ACQUIRE ... WAIT`, half of them with SESSION; under the lock the
//!   counter is written with FENCE.SET and the token; tokens must grow per key.
//! * Native semaphore (2 permits) with WAIT: INCR/DECR of an occupancy counter that must
//!   never pass 2.
//! * Scripts: EVAL/EVALSHA of small read-modify-write scripts on a private key; replies
//!   must count up exactly.
//! * Blocking pops: a producer RPUSHes a numbered stream, a consumer BLPOPs it; every
//!   number must arrive once, in order.
//! * Churn: clients connect, run a few commands and leave; others park in BLPOP or in a
//!   LOCK.ACQUIRE WAIT on a held lock, or hold a SESSION lock, and are CLIENT KILLed; the
//!   killed SESSION lock must be granted to a waiter at once.
//!
//! At the end, every counter must equal the number of grants counted by the clients.
//! Usage: `soak --addr 127.0.0.1:PORT --pid PID [--secs 1800]`. Exit code 1 on any wrong
//! reply, final mismatch, or RSS growth after warm-up beyond 20 % and 8 MiB.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tumbler_client::{text, Client, Error, Frame};

/// Redisson's RLock acquire script (tryLockInnerAsync): nil on grant, else the PTTL.
const LOCK: &str = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
/// Redisson's RLock unlock script (unlockInnerAsync): publishes to the lock's channel.
const UNLOCK: &str = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1) if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 else redis.call('del', KEYS[1]) redis.call('publish', KEYS[2], ARGV[1]) return 1 end";
const RMW: &str = "local v = redis.call('incr', KEYS[1]) redis.call('hset', KEYS[2], 'last', v) return {v, redis.call('hget', KEYS[2], 'last')}";

const KEYS: usize = 3;

struct Stats {
    stop: AtomicBool,
    ops: AtomicU64,
    wrong: AtomicU64,
    rlock_grants: [AtomicU64; KEYS],
    native_grants: [AtomicU64; KEYS],
    sem_grants: AtomicU64,
    kills: AtomicU64,
    connects: AtomicU64,
    pops: AtomicU64,
    scripts: AtomicU64,
    /// Unlock messages that woke a waiting RLock worker.
    wakeups: AtomicU64,
    /// LOCK.ACQUIRE / SEM.ACQUIRE WAITs that timed out (allowed, counted).
    timeouts: AtomicU64,
    errors: Mutex<Vec<String>>,
}

impl Stats {
    fn wrong(&self, what: String) {
        self.wrong.fetch_add(1, Ordering::Relaxed);
        let mut e = self.errors.lock().unwrap();
        if e.len() < 50 {
            eprintln!("WRONG: {what}");
            e.push(what);
        }
    }
    fn running(&self) -> bool {
        !self.stop.load(Ordering::Relaxed)
    }
    fn op(&self) {
        self.ops.fetch_add(1, Ordering::Relaxed);
    }
}

fn connect(addr: &str) -> Client {
    for _ in 0..100 {
        if let Ok(mut c) = Client::connect(addr) {
            c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            return c;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("cannot connect to {addr}");
}

fn int(f: &Frame) -> Option<i64> {
    match f {
        Frame::Integer(n) => Some(*n),
        Frame::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        _ => None,
    }
}

fn sha(c: &mut Client, body: &str) -> String {
    text(&c.cmd(&["SCRIPT", "LOAD", body]).expect("SCRIPT LOAD"))
}

/// Redisson-style RLock worker: on contention it subscribes to the lock's channel, retries,
/// waits for the unlock message (or the PTTL), and unsubscribes once it holds the lock, as
/// RedissonLock.lock() does.
fn rlock_worker(addr: String, st: Arc<Stats>, w: usize) {
    let mut c = connect(&addr);
    let mut sub = connect(&addr);
    let (lock, unlock) = (sha(&mut c, LOCK), sha(&mut c, UNLOCK));
    let owner = format!("soak-uuid-{w}:1");
    let mut i = 0usize;
    while st.running() {
        i += 1;
        let k = i % KEYS;
        let key = format!("soak:r{k}");
        let chan = format!("redisson_lock__channel:{{soak:r{k}}}");
        let counter = format!("soak:r{k}:count");
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut subscribed = false;
        let mut held = false;
        loop {
            let r = c.cmd(&["EVALSHA", &lock, "1", &key, "30000", &owner]);
            st.op();
            match r {
                Ok(Frame::Null) => {
                    held = true;
                    break;
                }
                Ok(Frame::Integer(pttl)) if pttl > 0 => {
                    if !subscribed {
                        sub.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                        sub.send(&["SUBSCRIBE", &chan]).unwrap();
                        match sub.read() {
                            Ok(Frame::Array(_)) => subscribed = true,
                            other => st.wrong(format!("SUBSCRIBE: {other:?}")),
                        }
                        continue; // retry once subscribed, so no unlock is missed
                    }
                    sub.set_read_timeout(Some(Duration::from_millis(pttl.min(200) as u64)))
                        .unwrap();
                    match sub.read() {
                        Ok(Frame::Array(m)) if m.len() == 3 && text(&m[0]) == "message" => {
                            st.wakeups.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(other) => st.wrong(format!("rlock subscriber got {other:?}")),
                        Err(Error::Io(_)) => {} // the PTTL passed: retry
                        Err(e) => st.wrong(format!("rlock subscriber: {e}")),
                    }
                }
                other => {
                    st.wrong(format!("rlock acquire {key}: {other:?}"));
                    break;
                }
            }
            if Instant::now() > deadline {
                st.wrong(format!("rlock {key}: not granted in 20 s"));
                break;
            }
        }
        if subscribed {
            sub.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            sub.send(&["UNSUBSCRIBE", &chan]).unwrap();
            // Messages published before the UNSUBSCRIBE took effect come first.
            loop {
                match sub.read() {
                    Ok(Frame::Array(m)) if text(&m[0]) == "unsubscribe" => break,
                    Ok(Frame::Array(m)) if text(&m[0]) == "message" => {}
                    other => {
                        st.wrong(format!("UNSUBSCRIBE: {other:?}"));
                        sub = connect(&addr);
                        break;
                    }
                }
            }
        }
        if !held {
            continue;
        }
        let v = c
            .cmd(&["GET", &counter])
            .ok()
            .and_then(|f| int(&f))
            .unwrap_or(0);
        if let Err(e) = c.cmd(&["SET", &counter, &(v + 1).to_string()]) {
            st.wrong(format!("rlock SET: {e}"));
        }
        st.rlock_grants[k].fetch_add(1, Ordering::Relaxed);
        match c.cmd(&["EVALSHA", &unlock, "2", &key, &chan, "0", "30000", &owner]) {
            Ok(Frame::Integer(1)) => {}
            other => st.wrong(format!("rlock unlock {key}: {other:?}")),
        }
        st.op();
    }
}

/// Native mutex worker: LOCK.ACQUIRE WAIT, FENCE.SET with the token, release.
fn native_worker(addr: String, st: Arc<Stats>, w: usize, last_token: Arc<[AtomicU64; KEYS]>) {
    let mut c = connect(&addr);
    let owner = format!("native-{w}");
    let mut i = 0usize;
    while st.running() {
        i += 1;
        let k = (i + w) % KEYS;
        let key = format!("soak:n{k}");
        let counter = format!("soak:n{k}:count");
        let mut args = vec!["LOCK.ACQUIRE", &key, &owner, "10000", "WAIT", "5000"];
        if i % 2 == 0 {
            args.push("SESSION");
        }
        let token = match c.cmd(&args) {
            Ok(Frame::Integer(t)) => t as u64,
            Ok(Frame::Null) => {
                st.op();
                st.timeouts.fetch_add(1, Ordering::Relaxed);
                continue; // timed out behind the others: allowed
            }
            other => {
                st.wrong(format!("LOCK.ACQUIRE {key}: {other:?}"));
                continue;
            }
        };
        st.op();
        let prev = last_token[k].swap(token, Ordering::SeqCst);
        if token <= prev {
            st.wrong(format!("{key}: token {token} after {prev}"));
        }
        let v = c
            .cmd(&["GET", &counter])
            .ok()
            .and_then(|f| int(&f))
            .unwrap_or(0);
        match c.cmd(&[
            "FENCE.SET",
            &counter,
            &(v + 1).to_string(),
            &key,
            &token.to_string(),
        ]) {
            Ok(Frame::SimpleString(_)) => {}
            other => st.wrong(format!("FENCE.SET {counter}: {other:?}")),
        }
        st.native_grants[k].fetch_add(1, Ordering::Relaxed);
        match c.cmd(&["LOCK.RELEASE", &key, &owner]) {
            Ok(Frame::Integer(0)) => {}
            other => st.wrong(format!("LOCK.RELEASE {key}: {other:?}")),
        }
        st.op();
    }
}

/// Semaphore worker: at most 2 holders at a time.
fn sem_worker(addr: String, st: Arc<Stats>, w: usize) {
    let mut c = connect(&addr);
    let owner = format!("sem-{w}");
    while st.running() {
        match c.cmd(&[
            "SEM.ACQUIRE",
            "soak:sem",
            &owner,
            "2",
            "10000",
            "WAIT",
            "5000",
        ]) {
            Ok(Frame::Integer(_)) => {}
            Ok(Frame::Null) => {
                st.timeouts.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            other => {
                st.wrong(format!("SEM.ACQUIRE: {other:?}"));
                continue;
            }
        }
        st.op();
        match c.cmd(&["INCR", "soak:sem:inside"]) {
            Ok(Frame::Integer(n)) if (1..=2).contains(&n) => {}
            other => st.wrong(format!("semaphore occupancy: {other:?}")),
        }
        st.sem_grants.fetch_add(1, Ordering::Relaxed);
        let _ = c.cmd(&["DECR", "soak:sem:inside"]);
        match c.cmd(&["SEM.RELEASE", "soak:sem", &owner]) {
            Ok(Frame::Integer(0)) => {}
            other => st.wrong(format!("SEM.RELEASE: {other:?}")),
        }
        st.op();
    }
}

/// Script worker: private keys, so every reply is known in advance.
fn script_worker(addr: String, st: Arc<Stats>, w: usize) {
    let mut c = connect(&addr);
    let (k1, k2) = (format!("soak:s{w}"), format!("soak:s{w}:h"));
    let _ = c.cmd(&["DEL", &k1, &k2]);
    let rmw = sha(&mut c, RMW);
    let mut n = 0i64;
    while st.running() {
        n += 1;
        let r = if n % 2 == 0 {
            c.cmd(&["EVALSHA", &rmw, "2", &k1, &k2])
        } else {
            c.cmd(&["EVAL", RMW, "2", &k1, &k2])
        };
        let want = Frame::Array(vec![
            Frame::Integer(n),
            Frame::BulkString(n.to_string().into_bytes()),
        ]);
        match r {
            Ok(f) if f == want => {}
            other => st.wrong(format!("script {k1} call {n}: {other:?}")),
        }
        if n % 50 == 0 {
            // A script that errors must leave the connection usable.
            match c.cmd(&["EVAL", "return redis.call('hget', KEYS[1], 'x')", "1", &k1]) {
                Err(Error::Server(e)) if e.contains("WRONGTYPE") => {}
                other => st.wrong(format!("script error reply: {other:?}")),
            }
        }
        st.scripts.fetch_add(1, Ordering::Relaxed);
        st.op();
    }
}

/// A producer and a consumer on one list: every number arrives once, in order.
fn queue_pair(addr: String, st: Arc<Stats>, q: usize) -> Vec<std::thread::JoinHandle<()>> {
    let key = format!("soak:q{q}");
    let mut p = connect(&addr);
    let _ = p.cmd(&["DEL", &key]);
    let sent = Arc::new(AtomicU64::new(0));
    let (st2, key2, sent2) = (st.clone(), key.clone(), sent.clone());
    let producer = std::thread::spawn(move || {
        let mut n = 0u64;
        while st2.running() {
            match p.cmd(&["LLEN", &key2]) {
                Ok(Frame::Integer(l)) if l > 500 => {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                Ok(Frame::Integer(_)) => {}
                other => st2.wrong(format!("LLEN: {other:?}")),
            }
            let batch: Vec<String> = (n..n + 10).map(|x| x.to_string()).collect();
            let mut args = vec!["RPUSH".to_string(), key2.clone()];
            args.extend(batch);
            match p.cmd(&args) {
                Ok(Frame::Integer(_)) => n += 10,
                other => st2.wrong(format!("RPUSH: {other:?}")),
            }
            sent2.store(n, Ordering::SeqCst);
            st2.op();
        }
    });
    let consumer = std::thread::spawn(move || {
        let mut c = connect(&addr);
        let mut want = 0u64;
        loop {
            match c.cmd(&["BLPOP", &key, "0.5"]) {
                Ok(Frame::Array(v)) if v.len() == 2 => {
                    if int(&v[1]) != Some(want as i64) {
                        st.wrong(format!("BLPOP {key}: got {:?}, want {want}", v[1]));
                        want = int(&v[1]).unwrap_or(0) as u64;
                    }
                    want += 1;
                    st.pops.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Frame::Null) => {
                    // Empty for 0.5 s after the stop: the producer has finished.
                    if !st.running() {
                        break;
                    }
                }
                other => st.wrong(format!("BLPOP {key}: {other:?}")),
            }
            st.op();
        }
        if want != sent.load(Ordering::SeqCst) {
            st.wrong(format!(
                "{key}: consumed {want}, produced {}",
                sent.load(Ordering::SeqCst)
            ));
        }
    });
    vec![producer, consumer]
}

fn client_id(c: &mut Client) -> i64 {
    c.cmd(&["CLIENT", "ID"])
        .ok()
        .and_then(|f| int(&f))
        .expect("CLIENT ID")
}

/// Connection churn and CLIENT KILL of parked clients and SESSION holders.
fn churn_worker(addr: String, st: Arc<Stats>, w: usize) {
    let mut admin = connect(&addr);
    let mut i = 0u64;
    while st.running() {
        i += 1;
        st.connects.fetch_add(1, Ordering::Relaxed);
        match i % 4 {
            0 | 1 => {
                // Connect, a few commands, leave.
                let mut c = connect(&addr);
                let k = format!("soak:churn{w}");
                let ok = matches!(c.cmd(&["SET", &k, "v"]), Ok(Frame::SimpleString(_)))
                    && matches!(c.cmd(&["GET", &k]), Ok(Frame::BulkString(ref b)) if b == b"v")
                    && matches!(c.cmd(&["DEL", &k]), Ok(Frame::Integer(1)));
                if !ok {
                    st.wrong("churn SET/GET/DEL".into());
                }
                if i % 8 == 1 {
                    let _ = c.send(&["SUBSCRIBE", "soak:chan"]);
                    let _ = c.read();
                }
                c.close();
            }
            2 => {
                // Park in BLPOP (a key nobody pushes), then kill it.
                let mut c = connect(&addr);
                let id = client_id(&mut c);
                c.send(&["BLPOP", &format!("soak:never{w}"), "0"]).unwrap();
                std::thread::sleep(Duration::from_millis(5));
                match admin.cmd(&["CLIENT", "KILL", "ID", &id.to_string()]) {
                    Ok(Frame::Integer(1)) => st.kills.fetch_add(1, Ordering::Relaxed),
                    other => {
                        st.wrong(format!("CLIENT KILL blocked: {other:?}"));
                        0
                    }
                };
                if c.read().is_ok() {
                    st.wrong("killed BLPOP client got a reply".into());
                }
            }
            _ => {
                // A SESSION holder is killed; its waiter gets the lock at once.
                let key = format!("soak:sess{w}");
                let mut holder = connect(&addr);
                let hid = client_id(&mut holder);
                let t1 = match holder.cmd(&["LOCK.ACQUIRE", &key, "h", "0", "SESSION"]) {
                    Ok(Frame::Integer(t)) => t,
                    other => {
                        st.wrong(format!("session acquire: {other:?}"));
                        continue;
                    }
                };
                let mut waiter = connect(&addr);
                waiter
                    .send(&["LOCK.ACQUIRE", &key, "w", "10000", "WAIT", "10000"])
                    .unwrap();
                std::thread::sleep(Duration::from_millis(2));
                match admin.cmd(&["CLIENT", "KILL", "ID", &hid.to_string()]) {
                    Ok(Frame::Integer(1)) => {
                        st.kills.fetch_add(1, Ordering::Relaxed);
                    }
                    other => st.wrong(format!("CLIENT KILL holder: {other:?}")),
                }
                match waiter.read() {
                    Ok(Frame::Integer(t2)) if t2 > t1 => {}
                    other => st.wrong(format!("waiter after kill: {other:?} (holder token {t1})")),
                }
                match waiter.cmd(&["LOCK.RELEASE", &key, "w"]) {
                    Ok(Frame::Integer(0)) => {}
                    other => st.wrong(format!("waiter release: {other:?}")),
                }
                waiter.close();
            }
        }
        st.op();
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let addr = opt("--addr").expect("--addr host:port");
    let pid: u32 = opt("--pid").expect("--pid").parse().unwrap();
    let secs: u64 = opt("--secs").map_or(1800, |s| s.parse().unwrap());
    let interval: u64 = opt("--interval").map_or(60, |s| s.parse().unwrap());

    let st = Arc::new(Stats {
        stop: AtomicBool::new(false),
        ops: AtomicU64::new(0),
        wrong: AtomicU64::new(0),
        rlock_grants: Default::default(),
        native_grants: Default::default(),
        sem_grants: AtomicU64::new(0),
        kills: AtomicU64::new(0),
        connects: AtomicU64::new(0),
        pops: AtomicU64::new(0),
        scripts: AtomicU64::new(0),
        wakeups: AtomicU64::new(0),
        timeouts: AtomicU64::new(0),
        errors: Mutex::new(Vec::new()),
    });
    let mut c = connect(&addr);
    c.cmd(&["FLUSHALL"]).unwrap();
    let tokens: Arc<[AtomicU64; KEYS]> = Arc::new(Default::default());
    let mut threads = Vec::new();
    for w in 0..4 {
        let (a, s) = (addr.clone(), st.clone());
        threads.push(std::thread::spawn(move || rlock_worker(a, s, w)));
    }
    for w in 0..4 {
        let (a, s, t) = (addr.clone(), st.clone(), tokens.clone());
        threads.push(std::thread::spawn(move || native_worker(a, s, w, t)));
    }
    for w in 0..3 {
        let (a, s) = (addr.clone(), st.clone());
        threads.push(std::thread::spawn(move || sem_worker(a, s, w)));
    }
    for w in 0..2 {
        let (a, s) = (addr.clone(), st.clone());
        threads.push(std::thread::spawn(move || script_worker(a, s, w)));
    }
    for q in 0..2 {
        threads.extend(queue_pair(addr.clone(), st.clone(), q));
    }
    for w in 0..2 {
        let (a, s) = (addr.clone(), st.clone());
        threads.push(std::thread::spawn(move || churn_worker(a, s, w)));
    }

    let start = Instant::now();
    let mut curve = vec![rss_kib(pid)];
    println!("t=0s: RSS {} KiB (start)", curve[0]);
    let mut next = interval;
    while start.elapsed().as_secs() < secs {
        std::thread::sleep(Duration::from_millis(200));
        if start.elapsed().as_secs() >= next {
            let rss = rss_kib(pid);
            curve.push(rss);
            println!(
                "t={next}s: RSS {rss} KiB, {} ops, {} wrong, {} connects, {} kills",
                st.ops.load(Ordering::Relaxed),
                st.wrong.load(Ordering::Relaxed),
                st.connects.load(Ordering::Relaxed),
                st.kills.load(Ordering::Relaxed)
            );
            next += interval;
        }
    }
    st.stop.store(true, Ordering::SeqCst);
    for t in threads {
        let _ = t.join();
    }

    // Final checks: every counter equals the grants the clients counted.
    for k in 0..KEYS {
        for (kind, grants) in [("r", &st.rlock_grants[k]), ("n", &st.native_grants[k])] {
            let key = format!("soak:{kind}{k}:count");
            let got = c
                .cmd(&["GET", &key])
                .ok()
                .and_then(|f| int(&f))
                .unwrap_or(0);
            let want = grants.load(Ordering::SeqCst) as i64;
            println!("{key} = {got}, grants counted by clients = {want}");
            if got != want {
                st.wrong(format!(
                    "{key}: {got} != {want} grants (lost or overlapping holds)"
                ));
            }
        }
    }
    match c.cmd(&["GET", "soak:sem:inside"]) {
        Ok(f) if int(&f) == Some(0) => {}
        other => st.wrong(format!("semaphore occupancy at the end: {other:?}")),
    }
    let wrong = st.wrong.load(Ordering::SeqCst);
    // Flat after warm-up: compare the last sample with the one after 5 intervals.
    let warm = curve.get(5).copied().unwrap_or(curve[curve.len() - 1]);
    let last = curve[curve.len() - 1];
    let max_after = curve.iter().skip(5).copied().max().unwrap_or(last);
    let growth = last as i64 - warm as i64;
    println!("RSS curve (KiB, one per interval): {curve:?}");
    println!(
        "soak: {} s, {} ops, {} rlock + {} native + {} semaphore grants ({} pub/sub wake-ups, {} WAIT timeouts), {} scripts, {} pops, {} connects, {} kills, {} wrong replies; RSS after warm-up {warm} KiB -> end {last} KiB (max {max_after}, growth {growth} KiB)",
        start.elapsed().as_secs(),
        st.ops.load(Ordering::SeqCst),
        st.rlock_grants.iter().map(|g| g.load(Ordering::SeqCst)).sum::<u64>(),
        st.native_grants.iter().map(|g| g.load(Ordering::SeqCst)).sum::<u64>(),
        st.sem_grants.load(Ordering::SeqCst),
        st.wakeups.load(Ordering::SeqCst),
        st.timeouts.load(Ordering::SeqCst),
        st.scripts.load(Ordering::SeqCst),
        st.pops.load(Ordering::SeqCst),
        st.connects.load(Ordering::SeqCst),
        st.kills.load(Ordering::SeqCst),
        wrong
    );
    let grew = growth > 8 * 1024 && growth as f64 > warm as f64 * 0.2;
    if wrong > 0 || grew {
        println!("SOAK FAILED (wrong replies: {wrong}, RSS grew: {grew})");
        std::process::exit(1);
    }
    println!("SOAK OK");
}
