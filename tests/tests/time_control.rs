//! TUMBLER.TIME over the wire: absent unless enabled; ADVANCE fires expiry, lock leases and
//! timeouts as real time would; FREEZE stops the countdown.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tumbler_tests::{diff_script, Raw, RedisServer, Tumbler};

fn enabled() -> Tumbler {
    Tumbler::start_with(&[("enable-time-control", "yes")])
}

fn int(reply: &str) -> i64 {
    reply
        .strip_prefix(':')
        .and_then(|s| s.strip_suffix("\r\n"))
        .unwrap_or_else(|| panic!("not an integer reply: {reply:?}"))
        .parse()
        .unwrap()
}

#[test]
fn time_control_is_absent_unless_enabled() {
    let t = Tumbler::start();
    let mut c = t.raw();
    assert_eq!(
        c.cmd_str(&["TUMBLER.TIME", "ADVANCE", "30001"]),
        "-ERR unknown command 'TUMBLER.TIME', with args beginning with: 'ADVANCE' '30001' \r\n"
    );
    // Even a bad subcommand or arity looks like an unknown command, not a known one.
    assert_eq!(
        c.cmd_str(&["tumbler.time"]),
        "-ERR unknown command 'tumbler.time', with args beginning with: \r\n"
    );
    assert_eq!(
        c.cmd_str(&["tumbler.time", "nope"]),
        "-ERR unknown command 'tumbler.time', with args beginning with: 'nope' \r\n"
    );
    assert_eq!(
        c.cmd_str(&["COMMAND", "INFO", "tumbler.time"]),
        "*1\r\n$-1\r\n"
    );
    assert_eq!(
        c.cmd_str(&["COMMAND", "INFO", "tumbler.time|advance"]),
        "*1\r\n$-1\r\n"
    );
    let list = c.cmd_str(&["COMMAND", "LIST"]);
    assert!(list.contains("\r\nget\r\n"), "{list}");
    // TUMBLER.PROFILE (the script profiler) and TUMBLER.LOCKDEP are always there;
    // TUMBLER.TIME is not.
    assert!(
        !list.to_ascii_lowercase().contains("tumbler.time"),
        "{list}"
    );
    let all = c.cmd_str(&["COMMAND"]);
    assert!(!all.contains("tumbler.time"));
    assert_eq!(
        c.cmd_str(&["COMMAND", "DOCS", "tumbler.time"]),
        "*0\r\n",
        "COMMAND DOCS must not know it"
    );
    // A transaction queues an unknown command as an error, and EXEC aborts.
    assert_eq!(c.cmd_str(&["MULTI"]), "+OK\r\n");
    assert!(c
        .cmd_str(&["TUMBLER.TIME", "NOW"])
        .starts_with("-ERR unknown command"));
    assert!(c.cmd_str(&["EXEC"]).starts_with("-EXECABORT"));
    // The switch is visible and cannot be flipped by a client.
    assert_eq!(
        c.cmd_str(&["CONFIG", "GET", "enable-time-control"]),
        "*2\r\n$19\r\nenable-time-control\r\n$2\r\nno\r\n"
    );
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "enable-time-control", "yes"]),
        "-ERR CONFIG SET failed (possibly related to argument 'enable-time-control') - can't set immutable config\r\n"
    );
    assert!(c
        .cmd_str(&["TUMBLER.TIME", "NOW"])
        .starts_with("-ERR unknown command"));
}

#[test]
fn disabled_time_control_replies_like_redis_for_an_unknown_command() {
    let t = Tumbler::start_with(&[("personality", "redis-7.0")]);
    let Some(r) = RedisServer::start() else {
        return;
    };
    diff_script(
        &mut t.raw(),
        &mut r.raw(),
        "TUMBLER.TIME ADVANCE 30001\n\
         tumbler.time now\n\
         Tumbler.Time\n\
         TUMBLER.TIME HELP\n\
         COMMAND INFO tumbler.time\n\
         COMMAND INFO tumbler.time|now\n\
         COMMAND GETKEYS tumbler.time now\n",
    );
}

#[test]
fn enabled_time_control_is_listed_and_documented() {
    let t = enabled();
    let mut c = t.raw();
    assert_eq!(
        c.cmd_str(&["CONFIG", "GET", "enable-time-control"]),
        "*2\r\n$19\r\nenable-time-control\r\n$3\r\nyes\r\n"
    );
    assert!(c.cmd_str(&["COMMAND", "LIST"]).contains("tumbler.time"));
    let info = c.cmd_str(&["COMMAND", "INFO", "tumbler.time"]);
    assert!(info.contains("tumbler.time|advance"), "{info}");
    assert!(info.contains("tumbler.time|freeze"), "{info}");
    let help = c.cmd_str(&["TUMBLER.TIME", "HELP"]);
    for word in ["ADVANCE", "FREEZE", "RESUME", "NOW"] {
        assert!(help.contains(word), "{help}");
    }
    assert_eq!(
        c.cmd_str(&["TUMBLER.TIME", "ADVANCE", "-1"]),
        "-ERR milliseconds must be between 0 and 1000000000000 (time only moves forward)\r\n"
    );
    assert_eq!(
        c.cmd_str(&["TUMBLER.TIME", "ADVANCE", "soon"]),
        "-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(
        c.cmd_str(&["TUMBLER.TIME", "ADVANCE"]),
        "-ERR wrong number of arguments for 'tumbler.time|advance' command\r\n"
    );
    assert_eq!(
        c.cmd_str(&["TUMBLER.TIME", "BACKWARDS"]),
        "-ERR unknown subcommand 'BACKWARDS'. Try TUMBLER.TIME HELP.\r\n"
    );
    assert_eq!(
        c.cmd_str(&["TUMBLER.TIME"]),
        "-ERR wrong number of arguments for 'tumbler.time' command\r\n"
    );
}

#[test]
fn advance_moves_now_time_and_ttls() {
    let t = enabled();
    let mut c = t.raw();
    let before = int(&c.cmd_str(&["TUMBLER.TIME", "NOW"]));
    let after = int(&c.cmd_str(&["TUMBLER.TIME", "ADVANCE", "3600000"]));
    assert!(after >= before + 3_600_000, "{before} -> {after}");
    // TIME follows the same clock.
    let time = c.cmd_str(&["TIME"]);
    let secs: i64 = time.split("\r\n").nth(2).unwrap().parse().unwrap();
    assert!(secs * 1000 >= before + 3_600_000 - 1000, "{time}");

    assert_eq!(c.cmd_str(&["SET", "k", "v", "PX", "10000"]), "+OK\r\n");
    c.cmd_str(&["TUMBLER.TIME", "ADVANCE", "4000"]);
    let pttl = int(&c.cmd_str(&["PTTL", "k"]));
    assert!((5000..=6000).contains(&pttl), "pttl {pttl}");
    c.cmd_str(&["TUMBLER.TIME", "ADVANCE", "6000"]);
    assert_eq!(c.cmd_str(&["GET", "k"]), "$-1\r\n");
    assert_eq!(
        c.cmd_str(&["TUMBLER.TIME", "ADVANCE", "0"]).chars().next(),
        Some(':')
    );
}

#[test]
fn freeze_stops_ttl_countdown_and_resume_continues_it() {
    let t = enabled();
    let mut c = t.raw();
    assert_eq!(c.cmd_str(&["TUMBLER.TIME", "FREEZE"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["SET", "k", "v", "PX", "100"]), "+OK\r\n");
    let now = int(&c.cmd_str(&["TUMBLER.TIME", "NOW"]));
    std::thread::sleep(Duration::from_millis(250));
    // Real time passed, server time did not.
    assert_eq!(int(&c.cmd_str(&["TUMBLER.TIME", "NOW"])), now);
    assert_eq!(c.cmd_str(&["PTTL", "k"]), ":100\r\n");
    assert_eq!(c.cmd_str(&["GET", "k"]), "$1\r\nv\r\n");
    // ADVANCE while frozen moves the frozen instant.
    c.cmd_str(&["TUMBLER.TIME", "ADVANCE", "40"]);
    assert_eq!(c.cmd_str(&["PTTL", "k"]), ":60\r\n");
    assert_eq!(c.cmd_str(&["TUMBLER.TIME", "RESUME"]), "+OK\r\n");
    // Resuming does not jump over the time spent frozen.
    let pttl = int(&c.cmd_str(&["PTTL", "k"]));
    assert!((0..=60).contains(&pttl), "pttl {pttl}");
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(c.cmd_str(&["GET", "k"]), "$-1\r\n");
    // FREEZE and RESUME are idempotent.
    assert_eq!(c.cmd_str(&["TUMBLER.TIME", "RESUME"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["TUMBLER.TIME", "FREEZE"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["TUMBLER.TIME", "FREEZE"]), "+OK\r\n");
}

#[test]
fn advance_fires_active_expiry_with_keyspace_events() {
    let t = enabled();
    let mut c = t.raw();
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "notify-keyspace-events", "Ex"]),
        "+OK\r\n"
    );
    let mut sub = t.raw();
    sub.cmd_str(&["SUBSCRIBE", "__keyevent@0__:expired"]);
    assert_eq!(c.cmd_str(&["SET", "lease", "x", "PX", "60000"]), "+OK\r\n");
    c.cmd_str(&["TUMBLER.TIME", "ADVANCE", "60001"]);
    // Nobody touched the key: only active expiry can have produced this event.
    let msg = String::from_utf8_lossy(&sub.read_reply()).into_owned();
    assert_eq!(
        msg,
        "*3\r\n$7\r\nmessage\r\n$22\r\n__keyevent@0__:expired\r\n$5\r\nlease\r\n"
    );
    assert_eq!(c.cmd_str(&["DBSIZE"]), ":0\r\n");
}

/// Redisson's lock layout without Lua: a hash `{owner-id:thread -> hold count}` with a
/// lease (PEXPIRE 30000), acquired atomically with WATCH/MULTI when the key is absent.
fn try_acquire(c: &mut Raw, lock: &str, owner: &str) -> bool {
    c.cmd_str(&["WATCH", lock]);
    if c.cmd_str(&["EXISTS", lock]) != ":0\r\n" {
        c.cmd_str(&["UNWATCH"]);
        return false;
    }
    c.cmd_str(&["MULTI"]);
    c.cmd_str(&["HINCRBY", lock, owner, "1"]);
    c.cmd_str(&["PEXPIRE", lock, "30000"]);
    c.cmd_str(&["EXEC"]) == "*2\r\n:1\r\n:1\r\n"
}

#[test]
fn redisson_style_lease_lapses_after_advance_and_a_waiter_takes_the_lock() {
    let t = enabled();
    let mut owner = t.raw();
    assert!(try_acquire(&mut owner, "lock:order:42", "uuid-a:1"));
    let pttl = int(&owner.cmd_str(&["PTTL", "lock:order:42"]));
    assert!((29_000..=30_000).contains(&pttl), "{pttl}");

    // A waiter polls with the acquire sequence, as Redisson's tryLock loop does.
    let addr = t.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let waiter = std::thread::spawn(move || {
        let mut w = Raw::connect(addr);
        let mut tries = 0u64;
        while !stop2.load(Ordering::SeqCst) {
            tries += 1;
            if try_acquire(&mut w, "lock:order:42", "uuid-b:7") {
                return Some((Instant::now(), tries));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        None
    });
    // While the lease runs the waiter must not get the lock.
    std::thread::sleep(Duration::from_millis(100));
    assert!(!waiter.is_finished(), "waiter took a held lock");
    assert_eq!(
        owner.cmd_str(&["HGET", "lock:order:42", "uuid-a:1"]),
        "$1\r\n1\r\n"
    );

    let mut ctl = t.raw();
    ctl.cmd_str(&["TUMBLER.TIME", "ADVANCE", "29000"]);
    std::thread::sleep(Duration::from_millis(50));
    assert!(!waiter.is_finished(), "lease lapsed 1 s early");

    let advanced = Instant::now();
    ctl.cmd_str(&["TUMBLER.TIME", "ADVANCE", "1001"]);
    // Bound the wait so a bug fails the test instead of hanging it.
    let deadline = advanced + Duration::from_secs(10);
    while !waiter.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    stop.store(true, Ordering::SeqCst);
    let (got_at, tries) = waiter
        .join()
        .unwrap()
        .expect("the waiter never took the lock after the lease lapsed");
    let lag = got_at.duration_since(advanced);
    eprintln!("waiter took the lock {lag:?} (real time) after ADVANCE, after {tries} tries");
    assert_eq!(
        owner.cmd_str(&["HGETALL", "lock:order:42"]),
        "*2\r\n$8\r\nuuid-b:7\r\n$1\r\n1\r\n"
    );
    // The new holder got a fresh 30 s lease on the advanced clock.
    let pttl = int(&owner.cmd_str(&["PTTL", "lock:order:42"]));
    assert!((29_000..=30_000).contains(&pttl), "{pttl}");
}

#[test]
fn set_nx_lock_expires_on_advance_and_a_set_nx_waiter_takes_it() {
    let t = enabled();
    let mut a = t.raw();
    let mut b = t.raw();
    assert_eq!(
        a.cmd_str(&["SET", "lock", "token-a", "NX", "PX", "30000"]),
        "+OK\r\n"
    );
    assert_eq!(
        b.cmd_str(&["SET", "lock", "token-b", "NX", "PX", "30000"]),
        "$-1\r\n"
    );
    a.cmd_str(&["TUMBLER.TIME", "ADVANCE", "30001"]);
    assert_eq!(
        b.cmd_str(&["SET", "lock", "token-b", "NX", "PX", "30000"]),
        "+OK\r\n"
    );
    assert_eq!(a.cmd_str(&["GET", "lock"]), "$7\r\ntoken-b\r\n");
}

#[test]
fn blocked_command_times_out_on_advance() {
    let t = enabled();
    let mut c = t.raw();
    c.send(&["BLPOP", "nothing", "3600"]);
    std::thread::sleep(Duration::from_millis(100));
    let mut ctl = t.raw();
    ctl.cmd_str(&["TUMBLER.TIME", "ADVANCE", "3600001"]);
    assert_eq!(&c.read_reply()[..], b"*-1\r\n");
}

#[test]
fn time_control_is_refused_inside_a_transaction() {
    let t = enabled();
    let mut c = t.raw();
    assert_eq!(c.cmd_str(&["MULTI"]), "+OK\r\n");
    assert_eq!(
        c.cmd_str(&["TUMBLER.TIME", "ADVANCE", "5001"]),
        "-ERR Command not allowed inside a transaction\r\n"
    );
    assert!(c.cmd_str(&["EXEC"]).starts_with("-EXECABORT"));
}

/// Acquire in one script, the way Redisson's RLock does: take the lock when absent or
/// re-enter when we own it, and otherwise return the remaining lease for the retry delay.
const ACQUIRE: &str = "\
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then \
  redis.call('hincrby', KEYS[1], ARGV[2], 1) \
  redis.call('pexpire', KEYS[1], ARGV[1]) \
  return false \
end \
return redis.call('pttl', KEYS[1])";

#[test]
fn scripted_lock_lease_and_script_time_follow_the_controlled_clock() {
    let t = enabled();
    let mut c = t.raw();
    let acquire =
        |c: &mut Raw, owner: &str| c.cmd_str(&["EVAL", ACQUIRE, "1", "lock:{res}", "30000", owner]);
    let mut w = t.raw();
    assert_eq!(acquire(&mut c, "a:1"), "$-1\r\n");
    assert_eq!(acquire(&mut c, "a:1"), "$-1\r\n", "re-entry");
    let left = int(&acquire(&mut w, "b:1"));
    assert!((29_000..=30_000).contains(&left), "{left}");
    c.cmd_str(&["TUMBLER.TIME", "ADVANCE", "30001"]);
    assert_eq!(acquire(&mut w, "b:1"), "$-1\r\n");
    assert_eq!(
        c.cmd_str(&["HGETALL", "lock:{res}"]),
        "*2\r\n$3\r\nb:1\r\n$1\r\n1\r\n"
    );
    // redis.call('TIME') inside a script reads the same clock.
    let now = int(&c.cmd_str(&["TUMBLER.TIME", "ADVANCE", "3600000"]));
    let secs = int(&c.cmd_str(&["EVAL", "return tonumber(redis.call('TIME')[1])", "0"]));
    assert!(
        secs * 1000 >= now - 1000,
        "script TIME {secs} vs clock {now}"
    );
    // Time control itself is not callable from scripts.
    assert!(c
        .cmd_str(&["EVAL", "return redis.call('TUMBLER.TIME', 'NOW')", "0"])
        .starts_with("-"));
}

#[test]
fn native_lock_lease_lapses_on_advance_and_hands_over_to_the_waiter() {
    let t = enabled();
    let mut a = t.raw();
    let token = a.cmd_str(&["LOCK.ACQUIRE", "job", "a", "30000"]);
    assert!(token.starts_with(':'), "{token}");
    // b waits for up to an hour (server time); the lease is what frees the lock.
    let mut b = t.raw();
    b.send(&["LOCK.ACQUIRE", "job", "b", "30000", "WAIT", "3600000"]);
    std::thread::sleep(Duration::from_millis(100));
    let mut ctl = t.raw();
    ctl.cmd_str(&["TUMBLER.TIME", "ADVANCE", "29000"]);
    std::thread::sleep(Duration::from_millis(50));
    ctl.cmd_str(&["TUMBLER.TIME", "ADVANCE", "1001"]);
    let granted = String::from_utf8_lossy(&b.read_reply()).into_owned();
    assert!(granted.starts_with(':'), "{granted}");
    assert!(int(&granted) > int(&token), "fencing tokens increase");
    // The old holder's release is refused: it lost the lock when its lease lapsed.
    assert!(a.cmd_str(&["LOCK.RELEASE", "job", "a"]).starts_with('-'));
    // A WAIT timeout also runs on the controlled clock.
    let mut c = t.raw();
    c.send(&["LOCK.ACQUIRE", "job", "c", "30000", "WAIT", "5000"]);
    std::thread::sleep(Duration::from_millis(100));
    ctl.cmd_str(&["TUMBLER.TIME", "ADVANCE", "5001"]);
    assert_eq!(&c.read_reply()[..], b"$-1\r\n");
}
