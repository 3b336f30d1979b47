//! Personalities (lockcore/src/personality.rs, docs/personalities.md): each one announces
//! its server and version, and has exactly the commands and arities of that release. The
//! version-dependent replies are compared with redis-server 7.0.15, redis8-server 8.0.2
//! and valkey9-server 9.1.2 (the other differential files cover the commands themselves).

use lockcore::personality::{Personality, ALL};
use tumbler_tests::{diff_against, diff_against_resp3, RedisServer, Tumbler};

fn text(t: &Tumbler, args: &[&str]) -> String {
    t.raw().cmd_str(args)
}

/// The lines of an INFO reply (RESP2 bulk or RESP3 verbatim) up to `os:`, without the
/// build id (what follows varies from build to build).
fn info_head(info: &str) -> Vec<String> {
    info.lines()
        .skip(1)
        .map(|l| l.strip_prefix("txt:").unwrap_or(l))
        .take_while(|l| !l.starts_with("os:"))
        .filter(|l| !l.starts_with("redis_build_id:"))
        .map(str::to_string)
        .collect()
}

#[test]
fn each_personality_announces_its_server_and_version() {
    for p in ALL {
        let t = Tumbler::start_with(&[("personality", p.name)]);
        let info = text(&t, &["INFO", "server"]);
        let head = info_head(&info);
        assert_eq!(
            head[1],
            format!("redis_version:{}", p.redis_version()),
            "{}",
            p.name
        );
        if p.is_valkey() {
            assert_eq!(head[2], "server_name:valkey");
            assert_eq!(head[3], format!("valkey_version:{}", p.version));
            assert!(info.contains("\r\nserver_mode:standalone\r\n"), "{info}");
        } else {
            assert!(info.contains("\r\nredis_mode:standalone\r\n"), "{info}");
            assert!(!info.contains("valkey"), "{info}");
        }
        let mut r = t.raw();
        let hello = String::from_utf8_lossy(&r.cmd(&["HELLO", "3"])).to_string();
        let server = p.server_name();
        assert!(
            hello.starts_with(&format!(
                "%7\r\n$6\r\nserver\r\n${}\r\n{server}\r\n$7\r\nversion\r\n${}\r\n{}\r\n",
                server.len(),
                p.version.len(),
                p.version
            )),
            "{}: {hello:?}",
            p.name
        );
        for (module, _) in p.modules() {
            assert!(hello.contains(module), "{}: {hello:?}", p.name);
        }
        // Lua sees the version Redis' scripts test (Valkey keeps 7.2.4 there).
        let v = r.cmd_str(&["EVAL", "return redis.REDIS_VERSION", "0"]);
        assert!(v.contains(p.redis_version()), "{}: {v}", p.name);
        let num = r.cmd_str(&["EVAL", "return redis.REDIS_VERSION_NUM", "0"]);
        assert_eq!(num, format!(":{}\r\n", p.version_num()), "{}", p.name);
        assert!(r
            .cmd_str(&["CONFIG", "GET", "personality"])
            .contains(p.name));
        assert!(
            r.cmd_str(&["CONFIG", "SET", "personality", "redis-8.0"])
                .contains("can't set immutable config"),
            "the personality is fixed at start-up"
        );
    }
}

#[test]
fn the_default_is_redis_7_2_and_an_unknown_name_is_refused() {
    let t = Tumbler::start();
    assert!(text(&t, &["CONFIG", "GET", "personality"]).contains("redis-7.2"));
    assert_eq!(Personality::DEFAULT.version, "7.2.4");
    let e = tumbler::embed::TestServer::builder()
        .config("personality", "redis-6.2")
        .spawn()
        .err()
        .expect("redis-6.2 is no personality");
    assert!(e.to_string().contains("personality"), "{e}");
}

#[test]
fn commands_exist_from_their_release_on() {
    let cases: &[(&str, &[&str], bool)] = &[
        // (personality, command, exists)
        ("redis-7.0", &["WAITAOF", "0", "0", "0"], false),
        ("redis-7.2", &["WAITAOF", "0", "0", "0"], true),
        ("valkey-8.1", &["WAITAOF", "0", "0", "0"], true),
        ("redis-7.0", &["CLIENT", "NO-TOUCH", "on"], false),
        ("redis-7.2", &["CLIENT", "NO-TOUCH", "on"], true),
        ("valkey-9.1", &["CLIENT", "SETINFO", "lib-name", "x"], true),
    ];
    for (p, argv, exists) in cases {
        let t = Tumbler::start_with(&[("personality", p)]);
        let mut r = t.raw();
        let reply = r.cmd_str(argv);
        let unknown = reply.starts_with("-ERR unknown");
        assert_eq!(!unknown, *exists, "{p} {argv:?}: {reply}");
        // COMMAND agrees with dispatch.
        let name = if argv[0] == "CLIENT" {
            format!("client|{}", argv[1].to_lowercase())
        } else {
            argv[0].to_lowercase()
        };
        let info = r.cmd_str(&["COMMAND", "INFO", &name]);
        assert_eq!(
            info != "*1\r\n$-1\r\n" && info != "*1\r\n_\r\n",
            *exists,
            "{p}: {info}"
        );
        let list = r.cmd_str(&["COMMAND", "LIST"]);
        assert_eq!(
            list.contains(&format!("\r\n{name}\r\n")),
            *exists,
            "{p} {name}"
        );
        // A script sees the same command table.
        let quoted: Vec<String> = argv.iter().map(|a| format!("'{a}'")).collect();
        let s = r.cmd_str(&[
            "EVAL",
            &format!("return redis.pcall({})", quoted.join(",")),
            "0",
        ]);
        assert_eq!(!s.contains("Unknown Redis command"), *exists, "{p}: {s}");
    }
}

/// ZRANK and ZREVRANK: WITHSCORE from 7.2, arity 3 before it; the null of a missing member
/// is a null array with WITHSCORE, in RESP2 and RESP3.
const ZRANK: &str = "
ZADD z 1 a 2.5 b 3 c
ZRANK z b
ZRANK z b WITHSCORE
ZREVRANK z b withscore
ZRANK z nope WITHSCORE
ZREVRANK z nope WITHSCORE
ZRANK nokey a WITHSCORE
ZRANK z a foo
ZRANK z a withscore extra
ZRANK z
SET s x
ZRANK s a WITHSCORE
EVAL \"return redis.pcall('zrank', 'z', 'c', 'withscore')\" 0
";

#[test]
fn zrank_withscore_as_each_reference() {
    for bin in ["redis-server", "redis8-server", "valkey9-server"] {
        diff_against(bin, ZRANK);
        diff_against_resp3(bin, ZRANK);
    }
}

#[test]
fn hello_and_info_server_as_each_reference() {
    for bin in ["redis-server", "redis8-server", "valkey9-server"] {
        let Some(redis) = RedisServer::start_bin(bin, &[]) else {
            return;
        };
        let t = Tumbler::like(&redis, &[]);
        let (mut a, mut b) = (t.raw(), redis.raw());
        // Both connections are the second of their server, so `id` matches too.
        a.cmd(&["PING"]);
        b.cmd(&["PING"]);
        let (mut a, mut b) = (t.raw(), redis.raw());
        let (ha, hb) = (a.cmd_str(&["HELLO", "3"]), b.cmd_str(&["HELLO", "3"]));
        let id = |s: &str| s.replace(|c: char| c.is_ascii_digit(), "#");
        assert_eq!(id(&ha), id(&hb), "{bin}: HELLO 3");
        let ia = a.cmd_str(&["INFO", "server"]);
        let ib = b.cmd_str(&["INFO", "server"]);
        let (ia, ib) = (info_head(&ia), info_head(&ib));
        // The version lines are the same; the mode line has the same name.
        assert_eq!(ia[..ia.len() - 1], ib[..ib.len() - 1], "{bin}: INFO server");
        let mode = |v: &[String]| v.last().unwrap().split(':').next().unwrap().to_string();
        assert_eq!(mode(&ia), mode(&ib), "{bin}");
    }
}

/// Doubles in replies, GEO coordinates and Lua numbers passed to commands: `%.17g` in Redis
/// 7.0, the shortest round-tripping text from 7.2 on (and in Valkey).
const DOUBLES: &str = "
ZADD z 0.1 a 1e-7 b 1.5e-7 c 0.000001 d 1e17 e 4e18 f 5e18 g 9223372036854775808 h 5e-324 i 1e21 j 100 k 12345678.9 l -2.5 m
ZRANGE z 0 -1 WITHSCORES
DUMP z
ZSCORE z a
ZMSCORE z a b nope
ZINCRBY z 0.2 a
ZADD z INCR 0.1 b
ZSCAN z 0 COUNT 100
ZPOPMIN z 2
ZRANGEBYSCORE z 1 +inf WITHSCORES LIMIT 0 3
GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania
GEOPOS g Palermo Catania nope
GEOSEARCH g FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHCOORD WITHDIST WITHHASH
GEORADIUS g 15 37 200 km WITHCOORD ASC
EVAL \"redis.call('set', KEYS[1], ARGV[1] + 0.1) return redis.call('get', KEYS[1])\" 1 n 0
EVAL \"redis.call('set', KEYS[1], 1e17) return redis.call('get', KEYS[1])\" 1 n
EVAL \"redis.call('set', KEYS[1], 2^63) return redis.call('get', KEYS[1])\" 1 n
EVAL \"redis.call('set', KEYS[1], -0.0) return redis.call('get', KEYS[1])\" 1 n
EVAL \"redis.call('set', KEYS[1], 1/3) return redis.call('get', KEYS[1])\" 1 n
EVAL \"redis.call('set', KEYS[1], 1e-7) return redis.call('get', KEYS[1])\" 1 n
EVAL \"return redis.call('zscore', KEYS[1], 'c')\" 1 z
EVAL \"return redis.call('geopos', KEYS[1], 'Palermo')\" 1 g
INCRBYFLOAT f 0.1
HINCRBYFLOAT h f 1.5e-7
";

#[test]
fn doubles_as_each_reference() {
    for bin in ["redis-server", "redis8-server", "valkey9-server"] {
        diff_against(bin, DOUBLES);
        diff_against_resp3(bin, DOUBLES);
    }
}

/// HELLO before AUTH on a server with a password: the hint names `HELLO AUTH` in Redis 7.0
/// and `HELLO <proto> AUTH` from 7.2 on (redis-py 5+ and ioredis open with HELLO 3).
#[test]
fn hello_noauth_as_each_reference() {
    for bin in ["redis-server", "redis8-server", "valkey9-server"] {
        let Some(r) = RedisServer::start_bin(bin, &["--requirepass", "x"]) else {
            return;
        };
        let t = Tumbler::like(&r, &[("requirepass", "x")]);
        let mut a = tumbler_tests::Raw::connect(r.addr);
        let mut b = t.raw();
        for cmd in [
            &["HELLO", "3"][..],
            &["HELLO", "2", "AUTH", "default", "no"],
        ] {
            assert_eq!(a.cmd_str(cmd), b.cmd_str(cmd), "{bin} {cmd:?}");
        }
    }
}
