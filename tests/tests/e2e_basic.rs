//! End-to-end basics over TCP: raw RESP bytes and the `redis` crate.

use tumbler_tests::{Raw, Tumbler};

#[test]
fn ping_set_get_over_raw_resp() {
    let t = Tumbler::start();
    let mut c = t.raw();
    assert_eq!(c.cmd_str(&["PING"]), "+PONG\r\n");
    assert_eq!(c.cmd_str(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["GET", "k"]), "$1\r\nv\r\n");
    assert_eq!(c.cmd_str(&["GET", "missing"]), "$-1\r\n");
    assert_eq!(
        c.cmd_str(&["nosuch", "a"]),
        "-ERR unknown command 'nosuch', with args beginning with: 'a' \r\n"
    );
    assert_eq!(
        c.cmd_str(&["GET"]),
        "-ERR wrong number of arguments for 'get' command\r\n"
    );
}

#[test]
fn inline_and_pipelined_commands() {
    let t = Tumbler::start();
    let mut c = t.raw();
    c.send_bytes(b"PING\r\nSET a 1\r\nINCR a\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\n");
    assert_eq!(&c.read_reply()[..], b"+PONG\r\n");
    assert_eq!(&c.read_reply()[..], b"+OK\r\n");
    assert_eq!(&c.read_reply()[..], b":2\r\n");
    assert_eq!(&c.read_reply()[..], b"$1\r\n2\r\n");
}

#[test]
fn protocol_error_closes_only_that_client() {
    let t = Tumbler::start();
    let mut good = t.raw();
    let mut bad = t.raw();
    bad.send_bytes(b"*1\r\n+oops\r\n");
    assert_eq!(
        &bad.read_reply()[..],
        b"-ERR Protocol error: expected '$', got '+'\r\n"
    );
    assert!(bad.is_closed());
    assert_eq!(good.cmd_str(&["PING"]), "+PONG\r\n");
}

#[test]
fn resp3_hello_and_maps() {
    let t = Tumbler::start();
    let mut c = t.raw();
    let hello = c.cmd_str(&["HELLO", "3"]);
    assert!(
        hello.starts_with("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"),
        "{hello}"
    );
    c.cmd(&["HSET", "h", "f", "v"]);
    assert_eq!(c.cmd_str(&["HGETALL", "h"]), "%1\r\n$1\r\nf\r\n$1\r\nv\r\n");
    assert_eq!(c.cmd_str(&["GET", "nope"]), "_\r\n");
}

#[test]
fn auth_is_required_when_configured() {
    let t = Tumbler::start_with(&[("requirepass", "s3cret")]);
    let mut c = t.raw();
    assert_eq!(
        c.cmd_str(&["GET", "k"]),
        "-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(
        c.cmd_str(&["AUTH", "wrong"]),
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(c.cmd_str(&["AUTH", "s3cret"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["GET", "k"]), "$-1\r\n");
}

#[test]
fn redis_crate_client_works() {
    let t = Tumbler::start();
    let client = redis::Client::open(t.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    let _: () = redis::cmd("SET")
        .arg("lock")
        .arg("me")
        .arg("NX")
        .arg("PX")
        .arg(30000)
        .query(&mut con)
        .unwrap();
    let v: String = redis::cmd("GET").arg("lock").query(&mut con).unwrap();
    assert_eq!(v, "me");
    let ttl: i64 = redis::cmd("PTTL").arg("lock").query(&mut con).unwrap();
    assert!(ttl > 29000 && ttl <= 30000, "{ttl}");
    let again: Option<String> = redis::cmd("SET")
        .arg("lock")
        .arg("you")
        .arg("NX")
        .arg("PX")
        .arg(30000)
        .query(&mut con)
        .unwrap();
    assert_eq!(again, None);
}

#[test]
fn hostile_bytes_never_disturb_other_clients() {
    use rand::{Rng, SeedableRng};
    let t = Tumbler::start();
    let mut good = t.raw();
    good.cmd(&["SET", "survivor", "yes"]);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let cases: Vec<Vec<u8>> = vec![
        b"*999999999999\r\n".to_vec(),
        b"*2\r\n$536870913\r\n".to_vec(),
        b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$999999\r\nshort".to_vec(),
        b"\"unbalanced\r\n".to_vec(),
        vec![b'*'; 70000],
        vec![b'a'; 70000],
    ];
    for case in cases
        .iter()
        .cloned()
        .chain((0..50).map(|_| (0..rng.gen_range(1..512)).map(|_| rng.gen()).collect()))
    {
        let mut bad = Raw::connect(t.addr);
        bad.send_bytes(&case);
        drop(bad);
        assert_eq!(good.cmd_str(&["GET", "survivor"]), "$3\r\nyes\r\n");
    }
}
