//! Redisson's fair lock (RedissonFairLock) scripts run through EVAL on tumbler and
//! redis-server over the same sequence of states: first acquire, 2nd/3rd waiters queueing
//! in `redisson_lock_queue:{name}` with timeouts in the zset `redisson_lock_timeout:{name}`,
//! re-entry, queued waiters timing out when a later "current time" is passed, unlock with the
//! publish to the next waiter, and the acquire-failed clean-up. Replies and the resulting
//! keys are compared byte for byte; values derived from the lock's PTTL (which ticks between
//! the two servers' calls) are compared numerically within a tolerance.

use tumbler::tools::bench::workloads;
use tumbler_tests::{Raw, RedisServer, Tumbler};

/// RedissonFairLock.tryLockInnerAsync (RedisCommands.EVAL_LONG).
/// KEYS: lock, queue, timeout set. ARGV: leaseTime, threadId, threadWaitTime, currentTime.
const ACQUIRE: &str = workloads::REDISSON_FAIR_LOCK;

/// RedissonFairLock.unlockInnerAsync.
/// KEYS: lock, queue, timeout set, channel. ARGV: unlock message, leaseTime, threadId,
/// currentTime.
const UNLOCK: &str = workloads::REDISSON_FAIR_UNLOCK;

/// RedissonFairLock.acquireFailedAsync: a waiter that gave up leaves the queue.
/// KEYS: queue, timeout set. ARGV: threadId, threadWaitTime.
const ACQUIRE_FAILED: &str = r#"
local firstThreadId = redis.call('lindex', KEYS[1], 0);
if firstThreadId == ARGV[1] then
    local keys = redis.call('zrange', KEYS[2], 0, -1);
    for i = 1, #keys, 1 do
        redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), keys[i]);
    end;
end;
redis.call('zrem', KEYS[2], ARGV[1]);
redis.call('lrem', KEYS[1], 0, ARGV[1]);
"#;

const LOCK: &str = "{fl}";
const QUEUE: &str = "redisson_lock_queue:{fl}";
const TIMEOUTS: &str = "redisson_lock_timeout:{fl}";
const CHANNEL: &str = "redisson_lock__channel:{fl}";
const LEASE: &str = "30000";
const WAIT: &str = "5000";
/// Milliseconds two PTTL-derived numbers may differ by (time between the two servers' calls).
const TOL: f64 = 2000.0;

/// A parsed RESP2 reply, enough to compare numbers with a tolerance.
#[derive(Debug)]
enum Resp {
    Line(String),
    Int(i64),
    Bulk(Option<String>),
    Array(Vec<Resp>),
}

fn parse(b: &[u8], i: &mut usize) -> Resp {
    let end = b[*i..].windows(2).position(|w| w == b"\r\n").unwrap() + *i;
    let line = String::from_utf8_lossy(&b[*i + 1..end]).into_owned();
    let kind = b[*i];
    *i = end + 2;
    match kind {
        b':' => Resp::Int(line.parse().unwrap()),
        b'$' => {
            let n: i64 = line.parse().unwrap();
            if n < 0 {
                return Resp::Bulk(None);
            }
            let s = String::from_utf8_lossy(&b[*i..*i + n as usize]).into_owned();
            *i += n as usize + 2;
            Resp::Bulk(Some(s))
        }
        b'*' => {
            let n: i64 = line.parse().unwrap();
            Resp::Array((0..n.max(0)).map(|_| parse(b, i)).collect())
        }
        _ => Resp::Line(format!("{}{line}", kind as char)),
    }
}

/// Equal, except that integers and numeric bulk strings may differ by up to `TOL`.
fn approx_eq(a: &Resp, b: &Resp) -> bool {
    let num = |s: &str| s.parse::<f64>().ok();
    match (a, b) {
        (Resp::Int(x), Resp::Int(y)) => (x - y).abs() as f64 <= TOL,
        (Resp::Bulk(Some(x)), Resp::Bulk(Some(y))) => match (num(x), num(y)) {
            (Some(x), Some(y)) => (x - y).abs() <= TOL,
            _ => x == y,
        },
        (Resp::Bulk(None), Resp::Bulk(None)) => true,
        (Resp::Line(x), Resp::Line(y)) => x == y,
        (Resp::Array(x), Resp::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| approx_eq(a, b))
        }
        _ => false,
    }
}

struct Pair {
    t: Raw,
    r: Raw,
}

impl Pair {
    /// Byte-for-byte comparison; returns tumbler's reply.
    fn exact(&mut self, args: &[&str]) -> String {
        let a = self.t.cmd_str(args);
        let b = self.r.cmd_str(args);
        assert_eq!(a, b, "tumbler (left) vs redis-server (right) on {args:?}");
        a
    }

    /// Numbers within `TOL`, everything else exact; returns tumbler's parsed reply.
    fn approx(&mut self, args: &[&str]) -> Resp {
        let a = self.t.cmd(args);
        let b = self.r.cmd(args);
        let (pa, pb) = (parse(&a, &mut 0), parse(&b, &mut 0));
        assert!(
            approx_eq(&pa, &pb),
            "tumbler {:?} vs redis-server {:?} on {args:?}",
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b)
        );
        pa
    }

    fn state(&mut self) {
        self.exact(&["HGETALL", LOCK]);
        self.exact(&["LRANGE", QUEUE, "0", "-1"]);
        self.exact(&["ZRANGE", TIMEOUTS, "0", "-1"]);
        self.approx(&["ZRANGE", TIMEOUTS, "0", "-1", "WITHSCORES"]);
        self.exact(&["TYPE", QUEUE]);
        self.exact(&["TYPE", TIMEOUTS]);
    }
}

fn acquire<'a>(thread: &'a str, now: &'a str) -> Vec<&'a str> {
    vec![
        "EVAL", ACQUIRE, "3", LOCK, QUEUE, TIMEOUTS, LEASE, thread, WAIT, now,
    ]
}

fn unlock<'a>(thread: &'a str, now: &'a str) -> Vec<&'a str> {
    vec![
        "EVAL", UNLOCK, "4", LOCK, QUEUE, TIMEOUTS, CHANNEL, "0", LEASE, thread, now,
    ]
}

fn int(r: &Resp) -> i64 {
    match r {
        Resp::Int(i) => *i,
        other => panic!("integer expected, got {other:?}"),
    }
}

#[test]
fn redisson_fair_lock_scripts_match_redis() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let mut p = Pair {
        t: t.raw(),
        r: redis.raw(),
    };
    // Waiter 3 listens for its turn on both servers.
    let mut subs = [t.raw(), redis.raw()];
    let chan3 = format!("{CHANNEL}:uuid:3");
    for s in subs.iter_mut() {
        s.cmd(&["SUBSCRIBE", &chan3]);
    }
    let now = "1000000";
    // 37.5 s later: waiter 2 (timeout ~ now+35s) is stale, waiter 3 (~ now+40s) is not.
    let later = "1037500";

    // First acquire; the queue and timeout set stay absent.
    assert_eq!(p.exact(&acquire("uuid:1", now)), "$-1\r\n");
    p.state();
    // 2nd and 3rd threads queue up: each gets the expected wait (lock PTTL, then the
    // previous waiter's timeout).
    let ttl2 = int(&p.approx(&acquire("uuid:2", now)));
    assert!(ttl2 > 25000 && ttl2 <= 30000, "{ttl2}");
    let ttl3 = int(&p.approx(&acquire("uuid:3", now)));
    assert!((ttl3 - (ttl2 + 5000)).abs() <= 1, "{ttl3} vs {ttl2}");
    assert_eq!(
        p.exact(&["LRANGE", QUEUE, "0", "-1"]),
        "*2\r\n$6\r\nuuid:2\r\n$6\r\nuuid:3\r\n"
    );
    p.state();
    // Asking again while queued: the approximate remaining wait, queue unchanged.
    p.approx(&acquire("uuid:2", now));
    p.approx(&acquire("uuid:3", now));
    p.state();
    // Re-entry by the holder.
    assert_eq!(p.exact(&acquire("uuid:1", now)), "$-1\r\n");
    assert_eq!(p.exact(&["HGET", LOCK, "uuid:1"]), "$1\r\n2\r\n");
    // A later "current time": waiter 2 timed out and is dropped; 4 queues behind 3.
    let ttl4 = int(&p.approx(&acquire("uuid:4", later)));
    assert!(ttl4 > 0 && ttl4 < 5000, "{ttl4}");
    assert_eq!(
        p.exact(&["LRANGE", QUEUE, "0", "-1"]),
        "*2\r\n$6\r\nuuid:3\r\n$6\r\nuuid:4\r\n"
    );
    p.state();
    // Unlock by a non-holder; then the holder unlocks twice (re-entry count).
    assert_eq!(p.exact(&unlock("uuid:2", later)), "$-1\r\n");
    assert_eq!(p.exact(&unlock("uuid:1", later)), ":0\r\n");
    p.state();
    assert_eq!(p.exact(&unlock("uuid:1", later)), ":1\r\n");
    // Waiter 3, at the head, is told.
    let msgs: Vec<String> = subs
        .iter_mut()
        .map(|s| String::from_utf8_lossy(&s.read_reply()).into_owned())
        .collect();
    assert_eq!(msgs[0], msgs[1]);
    assert!(msgs[0].contains(&chan3), "{}", msgs[0]);
    p.state();
    // The lock is free but 4 is not at the head: it keeps waiting.
    p.approx(&acquire("uuid:4", later));
    // 3 takes it; the remaining waiters' timeouts drop by the thread wait time.
    assert_eq!(p.exact(&acquire("uuid:3", later)), "$-1\r\n");
    p.state();
    p.exact(&["PEXPIRE", LOCK, "100000"]);
    // 4 gives up: it leaves the queue and the timeout set (both keys disappear).
    p.exact(&["EVAL", ACQUIRE_FAILED, "2", QUEUE, TIMEOUTS, "uuid:4", WAIT]);
    p.exact(&["EXISTS", QUEUE, TIMEOUTS]);
    p.state();
    // 5 queues, 3 unlocks, and 5 acquires much later: its own stale entry is purged first,
    // then the free lock with an empty queue is granted.
    p.approx(&acquire("uuid:5", later));
    assert_eq!(p.exact(&unlock("uuid:3", later)), ":1\r\n");
    assert_eq!(p.exact(&acquire("uuid:5", "999999999999")), "$-1\r\n");
    p.state();
    // Unlock of a lock that no longer exists still answers 1 (and notifies a waiter).
    p.exact(&["DEL", LOCK]);
    p.approx(&acquire("uuid:6", later));
    p.exact(&["DEL", LOCK]);
    assert_eq!(p.exact(&unlock("uuid:5", later)), ":1\r\n");
    p.state();
    // Wrong types surface as the script error Redis gives.
    p.exact(&["DEL", QUEUE, TIMEOUTS]);
    p.exact(&["SET", QUEUE, "x"]);
    p.exact(&acquire("uuid:7", later));
    p.exact(&unlock("uuid:7", later));
    p.exact(&["DEL", QUEUE]);
    p.exact(&["HSET", TIMEOUTS, "f", "v"]);
    p.exact(&acquire("uuid:7", later));
    p.exact(&["EVAL", ACQUIRE_FAILED, "2", QUEUE, TIMEOUTS, "uuid:7", WAIT]);
}
