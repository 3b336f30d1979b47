//! RDB file tests' helpers (tests/tests/rdb_differential.rs): a keyspace with every type
//! and encoding, the per-key comparison of two servers, and redis-check-rdb of each
//! reference server.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::tools;

/// The reference servers whose files are exchanged: redis-server 7.0 (`REDIS_SERVER` names
/// another), redis-server 8.0 and valkey 9 (`redis8-server`, `valkey9-server`).
pub fn reference(name: &str) -> String {
    if name == "redis-server" {
        std::env::var("REDIS_SERVER").unwrap_or_else(|_| name.into())
    } else {
        name.into()
    }
}

/// A fresh directory for one test's files.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tumbler-rdb-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A synchronous connection to `addr`.
pub fn connect(addr: std::net::SocketAddr) -> redis::Connection {
    redis::Client::open(format!("redis://{addr}"))
        .unwrap()
        .get_connection()
        .unwrap()
}

fn run(c: &mut redis::Connection, args: &[String]) -> redis::Value {
    let mut cmd = redis::cmd(&args[0]);
    for a in &args[1..] {
        cmd.arg(a.as_bytes());
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Builds a keyspace with every type and encoding redis-server 7.0 has (and 7.2+'s
/// listpack sets where the server makes them): strings int/embstr/raw, lists small and
/// multi-node quicklists, sets intset/listpack/hashtable, sorted sets listpack/skiplist,
/// hashes listpack/hashtable, streams with consumer groups, a PEL and a deleted entry,
/// sparse and dense HyperLogLogs, TTLs in ms, a second database and a function library.
/// Returns the `(db, key)` pairs.
pub fn build_keyspace(c: &mut redis::Connection) -> Vec<(i64, String)> {
    let mut keys = Vec::new();
    let mut cmd = |db: i64, key: Option<&str>, words: Vec<String>| {
        run(c, &["SELECT".to_string(), db.to_string()]);
        run(c, &words);
        if let Some(k) = key {
            if !keys.iter().any(|(d, x): &(i64, String)| *d == db && x == k) {
                keys.push((db, k.to_string()));
            }
        }
    };
    let w = |s: &str| -> Vec<String> { s.split(' ').map(str::to_string).collect() };
    let many = |prefix: &str, n: usize, f: &dyn Fn(usize) -> Vec<String>| -> Vec<String> {
        let mut v = w(prefix);
        for i in 0..n {
            v.extend(f(i));
        }
        v
    };
    cmd(0, Some("str:int"), w("SET str:int 123456789"));
    cmd(0, Some("str:neg"), w("SET str:neg -42"));
    cmd(0, Some("str:embstr"), w("SET str:embstr hello"));
    cmd(
        0,
        Some("str:raw"),
        vec!["SET".into(), "str:raw".into(), "r".repeat(300)],
    );
    cmd(
        0,
        Some("str:lzf"),
        vec!["SET".into(), "str:lzf".into(), "abcabcabc".repeat(40)],
    );
    cmd(0, Some("str:ttl"), w("SET str:ttl v PX 500000"));
    cmd(
        0,
        Some("list:small"),
        w("RPUSH list:small a b c 1 2 -300 70000"),
    );
    cmd(
        0,
        Some("list:big"),
        many("RPUSH list:big", 600, &|i| vec![format!("{i:064}")]),
    );
    cmd(0, Some("list:big"), w("PEXPIRE list:big 900000"));
    cmd(
        0,
        Some("set:intset"),
        w("SADD set:intset 1 2 3 -5 100000 4000000000"),
    );
    cmd(0, Some("set:small"), w("SADD set:small a b c d"));
    cmd(
        0,
        Some("set:big"),
        many("SADD set:big", 700, &|i| vec![format!("m{i}")]),
    );
    cmd(
        0,
        Some("set:bigint"),
        many("SADD set:bigint", 600, &|i| vec![(i * 7).to_string()]),
    );
    cmd(
        0,
        Some("zset:small"),
        w("ZADD zset:small 1 a 2.5 b -3 c 1e10 d"),
    );
    cmd(
        0,
        Some("zset:big"),
        many("ZADD zset:big", 300, &|i| {
            vec![format!("{}", i as f64 / 3.0), format!("member{i}")]
        }),
    );
    cmd(0, Some("zset:big"), w("ZADD zset:big inf top -inf bottom"));
    cmd(0, Some("hash:small"), w("HSET hash:small f1 v1 f2 2 f3 -3"));
    cmd(
        0,
        Some("hash:big"),
        many("HSET hash:big", 600, &|i| {
            vec![format!("f{i}"), format!("{i}")]
        }),
    );
    cmd(
        0,
        Some("hash:longval"),
        vec![
            "HSET".into(),
            "hash:longval".into(),
            "f".into(),
            "v".repeat(100),
        ],
    );
    cmd(0, Some("hash:longval"), w("PEXPIRE hash:longval 700000"));
    for i in 1..=20 {
        cmd(
            0,
            Some("stream"),
            w(&format!("XADD stream {i}-1 field {i} other x{i}")),
        );
    }
    cmd(0, Some("stream"), w("XADD stream 21-0 different fields"));
    cmd(0, Some("stream"), w("XDEL stream 5-1"));
    cmd(0, Some("stream"), w("XGROUP CREATE stream g1 0"));
    cmd(0, Some("stream"), w("XGROUP CREATE stream g2 $"));
    cmd(
        0,
        Some("stream"),
        w("XREADGROUP GROUP g1 alice COUNT 3 STREAMS stream >"),
    );
    cmd(
        0,
        Some("stream"),
        w("XREADGROUP GROUP g1 bob COUNT 2 STREAMS stream >"),
    );
    cmd(0, Some("stream"), w("XACK stream g1 1-1"));
    cmd(0, Some("stream:empty"), w("XADD stream:empty 1-1 a b"));
    cmd(0, Some("stream:empty"), w("XDEL stream:empty 1-1"));
    cmd(0, Some("hll:sparse"), w("PFADD hll:sparse a b c d e"));
    cmd(
        0,
        Some("hll:dense"),
        many("PFADD hll:dense", 3000, &|i| vec![format!("e{i}")]),
    );
    cmd(2, Some("db2:str"), w("SET db2:str in-db-two"));
    cmd(2, Some("db2:list"), w("LPUSH db2:list x y z"));
    cmd(2, Some("db2:list"), w("PEXPIRE db2:list 800000"));
    run(
        c,
        &[
            "FUNCTION".into(),
            "LOAD".into(),
            "#!lua name=rdblib\nredis.register_function('rdbf', function() return 'from-rdb' end)"
                .into(),
        ],
    );
    run(c, &["SELECT".to_string(), "0".to_string()]);
    keys
}

fn query_str(c: &mut redis::Connection, args: &[&str]) -> String {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    match cmd.query::<redis::Value>(c) {
        Ok(redis::Value::BulkString(b)) => String::from_utf8_lossy(&b).into_owned(),
        Ok(redis::Value::SimpleString(s)) => s,
        Ok(redis::Value::Okay) => "OK".into(),
        Ok(redis::Value::Int(n)) => n.to_string(),
        Ok(redis::Value::Array(v)) => v
            .iter()
            .map(|x| match x {
                redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                redis::Value::SimpleString(s) => s.clone(),
                redis::Value::Int(n) => n.to_string(),
                other => format!("{other:?}"),
            })
            .collect::<Vec<_>>()
            .join(","),
        Ok(redis::Value::Nil) => "(nil)".into(),
        Ok(other) => format!("{other:?}"),
        Err(e) => format!("ERR {e}"),
    }
}

/// One reply as text (bulk and simple strings, integers, arrays joined with commas,
/// errors as `ERR ...`).
pub fn reply(c: &mut redis::Connection, args: &[&str]) -> String {
    query_str(c, args)
}

/// Compares `keys` on two servers: TYPE, DEBUG DIGEST-VALUE, PTTL (within 5 s: the
/// servers read their clocks at different moments) and, with `encodings`, OBJECT ENCODING.
/// `redis8`: one side is Redis 8.0 or valkey 9, whose digest prints sorted-set scores
/// another way (shortest form, not `%.17g`), so sorted sets are compared by ZRANGE
/// WITHSCORES instead, scores as numbers.
pub fn compare_keys(
    want: &mut redis::Connection,
    got: &mut redis::Connection,
    keys: &[(i64, String)],
    encodings: bool,
    redis8: bool,
    what: &str,
) {
    for (db, k) in keys {
        for c in [&mut *want, &mut *got] {
            assert_eq!(query_str(c, &["SELECT", &db.to_string()]), "OK");
        }
        let pair = |c1: &mut redis::Connection, c2: &mut redis::Connection, args: &[&str]| {
            (query_str(c1, args), query_str(c2, args))
        };
        let (a, b) = pair(want, got, &["TYPE", k]);
        assert_eq!(a, b, "{what}: TYPE of {k} (db {db})");
        assert_ne!(
            a, "none",
            "{what}: {k} (db {db}) missing from the reference"
        );
        let zset = a == "zset";
        if redis8 && zset {
            // Redis 8.0 also prints scores shortest-form: compared as numbers.
            let (a, b) = pair(want, got, &["ZRANGE", k, "0", "-1", "WITHSCORES"]);
            let parse = |s: &str| -> Vec<(String, f64)> {
                let w: Vec<&str> = s.split(',').collect();
                w.chunks(2)
                    .map(|c| (c[0].to_string(), c[1].parse().unwrap()))
                    .collect()
            };
            assert_eq!(
                parse(&a),
                parse(&b),
                "{what}: ZRANGE WITHSCORES of {k} (db {db})"
            );
        } else {
            let (a, b) = pair(want, got, &["DEBUG", "DIGEST-VALUE", k]);
            assert!(!a.starts_with("ERR"), "{what}: {a}");
            assert_eq!(a, b, "{what}: DEBUG DIGEST-VALUE of {k} (db {db})");
        }
        let (a, b) = pair(want, got, &["PTTL", k]);
        let (a, b): (i64, i64) = (a.parse().unwrap(), b.parse().unwrap());
        if a < 0 || b < 0 {
            assert_eq!(a, b, "{what}: PTTL of {k} (db {db})");
        } else {
            assert!(
                (a - b).abs() < 5000,
                "{what}: PTTL of {k} (db {db}): {a} vs {b}"
            );
        }
        if encodings {
            let (a, b) = pair(want, got, &["OBJECT", "ENCODING", k]);
            assert_eq!(a, b, "{what}: OBJECT ENCODING of {k} (db {db})");
        }
    }
    for c in [&mut *want, &mut *got] {
        query_str(c, &["SELECT", "0"]);
    }
    let sizes = |c: &mut redis::Connection| -> Vec<String> {
        (0..3)
            .map(|db| {
                query_str(c, &["SELECT", &db.to_string()]);
                query_str(c, &["DBSIZE"])
            })
            .collect()
    };
    assert_eq!(sizes(want), sizes(got), "{what}: DBSIZE of dbs 0-2");
    for c in [&mut *want, &mut *got] {
        query_str(c, &["SELECT", "0"]);
    }
    assert_eq!(
        query_str(got, &["FCALL", "rdbf", "0"]),
        "from-rdb",
        "{what}: the function library"
    );
}

/// Runs `bin`'s RDB checker on `file` (redis-check-rdb for redis-server 7.0; for a
/// reference server installed as a wrapper script, the checker binary beside the server it
/// runs, through the same loader). Returns whether it accepted the file, and its output.
pub fn check_rdb(bin: &str, file: &Path) -> Option<(bool, String)> {
    let mut cmd = if bin == reference("redis-server") {
        let checker = tools::tool("redis-check-rdb")?;
        let mut c = Command::new(checker);
        c.arg(file);
        c
    } else {
        let script = which(bin)?;
        let text = std::fs::read_to_string(&script).ok()?;
        let line = text.lines().find(|l| l.trim_start().starts_with("exec "))?;
        let mut words: Vec<String> = line
            .split_whitespace()
            .skip(1)
            .filter(|w| *w != "\"$@\"")
            .map(str::to_string)
            .collect();
        let server = words.last_mut()?;
        let checker = server.replace("-server", "-check-rdb");
        assert!(
            Path::new(&checker).exists(),
            "no checker beside {server} (from {})",
            script.display()
        );
        *server = checker;
        let mut c = Command::new(&words[0]);
        c.args(&words[1..]).arg(file);
        c
    };
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((out.status.success() && text.contains("RDB looks OK"), text))
}

/// `name` on PATH (or `missing`).
fn which(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|f| f.is_file())
    });
    if found.is_none() {
        tools::missing(name);
    }
    found
}
