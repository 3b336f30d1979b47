//! Differential tests for streams: the same commands to tumbler and to a real redis-server,
//! replies compared byte for byte (RESP2 and RESP3). IDs are explicit (auto IDs read the
//! clock), and replies that carry idle or delivery times are compared through their
//! time-free forms (the XPENDING summary, XINFO GROUPS, JUSTID claims).

use std::time::{Duration, Instant};
use tumbler_tests::diff_against_redis as run;
use tumbler_tests::diff_against_redis_resp3 as run_resp3;
use tumbler_tests::{Raw, RedisServer, Tumbler};

#[test]
fn xadd_xrange_xdel_and_errors() {
    run(r#"
        XADD s 1-1 a 1
        XADD s 1-* b 2
        XADD s 2 c 3 d 4
        XADD s 2-* e 5
        XADD s 1-5 x y
        XADD s 2-2 x y
        XADD s 0-0 x y
        XADD s 0 x y
        XADD n 0-* x y
        XADD s 3-0 x
        XADD s 3-0
        XADD s foo x y
        XADD s 1-x x y
        XADD s -1 x y
        XADD s + x y
        XADD s NOMKSTREAM 3-1 f v
        XADD nokey NOMKSTREAM 1-1 f v
        EXISTS nokey
        XADD s MAXLEN x 4-0 f v
        XADD s MAXLEN -1 4-0 f v
        XADD s MINID x 4-0 f v
        XADD s MAXLEN 1 MINID 0 4-0 f v
        XADD s LIMIT 5 4-0 f v
        XADD s MAXLEN 5 LIMIT 5 4-0 f v
        XADD s LIMIT -1 4-0 f v
        XLEN s
        XLEN nokey
        XRANGE s - +
        XRANGE s - + COUNT 2
        XRANGE s - + COUNT 0
        XRANGE s - + COUNT -1
        XRANGE s - + COUNT x
        XRANGE s - + FOO
        XRANGE s (1-1 +
        XRANGE s - (2-1
        XRANGE s 2 2
        XRANGE s (- +
        XRANGE s (18446744073709551615-18446744073709551615 +
        XRANGE s - (0-0
        XRANGE s x +
        XRANGE s 3 1
        XREVRANGE s + -
        XREVRANGE s + - COUNT 1
        XREVRANGE s (3-1 (1-1
        XRANGE nokey - +
        XDEL s 1-2 9-9
        XDEL s x
        XDEL nokey 1-1
        XLEN s
        XADD max 18446744073709551615-18446744073709551615 a b
        XADD max 18446744073709551615-* a b
        SET str v
        XADD str 1-1 f v
        XLEN str
        XRANGE str - +
        XDEL str 1-1
        TYPE s
        OBJECT ENCODING s
    "#);
}

#[test]
fn trimming_follows_redis_nodes() {
    run(r#"
        CONFIG SET stream-node-max-entries 10
        XADD t 1 f v
        XADD t 2 f v
        XADD t 3 f v
        XADD t 4 f v
        XADD t 5 f v
        XADD t 6 f v
        XADD t 7 f v
        XADD t 8 f v
        XADD t 9 f v
        XADD t 10 f v
        XADD t 11 f v
        XADD t 12 f v
        XADD t 13 f v
        XADD t 14 f v
        XADD t 15 f v
        XADD t 16 f v
        XADD t 17 f v
        XADD t 18 f v
        XADD t 19 f v
        XADD t 20 f v
        XADD t 21 f v
        XADD t 22 f v
        XADD t 23 f v
        XADD t 24 f v
        XADD t 25 f v
        XTRIM t MAXLEN ~ 12
        XLEN t
        XTRIM t MAXLEN ~ 12 LIMIT 3
        XTRIM t MINID ~ 24
        XLEN t
        XTRIM t MAXLEN = 7
        XRANGE t - +
        XTRIM t MINID 23
        XRANGE t - +
        XADD t MAXLEN ~ 1 26 f v
        XLEN t
        XADD t MINID 100 27 f v
        XLEN t
        XTRIM t MAXLEN 0
        XLEN t
        XTRIM t
        XTRIM t FOO 1
        XTRIM t MAXLEN 1 LIMIT 1
        XTRIM t MAXLEN ~ 1 LIMIT x
        XTRIM nokey MAXLEN 1
        SET str v
        XTRIM str MAXLEN 1
        CONFIG SET stream-node-max-entries 100
    "#);
}

#[test]
fn xsetid_and_xinfo_counters() {
    run(r#"
        XADD x 1-0 data a
        XADD x 2-0 data b
        XADD x 3-0 data c
        XDEL x 2-0
        XSETID x 5-0
        XSETID x 2-0
        XSETID x 10-0 ENTRIESADDED 1 MAXDELETEDID 2-0
        XSETID x 10-0 ENTRIESADDED 9 MAXDELETEDID 11-0
        XSETID x 10-0 ENTRIESADDED -1
        XSETID x 10-0 ENTRIESADDED 9 MAXDELETEDID 4-0
        XSETID x 1-1 0
        XSETID x x
        XSETID nokey 1-1
        XINFO STREAM x FULL
        XDEL x 1-0
        XTRIM x MAXLEN = 0
        XINFO STREAM x FULL COUNT 1
        XINFO STREAM x FOO
        XINFO STREAM x FULL COUNT
        XINFO STREAM nokey
        XINFO GROUPS nokey
        XINFO FOO x
        XINFO HELP
        XINFO HELP x
        XGROUP HELP
        XGROUP HELP x
        XADD e MAXLEN 0 1-1 a b
        XINFO STREAM e
    "#);
}

#[test]
fn consumer_groups() {
    run(r#"
        XGROUP CREATE s g $
        XGROUP CREATE s g $ MKSTREAM
        XGROUP CREATE s g $ MKSTREAM
        XGROUP CREATE s g2 0 ENTRIESREAD -2
        XGROUP CREATE s g2 0 FOO
        XGROUP CREATE s g2 x
        XGROUP FOO s g
        XGROUP SETID s nog 0
        XGROUP CREATECONSUMER s nog c
        XGROUP DELCONSUMER s nog c
        XGROUP DESTROY s nog
        XGROUP DESTROY nokey g
        XADD s 1-0 a 1
        XADD s 2-0 b 2
        XADD s 3-0 c 3
        XADD s 4-0 d 4
        XREADGROUP GROUP g alice COUNT 1 STREAMS s >
        XREADGROUP GROUP g bob STREAMS s >
        XREADGROUP GROUP g bob STREAMS s >
        XREADGROUP GROUP g alice STREAMS s 0
        XREADGROUP GROUP g bob COUNT 1 STREAMS s 0
        XREADGROUP GROUP g bob STREAMS s 2-0
        XREADGROUP GROUP g nobody STREAMS s 0
        XREADGROUP GROUP nog c STREAMS s >
        XREADGROUP GROUP g c STREAMS nokey >
        XREADGROUP GROUP g c STREAMS s $
        XREADGROUP GROUP g c STREAMS s
        XREADGROUP GROUP g c STREAMS s t >
        XREADGROUP STREAMS s >
        XREADGROUP GROUP g c COUNT x STREAMS s >
        XPENDING s g
        XPENDING s nog
        XPENDING nokey g
        XPENDING s g - +
        XPENDING s g IDLE 5 - +
        XPENDING s g x + 10
        XPENDING s g - + x
        XPENDING s g IDLE x - + 10
        XPENDING s g (18446744073709551615-18446744073709551615 + 10
        XPENDING s g - + 10 nobody
        XPENDING s g + - 10
        XINFO GROUPS s
        XACK s g 1-0 9-9
        XACK s g 1-0
        XACK s g x
        XACK s nog x
        XACK nokey g 1-0
        XPENDING s g
        XCLAIM s g carol 0 2-0 3-0 9-9 JUSTID
        XCLAIM s g carol 0 2-0 JUSTID RETRYCOUNT 7
        XCLAIM s g dave 0 4-0
        XCLAIM s g dave 0 1-0 FORCE JUSTID
        XCLAIM s g dave 0 9-9 FORCE JUSTID
        XCLAIM s g dave 0 2-0 FOO
        XCLAIM s g dave 0 2-0 IDLE x
        XCLAIM s g dave 0 2-0 TIME x
        XCLAIM s g dave 0 2-0 RETRYCOUNT x
        XCLAIM s g dave 0 2-0 LASTID x
        XCLAIM s g dave x 2-0
        XCLAIM s nog dave 0 2-0
        XCLAIM s g dave 3600000 2-0 JUSTID
        XCLAIM s g dave 0 2-0 LASTID 10-0 JUSTID
        XPENDING s g
        XINFO GROUPS s
        XDEL s 3-0
        XAUTOCLAIM s g erin 0 - COUNT 1 JUSTID
        XAUTOCLAIM s g erin 0 - JUSTID
        XAUTOCLAIM s g erin 0 0
        XAUTOCLAIM s g erin 0 0 COUNT 0
        XAUTOCLAIM s g erin 0 0 COUNT 8070450532247928833
        XAUTOCLAIM s g erin 0 0 FOO
        XAUTOCLAIM s g erin x 0
        XAUTOCLAIM s g erin 0 x
        XAUTOCLAIM s nog erin 0 0
        XPENDING s g
        XGROUP CREATECONSUMER s g frank
        XGROUP CREATECONSUMER s g frank
        XGROUP DELCONSUMER s g erin
        XGROUP DELCONSUMER s g nobody
        XPENDING s g
        XGROUP SETID s g 0 ENTRIESREAD 1
        XINFO GROUPS s
        XGROUP SETID s g $
        XGROUP SETID s g - ENTRIESREAD
        XGROUP SETID s g x
        XINFO GROUPS s
        XGROUP DESTROY s g
        XINFO GROUPS s
        XREADGROUP GROUP g2 c NOACK STREAMS s >
        XPENDING s g2
        XINFO GROUPS s
        SET str v
        XGROUP CREATE str g $
        XREADGROUP GROUP g c STREAMS str >
        XPENDING str g
        XACK str g 1-0
        XCLAIM str g c 0 1-0
        XAUTOCLAIM str g c 0 0
    "#);
}

#[test]
fn lag_and_entries_read() {
    run(r#"
        XADD x 1-0 data a
        XADD x 2-0 data b
        XADD x 3-0 data c
        XADD x 4-0 data d
        XADD x 5-0 data e
        XDEL x 3-0
        XGROUP CREATE x g1 0
        XGROUP CREATE x g2 0
        XGROUP CREATE x g3 $
        XGROUP CREATE x g4 0 ENTRIESREAD 2
        XINFO GROUPS x
        XREADGROUP GROUP g1 c COUNT 1 STREAMS x >
        XINFO GROUPS x
        XREADGROUP GROUP g1 c COUNT 3 STREAMS x >
        XINFO GROUPS x
        XADD x 6-0 data f
        XINFO GROUPS x
        XTRIM x MINID = 3-0
        XINFO GROUPS x
        XTRIM x MINID = 5-0
        XINFO GROUPS x
        XGROUP CREATE y g 0 MKSTREAM
        XINFO GROUPS y
    "#);
}

#[test]
fn xread_without_blocking() {
    run(r#"
        XADD a 1-0 f 1
        XADD a 2-0 f 2
        XADD b 5-0 g 5
        XREAD STREAMS a 0
        XREAD COUNT 1 STREAMS a b 0 0
        XREAD STREAMS a b 1-0 5-0
        XREAD STREAMS a b $ $
        XREAD STREAMS nokey 0
        XREAD STREAMS a a 0 1
        XREAD STREAMS a
        XREAD STREAMS a b 0
        XREAD COUNT x STREAMS a 0
        XREAD GROUP g c STREAMS a 0
        XREAD NOACK STREAMS a 0
        XREAD STREAMS a >
        XREAD STREAMS a x
        XREAD BLOCK -1 STREAMS a 0
        XREAD BLOCK x STREAMS a 0
        XREAD FOO STREAMS a 0
        XREAD BLOCK 10 STREAMS a 0
        SET str v
        XREAD STREAMS str 0
        MULTI
        XREAD BLOCK 0 STREAMS a $
        XADD a 3-0 f 3
        XREAD BLOCK 0 STREAMS a 2-0
        EXEC
        XGROUP CREATE a g 0
        MULTI
        XREADGROUP GROUP g c BLOCK 0 STREAMS a >
        XREADGROUP GROUP g c BLOCK 0 STREAMS a >
        XREADGROUP GROUP g c STREAMS a 0
        EXEC
        EVAL "return redis.call('xread','streams','a','0')" 0
        EVAL "return redis.call('xread','block','0','streams','a','$')" 0
        EVAL "return redis.call('xreadgroup','group','g','c','block','0','streams','a','>')" 0
        XADD a 4-0 f 4
        EVAL "return redis.call('xreadgroup','group','g','c','streams','a','>')" 0
        EVAL "return redis.call('xpending','a','g')" 0
    "#);
}

#[test]
fn resp3_shapes() {
    run_resp3(
        r#"
        XADD a 1-0 f 1
        XADD b 2-0 g 2
        XREAD STREAMS a b 0 0
        XREAD STREAMS a 5
        XRANGE a - +
        XGROUP CREATE a g 0
        XREADGROUP GROUP g c STREAMS a >
        XREADGROUP GROUP g c STREAMS a 0
        XPENDING a g
        XINFO GROUPS a
        XINFO STREAM a
        XAUTOCLAIM a g d 0 0 JUSTID
        XADD e MAXLEN 0 1-1 a b
        XINFO STREAM e
    "#,
    );
}

/// Waits (bounded) until the server reports `n` blocked clients.
fn wait_blocked(c: &mut Raw, n: usize) {
    let want = format!("blocked_clients:{n}\r");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !c.cmd_str(&["INFO", "clients"]).contains(&want) {
        assert!(
            Instant::now() < deadline,
            "never reached {n} blocked clients"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs the same blocking scenario on both servers and compares what each client read.
fn diff_blocking(scenario: impl Fn(&mut dyn FnMut() -> Raw) -> Vec<String>) {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let mine = scenario(&mut || t.raw());
    let theirs = scenario(&mut || redis.raw());
    assert_eq!(
        mine, theirs,
        "tumbler (left) and redis-server (right) disagree"
    );
}

#[test]
fn blocked_xread_is_served_by_xadd_from_another_connection() {
    diff_blocking(|connect| {
        let (mut w, mut r1, mut r2) = (connect(), connect(), connect());
        let mut seen = vec![];
        w.cmd(&["XADD", "s", "1-0", "f", "v"]);
        // `$` is the last ID at block time: 1-0 is not served, 2-0 is, to both readers.
        r1.send(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
        r2.send(&[
            "XREAD", "COUNT", "5", "BLOCK", "0", "STREAMS", "other", "s", "$", "$",
        ]);
        wait_blocked(&mut w, 2);
        seen.push(w.cmd_str(&["XADD", "s", "2-0", "g", "w"]));
        seen.push(String::from_utf8_lossy(&r1.read_reply()).into_owned());
        seen.push(String::from_utf8_lossy(&r2.read_reply()).into_owned());
        // Deleting the key does not wake XREAD; the next XADD above the old ID does.
        r1.send(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
        wait_blocked(&mut w, 1);
        w.cmd(&["DEL", "s"]);
        w.cmd(&["SET", "s", "x"]);
        w.cmd(&["DEL", "s"]);
        seen.push(w.cmd_str(&["XADD", "s", "3-0", "h", "x"]));
        seen.push(String::from_utf8_lossy(&r1.read_reply()).into_owned());
        // A timeout answers a null array.
        r1.send(&["XREAD", "BLOCK", "20", "STREAMS", "s", "$"]);
        seen.push(String::from_utf8_lossy(&r1.read_reply()).into_owned());
        seen
    });
}

#[test]
fn blocked_xreadgroup_consumers_are_served_in_order() {
    diff_blocking(|connect| {
        let (mut w, mut c1, mut c2) = (connect(), connect(), connect());
        let mut seen = vec![];
        w.cmd(&["XGROUP", "CREATE", "q", "g", "$", "MKSTREAM"]);
        c1.send(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "BLOCK",
            "0",
            "STREAMS",
            "q",
            ">",
        ]);
        wait_blocked(&mut w, 1);
        c2.send(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "COUNT",
            "1",
            "BLOCK",
            "0",
            "STREAMS",
            "q",
            ">",
        ]);
        wait_blocked(&mut w, 2);
        // One entry: the first blocked consumer gets it, the second keeps waiting.
        w.cmd(&["XADD", "q", "1-0", "job", "1"]);
        seen.push(String::from_utf8_lossy(&c1.read_reply()).into_owned());
        wait_blocked(&mut w, 1);
        // Two entries in one MULTI: bob gets one (COUNT 1).
        w.cmd(&["MULTI"]);
        w.cmd(&["XADD", "q", "2-0", "job", "2"]);
        w.cmd(&["XADD", "q", "3-0", "job", "3"]);
        seen.push(w.cmd_str(&["EXEC"]));
        seen.push(String::from_utf8_lossy(&c2.read_reply()).into_owned());
        seen.push(w.cmd_str(&["XPENDING", "q", "g"]));
        seen.push(w.cmd_str(&["XINFO", "GROUPS", "q"]));
        // Destroying the group wakes a waiting consumer with NOGROUP; deleting the key
        // wakes it with UNBLOCKED.
        c1.send(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "BLOCK",
            "0",
            "STREAMS",
            "q",
            ">",
        ]);
        seen.push(String::from_utf8_lossy(&c1.read_reply()).into_owned());
        c1.send(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "BLOCK",
            "0",
            "STREAMS",
            "q",
            ">",
        ]);
        wait_blocked(&mut w, 1);
        w.cmd(&["XGROUP", "DESTROY", "q", "g"]);
        seen.push(String::from_utf8_lossy(&c1.read_reply()).into_owned());
        w.cmd(&["XGROUP", "CREATE", "q", "g", "$"]);
        c1.send(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "BLOCK",
            "0",
            "STREAMS",
            "q",
            ">",
        ]);
        wait_blocked(&mut w, 1);
        w.cmd(&["DEL", "q"]);
        seen.push(String::from_utf8_lossy(&c1.read_reply()).into_owned());
        // NOACK consumers advance the group without a PEL entry.
        w.cmd(&["XGROUP", "CREATE", "q", "g", "$", "MKSTREAM"]);
        c1.send(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "carol",
            "NOACK",
            "BLOCK",
            "0",
            "STREAMS",
            "q",
            ">",
        ]);
        wait_blocked(&mut w, 1);
        w.cmd(&["XADD", "q", "9-0", "job", "9"]);
        seen.push(String::from_utf8_lossy(&c1.read_reply()).into_owned());
        seen.push(w.cmd_str(&["XPENDING", "q", "g"]));
        seen.push(w.cmd_str(&["XINFO", "GROUPS", "q"]));
        seen
    });
}

#[test]
fn keyspace_events() {
    diff_blocking(|connect| {
        let (mut w, mut sub) = (connect(), connect());
        w.cmd(&["CONFIG", "SET", "notify-keyspace-events", "Et"]);
        sub.cmd(&["SUBSCRIBE", "__keyevent@0__:xadd"]);
        let events = [
            "xadd",
            "xtrim",
            "xdel",
            "xsetid",
            "xgroup-create",
            "xgroup-createconsumer",
            "xgroup-delconsumer",
            "xgroup-setid",
            "xgroup-destroy",
        ];
        for e in &events[1..] {
            sub.cmd(&["SUBSCRIBE", &format!("__keyevent@0__:{e}")]);
        }
        let script = [
            vec!["XADD", "s", "1-0", "f", "v"],
            vec!["XADD", "s", "MAXLEN", "1", "2-0", "f", "v"],
            vec!["XDEL", "s", "2-0"],
            vec!["XSETID", "s", "5-0"],
            vec!["XGROUP", "CREATE", "s", "g", "0"],
            vec!["XGROUP", "CREATECONSUMER", "s", "g", "c"],
            vec!["XGROUP", "DELCONSUMER", "s", "g", "c"],
            vec!["XGROUP", "SETID", "s", "g", "0"],
            vec!["XADD", "s", "6-0", "f", "v"],
            vec!["XREADGROUP", "GROUP", "g", "d", "STREAMS", "s", ">"],
            vec!["XGROUP", "DESTROY", "s", "g"],
            vec!["PUBLISH", "__keyevent@0__:xadd", "end"],
        ];
        for c in &script {
            w.cmd(c);
        }
        let mut seen = vec![];
        loop {
            let m = String::from_utf8_lossy(&sub.read_reply()).into_owned();
            let end = m.contains("end");
            seen.push(m);
            if end {
                break;
            }
        }
        w.cmd(&["CONFIG", "SET", "notify-keyspace-events", ""]);
        seen
    });
}

/// Redis' node layout shows in `radix-tree-keys`/`radix-tree-nodes` and in what `~`
/// trimming leaves: entries per node, bytes per node, and field-name changes.
#[test]
fn node_layout_matches_redis() {
    run(r#"
        EVAL "for i=1,300 do redis.call('xadd','a',i..'-1','f',string.rep('x',100)) end return 1" 0
        XINFO STREAM a
        XTRIM a MAXLEN ~ 100
        XLEN a
        EVAL "for i=1,300 do redis.call('xadd','b',i..'-1','f',string.rep('x',i)) end return 1" 0
        XINFO STREAM b
        XTRIM b MAXLEN ~ 150
        XINFO STREAM b
        EVAL "for i=1,300 do redis.call('xadd','c',i..'-1','f'..(i%3),string.rep('x',i%50),'g',i) end return 1" 0
        XINFO STREAM c
        EVAL "for i=1,300 do redis.call('xadd','d',(i*100000)..'-1','f',i*1000) end return 1" 0
        XINFO STREAM d
        XDEL d 100000-1 200000-1 9900000-1
        XTRIM d MINID ~ 12000000
        XINFO STREAM d
        CONFIG SET stream-node-max-entries 0
        EVAL "for i=1,300 do redis.call('xadd','e',i..'-1','f',i*1000) end return 1" 0
        XINFO STREAM e
        CONFIG SET stream-node-max-bytes 0
        CONFIG SET stream-node-max-entries 7
        EVAL "for i=1,50 do redis.call('xadd','f',i..'-1','f',string.rep('y',500)) end return 1" 0
        XINFO STREAM f
        CONFIG SET stream-node-max-bytes 4096
        CONFIG SET stream-node-max-entries 100
        COMMAND INFO xread xreadgroup
        COMMAND GETKEYS XREAD COUNT 2 BLOCK 4 STREAMS a b 0 0
        COMMAND GETKEYS XREADGROUP GROUP g c STREAMS a 0
    "#);
}

/// A small deterministic generator (xorshift), so a failing sequence can be replayed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Random sequences of stream commands whose replies carry no clock values: explicit IDs,
/// small node sizes so trimming crosses nodes, groups read, acknowledged, claimed (idle 0,
/// JUSTID) and moved; every reply compared with redis-server's.
#[test]
fn random_sequences_match_redis() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let (mut a, mut b) = (t.raw(), redis.raw());
    for seed in 1..=8u64 {
        let mut r = Rng(0x9E37_79B9_7F4A_7C15 ^ seed);
        let mut script = String::from("FLUSHALL\n");
        let mut ms = 1u64;
        for _ in 0..400 {
            let key = ["s", "t"][r.below(2) as usize];
            let top = ms;
            let id = |r: &mut Rng| format!("{}-{}", 1 + r.below(top + 2), r.below(3));
            let line = match r.below(22) {
                0..=5 => {
                    let idarg = match r.below(4) {
                        0 => format!("{}-*", ms + r.below(3)),
                        1 => id(&mut r),
                        _ => format!("{}-{}", ms + r.below(3), r.below(5)),
                    };
                    ms += r.below(3);
                    let trim = match r.below(6) {
                        0 => format!("MAXLEN ~ {} ", r.below(30)),
                        1 => format!("MAXLEN {} ", r.below(30)),
                        2 => format!("MINID ~ {} ", ms.saturating_sub(r.below(20))),
                        3 => format!("MAXLEN ~ {} LIMIT {} ", r.below(30), r.below(8)),
                        _ => String::new(),
                    };
                    format!("XADD {key} {trim}{idarg} f{} v{}", r.below(3), r.below(100))
                }
                6 => format!("XDEL {key} {} {}", id(&mut r), id(&mut r)),
                7 => match r.below(3) {
                    0 => format!("XTRIM {key} MAXLEN ~ {}", r.below(25)),
                    1 => format!("XTRIM {key} MINID {}", id(&mut r)),
                    _ => format!("XTRIM {key} MAXLEN = {}", r.below(25)),
                },
                8 => format!("XRANGE {key} {} + COUNT {}", id(&mut r), r.below(5)),
                9 => format!("XREVRANGE {key} + ({} COUNT 3", id(&mut r)),
                10 => format!("XLEN {key}"),
                11 => format!(
                    "XGROUP CREATE {key} g{} {} MKSTREAM",
                    r.below(2),
                    ["0", "$", "1-1"][r.below(3) as usize]
                ),
                12 => format!("XGROUP SETID {key} g{} {}", r.below(2), id(&mut r)),
                13 | 14 => format!(
                    "XREADGROUP GROUP g{} c{} COUNT {} {}STREAMS {key} {}",
                    r.below(2),
                    r.below(3),
                    1 + r.below(4),
                    ["", "NOACK "][r.below(2) as usize],
                    [">", ">", "0"][r.below(3) as usize]
                ),
                15 => format!("XACK {key} g{} {} {}", r.below(2), id(&mut r), id(&mut r)),
                16 => format!("XPENDING {key} g{}", r.below(2)),
                17 => format!(
                    "XCLAIM {key} g{} c{} 0 {} {} JUSTID",
                    r.below(2),
                    r.below(3),
                    id(&mut r),
                    id(&mut r)
                ),
                18 => format!(
                    "XAUTOCLAIM {key} g{} c{} 0 {} COUNT {} JUSTID",
                    r.below(2),
                    r.below(3),
                    id(&mut r),
                    1 + r.below(4)
                ),
                19 => format!("XINFO GROUPS {key}"),
                20 => format!("XINFO STREAM {key}"),
                _ => format!("CONFIG SET stream-node-max-entries {}", 1 + r.below(6)),
            };
            script.push_str(&line);
            script.push('\n');
        }
        script.push_str("CONFIG SET stream-node-max-entries 100\n");
        tumbler_tests::diff_script(&mut a, &mut b, &script);
    }
}

/// Which stream commands from another connection abort a WATCHing transaction.
#[test]
fn watch_sees_the_writes_redis_signals() {
    let commands: &[&[&str]] = &[
        &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
        &["XACK", "s", "g", "1-1"],
        &["XGROUP", "CREATE", "s", "g2", "0"],
        &["XGROUP", "CREATECONSUMER", "s", "g", "z"],
        &["XGROUP", "DELCONSUMER", "s", "g", "c0"],
        &["XGROUP", "SETID", "s", "g", "0"],
        &["XGROUP", "DESTROY", "s", "g"],
        &["XCLAIM", "s", "g", "d", "0", "1-1"],
        &["XAUTOCLAIM", "s", "g", "d", "0", "0"],
        &["XSETID", "s", "9-9"],
        &["XTRIM", "s", "MAXLEN", "5"],
        &["XTRIM", "s", "MAXLEN", "1"],
        &["XDEL", "s", "7-7"],
        &["XDEL", "s", "1-1"],
        &["XADD", "s", "5-0", "f", "v"],
    ];
    diff_blocking(|connect| {
        let mut seen = vec![];
        for other in commands {
            let (mut a, mut b) = (connect(), connect());
            a.cmd(&["FLUSHALL"]);
            a.cmd(&["XADD", "s", "1-1", "f", "v"]);
            a.cmd(&["XADD", "s", "2-1", "f", "v"]);
            a.cmd(&["XGROUP", "CREATE", "s", "g", "0"]);
            a.cmd(&[
                "XREADGROUP",
                "GROUP",
                "g",
                "c0",
                "COUNT",
                "1",
                "STREAMS",
                "s",
                ">",
            ]);
            a.cmd(&["WATCH", "s"]);
            seen.push(b.cmd_str(other));
            a.cmd(&["MULTI"]);
            a.cmd(&["PING"]);
            seen.push(format!("{}: {}", other.join(" "), a.cmd_str(&["EXEC"])));
        }
        seen
    });
}
