//! Redis 7's measurement surface, differentially: the same command sequence on tumbler and
//! redis-server 7.0.15, then INFO commandstats, errorstats and latencystats compared field
//! by field (names, calls, rejected and failed counts, error counts exactly; times only for
//! their shape), LATENCY HISTOGRAM's reply shape, and the latency monitor.

use std::collections::BTreeMap;

use redis::Value;
use tumbler_tests::{split_line, Raw, RedisServer, Tumbler};

/// Commands whose replies are identical on both servers, including errors of every kind:
/// failed calls, refusals (arity, unknown command and subcommand), errors inside MULTI and
/// scripts, caught and raised, a blocking command that times out.
const SEQUENCE: &str = r#"
SET a 1
GET a
GET missing
INCR a
LPUSH a x
SET k
NOSUCHCMD x
CONFIG NOSUCH
CONFIG
HSET h f v
HGETALL h
INCR h
MULTI
SET x 1
INCR h
EXEC
MULTI
SET
EXEC
EXEC
EVAL "return redis.call('set', KEYS[1], 'v')" 1 s
EVAL "return redis.pcall('incr', KEYS[1])" 1 h
EVAL "redis.call('incr', KEYS[1])" 1 h
EVAL "local t = redis.pcall('incr', KEYS[1]) return 1" 1 h
EVAL "return redis.error_reply('MYERR custom')" 0
EVAL "return redis.error_reply('')" 0
EVAL "return redis.call('nosuch')" 0
EVAL "return redis.call('get')" 0
EVAL "return redis.call('select', 99)" 0
EVAL "return redis.pcall()" 0
EVALSHA 0000000000000000000000000000000000000000 0
EVAL
AUTH x
SELECT 99
BLPOP emptylist 0.01
CLIENT GETNAME
XADD st 1-1 f v
XGROUP CREATECONSUMER st g c
EVAL "return redis.pcall('XGROUP', 'CREATECONSUMER', 'nokey', 'g', 'c')" 0
"#;

fn run(r: &mut Raw, line: &str) -> String {
    String::from_utf8_lossy(&r.cmd(&split_line(line))).into_owned()
}

/// `name -> value` of one INFO section's `name:value` lines.
fn section(r: &mut Raw, name: &str) -> BTreeMap<String, String> {
    let raw = run(r, &format!("INFO {name}"));
    raw.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim_end().to_string()))
        .filter(|(k, _)| !k.starts_with('$') && !k.starts_with('#'))
        .collect()
}

/// `field -> value` of a `a=1,b=2` INFO value.
fn fields(v: &str) -> BTreeMap<String, String> {
    v.split(',')
        .filter_map(|f| f.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn both() -> Option<(Tumbler, RedisServer)> {
    let redis = RedisServer::start_with(&["--enable-debug-command", "yes"])?;
    Some((Tumbler::like(&redis, &[]), redis))
}

/// Write commands, each run alone on the same keys, with the keyspace lookups Redis 7.0
/// counts or not: lookupKeyWrite (HINCRBY, INCR, SREM, ...) counts no hit or miss,
/// lookupKeyRead (GET, the sources of SINTERSTORE and ZUNIONSTORE, GETDEL, SET GET) does.
const KEYSPACE_LOOKUPS: &str = r#"
HINCRBY h f 1
HINCRBY h2 f 1
HINCRBY s f 1
HINCRBYFLOAT h f 1.5
HINCRBYFLOAT h2 f 1.5
HSETNX h f 2
HSETNX h g 2
HSETNX h3 g 2
HSET h f 2
HDEL h f
HDEL hx f
INCR s
INCRBY s 2
DECRBY s 2
INCRBYFLOAT s 1
INCRBYFLOAT s2 1
DECR s
APPEND s x
SETRANGE s 1 x
GETSET s 1
GETDEL s
GETEX s
SET s 1 GET
SETNX s 1
LPUSH l x
LPUSH s x
LPOP l
LSET l 0 z
LMOVE l l2 LEFT RIGHT
SADD st c
SREM st a
SPOP st
SPOP st 1
SMOVE st st2 a
SINTERSTORE d st st
SUNIONSTORE d st
SDIFFSTORE d st
ZADD z 2 b
ZINCRBY z 1 a
ZREM z a
ZPOPMIN z
ZUNIONSTORE d 1 z
ZINTERSTORE d 1 z
ZDIFFSTORE d 1 z
ZRANGESTORE d z 0 -1
EXPIRE s 100
PERSIST s
DEL s
RENAME s s2
COPY s s9
SETBIT s 1 1
BITOP AND d s s
PFADD p a
SORT l ALPHA STORE d
"#;

#[test]
fn keyspace_hits_and_misses_match_redis_per_command() {
    let Some((t, redis)) = both() else { return };
    let (mut a, mut b) = (t.raw(), redis.raw());
    let stat = |r: &mut Raw| {
        let s = section(r, "stats");
        (s["keyspace_hits"].clone(), s["keyspace_misses"].clone())
    };
    for line in KEYSPACE_LOOKUPS
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        let mut got = Vec::new();
        for r in [&mut a, &mut b] {
            for setup in [
                "FLUSHALL",
                "HSET h f 1",
                "SET s 5",
                "RPUSH l a b c",
                "SADD st a b",
                "ZADD z 1 a",
                "CONFIG RESETSTAT",
            ] {
                run(r, setup);
            }
            let mut reply = run(r, line);
            if line.starts_with("SPOP") {
                reply.clear(); // a random member
            }
            got.push((reply, stat(r)));
        }
        assert_eq!(
            got[0], got[1],
            "`{line}`: tumbler (left) and redis-server (right) disagree on the reply or on \
             keyspace_hits/misses"
        );
    }
}

/// Write commands set their key's access time, as Redis' lookupKeyWrite does, whether or
/// not they change it: OBJECT IDLETIME is 0 after each, and 1 for a key that only OBJECT
/// and MEMORY USAGE looked at. Values are not small integers: Redis shares one object per
/// small integer, so touching one key holding `1` resets the idle time of every other.
#[test]
fn write_commands_touch_their_key_as_redis_does() {
    let Some((t, redis)) = both() else { return };
    let (mut a, mut b) = (t.raw(), redis.raw());
    let seed = [
        "HSET h f 1",
        "HSET h2 f 1",
        "HSET h3 f 1",
        "SET s abc",
        "RPUSH l a b",
        "SADD st a b",
        "SADD st2 a b",
        "ZADD z 1 a",
        "SET e v",
        "SET idle v",
    ];
    let writes = [
        "HSET h g 1",
        "HINCRBY h2 f 1",
        "HDEL h3 nosuchfield",
        "APPEND s x",
        "RPUSH l c",
        "SADD st c",
        "SREM st2 nosuchmember",
        "ZADD z 2 b",
        "EXPIRE e 100",
        "OBJECT ENCODING idle",
        "MEMORY USAGE idle",
    ];
    for r in [&mut a, &mut b] {
        for line in seed {
            run(r, line);
        }
    }
    // Redis' LRU clock counts whole seconds and is cached for up to 100 ms, so after 2.1 s
    // an untouched key reads 2 or 3, and a key touched just now 0 or (across a second
    // boundary) 1. Compared is which of the two a key is.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    for r in [&mut a, &mut b] {
        for line in writes {
            run(r, line);
        }
    }
    let idle = |r: &mut Raw, key: &str| -> &'static str {
        let reply = run(r, &format!("OBJECT IDLETIME {key}"));
        match reply
            .trim_end()
            .strip_prefix(':')
            .and_then(|n| n.parse::<i64>().ok())
        {
            Some(0 | 1) => "touched",
            Some(_) => "idle",
            None => panic!("OBJECT IDLETIME {key}: {reply:?}"),
        }
    };
    for key in ["h", "h2", "h3", "s", "l", "st", "st2", "z", "e", "idle"] {
        assert_eq!(
            idle(&mut a, key),
            idle(&mut b, key),
            "OBJECT IDLETIME {key}: tumbler (left) and redis-server (right) disagree"
        );
    }
    assert_eq!(
        idle(&mut b, "idle"),
        "idle",
        "the untouched key must read idle"
    );
}

#[test]
fn commandstats_errorstats_and_latencystats_match_redis() {
    let Some((t, redis)) = both() else { return };
    let (mut a, mut b) = (t.raw(), redis.raw());
    // Connect the second client first: connection setup is not part of the comparison.
    let (mut a2, mut b2) = (t.raw(), redis.raw());
    run(&mut a2, "PING");
    run(&mut b2, "PING");
    for r in [&mut a, &mut b] {
        assert_eq!(run(r, "CONFIG RESETSTAT"), "+OK\r\n");
    }
    for line in SEQUENCE.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (x, y) = (run(&mut a, line), run(&mut b, line));
        assert_eq!(
            x, y,
            "`{line}`: tumbler (left) and redis-server (right) disagree"
        );
    }
    // A command that blocks and is served by another client.
    for (r, other) in [(&mut a, &mut a2), (&mut b, &mut b2)] {
        r.send(&["BLPOP", "served", "0"]);
        // Wait until it is blocked, then serve it.
        for _ in 0..200 {
            let info = run(other, "INFO clients");
            if info.contains("blocked_clients:1") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(run(other, "RPUSH served v"), ":1\r\n");
        assert_eq!(
            String::from_utf8_lossy(&r.read_reply()),
            "*2\r\n$6\r\nserved\r\n$1\r\nv\r\n"
        );
    }

    // Commandstats: the same commands, with the same counts; times are numbers.
    let (ct, cr) = (
        section(&mut a, "commandstats"),
        section(&mut b, "commandstats"),
    );
    assert_eq!(
        ct.keys().collect::<Vec<_>>(),
        cr.keys().collect::<Vec<_>>(),
        "commands in INFO commandstats"
    );
    for (name, v) in &ct {
        let (ft, fr) = (fields(v), fields(&cr[name]));
        assert_eq!(
            ft.keys().collect::<Vec<_>>(),
            vec![
                "calls",
                "failed_calls",
                "rejected_calls",
                "usec",
                "usec_per_call"
            ],
            "{name}: {v}"
        );
        // INFO was polled until the BLPOP blocked: its count depends on timing.
        let counted: &[&str] = if name == "cmdstat_info" {
            &["rejected_calls", "failed_calls"]
        } else {
            &["calls", "rejected_calls", "failed_calls"]
        };
        for f in counted {
            assert_eq!(
                ft[*f], fr[*f],
                "{name} {f}: tumbler {v}, redis {}",
                cr[name]
            );
        }
        ft["usec"].parse::<u64>().unwrap();
        let per = &ft["usec_per_call"];
        assert!(per.parse::<f64>().is_ok() && per.split('.').nth(1).map(str::len) == Some(2));
    }
    // The order of the fields is Redis' too.
    let line = &ct["cmdstat_set"];
    assert!(
        line.starts_with("calls=")
            && line.contains(",usec=")
            && line.ends_with(&format!(",failed_calls={}", fields(line)["failed_calls"])),
        "{line}"
    );

    // total_commands_processed counts what commandstats counts (Redis' call()), inner
    // commands of EXEC and scripts included; INFO's own calls depend on the polling above.
    let processed = |r: &mut Raw| {
        let all = section(r, "all");
        let info_calls: u64 = fields(&all["cmdstat_info"])["calls"].parse().unwrap();
        all["total_commands_processed"].parse::<u64>().unwrap() - info_calls
    };
    assert_eq!(
        processed(&mut a),
        processed(&mut b),
        "total_commands_processed"
    );

    // Errorstats and total_error_replies: exactly.
    assert_eq!(section(&mut a, "errorstats"), section(&mut b, "errorstats"));
    let total = |r: &mut Raw| section(r, "stats")["total_error_replies"].clone();
    assert_eq!(total(&mut a), total(&mut b));

    // Latencystats: the same commands, each with p50, p99 and p99.9 in µs with 3 decimals.
    let (lt, lr) = (
        section(&mut a, "latencystats"),
        section(&mut b, "latencystats"),
    );
    assert_eq!(lt.keys().collect::<Vec<_>>(), lr.keys().collect::<Vec<_>>());
    for (name, v) in &lt {
        let f = fields(v);
        assert_eq!(
            f.keys().collect::<Vec<_>>(),
            vec!["p50", "p99", "p99.9"],
            "{name}"
        );
        for p in f.values() {
            assert!(p.parse::<f64>().is_ok() && p.split('.').nth(1).map(str::len) == Some(3));
        }
    }
    // Other percentiles, and the config value as Redis normalises it.
    for r in [&mut a, &mut b] {
        run(
            r,
            "CONFIG SET latency-tracking-info-percentiles \"0.0 50.0 100.0\"",
        );
    }
    assert_eq!(
        run(&mut a, "CONFIG GET latency-tracking-info-percentiles"),
        run(&mut b, "CONFIG GET latency-tracking-info-percentiles")
    );
    let get = |r: &mut Raw| {
        fields(&section(r, "latencystats")["latency_percentiles_usec_get"])
            .into_keys()
            .collect::<Vec<_>>()
    };
    assert_eq!(get(&mut a), vec!["p0", "p100", "p50"]);
    assert_eq!(get(&mut a), get(&mut b));
    for bad in ["\"10.0 50.0 a\"", "\"101\""] {
        let line = format!("CONFIG SET latency-tracking-info-percentiles {bad}");
        assert_eq!(run(&mut a, &line), run(&mut b, &line));
    }
    // latency-tracking off: the section is empty.
    for r in [&mut a, &mut b] {
        run(r, "CONFIG SET latency-tracking no");
        assert_eq!(section(r, "latencystats").len(), 0);
    }

    // CONFIG RESETSTAT empties all three and the error total.
    for r in [&mut a, &mut b] {
        run(r, "CONFIG SET latency-tracking yes");
        run(r, "CONFIG RESETSTAT");
    }
    for name in ["commandstats", "errorstats", "latencystats"] {
        let (x, y) = (section(&mut a, name), section(&mut b, name));
        assert_eq!(
            x.keys().collect::<Vec<_>>(),
            y.keys().collect::<Vec<_>>(),
            "{name}"
        );
    }
    assert_eq!(total(&mut a), "0");
}

/// `LATENCY HISTOGRAM [cmd ...]` as a map `name -> (calls, [(usec, cumulative)])`.
fn histogram(
    con: &mut redis::Connection,
    names: &[&str],
) -> BTreeMap<String, (i64, Vec<(i64, i64)>)> {
    let v: Value = redis::cmd("LATENCY")
        .arg("HISTOGRAM")
        .arg(names)
        .query(con)
        .unwrap();
    let Value::Array(items) = v else {
        panic!("not an array: {v:?}")
    };
    let int = |v: &Value| match v {
        Value::Int(i) => *i,
        o => panic!("not an integer: {o:?}"),
    };
    let mut out = BTreeMap::new();
    for pair in items.chunks(2) {
        let Value::BulkString(name) = &pair[0] else {
            panic!("{pair:?}")
        };
        let Value::Array(body) = &pair[1] else {
            panic!("{pair:?}")
        };
        assert_eq!(body[0], Value::BulkString(b"calls".to_vec()));
        assert_eq!(body[2], Value::BulkString(b"histogram_usec".to_vec()));
        let Value::Array(h) = &body[3] else {
            panic!("{body:?}")
        };
        let buckets = h.chunks(2).map(|kv| (int(&kv[0]), int(&kv[1]))).collect();
        out.insert(
            String::from_utf8_lossy(name).into_owned(),
            (int(&body[1]), buckets),
        );
    }
    out
}

/// The bucket keys Redis' log-2 iteration can report: 1024·2^k ns rounded up to hdr's
/// bucket edge, in µs, and the last bucket's edge for anything at or over ~0.54 s.
fn redis_bucket_keys() -> Vec<i64> {
    let mut keys: Vec<i64> = (0..20)
        .map(|k| ((1i64 << (10 + k)) + (1i64 << (3 + k)) - 1) / 1000)
        .collect();
    keys.push(1_073_741);
    keys
}

#[test]
fn latency_histogram_has_redis_shape() {
    let Some((t, redis)) = both() else { return };
    let ct = redis::Client::open(t.url()).unwrap();
    let cr = redis::Client::open(format!("redis://{}", redis.addr)).unwrap();
    let (mut a, mut b) = (ct.get_connection().unwrap(), cr.get_connection().unwrap());
    let keys = redis_bucket_keys();
    for con in [&mut a, &mut b] {
        redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query::<()>(con)
            .unwrap();
        // Only CONFIG RESETSTAT itself so far.
        let h = histogram(con, &[]);
        assert_eq!(h.keys().collect::<Vec<_>>(), vec!["config|resetstat"]);
        for _ in 0..20 {
            redis::cmd("SET")
                .arg("k")
                .arg("v")
                .query::<()>(con)
                .unwrap();
        }
        redis::cmd("GET").arg("k").query::<String>(con).unwrap();
        redis::cmd("CLIENT")
            .arg("GETNAME")
            .query::<Value>(con)
            .unwrap();
        redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg("0.002")
            .query::<()>(con)
            .unwrap();
    }
    for names in [
        &[][..],
        &["set", "get"],
        &["client"],
        &["client|getname", "nosuch", "set"],
    ] {
        let (x, y) = (histogram(&mut a, names), histogram(&mut b, names));
        assert_eq!(
            x.keys().collect::<Vec<_>>(),
            y.keys().collect::<Vec<_>>(),
            "{names:?}"
        );
        for (name, (calls, buckets)) in &x {
            assert_eq!(*calls, y[name].0, "{name} calls");
            // Cumulative counts over increasing power-of-two keys, ending at `calls`.
            assert!(!buckets.is_empty());
            assert!(
                buckets
                    .windows(2)
                    .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1),
                "{buckets:?}"
            );
            assert_eq!(buckets.last().unwrap().1, *calls);
            for (k, _) in buckets.iter().chain(&y[name].1) {
                assert!(
                    keys.contains(k),
                    "{name}: bucket {k} is not one of Redis' {keys:?}"
                );
            }
        }
    }
    // DEBUG SLEEP 2 ms lands in the 2-4 ms buckets on both.
    let slow = |h: &BTreeMap<String, (i64, Vec<(i64, i64)>)>| h["debug"].1[0].0;
    let (x, y) = (
        slow(&histogram(&mut a, &["debug"])),
        slow(&histogram(&mut b, &["debug"])),
    );
    assert!(x >= 2097 && y >= 2097, "tumbler {x}, redis {y}");
}

#[test]
fn latency_monitor_matches_redis() {
    let Some((t, redis)) = both() else { return };
    let (mut a, mut b) = (t.raw(), redis.raw());
    for r in [&mut a, &mut b] {
        // Off: DOCTOR says so, nothing is recorded.
        assert!(run(r, "LATENCY DOCTOR").contains("Latency monitoring is disabled"));
        run(r, "DEBUG SLEEP 0.02");
        assert_eq!(run(r, "LATENCY LATEST"), "*0\r\n");
        run(r, "CONFIG SET latency-monitor-threshold 10");
        run(r, "DEBUG SLEEP 0.03");
        run(r, "GET fast");
    }
    for r in [&mut a, &mut b] {
        let latest = run(r, "LATENCY LATEST");
        assert!(
            latest.starts_with("*1\r\n*4\r\n$7\r\ncommand\r\n:"),
            "{latest}"
        );
        let hist = run(r, "LATENCY HISTORY command");
        assert!(hist.starts_with("*1\r\n*2\r\n:"), "{hist}");
        let ms: i64 = hist.lines().nth(3).unwrap()[1..].parse().unwrap();
        assert!(ms >= 30, "{hist}");
        let doctor = run(r, "LATENCY DOCTOR");
        assert!(doctor.contains("1. command: 1 latency spikes"), "{doctor}");
        assert!(run(r, "LATENCY GRAPH command").contains("command - high"));
    }
    for line in [
        "LATENCY HISTORY nosuch",
        "LATENCY HISTORY COMMAND",
        "LATENCY GRAPH nosuch",
        "LATENCY RESET nosuch",
        "LATENCY HELP x",
        "LATENCY NOSUCH",
        "LATENCY RESET COMMAND",
        "LATENCY LATEST",
        "LATENCY RESET",
    ] {
        assert_eq!(run(&mut a, line), run(&mut b, line), "`{line}`");
    }
    // The help text is Redis' own.
    assert_eq!(run(&mut a, "LATENCY HELP"), run(&mut b, "LATENCY HELP"));
}

/// MEMORY STATS: Redis 7.0's fields in its order, each of the same RESP type (integers,
/// doubles, a map per non-empty db), in RESP2 and RESP3. The values are Tumbler's own
/// accounting (README), so only plausibility is checked: totals cover the parts.
#[test]
fn memory_stats_has_redis_shape() {
    let Some((t, redis)) = both() else {
        return;
    };
    // The RESP type of each element, and the text of each map key.
    fn shape(reply: &[u8]) -> Vec<String> {
        String::from_utf8_lossy(reply)
            .split("\r\n")
            .filter(|l| !l.is_empty())
            .map(|l| match l.as_bytes()[0] {
                b'$' => "$".to_string(),
                b':' | b',' | b'*' | b'%' => l[..1].to_string(),
                // A double as a RESP2 bulk string: its digits differ.
                _ if !l.bytes().any(|c| c.is_ascii_alphabetic()) => "n".to_string(),
                _ => l.to_string(),
            })
            .collect()
    }
    let mut shapes = Vec::new();
    for addr in [t.addr, redis.addr] {
        let mut r = Raw::connect(addr);
        run(&mut r, "FLUSHALL");
        run(&mut r, "SET a 1");
        run(&mut r, "SELECT 2");
        run(&mut r, "SET b 2");
        run(&mut r, "PEXPIRE b 100000");
        let resp2 = r.cmd(&["MEMORY", "STATS"]);
        run(&mut r, "HELLO 3");
        let resp3 = r.cmd(&["MEMORY", "STATS"]);
        shapes.push((shape(&resp2), shape(&resp3)));
    }
    assert_eq!(shapes[0], shapes[1], "tumbler (left), redis-server (right)");
    let mut r = Raw::connect(t.addr);
    let text = String::from_utf8_lossy(&r.cmd(&["MEMORY", "STATS"])).into_owned();
    let lines: Vec<&str> = text.split("\r\n").collect();
    let value = |name: &str| -> i64 {
        let i = lines.iter().position(|l| *l == name).unwrap();
        lines[i + 1][1..].parse().unwrap()
    };
    assert_eq!(value("keys.count"), 2);
    assert!(value("total.allocated") >= value("overhead.total"));
    assert!(value("total.allocated") >= value("startup.allocated"));
    assert!(value("lua.caches") > 0);
}
