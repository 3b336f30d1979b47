//! A tiny typed, blocking client for Tumbler's native locks, used by the tests and the lock
//! benchmark. One `Client` is one connection; a SESSION lock lives as long as it does.
//! Replies are decoded with `redis-protocol` (RESP2), so the client also works against
//! redis-server for the generic commands (`cmd`, EVAL, SUBSCRIBE ...).
//!
//! ```no_run
//! let mut c = tumbler_client::Client::connect("127.0.0.1:6379").unwrap();
//! if let Some(token) = c.lock_acquire("orders", "worker-1", 30_000, Some(5_000), false).unwrap() {
//!     c.fence_set("orders:last", "42", "orders", token).unwrap();
//!     c.lock_release("orders", "worker-1").unwrap();
//! }
//! ```

use redis_protocol::resp2::decode::decode;
pub use redis_protocol::resp2::types::OwnedFrame as Frame;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// What can go wrong with a call.
#[derive(Debug)]
pub enum Error {
    Io(io::Error),
    /// An error reply, e.g. `NOTHELD ...` or `WRONGTYPE ...`.
    Server(String),
    /// A reply of an unexpected shape.
    Protocol(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io(e) => write!(f, "io: {e}"),
            Error::Server(e) => write!(f, "server: {e}"),
            Error::Protocol(e) => write!(f, "protocol: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// One connection.
pub struct Client {
    stream: Stream,
    buf: Vec<u8>,
}

/// The transports a client connects over.
enum Stream {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixStream),
    #[cfg(feature = "tls")]
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            #[cfg(unix)]
            Stream::Unix(s) => s.set_read_timeout(t),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.sock.set_read_timeout(t),
        }
    }

    fn shutdown(&mut self) {
        match self {
            Stream::Tcp(s) => {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
            #[cfg(unix)]
            Stream::Unix(s) => {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
            #[cfg(feature = "tls")]
            Stream::Tls(s) => {
                s.conn.send_close_notify();
                let _ = s.flush();
                let _ = s.sock.shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

impl Read for Stream {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(b),
            #[cfg(unix)]
            Stream::Unix(s) => s.read(b),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.read(b),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(b),
            #[cfg(unix)]
            Stream::Unix(s) => s.write(b),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            #[cfg(unix)]
            Stream::Unix(s) => s.flush(),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// Encodes one command as a RESP array of bulk strings.
pub fn encode<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        let a = a.as_ref();
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

impl Client {
    pub fn connect<A: ToSocketAddrs>(addr: A) -> Result<Client> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Client::over(Stream::Tcp(stream)))
    }

    /// A client over a connection the caller made, with its own connect timeout, read
    /// timeout and socket options.
    pub fn from_tcp(stream: TcpStream) -> Client {
        Client::over(Stream::Tcp(stream))
    }

    /// A client over a TLS connection the caller made (its own rustls configuration and
    /// server name).
    #[cfg(feature = "tls")]
    pub fn from_tls(stream: rustls::StreamOwned<rustls::ClientConnection, TcpStream>) -> Client {
        Client::over(Stream::Tls(Box::new(stream)))
    }

    fn over(stream: Stream) -> Client {
        Client {
            stream,
            buf: Vec::with_capacity(4096),
        }
    }

    /// Connects to a Unix socket (`unixsocket` in the server's config).
    #[cfg(unix)]
    pub fn connect_unix<P: AsRef<std::path::Path>>(path: P) -> Result<Client> {
        let s = std::os::unix::net::UnixStream::connect(path)?;
        Ok(Client::over(Stream::Unix(s)))
    }

    /// Connects over TLS (feature `tls`): `server_name` is checked against the server's
    /// certificate; `config` carries the trusted CA and, for `tls-auth-clients yes`, the
    /// client certificate. The handshake completes before this returns.
    #[cfg(feature = "tls")]
    pub fn connect_tls<A: ToSocketAddrs>(
        addr: A,
        server_name: &str,
        config: std::sync::Arc<rustls::ClientConfig>,
    ) -> Result<Client> {
        let sock = TcpStream::connect(addr)?;
        sock.set_nodelay(true)?;
        let name = rustls::pki_types::ServerName::try_from(server_name.to_string())
            .map_err(|e| Error::Protocol(format!("server name {server_name:?}: {e}")))?;
        let conn = rustls::ClientConnection::new(config, name)
            .map_err(|e| Error::Io(io::Error::other(e)))?;
        let mut tls = rustls::StreamOwned::new(conn, sock);
        while tls.conn.is_handshaking() {
            tls.conn.complete_io(&mut tls.sock)?;
        }
        Ok(Client::over(Stream::Tls(Box::new(tls))))
    }

    /// Bounds how long `read` waits (None: forever).
    pub fn set_read_timeout(&mut self, t: Option<Duration>) -> Result<()> {
        Ok(self.stream.set_read_timeout(t)?)
    }

    /// Sends one command without reading its reply (pipelining, blocking waits).
    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<()> {
        Ok(self.stream.write_all(&encode(args))?)
    }

    /// Reads the next reply (or pushed message) as a frame; error replies are frames too.
    pub fn read(&mut self) -> Result<Frame> {
        loop {
            if let Some((frame, n)) =
                decode(&self.buf).map_err(|e| Error::Protocol(format!("{e:?}")))?
            {
                self.buf.drain(..n);
                return Ok(frame);
            }
            let mut chunk = [0u8; 4096];
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(Error::Io(io::ErrorKind::UnexpectedEof.into()));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends a command and reads its reply; an error reply becomes `Error::Server`.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Frame> {
        self.send(args)?;
        match self.read()? {
            Frame::Error(e) => Err(Error::Server(e)),
            f => Ok(f),
        }
    }

    /// Closes the connection (a SESSION lock is released by the server).
    pub fn close(mut self) {
        self.stream.shutdown();
    }

    // ------------------------------------------------------------ mutex

    /// LOCK.ACQUIRE: `Some(token)` on grant, `None` when not granted (no wait / timeout).
    /// `wait_ms`: `None` never blocks, `Some(0)` blocks forever.
    pub fn lock_acquire(
        &mut self,
        key: &str,
        owner: &str,
        ttl_ms: u64,
        wait_ms: Option<u64>,
        session: bool,
    ) -> Result<Option<u64>> {
        let args = acquire_args("LOCK.ACQUIRE", key, owner, &[], ttl_ms, wait_ms, session);
        token(self.cmd(&args)?)
    }

    /// LOCK.RELEASE: the owner's remaining hold count (0: released).
    pub fn lock_release(&mut self, key: &str, owner: &str) -> Result<u64> {
        int(self.cmd(&["LOCK.RELEASE", key, owner])?)
    }

    /// LOCK.EXTEND: renews the lease of a held lock.
    pub fn lock_extend(&mut self, key: &str, owner: &str, ttl_ms: u64) -> Result<()> {
        self.cmd(&["LOCK.EXTEND", key, owner, &ttl_ms.to_string()])?;
        Ok(())
    }

    /// LOCK.CHECK: does `token` hold `key` right now?
    pub fn lock_check(&mut self, key: &str, token: u64) -> Result<bool> {
        Ok(int(self.cmd(&["LOCK.CHECK", key, &token.to_string()])?)? == 1)
    }

    /// LOCK.INFO as (field, value) pairs; `None` if the lock is free.
    pub fn lock_info(&mut self, key: &str) -> Result<Option<Vec<(String, Frame)>>> {
        match self.cmd(&["LOCK.INFO", key])? {
            Frame::Null => Ok(None),
            Frame::Array(v) => {
                let mut out = Vec::new();
                let mut it = v.into_iter();
                while let (Some(k), Some(val)) = (it.next(), it.next()) {
                    out.push((text(&k), val));
                }
                Ok(Some(out))
            }
            f => Err(Error::Protocol(format!("LOCK.INFO: {f:?}"))),
        }
    }

    /// FENCE.SET: writes `key` only if `token` holds `lockkey`; `Err(Server("FENCED ..."))`
    /// otherwise.
    pub fn fence_set(&mut self, key: &str, value: &str, lockkey: &str, token: u64) -> Result<()> {
        self.cmd(&["FENCE.SET", key, value, lockkey, &token.to_string()])?;
        Ok(())
    }

    // ------------------------------------------------------------ semaphore

    /// SEM.ACQUIRE `count` of `permits` permits.
    #[allow(clippy::too_many_arguments)]
    pub fn sem_acquire(
        &mut self,
        key: &str,
        owner: &str,
        permits: u64,
        count: u64,
        ttl_ms: u64,
        wait_ms: Option<u64>,
        session: bool,
    ) -> Result<Option<u64>> {
        let p = permits.to_string();
        let mut args = acquire_args("SEM.ACQUIRE", key, owner, &[p], ttl_ms, wait_ms, session);
        args.extend(["COUNT".to_string(), count.to_string()]);
        token(self.cmd(&args)?)
    }

    /// SEM.RELEASE `count` permits; the owner's remaining permits.
    pub fn sem_release(&mut self, key: &str, owner: &str, count: u64) -> Result<u64> {
        int(self.cmd(&["SEM.RELEASE", key, owner, "COUNT", &count.to_string()])?)
    }

    // ------------------------------------------------------------ read-write lock

    /// RW.RLOCK or RW.WLOCK.
    pub fn rw_lock(
        &mut self,
        write: bool,
        key: &str,
        owner: &str,
        ttl_ms: u64,
        wait_ms: Option<u64>,
    ) -> Result<Option<u64>> {
        let name = if write { "RW.WLOCK" } else { "RW.RLOCK" };
        token(self.cmd(&acquire_args(name, key, owner, &[], ttl_ms, wait_ms, false))?)
    }

    /// RW.RUNLOCK or RW.WUNLOCK; the remaining holds on that side.
    pub fn rw_unlock(&mut self, write: bool, key: &str, owner: &str) -> Result<u64> {
        let name = if write { "RW.WUNLOCK" } else { "RW.RUNLOCK" };
        int(self.cmd(&[name, key, owner])?)
    }
}

fn acquire_args(
    name: &str,
    key: &str,
    owner: &str,
    extra: &[String],
    ttl_ms: u64,
    wait_ms: Option<u64>,
    session: bool,
) -> Vec<String> {
    let mut v = vec![name.to_string(), key.to_string(), owner.to_string()];
    v.extend(extra.iter().cloned());
    v.push(ttl_ms.to_string());
    if let Some(w) = wait_ms {
        v.extend(["WAIT".to_string(), w.to_string()]);
    }
    if session {
        v.push("SESSION".to_string());
    }
    v
}

fn token(f: Frame) -> Result<Option<u64>> {
    match f {
        Frame::Null => Ok(None),
        Frame::Integer(t) if t > 0 => Ok(Some(t as u64)),
        f => Err(Error::Protocol(format!(
            "expected a token or nil, got {f:?}"
        ))),
    }
}

fn int(f: Frame) -> Result<u64> {
    match f {
        Frame::Integer(n) if n >= 0 => Ok(n as u64),
        f => Err(Error::Protocol(format!("expected an integer, got {f:?}"))),
    }
}

/// A frame's text (simple or bulk string), lossy.
pub fn text(f: &Frame) -> String {
    match f {
        Frame::SimpleString(b) | Frame::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Frame::Integer(n) => n.to_string(),
        Frame::Error(e) => e.clone(),
        f => format!("{f:?}"),
    }
}
