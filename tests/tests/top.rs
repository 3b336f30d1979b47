//! `tumbler top` in a real terminal: tmux runs it against a server where a lock is held and
//! waited for, and the test reads the screen a person would see (capture-pane), resizes the
//! window and quits with `q`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use tumbler::embed::TestServer;
use tumbler_tests::{binary, tools};

/// Sends one command; with `read`, returns the reply's first chunk.
fn send(s: &mut TcpStream, args: &[&str], read: bool) -> String {
    let mut out = format!("*{}\r\n", args.len());
    for a in args {
        out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(out.as_bytes()).unwrap();
    if !read {
        return String::new();
    }
    let mut b = [0u8; 4096];
    let n = s.read(&mut b).unwrap();
    String::from_utf8_lossy(&b[..n]).into_owned()
}

/// A tmux server of our own (its own socket), killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux")
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "top"]).stdout).into_owned()
    }

    /// Waits until the screen satisfies `ok`; returns it (or panics with what it showed).
    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "screen never showed {what}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// The WAITERS column of a native lock's row (the column after TYPE `lock`).
fn waiters_of(row: &str) -> Option<&str> {
    let cols: Vec<&str> = row.split_whitespace().collect();
    let i = cols.iter().position(|c| *c == "lock")?;
    cols.get(i + 1).copied()
}

/// The line of the table that shows `key`.
fn line_of<'a>(screen: &'a str, key: &str) -> &'a str {
    screen.lines().find(|l| l.contains(key)).unwrap_or("")
}

#[test]
fn shows_a_held_lock_with_its_waiters_resizes_and_quits() {
    if tools::tool_probed("tmux", "-V").is_none() {
        return;
    }
    let srv = TestServer::builder().spawn().unwrap();
    let addr = srv.addr();
    let mut holder = TcpStream::connect(addr).unwrap();
    let token = send(
        &mut holder,
        &["LOCK.ACQUIRE", "orders:42", "worker-a", "30000"],
        true,
    );
    assert!(token.starts_with(':'), "{token}");
    // Two clients wait for it; one more waits on a lock nobody contends.
    let mut waiters = Vec::new();
    for (n, owner) in ["worker-b", "worker-c"].into_iter().enumerate() {
        let mut w = TcpStream::connect(addr).unwrap();
        send(
            &mut w,
            &["LOCK.ACQUIRE", "orders:42", owner, "30000", "WAIT", "60000"],
            false,
        );
        waiters.push(w);
        // Queue order is arrival order: let worker-b's request be queued before worker-c's
        // (they come on two connections).
        let queued = format!("blocked_clients:{}", n + 1);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !send(&mut holder, &["INFO", "clients"], true).contains(&queued) {
            assert!(Instant::now() < deadline, "{owner} was never queued");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    send(
        &mut holder,
        &["LOCK.ACQUIRE", "quiet", "worker-z", "30000"],
        true,
    );
    // A Redisson RLock held by one thread, with one waiter subscribed to its channel.
    let owner = "5f0c1a8e-7b7d-4f0e-9a39-3c2b8e1d0a11:57";
    send(&mut holder, &["HSET", "invoices", owner, "2"], true);
    send(&mut holder, &["PEXPIRE", "invoices", "30000"], true);
    send(&mut holder, &["HSET", "profile", "name", "bob"], true); // not a lock
    let mut sub = TcpStream::connect(addr).unwrap();
    send(
        &mut sub,
        &["SUBSCRIBE", "redisson_lock__channel:{invoices}"],
        true,
    );

    let tmux = Tmux {
        socket: format!("tumbler-top-test-{}", std::process::id()),
    };
    let top = format!(
        "{} top --port {} --interval 100",
        binary::path().display(),
        addr.port()
    );
    let out = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "top",
        "-x",
        "120",
        "-y",
        "30",
        &top,
    ]);
    assert!(
        out.status.success(),
        "tmux: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let screen = tmux.wait_for("the held lock and its 2 waiters", |s| {
        waiters_of(line_of(s, "orders:42")) == Some("2") && s.contains("invoices")
    });
    let row = line_of(&screen, "orders:42");
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert!(cols.contains(&"worker-a"), "{row}");
    // 2 on the native lock, 1 subscribed to the Redisson lock's channel.
    assert!(screen.contains("3 locks held, 3 waiters"), "{screen}");
    assert!(
        cols.contains(&token.trim().trim_start_matches(':')),
        "token shown: {row}"
    );
    assert!(
        row.contains("30s") || row.contains("29s"),
        "TTL shown: {row}"
    );
    // Sorted by contention: the contended lock comes before the quiet one.
    let pos = |k: &str| {
        screen
            .find(k)
            .unwrap_or_else(|| panic!("{k} missing:\n{screen}"))
    };
    assert!(pos("orders:42") < pos("quiet"), "{screen}");
    let redisson = line_of(&screen, "invoices");
    // (the holder column may cut the 39-character owner short)
    assert!(
        redisson.contains("redisson lock") && redisson.contains(&owner[..20]),
        "{screen}"
    );
    assert!(
        !screen.contains("profile"),
        "an ordinary hash is not a lock:\n{screen}"
    );

    // The holder releases: the first waiter holds it, one waits.
    send(
        &mut holder,
        &["LOCK.RELEASE", "orders:42", "worker-a"],
        true,
    );
    tmux.wait_for("worker-b holding with 1 waiter", |s| {
        let l = line_of(s, "orders:42");
        l.contains("worker-b") && waiters_of(l) == Some("1")
    });

    // A narrower window: laid out again, still legible.
    tmux.cmd(&["resize-window", "-t", "top", "-x", "80", "-y", "20"]);
    let small = tmux.wait_for("a redraw at 80 columns", |s| {
        s.lines().all(|l| l.chars().count() <= 80) && line_of(s, "orders:42").contains("worker-b")
    });
    assert!(small.contains("q quit"), "{small}");

    tmux.cmd(&["send-keys", "-t", "top", "q"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while tmux.cmd(&["has-session", "-t", "top"]).status.success() {
        assert!(
            Instant::now() < deadline,
            "q did not quit:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(waiters);
}
