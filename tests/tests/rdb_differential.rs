//! RDB files both ways against redis-server 7.0 and 8.0 and valkey 9 (docs/rdb.md): a file SAVEd by the
//! real server loads into Tumbler (TUMBLER.RDB LOAD and start-up) with the same values
//! (DEBUG DIGEST-VALUE), types, TTLs and encodings per key; a file Tumbler writes (SAVE,
//! TUMBLER.RDB SAVE) passes the real redis-check-rdb and loads into both real servers at
//! start-up with the same values. Bad files change nothing; BGSAVE moves LASTSAVE.

use std::path::Path;
use std::time::{Duration, Instant};

use tumbler_tests::rdb::{
    build_keyspace, check_rdb, compare_keys, connect, reference, reply, temp_dir,
};
use tumbler_tests::{binary, personality_of_bin, tools, RedisServer, Tumbler};

fn start_ref(bin: &str, dir: &Path, file: &str) -> Option<RedisServer> {
    RedisServer::start_bin(
        bin,
        &[
            "--dir",
            dir.to_str().unwrap(),
            "--dbfilename",
            file,
            "--enable-debug-command",
            "yes",
        ],
    )
}

/// The real server builds and SAVEs the keyspace; Tumbler loads the file two ways.
fn from_redis(name: &str) {
    let bin = reference(name);
    let dir = temp_dir(&format!("from-{name}"));
    let Some(r) = start_ref(&bin, &dir, "dump.rdb") else {
        return;
    };
    let mut rc = connect(r.addr);
    let keys = build_keyspace(&mut rc);
    assert_eq!(reply(&mut rc, &["SAVE"]), "OK");
    let file = dir.join("dump.rdb");
    assert!(file.exists());
    // The reference as a load leaves it (strings get their encodings back, as Tumbler's do
    // on loading); the file is written again, the same keyspace.
    assert_eq!(reply(&mut rc, &["DEBUG", "RELOAD"]), "OK");
    // Each reference's encodings are Tumbler's in its personality (listpack sets and small
    // lists from 7.2 on).
    let encodings = true;
    let redis8 = name != "redis-server";

    let t = Tumbler::like(&r, &[]);
    let mut tc = connect(t.addr);
    assert_eq!(
        reply(&mut tc, &["TUMBLER.RDB", "LOAD", file.to_str().unwrap()]),
        "OK"
    );
    let info = reply(&mut tc, &["INFO", "persistence"]);
    assert!(
        info.contains(&format!("rdb_last_load_keys_loaded:{}\r\n", keys.len())),
        "{info}"
    );
    compare_keys(
        &mut rc,
        &mut tc,
        &keys,
        encodings,
        redis8,
        &format!("{name} -> TUMBLER.RDB LOAD"),
    );
    if !redis8 {
        assert_eq!(
            reply(&mut rc, &["DEBUG", "DIGEST"]),
            reply(&mut tc, &["DEBUG", "DIGEST"]),
            "{name}: the dataset digest"
        );
    }

    // Start-up: --dir given, the file exists, it is loaded before clients are served.
    let p = binary::Proc::start(&[
        "--port",
        "0",
        "--dir",
        dir.to_str().unwrap(),
        "--personality",
        r.personality,
    ]);
    let log = p.wait_log("DB loaded from disk");
    assert!(log.contains("DB loaded from disk: "), "{log}");
    assert!(log.contains("Loading RDB produced by version "), "{log}");
    let addr = format!("127.0.0.1:{}", p.port).parse().unwrap();
    let mut pc = connect(addr);
    compare_keys(
        &mut rc,
        &mut pc,
        &keys,
        encodings,
        redis8,
        &format!("{name} -> start-up"),
    );
    p.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn redis_7_files_load_into_tumbler() {
    from_redis("redis-server");
}

#[test]
fn redis_8_files_load_into_tumbler() {
    from_redis("redis8-server");
}

#[test]
fn valkey_9_files_load_into_tumbler() {
    from_redis("valkey9-server");
}

/// Tumbler builds the keyspace (and holds a native lock) and writes it with SAVE and
/// TUMBLER.RDB SAVE; the real checker accepts both files and the real server loads them.
fn to_redis(name: &str) {
    let bin = reference(name);
    if tools::tool(&bin).is_none() {
        return;
    }
    let dir = temp_dir(&format!("to-{name}"));
    // Tumbler is the server it writes for: its RDB version is the reference's (7.0 loads up
    // to 10).
    let personality = personality_of_bin(&bin);
    let header: &[u8] = match personality {
        "redis-7.0" => b"REDIS0010",
        "redis-8.0" => b"REDIS0012",
        _ => b"VALKEY080",
    };
    let t = Tumbler::start_with(&[("dir", dir.to_str().unwrap()), ("personality", personality)]);
    let mut tc = connect(t.addr);
    let keys = build_keyspace(&mut tc);
    let token = reply(&mut tc, &["LOCK.ACQUIRE", "lk", "owner", "60000"]);
    assert!(token.parse::<i64>().is_ok(), "{token}");
    assert_eq!(reply(&mut tc, &["SAVE"]), "OK");
    let saved = dir.join("dump.rdb");
    assert!(saved.exists());
    let bytes: Vec<u8> = redis::cmd("TUMBLER.RDB")
        .arg("SAVE")
        .query(&mut tc)
        .unwrap();
    assert_eq!(&bytes[..9], header);
    let returned = dir.join("returned.rdb");
    std::fs::write(&returned, &bytes).unwrap();
    // TUMBLER.RDB SAVE wrote nothing of its own.
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(files.len(), 2, "{files:?}");
    // The lock was left out of both files; gone here too, the keyspaces can be compared.
    assert_eq!(reply(&mut tc, &["DEL", "lk"]), "1");
    let redis8 = name != "redis-server";

    for (file, what) in [("dump.rdb", "SAVE"), ("returned.rdb", "TUMBLER.RDB SAVE")] {
        let Some((ok, out)) = check_rdb(&bin, &dir.join(file)) else {
            return;
        };
        assert!(ok, "{name}'s checker refused Tumbler's {what} file:\n{out}");
        let Some(r) = start_ref(&bin, &dir, file) else {
            return;
        };
        let mut rc = connect(r.addr);
        compare_keys(
            &mut tc,
            &mut rc,
            &keys,
            false,
            redis8,
            &format!("Tumbler {what} -> {name}"),
        );
        assert_eq!(
            reply(&mut rc, &["EXISTS", "lk"]),
            "0",
            "a native lock key was saved"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tumbler_files_load_into_redis_7() {
    to_redis("redis-server");
}

#[test]
fn tumbler_files_load_into_redis_8() {
    to_redis("redis8-server");
}

#[test]
fn tumbler_files_load_into_valkey_9() {
    to_redis("valkey9-server");
}

/// A truncated file, a flipped byte and a file that is not RDB at all: TUMBLER.RDB LOAD
/// answers an error and the keyspace is as before; at start-up the binary stops with the
/// reason and a non-zero exit.
#[test]
fn bad_files_change_nothing() {
    let dir = temp_dir("bad");
    let t = Tumbler::start();
    let mut tc = connect(t.addr);
    build_keyspace(&mut tc);
    let digest = reply(&mut tc, &["DEBUG", "DIGEST"]);
    let good: Vec<u8> = redis::cmd("TUMBLER.RDB")
        .arg("SAVE")
        .query(&mut tc)
        .unwrap();
    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x20;
    let cases: [(&str, Vec<u8>); 4] = [
        ("truncated.rdb", good[..good.len() / 2].to_vec()),
        ("no-trailer.rdb", good[..good.len() - 4].to_vec()),
        ("flipped.rdb", flipped),
        ("garbage.rdb", b"not an rdb file at all".to_vec()),
    ];
    // Another server's keyspace, so that a load that wrongly succeeded would show.
    let other = Tumbler::start();
    let mut oc = connect(other.addr);
    reply(&mut oc, &["SET", "other", "x"]);
    let other_digest = reply(&mut oc, &["DEBUG", "DIGEST"]);
    for (name, bytes) in &cases {
        let f = dir.join(name);
        std::fs::write(&f, bytes).unwrap();
        let r = reply(&mut oc, &["TUMBLER.RDB", "LOAD", f.to_str().unwrap()]);
        assert!(r.starts_with("ERR"), "{name}: {r}");
        assert_eq!(reply(&mut oc, &["DEBUG", "DIGEST"]), other_digest, "{name}");
        let mut cmd = binary::command();
        cmd.args([
            "--port",
            "0",
            "--dir",
            dir.to_str().unwrap(),
            "--dbfilename",
            name,
        ]);
        let (out, killed) = binary::output_within(&mut cmd, Duration::from_secs(10));
        assert!(!killed, "{name}: tumbler did not stop");
        assert!(!out.status.success(), "{name}: exit {:?}", out.status);
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            text.contains("Fatal error loading the DB"),
            "{name}: {text}"
        );
    }
    let missing = reply(&mut oc, &["TUMBLER.RDB", "LOAD", "/nonexistent/x.rdb"]);
    assert!(missing.starts_with("ERR"), "{missing}");
    // The good file loads, and is the first server's keyspace.
    let f = dir.join("good.rdb");
    std::fs::write(&f, &good).unwrap();
    assert_eq!(
        reply(&mut oc, &["TUMBLER.RDB", "LOAD", f.to_str().unwrap()]),
        "OK"
    );
    assert_eq!(reply(&mut oc, &["DEBUG", "DIGEST"]), digest);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Redis 8.0's hashes with field TTLs (RDB types 25, listpackex, and 24, a hashtable with
/// TTLs) load into Tumbler with their encodings, values and TTLs; Tumbler as redis-8.0
/// writes them back in a file redis8 checks and loads the same.
#[test]
fn hash_field_ttls_load_both_ways() {
    let bin = reference("redis8-server");
    let dir = temp_dir("hfe");
    let Some(r) = start_ref(&bin, &dir, "dump.rdb") else {
        return;
    };
    let mut rc = connect(r.addr);
    reply(&mut rc, &["SET", "plain", "1"]);
    reply(&mut rc, &["HSET", "small", "f", "v", "g", "w", "h", "x"]);
    let long = "x".repeat(100);
    reply(&mut rc, &["HSET", "big", "f", &long, "g", "w", "h", "x"]);
    for k in ["small", "big"] {
        assert_eq!(
            reply(
                &mut rc,
                &["HPEXPIREAT", k, "4102444800000", "FIELDS", "2", "f", "h"]
            ),
            "1,1"
        );
    }
    assert_eq!(
        reply(&mut rc, &["OBJECT", "ENCODING", "small"]),
        "listpackex"
    );
    assert_eq!(reply(&mut rc, &["OBJECT", "ENCODING", "big"]), "hashtable");
    assert_eq!(reply(&mut rc, &["SAVE"]), "OK");
    let t = Tumbler::start_with(&[("personality", "redis-8.0"), ("dir", dir.to_str().unwrap())]);
    let mut tc = connect(t.addr);
    let file = dir.join("dump.rdb");
    assert_eq!(
        reply(&mut tc, &["TUMBLER.RDB", "LOAD", file.to_str().unwrap()]),
        "OK"
    );
    let same = |tc: &mut redis::Connection, rc: &mut redis::Connection, what: &str| {
        for k in ["plain", "small", "big"] {
            for cmd in [
                &["DEBUG", "DIGEST-VALUE", k][..],
                &["OBJECT", "ENCODING", k],
                &["HPEXPIRETIME", k, "FIELDS", "3", "f", "g", "h"],
            ] {
                if k == "plain" && cmd[0] == "HPEXPIRETIME" {
                    continue;
                }
                assert_eq!(reply(tc, cmd), reply(rc, cmd), "{what}: {cmd:?}");
            }
        }
        assert_eq!(
            reply(tc, &["HGETALL", "small"]),
            reply(rc, &["HGETALL", "small"])
        );
    };
    same(&mut tc, &mut rc, "redis8 -> Tumbler");
    // Back: Tumbler's file (RDB 12) passes redis8's checker and loads into it.
    std::fs::remove_file(&file).unwrap();
    assert_eq!(reply(&mut tc, &["SAVE"]), "OK");
    assert_eq!(&std::fs::read(&file).unwrap()[..9], b"REDIS0012");
    drop(rc);
    drop(r);
    if let Some((ok, out)) = check_rdb(&bin, &file) {
        assert!(ok, "redis8's checker refused Tumbler's file:\n{out}");
    }
    let Some(r2) = start_ref(&bin, &dir, "dump.rdb") else {
        return;
    };
    let mut rc2 = connect(r2.addr);
    same(&mut tc, &mut rc2, "Tumbler -> redis8");
    let _ = std::fs::remove_dir_all(&dir);
}

/// BGSAVE writes the file in the background; LASTSAVE and INFO follow it.
#[test]
fn bgsave_moves_lastsave() {
    let dir = temp_dir("bgsave");
    let t = Tumbler::start_with(&[("dir", dir.to_str().unwrap())]);
    let mut tc = connect(t.addr);
    reply(&mut tc, &["SET", "k", "v"]);
    let before: i64 = reply(&mut tc, &["LASTSAVE"]).parse().unwrap();
    let info = reply(&mut tc, &["INFO", "persistence"]);
    assert!(info.contains("rdb_changes_since_last_save:1"), "{info}");
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(reply(&mut tc, &["BGSAVE"]), "Background saving started");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = reply(&mut tc, &["INFO", "persistence"]);
        if info.contains("rdb_bgsave_in_progress:0") {
            assert!(info.contains("rdb_last_bgsave_status:ok"), "{info}");
            assert!(info.contains("rdb_changes_since_last_save:0"), "{info}");
            break;
        }
        assert!(Instant::now() < deadline, "BGSAVE did not finish: {info}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let after: i64 = reply(&mut tc, &["LASTSAVE"]).parse().unwrap();
    assert!(after > before, "LASTSAVE {before} -> {after}");
    let bytes = std::fs::read(dir.join("dump.rdb")).unwrap();
    // The default personality, redis-7.2, writes RDB 11.
    assert_eq!(&bytes[..9], b"REDIS0011");
    // The file holds the key: a second server loads it.
    let t2 = Tumbler::start();
    let mut c2 = connect(t2.addr);
    let f = dir.join("dump.rdb");
    assert_eq!(
        reply(&mut c2, &["TUMBLER.RDB", "LOAD", f.to_str().unwrap()]),
        "OK"
    );
    assert_eq!(reply(&mut c2, &["GET", "k"]), "v");
    let e = reply(&mut tc, &["BGSAVE", "NOW"]);
    assert!(e.starts_with("ERR") && e.contains("syntax"), "{e}");
    // The directory gone: SAVE answers an error, BGSAVE starts and then reports one.
    std::fs::remove_dir_all(&dir).unwrap();
    let e = reply(&mut tc, &["SAVE"]);
    assert!(e.starts_with("ERR"), "{e}");
    assert_eq!(reply(&mut tc, &["BGSAVE"]), "Background saving started");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = reply(&mut tc, &["INFO", "persistence"]);
        if info.contains("rdb_bgsave_in_progress:0") {
            assert!(info.contains("rdb_last_bgsave_status:err"), "{info}");
            assert!(info.contains("rdb_changes_since_last_save:0"), "{info}");
            break;
        }
        assert!(Instant::now() < deadline, "BGSAVE did not finish: {info}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(reply(&mut tc, &["LASTSAVE"]), after.to_string());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without `dir` or `dbfilename` given, a `dump.rdb` in the working directory is not read;
/// SHUTDOWN SAVE writes the file, a plain SHUTDOWN does not.
#[test]
fn startup_reads_only_a_named_file() {
    let dir = temp_dir("startup");
    let t = Tumbler::start();
    let mut tc = connect(t.addr);
    reply(&mut tc, &["SET", "stray", "1"]);
    let bytes: Vec<u8> = redis::cmd("TUMBLER.RDB")
        .arg("SAVE")
        .query(&mut tc)
        .unwrap();
    std::fs::write(dir.join("dump.rdb"), &bytes).unwrap();
    let mut cmd = binary::command();
    cmd.current_dir(&dir).args(["--port", "0"]);
    let mut p = binary::Proc::spawn(cmd);
    let line = p.next_line(Duration::from_secs(10)).expect("port line");
    p.port = binary::port_of(&line, "port=");
    assert!(p.cmd("DBSIZE").contains(":0"), "{}", p.log());
    // SHUTDOWN SAVE writes dir/dbfilename (here the working directory's dump.rdb).
    std::fs::remove_file(dir.join("dump.rdb")).unwrap();
    let _ = p.cmd("SET written 1");
    let _ = binary::Proc::cmd_on(p.port, "SHUTDOWN SAVE");
    p.wait_exit();
    assert!(p.log().contains("DB saved on disk"), "{}", p.log());
    let again = binary::Proc::start(&["--port", "0", "--dir", dir.to_str().unwrap()]);
    assert!(again.cmd("GET written").contains("1"), "{}", again.log());
    // A plain SHUTDOWN writes nothing.
    let _ = again.cmd("SET later 1");
    let _ = binary::Proc::cmd_on(again.port, "SHUTDOWN");
    let mut again = again;
    again.wait_exit();
    let third = binary::Proc::start(&["--port", "0", "--dir", dir.to_str().unwrap()]);
    assert!(third.cmd("EXISTS later").contains(":0"), "{}", third.log());
    third.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// DEBUG RELOAD goes through the file (written to `dir`) but keeps native locks, which the
/// file does not hold: still held, a second owner still refused. TUMBLER.RDB LOAD replaces
/// everything, locks included.
#[test]
fn debug_reload_keeps_native_locks() {
    let dir = temp_dir("reload-locks");
    let t = Tumbler::start_with(&[("dir", dir.to_str().unwrap())]);
    let mut c = connect(t.addr);
    reply(&mut c, &["SET", "s", "v"]);
    reply(&mut c, &["RPUSH", "l", "a", "b"]);
    let token = reply(&mut c, &["LOCK.ACQUIRE", "lk", "o1", "60000"]);
    assert!(token.parse::<i64>().is_ok(), "{token}");
    let digest = reply(&mut c, &["DEBUG", "DIGEST-VALUE", "s", "l"]);
    assert_eq!(reply(&mut c, &["DEBUG", "RELOAD"]), "OK");
    assert!(dir.join("dump.rdb").exists());
    assert_eq!(reply(&mut c, &["DEBUG", "DIGEST-VALUE", "s", "l"]), digest);
    assert_eq!(reply(&mut c, &["TYPE", "lk"]), "lock");
    assert_eq!(
        reply(&mut c, &["LOCK.ACQUIRE", "lk", "o2", "60000"]),
        "(nil)"
    );
    assert_eq!(reply(&mut c, &["DBSIZE"]), "3");
    // NOSAVE reads the file back as it is; a key set since is gone, the lock stays.
    reply(&mut c, &["SET", "later", "1"]);
    assert_eq!(reply(&mut c, &["DEBUG", "RELOAD", "NOSAVE"]), "OK");
    assert_eq!(reply(&mut c, &["EXISTS", "later", "s", "lk"]), "2");
    let f = dir.join("dump.rdb");
    assert_eq!(
        reply(&mut c, &["TUMBLER.RDB", "LOAD", f.to_str().unwrap()]),
        "OK"
    );
    assert_eq!(reply(&mut c, &["EXISTS", "lk"]), "0");
    assert_eq!(reply(&mut c, &["DBSIZE"]), "2");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The nodes of a multi-node process share one config, so they would share one file:
/// SAVE and BGSAVE refuse there and nothing is written; TUMBLER.RDB SAVE still works.
#[test]
fn multi_node_processes_write_no_file() {
    let dir = temp_dir("nodes");
    let p = binary::Proc::start(&[
        "--port",
        "0",
        "--nodes",
        "2",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    for cmd in ["SAVE", "BGSAVE"] {
        let r = p.cmd(cmd);
        assert!(
            r.starts_with("-ERR") && r.contains("multi-node"),
            "{cmd}: {r}"
        );
    }
    assert!(p.cmd("TUMBLER.RDB SAVE").contains("REDIS0011"));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    p.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Under an LFU policy each key's counter goes into the file (RDB_OPCODE_FREQ), under an
/// LRU one its idle time (RDB_OPCODE_IDLE), as Redis writes them: DEBUG RELOAD keeps them,
/// and redis-server loading Tumbler's file reports the same OBJECT FREQ / IDLETIME.
#[test]
fn lfu_counters_and_idle_times_are_saved() {
    for (policy, opt, sub, value) in [
        ("allkeys-lfu", "FREQ", "FREQ", 100i64),
        ("allkeys-lru", "IDLETIME", "IDLETIME", 1000),
    ] {
        let dir = temp_dir(&format!("meta-{policy}"));
        // As redis-7.0: its file (RDB 10) is for the redis-server 7.0 below.
        let t = Tumbler::start_with(&[
            ("dir", dir.to_str().unwrap()),
            ("maxmemory-policy", policy),
            ("personality", "redis-7.0"),
        ]);
        let mut c = connect(t.addr);
        reply(&mut c, &["SET", "src", "v"]);
        let payload: Vec<u8> = redis::cmd("DUMP").arg("src").query(&mut c).unwrap();
        let r: String = redis::cmd("RESTORE")
            .arg("k")
            .arg(0)
            .arg(payload)
            .arg(opt)
            .arg(value)
            .query(&mut c)
            .unwrap();
        assert_eq!(r, "OK");
        let near = |got: &str, what: &str| {
            let n: i64 = got.parse().unwrap_or_else(|_| panic!("{what}: {got}"));
            assert!((n - value).abs() <= 2, "{policy} {what}: {n}, want {value}");
        };
        near(&reply(&mut c, &["OBJECT", sub, "k"]), "before");
        assert_eq!(reply(&mut c, &["DEBUG", "RELOAD"]), "OK");
        near(&reply(&mut c, &["OBJECT", sub, "k"]), "after DEBUG RELOAD");
        let Some(r) = RedisServer::start_bin(
            &reference("redis-server"),
            &["--dir", dir.to_str().unwrap(), "--maxmemory-policy", policy],
        ) else {
            return;
        };
        let mut rc = connect(r.addr);
        near(&reply(&mut rc, &["OBJECT", sub, "k"]), "on redis-server");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
