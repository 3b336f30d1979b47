//! Each personality against the reference server it imitates: redis-7.0 against
//! redis-server 7.0.15, redis-8.0 against redis8-server, valkey-9.1 against valkey9-server.
//! A script of the commands whose replies changed between releases runs on both, byte for
//! byte; then COMMAND COUNT/LIST/INFO are compared command by command (lockcore's command
//! table with its `Since` rows and CommandSpec::arity_in), and HELLO 3 and INFO server by
//! their field names.

use std::collections::{BTreeMap, BTreeSet};

use tumbler_tests::{diff_script, Raw, RedisServer, Tumbler};

/// Commands the references have that Tumbler leaves out on purpose: modules, replication,
/// cluster administration, and (owned elsewhere) hash field expiry and vector sets.
fn deliberately_missing(name: &str) -> bool {
    let top = name.split('|').next().unwrap_or(name).to_ascii_lowercase();
    matches!(
        top.as_str(),
        "module"
            | "bgrewriteaof"
            | "lolwut"
            | "sync"
            | "psync"
            | "replconf"
            | "failover"
            | "sentinel"
            | "restore-asking"
            | "clusterscan"
    ) || top == "cluster"
        || name.eq_ignore_ascii_case("client|import-source")
}

/// Tumbler's own commands and subcommands, in no reference.
fn tumbler_only(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("lock.")
        || n.starts_with("tumbler.")
        || n.starts_with("fence.")
        || n.starts_with("rw.")
        || n.starts_with("sem.")
        || n.starts_with("lockdep")
        || matches!(n.as_str(), "script|plan" | "script|plans")
        || n.starts_with("cluster")
}

/// A parsed RESP2 reply.
#[derive(Debug, Clone, PartialEq)]
enum V {
    Str(String),
    Int(i64),
    Nil,
    Err(String),
    Arr(Vec<V>),
}

fn parse(b: &[u8]) -> V {
    fn line(b: &[u8], at: &mut usize) -> String {
        let end = b[*at..].windows(2).position(|w| w == b"\r\n").unwrap() + *at;
        let s = String::from_utf8_lossy(&b[*at..end]).into_owned();
        *at = end + 2;
        s
    }
    fn one(b: &[u8], at: &mut usize) -> V {
        let t = b[*at];
        *at += 1;
        let l = line(b, at);
        match t {
            b'+' => V::Str(l),
            b'-' => V::Err(l),
            b':' => V::Int(l.parse().unwrap()),
            b'$' => {
                let n: i64 = l.parse().unwrap();
                if n < 0 {
                    return V::Nil;
                }
                let s = String::from_utf8_lossy(&b[*at..*at + n as usize]).into_owned();
                *at += n as usize + 2;
                V::Str(s)
            }
            b'*' => {
                let n: i64 = l.parse().unwrap();
                if n < 0 {
                    return V::Nil;
                }
                V::Arr((0..n).map(|_| one(b, at)).collect())
            }
            _ => panic!("unexpected RESP type {}", t as char),
        }
    }
    one(b, &mut 0)
}

fn names(c: &mut Raw) -> BTreeSet<String> {
    match parse(&c.cmd(&["COMMAND", "LIST"])) {
        V::Arr(v) => v
            .into_iter()
            .map(|n| match n {
                V::Str(s) => s.to_ascii_lowercase(),
                o => panic!("{o:?}"),
            })
            .collect(),
        o => panic!("{o:?}"),
    }
}

/// COMMAND INFO's entry for `name` without what Tumbler does not model yet (the key specs'
/// flags; subcommands are compared on their own): name, arity, flags, first, last, step,
/// ACL categories (flags and categories as sets) and tips.
fn info_head(c: &mut Raw, name: &str) -> Vec<String> {
    let r = parse(&c.cmd(&["COMMAND", "INFO", name]));
    let V::Arr(mut outer) = r else {
        panic!("{r:?}")
    };
    let V::Arr(e) = outer.remove(0) else {
        return vec!["nil".into()];
    };
    let sorted = |v: &V| match v {
        V::Arr(a) => {
            let mut s: Vec<String> = a.iter().map(|x| format!("{x:?}")).collect();
            s.sort();
            s.join(",")
        }
        o => format!("{o:?}"),
    };
    vec![
        format!("{:?}", e[0]),
        format!("arity {:?}", e[1]),
        format!("flags {}", sorted(&e[2])),
        format!("keys {:?} {:?} {:?}", e[3], e[4], e[5]),
        format!("acl {}", sorted(&e[6])),
        format!("tips {:?}", e[7]),
        if key_specs_differ_structurally(name) {
            "key specs not compared".into()
        } else {
            format!("key specs {:?}", e[8])
        },
    ]
}

/// Commands whose key specs Tumbler gives in another shape than the references (one spec
/// where they have a destination spec and a source spec, or SORT's and GEORADIUS' extra
/// specs): their key spec flags are not compared.
fn key_specs_differ_structurally(name: &str) -> bool {
    matches!(
        name,
        "bitop"
            | "blmove"
            | "brpoplpush"
            | "copy"
            | "georadius"
            | "georadiusbymember"
            | "geosearchstore"
            | "lmove"
            | "migrate"
            | "pfmerge"
            | "rename"
            | "renamenx"
            | "rpoplpush"
            | "sdiffstore"
            | "sinterstore"
            | "smove"
            | "sort"
            | "sort_ro"
            | "sunionstore"
            | "zrangestore"
    )
}

/// COMMAND DOCS' `since` for `name`.
fn docs_since(c: &mut Raw, name: &str) -> String {
    let r = parse(&c.cmd(&["COMMAND", "DOCS", name]));
    let V::Arr(outer) = r else { panic!("{r:?}") };
    let Some(V::Arr(fields)) = outer.get(1) else {
        return "no docs".into();
    };
    let at = fields.iter().position(|f| *f == V::Str("since".into()));
    format!("since {:?}", at.map(|i| &fields[i + 1]))
}

/// COMMAND COUNT, the command list (less the deliberate gaps) and each command's COMMAND
/// INFO head, Tumbler in `reference`'s personality against `reference`.
fn compare_commands(reference: &RedisServer) {
    let t = Tumbler::like(reference, &[]);
    let (mut a, mut b) = (t.raw(), reference.raw());
    let ours: BTreeSet<String> = names(&mut a)
        .into_iter()
        .filter(|n| !tumbler_only(n))
        .collect();
    let theirs: BTreeSet<String> = names(&mut b)
        .into_iter()
        .filter(|n| !deliberately_missing(n) && !n.starts_with("cluster"))
        .collect();
    let extra: Vec<_> = ours.difference(&theirs).collect();
    let lacking: Vec<_> = theirs.difference(&ours).collect();
    assert!(
        extra.is_empty() && lacking.is_empty(),
        "{}: tumbler has {extra:?} which the reference lacks, and lacks {lacking:?}",
        reference.personality
    );
    let mut diffs = BTreeMap::new();
    for n in &ours {
        let mut x = info_head(&mut a, n);
        let mut y = info_head(&mut b, n);
        x.push(docs_since(&mut a, n));
        y.push(docs_since(&mut b, n));
        if x != y {
            diffs.insert(n.clone(), (x, y));
        }
    }
    assert!(
        diffs.is_empty(),
        "{}: COMMAND INFO differs for {} commands:\n{}",
        reference.personality,
        diffs.len(),
        diffs
            .iter()
            .map(|(n, (x, y))| format!("{n}:\n  tumbler {x:?}\n  ref     {y:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The field names (not values) of HELLO 3's map and of INFO server.
fn hello_and_info_fields(c: &mut Raw) -> (Vec<String>, Vec<String>) {
    c.cmd(&["HELLO", "3"]);
    let hello = c.cmd_str(&["HELLO", "3"]);
    // `%7\r\n$6\r\nserver\r\n...`: every other bulk string of the top map is a key.
    let keys: Vec<String> = {
        let mut v = Vec::new();
        let mut lines = hello.split("\r\n").skip(1);
        while let (Some(_len), Some(k)) = (lines.next(), lines.next()) {
            v.push(k.to_string());
            // Skip the value (one bulk/int line pair or a nested aggregate header).
            let Some(val) = lines.next() else { break };
            if val.starts_with('$') {
                lines.next();
            } else if val.starts_with('*') {
                // `modules`: the last field; stop here.
                break;
            }
        }
        v
    };
    c.cmd(&["HELLO", "2"]);
    let info = c.cmd_str(&["INFO", "server"]);
    let fields = info
        .lines()
        .filter_map(|l| l.split_once(':').map(|(k, _)| k.to_string()))
        .filter(|k| !k.starts_with('$'))
        .collect();
    (keys, fields)
}

fn compare_hello_info(reference: &RedisServer) {
    let t = Tumbler::like(reference, &[]);
    let ours = hello_and_info_fields(&mut t.raw());
    let theirs = hello_and_info_fields(&mut reference.raw());
    let who = reference.personality;
    assert_eq!(ours.0, theirs.0, "{who}: HELLO 3 fields");
    // Tumbler has no executable path, config file, etc. of its own process to show for
    // some; every field the reference shows must be there, in its order.
    let ours_set: BTreeSet<_> = ours.1.iter().collect();
    let missing: Vec<_> = theirs.1.iter().filter(|f| !ours_set.contains(f)).collect();
    assert!(missing.is_empty(), "{who}: INFO server lacks {missing:?}");
    // INFO clients: the same fields in the same order.
    let clients = |c: &mut Raw| -> Vec<String> {
        c.cmd_str(&["INFO", "clients"])
            .lines()
            .filter_map(|l| l.split_once(':').map(|(k, _)| k.to_string()))
            .collect()
    };
    assert_eq!(
        clients(&mut t.raw()),
        clients(&mut reference.raw()),
        "{who}: INFO clients"
    );
}

fn start(bin: &str) -> Option<RedisServer> {
    RedisServer::start_bin(bin, &[])
}

/// Replies that changed between 7.0 and 7.2/7.4/8.0, which every personality must give
/// as its own release does.
const COMMON: &str = r#"
    FLUSHALL
    SET k v EX 10 EX 20
    TTL k
    SET k v KEEPTTL KEEPTTL
    SET k v PX 100 EX 100
    SET k v2 IFEQ v
    GET k
    DELIFEQ k v
    ZADD z 1 a 2 b
    ZRANK z b WITHSCORE
    ZREVRANK z a WITHSCORE
    ZRANK z b
    HSET h f v g w
    HSCAN h 0 NOVALUES
    ZSCAN z 0 NOSCORES
    XADD s 1-1 f v
    XADD s 2-1 f v
    XREAD STREAMS s +
    XREAD COUNT 1 STREAMS s 0
    CLIENT KILL MAXAGE 100000
    CLIENT NO-TOUCH on
    CLIENT NO-TOUCH off
    CLIENT SETINFO lib-name x
    CLUSTER MYSHARDID
    LPOS nolist a RANK 0
    LPOS nolist a MAXLEN -1
    MSETEX 1 m 1 EX 100
    SCRIPT SHOW 0000000000000000000000000000000000000000
    EVAL "return redis.REDIS_VERSION" 0
    EVAL "return server.call('PING')" 0
    EVAL "return server.VALKEY_VERSION" 0
    EVAL "return redis.SERVER_NAME" 0
    COMMANDLOG LEN slow
    COMMANDLOG GET 1 large-reply
    COMMANDLOG LEN nope
    CLIENT CAPA redirect
    OBJECT FREQ k
    WAITAOF 0 0 0
    EVAL "return redis.call('blpop', 'nolist', 0)" 0
    EVAL "return redis.call('wait', 0, 0)" 0
    XGROUP CREATE s g 0
    XREADGROUP GROUP g c COUNT 1 STREAMS s >
    XREADGROUP GROUP g c STREAMS s +
    XINFO GROUPS s
    XINFO STREAM s
    XAUTOCLAIM s g c2 0 0-0 COUNT 1
    XADD s NOMKSTREAM MAXLEN ~ 0 3-1 f v
    XINFO STREAM nosuch
    OBJECT ENCODING h
    OBJECT ENCODING z
    SINTERCARD 1 nosuch
    GETEX k PERSIST
    LMPOP 1 nolist LEFT
    EXPIRE k 100 NX GT
    SET k 1 GET NX
    BITCOUNT k 0 -1 BIT
    BITPOS k 1 0 -1 BIT
    ZADD z GT LT 1 a
    GEOSEARCH nokey FROMLONLAT 0 0 BYBOX 1 1 km ASC
    LPOS l a RANK -9223372036854775808
    ZRANGESTORE dst z 0 -1
    SRANDMEMBER nosuch -5
    COPY k k2
    INCRBYFLOAT k 1e400
    ACL CAT
    ACL LOG RESET
    CONFIG GET maxmemory-clients
    FUNCTION LIST
    MEMORY USAGE nosuch
    TYPE s
"#;

fn script_against(bin: &str, extra: &str) {
    let Some(r) = start(bin) else { return };
    let t = Tumbler::like(&r, &[]);
    diff_script(&mut t.raw(), &mut r.raw(), COMMON);
    diff_script(&mut t.raw(), &mut r.raw(), extra);
}

#[test]
fn redis70_replies_match_redis_server() {
    script_against("redis-server", "");
}

#[test]
fn redis80_replies_match_redis8_server() {
    script_against("redis8-server", "");
}

/// Valkey's compare-and-set and compare-and-delete in every combination.
const VALKEY: &str = r##"
    FLUSHALL
    SET k v
    SET k v2 IFEQ v
    GET k
    SET k v3 IFEQ nope
    GET k
    SET k v3 IFEQ v2 GET
    SET k v4 IFEQ nope GET
    SET missing x IFEQ v
    SET missing x IFEQ v GET
    EXISTS missing
    SET k v NX IFEQ v
    SET k v IFEQ v NX
    SET k v XX IFEQ v
    SET k v IFEQ v XX
    SET k v IFEQ a IFEQ b
    SET k v IFEQ
    SET k v IFEQ v EX
    RPUSH l a
    SET l x IFEQ a
    SET l x IFEQ a GET
    SET l x IFEQ a EX 0
    SET l x IFEQ a EX abc
    SET k v5 IFEQ v3 EX 100
    TTL k
    SET k v6 IFEQ v5 KEEPTTL
    TTL k
    SET k v7 IFEQ v6 EX 0
    SET missing2 x IFEQ a EX 0
    SET k v GET IFEQ v6
    GET k
    SET k v8 ifeq v pxat 1
    EXISTS k
    SET n 123
    SET n 5 IFEQ 123
    GET n
    DELIFEQ n 5
    EXISTS n
    SET k v
    DELIFEQ k nope
    DELIFEQ missing nope
    DELIFEQ l a
    DELIFEQ k
    DELIFEQ k v
    EXISTS k
    MSETEX 2 a 1 b 2 EX 100
    TTL a
    MSETEX 1 a 1
    TTL a
    MSETEX 1 a 1 NX
    MSETEX 1 z 1 NX PX 100000
    MSETEX 1 a 1 XX KEEPTTL
    MSETEX 0 a 1
    MSETEX 2 a 1
    MSETEX 1 a 1 b
    MSETEX x a 1
    MSETEX -1 a 1
    MSETEX 99999999999999999999 a 1
    MSETEX 1 a 1 EX 0
    MSETEX 1 a 1 EX 10 PX 10
    MSETEX 1 a 1 NX XX
    MSETEX 1 a 1 EX
    MSETEX 1 a 1 GET
    MSETEX 1 a 1 EX 10 EX 10
    MSETEX 1 a 1 NX NX
    MSETEX 2 l 1 a 2
    TYPE l
    MSETEX 2 a 1 q 2 NX
    EXISTS q
    MSETEX 2 a 1 q 2 XX
    EXISTS q
    MSETEX 2 a 1 b 2 EX abc
    MSETEX 1 a 1 EXAT 1
    EXISTS a
    MSETEX 2 a
    COMMAND GETKEYS MSETEX 2 a 1 b 2 EX 10
    COMMANDLOG GET 1
    COMMANDLOG GET x slow
    COMMANDLOG GET -2 slow
    COMMANDLOG LEN
    COMMANDLOG RESET foo
    COMMANDLOG RESET large-request
    COMMANDLOG foo
    COMMANDLOG HELP
    SCRIPT LOAD "return 1"
    SCRIPT SHOW e0e1f9fabfc9d4800c877a703b823ac0578ff8db
    SCRIPT SHOW E0E1F9FABFC9D4800C877A703B823AC0578FF8DB
    SCRIPT SHOW abc
    SCRIPT SHOW
    SCRIPT HELP
    CLIENT CAPA
    CLIENT CAPA foo bar
    EVAL "return {server.REDIS_VERSION, server.REDIS_VERSION_NUM, server.VALKEY_VERSION, server.VALKEY_VERSION_NUM, server.SERVER_NAME, tostring(server == redis)}" 0
    EVAL "return server.pcall('nosuch')" 0
    EVAL "return server.SERVER_VERSION" 0
    EVAL "return server.error_reply('x')" 0
    EVAL "return tostring(__server__err__handler == __redis__err__handler)" 0
    FUNCTION LOAD "#!lua name=l1\nserver.register_function('f1', function() return {server.VALKEY_VERSION, redis.SERVER_NAME} end)"
    FCALL f1 0
    FUNCTION LOAD "#!lua name=l2\nlocal x = server.call\nserver.register_function('f2', function() return 1 end)"
"##;

#[test]
fn valkey91_replies_match_valkey9_server() {
    script_against("valkey9-server", VALKEY);
}

#[test]
fn redis70_command_table_matches_redis_server() {
    let Some(r) = start("redis-server") else {
        return;
    };
    compare_commands(&r);
}

#[test]
fn redis80_command_table_matches_redis8_server() {
    let Some(r) = start("redis8-server") else {
        return;
    };
    compare_commands(&r);
}

#[test]
fn valkey91_command_table_matches_valkey9_server() {
    let Some(r) = start("valkey9-server") else {
        return;
    };
    compare_commands(&r);
}

#[test]
fn hello_and_info_server_fields_match_each_reference() {
    for bin in ["redis-server", "redis8-server", "valkey9-server"] {
        let Some(r) = start(bin) else { return };
        compare_hello_info(&r);
    }
}

/// The names (not values: they are times) of XINFO CONSUMERS' and XINFO STREAM FULL's
/// consumer fields, and of CLIENT INFO's fields, against each reference: Redis 7.2 added
/// `inactive` and `active-time`; CLIENT LIST gained lib-name/lib-ver (7.2), watch (7.4),
/// io-thread (8.0), Valkey's capa and tot-* counters.
#[test]
fn xinfo_and_client_info_field_names_match_each_reference() {
    fn keys_of(v: &V) -> Vec<String> {
        match v {
            V::Arr(a) => a
                .iter()
                .step_by(2)
                .map(|k| match k {
                    V::Str(s) => s.clone(),
                    o => format!("{o:?}"),
                })
                .collect(),
            o => panic!("{o:?}"),
        }
    }
    fn fields(c: &mut Raw) -> Vec<Vec<String>> {
        for cmd in [
            &["DEL", "s"][..],
            &["XADD", "s", "1-1", "f", "v"],
            &["XGROUP", "CREATE", "s", "g", "0"],
            &["XGROUP", "CREATECONSUMER", "s", "g", "idle"],
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
        ] {
            c.cmd(cmd);
        }
        let V::Arr(consumers) = parse(&c.cmd(&["XINFO", "CONSUMERS", "s", "g"])) else {
            panic!()
        };
        let mut out: Vec<Vec<String>> = consumers.iter().map(keys_of).collect();
        let full = parse(&c.cmd(&["XINFO", "STREAM", "s", "FULL"]));
        let V::Arr(f) = &full else { panic!() };
        let groups = f
            .iter()
            .position(|x| *x == V::Str("groups".into()))
            .unwrap();
        let V::Arr(gs) = &f[groups + 1] else { panic!() };
        let V::Arr(g) = &gs[0] else { panic!() };
        let cpos = g
            .iter()
            .position(|x| *x == V::Str("consumers".into()))
            .unwrap();
        let V::Arr(cs) = &g[cpos + 1] else { panic!() };
        out.extend(cs.iter().map(keys_of));
        let V::Str(info) = parse(&c.cmd(&["CLIENT", "INFO"])) else {
            panic!()
        };
        out.push(
            info.trim_end()
                .split(' ')
                .map(|kv| kv.split('=').next().unwrap().to_string())
                .collect(),
        );
        out
    }
    for bin in ["redis-server", "redis8-server", "valkey9-server"] {
        let Some(r) = start(bin) else { return };
        let t = Tumbler::like(&r, &[]);
        assert_eq!(
            fields(&mut t.raw()),
            fields(&mut r.raw()),
            "{}",
            r.personality
        );
    }
}

/// Valkey 9's numbered databases in cluster mode (replies as valkey9-server gives them
/// with `cluster-databases` 1 and 16); Redis refuses any database but 0.
#[test]
fn cluster_mode_select_follows_the_personality() {
    let base = [("nodes", "1"), ("cluster-enabled", "yes")];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut d = base.to_vec();
        d.extend_from_slice(extra);
        Tumbler::start_with(&d)
    };
    let redis = with(&[("personality", "redis-8.0")]);
    let mut c = redis.raw();
    assert_eq!(
        c.cmd_str(&["SELECT", "1"]),
        "-ERR SELECT is not allowed in cluster mode\r\n"
    );
    assert_eq!(c.cmd_str(&["SELECT", "0"]), "+OK\r\n");

    let one = with(&[("personality", "valkey-9.1")]);
    let mut c = one.raw();
    assert_eq!(
        c.cmd_str(&["SELECT", "1"]),
        "-ERR DB index is out of range\r\n"
    );
    assert_eq!(c.cmd_str(&["SELECT", "0"]), "+OK\r\n");

    let many = with(&[("personality", "valkey-9.1"), ("cluster-databases", "16")]);
    let mut c = many.raw();
    assert_eq!(c.cmd_str(&["SELECT", "1"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["SET", "a", "1"]), "+OK\r\n");
    assert_eq!(
        c.cmd_str(&["CLUSTER", "COUNTKEYSINSLOT", "15495"]),
        ":1\r\n"
    );
    assert_eq!(
        c.cmd_str(&["CLUSTER", "GETKEYSINSLOT", "15495", "10"]),
        "*1\r\n$1\r\na\r\n"
    );
    assert_eq!(c.cmd_str(&["SELECT", "0"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["GET", "a"]), "$-1\r\n");
    assert_eq!(
        c.cmd_str(&["CLUSTER", "COUNTKEYSINSLOT", "15495"]),
        ":0\r\n"
    );
    assert_eq!(
        c.cmd_str(&["SELECT", "16"]),
        "-ERR DB index is out of range\r\n"
    );
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "cluster-databases", "4"]),
        "-ERR CONFIG SET failed (possibly related to argument 'cluster-databases') - can't set immutable config\r\n"
    );
    // The shard's ID: 40 hex digits, the same on every call.
    let id = c.cmd_str(&["CLUSTER", "MYSHARDID"]);
    assert!(id.starts_with("$40\r\n"), "{id}");
    assert_eq!(c.cmd_str(&["CLUSTER", "MYSHARDID"]), id);
}
