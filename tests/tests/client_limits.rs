//! Per-client memory limits as in Redis: `client-output-buffer-limit` for a connection's
//! own replies (hard and soft), `client-query-buffer-limit`, `proto-max-bulk-len` and
//! `maxclients`, their configuration, and what CLIENT LIST and INFO show about client
//! buffers. (The pubsub class is tested in pubsub.rs.)

use std::io::Read;
use std::time::{Duration, Instant};
use tumbler_tests::{diff_against_redis, Raw, RedisServer, Tumbler};

const MB: usize = 1 << 20;

/// The tests here run one at a time: the server is in this process, and one test's memory
/// figures must not include another's megabytes of pending replies.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn info_field(c: &mut Raw, section: &str, field: &str) -> i64 {
    let info = c.cmd_str(&["INFO", section]);
    let line = info
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO {section}: {info}"));
    line.trim().parse().unwrap()
}

/// The CLIENT LIST line of client `id`, if it is connected.
fn client_line(admin: &mut Raw, id: &str) -> Option<String> {
    let list = admin.cmd_str(&["CLIENT", "LIST"]);
    list.lines()
        .find(|l| l.contains(&format!("id={id} ")))
        .map(str::to_string)
}

fn field(line: &str, name: &str) -> usize {
    line.split(' ')
        .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
        .parse()
        .unwrap()
}

/// Connects, learns its client id, then pipelines `n` GETs of `key` and never reads.
fn hog(t: &Tumbler, key: &str, n: usize) -> (Raw, String) {
    let mut c = t.raw();
    let id = c.cmd_str(&["CLIENT", "ID"])[1..].trim().to_string();
    let mut pipe = Vec::new();
    for _ in 0..n {
        pipe.extend_from_slice(
            format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len()).as_bytes(),
        );
    }
    c.send_bytes(&pipe);
    (c, id)
}

fn wait_gone(admin: &mut Raw, id: &str, within: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < within {
        if client_line(admin, id).is_none() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// The case of the issue: 128 pipelined GETs of a 1 MB value, never read. With the normal
/// class limited, the client is closed once its pending replies pass the hard limit, the
/// server's memory returns to about where it was, and other clients carry on.
#[test]
fn a_client_that_never_reads_is_disconnected_at_the_hard_limit() {
    let _serial = serial();
    let t = Tumbler::start();
    let mut admin = t.raw();
    assert_eq!(admin.cmd_str(&["SET", "big", &"v".repeat(MB)]), "+OK\r\n");
    assert_eq!(
        admin.cmd_str(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 16mb 8mb 2"
        ]),
        "+OK\r\n"
    );
    let before = info_field(&mut admin, "memory", "used_memory");
    let (_hog, id) = hog(&t, "big", 128);
    let took = wait_gone(&mut admin, &id, Duration::from_secs(20));
    let after = info_field(&mut admin, "memory", "used_memory");
    println!(
        "never-reading client: closed after {took:?}; used_memory {} MB before, {} MB after",
        before >> 20,
        after >> 20
    );
    assert!(
        took.is_some(),
        "the client passed the hard limit and is still connected"
    );
    assert_eq!(
        info_field(
            &mut admin,
            "stats",
            "client_output_buffer_limit_disconnections"
        ),
        1
    );
    assert!(
        after < before + 24 * MB as i64,
        "memory did not return: {before} -> {after}"
    );
    assert_eq!(admin.cmd_str(&["STRLEN", "big"]), format!(":{MB}\r\n"));
    assert_eq!(admin.cmd_str(&["PING"]), "+PONG\r\n");
}

/// Over the soft limit but under the hard one, a client that does not read is closed once
/// the soft seconds have passed.
#[test]
fn a_client_over_the_soft_limit_is_disconnected_after_the_soft_seconds() {
    let _serial = serial();
    let t = Tumbler::start();
    let mut admin = t.raw();
    admin.cmd(&["SET", "big", &"s".repeat(MB)]);
    admin.cmd(&[
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "normal 64mb 4mb 1",
    ]);
    let (_hog, id) = hog(&t, "big", 24);
    let took = wait_gone(&mut admin, &id, Duration::from_secs(20));
    println!("soft limit: closed after {took:?}");
    let took = took.expect("still connected after 20 s over the soft limit");
    assert!(
        took >= Duration::from_millis(500),
        "closed before the soft seconds: {took:?}"
    );
}

/// A slow reader whose backlog stays under the limits keeps its connection and gets every
/// reply intact.
#[test]
fn a_slow_reader_under_the_limit_keeps_working() {
    let _serial = serial();
    let t = Tumbler::start();
    let mut admin = t.raw();
    admin.cmd(&["SET", "big", &"r".repeat(MB)]);
    admin.cmd(&[
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "normal 16mb 8mb 1",
    ]);
    let (mut slow, id) = hog(&t, "big", 6);
    let mut got = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    while got.len() < 6 * (MB + 11) {
        let n = slow.stream.read(&mut chunk).unwrap();
        assert!(n > 0, "closed after {} bytes", got.len());
        got.extend_from_slice(&chunk[..n]);
        std::thread::sleep(Duration::from_millis(15));
    }
    let one = format!("${MB}\r\n{}\r\n", "r".repeat(MB));
    assert_eq!(got, one.repeat(6).into_bytes());
    assert!(client_line(&mut admin, &id).is_some());
    assert_eq!(slow.cmd_str(&["PING"]), "+PONG\r\n");
    assert_eq!(
        info_field(
            &mut admin,
            "stats",
            "client_output_buffer_limit_disconnections"
        ),
        0
    );
}

/// CLIENT LIST shows a stuck client's pending output (obl/oll/omem, tot-mem) and a
/// half-sent command's query buffer (qbuf); INFO shows the largest of each.
#[test]
fn client_list_and_info_show_client_buffers() {
    let _serial = serial();
    let t = Tumbler::start();
    let mut admin = t.raw();
    admin.cmd(&["SET", "big", &"o".repeat(MB)]);
    let (_stuck, id) = hog(&t, "big", 32);
    let start = Instant::now();
    let line = loop {
        let line = client_line(&mut admin, &id).expect("connected");
        if field(&line, "omem") > 8 * MB || start.elapsed() > Duration::from_secs(10) {
            break line;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    println!("{line}");
    assert_eq!(field(&line, "obl"), 16 * 1024);
    assert!(field(&line, "omem") > 8 * MB, "{line}");
    assert!(field(&line, "oll") >= field(&line, "omem") / (16 * 1024));
    assert!(field(&line, "tot-mem") > field(&line, "omem"));
    assert!(info_field(&mut admin, "clients", "client_recent_max_output_buffer") > 8 * MB as i64);

    let mut half = t.raw();
    let hid = half.cmd_str(&["CLIENT", "ID"])[1..].trim().to_string();
    half.send_bytes(
        format!(
            "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n{}",
            "h".repeat(50_000)
        )
        .as_bytes(),
    );
    let start = Instant::now();
    let line = loop {
        let line = client_line(&mut admin, &hid).expect("connected");
        if field(&line, "qbuf") >= 50_000 || start.elapsed() > Duration::from_secs(10) {
            break line;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(field(&line, "qbuf") >= 50_000, "{line}");
    assert!(info_field(&mut admin, "clients", "client_recent_max_input_buffer") >= 50_000);
    assert_eq!(admin.cmd_str(&["CLIENT", "KILL", "ID", &id]), ":1\r\n");
}

/// CONFIG SET / GET of the limits, in Redis' format and with Redis' errors.
#[test]
fn limit_settings_match_redis() {
    let _serial = serial();
    diff_against_redis(
        r#"
        CONFIG GET client-output-buffer-limit
        CONFIG SET client-output-buffer-limit "normal 16mb 8mb 2"
        CONFIG GET client-output-buffer-limit
        CONFIG SET client-output-buffer-limit "replica 1mb 1mb 2 pubsub 1gb 0 0"
        CONFIG GET client-output-buffer-limit
        CONFIG SET client-output-buffer-limit "normal 1mb"
        CONFIG SET client-output-buffer-limit "bogus 1 1 1"
        CONFIG SET client-output-buffer-limit "normal x 1 1"
        CONFIG SET client-output-buffer-limit "normal 1 2 -1"
        CONFIG SET client-output-buffer-limit "normal -1 0 0"
        CONFIG SET client-output-buffer-limit "pubsub 1 1"
        CONFIG SET client-output-buffer-limit "normal 0 0 0"
        CONFIG GET client-output-buffer-limit
        CONFIG SET proto-max-bulk-len 2mb
        CONFIG GET proto-max-bulk-len
        CONFIG SET client-query-buffer-limit 4mb
        CONFIG GET client-query-buffer-limit
        CONFIG SET proto-max-bulk-len 1000
        CONFIG SET client-query-buffer-limit 1000
        CONFIG SET client-query-buffer-limit abc
        CONFIG SET maxclients 0
        CONFIG SET maxclients 4294967296
        CONFIG SET maxclients 500
        CONFIG GET maxclients
        "#,
    );
}

/// The same settings from the command line (as the embedded builder passes them) and
/// from redis.conf, where each line changes only the classes it names.
#[test]
fn limits_from_the_command_line_and_redis_conf() {
    let _serial = serial();
    let t = Tumbler::start_with(&[("client-output-buffer-limit", "normal 4mb 2mb 10")]);
    assert_eq!(
        t.raw()
            .cmd_str(&["CONFIG", "GET", "client-output-buffer-limit"]),
        "*2\r\n$26\r\nclient-output-buffer-limit\r\n$80\r\n\
         normal 4194304 2097152 10 slave 268435456 67108864 60 pubsub 33554432 8388608 60\r\n"
    );
    let mut cfg = tumbler::Config::default();
    tumbler::config::load_file(
        &mut cfg,
        "client-output-buffer-limit normal 4mb 2mb 10\n\
         client-output-buffer-limit pubsub 1mb 512kb 5\n\
         maxclients 64\nproto-max-bulk-len 4mb\nclient-query-buffer-limit 2mb\n",
    )
    .unwrap();
    assert_eq!(
        cfg.get(tumbler::config::key::CLIENT_OUTPUT_BUFFER_LIMIT),
        "normal 4194304 2097152 10 slave 268435456 67108864 60 pubsub 1048576 524288 5"
    );
    assert_eq!(cfg.get(tumbler::config::key::MAXCLIENTS), "64");
    assert_eq!(cfg.get(tumbler::config::key::PROTO_MAX_BULK_LEN), "4194304");
    assert_eq!(
        cfg.get(tumbler::config::key::CLIENT_QUERY_BUFFER_LIMIT),
        "2097152"
    );
}

/// Reads until EOF (or 10 s) and returns what arrived.
fn read_to_close(c: &mut Raw) -> Vec<u8> {
    c.stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut out = std::mem::take(&mut c.buf);
    let mut b = [0u8; 4096];
    loop {
        match c.stream.read(&mut b) {
            Ok(0) => return out,
            Ok(n) => out.extend_from_slice(&b[..n]),
            // Closed with our unread bytes still in its buffer: the kernel resets.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return out,
            Err(e) => panic!(
                "no close within 10 s ({e}); got {:?}",
                String::from_utf8_lossy(&out)
            ),
        }
    }
}

/// maxclients, proto-max-bulk-len and client-query-buffer-limit against redis-server: the
/// same reply (or none) and the same close.
#[test]
fn maxclients_bulk_length_and_query_buffer_limits_match_redis() {
    let _serial = serial();
    // The default personality: the test also reads 7.2's client_*_limit_disconnections.
    let t = Tumbler::start();
    let redis = RedisServer::start();
    let mut servers: Vec<(&str, Box<dyn Fn() -> Raw>)> = vec![("tumbler", Box::new(|| t.raw()))];
    if let Some(r) = &redis {
        servers.push(("redis", Box::new(move || r.raw())));
    }
    let mut results: Vec<Vec<Vec<u8>>> = Vec::new();
    for (name, connect) in &servers {
        let mut got = Vec::new();
        let mut admin = connect();
        for (k, v) in [
            ("maxclients", "3"),
            ("proto-max-bulk-len", "1mb"),
            ("client-query-buffer-limit", "1mb"),
        ] {
            assert_eq!(admin.cmd_str(&["CONFIG", "SET", k, v]), "+OK\r\n", "{name}");
        }
        // A bulk longer than proto-max-bulk-len: protocol error, then close.
        let mut c = connect();
        c.send_bytes(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n");
        got.push(read_to_close(&mut c));
        // Under proto-max-bulk-len but more than client-query-buffer-limit buffered:
        // closed without a reply.
        admin.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "64mb"]);
        let mut c = connect();
        c.send_bytes(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000000\r\n");
        let _ = c.stream.write_all_ignoring_reset(&vec![b'q'; 1_500_000]);
        got.push(read_to_close(&mut c));
        // Once the closed ones are gone, two more clients fit (admin + 2 = 3); the next
        // is refused.
        let deadline = Instant::now() + Duration::from_secs(10);
        while info_field(&mut admin, "clients", "connected_clients") > 1 {
            assert!(Instant::now() < deadline, "{name}: closed clients linger");
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut a = connect();
        let mut b = connect();
        assert_eq!(a.cmd_str(&["PING"]), "+PONG\r\n", "{name}");
        assert_eq!(b.cmd_str(&["PING"]), "+PONG\r\n", "{name}");
        let mut refused = connect();
        got.push(read_to_close(&mut refused));
        assert_eq!(admin.cmd_str(&["EXISTS", "k"]), ":0\r\n", "{name}");
        if *name == "tumbler" {
            let kills = info_field(
                &mut admin,
                "stats",
                "client_query_buffer_limit_disconnections",
            );
            assert!(kills >= 1, "{kills}");
        }
        results.push(got);
    }
    let t_res = &results[0];
    assert_eq!(
        String::from_utf8_lossy(&t_res[0]),
        "-ERR Protocol error: invalid bulk length\r\n"
    );
    assert_eq!(String::from_utf8_lossy(&t_res[1]), "");
    assert_eq!(
        String::from_utf8_lossy(&t_res[2]),
        "-ERR max number of clients reached\r\n"
    );
    if results.len() == 2 {
        assert_eq!(
            results[0], results[1],
            "tumbler (left) and redis-server (right)"
        );
    }
}

trait WriteIgnoringReset {
    fn write_all_ignoring_reset(&mut self, b: &[u8]) -> std::io::Result<()>;
}

impl WriteIgnoringReset for std::net::TcpStream {
    /// Writes what the server accepts before it closes the connection.
    fn write_all_ignoring_reset(&mut self, b: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        for chunk in b.chunks(64 * 1024) {
            self.write_all(chunk)?;
        }
        Ok(())
    }
}

/// A MONITOR client is in the normal class: when it stops reading, its backlog of lines
/// is bounded by the normal limits and it is closed, instead of growing without bound.
#[test]
fn a_monitor_that_never_reads_is_disconnected() {
    let _serial = serial();
    let t = Tumbler::start();
    let mut admin = t.raw();
    admin.cmd(&[
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "normal 4mb 2mb 1",
    ]);
    let mut mon = t.raw();
    let id = mon.cmd_str(&["CLIENT", "ID"])[1..].trim().to_string();
    assert_eq!(mon.cmd_str(&["MONITOR"]), "+OK\r\n");
    let value = "m".repeat(64 * 1024);
    let mut writer = t.raw();
    let start = Instant::now();
    let mut sent = 0;
    while client_line(&mut admin, &id).is_some() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "monitor still connected after {sent} lines of 64 KiB"
        );
        for _ in 0..16 {
            assert_eq!(writer.cmd_str(&["SET", "k", &value]), "+OK\r\n");
            sent += 1;
        }
    }
    println!(
        "monitor closed after {sent} lines of 64 KiB in {:?}",
        start.elapsed()
    );
    assert!(sent <= 2000, "backlog was not bounded: {sent} lines");
    assert!(
        info_field(
            &mut admin,
            "stats",
            "client_output_buffer_limit_disconnections"
        ) >= 1
    );
    assert_eq!(writer.cmd_str(&["PING"]), "+PONG\r\n");
}

/// A client that sends a whole large pipeline before reading any reply (what redis-py's and
/// ioredis' pipelines do) gets every reply, as from Redis: the server keeps reading requests
/// while its replies wait, rather than waiting for the client to read while the client waits
/// for it to read. 200 ECHOs of 256 KiB are 50 MiB each way, far past the socket buffers.
#[test]
fn a_pipeline_larger_than_the_socket_buffers_is_answered_in_full() {
    let _s = serial();
    let t = Tumbler::start_with(&[("personality", "redis-7.0")]);
    let redis = RedisServer::start();
    let mut servers = vec![("tumbler", t.raw())];
    // Without redis-server (and TUMBLER_SKIP_MISSING=1, or start() fails the test) the
    // check runs on tumbler alone.
    if let Some(r) = &redis {
        servers.push(("redis-server", r.raw()));
    }
    let n = 200;
    let arg = vec![b'x'; 256 * 1024];
    let one = tumbler_tests::encode_cmd(&[b"ECHO".as_slice(), &arg]);
    for (name, mut c) in servers {
        let mut w = c.stream.try_clone().unwrap();
        let req = one.clone();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            for _ in 0..n {
                w.write_all(&req).unwrap();
            }
            done_tx.send(()).unwrap();
        });
        // Nothing is read until the whole pipeline is written.
        assert!(
            done_rx.recv_timeout(Duration::from_secs(60)).is_ok(),
            "{name}: the pipeline could not be written while no reply was read"
        );
        writer.join().unwrap();
        for i in 0..n {
            let r = c.read_reply();
            assert_eq!(r.len(), arg.len() + 11, "{name}: reply {i}");
        }
        assert_eq!(c.cmd_str(&["PING"]), "+PONG\r\n", "{name}");
    }
}
