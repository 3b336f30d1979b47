//! Lists and sorted sets end to end with the `redis` crate and keyspace notifications:
//! every write sends its event, and emptied containers send "del".

use std::time::Duration;
use tumbler_tests::{Raw, Tumbler};

/// Reads pub/sub pushes until `n` (channel, payload) pairs arrived.
fn events(sub: &mut Raw, n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|_| {
            let r = String::from_utf8_lossy(&sub.read_reply()).into_owned();
            let parts: Vec<&str> = r.split("\r\n").collect();
            // *4 $8 pmessage $pat pattern $chan channel $msg message
            (parts[6].to_string(), parts[8].to_string())
        })
        .collect()
}

#[test]
fn list_writes_send_keyspace_events() {
    let t = Tumbler::start();
    let mut c = t.raw();
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]),
        "+OK\r\n"
    );
    let mut sub = t.raw();
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    c.cmd(&["RPUSH", "l", "a", "b", "c"]);
    c.cmd(&["LPUSH", "l", "z"]);
    c.cmd(&["LSET", "l", "0", "y"]);
    c.cmd(&["LINSERT", "l", "BEFORE", "a", "x"]);
    c.cmd(&["LREM", "l", "1", "x"]);
    c.cmd(&["LTRIM", "l", "0", "2"]);
    c.cmd(&["LMOVE", "l", "m", "LEFT", "RIGHT"]);
    c.cmd(&["RPOP", "l", "5"]);
    let got: Vec<String> = events(&mut sub, 10)
        .into_iter()
        .map(|(ch, key)| format!("{} {key}", ch.trim_start_matches("__keyevent@0__:")))
        .collect();
    // LMOVE announces the push on the destination before the pop on the source, as Redis.
    assert_eq!(
        got,
        [
            "rpush l",
            "lpush l",
            "lset l",
            "linsert l",
            "lrem l",
            "ltrim l",
            "rpush m",
            "lpop l",
            "rpop l",
            "del l"
        ]
    );
}

#[test]
fn zset_writes_send_keyspace_events() {
    let t = Tumbler::start();
    let mut c = t.raw();
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut sub = t.raw();
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    c.cmd(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    c.cmd(&["ZINCRBY", "z", "1", "a"]);
    c.cmd(&["ZREM", "z", "a"]);
    c.cmd(&["ZPOPMIN", "z"]);
    c.cmd(&["ZREMRANGEBYSCORE", "z", "-inf", "+inf"]);
    c.cmd(&["ZADD", "z", "NX", "1", "q"]);
    c.cmd(&["ZUNIONSTORE", "u", "1", "z"]);
    let got: Vec<String> = events(&mut sub, 8)
        .into_iter()
        .map(|(ch, key)| format!("{} {key}", ch.trim_start_matches("__keyevent@0__:")))
        .collect();
    assert_eq!(
        got,
        [
            "zadd z",
            "zincr z",
            "zrem z",
            "zpopmin z",
            "zremrangebyscore z",
            "del z",
            "zadd z",
            "zunionstore u"
        ]
    );
}

#[test]
fn redisson_style_queue_with_the_redis_crate() {
    let t = Tumbler::start();
    let client = redis::Client::open(t.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    con.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let q = "redisson_lock_queue:{lock}";
    let z = "redisson_lock_timeout:{lock}";
    for (i, who) in ["t1", "t2", "t3"].iter().enumerate() {
        let _: () = redis::cmd("RPUSH")
            .arg(q)
            .arg(*who)
            .query(&mut con)
            .unwrap();
        let _: () = redis::cmd("ZADD")
            .arg(z)
            .arg(1000 + i as i64 * 100)
            .arg(*who)
            .query(&mut con)
            .unwrap();
    }
    let head: String = redis::cmd("LINDEX").arg(q).arg(0).query(&mut con).unwrap();
    assert_eq!(head, "t1");
    let s: f64 = redis::cmd("ZSCORE")
        .arg(z)
        .arg("t2")
        .query(&mut con)
        .unwrap();
    assert_eq!(s, 1100.0);
    let rank: i64 = redis::cmd("ZRANK")
        .arg(z)
        .arg("t3")
        .query(&mut con)
        .unwrap();
    assert_eq!(rank, 2);
    let _: () = redis::cmd("LREM")
        .arg(q)
        .arg(0)
        .arg("t2")
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("ZREM").arg(z).arg("t2").query(&mut con).unwrap();
    let rest: Vec<String> = redis::cmd("LRANGE")
        .arg(q)
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert_eq!(rest, ["t1", "t3"]);
    let zr: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(z)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut con)
        .unwrap();
    assert_eq!(zr, [("t1".to_string(), 1000.0), ("t3".to_string(), 1200.0)]);
}

#[test]
fn large_sorted_set_ranks_stay_consistent() {
    // Bounded: 5000 members, a few hundred queries.
    let t = Tumbler::start();
    let mut c = t.raw();
    let mut args: Vec<String> = vec!["ZADD".into(), "big".into()];
    for i in 0..5000 {
        args.push(((i * 7919) % 5000).to_string());
        args.push(format!("m{i:05}"));
    }
    assert_eq!(c.cmd_str(&args), ":5000\r\n");
    for i in (0..5000).step_by(250) {
        let member = format!("m{i:05}");
        let score = (i * 7919) % 5000;
        // Scores are a permutation of 0..5000, so the rank is the score.
        assert_eq!(
            c.cmd_str(&["ZRANK", "big", &member]),
            format!(":{score}\r\n")
        );
        let r = c.cmd_str(&["ZRANGE", "big", &score.to_string(), &score.to_string()]);
        assert_eq!(r, format!("*1\r\n$6\r\n{member}\r\n"));
    }
    assert_eq!(c.cmd_str(&["ZCOUNT", "big", "(100", "200"]), ":100\r\n");
    assert_eq!(
        c.cmd_str(&["ZREMRANGEBYRANK", "big", "0", "999"]),
        ":1000\r\n"
    );
    assert_eq!(c.cmd_str(&["ZCARD", "big"]), ":4000\r\n");
    assert_eq!(
        c.cmd_str(&["ZRANGE", "big", "0", "0", "WITHSCORES"]),
        c.cmd_str(&["ZRANGEBYSCORE", "big", "1000", "1000", "WITHSCORES"])
    );
}
