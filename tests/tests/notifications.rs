//! Keyspace notifications: a subscriber on `__key*@*__:*` receives the same messages from
//! tumbler and redis-server for the same commands (generic, string, hash, expired from
//! lazy and active expiry), and the config flags parse and print as Redis does.

mod support;

use support::{diff, diff_with};

const ALL: &[(&str, &str)] = &[("notify-keyspace-events", "KEA")];

#[test]
fn string_and_generic_events() {
    diff_with(
        ALL,
        r#"
        a: PSUBSCRIBE __key*@*__:*
        b: SET s v
        b: SET s v NX
        b: SETNX s2 v
        b: SETEX s3 100 v
        b: PSETEX s4 100000 v
        b: SET s v EX 100 GET
        b: MSET m1 1 m2 2
        b: MSETNX m3 3 m4 4
        b: APPEND s more
        b: SETRANGE s 2 xy
        b: INCR n
        b: INCRBY n 5
        b: DECR n
        b: DECRBY n 2
        b: INCRBYFLOAT f 1.5
        b: GETSET s new
        b: GETDEL s
        b: GETEX m1 EX 100
        b: GETEX m1 PERSIST
        b: GETEX m1
        b: EXPIRE m1 100
        b: PEXPIRE m1 100000
        b: EXPIREAT m1 99999999999
        b: PERSIST m1
        b: PERSIST m1
        b: EXPIRE m1 -1
        b: DEL m2 m3 nosuch
        b: UNLINK m4
        b: SET t 1
        b: SELECT 1
        b: SET other 1
        b: SELECT 0
        b: LPUSH l a
        b: RPUSH l b
        b: ZADD z 1 a
        b: ZADD z 2 b
        a: @read
        "#,
    );
}

#[test]
fn hash_events() {
    diff_with(
        ALL,
        r#"
        a: PSUBSCRIBE __key*@0__:*
        b: HSET h f1 v1 f2 v2
        b: HSETNX h f1 x
        b: HSETNX h f3 x
        b: HMSET h f4 v
        b: HINCRBY h n 2
        b: HINCRBYFLOAT h fl 1.5
        b: HDEL h f1 nosuch
        b: HDEL h nosuch
        b: HDEL h f2 f3 f4 n fl
        b: EXISTS h
        a: @read
        "#,
    );
}

#[test]
fn class_masks_and_keyevent_only() {
    diff_with(
        &[("notify-keyspace-events", "E$")],
        r#"
        a: PSUBSCRIBE *
        b: SET k v
        b: HSET h f v
        b: DEL k
        b: CONFIG SET notify-keyspace-events Kg
        b: SET k v
        b: DEL k
        b: CONFIG SET notify-keyspace-events Eh
        b: HSET h g v
        b: CONFIG GET notify-keyspace-events
        b: CONFIG SET notify-keyspace-events Q
        b: CONFIG SET notify-keyspace-events ""
        b: SET k v
        a: @read
        "#,
    );
    diff(
        r#"
        a: CONFIG SET notify-keyspace-events KA
        a: CONFIG GET notify-keyspace-events
        a: CONFIG SET notify-keyspace-events gKE
        a: CONFIG GET notify-keyspace-events
        a: CONFIG SET notify-keyspace-events $lshzxeKE
        a: CONFIG GET notify-keyspace-events
        a: CONFIG SET notify-keyspace-events KEA
        "#,
    );
}

#[test]
fn expired_events_match_redis() {
    diff_with(
        ALL,
        r#"
        a: PSUBSCRIBE __key*@0__:*
        b: SET k1 v PX 30
        a: @read
        @sleep 100
        b: GET k1
        a: @read
        b: SET k2 v PX 30
        @sleep 700
        a: @read
        b: SET k3 v
        b: EXPIRE k3 0
        b: SET k4 v
        b: PEXPIREAT k4 1
        a: @read
        "#,
    );
}

/// A connection subscribed to db 0's `expired` key events.
fn expired_subscriber(t: &tumbler_tests::Tumbler) -> tumbler_tests::Raw {
    let mut sub = t.raw();
    assert!(sub
        .cmd_str(&["SUBSCRIBE", "__keyevent@0__:expired"])
        .contains(":1\r\n"));
    sub
}

/// The message an `expired_subscriber` reads when `key` expires.
fn expired_message(key: &str) -> String {
    format!(
        "*3\r\n$7\r\nmessage\r\n$22\r\n__keyevent@0__:expired\r\n${}\r\n{key}\r\n",
        key.len()
    )
}

/// The `expired` event comes from lazy expiry (a read of an expired key, with active
/// expiry off) and from active expiry (nobody reads the key).
#[test]
fn expired_events_from_lazy_and_active_expiry() {
    let t = tumbler_tests::Tumbler::start_with(ALL);
    let mut sub = expired_subscriber(&t);
    let mut c = t.raw();
    assert_eq!(c.cmd_str(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["SET", "lazy", "v", "PX", "20"]), "+OK\r\n");
    std::thread::sleep(std::time::Duration::from_millis(80));
    assert_eq!(c.cmd_str(&["GET", "lazy"]), "$-1\r\n");
    assert_eq!(sub.read_reply(), expired_message("lazy"));
    assert_eq!(c.cmd_str(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["SET", "active", "v", "PX", "20"]), "+OK\r\n");
    assert_eq!(sub.read_reply(), expired_message("active"));
}

/// Renewing a far TTL (a lock watchdog's PEXPIRE) does not wake the timer, but a nearer
/// deadline set among the renewals still does: the near key expires actively, in order,
/// while the renewed one keeps its TTL.
#[test]
fn a_near_ttl_among_far_renewals_still_expires_actively() {
    let t = tumbler_tests::Tumbler::start_with(ALL);
    let mut sub = expired_subscriber(&t);
    let mut c = t.raw();
    assert_eq!(c.cmd_str(&["SET", "far", "v", "PX", "60000"]), "+OK\r\n");
    for i in 0..200 {
        assert_eq!(c.cmd_str(&["PEXPIRE", "far", "60000"]), ":1\r\n");
        if i == 100 {
            assert_eq!(c.cmd_str(&["SET", "near2", "v", "PX", "40"]), "+OK\r\n");
            assert_eq!(c.cmd_str(&["SET", "near1", "v", "PX", "20"]), "+OK\r\n");
        }
    }
    for k in ["near1", "near2"] {
        assert_eq!(sub.read_reply(), expired_message(k));
    }
    let pttl: i64 = c.cmd_str(&["PTTL", "far"])[1..].trim().parse().unwrap();
    assert!(pttl > 50_000, "{pttl}");
    assert_eq!(c.cmd_str(&["DBSIZE"]), ":1\r\n");
}

#[test]
fn new_key_events() {
    diff_with(
        &[("notify-keyspace-events", "KEAn")],
        r#"
        a: PSUBSCRIBE *
        b: SET foo bar
        b: SET foo baz
        b: SET bar bar
        b: INCR n
        b: INCR n
        b: APPEND ap x
        b: SETRANGE sr 1 x
        b: INCRBYFLOAT fl 1
        b: MSET foo 1 m 2
        b: HSET h f v
        b: HSET h g v
        b: SETEX ex 100 v
        b: RENAME foo foo2
        b: RENAME foo2 bar
        b: COPY bar c1
        b: COPY bar c1 REPLACE
        b: MOVE c1 1
        b: SELECT 1
        b: MOVE c1 0
        b: SELECT 0
        b: LPUSH l a
        b: RPUSH l b
        b: ZADD z 1 a
        b: ZADD z 2 b
        a: @read
        "#,
    );
}

/// With an evicting policy, a maxmemory under the server's footprint evicts every key at
/// once (CONFIG SET runs the eviction), each with an `evicted` event; writes then fail
/// with OOM as nothing is left to evict.
#[test]
fn evicted_events_match_redis() {
    diff_with(
        &[("notify-keyspace-events", "KEe")],
        r#"
        a: PSUBSCRIBE *
        b: SET foo bar
        b: CONFIG SET maxmemory-policy allkeys-lru
        b: CONFIG SET maxmemory 1
        a: @read
        b: SET x y
        b: GET foo
        b: CONFIG SET maxmemory 0
        b: SET x y
        b: CONFIG SET maxmemory-policy volatile-lru
        b: SET v 1 EX 100
        b: CONFIG SET maxmemory 1
        a: @read
        b: DBSIZE
        b: CONFIG SET maxmemory 0
        b: CONFIG SET maxmemory-policy noeviction
        "#,
    );
}

#[test]
fn eviction_counts_in_info() {
    let t = tumbler_tests::Tumbler::start();
    let mut c = t.raw();
    for i in 0..10 {
        c.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "maxmemory-policy", "allkeys-random"]),
        "+OK\r\n"
    );
    assert_eq!(c.cmd_str(&["CONFIG", "SET", "maxmemory", "1"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["DBSIZE"]), ":0\r\n");
    assert!(c
        .cmd_str(&["INFO", "stats"])
        .contains("evicted_keys:10\r\n"));
    assert_eq!(c.cmd_str(&["CONFIG", "SET", "maxmemory", "0"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["SET", "k", "v"]), "+OK\r\n");
}
