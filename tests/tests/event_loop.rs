//! The event loop of our own (`event-loop yes`, server/src/io/evloop.rs): plain TCP
//! connections run on one thread that waits in epoll itself. These tests set it explicitly;
//! scripts/test.sh also runs other test files with the other setting.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};
use tumbler_tests::{Raw, Tumbler};

fn on_loop(extra: &[(&'static str, &'static str)]) -> Tumbler {
    let mut d = vec![("event-loop", "yes"), ("busy-reply-threshold", "100")];
    d.extend_from_slice(extra);
    Tumbler::start_with(&d)
}

/// Reads until the server closes the connection (or 10 s pass); returns what came.
fn read_to_end(s: &mut TcpStream) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got)
        .expect("the server closes the connection");
    got
}

#[test]
fn concurrent_clients_on_the_loop_lose_no_update() {
    let t = on_loop(&[]);
    let addr = t.addr;
    let incr = "local v = tonumber(redis.call('GET', KEYS[1]) or '0') redis.call('SET', KEYS[1], v + 1) return v + 1";
    let workers: Vec<_> = (0..8)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(addr);
                for _ in 0..300 {
                    match i % 3 {
                        0 => assert!(c.cmd_str(&["INCR", "n"]).starts_with(':')),
                        1 => {
                            // A read-then-write script: lost updates if anything interleaved.
                            assert!(c.cmd_str(&["EVAL", incr, "1", "n"]).starts_with(':'));
                        }
                        _ => {
                            c.send(&["MULTI"]);
                            c.send(&["INCR", "n"]);
                            c.send(&["INCR", "n"]);
                            c.send(&["EXEC"]);
                            assert_eq!(c.read_reply(), &b"+OK\r\n"[..]);
                            assert_eq!(c.read_reply(), &b"+QUEUED\r\n"[..]);
                            assert_eq!(c.read_reply(), &b"+QUEUED\r\n"[..]);
                            let exec = c.read_reply();
                            assert!(exec.starts_with(b"*2\r\n:"), "{exec:?}");
                        }
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    // Threads 0, 3, 6 add 300 each; 1, 4, 7 300 each; 2 and 5 600 each.
    assert_eq!(t.raw().cmd_str(&["GET", "n"]), "$4\r\n3000\r\n");
}

#[test]
fn a_half_closed_client_gets_its_replies_and_then_the_end() {
    let t = on_loop(&[]);
    for n in [1, 5, 200] {
        let mut s = TcpStream::connect(t.addr).unwrap();
        let mut req = Vec::new();
        for _ in 0..n {
            req.extend_from_slice(b"*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n");
        }
        s.write_all(&req).unwrap();
        // Data and FIN arrive together: the read that drains the data is short, and the
        // end must still be seen (edge-triggered epoll reports it once).
        s.shutdown(Shutdown::Write).unwrap();
        let got = read_to_end(&mut s);
        assert_eq!(got, b"$3\r\nabc\r\n".repeat(n));
    }
}

#[test]
fn client_kill_and_quit_close_the_socket() {
    let t = on_loop(&[]);
    let mut victim = t.raw();
    let id = victim.cmd_str(&["CLIENT", "ID"]);
    let id = id.trim_start_matches(':').trim();
    assert_eq!(t.raw().cmd_str(&["CLIENT", "KILL", "ID", id]), ":1\r\n");
    assert!(victim.is_closed());

    let mut s = TcpStream::connect(t.addr).unwrap();
    s.write_all(b"*1\r\n$4\r\nQUIT\r\n").unwrap();
    assert_eq!(read_to_end(&mut s), b"+OK\r\n");
}

#[test]
fn two_long_scripts_in_a_row_each_hand_the_loop_on() {
    let t = on_loop(&[]);
    let addr = t.addr;
    for round in 0..2 {
        let runner = std::thread::spawn(move || {
            Raw::connect(addr).cmd_str(&["EVAL", "while true do end", "0"])
        });
        // The loop's thread is in the script, so another thread must answer this.
        let mut other = Raw::connect(addr);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let r = other.cmd_str(&["PING"]);
            if r.starts_with("-BUSY") {
                break;
            }
            assert_eq!(r, "+PONG\r\n");
            assert!(Instant::now() < deadline, "round {round}: no -BUSY in 20 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(other.cmd_str(&["SCRIPT", "KILL"]), "+OK\r\n");
        assert!(runner.join().unwrap().starts_with("-ERR Script killed"));
        assert_eq!(
            other.cmd_str(&["SET", "after", &round.to_string()]),
            "+OK\r\n"
        );
        // A connection opened after the hand-off is served by the new thread.
        assert_eq!(
            Raw::connect(addr).cmd_str(&["GET", "after"]),
            format!("$1\r\n{round}\r\n")
        );
    }
}

#[test]
fn a_client_that_does_not_read_does_not_stall_the_others() {
    let t = on_loop(&[]);
    let mut c = t.raw();
    let big = "x".repeat(512 * 1024);
    assert_eq!(c.cmd_str(&["SET", "big", &big]), "+OK\r\n");
    // Megabytes of replies that nobody reads: the socket's buffers fill and the write waits.
    let mut stuck = TcpStream::connect(t.addr).unwrap();
    let req = b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n".repeat(64);
    stuck.write_all(&req).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    for _ in 0..100 {
        assert_eq!(c.cmd_str(&["PING"]), "+PONG\r\n");
    }
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "other clients waited on a stuck write"
    );
    // Its replies are all there once it reads.
    stuck
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let want = 64 * (big.len() + "$524288\r\n\r\n".len());
    let mut got = 0;
    let mut buf = vec![0u8; 1 << 16];
    while got < want {
        let n = stuck.read(&mut buf).unwrap();
        assert!(n > 0, "closed after {got} of {want} bytes");
        got += n;
    }
    assert_eq!(got, want);
}

#[test]
fn stopping_the_server_closes_connections_on_the_loop() {
    let t = on_loop(&[]);
    let mut s = TcpStream::connect(t.addr).unwrap();
    s.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
    let mut pong = [0u8; 7];
    s.read_exact(&mut pong).unwrap();
    assert_eq!(&pong, b"+PONG\r\n");
    drop(t);
    assert_eq!(read_to_end(&mut s), b"");
}
