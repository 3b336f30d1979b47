//! A blocking RESP2 client for `tumbler top`: one connection, one command at a time.
//! Replies are decoded by the `redis-protocol` crate.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use redis_protocol::resp2::decode::decode;
pub use redis_protocol::resp2::types::OwnedFrame as Frame;

/// Anything the client can talk over: a TCP stream, or TLS over one (`tumbler bench`).
pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

pub struct Client {
    stream: Box<dyn Stream>,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(host: &str, port: u16) -> std::io::Result<Client> {
        Ok(Client::over(Client::tcp(host, port)?))
    }

    /// The TCP connection `connect` makes (timeouts set, Nagle off), for a caller that
    /// wraps it before use.
    pub fn tcp(host: &str, port: u16) -> std::io::Result<TcpStream> {
        use std::net::ToSocketAddrs;
        let addr = (host, port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| std::io::Error::other("no address"))?;
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    pub fn over(stream: impl Stream + 'static) -> Client {
        Client {
            stream: Box::new(stream),
            buf: Vec::new(),
        }
    }

    /// Sends one command and reads its reply. An error reply is `Ok(Frame::Error)`.
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> std::io::Result<Frame> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            let a = a.as_ref();
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.stream.write_all(&out)?;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match decode(&self.buf) {
                Ok(Some((frame, n))) => {
                    self.buf.drain(..n);
                    return Ok(frame);
                }
                Ok(None) => {}
                Err(e) => return Err(std::io::Error::other(e.to_string())),
            }
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// The frame as text (bulk or simple string), lossily.
pub fn text(f: &Frame) -> String {
    match f {
        Frame::SimpleString(b) | Frame::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Frame::Integer(i) => i.to_string(),
        Frame::Error(e) => e.clone(),
        _ => String::new(),
    }
}

pub fn int(f: &Frame) -> Option<i64> {
    match f {
        Frame::Integer(i) => Some(*i),
        Frame::BulkString(b) | Frame::SimpleString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        _ => None,
    }
}

/// A RESP2 map reply (a flat array of name, value pairs) as pairs.
pub fn pairs(f: &Frame) -> Vec<(String, &Frame)> {
    match f {
        Frame::Array(items) => items
            .chunks(2)
            .filter(|c| c.len() == 2)
            .map(|c| (text(&c[0]), &c[1]))
            .collect(),
        _ => Vec::new(),
    }
}
