//! A runtime of ONE tokio worker (`worker-threads 1`, the default on a machine with one or
//! two cores) keeps the promises that once needed a second worker: a long script moves off
//! the worker (`block_in_place`, scripting::bridge::detach_from_worker), so other clients
//! still get -BUSY, SCRIPT KILL and SHUTDOWN NOSAVE still act, and blocked clients, pub/sub
//! and active expiry carry on once it ends.

use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};
use tumbler_tests::{Raw, Tumbler};

fn one_worker(extra: &[(&'static str, &'static str)]) -> Tumbler {
    let mut d = vec![("worker-threads", "1"), ("busy-reply-threshold", "100")];
    d.extend_from_slice(extra);
    Tumbler::start_with(&d)
}

fn poll_until(mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "condition not reached in 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_long_script_on_one_worker_leaves_every_client_answered() {
    let t = one_worker(&[]);
    let addr = t.addr;
    let mut c = t.raw();
    // Waiting before the script starts: a blocked pop, a subscriber, a key about to expire.
    let mut popper = t.raw();
    popper.send(&["BLPOP", "q", "0"]);
    let mut sub = t.raw();
    assert!(sub.cmd_str(&["SUBSCRIBE", "ch"]).starts_with("*3\r\n"));
    assert_eq!(c.cmd_str(&["SET", "short", "1", "PX", "300"]), "+OK\r\n");

    let runner =
        std::thread::spawn(move || Raw::connect(addr).cmd_str(&["EVAL", "while true do end", "0"]));
    // Several clients at once, on connections opened before and during the script, are all
    // answered -BUSY: the runtime's only worker is not stuck in the script.
    let askers: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let mut a = Raw::connect(addr);
                let deadline = Instant::now() + Duration::from_secs(20);
                loop {
                    let r = a.cmd_str(&["GET", "x"]);
                    if r.starts_with("-BUSY Redis is busy running a script") {
                        return;
                    }
                    assert_eq!(r, "$-1\r\n");
                    assert!(Instant::now() < deadline, "no -BUSY in 20 s");
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        })
        .collect();
    for a in askers {
        a.join().unwrap();
    }
    assert!(t.raw().cmd_str(&["PING"]).starts_with("-BUSY"));
    assert_eq!(c.cmd_str(&["SCRIPT", "KILL"]), "+OK\r\n");
    assert!(runner
        .join()
        .unwrap()
        .starts_with("-ERR Script killed by user with SCRIPT KILL..."));

    // After it: the blocked client is served, the subscriber gets its message, the timer
    // still expires keys nobody reads.
    assert_eq!(c.cmd_str(&["RPUSH", "q", "v"]), ":1\r\n");
    assert_eq!(popper.read_reply(), &b"*2\r\n$1\r\nq\r\n$1\r\nv\r\n"[..]);
    assert_eq!(c.cmd_str(&["PUBLISH", "ch", "hi"]), ":1\r\n");
    assert_eq!(
        sub.read_reply(),
        &b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"[..]
    );
    poll_until(|| c.cmd_str(&["DBSIZE"]) == ":0\r\n");
    assert_eq!(c.cmd_str(&["EXISTS", "q"]), ":0\r\n");
}

/// Whether the server ends the connection (EOF or reset) within `limit`; any reply bytes
/// before that are ignored.
fn closes_within(s: &mut std::net::TcpStream, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut b = [0u8; 1024];
    while Instant::now() < deadline {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn shutdown_nosave_stops_a_writing_script_on_one_worker() {
    let t = one_worker(&[]);
    let addr = t.addr;
    let mut c = t.raw();
    let runner = std::thread::spawn(move || {
        let script = "redis.call('set','w','1') while true do end";
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        let cmd = format!(
            "*3\r\n$4\r\nEVAL\r\n${}\r\n{script}\r\n$1\r\n0\r\n",
            script.len()
        );
        s.write_all(cmd.as_bytes()).unwrap();
        closes_within(&mut s, Duration::from_secs(30))
    });
    poll_until(|| c.cmd_str(&["GET", "x"]).starts_with("-BUSY"));
    assert!(c
        .cmd_str(&["SCRIPT", "KILL"])
        .starts_with("-UNKILLABLE Sorry the script already executed write commands"));
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n")
        .unwrap();
    assert!(
        closes_within(&mut s, Duration::from_secs(30)),
        "SHUTDOWN NOSAVE did not close the connection"
    );
    assert!(
        runner.join().unwrap(),
        "the script's connection stayed open"
    );
    // The server is gone: dropping the handle joins its thread, which must not hang.
    drop(t);
    assert!(std::net::TcpStream::connect(addr).is_err());
}
