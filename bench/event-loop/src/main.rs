//! Measurement prototype, not a server: what tumbler's request path would cost at -P 1
//! with an event loop of its own instead of tokio (docs/architecture.md, "The ceiling of
//! this machine").
//!
//! One thread, level-triggered epoll as Redis' `ae`: each pass reads every readable
//! connection once and runs its complete commands through tumbler's own parser
//! (`protocol::parse_into`, with the name cache), the command table's checks
//! (`commands::check_spec`) and the engine (`Engine::call` under a mutex taken per batch,
//! as the server takes the keyspace lock), with one clock read per command as the
//! server's command timing; the replies are written at the end of the pass, as Redis'
//! `beforeSleep` does. What it leaves out, so that it is a lower bound on such a server:
//! ACL checks, statistics, client tracking, MONITOR, keyspace notifications, pushes,
//! blocked clients, active expiry, client limits, the arrival order across connections
//! (which epoll's order would give for free) and every server command but PING, which
//! gets `+PONG` (the others get `+OK`).
//!
//! Usage: event-loop-proto --port P   (as a server binary for bench/ab.sh: TBIN2=...)

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, IntoRawFd};

use bytes::{Bytes, BytesMut};
use lockcore::commands::check_spec;
use lockcore::engine::spec::Exec;
use lockcore::{ClientCtx, Engine, Reply};
use tumbler::base::mono::Mono;
use tumbler::resp::{parse_into, Limits, NameCache};

const LISTENER: u64 = u64::MAX;
const READ_CHUNK: usize = 16 * 1024;

struct Conn {
    fd: i32,
    buf: BytesMut,
    out: BytesMut,
    argv: Vec<Bytes>,
    names: NameCache,
    cl: ClientCtx,
    queued: bool,
}

fn epoll_ctl(ep: i32, op: i32, fd: i32, events: u32, data: u64) {
    let mut ev = libc::epoll_event { events, u64: data };
    // SAFETY: `ev` is a valid epoll_event; a failure leaves the fd unwatched, which the
    // prototype does not need to survive.
    unsafe { libc::epoll_ctl(ep, op, fd, &mut ev) };
}

fn close(ep: i32, conns: &mut [Option<Box<Conn>>], fd: i32) {
    epoll_ctl(ep, libc::EPOLL_CTL_DEL, fd, 0, 0);
    // SAFETY: the fd is ours, from accept, and closed once (its slot is emptied).
    unsafe { libc::close(fd) };
    conns[fd as usize] = None;
}

/// Reads once; false when the connection is gone.
fn read_once(c: &mut Conn) -> bool {
    c.buf.reserve(READ_CHUNK);
    let spare = c.buf.spare_capacity_mut();
    // SAFETY: reads at most `spare.len()` bytes into the buffer's spare capacity.
    let n = unsafe { libc::read(c.fd, spare.as_mut_ptr().cast(), spare.len()) };
    if n > 0 {
        // SAFETY: the kernel initialised the first `n` bytes of the spare capacity.
        unsafe { c.buf.set_len(c.buf.len() + n as usize) };
        return true;
    }
    n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
}

/// Runs the complete commands in the connection's buffer; false on a protocol error.
fn run_batch(c: &mut Conn, engine: &parking_lot::Mutex<Engine>) -> bool {
    let lim = Limits {
        max_bulk: 512 * 1024 * 1024,
        authenticated: true,
    };
    let mut core = engine.lock();
    let mut last = Mono::now();
    loop {
        match parse_into(&mut c.buf, lim, &mut c.argv, &mut c.names) {
            Ok(true) => {}
            Ok(false) => return true,
            Err(_) => return false,
        }
        if c.argv.is_empty() {
            continue;
        }
        let reply = match check_spec(c.names.command(&c.argv[0]), &c.argv) {
            Err(r) => r,
            Ok(spec) => match spec.exec {
                Exec::Engine(_) => {
                    let r = core.call(&mut c.cl, spec, &c.argv);
                    core.after_command();
                    r
                }
                _ if spec.name == "ping" => Reply::simple("PONG"),
                _ => Reply::ok(),
            },
        };
        reply.encode(&mut c.out, false);
        let now = Mono::now();
        std::hint::black_box(now.ns_since(last));
        last = now;
        c.argv.clear();
    }
}

/// Writes what it can; false when the connection is gone.
fn flush(c: &mut Conn) -> bool {
    while !c.out.is_empty() {
        // SAFETY: writes from the initialised bytes of `out`.
        let n = unsafe { libc::write(c.fd, c.out.as_ptr().cast(), c.out.len()) };
        if n < 0 {
            return io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock;
        }
        let _ = c.out.split_to(n as usize);
    }
    true
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = match args.iter().position(|a| a == "--port") {
        Some(i) => args.get(i + 1).and_then(|p| p.parse().ok()).unwrap_or(6379),
        None => 6379,
    };
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    listener.set_nonblocking(true)?;
    let engine = parking_lot::Mutex::new(Engine::new(16));
    // SAFETY: plain system call.
    let ep = unsafe { libc::epoll_create1(0) };
    if ep < 0 {
        return Err(io::Error::last_os_error());
    }
    epoll_ctl(ep, libc::EPOLL_CTL_ADD, listener.as_raw_fd(), libc::EPOLLIN as u32, LISTENER);
    let mut conns: Vec<Option<Box<Conn>>> = Vec::new();
    let mut queued: Vec<i32> = Vec::new();
    let mut evs = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    loop {
        // SAFETY: `evs` has room for the 256 events asked for.
        let n = unsafe { libc::epoll_wait(ep, evs.as_mut_ptr(), evs.len() as i32, -1) };
        for ev in evs.iter().take(n.max(0) as usize) {
            let data = ev.u64;
            if data == LISTENER {
                while let Ok((s, _)) = listener.accept() {
                    s.set_nonblocking(true)?;
                    s.set_nodelay(true)?;
                    let fd = s.into_raw_fd();
                    if conns.len() <= fd as usize {
                        conns.resize_with(fd as usize + 1, || None);
                    }
                    conns[fd as usize] = Some(Box::new(Conn {
                        fd,
                        buf: BytesMut::with_capacity(READ_CHUNK),
                        out: BytesMut::with_capacity(4096),
                        argv: Vec::new(),
                        names: NameCache::default(),
                        cl: ClientCtx::default(),
                        queued: false,
                    }));
                    epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, fd as u64);
                }
                continue;
            }
            let fd = data as i32;
            let Some(c) = conns[fd as usize].as_deref_mut() else {
                continue;
            };
            if ev.events & libc::EPOLLOUT as u32 != 0 {
                // Only asked for when a write was left over.
                epoll_ctl(ep, libc::EPOLL_CTL_MOD, fd, libc::EPOLLIN as u32, fd as u64);
                if !c.queued {
                    c.queued = true;
                    queued.push(fd);
                }
            }
            if ev.events & (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR) as u32 == 0 {
                continue;
            }
            if !read_once(c) || !run_batch(c, &engine) {
                if c.queued {
                    queued.retain(|&q| q != fd);
                }
                close(ep, &mut conns, fd);
                continue;
            }
            if !c.out.is_empty() && !c.queued {
                c.queued = true;
                queued.push(fd);
            }
        }
        // beforeSleep: every reply of the pass goes out now.
        for fd in std::mem::take(&mut queued) {
            let Some(c) = conns[fd as usize].as_deref_mut() else {
                continue;
            };
            c.queued = false;
            if !flush(c) {
                close(ep, &mut conns, fd);
            } else if !c.out.is_empty() {
                let ev = (libc::EPOLLIN | libc::EPOLLOUT) as u32;
                epoll_ctl(ep, libc::EPOLL_CTL_MOD, fd, ev, fd as u64);
            }
        }
    }
}
