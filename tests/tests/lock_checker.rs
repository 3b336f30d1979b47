//! A concurrent checker for the native mutex: many clients on a few contended keys, with
//! SESSION holders killed mid-hold, leases left to expire, and WAIT timeouts. It records
//! every grant and checks:
//!
//! * mutual exclusion: the client-side hold interval [grant reply received, release sent]
//!   lies inside the server-side one, so the intervals of holders that released normally
//!   (or were killed) must never overlap per key; and a fenced read-modify-write counter
//!   per key loses no update;
//! * tokens strictly increase per key in grant order (checked both under the lock against
//!   the previous holder's token and over the sorted intervals);
//! * FIFO: waiters queued in a known order are granted in that order, skipping those that
//!   timed out or disconnected.
//!
//! Bounded in time (a few seconds per test) and prints how many acquisitions it checked.

use rand::{Rng, SeedableRng};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tumbler_client::{text, Client, Error, Frame};
use tumbler_tests::Tumbler;

const WORKERS: usize = 12;
const KEYS: &[&str] = &["ck:a", "ck:b", "ck:c"];
const RUN_FOR: Duration = Duration::from_secs(6);

#[derive(Debug, Clone)]
struct Hold {
    key: &'static str,
    token: u64,
    start: Instant,
    end: Instant,
}

#[derive(Debug, Default)]
struct Tally {
    holds: Vec<Hold>,
    grants: u64,
    expired: u64,
    killed: u64,
    timeouts: u64,
    increments: [u64; 3],
}

fn connect(addr: std::net::SocketAddr) -> Client {
    let mut c = Client::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c
}

fn int_of(f: &Frame) -> Option<i64> {
    match f {
        Frame::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        Frame::Integer(n) => Some(*n),
        _ => None,
    }
}

fn worker(addr: std::net::SocketAddr, w: usize, tally: Arc<Mutex<Tally>>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x10c4 + w as u64);
    let mut c = connect(addr);
    let stop = Instant::now() + RUN_FOR;
    let mut iter = 0u64;
    let mut local = Tally::default();
    while Instant::now() < stop {
        iter += 1;
        let ki = rng.gen_range(0..KEYS.len());
        let key = KEYS[ki];
        let owner = format!("w{w}-{iter}");
        // 0..=5 normal lease, 6..=7 SESSION, 8 short lease left to expire, 9 SESSION killed.
        let mode = rng.gen_range(0..10);
        let session = matches!(mode, 6 | 7 | 9);
        let ttl = match mode {
            8 => 30,
            _ if session => 0,
            _ => 10_000,
        };
        let wait = rng.gen_range(20..400);
        let Some(token) = c
            .lock_acquire(key, &owner, ttl, Some(wait), session)
            .unwrap()
        else {
            local.timeouts += 1;
            continue;
        };
        let start = Instant::now();
        local.grants += 1;

        // Under the lock: the previous holder's token must be smaller than ours.
        c.send(&["MULTI"]).unwrap();
        c.read().unwrap();
        c.send(&["GET", &format!("last:{key}")]).unwrap();
        c.read().unwrap();
        c.send(&["LOCK.CHECK", key, &token.to_string()]).unwrap();
        c.read().unwrap();
        let exec = c.cmd(&["EXEC"]).unwrap();
        let Frame::Array(parts) = exec else {
            panic!("{exec:?}")
        };
        if parts[1] == Frame::Integer(1) {
            let last = int_of(&parts[0]).unwrap_or(0) as u64;
            assert!(last < token, "{key}: token {token} after {last}");
            let _ = c.fence_set(&format!("last:{key}"), &token.to_string(), key, token);
        }

        // A fenced read-modify-write: overlapping holders would lose increments.
        let v = c.cmd(&["GET", &format!("cnt:{key}")]).unwrap();
        let v = int_of(&v).unwrap_or(0);
        if rng.gen_bool(0.3) {
            std::thread::sleep(Duration::from_millis(rng.gen_range(0..3)));
        }
        match c.fence_set(&format!("cnt:{key}"), &(v + 1).to_string(), key, token) {
            Ok(()) => local.increments[ki] += 1,
            Err(Error::Server(e)) if mode == 8 && e.starts_with("FENCED") => {}
            Err(e) => panic!("{key} token {token} mode {mode}: {e}"),
        }

        match mode {
            8 => {
                // Pause past the lease: the lock must be gone and a late release refused.
                std::thread::sleep(Duration::from_millis(45));
                match c.lock_release(key, &owner) {
                    Err(Error::Server(e)) if e.starts_with("NOTHELD") => {}
                    other => panic!("release after lease expiry: {other:?}"),
                }
                local.expired += 1;
            }
            9 => {
                let end = Instant::now();
                // Dropping the connection releases the SESSION lock server-side.
                std::mem::replace(&mut c, connect(addr)).close();
                local.killed += 1;
                local.holds.push(Hold {
                    key,
                    token,
                    start,
                    end,
                });
            }
            _ => {
                let end = Instant::now();
                assert_eq!(c.lock_release(key, &owner).unwrap(), 0);
                local.holds.push(Hold {
                    key,
                    token,
                    start,
                    end,
                });
            }
        }
    }
    let mut t = tally.lock().unwrap();
    t.holds.extend(local.holds);
    t.grants += local.grants;
    t.expired += local.expired;
    t.killed += local.killed;
    t.timeouts += local.timeouts;
    for i in 0..3 {
        t.increments[i] += local.increments[i];
    }
}

#[test]
fn contended_locks_stay_exclusive_and_tokens_increase() {
    let t = Tumbler::start();
    let tally = Arc::new(Mutex::new(Tally::default()));
    let threads: Vec<_> = (0..WORKERS)
        .map(|w| {
            let tally = tally.clone();
            let addr = t.addr;
            std::thread::spawn(move || worker(addr, w, tally))
        })
        .collect();
    for th in threads {
        th.join().expect("worker panicked");
    }
    let tally = tally.lock().unwrap();
    let mut c = connect(t.addr);
    for (i, key) in KEYS.iter().enumerate() {
        let v = c.cmd(&["GET", &format!("cnt:{key}")]).unwrap();
        assert_eq!(
            int_of(&v).unwrap_or(0) as u64,
            tally.increments[i],
            "{key}: lost fenced increments (mutual exclusion broken)"
        );
        let mut holds: Vec<&Hold> = tally.holds.iter().filter(|h| h.key == *key).collect();
        holds.sort_by_key(|h| h.start);
        for w in holds.windows(2) {
            assert!(
                w[1].start >= w[0].end,
                "{key}: holds overlap: {:?} and {:?}",
                w[0],
                w[1]
            );
            assert!(
                w[1].token > w[0].token,
                "{key}: tokens not increasing: {w:?}"
            );
        }
        // No lock is left behind: every holder released, expired or was killed.
        let deadline = Instant::now() + Duration::from_secs(5);
        while c.lock_info(key).unwrap().is_some() {
            assert!(Instant::now() < deadline, "{key} still held at the end");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    assert!(
        tally.grants > 100,
        "too few grants to mean anything: {}",
        tally.grants
    );
    assert!(
        tally.killed > 0 && tally.expired > 0 && tally.timeouts > 0,
        "{tally:?}"
    );
    // A second CI run sets TUMBLER_TEST_LOCKDEP=yes (scripts/test.sh): the checker must then
    // have been on and seen the grants, and the same guarantees must hold.
    if let Ok(mode) = std::env::var("TUMBLER_TEST_LOCKDEP") {
        let info = text(&c.cmd(&["INFO", "lockdep"]).unwrap());
        assert!(info.contains(&format!("lockdep_mode:{mode}")), "{info}");
        let seen: u64 = info
            .lines()
            .find_map(|l| l.strip_prefix("lockdep_acquisitions:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        assert!(
            seen >= tally.grants / 2,
            "lockdep saw {seen} of {} grants: {info}",
            tally.grants
        );
        println!("lockdep ({mode}) was on and saw {seen} acquisitions");
    }
    println!(
        "lock checker: {} acquisitions checked ({} intervals, {} SESSION holders killed, {} leases expired, {} WAIT timeouts)",
        tally.grants,
        tally.holds.len(),
        tally.killed,
        tally.expired,
        tally.timeouts
    );
}

/// Waiters queued in a known order are served in that order; those that time out or
/// disconnect while queued are skipped, and the next one is granted at once.
#[test]
fn waiters_are_served_fifo_around_timeouts_and_kills() {
    let t = Tumbler::start();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut obs = connect(t.addr);
    let mut checked = 0;
    for round in 0..8 {
        let key = format!("fifo:{round}");
        let mut holder = connect(t.addr);
        let t0 = holder
            .lock_acquire(&key, "H", 30_000, None, false)
            .unwrap()
            .unwrap();
        // (client, index, fate): 0 waits forever, 1 times out, 2 is killed while queued.
        let mut waiters = Vec::new();
        for i in 0..10 {
            let fate = match rng.gen_range(0..6) {
                0 => 1,
                1 => 2,
                _ => 0,
            };
            let mut c = connect(t.addr);
            let wait = if fate == 1 { "30" } else { "0" };
            c.send(&[
                "LOCK.ACQUIRE",
                &key,
                &format!("W{i}"),
                "30000",
                "WAIT",
                wait,
            ])
            .unwrap();
            // Confirm it is queued before the next one arrives, so the order is known.
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let n = obs
                    .lock_info(&key)
                    .unwrap()
                    .and_then(|f| f.into_iter().find(|(k, _)| k == "waiters").map(|(_, v)| v));
                if n == Some(Frame::Integer(waiters.len() as i64 + 1)) {
                    break;
                }
                assert!(Instant::now() < deadline, "waiter {i} never queued");
                std::thread::sleep(Duration::from_millis(1));
            }
            if fate == 1 {
                // Let it time out now so the queue length stays predictable.
                assert_eq!(c.read().unwrap(), Frame::Null);
            }
            if fate == 2 {
                c.close();
                let deadline = Instant::now() + Duration::from_secs(10);
                while obs
                    .lock_info(&key)
                    .unwrap()
                    .and_then(|f| f.into_iter().find(|(k, _)| k == "waiters").map(|(_, v)| v))
                    != Some(Frame::Integer(waiters.len() as i64))
                {
                    assert!(Instant::now() < deadline);
                    std::thread::sleep(Duration::from_millis(1));
                }
                continue;
            }
            if fate == 0 {
                waiters.push((c, i));
            }
        }
        if round % 2 == 1 && !waiters.is_empty() {
            // Release and try to re-take it in one transaction: with waiters queued the
            // lock is free inside EXEC, yet a newcomer must not barge ahead of them.
            for cmd in [
                &["MULTI"][..],
                &["LOCK.RELEASE", &key, "H"],
                &["LOCK.ACQUIRE", &key, "X", "1000"],
            ] {
                holder.send(cmd).unwrap();
                holder.read().unwrap();
            }
            let exec = holder.cmd(&["EXEC"]).unwrap();
            assert_eq!(
                exec,
                Frame::Array(vec![Frame::Integer(0), Frame::Null]),
                "barging"
            );
        } else {
            assert_eq!(holder.lock_release(&key, "H").unwrap(), 0);
        }
        let mut prev = t0;
        for (c, i) in waiters.iter_mut() {
            let tok = match c.read().unwrap() {
                Frame::Integer(n) => n as u64,
                f => panic!("W{i}: {f:?}"),
            };
            assert!(
                tok > prev,
                "W{i} served out of order: token {tok} after {prev}"
            );
            // While W holds it, LOCK.INFO names it.
            let info = obs.lock_info(&key).unwrap().unwrap();
            let owner = info
                .iter()
                .find(|(k, _)| k == "owner")
                .map(|(_, v)| text(v));
            assert_eq!(owner.as_deref(), Some(format!("W{i}").as_str()));
            prev = tok;
            assert_eq!(c.lock_release(&key, &format!("W{i}")).unwrap(), 0);
            checked += 1;
        }
    }
    println!("FIFO checker: {checked} queued acquisitions served in arrival order");
    assert!(checked > 20);
}
