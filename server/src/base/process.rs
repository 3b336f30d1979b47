//! The process surface of redis-server: `daemonize`, `pidfile`, `logfile`.
//!
//! # Why bind, then fork, then start the runtime, with a pipe handshake
//!
//! `fork` copies only the calling thread, so it must happen while the process has one
//! thread: before the tokio runtime starts. The listeners are bound before the fork, so the
//! ports are open before anything else happens. The parent then waits on a pipe until the
//! child has its runtime serving, its signal handlers and its pid file in place, and only
//! then exits 0. A script doing `tumbler --daemonize yes --pidfile P --port X; redis-cli -p X
//! ping; kill $(cat P)` therefore finds the port answering and the pid file written as soon
//! as the parent returns. (redis-server's parent exits at once, before it binds; scripts
//! written for it poll, which works here too.) If the child dies before it is ready, the
//! pipe closes and the parent exits 1.

use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};

/// The child's end of the daemonize handshake.
pub struct Daemon {
    ready: Option<std::fs::File>,
}

/// Forks into the background. Call with a single thread (before the runtime). The parent
/// waits for [`Daemon::ready`] and exits; only the child returns. The child gets its own
/// session; its standard streams stay open until `ready`, so the port line still reaches
/// whoever started it.
pub fn daemonize() -> io::Result<Daemon> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe writes two fresh descriptors into `fds`.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and owned only here.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let _ = io::stdout().flush();
    let _ = io::stderr().flush();
    // SAFETY: the process is single-threaded here (no runtime yet), so the child is a
    // complete copy of it.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            drop(rd);
            // SAFETY: setsid has no memory-safety preconditions.
            unsafe { libc::setsid() };
            Ok(Daemon {
                ready: Some(std::fs::File::from(wr)),
            })
        }
        _ => {
            drop(wr);
            let mut b = [0u8; 1];
            let ok = matches!(std::fs::File::from(rd).read(&mut b), Ok(1));
            std::process::exit(if ok { 0 } else { 1 })
        }
    }
}

impl Daemon {
    /// Detaches stdin, stdout and stderr (to /dev/null, as redis-server does; a `logfile`
    /// keeps its own descriptor) and releases the waiting parent.
    pub fn ready(mut self) {
        let _ = io::stdout().flush();
        if let Ok(null) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
        {
            use std::os::fd::AsRawFd;
            for fd in 0..3 {
                // SAFETY: dup2 onto the standard descriptors, which this process owns.
                unsafe { libc::dup2(null.as_raw_fd(), fd) };
            }
        }
        if let Some(mut f) = self.ready.take() {
            let _ = f.write_all(b"1");
        }
    }
}

/// Writes the pid file (the process id and a newline, as Redis).
pub fn write_pidfile(path: &str) -> io::Result<()> {
    std::fs::write(path, format!("{}\n", std::process::id()))
}

/// Opens `logfile` for appending; `""` means the console (stderr; stdout carries the port
/// line).
pub fn open_logfile(path: &str) -> io::Result<Option<std::fs::File>> {
    if path.is_empty() {
        return Ok(None);
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map(Some)
}
