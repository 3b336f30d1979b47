//! The typed reply of a command, encoded per connection as RESP2 or RESP3.
//!
//! Handlers return a [`Reply`]; they never write bytes. The same value is handed straight to
//! Lua by the scripting bridge, without a round trip through RESP.

use crate::num::DoubleFmt;
use bytes::{BufMut, Bytes, BytesMut};
use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `+OK`
    Simple(Cow<'static, str>),
    /// `-ERR ...`: the full text, without the leading `-`.
    Error(Cow<'static, str>),
    Int(i64),
    Bulk(Bytes),
    /// Null bulk string (`$-1` in RESP2, `_` in RESP3).
    Null,
    /// Null array (`*-1` in RESP2, `_` in RESP3).
    NullArray,
    Array(Vec<Reply>),
    /// Key/value pairs; a flat array in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// An array in RESP2.
    Set(Vec<Reply>),
    /// A bulk string in RESP2.
    Double(f64),
    /// A double printed as Redis' addReplyHumanLongDouble does (17 decimals, trailing
    /// zeros cut: GEOPOS coordinates); a bulk string in RESP2.
    HumanDouble(f64),
    /// `:1`/`:0` in RESP2.
    Bool(bool),
    /// `=` in RESP3 (format, text); a bulk string in RESP2.
    Verbatim(&'static str, Bytes),
    /// `(` in RESP3; a bulk string in RESP2.
    BigNumber(Bytes),
    /// Out-of-band message (`>` in RESP3, an array in RESP2).
    Push(Vec<Reply>),
    /// Nothing is written (CLIENT REPLY OFF/SKIP, commands that reply later).
    NoReply,
}

pub const OK: Reply = Reply::Simple(Cow::Borrowed("OK"));
pub const QUEUED: Reply = Reply::Simple(Cow::Borrowed("QUEUED"));

impl Reply {
    pub fn ok() -> Reply {
        OK
    }
    pub fn simple(s: &'static str) -> Reply {
        Reply::Simple(Cow::Borrowed(s))
    }
    pub fn err(s: impl Into<Cow<'static, str>>) -> Reply {
        Reply::Error(s.into())
    }
    pub fn bulk(b: impl Into<Bytes>) -> Reply {
        Reply::Bulk(b.into())
    }
    pub fn bulk_str(s: &str) -> Reply {
        Reply::Bulk(Bytes::copy_from_slice(s.as_bytes()))
    }
    pub fn opt_bulk(b: Option<Bytes>) -> Reply {
        b.map(Reply::Bulk).unwrap_or(Reply::Null)
    }
    pub fn bulks<I: IntoIterator<Item = Bytes>>(it: I) -> Reply {
        Reply::Array(it.into_iter().map(Reply::Bulk).collect())
    }
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// Appends the RESP2 (`resp3 == false`) or RESP3 encoding of `self` to `out`, doubles as
    /// Redis 7.0 prints them.
    pub fn encode(&self, out: &mut BytesMut, resp3: bool) {
        self.encode_fmt(out, resp3, DoubleFmt::Printf17g)
    }

    /// [`Reply::encode`] with doubles printed as `fmt` says (the personality's).
    pub fn encode_fmt(&self, out: &mut BytesMut, resp3: bool, fmt: DoubleFmt) {
        match self {
            // Like Redis (sdsmapchars on script statuses, addReplyErrorLength's scan), a CR or
            // LF in a status or error line becomes a space: user text can never end the
            // line early and forge the next reply.
            Reply::Simple(s) => safe_line(out, b'+', s.as_bytes()),
            // Errors also lose trailing CR/LF first (addReplyErrorFormat's sdstrim).
            Reply::Error(s) => safe_line(out, b'-', s.trim_end_matches(['\r', '\n']).as_bytes()),
            Reply::Int(i) => int_line(out, b':', *i),
            Reply::Bulk(b) => bulk(out, b),
            Reply::Null => out.put_slice(if resp3 { b"_\r\n" } else { b"$-1\r\n" }),
            Reply::NullArray => out.put_slice(if resp3 { b"_\r\n" } else { b"*-1\r\n" }),
            Reply::Array(items) => {
                int_line(out, b'*', items.len() as i64);
                for r in items {
                    r.encode_fmt(out, resp3, fmt);
                }
            }
            Reply::Set(items) => {
                int_line(out, if resp3 { b'~' } else { b'*' }, items.len() as i64);
                for r in items {
                    r.encode_fmt(out, resp3, fmt);
                }
            }
            Reply::Push(items) => {
                int_line(out, if resp3 { b'>' } else { b'*' }, items.len() as i64);
                for r in items {
                    r.encode_fmt(out, resp3, fmt);
                }
            }
            Reply::Map(pairs) => {
                if resp3 {
                    int_line(out, b'%', pairs.len() as i64);
                } else {
                    int_line(out, b'*', 2 * pairs.len() as i64);
                }
                for (k, v) in pairs {
                    k.encode_fmt(out, resp3, fmt);
                    v.encode_fmt(out, resp3, fmt);
                }
            }
            Reply::Double(_) | Reply::HumanDouble(_) => {
                let s = match self {
                    Reply::HumanDouble(d) => fmt.human(*d),
                    Reply::Double(d) => fmt.double(*d),
                    _ => unreachable!(),
                };
                if resp3 {
                    line(out, b',', s.as_bytes())
                } else {
                    bulk(out, s.as_bytes())
                }
            }
            Reply::Bool(b) => {
                if resp3 {
                    out.put_slice(if *b { b"#t\r\n" } else { b"#f\r\n" })
                } else {
                    out.put_slice(if *b { b":1\r\n" } else { b":0\r\n" })
                }
            }
            Reply::Verbatim(fmt, text) => {
                if resp3 {
                    int_line(out, b'=', (text.len() + 4) as i64);
                    out.put_slice(fmt.as_bytes());
                    out.put_u8(b':');
                    out.put_slice(text);
                    out.put_slice(b"\r\n");
                } else {
                    bulk(out, text)
                }
            }
            Reply::BigNumber(n) => {
                if resp3 {
                    safe_line(out, b'(', n)
                } else {
                    bulk(out, n)
                }
            }
            Reply::NoReply => {}
        }
    }

    pub fn to_bytes(&self, resp3: bool) -> Bytes {
        let mut b = BytesMut::new();
        self.encode(&mut b, resp3);
        b.freeze()
    }
}

/// `s` quoted as Redis' `sdscatrepr` quotes it (MONITOR, CLIENT LIST, config files, logs):
/// `"..."` with `\\`, `\"`, `\n`, `\r`, `\t`, `\a`, `\b` escapes and `\xhh` for the other
/// bytes that are not printable ASCII.
pub fn repr(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for &b in s {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            b' '..=b'~' => out.push(b as char),
            _ => {
                let _ = std::fmt::Write::write_fmt(&mut out, format_args!("\\x{b:02x}"));
            }
        }
    }
    out.push('"');
    out
}

impl From<i64> for Reply {
    fn from(i: i64) -> Self {
        Reply::Int(i)
    }
}

impl From<Bytes> for Reply {
    fn from(b: Bytes) -> Self {
        Reply::Bulk(b)
    }
}

fn line(out: &mut BytesMut, tag: u8, s: &[u8]) {
    out.reserve(s.len() + 3);
    out.put_u8(tag);
    out.put_slice(s);
    out.put_slice(b"\r\n");
}

/// A line whose text may come from a user: CR and LF are written as spaces.
fn safe_line(out: &mut BytesMut, tag: u8, s: &[u8]) {
    let start = out.len() + 1;
    line(out, tag, s);
    if s.iter().any(|&c| c == b'\r' || c == b'\n') {
        for c in &mut out[start..start + s.len()] {
            if *c == b'\r' || *c == b'\n' {
                *c = b' ';
            }
        }
    }
}

fn int_line(out: &mut BytesMut, tag: u8, i: i64) {
    let mut buf = itoa::Buffer::new();
    let s = buf.format(i);
    out.reserve(s.len() + 3);
    out.put_u8(tag);
    out.put_slice(s.as_bytes());
    out.put_slice(b"\r\n");
}

fn bulk(out: &mut BytesMut, b: &[u8]) {
    out.reserve(b.len() + 16);
    int_line(out, b'$', b.len() as i64);
    out.put_slice(b);
    out.put_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_quotes_like_sdscatrepr() {
        assert_eq!(repr(b"a b"), "\"a b\"");
        assert_eq!(repr(b"\"\n\x01"), "\"\\\"\\n\\x01\"");
        assert_eq!(repr(b"\x07\x08\\\xff"), "\"\\a\\b\\\\\\xff\"");
    }

    fn enc(r: &Reply, resp3: bool) -> String {
        String::from_utf8(r.to_bytes(resp3).to_vec()).unwrap()
    }

    #[test]
    fn encodes_both_protocols() {
        assert_eq!(enc(&Reply::Null, false), "$-1\r\n");
        assert_eq!(enc(&Reply::Null, true), "_\r\n");
        assert_eq!(enc(&Reply::NullArray, false), "*-1\r\n");
        let m = Reply::Map(vec![(Reply::bulk_str("a"), Reply::Int(1))]);
        assert_eq!(enc(&m, false), "*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&m, true), "%1\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&Reply::Bool(true), false), ":1\r\n");
        assert_eq!(enc(&Reply::Double(1.5), true), ",1.5\r\n");
        assert_eq!(enc(&Reply::err("ERR x\r\ny"), false), "-ERR x  y\r\n");
        assert_eq!(enc(&Reply::err("ERR x\r\n:1\r\n"), false), "-ERR x  :1\r\n");
        let forged = Reply::Simple("OK\r\n:1\r\n".to_string().into());
        assert_eq!(enc(&forged, false), "+OK  :1  \r\n");
        let big = Reply::BigNumber(Bytes::from_static(b"1\r\n2"));
        assert_eq!(enc(&big, true), "(1  2\r\n");
    }
}
