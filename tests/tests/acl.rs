//! ACL users: the ACL commands, NOPERM/WRONGPASS replies and the ACL log, differentially
//! against redis-server where Redis has the same behaviour, plus what only a live server
//! shows (disconnecting the clients of a deleted user, revoked subscribers, ACL files).

use std::time::{Duration, Instant};

use tumbler_tests::{diff_against_redis, diff_script, Raw, RedisServer, Tumbler};

#[test]
fn acl_user_management_matches_redis() {
    diff_against_redis(
        r#"
        ACL WHOAMI
        ACL USERS
        ACL LIST
        ACL GETUSER default
        ACL SETUSER newuser
        ACL LIST
        ACL GETUSER newuser
        ACL SETUSER newuser on >passwd1 >passwd2 ~obj:* %R~read:* %W~write:* ~obj:* &chan:* +@string -@dangerous -get
        ACL GETUSER newuser
        ACL LIST
        ACL SETUSER newuser <passwd1 #34344e4d60c2b6d639b7bd22e18f2b0b91bc34bf0ac5f9952744435093cfb4e6
        ACL GETUSER newuser
        ACL SETUSER newuser !34344e4d60c2b6d639b7bd22e18f2b0b91bc34bf0ac5f9952744435093cfb4e6 nopass
        ACL GETUSER newuser
        ACL SETUSER newuser resetpass resetkeys resetchannels allkeys allchannels
        ACL LIST
        ACL SETUSER sel on nopass (+get ~k*) "(+set %W~w* &c)" ( ~x +@read )
        ACL GETUSER sel
        ACL LIST
        ACL SETUSER sel clearselectors reset
        ACL GETUSER sel
        ACL SETUSER cmds +@all -client|kill -client
        ACL GETUSER cmds
        ACL SETUSER cmds -@all +select|0 +select|1
        ACL GETUSER cmds
        ACL SETUSER cmds +@all -@all +get -get +set
        ACL GETUSER cmds
        ACL SETUSER cmds reset +@all -@string +incr
        ACL GETUSER cmds
        ACL SETUSER cmds reset -@all +@hash +@list -lpush
        ACL GETUSER cmds
        ACL SETUSER cmds reset +@all -@write -@admin +client|id
        ACL GETUSER cmds
        ACL SETUSER cmds reset +@all -@hyperloglog -@geo
        ACL GETUSER cmds
        ACL SETUSER cmds reset -@all +@geo +@keyspace -del
        ACL GETUSER cmds
        ACL USERS
        ACL DELUSER cmds nosuchuser sel
        ACL USERS
        ACL CAT
        ACL CAT nosuch
        ACL CAT a b
        ACL GENPASS 0
        ACL GENPASS 4097
        ACL GENPASS x
        ACL DELUSER default
        ACL LOAD
        ACL SAVE
        ACL HELP
        ACL HELP x
        ACL NOSUCH
        ACL
        "#,
    );
}

#[test]
fn acl_setuser_errors_match_redis() {
    diff_against_redis(
        r#"
        ACL SETUSER "a a"
        ACL SETUSER z bogus
        ACL SETUSER z #abc
        ACL SETUSER z #34344E4D60C2B6D639B7BD22E18F2B0B91BC34BF0AC5F9952744435093CFB4E6
        ACL SETUSER z <nope
        ACL SETUSER z ~* ~x
        ACL SETUSER z &* &x
        ACL SETUSER z +nocmd
        ACL SETUSER z -nocmd
        ACL SETUSER z +@nocat
        ACL SETUSER z +config|get|x
        ACL SETUSER z +config|asdf
        ACL SETUSER z +get|key1|key2
        ACL SETUSER z -select|0
        ACL SETUSER z +debug|
        ACL SETUSER z (
        ACL SETUSER z (foo)
        ACL SETUSER z " () "
        ACL SETUSER z )
        ACL SETUSER z ( ~a +get
        ACL SETUSER z %X~a
        ACL SETUSER z %~
        ACL SETUSER z %
        ACL GETUSER z
        ACL SETUSER z on nopass %RW +@all
        ACL GETUSER z
        "#,
    );
}

#[test]
fn noperm_wrongpass_and_dryrun_match_redis() {
    diff_against_redis(
        r#"
        AUTH nosuchuser pass
        AUTH onlyone
        AUTH a b c
        ACL SETUSER alice on >alicepw ~obj:* %R~ro:* &news:* +@all -flushall -client|kill -debug +debug|object
        ACL SETUSER bob on nopass -@all +get +set ~* (+publish &b:*)
        ACL DRYRUN alice get obj:1
        ACL DRYRUN alice get other
        ACL DRYRUN alice set ro:1 v
        ACL DRYRUN alice flushall
        ACL DRYRUN alice publish news:1 m
        ACL DRYRUN alice publish other m
        ACL DRYRUN alice subscribe news:1 other
        ACL DRYRUN alice psubscribe news:*
        ACL DRYRUN alice psubscribe news:1*
        ACL DRYRUN bob publish b:1 m
        ACL DRYRUN bob publish c:1 m
        ACL DRYRUN bob get a b
        ACL DRYRUN nosuch get a
        ACL DRYRUN alice nosuchcmd a
        AUTH alice wrong
        AUTH alice alicepw
        ACL WHOAMI
        SET obj:1 v
        GET obj:1
        SET other v
        GET ro:1
        SET ro:1 v
        FLUSHALL
        CLIENT KILL ID 123456
        CLIENT GETNAME
        PUBLISH news:a m
        PUBLISH other m
        SUBSCRIBE other
        PSUBSCRIBE news:* other*
        PSUBSCRIBE news:*
        PUNSUBSCRIBE
        MULTI
        GET other
        SET obj:2 v
        EXEC
        MULTI
        SET obj:2 v
        EXEC
        EVAL "return redis.call('get', 'other')" 0
        EVAL "return redis.call('flushall')" 0
        EVAL "return redis.pcall('get', 'other')" 0
        EVAL "return redis.call('publish', 'other', 'x')" 0
        EVAL "return redis.call('get', 'obj:1')" 0
        EVAL "return 1" 1 other
        EVAL "return {redis.acl_check_cmd('get', 'obj:1'), redis.acl_check_cmd('get', 'other'), redis.acl_check_cmd('flushall'), redis.acl_check_cmd('client', 'kill'), redis.acl_check_cmd('client', 'id')}" 0
        EVAL "return redis.acl_check_cmd('nosuch')" 0
        EVAL "return redis.acl_check_cmd('client', 'nosuch')" 0
        AUTH bob x
        ACL WHOAMI
        GET anything
        PUBLISH b:1 m
        PUBLISH c:1 m
        PING
        HELLO 2 AUTH alice wrong
        HELLO 2 AUTH nosuch alicepw
        ACL WHOAMI
        AUTH alice alicepw
        ACL WHOAMI
        AUTH default x
        ACL SETUSER default off
        AUTH default x
        "#,
    );
}

/// Replaces the values of `age-seconds` and `client-info` (which differ between any two
/// servers) in a raw ACL LOG reply, keeping everything else for a byte comparison.
fn mask_log(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let lines: Vec<&str> = text.split("\r\n").collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        out.push(lines[i].to_string());
        if lines[i] == "age-seconds" || lines[i] == "client-info" {
            out.push("<masked>".into());
            i += 3;
            continue;
        }
        i += 1;
    }
    out.join("|")
}

#[test]
fn acl_log_matches_redis() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let (mut a, mut b) = (t.raw(), redis.raw());
    let setup = r#"
        ACL SETUSER antirez on >foo ~object:1234 resetchannels +set +eval +multi +exec +publish +acl|log
        AUTH antirez foo
        GET foo
        GET foo
        SET other 1
        PUBLISH chan x
        MULTI
        INCR foo
        EXEC
        EVAL "redis.call('incr','object:1234')" 0
        AUTH antirez wrong
        AUTH nosuchuser x
        AUTH default ""
        SCRIPT HELP
    "#;
    diff_script(&mut a, &mut b, setup);
    for args in [
        &["ACL", "LOG"][..],
        &["ACL", "LOG", "2"],
        &["ACL", "LOG", "-1"],
        &["ACL", "LOG", "x"],
    ] {
        assert_eq!(mask_log(&a.cmd(args)), mask_log(&b.cmd(args)), "{args:?}");
    }
    diff_script(
        &mut a,
        &mut b,
        "CONFIG SET acllog-max-len 2\nAUTH antirez foo\nGET a\nGET b\nSET c 1\nAUTH default x",
    );
    assert_eq!(
        mask_log(&a.cmd(&["ACL", "LOG"])),
        mask_log(&b.cmd(&["ACL", "LOG"]))
    );
    diff_script(&mut a, &mut b, "ACL LOG RESET\nACL LOG");
}

#[test]
fn command_info_categories_match_redis_for_every_shared_command() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let ours = categories_by_command(&t.url());
    let theirs = categories_by_command(&format!("redis://{}", redis.addr));
    let mut checked = 0;
    for (name, cats) in &ours {
        // Tumbler's own commands, and ones newer than Redis 7.0, have no reference.
        let Some(want) = theirs.get(name) else {
            continue;
        };
        assert_eq!(cats, want, "ACL categories of {name}");
        checked += 1;
    }
    assert!(checked > 200, "only {checked} commands compared");
}

/// Every command and subcommand of `COMMAND` with its ACL categories, in reply order.
fn categories_by_command(url: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    use redis::Value;
    fn text(v: &Value) -> String {
        match v {
            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            Value::SimpleString(s) => s.clone(),
            other => format!("{other:?}"),
        }
    }
    fn items(v: &Value) -> Vec<Value> {
        match v {
            Value::Array(a) | Value::Set(a) => a.clone(),
            _ => vec![],
        }
    }
    fn walk(v: &Value, out: &mut std::collections::BTreeMap<String, Vec<String>>) {
        let e = items(v);
        out.insert(text(&e[0]), items(&e[6]).iter().map(text).collect());
        for sub in items(&e[9]) {
            walk(&sub, out);
        }
    }
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
    let all: Value = redis::cmd("COMMAND").query(&mut con).unwrap();
    let mut out = std::collections::BTreeMap::new();
    for c in items(&all) {
        walk(&c, &mut out);
    }
    out
}

fn wait_closed(c: &mut Raw) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if c.is_closed() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn deleting_a_user_disconnects_its_clients() {
    let t = Tumbler::start();
    let mut admin = t.raw();
    assert_eq!(
        admin.cmd_str(&["ACL", "SETUSER", "u", "on", ">p", "+@all", "~*"]),
        "+OK\r\n"
    );
    let mut other = t.raw();
    assert_eq!(other.cmd_str(&["AUTH", "u", "p"]), "+OK\r\n");
    let mut me = t.raw();
    assert_eq!(me.cmd_str(&["AUTH", "u", "p"]), "+OK\r\n");
    assert_eq!(me.cmd_str(&["CLIENT", "SETNAME", "deathrow"]), "+OK\r\n");
    // The deleting client gets its reply, then is closed too.
    assert_eq!(me.cmd_str(&["ACL", "DELUSER", "u"]), ":1\r\n");
    assert!(wait_closed(&mut me));
    assert!(wait_closed(&mut other));
    assert!(!admin.cmd_str(&["CLIENT", "LIST"]).contains("deathrow"));
    assert_eq!(admin.cmd_str(&["PING"]), "+PONG\r\n");
}

#[test]
fn subscribers_are_killed_when_their_channels_are_revoked() {
    let t = Tumbler::start();
    let mut admin = t.raw();
    admin.cmd(&[
        "ACL",
        "SETUSER",
        "ps",
        "on",
        ">p",
        "+@all",
        "resetchannels",
        "&foo:1",
        "&bar:*",
    ]);
    let mut kept = t.raw();
    kept.cmd(&["AUTH", "ps", "p"]);
    kept.cmd(&["SUBSCRIBE", "foo:1"]);
    let mut doomed = t.raw();
    doomed.cmd(&["AUTH", "ps", "p"]);
    doomed.cmd(&["PSUBSCRIBE", "bar:*"]);
    // Literal permissions kept: nobody is killed.
    admin.cmd(&[
        "ACL",
        "SETUSER",
        "ps",
        "resetchannels",
        "&foo:1",
        "&bar:*",
        "&baz",
    ]);
    // The pattern is no longer listed literally: its subscriber goes, the other stays.
    admin.cmd(&["ACL", "SETUSER", "ps", "resetchannels", "&foo:*"]);
    assert!(wait_closed(&mut doomed));
    assert_eq!(admin.cmd_str(&["PUBLISH", "foo:1", "m"]), ":1\r\n");
    let msg = kept.read_reply();
    assert!(String::from_utf8_lossy(&msg).contains("foo:1"));
}

#[test]
fn acl_file_load_and_save() {
    let dir = std::env::temp_dir().join(format!("tumbler-acl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("users.acl");
    std::fs::write(
        &file,
        "user alice on allcommands allkeys &* >alice\n# comment\nuser bob on -@all +@set +acl ~set* &* >bob\n",
    )
    .unwrap();
    let t = Tumbler::start_with(&[("dir", dir.to_str().unwrap()), ("aclfile", "users.acl")]);
    let mut c = t.raw();
    let list = c.cmd_str(&["ACL", "LIST"]);
    for line in [
        "user alice on #2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90 ~* &* +@all",
        "user bob on #81b637d8fcd2c6da6359e6963113a1170de795e4b725b84d1e0b4cfd9ec58ce9 ~set* &* -@all +@set +acl",
        "user default on nopass ~* &* +@all",
    ] {
        assert!(list.contains(line), "{list}");
    }
    let mut bob = t.raw();
    assert_eq!(bob.cmd_str(&["AUTH", "bob", "bob"]), "+OK\r\n");
    assert_eq!(bob.cmd_str(&["SADD", "set", "1"]), ":1\r\n");
    assert!(bob.cmd_str(&["SET", "k", "v"]).starts_with("-NOPERM"));
    c.cmd(&["ACL", "SETUSER", "eve", "on", ">eve", "+get", "allkeys"]);
    assert_eq!(c.cmd_str(&["ACL", "SAVE"]), "+OK\r\n");
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.contains("user eve on #"), "{saved}");
    // LOAD replaces the users and drops the clients of non-default users.
    assert_eq!(c.cmd_str(&["ACL", "LOAD"]), "+OK\r\n");
    assert!(wait_closed(&mut bob));
    let mut eve = t.raw();
    assert_eq!(eve.cmd_str(&["AUTH", "eve", "eve"]), "+OK\r\n");
    // A duplicate user makes LOAD fail and keeps the current users.
    std::fs::write(&file, format!("{saved}user alice on nopass ~* -@all\n")).unwrap();
    let e = c.cmd_str(&["ACL", "LOAD"]);
    assert!(e.contains("Duplicate user 'alice' found"), "{e}");
    assert!(c.cmd_str(&["ACL", "USERS"]).contains("eve"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn user_lines_and_requirepass_from_config() {
    let t = Tumbler::start_with(&[
        ("requirepass", "secret"),
        ("user", "worker on >wpass ~jobs:* +@all -@dangerous"),
    ]);
    let mut c = t.raw();
    assert_eq!(c.cmd_str(&["PING"]), "-NOAUTH Authentication required.\r\n");
    assert_eq!(c.cmd_str(&["AUTH", "secret"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["AUTH", "worker", "wpass"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["SET", "jobs:1", "x"]), "+OK\r\n");
    assert_eq!(
        c.cmd_str(&["SET", "other", "x"]),
        "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
    );
    // CONFIG SET requirepass changes the default user's password, as in Redis.
    assert_eq!(c.cmd_str(&["AUTH", "default", "secret"]), "+OK\r\n");
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "requirepass", "other"]),
        "+OK\r\n"
    );
    assert_eq!(
        c.cmd_str(&["AUTH", "default", "secret"]),
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(c.cmd_str(&["AUTH", "other"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["CONFIG", "SET", "requirepass", ""]), "+OK\r\n");
    let mut fresh = t.raw();
    assert_eq!(fresh.cmd_str(&["PING"]), "+PONG\r\n");
}

#[test]
fn an_unauthenticated_client_that_does_not_read_is_disconnected() {
    use std::io::Write;
    let t = Tumbler::start_with(&[("requirepass", "foobar")]);
    let mut s = std::net::TcpStream::connect(t.addr).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
    s.set_nodelay(true).unwrap();
    let cmd = b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\n5\r\n";
    // Replies (NOAUTH errors, 34 bytes each) are never read. As in Redis, the server
    // closes the client once its replies overflow 16 KiB + 1024 bytes, instead of
    // buffering them. Waiting for the socket to stall is not enough: the kernel's buffers
    // can hold more than the replies to a million commands (36 MiB with tcp_rmem's
    // maximum at 32 MiB), which is what Redis' own test sends, one command per write as
    // here. Closed by the stall alone, a client here sent about 280,000.
    let mut sent = 0;
    while sent < 1_000_000 && s.write_all(cmd).is_ok() {
        sent += 1;
    }
    assert!(
        sent < 100_000,
        "server kept an unauthenticated client that never reads for {sent} commands"
    );
}
