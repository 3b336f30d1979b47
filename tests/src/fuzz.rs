//! Shared pieces of the fuzzers (tests/tests/fuzz_*.rs, docs/fuzzing.md): a strict RESP
//! reply parser, a connection that reports a closed or garbled stream as an error instead
//! of panicking (so a failing sequence can be shrunk), run settings from the environment,
//! a panic counter, and quoting for printing a reproducible command history.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;
use std::time::Duration;

/// One decoded reply. Doubles and big numbers keep their text, so comparing two replies
/// compares what went over the wire.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resp {
    Simple(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    Bulk(Vec<u8>),
    /// `$-1`, `*-1` and RESP3 `_`.
    Nil,
    NilArray,
    Array(Vec<Resp>),
    Double(Vec<u8>),
    Bool(bool),
    BigNum(Vec<u8>),
    Verbatim(Vec<u8>),
    BlobError(Vec<u8>),
    Map(Vec<(Resp, Resp)>),
    Set(Vec<Resp>),
    Push(Vec<Resp>),
}

impl Resp {
    /// The elements of an array, set or push reply (empty for anything else).
    pub fn items(&self) -> &[Resp] {
        match self {
            Resp::Array(v) | Resp::Set(v) | Resp::Push(v) => v,
            _ => &[],
        }
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Resp::Error(_) | Resp::BlobError(_))
    }

    /// A short readable form for failure messages.
    pub fn show(&self) -> String {
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match self {
            Resp::Simple(b) => format!("+{}", s(b)),
            Resp::Error(b) | Resp::BlobError(b) => format!("-{}", s(b)),
            Resp::Int(i) => format!(":{i}"),
            Resp::Bulk(b) => format!("{:?}", s(b)),
            Resp::Nil => "(nil)".into(),
            Resp::NilArray => "(nil array)".into(),
            Resp::Double(b) => format!(",{}", s(b)),
            Resp::Bool(b) => format!("#{b}"),
            Resp::BigNum(b) => format!("({}", s(b)),
            Resp::Verbatim(b) => format!("={}", s(b)),
            Resp::Array(v) | Resp::Set(v) | Resp::Push(v) => {
                let inner: Vec<String> = v.iter().map(Resp::show).collect();
                format!("[{}]", inner.join(", "))
            }
            Resp::Map(v) => {
                let inner: Vec<String> = v
                    .iter()
                    .map(|(k, v)| format!("{} => {}", k.show(), v.show()))
                    .collect();
                format!("{{{}}}", inner.join(", "))
            }
        }
    }
}

/// Deepest aggregate nesting accepted in a reply (deeper is reported as malformed).
const MAX_DEPTH: usize = 512;

/// Parses one reply off the front of `buf`, strictly: every line ends in CR LF, simple
/// strings and errors hold no CR or LF, integers and lengths are canonical decimal, bulk
/// payloads are followed by CR LF. `Ok(None)`: incomplete. `Err`: not well-formed RESP.
pub fn parse(buf: &[u8]) -> Result<Option<(Resp, usize)>, String> {
    parse_at(buf, 0, 0)
}

fn line(buf: &[u8], from: usize) -> Result<Option<(&[u8], usize)>, String> {
    let Some(p) = buf[from..].iter().position(|&b| b == b'\n') else {
        return Ok(None);
    };
    let end = from + p;
    if end == from || buf[end - 1] != b'\r' {
        return Err(format!("line at {from} ends in a bare LF"));
    }
    let l = &buf[from..end - 1];
    if l.contains(&b'\r') {
        return Err(format!("line at {from} holds a bare CR"));
    }
    Ok(Some((l, end + 1)))
}

fn int(l: &[u8]) -> Result<i64, String> {
    let s = std::str::from_utf8(l).map_err(|_| "non-ASCII integer".to_string())?;
    let v: i64 = s.parse().map_err(|_| format!("bad integer {s:?}"))?;
    if v.to_string() != s {
        return Err(format!("non-canonical integer {s:?}"));
    }
    Ok(v)
}

fn parse_at(buf: &[u8], at: usize, depth: usize) -> Result<Option<(Resp, usize)>, String> {
    if depth > MAX_DEPTH {
        return Err("reply nested too deep".into());
    }
    if at >= buf.len() {
        return Ok(None);
    }
    let Some((l, next)) = line(buf, at + 1)? else {
        return Ok(None);
    };
    let t = buf[at];
    let blob = |n: i64| -> Result<Option<(Vec<u8>, usize)>, String> {
        if n < 0 {
            return Err(format!("negative blob length {n}"));
        }
        let end = next + n as usize;
        if buf.len() < end + 2 {
            return Ok(None);
        }
        if &buf[end..end + 2] != b"\r\n" {
            return Err("blob not followed by CR LF".into());
        }
        Ok(Some((buf[next..end].to_vec(), end + 2)))
    };
    let aggregate = |n: usize, depth: usize| -> Result<Option<(Vec<Resp>, usize)>, String> {
        let mut v = Vec::with_capacity(n.min(1024));
        let mut pos = next;
        for _ in 0..n {
            match parse_at(buf, pos, depth + 1)? {
                None => return Ok(None),
                Some((r, p)) => {
                    v.push(r);
                    pos = p;
                }
            }
        }
        Ok(Some((v, pos)))
    };
    let r = match t {
        b'+' => (Resp::Simple(l.to_vec()), next),
        b'-' => (Resp::Error(l.to_vec()), next),
        b':' => (Resp::Int(int(l)?), next),
        b'_' if l.is_empty() => (Resp::Nil, next),
        b'#' if l == b"t" || l == b"f" => (Resp::Bool(l == b"t"), next),
        b',' => (Resp::Double(l.to_vec()), next),
        b'(' => (Resp::BigNum(l.to_vec()), next),
        b'$' => match int(l)? {
            -1 => (Resp::Nil, next),
            n => match blob(n)? {
                None => return Ok(None),
                Some((b, p)) => (Resp::Bulk(b), p),
            },
        },
        b'!' | b'=' => match blob(int(l)?)? {
            None => return Ok(None),
            Some((b, p)) if t == b'!' => (Resp::BlobError(b), p),
            Some((b, p)) => {
                if b.len() < 4 || b[3] != b':' {
                    return Err("verbatim string without a format prefix".into());
                }
                (Resp::Verbatim(b), p)
            }
        },
        b'*' | b'~' | b'>' => {
            let n = int(l)?;
            if n == -1 && t == b'*' {
                (Resp::NilArray, next)
            } else if n < 0 {
                return Err(format!("negative aggregate length {n}"));
            } else {
                match aggregate(n as usize, depth)? {
                    None => return Ok(None),
                    Some((v, p)) => match t {
                        b'*' => (Resp::Array(v), p),
                        b'~' => (Resp::Set(v), p),
                        _ => (Resp::Push(v), p),
                    },
                }
            }
        }
        b'%' => {
            let n = int(l)?;
            if n < 0 {
                return Err(format!("negative map length {n}"));
            }
            match aggregate(2 * n as usize, depth)? {
                None => return Ok(None),
                Some((v, p)) => {
                    let mut it = v.into_iter();
                    let mut m = Vec::new();
                    while let (Some(k), Some(v)) = (it.next(), it.next()) {
                        m.push((k, v));
                    }
                    (Resp::Map(m), p)
                }
            }
        }
        _ => return Err(format!("bad reply type byte {t:#04x} at {at}")),
    };
    Ok(Some(r))
}

/// Checks that `bytes` is a sequence of complete, well-formed replies; returns how many.
pub fn check_stream(bytes: &[u8]) -> Result<usize, String> {
    let mut at = 0;
    let mut n = 0;
    while at < bytes.len() {
        match parse(&bytes[at..])? {
            Some((_, len)) => {
                at += len;
                n += 1;
            }
            None => return Err(format!("truncated reply at byte {at} after {n} replies")),
        }
    }
    Ok(n)
}

/// A client connection whose failures are values: a fuzzer wants to report (and shrink)
/// a closed connection or a malformed reply, not panic on it.
pub struct Wire {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Wire {
    pub fn connect(addr: SocketAddr) -> Result<Wire, String> {
        let stream = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .map_err(|e| e.to_string())?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Wire {
            stream,
            buf: Vec::new(),
        })
    }

    pub fn send_bytes(&mut self, b: &[u8]) -> Result<(), String> {
        self.stream.write_all(b).map_err(|e| format!("write: {e}"))
    }

    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<(), String> {
        self.send_bytes(&crate::encode_cmd(args))
    }

    /// Reads one reply.
    pub fn read(&mut self) -> Result<Resp, String> {
        loop {
            if let Some((r, n)) = parse(&self.buf)? {
                self.buf.drain(..n);
                return Ok(r);
            }
            let mut chunk = [0u8; 65536];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err("connection closed".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(format!("read: {e}")),
            }
        }
    }

    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Resp, String> {
        self.send(args)?;
        self.read()
    }

    /// True if a reply (or EOF) is already waiting, without blocking for long.
    pub fn has_data(&mut self, wait: Duration) -> bool {
        if !self.buf.is_empty() {
            return true;
        }
        let _ = self.stream.set_read_timeout(Some(wait));
        let mut b = [0u8; 1];
        let r = matches!(self.stream.peek(&mut b), Ok(_));
        let _ = self.stream.set_read_timeout(Some(Duration::from_secs(20)));
        r
    }
}

/// Run settings read from the environment, so CI runs a fixed, bounded slice and
/// bench/fuzz-long.sh the long version of the same code.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// First seed; sequence `i` uses seed `seed + i`.
    pub seed: u64,
    /// How many sequences (or batches) to run.
    pub count: u64,
    /// Stop after this many seconds even if `count` is not reached (0: no limit).
    pub secs: u64,
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

impl Settings {
    /// `FUZZ_SEED`, `<prefix>_COUNT` (default `count`), `FUZZ_SECS` (default `secs`).
    /// `FUZZ_SEED` with `<prefix>_COUNT` unset replays exactly one sequence.
    pub fn from_env(prefix: &str, count: u64, secs: u64) -> Settings {
        let seed = env_u64("FUZZ_SEED");
        let n = env_u64(&format!("{prefix}_COUNT"));
        Settings {
            seed: seed.unwrap_or(1),
            count: n.unwrap_or(if seed.is_some() { 1 } else { count }),
            secs: env_u64("FUZZ_SECS").unwrap_or(secs),
        }
    }
}

static PANICS: AtomicUsize = AtomicUsize::new(0);
static HOOK: Once = Once::new();

/// Counts panics in this process from now on, on every thread: a panic in a server task
/// is caught by tokio and would otherwise only look like a closed connection.
pub fn count_panics() {
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            prev(info);
        }));
    });
}

pub fn panics() -> usize {
    PANICS.load(Ordering::SeqCst)
}

/// Quotes one argument the way redis-cli (and `split_line`) reads it back.
pub fn cli_quote(a: &[u8]) -> String {
    let plain = !a.is_empty()
        && a.iter()
            .all(|&c| c.is_ascii_graphic() && c != b'"' && c != b'\'' && c != b'\\');
    if plain {
        return String::from_utf8_lossy(a).into_owned();
    }
    let mut s = String::from("\"");
    for &c in a {
        match c {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            c if c.is_ascii_graphic() || c == b' ' => s.push(c as char),
            c => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s.push('"');
    s
}

/// A whole command line for a reproduction script.
pub fn cli_line<A: AsRef<[u8]>>(args: &[A]) -> String {
    let v: Vec<String> = args.iter().map(|a| cli_quote(a.as_ref())).collect();
    v.join(" ")
}

/// A Lua string literal holding exactly `a`.
pub fn lua_quote(a: &[u8]) -> String {
    let mut s = String::from("'");
    for &c in a {
        match c {
            b'\'' => s.push_str("\\'"),
            b'\\' => s.push_str("\\\\"),
            c if c.is_ascii_graphic() || c == b' ' => s.push(c as char),
            c => s.push_str(&format!("\\{c:03}")),
        }
    }
    s.push('\'');
    s
}

/// Resident set size of process `pid` in KiB, from /proc (None off Linux).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let l = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    l.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let ok = b"*3\r\n:1\r\n$-1\r\n%1\r\n+a\r\n,1.5\r\n";
        let (r, n) = parse(ok).unwrap().unwrap();
        assert_eq!(n, ok.len());
        assert_eq!(r.items().len(), 3);
        assert!(parse(b"$3\r\nab").unwrap().is_none());
        for bad in [
            &b"+a\nb\r\n"[..],
            b":01\r\n",
            b"$3\r\nabcd\r\n",
            b"?x\r\n",
            b"*-2\r\n",
        ] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(check_stream(b"+OK\r\n:1\r\n").unwrap(), 2);
        assert!(check_stream(b"+OK\r\n:1").is_err());
    }

    #[test]
    fn quoting_round_trips() {
        for a in [
            &b"plain"[..],
            b"",
            b"a b",
            b"\"q\"",
            b"\x00\xff\r\n",
            b"it's",
        ] {
            let line = cli_line(&[a]);
            assert_eq!(crate::split_line(&line), vec![a.to_vec()], "{line}");
        }
    }
}
