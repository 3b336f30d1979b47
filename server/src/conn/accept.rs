//! The accept loops: one per listener, each connection a task running [`super::serve`]. The
//! listeners themselves are bound in io/net (before the runtime exists, for `daemonize`).

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::io::net::{Bound, UNIX_PEER};
use crate::io::stream::Transport;
use crate::state::Shared;

/// Moves the listeners onto the current runtime and starts one accept loop each.
pub fn serve(bound: Bound, shared: &Arc<Shared>) -> io::Result<Vec<JoinHandle<()>>> {
    *shared.tls.write() = bound.tls_config.clone();
    let mut tasks = Vec::new();
    let lp = if shared
        .config
        .read()
        .get_bool(crate::config::key::EVENT_LOOP)
        && !bound.tcp.is_empty()
    {
        Some(crate::io::evloop::Loop::start(
            tokio::runtime::Handle::current(),
        )?)
    } else {
        None
    };
    for l in bound.tcp {
        let l = tokio::net::TcpListener::from_std(l)?;
        let t = Transport::Tcp;
        tasks.push(tokio::spawn(accept_tcp(shared.clone(), l, t, lp.clone())));
    }
    for l in bound.tls {
        let l = tokio::net::TcpListener::from_std(l)?;
        tasks.push(tokio::spawn(accept_tcp(
            shared.clone(),
            l,
            Transport::Tls,
            None,
        )));
    }
    if let Some((l, _)) = bound.unix {
        let l = tokio::net::UnixListener::from_std(l)?;
        tasks.push(tokio::spawn(accept_unix(shared.clone(), l)));
    }
    Ok(tasks)
}

/// Accepts connections on `listener`; with `lp`, plain TCP connections run on our own
/// event loop (`event-loop yes`, server/src/io/evloop.rs) instead of tokio's.
async fn accept_tcp(
    shared: Arc<Shared>,
    listener: tokio::net::TcpListener,
    t: Transport,
    lp: Option<crate::io::evloop::Loop>,
) {
    loop {
        match listener.accept().await {
            Ok((stream, addr)) => {
                if shared.shutting_down.load(Ordering::SeqCst) {
                    return;
                }
                let _ = stream.set_nodelay(true);
                let laddr = stream.local_addr().unwrap_or(addr);
                if t == Transport::Tls {
                    tokio::spawn(serve_tls(shared.clone(), stream, addr, laddr));
                } else if let Some(lp) = &lp {
                    let Ok(std) = stream.into_std() else {
                        continue;
                    };
                    match lp.register(std) {
                        Ok(s) => lp.spawn(super::serve(shared.clone(), s, addr, laddr, t)),
                        Err(e) => tracing::warn!("event loop: {e}"),
                    }
                } else {
                    tokio::spawn(super::serve(shared.clone(), stream, addr, laddr, t));
                }
            }
            Err(e) => backoff(e).await,
        }
    }
}

async fn accept_unix(shared: Arc<Shared>, listener: tokio::net::UnixListener) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                if shared.shutting_down.load(Ordering::SeqCst) {
                    return;
                }
                tokio::spawn(super::serve(
                    shared.clone(),
                    stream,
                    UNIX_PEER,
                    UNIX_PEER,
                    Transport::Unix,
                ));
            }
            Err(e) => backoff(e).await,
        }
    }
}

/// Runs the TLS handshake, then the connection. A failed handshake (a plaintext client, a
/// bad or missing client certificate) closes the socket, as in Redis, which logs it at
/// verbose level.
pub async fn serve_tls(
    shared: Arc<Shared>,
    stream: tokio::net::TcpStream,
    addr: SocketAddr,
    laddr: SocketAddr,
) {
    let Some(config) = shared.tls.read().clone() else {
        return;
    };
    match tokio_rustls::TlsAcceptor::from(config).accept(stream).await {
        Ok(tls) => super::serve(shared, tls, addr, laddr, Transport::Tls).await,
        Err(e) => tracing::debug!("Error accepting a client connection: {e} (addr={addr})"),
    }
}

/// Out of file descriptors and similar: back off instead of spinning.
async fn backoff(e: io::Error) {
    tracing::warn!("accept failed: {e}");
    tokio::time::sleep(Duration::from_millis(10)).await;
}
