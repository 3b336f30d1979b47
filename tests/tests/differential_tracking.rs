//! Client-side caching (CLIENT TRACKING) against a real redis-server, over several
//! connections: every reply and every invalidation push (RESP3 `>2 invalidate`, the RESP2
//! `__redis__:invalidate` message of a REDIRECT, `tracking-redir-broken`) each connection
//! receives, in order, must be byte-for-byte the same.
//!
//! A step is `N CMD args...`: connection N sends CMD and reads everything it has until the
//! reply of a PING sent right after (pushes queued before it, then the reply, then pushes
//! that follow the reply, such as a client's own invalidation). `N read` only drains.

use tumbler_tests::{split_line, Raw, RedisServer, Tumbler};

fn is_pong(r: &[u8]) -> bool {
    r == b"+PONG\r\n" || r.starts_with(b"*2\r\n$4\r\npong\r\n")
}

/// Sends the commands (pipelined), then PING, and returns everything read before PONG.
fn step(c: &mut Raw, cmds: &[Vec<Vec<u8>>]) -> String {
    for args in cmds {
        c.send(args);
    }
    c.send(&["PING"]);
    let mut out = String::new();
    loop {
        let r = c.read_reply();
        if is_pong(&r) {
            return out;
        }
        out.push_str(&String::from_utf8_lossy(&r));
    }
}

/// Runs `script` on both servers with `n` connections each. `$ID<k>` in a line is replaced
/// by connection k's client id on that server, and integer replies equal to an id are
/// compared as `$ID<k>`. HELLO's reply (version, id) is not compared.
fn run(n: usize, script: &str) {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    // Client ids well above the small integers replies contain, on both servers.
    for _ in 0..12 {
        t.raw().cmd(&["PING"]);
        redis.raw().cmd(&["PING"]);
    }
    let mut tc: Vec<Raw> = (0..n).map(|_| t.raw()).collect();
    let mut rc: Vec<Raw> = (0..n).map(|_| redis.raw()).collect();
    let ids = |cs: &mut Vec<Raw>| -> Vec<String> {
        cs.iter_mut()
            .map(|c| {
                c.cmd_str(&["CLIENT", "ID"])
                    .trim_start_matches(':')
                    .trim()
                    .to_string()
            })
            .collect()
    };
    let (tids, rids) = (ids(&mut tc), ids(&mut rc));
    for (i, line) in script.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line == "sleep" {
            std::thread::sleep(std::time::Duration::from_millis(150));
            continue;
        }
        let (who, rest) = line.split_once(' ').unwrap();
        let who: usize = who.parse().unwrap();
        let subst = |ids: &[String]| {
            let mut l = rest.to_string();
            for (k, id) in ids.iter().enumerate() {
                l = l.replace(&format!("$ID{k}"), id);
            }
            if l == "read" {
                Vec::new()
            } else {
                l.split(" ; ").map(split_line).collect()
            }
        };
        let unsubst = |out: String, ids: &[String]| {
            let mut o = out;
            for (k, id) in ids.iter().enumerate() {
                o = o.replace(&format!(":{id}\r\n"), &format!(":$ID{k}\r\n"));
            }
            o
        };
        eprintln!("step {line}");
        let a = unsubst(step(&mut tc[who], &subst(&tids)), &tids);
        let b = unsubst(step(&mut rc[who], &subst(&rids)), &rids);
        if rest.starts_with("HELLO") {
            // Its reply names the server version and id.
            continue;
        }
        assert_eq!(
            a,
            b,
            "line {}: `{}`: tumbler (left) and redis-server (right) disagree",
            i + 1,
            line
        );
    }
}

#[test]
fn default_mode_resp3_invalidations() {
    run(
        2,
        r#"
        0 HELLO 3
        0 CLIENT TRACKING on
        0 CLIENT TRACKINGINFO
        0 CLIENT GETREDIR
        1 CLIENT GETREDIR
        1 SET k 1
        0 GET k
        0 MGET k k2 k3
        1 SET k 2
        0 read
        # Forgotten after one invalidation.
        1 SET k 3
        0 read
        1 DEL k2
        0 read
        # Its own write: the invalidation follows the reply.
        0 GET k
        0 SET k 4
        0 GET k
        0 MULTI ; SET k 5 ; GET k ; INCR n ; EXEC
        0 HGETALL h
        1 HSET h f v
        0 read
        0 EXISTS e
        1 EVAL "redis.call('set', KEYS[1], 'x') return 1" 1 e
        0 read
        0 GET k
        1 FLUSHALL
        0 read
        0 GET k
        1 FLUSHDB
        0 read
        0 CLIENT TRACKING off
        0 CLIENT TRACKINGINFO
        1 SET k 6
        0 read
        "#,
    );
}

#[test]
fn expiry_invalidates() {
    run(
        2,
        r#"
        0 HELLO 3
        0 CLIENT TRACKING on
        1 SET k v PX 30
        0 GET k
        sleep
        0 GET k
        0 read
        "#,
    );
}

#[test]
fn noloop_optin_optout() {
    run(
        2,
        r#"
        0 HELLO 3
        0 CLIENT TRACKING on NOLOOP
        0 GET a
        0 SET a 1
        0 GET a
        1 SET a 2
        0 read
        0 CLIENT TRACKING off
        0 CLIENT TRACKING on OPTIN
        0 CLIENT TRACKINGINFO
        0 GET a
        1 SET a 3
        0 read
        0 CLIENT CACHING yes ; CLIENT TRACKINGINFO ; GET a ; CLIENT TRACKINGINFO
        1 SET a 4
        0 read
        0 CLIENT CACHING yes ; ECHO x ; GET a
        1 SET a 4
        0 read
        0 MULTI ; CLIENT CACHING yes ; GET a ; EXEC
        1 SET a 5
        0 read
        0 CLIENT CACHING no
        0 CLIENT TRACKING on OPTOUT
        0 CLIENT TRACKING off
        0 CLIENT TRACKING on OPTOUT
        0 CLIENT CACHING yes
        0 CLIENT CACHING no ; GET a
        1 SET a 5
        0 read
        0 GET a
        1 SET a 6
        0 read
        0 CLIENT CACHING maybe
        "#,
    );
}

#[test]
fn bcast_prefixes() {
    run(
        2,
        r#"
        0 HELLO 3
        0 CLIENT TRACKING on BCAST PREFIX user: PREFIX obj:
        0 CLIENT TRACKINGINFO
        1 SET user:1 a
        0 read
        1 MSET obj:1 a other 1 user:2 b
        0 read
        0 CLIENT TRACKING on BCAST PREFIX use
        0 CLIENT TRACKING on BCAST PREFIX x PREFIX xy
        0 CLIENT TRACKING on PREFIX z
        0 CLIENT TRACKING on
        0 CLIENT TRACKING on BCAST PREFIX new: NOLOOP
        0 SET new:1 a
        1 SET new:2 a
        0 read
        0 CLIENT TRACKINGINFO
        0 CLIENT TRACKING off
        0 CLIENT TRACKING on BCAST
        1 SET anything 1
        0 read
        "#,
    );
}

#[test]
fn redirect_resp2_pubsub_and_broken() {
    run(
        3,
        r#"
        1 SUBSCRIBE __redis__:invalidate
        0 CLIENT TRACKING on REDIRECT $ID1
        0 CLIENT GETREDIR
        0 CLIENT TRACKINGINFO
        0 GET k
        2 SET k 1
        1 read
        0 GET k
        2 FLUSHALL
        1 read
        2 HELLO 3
        2 CLIENT TRACKING on REDIRECT $ID0
        2 GET r
        2 SET r 1
        0 read
        2 read
        "#,
    );
}

#[test]
fn errors() {
    run(
        1,
        r#"
        0 CLIENT TRACKING
        0 CLIENT TRACKING maybe
        0 CLIENT TRACKING on foo
        0 CLIENT TRACKING on REDIRECT
        0 CLIENT TRACKING on REDIRECT notanumber
        0 CLIENT TRACKING on REDIRECT 999999
        0 CLIENT TRACKING on PREFIX a
        0 CLIENT TRACKING on BCAST OPTIN
        0 CLIENT TRACKING on BCAST OPTOUT
        0 CLIENT TRACKING on OPTIN OPTOUT
        0 CLIENT TRACKING on BCAST PREFIX a PREFIX ab
        0 CLIENT TRACKING on BCAST PREFIX ab PREFIX a
        0 CLIENT CACHING yes
        0 CLIENT CACHING
        0 CLIENT TRACKING on OPTIN
        0 CLIENT TRACKING on OPTOUT
        0 CLIENT TRACKING on BCAST
        0 CLIENT CACHING no
        0 CLIENT TRACKING off
        0 CLIENT TRACKINGINFO
        0 CLIENT GETREDIR
        "#,
    );
}

/// The redis crate (RESP2): a PubSub connection subscribed to `__redis__:invalidate`
/// receives the invalidations of a tracking connection that redirects to it.
#[test]
fn redis_crate_redirect_to_pubsub() {
    let t = Tumbler::start();
    let client = redis::Client::open(t.url()).unwrap();
    let mut sub_con = client.get_connection().unwrap();
    let sub_id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut sub_con).unwrap();
    let mut pubsub = sub_con.as_pubsub();
    pubsub.subscribe("__redis__:invalidate").unwrap();
    pubsub
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut reader = client.get_connection().unwrap();
    let mut writer = client.get_connection().unwrap();
    let ok: String = redis::cmd("CLIENT")
        .arg(&["TRACKING", "on", "REDIRECT", &sub_id.to_string()])
        .query(&mut reader)
        .unwrap();
    assert_eq!(ok, "OK");
    let redir: i64 = redis::cmd("CLIENT")
        .arg("GETREDIR")
        .query(&mut reader)
        .unwrap();
    assert_eq!(redir, sub_id);
    let _: Option<String> = redis::cmd("GET").arg("cached").query(&mut reader).unwrap();
    let _: () = redis::cmd("SET")
        .arg(&["cached", "v"])
        .query(&mut writer)
        .unwrap();
    let msg = pubsub.get_message().unwrap();
    assert_eq!(msg.get_channel_name(), "__redis__:invalidate");
    let keys: Vec<String> = msg.get_payload().unwrap();
    assert_eq!(keys, vec!["cached".to_string()]);
    // One invalidation, then forgotten: the next write sends nothing until read again.
    let _: () = redis::cmd("SET")
        .arg(&["cached", "w"])
        .query(&mut writer)
        .unwrap();
    let _: Option<String> = redis::cmd("GET").arg("cached").query(&mut reader).unwrap();
    let _: () = redis::cmd("DEL").arg("cached").query(&mut writer).unwrap();
    let msg = pubsub.get_message().unwrap();
    let keys: Vec<String> = msg.get_payload().unwrap();
    assert_eq!(keys, vec!["cached".to_string()]);
    let _: () = redis::cmd("FLUSHALL").query(&mut writer).unwrap();
    let msg = pubsub.get_message().unwrap();
    let keys: Option<Vec<String>> = msg.get_payload().unwrap();
    assert_eq!(keys, None);
}

/// CLIENT INFO's `flags=` and `redir=` for tracking clients, as redis-server shows them.
#[test]
fn client_info_flags() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let fields = |c: &mut Raw| -> String {
        let s = c.cmd_str(&["CLIENT", "INFO"]);
        s.split_whitespace()
            .filter(|f| f.starts_with("flags=") || f.starts_with("redir="))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut seen = Vec::new();
    for addr in [t.raw(), redis.raw()] {
        let mut c = addr;
        let mut other = Raw::connect(c.stream.peer_addr().unwrap());
        c.cmd(&["HELLO", "3"]);
        let oid = other.cmd_str(&["CLIENT", "ID"]);
        let oid = oid.trim_start_matches(':').trim().to_string();
        let mut out = vec![fields(&mut c)];
        c.cmd(&["CLIENT", "TRACKING", "on"]);
        out.push(fields(&mut c));
        c.cmd(&["CLIENT", "TRACKING", "off"]);
        c.cmd(&["CLIENT", "TRACKING", "on", "BCAST"]);
        out.push(fields(&mut c));
        c.cmd(&["CLIENT", "TRACKING", "off"]);
        c.cmd(&["CLIENT", "TRACKING", "on", "REDIRECT", &oid]);
        out.push(fields(&mut c).replace(&format!("redir={oid}"), "redir=ID"));
        c.cmd(&["GET", "fk"]);
        other.cmd(&["QUIT"]);
        drop(other);
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut w = Raw::connect(c.stream.peer_addr().unwrap());
        w.cmd(&["SET", "fk", "1"]);
        let pushed = c.read_reply();
        out.push(String::from_utf8_lossy(&pushed).replace(&format!(":{oid}\r\n"), ":ID\r\n"));
        out.push(fields(&mut c).replace(&format!("redir={oid}"), "redir=ID"));
        c.cmd(&["RESET"]);
        out.push(fields(&mut c));
        seen.push(out);
    }
    assert_eq!(
        seen[0], seen[1],
        "tumbler (left) and redis-server (right) disagree"
    );
}
