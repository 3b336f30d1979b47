//! What the connection task reads and writes: a transport kind and a splittable stream,
//! implemented by tokio's sockets, TLS (net/tls.rs) and the event loop's sockets (evloop.rs).

use tokio::io::{AsyncRead, AsyncWrite};

/// How a client reached the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Tcp,
    Tls,
    Unix,
}

/// A connected byte stream the connection task can split into a reader and a writer.
pub trait Stream: Send + 'static {
    type Read: AsyncRead + Unpin + Send;
    type Write: AsyncWrite + Unpin + Send;
    fn split(self) -> (Self::Read, Self::Write);
    /// Registers `cx`'s waker for the next data on `r` without reading it, so that data
    /// arriving while the task is busy still wakes it (`arrival.rs`). Returns true when the
    /// waker is stored and no data is there yet: until it is woken, a read would only
    /// find nothing. The default does nothing and returns false (the next read registers
    /// the waker).
    fn arm_read(_r: &mut Self::Read, _cx: &mut std::task::Context<'_>) -> bool {
        false
    }
    /// Whether the stream's reactor runs connections in the order their data arrived
    /// already (our own event loop, `evloop.rs`), so `arrival.rs`' tickets are not needed.
    const LOOP_ORDERED: bool = false;
    /// For a [`Self::LOOP_ORDERED`] stream: whether other connections are queued to run.
    fn others_waiting() -> Option<bool> {
        None
    }
}
