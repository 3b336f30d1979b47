//! DUMP and RESTORE against a real redis-server: DUMP payloads byte for byte (every type
//! in the encodings both servers share: strings with integer and LZF encodings, quicklists
//! of listpacks, intsets, listpack hashes and sorted sets, skiplist sorted sets), payloads
//! crossing between the two servers in both directions, and RESTORE's options and errors.

use tumbler_tests::bulk_payload as bulk;
use tumbler_tests::diff_against_redis as run;
use tumbler_tests::{diff_script, Raw, RedisServer, Tumbler};

/// Deterministic pseudo-random numbers (xorshift), so both servers get the same data.
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

/// Commands that build one key of every encoding both servers share, small and large.
fn dataset() -> Vec<Vec<Vec<u8>>> {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut cmds: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut c = |args: Vec<String>| cmds.push(args.into_iter().map(String::into_bytes).collect());
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    c(s(&["SET", "str", "hello"]));
    for (i, v) in [
        "0",
        "-1",
        "127",
        "128",
        "-129",
        "32767",
        "-32769",
        "2147483647",
        "2147483648",
        "-2147483649",
        "9223372036854775807",
        "007",
        "-0",
        "+5",
        "1.5",
        "",
    ]
    .iter()
    .enumerate()
    {
        c(vec!["SET".into(), format!("int{i}"), v.to_string()]);
    }
    c(vec!["SET".into(), "lzf".into(), "abcabcabc".repeat(40)]);
    c(vec!["SET".into(), "runs".into(), "a".repeat(10_000)]);
    let words = ["alpha", "beta", "gamma", "delta", "epsilon"];
    let text: Vec<&str> = (0..3000).map(|_| words[r.below(5) as usize]).collect();
    c(vec!["SET".into(), "text".into(), text.join(" ")]);
    let noise: String = (0..5000)
        .map(|_| (b'a' + r.below(26) as u8) as char)
        .collect();
    c(vec!["SET".into(), "noise".into(), noise]);
    c(vec!["SET".into(), "edge21".into(), "x".repeat(21)]);
    c(vec!["SET".into(), "edge20".into(), "x".repeat(20)]);
    // Lists: one node, several nodes (LZF-compressed listpacks), every integer width.
    c(s(&[
        "RPUSH",
        "list",
        "a",
        "b",
        "1",
        "-1",
        "200",
        "-5000",
        "70000",
        "-9000000",
        "3000000000",
        "-9223372036854775808",
    ]));
    let mut big = vec!["RPUSH".to_string(), "biglist".into()];
    for i in 0..3000 {
        big.push(format!("item{i}-{}", "x".repeat(r.below(40) as usize)));
    }
    c(big);
    let mut nums = vec!["RPUSH".to_string(), "nums".into()];
    for _ in 0..2000 {
        nums.push((r.below(2_000_000_000_000) as i64 - 1_000_000_000_000).to_string());
    }
    c(nums);
    let mut strs = vec!["RPUSH".to_string(), "longelems".into()];
    for i in 0..20 {
        strs.push(format!("{i}{}", "y".repeat(100 + 300 * i)));
    }
    c(strs);
    // Intsets of each width.
    c(s(&["SADD", "iset16", "5", "1", "3", "-7"]));
    c(s(&["SADD", "iset32", "1", "70000", "-70000"]));
    c(s(&["SADD", "iset64", "1", "5000000000"]));
    let mut many = vec!["SADD".to_string(), "iset_big".into()];
    many.extend((0..400).map(|i| (i * 3).to_string()));
    c(many);
    // Listpack hashes, small and near the limits.
    c(s(&[
        "HSET", "hash", "f", "v", "n", "12", "neg", "-3", "e", "",
    ]));
    let mut h = vec!["HSET".to_string(), "bighash".into()];
    for i in 0..100 {
        h.push(format!("field{i}"));
        h.push(format!("{}", i * 7));
    }
    c(h);
    // Sorted sets: listpack (integer and text scores) and skiplist.
    c(s(&[
        "ZADD",
        "zset",
        "1",
        "a",
        "2.5",
        "b",
        "-3",
        "c",
        "1e300",
        "d",
        "inf",
        "e",
        "-inf",
        "f",
        "0.1",
        "g",
        "4503599627370497",
        "h",
    ]));
    let mut z = vec!["ZADD".to_string(), "bigz".into()];
    for i in 0..300 {
        z.push(format!("{}", r.below(1_000_000) as f64 / 7.0));
        z.push(format!("member{i}"));
    }
    c(z);
    cmds
}

#[test]
fn dump_payloads_are_byte_identical() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let (mut a, mut b) = (t.raw(), redis.raw());
    let mut keys = Vec::new();
    for cmd in dataset() {
        assert_eq!(
            a.cmd(&cmd),
            b.cmd(&cmd),
            "{:?}",
            String::from_utf8_lossy(&cmd[0])
        );
        keys.push(cmd[1].clone());
    }
    for k in &keys {
        let (x, y) = (a.cmd(&[&b"DUMP"[..], k]), b.cmd(&[&b"DUMP"[..], k]));
        assert!(
            x == y,
            "DUMP {}: tumbler {} bytes, redis-server {} bytes",
            String::from_utf8_lossy(k),
            x.len(),
            y.len()
        );
        let enc = a.cmd(&[&b"OBJECT"[..], b"ENCODING", k]);
        assert_eq!(enc, b.cmd(&[&b"OBJECT"[..], b"ENCODING", k]));
    }
}

/// Every key of the dataset DUMPed by `from`, RESTOREd into `to` under a new name, must read
/// back as on `from`.
fn cross(from: &mut Raw, to: &mut Raw, keys: &[Vec<u8>]) {
    for k in keys {
        let p = bulk(&from.cmd(&[&b"DUMP"[..], k]));
        let mut name = b"copy:".to_vec();
        name.extend_from_slice(k);
        assert_eq!(
            &to.cmd(&[&b"RESTORE"[..], &name, b"0", &p])[..],
            b"+OK\r\n",
            "{}",
            String::from_utf8_lossy(k)
        );
        // Same contents, read with the type's own command.
        let ty = String::from_utf8_lossy(&from.cmd(&[&b"TYPE"[..], k])).to_string();
        let read: &[&[u8]] = match ty.trim() {
            "+string" => &[b"GET"],
            "+list" => &[b"LRANGE", b"0", b"-1"],
            "+set" => &[b"SMEMBERS"],
            "+hash" => &[b"HGETALL"],
            "+zset" => &[b"ZRANGE", b"0", b"-1", b"WITHSCORES"],
            other => panic!("type {other}"),
        };
        let q = |key: &[u8]| -> Vec<Vec<u8>> {
            let mut v = vec![read[0].to_vec(), key.to_vec()];
            v.extend(read[1..].iter().map(|x| x.to_vec()));
            v
        };
        let (x, y) = (from.cmd(&q(k)), to.cmd(&q(&name)));
        if ty.trim() == "+set" || ty.trim() == "+hash" {
            // Hashtable order is each server's own.
            let mut x: Vec<_> = x.split(|&b| b == b'\n').collect();
            let mut y: Vec<_> = y.split(|&b| b == b'\n').collect();
            x.sort();
            y.sort();
            assert_eq!(x, y, "{}", String::from_utf8_lossy(k));
        } else {
            assert_eq!(x, y, "{}", String::from_utf8_lossy(k));
        }
        // And the re-DUMP of the restored copy is the original payload.
        if ty.trim() != "+set" && ty.trim() != "+hash" {
            assert_eq!(
                bulk(&to.cmd(&[&b"DUMP"[..], &name])),
                p,
                "{}",
                String::from_utf8_lossy(k)
            );
        }
    }
}

#[test]
fn payloads_cross_between_the_servers_both_ways() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let (mut a, mut b) = (t.raw(), redis.raw());
    let mut keys = Vec::new();
    for cmd in dataset() {
        a.cmd(&cmd);
        b.cmd(&cmd);
        keys.push(cmd[1].clone());
    }
    // Hashtable-encoded sets and hashes too (their order differs, their contents must not).
    for c in [
        &["SADD", "words", "x", "y", "zz", "w"][..],
        &["HSET", "wide", "f", &"v".repeat(100)],
    ] {
        a.cmd(c);
        b.cmd(c);
        keys.push(c[1].as_bytes().to_vec());
    }
    cross(&mut b, &mut a, &keys);
    cross(&mut a, &mut b, &keys);
}

#[test]
fn restore_options_and_errors() {
    run(r#"
        SET foo bar
        RESTORE foo 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07"
        RESTORE foo 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" REPLACE
        GET foo
        RESTORE bad 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x08"
        RESTORE bad 0 "\x00\x03bar\x0b\x00\x9bE\x1e\x8c\xef\x99i\x07"
        RESTORE bad 0 short
        RESTORE bad 0 ""
        RESTORE bad 0 "\x00\x03bar\n\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        RESTORE bad -1 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07"
        RESTORE bad x "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07"
        RESTORE t1 100000 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07"
        PTTL t1
        RESTORE t2 1 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" ABSTTL
        EXISTS t2
        RESTORE t3 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" IDLETIME 1000
        OBJECT IDLETIME t3
        RESTORE t4 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" IDLETIME -1
        RESTORE t4 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" IDLETIME x
        RESTORE t4 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" FREQ 256
        RESTORE t4 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" FREQ -1
        RESTORE t4 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" FREQ 5 IDLETIME 5
        RESTORE t4 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" IDLETIME 5 FREQ 5
        RESTORE t4 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" FOO
        RESTORE t4 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" FREQ
        RESTORE t5 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" FREQ 100
        OBJECT FREQ t5
        RESTORE t6 0 "\x05\x01\x00\n\x00\x9bE\x1e\x8c\xef\x99i\x07"
        DUMP nosuchkey
        RESTORE
        RESTORE a 0
    "#);
}

#[test]
fn lfu_counter_object_freq_and_restore_freq() {
    // (A key created under an LRU policy reads as an arbitrary counter right after the
    // switch in Redis, so that is not compared.)
    run(r#"
        SET foo bar
        OBJECT FREQ foo
        CONFIG SET maxmemory-policy allkeys-lfu
        OBJECT IDLETIME foo
        DEL foo
        RESTORE foo 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" FREQ 100
        OBJECT FREQ foo
        RESTORE foo 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" FREQ 255 REPLACE
        OBJECT FREQ foo
        GET foo
        GET foo
        OBJECT FREQ foo
        RESTORE bar 0 "\x00\x03bar\n\x00\x9bE\x1e\x8c\xef\x99i\x07" IDLETIME 100
        OBJECT FREQ bar
        SET fresh x
        OBJECT FREQ fresh
        OBJECT FREQ nosuch
        CONFIG SET maxmemory-policy volatile-lfu
        OBJECT FREQ foo
        CONFIG SET maxmemory-policy noeviction
        OBJECT FREQ foo
    "#);
}

#[test]
fn restore_builds_the_encoding_redis_builds() {
    // Payloads DUMPed by redis-server as listpacks, restored under tighter limits: both
    // servers must convert them.
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let (mut a, mut b) = (t.raw(), redis.raw());
    diff_script(
        &mut a,
        &mut b,
        r#"
        ZADD z 1 a 2 b 3 c
        HSET h a 1 b 2 c 3
        CONFIG SET zset-max-listpack-entries 2
        CONFIG SET hash-max-listpack-entries 2
    "#,
    );
    for k in ["z", "h"] {
        let p = bulk(&b.cmd(&["DUMP", k]));
        let name = format!("{k}2").into_bytes();
        for s in [&mut a, &mut b] {
            let reply = s.cmd(&[&b"RESTORE"[..], &name, b"0", &p]);
            assert_eq!(&reply[..], b"+OK\r\n");
        }
        let enc = a.cmd(&[&b"OBJECT"[..], b"ENCODING", &name]);
        assert_eq!(enc, b.cmd(&[&b"OBJECT"[..], b"ENCODING", &name]));
        let want: &[u8] = if k == "z" {
            b"$8\r\nskiplist\r\n"
        } else {
            b"$9\r\nhashtable\r\n"
        };
        assert_eq!(&enc[..], want);
    }
}

#[test]
fn debug_digest_digest_value_and_reload() {
    // Redis needs `enable-debug-command`; the same commands then give the same digests.
    // DEBUG RELOAD writes dump.rdb (Redis' and Tumbler's alike), which every later server
    // started in the same directory would load: they get a directory of their own.
    let dir = std::env::temp_dir().join(format!("tumbler-debug-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir_arg = dir.to_str().unwrap().to_string();
    let Some(redis) =
        RedisServer::start_with(&["--enable-debug-command", "yes", "--dir", &dir_arg])
    else {
        return;
    };
    let tdir = dir.join("tumbler");
    std::fs::create_dir_all(&tdir).unwrap();
    let t = Tumbler::like(&redis, &[("dir", tdir.to_str().unwrap())]);
    let (mut a, mut b) = (t.raw(), redis.raw());
    diff_script(&mut a, &mut b, "DEBUG DIGEST");
    for cmd in dataset() {
        assert_eq!(a.cmd(&cmd), b.cmd(&cmd));
    }
    diff_script(
        &mut a,
        &mut b,
        r#"
        DEBUG DIGEST
        SADD words x y zz w
        HSET wide f vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv
        XADD stream 1-1 a b c d
        XADD stream 5-0 e f
        SET ttl v EX 1000
        SELECT 2
        SET other 1
        SELECT 0
        DEBUG DIGEST
        DEBUG DIGEST-VALUE str list iset16 hash zset bigz words wide stream ttl nosuch
        DEBUG DIGEST-VALUE
        DEBUG RELOAD
        DEBUG DIGEST
        OBJECT ENCODING bigz
        CONFIG SET hash-max-listpack-entries 1
        DEBUG RELOAD
        OBJECT ENCODING hash
        DEBUG DIGEST
        TTL ttl
        FLUSHALL
        DEBUG DIGEST
    "#,
    );
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `script` on `src` (with `{DST}` replaced by `dst`'s port) and returns the replies.
fn run_with_dst(src: &mut Raw, dst: std::net::SocketAddr, script: &str) -> Vec<(String, String)> {
    script
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let line = l.replace("{DST}", &dst.port().to_string());
            let reply = src.cmd(&tumbler_tests::split_line(&line));
            (l.to_string(), String::from_utf8_lossy(&reply).into_owned())
        })
        .collect()
}

#[test]
fn migrate_moves_copies_and_reports_errors_like_redis() {
    let (Some(r1), Some(r2)) = (RedisServer::start(), RedisServer::start()) else {
        return;
    };
    let (t1, t2) = (Tumbler::like(&r1, &[]), Tumbler::like(&r2, &[]));
    // Nothing listens on port 1: connecting fails at once on loopback.
    let script = r#"
        SET k v
        ZADD z 1 a 2.5 b
        PEXPIRE z 100000
        RPUSH l a b c
        MIGRATE 127.0.0.1 {DST} nosuch 0 5000
        MIGRATE 127.0.0.1 {DST} k 0 5000
        EXISTS k
        MIGRATE 127.0.0.1 {DST} "" 3 5000 KEYS z l nosuch
        EXISTS z l
        SET k v2
        MIGRATE 127.0.0.1 {DST} k 0 5000
        EXISTS k
        MIGRATE 127.0.0.1 {DST} k 0 5000 COPY REPLACE
        EXISTS k
        MIGRATE 127.0.0.1 {DST} k 0 5000 REPLACE
        EXISTS k
        SET a 1
        MIGRATE 127.0.0.1 {DST} a 0 5000 AUTH secret
        MIGRATE 127.0.0.1 {DST} a 0 5000 AUTH2 user secret
        EXISTS a
        MIGRATE 127.0.0.1 1 a 0 200
        MIGRATE 127.0.0.1 {DST} a 0 5000 AUTH
        MIGRATE 127.0.0.1 {DST} a 0 5000 AUTH2 x
        MIGRATE 127.0.0.1 {DST} a 0 5000 FOO
        MIGRATE 127.0.0.1 {DST} a 0 5000 KEYS a
        MIGRATE 127.0.0.1 {DST} a x 5000
        MIGRATE 127.0.0.1 {DST} a 0 x
        MIGRATE 127.0.0.1 {DST} a 0
        COMMAND GETKEYS MIGRATE 127.0.0.1 {DST} "" 0 5000 KEYS a b
        COMMAND GETKEYS MIGRATE 127.0.0.1 {DST} k 0 5000 COPY
        COMMAND GETKEYS MIGRATE 127.0.0.1 {DST} "" 0 5000 AUTH KEYS KEYS rw
        COMMAND GETKEYS MIGRATE 127.0.0.1 {DST} "" 0 5000 AUTH2 USER KEYS KEYS a b
        COMMAND GETKEYS MIGRATE 127.0.0.1 {DST} "" 0 5000 COPY KEYS a
    "#;
    let check = r#"
        GET k
        SELECT 3
        ZRANGE z 0 -1 WITHSCORES
        LRANGE l 0 -1
        EXISTS a
    "#;
    let (mut a, mut b) = (t1.raw(), r1.raw());
    assert_eq!(
        run_with_dst(&mut a, t2.addr, script),
        run_with_dst(&mut b, r2.addr, script)
    );
    let (mut a, mut b) = (t2.raw(), r2.raw());
    diff_script(&mut a, &mut b, check);
    let ttl = a.cmd(&["PTTL", "z"]);
    let ms: i64 = String::from_utf8_lossy(&ttl[1..ttl.len() - 2])
        .parse()
        .unwrap();
    assert!(
        (1..=100_000).contains(&ms),
        "TTL travels with the key: {ms}"
    );
    // Across implementations: tumbler to redis-server and back.
    let (mut t, mut r) = (t1.raw(), r1.raw());
    t.cmd(&["HSET", "h", "f", "v"]);
    let to_redis = format!("MIGRATE 127.0.0.1 {} h 0 5000", r1.addr.port());
    assert_eq!(
        &t.cmd(&tumbler_tests::split_line(&to_redis))[..],
        b"+OK\r\n"
    );
    let back = format!("MIGRATE 127.0.0.1 {} h 0 5000", t1.addr.port());
    assert_eq!(&r.cmd(&tumbler_tests::split_line(&back))[..], b"+OK\r\n");
    assert_eq!(&t.cmd(&["HGET", "h", "f"])[..], b"$1\r\nv\r\n");
}

#[test]
fn acl_key_permissions_of_migrate_and_sort() {
    run(r#"
        ACL SETUSER t on nopass +@all %R~read* %W~write* %RW~rw*
        ACL DRYRUN t MIGRATE h 1 rw 0 500
        ACL DRYRUN t MIGRATE h 1 read 0 500
        ACL DRYRUN t MIGRATE h 1 write 0 500
        ACL DRYRUN t MIGRATE h 1 "" 0 5000 KEYS rw rw2
        ACL DRYRUN t MIGRATE h 1 "" 0 5000 KEYS rw read
        ACL DRYRUN t MIGRATE h 1 "" 0 5000 AUTH KEYS KEYS rw
        ACL DRYRUN t MIGRATE h 1 "" 0 5000 AUTH KEYS KEYS write
        ACL DRYRUN t MIGRATE h 1 "" 0 5000 AUTH2 KEYS 123 KEYS read
        ACL DRYRUN t MIGRATE h 1 "" 0 5000 COPY REPLACE KEYS rw
        ACL DRYRUN t SORT read STORE write
        ACL DRYRUN t SORT read STORE read
        ACL DRYRUN t SORT write STORE write
        ACL DRYRUN t SORT read
        ACL DRYRUN t EVAL "" 1 read
        ACL DRYRUN t EVAL "" 0 read
        ACL DRYRUN t EVAL "" 3 rw read
        ACL DRYRUN t EVAL "" -1 read
    "#);
}

/// MIGRATE caches its connection per target as Redis does: INFO's migrate_cached_sockets,
/// SELECT sent once per target db, and a connection the target closed is replaced by one
/// retry, so the MIGRATE still succeeds. The same observations from redis-server.
#[test]
fn migrate_caches_connections_like_redis() {
    let (Some(r1), Some(r2)) = (RedisServer::start(), RedisServer::start()) else {
        return;
    };
    let (t1, t2) = (Tumbler::like(&r1, &[]), Tumbler::like(&r2, &[]));
    let field = |info: &[u8], name: &str| -> String {
        let text = String::from_utf8_lossy(info).into_owned();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .map(str::to_string)
            .unwrap_or_default()
    };
    let observe = |src: std::net::SocketAddr, dst: std::net::SocketAddr| -> Vec<String> {
        let mut s = tumbler_tests::Raw::connect(src);
        let mut d = tumbler_tests::Raw::connect(dst);
        let mut seen = Vec::new();
        let to = |key: &str, db: &str| format!("MIGRATE 127.0.0.1 {} {key} {db} 5000", dst.port());
        d.cmd(&["CONFIG", "RESETSTAT"]);
        seen.push(field(&s.cmd(&["INFO", "stats"]), "migrate_cached_sockets"));
        for (key, db) in [("a", "0"), ("b", "0"), ("c", "1"), ("d", "1")] {
            s.cmd(&["SET", key, "v"]);
            seen.push(
                String::from_utf8_lossy(&s.cmd(&tumbler_tests::split_line(&to(key, db))))
                    .into_owned(),
            );
        }
        seen.push(field(&s.cmd(&["INFO", "stats"]), "migrate_cached_sockets"));
        let stats = d.cmd(&["INFO", "commandstats"]);
        seen.push(
            field(&stats, "cmdstat_select")
                .split(',')
                .next()
                .unwrap_or("")
                .to_string(),
        );
        seen.push(
            field(&stats, "cmdstat_restore")
                .split(',')
                .next()
                .unwrap_or("")
                .to_string(),
        );
        // The target drops every other client, the cached connection included.
        d.cmd(&["CLIENT", "KILL", "SKIPME", "yes"]);
        s.cmd(&["SET", "e", "v"]);
        seen.push(
            String::from_utf8_lossy(&s.cmd(&tumbler_tests::split_line(&to("e", "1")))).into_owned(),
        );
        seen.push(String::from_utf8_lossy(&d.cmd(&["SELECT", "1"])).into_owned());
        seen.push(String::from_utf8_lossy(&d.cmd(&["GET", "e"])).into_owned());
        seen
    };
    let seen = observe(t1.addr, t2.addr);
    assert_eq!(
        seen,
        observe(r1.addr, r2.addr),
        "tumbler (left), redis-server (right)"
    );
    assert_eq!(
        (&seen[0][..], &seen[5][..], &seen[6][..], &seen[7][..]),
        ("0", "1", "calls=2", "calls=4"),
        "{seen:?}"
    );
    assert_eq!(&seen[8][..], "+OK\r\n", "{seen:?}");
}

/// SORT's BY and GET patterns read keys the key specs cannot name, so Redis allows them
/// only to a user with read access to every key; and never in cluster mode (tests/tests/
/// cluster.rs). The replies as a limited user, next to redis-server's.
#[test]
fn sort_patterns_need_access_to_every_key() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let script = [
        "(+sort ~mylist)",
        "(+sort ~mylist ~v*)",
        "(+sort ~mylist %W~*)",
        "(+sort ~mylist %R~*)",
        "+sort ~mylist",
        "+sort ~*",
        "+sort allkeys",
        "-sort (+sort ~*)",
    ];
    let mut seen = Vec::new();
    for addr in [t.addr, redis.addr] {
        let mut admin = tumbler_tests::Raw::connect(addr);
        admin.cmd(&["SET", "v1", "1"]);
        admin.cmd(&["LPUSH", "mylist", "1"]);
        let mut replies = Vec::new();
        for rules in script {
            admin.cmd(&["ACL", "DELUSER", "s"]);
            let mut setuser = vec!["ACL", "SETUSER", "s", "on", "nopass"];
            setuser.extend(rules.split_inclusive(')').flat_map(|r| {
                if r.starts_with('(') || r.starts_with(" (") {
                    vec![r.trim()]
                } else {
                    r.split(' ').filter(|p| !p.is_empty()).collect()
                }
            }));
            replies.push(admin.cmd_str(&setuser));
            // A new connection each time: deleting the user closed the last one.
            let mut user = tumbler_tests::Raw::connect(addr);
            replies.push(user.cmd_str(&["AUTH", "s", "x"]));
            for cmd in [
                &["SORT", "mylist", "BY", "v*"][..],
                &["SORT", "mylist", "GET", "v*"],
                &["SORT", "mylist", "BY", "nosort"],
                &["SORT_RO", "mylist", "GET", "#"],
                &[
                    "EVAL",
                    "return redis.call('sort', KEYS[1], 'by', 'v*')",
                    "1",
                    "mylist",
                ],
            ] {
                replies.push(user.cmd_str(cmd));
            }
        }
        seen.push(replies);
    }
    assert_eq!(seen[0], seen[1], "tumbler (left) and redis-server (right)");
    assert!(
        seen[0]
            .iter()
            .any(|r| r.contains("BY option of SORT denied due to insufficient ACL permissions")),
        "{:?}",
        seen[0]
    );
}
