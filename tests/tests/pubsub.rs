//! Pub/sub against redis-server byte for byte (RESP2 and RESP3), plus behaviours that need
//! timing or memory: a Redisson-style lock waiter woken by PUBLISH, ordering from one
//! publisher, and a subscriber that stops reading being disconnected by the output buffer
//! limit while memory stays bounded and other clients are unaffected.

mod support;

use std::io::Read;
use std::time::{Duration, Instant};
use support::diff;
use tumbler_tests::Tumbler;

#[test]
fn subscribe_publish_unsubscribe_resp2() {
    diff(
        r#"
        a: SUBSCRIBE ch1 ch2 ch1
        b: PUBLISH ch1 hello
        b: PUBLISH nobody x
        a: @read
        a: PSUBSCRIBE ch* h?llo [ab]x
        b: PUBLISH ch2 world
        b: PUBLISH bx 1
        a: @read
        b: PUBSUB NUMSUB ch1 ch2 nope
        b: PUBSUB NUMPAT
        b: PUBSUB CHANNELS ch1
        b: PUBSUB CHANNELS x*
        a: GET k
        a: CLIENT REPLY OFF
        a: PING hi
        a: UNSUBSCRIBE ch1
        a: PUNSUBSCRIBE nothere
        a: UNSUBSCRIBE
        a: PUNSUBSCRIBE
        a: PUNSUBSCRIBE
        a: UNSUBSCRIBE
        a: GET k
        a: MULTI
        a: EXEC x
        a: EXEC
        "#,
    );
}

#[test]
fn subscribe_publish_resp3_pushes_interleave_with_commands() {
    diff(
        r#"
        a: ~HELLO 3
        a: SUBSCRIBE ch
        a: SET k v
        b: PUBLISH ch m1
        a: GET k
        b: ~HELLO 3
        b: PUBSUB NUMSUB ch
        a: SSUBSCRIBE s1 s2
        b: SPUBLISH s1 hi
        a: @read
        b: PUBSUB SHARDCHANNELS s1*
        b: PUBSUB SHARDNUMSUB s1 s3
        a: SUNSUBSCRIBE s1
        a: SUNSUBSCRIBE
        a: UNSUBSCRIBE ch
        a: PSUBSCRIBE *
        b: PUBLISH zz 1
        a: @read
        a: PUNSUBSCRIBE
        "#,
    );
}

#[test]
fn pubsub_errors_and_arity() {
    diff(
        r#"
        a: SUBSCRIBE
        a: PUBLISH ch
        a: PUBSUB
        a: PUBSUB FOO
        a: PUBSUB NUMPAT x
        a: PUBSUB CHANNELS a b
        a: SPUBLISH
        a: SUNSUBSCRIBE
        a: UNSUBSCRIBE x
        a: PING
        "#,
    );
}

#[test]
fn subscribe_inside_multi_like_redis_7_0() {
    diff(
        r#"
        a: MULTI
        a: SSUBSCRIBE s
        a: SUBSCRIBE c d
        a: PSUBSCRIBE p*
        a: GET k
        a: EXEC
        a: PING
        b: PUBLISH c x
        a: @read
        b: MULTI
        b: PUBLISH c in-multi
        b: PUBLISH nobody y
        b: EXEC
        a: @read
        "#,
    );
    diff(
        r#"
        a: ~HELLO 3
        a: MULTI
        a: SUBSCRIBE c
        a: MONITOR
        a: EXEC
        a: GET k
        "#,
    );
}

/// Under CLIENT REPLY OFF, pub/sub confirmations and messages still arrive (Redis 7 marks
/// them as pushes); ordinary replies do not.
#[test]
fn pubsub_replies_ignore_client_reply_off() {
    for resp3 in [false, true] {
        let t = Tumbler::start();
        let mut a = t.raw();
        if resp3 {
            a.cmd(&["HELLO", "3"]);
        }
        a.send(&["CLIENT", "REPLY", "OFF"]);
        a.send(&["SET", "k", "v"]);
        assert!(a
            .cmd_str(&["SUBSCRIBE", "ch"])
            .contains("subscribe\r\n$2\r\nch\r\n:1"));
        let mut b = t.raw();
        assert_eq!(b.cmd_str(&["PUBLISH", "ch", "m"]), ":1\r\n");
        assert!(a
            .read_reply()
            .ends_with(b"message\r\n$2\r\nch\r\n$1\r\nm\r\n"));
        assert!(a
            .cmd_str(&["UNSUBSCRIBE"])
            .contains("unsubscribe\r\n$2\r\nch\r\n:0"));
        a.send(&["CLIENT", "REPLY", "ON"]);
        assert_eq!(a.read_reply(), "+OK\r\n");
        assert_eq!(a.cmd_str(&["GET", "k"]), "$1\r\nv\r\n");
    }
}

#[test]
fn messages_from_one_publisher_arrive_in_order() {
    let t = Tumbler::start();
    let mut sub = t.raw();
    assert!(sub.cmd_str(&["SUBSCRIBE", "seq"]).contains("subscribe"));
    let mut p = t.raw();
    let n = 2000;
    let mut pipeline = Vec::new();
    for i in 0..n {
        pipeline.extend(tumbler_tests::encode_cmd(&[
            "PUBLISH",
            "seq",
            &i.to_string(),
        ]));
    }
    p.send_bytes(&pipeline);
    for i in 0..n {
        let r = sub.read_reply();
        let expect = format!(
            "*3\r\n$7\r\nmessage\r\n$3\r\nseq\r\n${}\r\n{}\r\n",
            i.to_string().len(),
            i
        );
        assert_eq!(String::from_utf8_lossy(&r), expect);
    }
    for _ in 0..n {
        assert_eq!(&p.read_reply()[..], b":1\r\n");
    }
}

/// Redisson's lock waiter subscribes to `redisson_lock__channel:{name}` and sleeps until the
/// unlock script publishes there. Until scripting lands, a second client publishes the
/// unlock message directly; the waiter must wake (latency printed, not asserted).
#[test]
fn redisson_style_waiter_wakes_on_publish() {
    let t = Tumbler::start();
    let mut waiter = t.raw();
    assert_eq!(
        waiter.cmd_str(&["SUBSCRIBE", "redisson_lock__channel:{mylock}"]),
        "*3\r\n$9\r\nsubscribe\r\n$31\r\nredisson_lock__channel:{mylock}\r\n:1\r\n"
    );
    let mut holder = t.raw();
    let mut lat = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        assert_eq!(
            holder.cmd_str(&["PUBLISH", "redisson_lock__channel:{mylock}", "0"]),
            ":1\r\n"
        );
        let m = waiter.read_reply();
        lat.push(start.elapsed());
        assert_eq!(
            String::from_utf8_lossy(&m),
            "*3\r\n$7\r\nmessage\r\n$31\r\nredisson_lock__channel:{mylock}\r\n$1\r\n0\r\n"
        );
    }
    lat.sort();
    println!(
        "redisson-style waiter wake-up latency: median {:?}, max {:?}",
        lat[lat.len() / 2],
        lat[lat.len() - 1]
    );
}

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0)
        * 4096
}

/// A subscriber that never reads is disconnected once its backlog passes the pubsub hard
/// limit; the server's memory stays bounded and other subscribers get every message.
#[test]
fn slow_subscriber_is_disconnected_and_memory_stays_bounded() {
    let t = Tumbler::start_with(&[("client-output-buffer-limit", "pubsub 8mb 4mb 60")]);
    let mut slow = t.raw();
    assert!(slow.cmd_str(&["SUBSCRIBE", "flood"]).contains("subscribe"));
    let mut good = t.raw();
    assert!(good.cmd_str(&["SUBSCRIBE", "flood"]).contains("subscribe"));
    let mut p = t.raw();
    let payload = "x".repeat(64 * 1024);
    let rss_before = rss_bytes();
    let total = 1600; // 100 MB published; the slow client reads none of it.
    let mut max_pending = 0usize;
    let mut receivers = Vec::new();
    for i in 0..total {
        let r = p.cmd_str(&["PUBLISH", "flood", &payload]);
        receivers.push(r);
        // The reading subscriber keeps up; the slow one never reads.
        assert!(good.read_reply().len() > 64 * 1024);
        if i % 100 == 0 {
            for h in t.shared.clients.iter() {
                max_pending =
                    max_pending.max(h.pending_out.load(std::sync::atomic::Ordering::Relaxed));
            }
        }
    }
    // Still counted as a receiver until the disconnect is noticed (as in Redis).
    assert_eq!(receivers[0], ":2\r\n");
    let rss_growth = rss_bytes().saturating_sub(rss_before);
    println!(
        "slow subscriber: max pending {} bytes, rss growth {} bytes for {} MB published",
        max_pending,
        rss_growth,
        total * 64 / 1024
    );
    assert!(
        max_pending <= 9 << 20,
        "backlog bounded by the hard limit: {max_pending}"
    );
    assert!(rss_growth < 64 << 20, "rss grew {rss_growth} bytes");
    // The slow client is gone: after draining what the kernel buffered, EOF.
    slow.stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let closed = loop {
        match slow.stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(_) => break false,
        }
    };
    assert!(closed, "slow subscriber was disconnected");
    assert_eq!(p.cmd_str(&["PUBLISH", "flood", "after"]), ":1\r\n");
    assert!(good.read_reply().ends_with(b"after\r\n"));
    assert_eq!(p.cmd_str(&["PING"]), "+PONG\r\n");
}

/// Past the soft limit for longer than the soft seconds (and under the hard limit), a
/// subscriber that does not read is disconnected too.
#[test]
fn slow_subscriber_soft_limit_disconnects_after_the_grace_period() {
    let t = Tumbler::start_with(&[("client-output-buffer-limit", "pubsub 0 256kb 1")]);
    let mut slow = t.raw();
    assert!(slow.cmd_str(&["SUBSCRIBE", "soft"]).contains("subscribe"));
    let mut p = t.raw();
    let payload = "y".repeat(64 * 1024);
    // Enough to fill the kernel's socket buffers and pass the soft limit.
    for _ in 0..400 {
        p.cmd(&["PUBLISH", "soft", &payload]);
    }
    let start = Instant::now();
    let gone = loop {
        p.cmd(&["PUBLISH", "soft", &payload]);
        let alive = t.shared.clients.iter().any(|h| {
            h.info.lock().subs > 0 && !h.killed.load(std::sync::atomic::Ordering::Relaxed)
        });
        if !alive {
            break true;
        }
        if start.elapsed() > Duration::from_secs(10) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    println!("soft limit: disconnected after {:?} over", start.elapsed());
    assert!(gone, "subscriber over the soft limit was not disconnected");
    assert!(slow.is_closed());
}

/// CLIENT KILL reaches a subscriber whose connection is stuck writing (it stopped reading
/// and the socket buffers are full): the kill does not wait for the write to finish.
#[test]
fn client_kill_reaches_a_subscriber_stuck_writing() {
    let t = Tumbler::start_with(&[("client-output-buffer-limit", "pubsub 0 0 0")]);
    let mut slow = t.raw();
    assert!(slow.cmd_str(&["SUBSCRIBE", "stuck"]).contains("subscribe"));
    let id = t
        .shared
        .clients
        .iter()
        .find(|h| h.info.lock().subs > 0)
        .map(|h| h.id)
        .unwrap();
    let mut p = t.raw();
    let payload = "z".repeat(64 * 1024);
    for _ in 0..400 {
        p.cmd(&["PUBLISH", "stuck", &payload]);
    }
    assert_eq!(
        p.cmd_str(&["CLIENT", "KILL", "ID", &id.to_string()]),
        ":1\r\n"
    );
    let start = Instant::now();
    while t.shared.clients.contains_key(&id) && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !t.shared.clients.contains_key(&id),
        "killed subscriber still registered"
    );
    assert_eq!(p.cmd_str(&["PUBLISH", "stuck", "x"]), ":0\r\n");
    drop(slow);
}
