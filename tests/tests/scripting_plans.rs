//! Native plans (server/src/scripting/plan): every script of a differential corpus runs on
//! three servers side by side — tumbler with plans on, tumbler with plans off (all Lua),
//! and redis-server — and after every command the replies, and after every script the
//! whole keyspace (types, values, TTLs in whole seconds, dbs 0-9), must agree byte for
//! byte. The corpus is the lock scripts, the edge cases in `scripting_plans.txt`, and the
//! scripts of the other scripting tests. Further tests pin which scripts compile, the
//! switches, and MONITOR/keyspace notifications being the same on both paths.

use std::collections::BTreeMap;

use tumbler_tests::{split_line, Raw, RedisServer, Tumbler};

/// Redisson RLock.tryLockInnerAsync (3.x, the form in bench/scripts.sh).
const LOCK: &str = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
/// RLock.tryLockInnerAsync (3.16+: one branch for acquire and re-entry).
const LOCK2: &str = "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
/// RLock.unlockInnerAsync.
const UNLOCK: &str = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1) if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 else redis.call('del', KEYS[1]) redis.call('publish', KEYS[2], ARGV[1]) return 1 end";
/// RLock.unlockInnerAsync, the older form (publishes when the lock is gone; ends in `return nil`).
const UNLOCK_OLD: &str = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('publish', KEYS[2], ARGV[1]); return 1; end;if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; return nil;";
/// RLock.renewExpirationAsync (the watchdog).
const RENEW: &str = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;";
/// RLock.forceUnlockAsync.
const FORCE: &str = "if (redis.call('del', KEYS[1]) == 1) then redis.call('publish', KEYS[2], ARGV[1]); return 1 else return 0 end";
/// The compare-and-delete of `SET NX PX` locks.
const CAS_DEL: &str =
    "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end";

/// RLock.unlockInnerAsync (3.20+: an unlock latch key, the publish command as ARGV[4]).
const UNLOCK_NEW: &str = "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; ";
/// redis-py `Lock.release`.
const PY_RELEASE: &str = "
local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then
    return 0
end
redis.call('del', KEYS[1])
return 1
";
/// redis-py `Lock.extend`.
const PY_EXTEND: &str = "
local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then
    return 0
end
local expiration = redis.call('pttl', KEYS[1])
if not expiration then
    expiration = 0
end
if expiration < 0 then
    return 0
end

local newttl = ARGV[2]
if ARGV[3] == '0' then
    newttl = ARGV[2] + expiration
end
redis.call('pexpire', KEYS[1], newttl)
return 1
";
/// redis-py `Lock.reacquire`.
const PY_REACQUIRE: &str = "
local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then
    return 0
end
redis.call('pexpire', KEYS[1], ARGV[2])
return 1
";

const NAMED: &[(&str, &str)] = &[
    ("UNLOCK_NEW", UNLOCK_NEW),
    ("PY_RELEASE", PY_RELEASE),
    ("PY_EXTEND", PY_EXTEND),
    ("PY_REACQUIRE", PY_REACQUIRE),
    ("LOCK2", LOCK2),
    ("LOCK", LOCK),
    ("UNLOCK_OLD", UNLOCK_OLD),
    ("UNLOCK", UNLOCK),
    ("RENEW", RENEW),
    ("FORCE", FORCE),
    ("CAS_DEL", CAS_DEL),
];

/// A keyspace as comparable text: per db, per key, its type and value, and its PTTL.
fn dump(c: &mut redis::Connection) -> BTreeMap<(i64, Vec<u8>), (String, i64)> {
    let mut out = BTreeMap::new();
    for db in 0..10 {
        redis::cmd("SELECT").arg(db).exec(c).unwrap();
        let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(c).unwrap();
        for k in keys {
            let ty: String = redis::cmd("TYPE").arg(&k).query(c).unwrap();
            let val = match ty.as_str() {
                "string" => {
                    let v: Vec<u8> = redis::cmd("GET").arg(&k).query(c).unwrap();
                    format!("{:?}", String::from_utf8_lossy(&v))
                }
                "hash" => {
                    let mut v: Vec<(Vec<u8>, Vec<u8>)> =
                        redis::cmd("HGETALL").arg(&k).query(c).unwrap();
                    v.sort();
                    format!("{v:?}")
                }
                "list" => {
                    let v: Vec<Vec<u8>> = redis::cmd("LRANGE")
                        .arg(&k)
                        .arg(0)
                        .arg(-1)
                        .query(c)
                        .unwrap();
                    format!("{v:?}")
                }
                "set" => {
                    let mut v: Vec<Vec<u8>> = redis::cmd("SMEMBERS").arg(&k).query(c).unwrap();
                    v.sort();
                    format!("{v:?}")
                }
                "zset" => {
                    let v: Vec<Vec<u8>> = redis::cmd("ZRANGE")
                        .arg(&k)
                        .arg(0)
                        .arg(-1)
                        .arg("WITHSCORES")
                        .query(c)
                        .unwrap();
                    format!("{v:?}")
                }
                other => other.to_string(),
            };
            let pttl: i64 = redis::cmd("PTTL").arg(&k).query(c).unwrap();
            out.insert((db, k), (format!("{ty} {val}"), pttl));
        }
    }
    redis::cmd("SELECT").arg(0).exec(c).unwrap();
    out
}

/// Two keyspaces agree: same keys, types and values; same "no TTL"; TTLs within 2 s (the
/// servers run the same commands a moment apart).
fn same_keyspace(
    a: &BTreeMap<(i64, Vec<u8>), (String, i64)>,
    b: &BTreeMap<(i64, Vec<u8>), (String, i64)>,
) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|((ka, (va, ta)), (kb, (vb, tb)))| {
            ka == kb
                && va == vb
                && ((*ta < 0 && ta == tb) || (*ta >= 0 && *tb >= 0 && (ta - tb).abs() <= 2000))
        })
}

fn connect(url: &str) -> redis::Connection {
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

struct Three {
    on: Tumbler,
    off: Tumbler,
    redis: RedisServer,
}

impl Three {
    fn start() -> Option<Three> {
        Three::of(RedisServer::start()?)
    }

    /// Tumbler as the personality of reference binary `bin`, with plans on and off.
    fn start_bin(bin: &str) -> Option<Three> {
        Three::of(RedisServer::start_bin(bin, &[])?)
    }

    fn of(redis: RedisServer) -> Option<Three> {
        Some(Three {
            on: Tumbler::like(&redis, &[]),
            off: Tumbler::like(&redis, &[("lua-native-plans", "no")]),
            redis,
        })
    }
}

fn info_field(c: &mut Raw, field: &str) -> i64 {
    let info = c.cmd_str(&["INFO", "memory"]);
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO"))
        .trim()
        .parse()
        .unwrap()
}

/// Runs `corpus` (one command per line, `{NAME}` standing for a script above) on the
/// three servers. Returns (scripts run, of which natively on the plan server).
fn run_corpus(three: &Three, corpus: &str, resp3: bool) -> (usize, usize) {
    let (mut on, mut off, mut rd) = (three.on.raw(), three.off.raw(), three.redis.raw());
    if resp3 {
        // HELLO's reply names the server and its version: not compared.
        for c in [&mut on, &mut off, &mut rd] {
            c.cmd(&["HELLO", "3"]);
        }
    }
    let mut d_on = connect(&three.on.url());
    let mut d_off = connect(&three.off.url());
    let mut d_rd = connect(&format!("redis://{}/", three.redis.addr));
    let mut probe = three.on.raw();
    let (mut scripts, mut native) = (0, 0);
    for (i, line) in corpus.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut line = line.to_string();
        for (name, body) in NAMED {
            line = line.replace(&format!("{{{name}}}"), &format!("\"{body}\""));
        }
        let args = split_line(&line);
        let a = on.cmd(&args);
        let b = off.cmd(&args);
        let c = rd.cmd(&args);
        let show = |x: &[u8]| String::from_utf8_lossy(x).into_owned();
        assert_eq!(
            show(&a),
            show(&b),
            "line {}: `{line}`: plan (left) and Lua (right) disagree",
            i + 1
        );
        assert_eq!(
            show(&a),
            show(&c),
            "line {}: `{line}`: tumbler (left) and redis-server (right) disagree",
            i + 1
        );
        let cmd = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
        if cmd.starts_with("eval") {
            let (sa, sb, sc) = (dump(&mut d_on), dump(&mut d_off), dump(&mut d_rd));
            assert!(
                same_keyspace(&sa, &sb),
                "line {}: `{line}`: keyspace, plan vs Lua:\n{sa:?}\n{sb:?}",
                i + 1
            );
            assert!(
                same_keyspace(&sa, &sc),
                "line {}: `{line}`: keyspace, tumbler vs redis:\n{sa:?}\n{sc:?}",
                i + 1
            );
            let sha = if cmd.starts_with("evalsha") {
                String::from_utf8_lossy(&args[1]).into_owned()
            } else {
                String::from_utf8_lossy(&tumbler::scripting::sha1_hex(&args[1])).into_owned()
            };
            let how = probe.cmd_str(&["SCRIPT", "PLAN", &sha]);
            scripts += 1;
            if how == "$6\r\nnative\r\n" {
                native += 1;
            }
        }
    }
    (scripts, native)
}

#[test]
fn corpus_matches_lua_and_redis() {
    let Some(three) = Three::start() else {
        return;
    };
    let (scripts, native) = run_corpus(&three, include_str!("scripting_plans.txt"), false);
    eprintln!("{scripts} scripts, {native} of them as native plans");
    // Most of the corpus is inside the subset; the rest checks the fallback.
    assert!(native * 2 > scripts, "{native} of {scripts}");
    let runs = info_field(&mut three.on.raw(), "native_plan_runs");
    // (A few native scripts never run: refused before starting, as under maxmemory.)
    assert!(
        runs * 10 >= native as i64 * 9,
        "{runs} runs for {native} plans"
    );
    assert_eq!(info_field(&mut three.off.raw(), "native_plan_runs"), 0);
}

/// Native plans give the same results under every personality: the corpus again, with
/// Tumbler as Redis 8.0, against redis-server 8.0.2.
#[test]
fn corpus_matches_lua_and_the_newer_releases() {
    for bin in ["redis8-server"] {
        let Some(three) = Three::start_bin(bin) else {
            return;
        };
        let (scripts, native) = run_corpus(&three, include_str!("scripting_plans.txt"), false);
        assert!(native * 2 > scripts, "{bin}: {native} of {scripts}");
    }
}

/// The same conversions seen by a RESP3 client (nulls, errors, nested arrays).
#[test]
fn corpus_matches_over_resp3() {
    let Some(three) = Three::start() else {
        return;
    };
    let (_, native) = run_corpus(
        &three,
        r#"
        EVAL {LOCK} 1 lock 30000 uuid:1
        EVAL {LOCK} 1 lock 30000 uuid:1
        EVAL {UNLOCK} 2 lock chan unlocked 30000 uuid:2
        EVAL {UNLOCK} 2 lock chan unlocked 30000 uuid:1
        EVAL "return {1, 'a', {2, false, true}, 3.7, nil, 4}" 0
        EVAL "return redis.call('hgetall', KEYS[1])" 1 lock
        HSET h a 1
        EVAL "return redis.call('hgetall', KEYS[1])" 1 h
        EVAL "return redis.call('get', KEYS[1])" 1 nokey
        EVAL "return redis.pcall('incr', KEYS[1])" 1 h
        EVAL "return redis.call('incr', KEYS[1])" 1 h
        EVAL "return redis.status_reply('OK')" 0
        EVAL "return false" 0
        EVAL "return ARGV[1] + 1" 0 abc
        "#,
        true,
    );
    assert!(native >= 10, "{native}");
}

const FAIR_LOCK_LIKE: &str = "while true do local first = redis.call('lindex', KEYS[1], 0) if first == false then break end redis.call('lpop', KEYS[1]) end return 1";

#[test]
fn lock_scripts_compile_to_plans() {
    let t = Tumbler::start();
    let mut c = t.raw();
    for (name, body) in NAMED {
        let load = c.cmd_str(&["SCRIPT", "LOAD", body]);
        let sha = load.split("\r\n").nth(1).unwrap().to_string();
        assert_eq!(
            c.cmd_str(&["SCRIPT", "PLAN", &sha]),
            "$6\r\nnative\r\n",
            "{name}"
        );
        assert_eq!(
            c.cmd_str(&["SCRIPT", "PLAN", &sha.to_uppercase()]),
            "$6\r\nnative\r\n"
        );
    }
    // Loops are not in the subset: the script runs on Lua, and SCRIPT PLAN says why.
    let load = c.cmd_str(&["SCRIPT", "LOAD", FAIR_LOCK_LIKE]);
    let sha = load.split("\r\n").nth(1).unwrap().to_string();
    assert_eq!(
        c.cmd_str(&["SCRIPT", "PLAN", &sha]),
        "$12\r\nlua: `while`\r\n"
    );
    assert_eq!(c.cmd_str(&["EVALSHA", &sha, "1", "q"]), ":1\r\n");
    assert_eq!(
        c.cmd_str(&["SCRIPT", "PLAN", "ffffffffffffffffffffffffffffffffffffffff"]),
        "-NOSCRIPT No matching script. Please use EVAL.\r\n"
    );
    assert_eq!(
        c.cmd_str(&["SCRIPT", "PLAN", "short"]),
        "-NOSCRIPT No matching script. Please use EVAL.\r\n"
    );
    assert_eq!(
        info_field(&mut c, "number_of_native_plans"),
        NAMED.len() as i64
    );
    // EVAL caches (and plans) the script as SCRIPT LOAD does.
    c.cmd(&["EVAL", "return tonumber(ARGV[1]) + 1", "0", "41"]);
    assert_eq!(
        info_field(&mut c, "number_of_native_plans"),
        NAMED.len() as i64 + 1
    );
    assert_eq!(c.cmd_str(&["SCRIPT", "FLUSH"]), "+OK\r\n");
    assert_eq!(info_field(&mut c, "number_of_native_plans"), 0);
}

#[test]
fn config_and_script_switch_the_plan_path() {
    let t = Tumbler::start();
    let mut c = t.raw();
    let runs = |c: &mut Raw| info_field(c, "native_plan_runs");
    assert_eq!(c.cmd_str(&["SCRIPT", "PLANS"]), "$3\r\nyes\r\n");
    assert_eq!(c.cmd_str(&["EVAL", CAS_DEL, "1", "k", "v"]), ":0\r\n");
    assert_eq!(runs(&mut c), 1);
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "lua-native-plans", "no"]),
        "+OK\r\n"
    );
    assert_eq!(c.cmd_str(&["SCRIPT", "PLANS"]), "$2\r\nno\r\n");
    assert_eq!(c.cmd_str(&["EVAL", CAS_DEL, "1", "k", "v"]), ":0\r\n");
    assert_eq!(runs(&mut c), 1, "plans off: Lua ran");
    assert_eq!(c.cmd_str(&["SCRIPT", "PLANS", "yes"]), "+OK\r\n");
    assert_eq!(
        c.cmd_str(&["CONFIG", "GET", "lua-native-plans"]),
        "*2\r\n$16\r\nlua-native-plans\r\n$3\r\nyes\r\n"
    );
    assert_eq!(c.cmd_str(&["EVAL", CAS_DEL, "1", "k", "v"]), ":0\r\n");
    assert_eq!(runs(&mut c), 2);
    assert_eq!(c.cmd_str(&["SCRIPT", "PLANS", "NO"]), "+OK\r\n");
    assert_eq!(
        c.cmd_str(&["CONFIG", "GET", "lua-native-plans"]),
        "*2\r\n$16\r\nlua-native-plans\r\n$2\r\nno\r\n"
    );
    assert_eq!(
        c.cmd_str(&["SCRIPT", "PLANS", "maybe"]),
        "-ERR SCRIPT PLANS takes YES or NO\r\n"
    );
    assert!(c
        .cmd_str(&["CONFIG", "SET", "lua-native-plans", "maybe"])
        .starts_with("-ERR"));
    // The switch is a startup option too.
    let t2 = Tumbler::start_with(&[("lua-native-plans", "no")]);
    let mut c2 = t2.raw();
    c2.cmd(&["EVAL", CAS_DEL, "1", "k", "v"]);
    assert_eq!(runs(&mut c2), 0);
}

/// What MONITOR shows of `line`, without the timestamp and the client's address.
fn monitor_line(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(line).trim_end().to_string();
    let rest = s.split_once(' ').map_or(s.as_str(), |(_, r)| r).to_string();
    match (rest.find('['), rest.find(']')) {
        (Some(a), Some(b)) => {
            let inside = &rest[a + 1..b];
            let (db, who) = inside.split_once(' ').unwrap_or((inside, ""));
            let who = if who == "lua" { "lua" } else { "client" };
            format!("[{db} {who}]{}", &rest[b + 1..])
        }
        _ => rest,
    }
}

/// MONITOR lines and keyspace notifications are the same whether a script runs as a plan
/// or on Lua (calls, their order, the db they name after SELECT, and errors).
#[test]
fn monitor_and_notifications_match_lua() {
    let mut seen: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for plans in ["yes", "no"] {
        let t = Tumbler::start_with(&[
            ("lua-native-plans", plans),
            ("notify-keyspace-events", "KEA"),
        ]);
        let mut mon = t.raw();
        assert_eq!(mon.cmd_str(&["MONITOR"]), "+OK\r\n");
        let mut sub = t.raw();
        sub.cmd(&["PSUBSCRIBE", "__key*@*__:*"]);
        sub.cmd(&["SUBSCRIBE", "end"]);
        let mut c = t.raw();
        let steps: &[&[&str]] = &[
            &["EVAL", LOCK, "1", "lock", "30000", "uuid:1"],
            &["EVAL", LOCK, "1", "lock", "30000", "uuid:1"],
            &["EVAL", RENEW, "1", "lock", "60000", "uuid:1"],
            &["EVAL", UNLOCK, "2", "lock", "chan", "0", "30000", "uuid:1"],
            &["EVAL", UNLOCK, "2", "lock", "chan", "0", "30000", "uuid:1"],
            &["SET", "lk", "me"],
            &["EVAL", CAS_DEL, "1", "lk", "me"],
            &["EVAL", "redis.call('select', 3) redis.call('set', KEYS[1], 3.5) return redis.call('incrbyfloat', KEYS[1], 1)", "1", "k"],
            &["EVAL", "redis.call('set', KEYS[1], 'x') return redis.call('incr', KEYS[1])", "1", "k"],
            &["EVAL", "return redis.pcall('nosuch', KEYS[1])", "1", "k"],
            &["EVAL", "return redis.call('get', true)", "0"],
        ];
        for s in steps {
            c.cmd(s);
        }
        c.cmd(&["PUBLISH", "end", "end"]);
        let mut mlines = Vec::new();
        loop {
            let l = monitor_line(&mon.read_reply());
            let done = l.to_lowercase().contains("\"publish\" \"end\"");
            mlines.push(l);
            if done {
                break;
            }
        }
        let mut notes = Vec::new();
        loop {
            let r = String::from_utf8_lossy(&sub.read_reply()).into_owned();
            if r.contains("$3\r\nend\r\n$3\r\nend") {
                break;
            }
            notes.push(r);
        }
        assert!(notes.len() >= 8, "{notes:?}");
        seen.push((mlines, notes));
    }
    assert_eq!(seen[0].0, seen[1].0, "MONITOR: plan vs Lua");
    assert_eq!(seen[0].1, seen[1].1, "notifications: plan vs Lua");
    assert!(
        seen[0]
            .0
            .iter()
            .any(|l| l == "[3 lua] \"set\" \"k\" \"3.5\""),
        "{:?}",
        seen[0].0
    );
}

/// Plans run atomically: concurrent clients never see a half-applied script, and no
/// update is lost.
#[test]
fn plans_are_atomic_under_concurrency() {
    let t = Tumbler::start();
    let addr = t.addr;
    const THREADS: usize = 6;
    const ITERS: usize = 300;
    let script = "local v = tonumber(redis.call('get', KEYS[1]) or '0') \
                  redis.call('set', KEYS[1], v + 1) \
                  redis.call('hincrby', KEYS[2], 'n', 1) \
                  redis.call('set', KEYS[3], v + 1) \
                  return v";
    let mut c = t.raw();
    let load = c.cmd_str(&["SCRIPT", "LOAD", script]);
    let sha = load.split("\r\n").nth(1).unwrap().to_string();
    assert_eq!(c.cmd_str(&["SCRIPT", "PLAN", &sha]), "$6\r\nnative\r\n");
    let mut handles = Vec::new();
    for _ in 0..THREADS {
        let sha = sha.clone();
        handles.push(std::thread::spawn(move || {
            let mut c = Raw::connect(addr);
            for _ in 0..ITERS {
                let r = c.cmd_str(&["EVALSHA", &sha, "3", "a", "h", "b"]);
                assert!(r.starts_with(':'), "{r}");
                let m = c.cmd_str(&["MGET", "a", "b"]);
                let parts: Vec<&str> = m.split("\r\n").collect();
                assert_eq!(parts[2], parts[4], "{m}");
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    let n = (THREADS * ITERS).to_string();
    assert_eq!(
        c.cmd_str(&["GET", "a"]),
        format!("${}\r\n{}\r\n", n.len(), n)
    );
    assert_eq!(
        c.cmd_str(&["HGET", "h", "n"]),
        format!("${}\r\n{}\r\n", n.len(), n)
    );
    assert!(info_field(&mut c, "native_plan_runs") >= (THREADS * ITERS) as i64);
}

/// A plan is a running script for the `busy` machinery: past busy-reply-threshold other
/// clients get -BUSY while it runs (here its one slow command), SCRIPT KILL sees it, and
/// once it ends everything is served again.
///
/// Two workers, so that another thread is free to answer while the plan's one command
/// runs. On one worker (the default on two cores) that command holds the only worker until
/// it ends, as Redis' one thread does: other clients wait and are then served, and neither
/// answers -BUSY in the middle of a single command (Redis answers it only from the Lua
/// hook between instructions; a long Lua script leaves the worker, tests/one_worker.rs).
/// The same holds for the event loop of our own (one thread), so this runs on tokio.
#[test]
fn plans_take_part_in_busy() {
    let t = Tumbler::start_with(&[
        ("busy-reply-threshold", "1"),
        ("worker-threads", "2"),
        ("event-loop", "no"),
    ]);
    let mut c = t.raw();
    // Enough keys that KEYS * takes a while, even on a fast machine.
    for batch in 0..40 {
        let mut cmd = vec!["MSET".to_string()];
        for i in 0..5000 {
            cmd.push(format!("k:{batch}:{i}"));
            cmd.push("v".into());
        }
        assert_eq!(c.cmd_str(&cmd), "+OK\r\n");
    }
    let slow = "redis.call('keys', '*') return 1";
    let load = c.cmd_str(&["SCRIPT", "LOAD", slow]);
    let sha = load.split("\r\n").nth(1).unwrap().to_string();
    assert_eq!(c.cmd_str(&["SCRIPT", "PLAN", &sha]), "$6\r\nnative\r\n");
    let addr = t.addr;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let runner = std::thread::spawn(move || {
        let mut r = Raw::connect(addr);
        let mut n = 0;
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) && n < 200 {
            assert_eq!(r.cmd_str(&["EVALSHA", &sha, "0"]), ":1\r\n");
            n += 1;
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut busy = false;
    while !busy && std::time::Instant::now() < deadline {
        let r = c.cmd_str(&["GET", "k:0:0"]);
        busy = r.starts_with("-BUSY Redis is busy running a script");
        if !busy {
            assert_eq!(r, "$1\r\nv\r\n");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    runner.join().unwrap();
    assert!(busy, "no -BUSY seen while a plan ran past the threshold");
    assert_eq!(
        c.cmd_str(&["SCRIPT", "KILL"]),
        "-NOTBUSY No scripts in execution right now.\r\n"
    );
    assert_eq!(c.cmd_str(&["GET", "k:0:0"]), "$1\r\nv\r\n");
    assert!(info_field(&mut c, "native_plan_runs") >= 1);
}
