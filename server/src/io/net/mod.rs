//! Transports: the TCP, TLS and Unix-socket listeners, and what a connection needs from a
//! stream.
//!
//! Listeners are bound synchronously by [`bind`], before the tokio runtime exists, so that
//! `daemonize yes` can fork after binding (server/src/base/process.rs): when the parent
//! exits, the ports already accept, and `redis-cli ping` right after works.
//! `conn::accept::serve` then moves them onto the runtime and runs one accept loop each.
//!
//! Every transport ends in the same `conn::serve`, generic over [`Stream`]: TCP
//! and Unix sockets split into owned halves (no lock between reader and writer), TLS splits
//! through `tokio::io::split`. Pub/sub, blocking commands, MONITOR and everything else run
//! the same code whatever the transport.

pub mod tls;
pub mod x509;

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;

use crate::config::Config;
use crate::io::stream::{Stream, Transport};

impl Stream for tokio::net::TcpStream {
    type Read = tokio::net::tcp::OwnedReadHalf;
    type Write = tokio::net::tcp::OwnedWriteHalf;
    fn split(self) -> (Self::Read, Self::Write) {
        self.into_split()
    }
    fn arm_read(r: &mut Self::Read, cx: &mut std::task::Context<'_>) -> bool {
        // After a short read tokio has cleared the socket's readiness, so this only stores
        // the waker (no system call). Data already there is peeked and left for the read.
        let mut one = [0u8; 1];
        r.poll_peek(cx, &mut tokio::io::ReadBuf::new(&mut one))
            .is_pending()
    }
}

impl Stream for tokio::net::UnixStream {
    type Read = tokio::net::unix::OwnedReadHalf;
    type Write = tokio::net::unix::OwnedWriteHalf;
    fn split(self) -> (Self::Read, Self::Write) {
        self.into_split()
    }
}

impl Stream for tokio_rustls::server::TlsStream<tokio::net::TcpStream> {
    type Read = tokio::io::ReadHalf<Self>;
    type Write = tokio::io::WriteHalf<Self>;
    fn split(self) -> (Self::Read, Self::Write) {
        tokio::io::split(self)
    }
}

/// The address CLIENT LIST shows for a Unix-socket client (it has no IP).
pub const UNIX_PEER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);

/// Listeners bound and not yet serving.
pub struct Bound {
    pub tcp: Vec<std::net::TcpListener>,
    pub tls: Vec<std::net::TcpListener>,
    pub unix: Option<(std::os::unix::net::UnixListener, PathBuf)>,
    /// The TLS server configuration, built (certificates read) before anything listens.
    pub tls_config: Option<Arc<rustls::ServerConfig>>,
    /// Things to log: rustls cannot do some of what the TLS directives ask.
    pub warnings: Vec<String>,
}

/// One address of the `bind` directive.
#[derive(Debug, PartialEq)]
struct BindAddr {
    host: String,
    /// `-addr`: skip it if the machine does not have that address (e.g. no IPv6).
    optional: bool,
}

fn parse_bind(list: &str) -> Vec<BindAddr> {
    list.split_whitespace()
        .map(|w| {
            let (optional, host) = match w.strip_prefix('-') {
                Some(h) => (true, h),
                None => (false, w),
            };
            let host = match host {
                "*" => "0.0.0.0",
                "::*" => "::",
                h => h,
            };
            BindAddr {
                host: host.to_string(),
                optional,
            }
        })
        .collect()
}

/// Binds one TCP listener as redis-server does: SO_REUSEADDR, IPV6_V6ONLY for IPv6 (so
/// `* ::*` can both bind), `tcp-backlog`.
fn bind_tcp(addr: SocketAddr, backlog: i32) -> io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    if addr.is_ipv6() {
        sock.set_only_v6(true)?;
    }
    sock.bind(&addr.into())?;
    sock.listen(backlog)?;
    sock.set_nonblocking(true)?;
    Ok(sock.into())
}

/// One listening socket on the first address of `bind` (a node of `--nodes`): Redis' socket
/// options, nonblocking, for tokio or a duplicate.
pub fn bind_one(bind: &str, port: u16) -> io::Result<std::net::TcpListener> {
    let host = parse_bind(bind)
        .into_iter()
        .next()
        .map_or_else(|| "127.0.0.1".to_string(), |a| a.host);
    bind_tcp(resolve(&host, port)?, 511)
}

fn resolve(host: &str, port: u16) -> io::Result<SocketAddr> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::AddrNotAvailable, host.to_string()))
}

/// The OS's text for an error, without Rust's ` (os error N)`: Redis prints `strerror`.
fn os_message(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Binds every `bind` address on `port`. Port 0 picks a free port for the first address
/// and uses that same port for the others, so one number reaches them all.
fn bind_all(bind: &str, port: u16, backlog: i32) -> io::Result<Vec<std::net::TcpListener>> {
    let mut out = Vec::new();
    let mut port = port;
    for a in parse_bind(bind) {
        let addr = match resolve(&a.host, port) {
            Ok(addr) => addr,
            Err(_) if a.optional => continue,
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", a.host))),
        };
        match bind_tcp(addr, backlog) {
            Ok(l) => {
                if port == 0 {
                    port = l.local_addr()?.port();
                }
                out.push(l)
            }
            // Redis skips an optional address the machine lacks (EADDRNOTAVAIL, or no
            // IPv6 at all), and fails on anything else, such as a port in use.
            Err(e)
                if a.optional
                    && (e.kind() == io::ErrorKind::AddrNotAvailable
                        || e.raw_os_error() == Some(libc::EAFNOSUPPORT)
                        || e.raw_os_error() == Some(libc::EADDRNOTAVAIL)) =>
            {
                continue
            }
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "Could not create server TCP listening socket {addr}: bind: {}",
                        os_message(&e)
                    ),
                ))
            }
        }
    }
    if out.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            format!("none of the bind addresses '{bind}' is available"),
        ));
    }
    Ok(out)
}

/// True if TLS is on: a `tls-port` was given (an explicit 0 means a free port).
pub fn tls_enabled(cfg: &Config) -> bool {
    cfg.get_i64(crate::config::key::TLS_PORT) != 0 || cfg.is_set("tls-port")
}

/// The TLS configuration when `tls-port` asks for TLS, with what rustls cannot honour as
/// warnings; `Err` is Redis' "Failed to configure TLS" with the reason.
pub fn tls_config(cfg: &Config) -> io::Result<(Option<Arc<rustls::ServerConfig>>, Vec<String>)> {
    if !tls_enabled(cfg) {
        return Ok((None, Vec::new()));
    }
    let (c, w) =
        tls::build(cfg).map_err(|e| io::Error::other(format!("Failed to configure TLS: {e}")))?;
    Ok((Some(c), w))
}

/// Binds what the configuration asks for: `port` on every `bind` address (unless `port 0`
/// comes with a `tls-port`, which means TLS only, as in Redis; otherwise `port 0` is a free
/// port), `tls-port` likewise, and `unixsocket`.
pub fn bind(cfg: &Config) -> io::Result<Bound> {
    let bind = cfg.get(crate::config::key::BIND).to_string();
    let backlog = cfg
        .get_i64(crate::config::key::TCP_BACKLOG)
        .clamp(1, i32::MAX as i64) as i32;
    let tls_on = tls_enabled(cfg);
    let (tls_config, warnings) = tls_config(cfg)?;
    let port = cfg.get_i64(crate::config::key::PORT) as u16;
    let tcp = if tls_on && port == 0 && cfg.is_set("port") {
        Vec::new()
    } else {
        bind_all(&bind, port, backlog)?
    };
    let tls = if tls_on {
        bind_all(
            &bind,
            cfg.get_i64(crate::config::key::TLS_PORT) as u16,
            backlog,
        )?
    } else {
        Vec::new()
    };
    let unix = match cfg.get(crate::config::key::UNIXSOCKET) {
        "" => None,
        path => Some(bind_unix(
            path,
            cfg.get(crate::config::key::UNIXSOCKETPERM),
        )?),
    };
    Ok(Bound {
        tcp,
        tls,
        unix,
        tls_config,
        warnings,
    })
}

/// Binds the Unix socket, replacing a stale socket file (as redis-server does), and applies
/// `unixsocketperm` (octal; 0 leaves the umask's mode).
fn bind_unix(path: &str, perm: &str) -> io::Result<(std::os::unix::net::UnixListener, PathBuf)> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let p = PathBuf::from(path);
    if let Ok(m) = std::fs::symlink_metadata(&p) {
        if m.file_type().is_socket() {
            let _ = std::fs::remove_file(&p);
        }
    }
    let l = std::os::unix::net::UnixListener::bind(&p)
        .map_err(|e| io::Error::new(e.kind(), format!("Failed opening Unix socket: {e}")))?;
    l.set_nonblocking(true)?;
    let mode = u32::from_str_radix(perm, 8).unwrap_or(0);
    if mode != 0 {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))?;
    }
    Ok((l, p))
}

/// Where a running server listens.
#[derive(Debug, Clone, Default)]
pub struct Addrs {
    pub tcp: Vec<SocketAddr>,
    pub tls: Vec<SocketAddr>,
    pub unix: Option<PathBuf>,
}

impl Bound {
    pub fn addrs(&self) -> Addrs {
        Addrs {
            tcp: self
                .tcp
                .iter()
                .filter_map(|l| l.local_addr().ok())
                .collect(),
            tls: self
                .tls
                .iter()
                .filter_map(|l| l.local_addr().ok())
                .collect(),
            unix: self.unix.as_ref().map(|(_, p)| p.clone()),
        }
    }
}

/// Redis 7's protected mode: with `protected-mode yes` and no password for the default
/// user (`nopass`), only loopback and Unix-socket clients may connect (whatever `bind`
/// says); others get [`DENIED`] and are disconnected.
pub fn protected_mode_denies(
    protected_mode: bool,
    default_user_nopass: bool,
    peer: SocketAddr,
    t: Transport,
) -> bool {
    protected_mode && default_user_nopass && t != Transport::Unix && !is_local(peer.ip())
}

fn is_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6 == Ipv6Addr::LOCALHOST || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Redis 7.0's reply to a non-local client in protected mode, byte for byte.
pub const DENIED: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_list_with_optional_and_wildcards() {
        let b = parse_bind("127.0.0.1 -::1 * -::*");
        let hosts: Vec<(&str, bool)> = b.iter().map(|a| (a.host.as_str(), a.optional)).collect();
        assert_eq!(
            hosts,
            vec![
                ("127.0.0.1", false),
                ("::1", true),
                ("0.0.0.0", false),
                ("::", true)
            ]
        );
    }

    #[test]
    fn protected_mode_lets_only_local_clients_in_without_a_password() {
        let remote: SocketAddr = "192.0.2.7:5000".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let local6: SocketAddr = "[::1]:5000".parse().unwrap();
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:5000".parse().unwrap();
        let denies = |on, nopass, peer, t| protected_mode_denies(on, nopass, peer, t);
        assert!(denies(true, true, remote, Transport::Tcp));
        assert!(denies(true, true, remote, Transport::Tls));
        for ok in [local, local6, mapped] {
            assert!(!denies(true, true, ok, Transport::Tcp));
        }
        assert!(!denies(true, true, UNIX_PEER, Transport::Unix));
        // A password for the default user, or protected-mode no, lets remote clients in.
        assert!(!denies(true, false, remote, Transport::Tcp));
        assert!(!denies(false, true, remote, Transport::Tcp));
    }

    #[test]
    fn port_zero_binds_one_free_port_on_every_address() {
        let ls = bind_all("127.0.0.1 -127.0.0.2", 0, 16).unwrap();
        let ports: Vec<u16> = ls.iter().map(|l| l.local_addr().unwrap().port()).collect();
        assert!(
            ports[0] != 0 && ports.iter().all(|p| *p == ports[0]),
            "{ports:?}"
        );
        // A required address the machine lacks fails; an optional one is skipped.
        assert!(bind_all("192.0.2.1", 0, 16).is_err());
        assert_eq!(bind_all("127.0.0.1 -192.0.2.1", 0, 16).unwrap().len(), 1);
    }
}
