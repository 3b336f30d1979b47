//! Commands and their replies over a `tumbler_client::Client`, for `tumbler top` and
//! `tumbler bench`'s administrative connection: an error reply is a frame the caller looks
//! at, and a failed call is the I/O error's own message (what both show the user).

use tumbler_client::Client;
pub use tumbler_client::Frame;

/// Sends one command and reads its reply. An error reply is `Ok(Frame::Error)`.
pub fn call<A: AsRef<[u8]>>(c: &mut Client, args: &[A]) -> std::io::Result<Frame> {
    use tumbler_client::Error;
    let io = |e| match e {
        Error::Io(e) => e,
        Error::Protocol(s) | Error::Server(s) => std::io::Error::other(s),
    };
    c.send(args).map_err(io)?;
    c.read().map_err(io)
}

/// The frame as text (bulk or simple string), lossily; empty for an array or nil.
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
