//! Differential tests for Redis Functions against a real redis-server: FUNCTION LOAD and its
//! metadata and registration errors, the restricted load environment, FCALL/FCALL_RO and
//! function flags, FUNCTION LIST/STATS/DELETE/FLUSH/RESTORE and their argument errors, in
//! RESP2 and RESP3. DUMP payloads are exchanged between the two servers both ways.

use tumbler_tests::bulk_payload as bulk;
use tumbler_tests::diff_against_redis as run;
use tumbler_tests::diff_against_redis_resp3 as run_resp3;
use tumbler_tests::{RedisServer, Tumbler};

const LOAD_ERRORS: &str = r##"
    FUNCTION LOAD "#!lua name=lib1\nredis.register_function('f1', function(keys, args) return 'hello' end)"
    FUNCTION LOAD "#!lua name=lib1\nredis.register_function('f1', function(keys, args) return 'hello' end)"
    FUNCTION LOAD "#!LUA name=lib2\nredis.register_function('F2', function(keys, args) return 2 end)"
    FUNCTION LOAD foo "#!lua name=lib1\nredis.register_function('f1', function() return 1 end)"
    FUNCTION LOAD "return 1"
    FUNCTION LOAD "#!lua name=x"
    FUNCTION LOAD "#!bad_engine name=x\nreturn 1"
    FUNCTION LOAD "#! name=x\nreturn 1"
    FUNCTION LOAD "#!lua name=x foo=bar\nreturn 1"
    FUNCTION LOAD "#!lua name=x name=y\nreturn 1"
    FUNCTION LOAD "#!lua\nreturn 1"
    FUNCTION LOAD "#!lua name=a-b\nreturn 1"
    FUNCTION LOAD "#!lua name=x\nbad script"
    FUNCTION LOAD "#!lua name=x\nreturn 1"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function()"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function('f')"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function('f', function() end, {}, 'd', 'e')"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function(nil, function() end)"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function('f', 'not a function')"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function('a b', function() end)"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function('', function() end)"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function{function_name='f', callback='bad'}"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function{function_name='f', callback=function() end, description=1}"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function{function_name='f', callback=function() end, other=1}"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function{callback=function() end}"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function{function_name='f'}"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function{function_name='f', callback=function() end, flags='no-writes'}"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function{function_name='f', callback=function() end, flags={'unknown'}}"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function{function_name='f', callback=function() end, flags={1}}"
    FUNCTION LOAD REPLACE "#!lua name=x\nreturn math.random()"
    FUNCTION LOAD REPLACE "#!lua name=x\nreturn redis.call('ping')"
    FUNCTION LOAD REPLACE "#!lua name=x\nreturn redis.setresp(3)"
    FUNCTION LOAD REPLACE "#!lua name=x\nreturn redis.math.random()"
    FUNCTION LOAD REPLACE "#!lua name=x\na = 1"
    FUNCTION LOAD REPLACE "#!lua name=x\nerror('boom')"
    FUNCTION LOAD REPLACE "#!lua name=x\nlocal mt = getmetatable(_G)"
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function('f1', function() return 1 end)"
    FUNCTION LOAD REPLACE "#!lua name=lib1\nredis.register_function('f1', 'bad')"
    FCALL f1 0
    FUNCTION LOAD REPLACE "#!lua name=\"q\"\nredis.register_function('q', function() return redis.REDIS_VERSION_NUM > 0 end)"
    FCALL q 0
    FUNCTION LOAD REPLACE "#!lua name=x\nredis.register_function('fx', function() return redis.register_function end)"
    FCALL fx 0
    FUNCTION STATS
    FUNCTION DELETE lib2
    FUNCTION DELETE lib2
    FUNCTION DELETE LIB1
    FUNCTION STATS
    FUNCTION FLUSH
    FUNCTION STATS
"##;

#[test]
fn load_metadata_and_registration_errors() {
    run(LOAD_ERRORS);
}

const FCALL: &str = r##"
    FUNCTION LOAD "#!lua name=lib\nredis.register_function('w', function(keys, args) return redis.call('set', keys[1], args[1]) end)\nredis.register_function{function_name='r', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}\nredis.register_function{function_name='rw', callback=function(keys) return redis.call('set', keys[1], 'v') end, flags={'no-writes'}}\nredis.register_function('e', function() return redis.error_reply('MY err') end)\nredis.register_function('boom', function() return redis.call('nosuch') end)"
    FCALL w 1 k v1
    GET k
    FCALL W 1 k v2
    FCALL r 1 k
    FCALL_RO r 1 k
    FCALL_RO w 1 k v
    FCALL rw 1 k
    FCALL_RO rw 1 k
    FCALL e 0
    FCALL boom 0
    FCALL nosuch 0
    FCALL w x
    FCALL w 3 a b
    FCALL w -1 a
    FCALL r 0
    FCALL
    FCALL_RO
    COMMAND GETKEYS FCALL w 1 k v
    COMMAND GETKEYS FCALL_RO r 2 a b c
    FLUSHALL
    FLUSHDB
    FCALL r 1 k
    SCRIPT FLUSH
    FCALL w 1 k v3
    FCALL r 1 k
    # Redis lists a library's functions in its dict's (seeded hash) order: one per library.
    FUNCTION LOAD REPLACE "#!lua name=lib\nredis.register_function{function_name='r', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}"
    FUNCTION LIST
    FUNCTION LIST LIBRARYNAME l*
    FUNCTION LIST LIBRARYNAME nomatch*
    FUNCTION LIST WITHCODE LIBRARYNAME lib
    FUNCTION LIST LIBRARYNAME
    FUNCTION LIST bad_argument
    FUNCTION LIST WITHCODE WITHCODE
    FUNCTION LIST WITHCODE LIBRARYNAME a LIBRARYNAME b
    FUNCTION LIST "X\r\n+INJECTED"
    FUNCTION LOAD REPLACE "#!lua name=lib\nredis.register_function{function_name='f', callback=function() return 1 end, description='some desc', flags={'no-writes', 'allow-oom', 'allow-stale', 'no-cluster', 'allow-cross-slot-keys'}}"
    FUNCTION LIST
    FUNCTION LOAD REPLACE "#!lua name=lib\nredis.register_function{function_name='f', callback=function() return redis.setresp(3) end}"
    FCALL f 0
    FUNCTION LOAD REPLACE "#!lua name=lib\nredis.register_function{function_name='f', callback=function() lib = 1 end}"
    FCALL f 0
    FUNCTION RESTORE bad_payload
    FUNCTION RESTORE a b c
    FUNCTION RESTORE a b
    FUNCTION RESTORE
    FUNCTION DUMP extra
    FUNCTION FLUSH bad_arg
    FUNCTION FLUSH sync extra
    FUNCTION FLUSH ASYNC
    FUNCTION LIST
    FUNCTION KILL
    FUNCTION bad_subcommand
    FUNCTION HELP
"##;

#[test]
fn fcall_flags_list_and_argument_errors() {
    run(FCALL);
}

#[test]
fn list_and_stats_in_resp3() {
    run_resp3(
        r##"
        FUNCTION LOAD "#!lua name=lib\nredis.register_function{function_name='f', callback=function() return 1 end, flags={'no-writes', 'allow-stale'}, description='d'}"
        FUNCTION LIST LIBRARYNAME lib WITHCODE
        FUNCTION STATS
        FCALL f 0
    "##,
    );
}

/// Redis' DUMP payload (with LZF-compressed code) restores here, ours restores there, and
/// RESTORE's policies (APPEND, REPLACE, FLUSH) and collisions behave the same on both.
#[test]
fn dump_and_restore_across_servers() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let (mut a, mut b) = (t.raw(), redis.raw());
    let lib1 = "#!lua name=lib1\nlocal function add1(x) return x + 1 end\nredis.register_function{function_name='f1', callback=function() return add1(1) .. ' and a body long enough for redis to compress it with lzf' end, flags={'no-writes'}, description='one'}";
    b.cmd(&["FUNCTION", "LOAD", lib1]);
    let from_redis = bulk(&b.cmd(&["FUNCTION", "DUMP"]));
    a.cmd(&["FUNCTION", "LOAD", lib1]);
    let from_tumbler = bulk(&a.cmd(&["FUNCTION", "DUMP"]));

    let lib2 = "#!lua name=lib2\nredis.register_function('f1', function() return 3 end)";
    let lib1b = "#!lua name=lib1\nredis.register_function('f9', function() return 9 end)";
    for payload in [&from_redis, &from_tumbler] {
        let p: &[u8] = payload;
        let script: Vec<Vec<&[u8]>> = vec![
            vec![b"FUNCTION", b"FLUSH"],
            vec![b"FUNCTION", b"RESTORE", p],
            vec![b"FUNCTION", b"LIST", b"WITHCODE"],
            vec![b"FCALL", b"f1", b"0"],
            vec![b"FCALL_RO", b"f1", b"0"],
            vec![b"FUNCTION", b"RESTORE", p],
            vec![b"FUNCTION", b"RESTORE", p, b"APPEND"],
            vec![b"FUNCTION", b"RESTORE", p, b"REPLACE"],
            vec![b"FUNCTION", b"RESTORE", p, b"BAD"],
            vec![b"FUNCTION", b"FLUSH"],
            vec![b"FUNCTION", b"LOAD", lib2.as_bytes()],
            vec![b"FUNCTION", b"RESTORE", p],
            vec![b"FUNCTION", b"RESTORE", p, b"REPLACE"],
            vec![b"FCALL", b"f1", b"0"],
            vec![b"FUNCTION", b"DELETE", b"lib2"],
            vec![b"FUNCTION", b"LOAD", lib1b.as_bytes()],
            vec![b"FUNCTION", b"RESTORE", p, b"REPLACE"],
            vec![b"FCALL", b"f9", b"0"],
            vec![b"FCALL", b"f1", b"0"],
            vec![b"FUNCTION", b"LOAD", lib2.as_bytes()],
            vec![b"FUNCTION", b"RESTORE", p, b"FLUSH"],
            vec![b"FUNCTION", b"LIST"],
            vec![b"FUNCTION", b"STATS"],
        ];
        for (i, cmd) in script.iter().enumerate() {
            let (x, y) = (a.cmd(cmd), b.cmd(cmd));
            assert_eq!(
                String::from_utf8_lossy(&x),
                String::from_utf8_lossy(&y),
                "step {i}: tumbler (left) and redis-server (right) disagree"
            );
        }
        // A payload with a flipped byte fails its checksum and changes nothing.
        let mut bad = p.to_vec();
        bad[3] ^= 1;
        let cmd: Vec<&[u8]> = vec![b"FUNCTION", b"RESTORE", &bad, b"FLUSH"];
        assert_eq!(
            String::from_utf8_lossy(&a.cmd(&cmd)),
            String::from_utf8_lossy(&b.cmd(&cmd))
        );
        assert_eq!(a.cmd(&["FCALL", "f1", "0"]), b.cmd(&["FCALL", "f1", "0"]));
    }
}

/// FUNCTION STATS names the running function; SCRIPT KILL refuses it, FUNCTION KILL stops
/// it, and FUNCTION KILL refuses an EVAL script (SCRIPT KILL stops that).
#[test]
fn kill_and_stats_while_a_function_runs() {
    let t = Tumbler::start_with(&[("busy-reply-threshold", "10")]);
    let mut a = t.raw();
    a.cmd(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=busy\nredis.register_function('spin', function() local a = 1 while true do a = a + 1 end end)",
    ]);
    let mut runner = t.raw();
    runner.send(&["FCALL", "spin", "0"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let r = a.cmd_str(&["PING"]);
        if r.starts_with("-BUSY") {
            assert_eq!(r, "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never busy: {r}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let stats = a.cmd_str(&["FUNCTION", "STATS"]);
    assert!(
        stats.contains("$4\r\nname\r\n$4\r\nspin\r\n$7\r\ncommand\r\n*3\r\n$5\r\nFCALL\r\n$4\r\nspin\r\n$1\r\n0\r\n$11\r\nduration_ms\r\n:"),
        "{stats}"
    );
    assert_eq!(
        a.cmd_str(&["SCRIPT", "KILL"]),
        "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n"
    );
    assert_eq!(a.cmd_str(&["FUNCTION", "KILL"]), "+OK\r\n");
    let r = runner.read_reply();
    assert!(
        String::from_utf8_lossy(&r).starts_with("-ERR Script killed by user"),
        "{}",
        String::from_utf8_lossy(&r)
    );
    assert_eq!(a.cmd_str(&["PING"]), "+PONG\r\n");
    let stats = a.cmd_str(&["FUNCTION", "STATS"]);
    assert!(
        stats.starts_with("*4\r\n$14\r\nrunning_script\r\n") && !stats.contains("spin"),
        "{stats}"
    );

    runner.send(&["EVAL", "local a = 1 while true do a = a + 1 end", "0"]);
    loop {
        if a.cmd_str(&["PING"]).starts_with("-BUSY") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "eval never busy");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(
        a.cmd_str(&["FUNCTION", "KILL"]),
        "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
    );
    assert_eq!(a.cmd_str(&["SCRIPT", "KILL"]), "+OK\r\n");
    runner.read_reply();
    assert_eq!(a.cmd_str(&["PING"]), "+PONG\r\n");
}

/// A library whose load-time code never ends fails with Redis' timeout error and the
/// server keeps serving.
#[test]
fn load_timeout() {
    run(r##"
        FUNCTION LOAD "#!lua name=lib\nlocal a = 1 while 1 do a = a + 1 end"
        FUNCTION LIST
        PING
    "##);
}
