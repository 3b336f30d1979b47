//! The request side of RESP: multibulk and inline commands, with Redis' limits and exact
//! protocol errors.
//!
//! Parsing is two-phase in spirit: [`parse`] first walks the buffer, checking headers and
//! jumping over bulk payloads by their declared length, and only when a whole command is
//! present does it copy the arguments out, each into its own allocation. An
//! incomplete command is the ordinary `Ok(None)`, never an error. A declared length is never
//! allocated up front, so a client cannot make the server reserve memory it did not send.
//!
//! Replies are encoded by `lockcore::Reply::encode`; the `redis-protocol` crate decodes
//! replies on the client side (tests, the Rust client), where its full RESP3 frame model
//! fits. Requests are only ever arrays of bulk strings or inline text, and Redis' exact
//! error texts and limits are part of the contract, so that side is parsed here.

use bytes::{Buf, Bytes, BytesMut};
use lockcore::CommandSpec;

/// Longest line (inline command, or a `*`/`$` header) Redis accepts: PROTO_INLINE_MAX_SIZE.
pub const INLINE_MAX: usize = 64 * 1024;
/// Before AUTH, Redis refuses multibulk counts over 10 and bulk lengths over 16 KiB.
pub const UNAUTH_MAX_ARGS: i64 = 10;
pub const UNAUTH_MAX_BULK: i64 = 16 * 1024;
/// Largest argument count Redis accepts (INT_MAX); we also cap it by the query limit.
pub const MAX_MULTIBULK: i64 = i32::MAX as i64;

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_bulk: i64,
    pub authenticated: bool,
}

/// A protocol error: the text (without `-`) to send before closing the connection.
#[derive(Debug, PartialEq)]
pub struct ProtoError(pub String);

fn perr(s: impl Into<String>) -> ProtoError {
    ProtoError(format!("ERR Protocol error: {}", s.into()))
}

/// Where a `*`/`$` header line ends, found the way Redis finds it: the first CR after
/// `from` (Redis' `strchr`, so a NUL before it hides it), with at least one byte after it,
/// which Redis then skips without checking that it is an LF. Returns the CR's index;
/// `None` means "wait for more data" (or too big, by the caller's size check).
fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let hay = &buf[from..];
    let at = hay.iter().position(|&c| c == b'\r' || c == 0)?;
    if hay[at] == 0 || at + 1 >= hay.len() {
        return None;
    }
    Some(from + at)
}

fn memchr(c: u8, s: &[u8]) -> Option<usize> {
    s.iter().position(|&b| b == c)
}

/// The common header: `prefix`, one to nine digits without a leading zero, and a `\r`
/// with at least one byte after it. Its value and the position of its `\r`, which is what
/// [`find_crlf`] and [`header_int`] give for it, in one pass over the bytes; `None` for
/// anything else, which goes to those two.
#[inline(always)]
fn short_header(buf: &[u8], pos: usize, prefix: u8) -> Option<(i64, usize)> {
    let h = buf.get(pos..)?;
    let (&[p, d0], rest) = h.split_first_chunk::<2>()?;
    if p != prefix || !(b'1'..=b'9').contains(&d0) {
        return None;
    }
    let mut n = (d0 - b'0') as i64;
    // One digit, as most argument counts and many lengths are.
    if let [b'\r', _, ..] = rest {
        return Some((n, pos + 2));
    }
    for (i, &c) in rest.iter().enumerate().take(9) {
        match c {
            b'0'..=b'9' if i < 8 => n = n * 10 + (c - b'0') as i64,
            b'\r' if i + 1 < rest.len() => return Some((n, pos + 2 + i)),
            _ => return None,
        }
    }
    None
}

/// The key each of the next commands in `buf` will most likely look up, for the keyspace
/// to prefetch (`Conn::process_buffer`): the second argument, or the fourth for EVAL,
/// EVALSHA and FCALL (after the script and the key count). A guess from the shape alone
/// that reads and changes nothing: it looks at `out.len()` commands at most, skips one
/// with no such argument, and stops at anything but a complete multibulk command with plain
/// headers. Returns how many keys it put in `out` and how many commands it looked at.
pub fn peek_keys<'b>(buf: &'b [u8], out: &mut [&'b [u8]]) -> (usize, usize) {
    let (mut keys, mut pos) = (0, 0);
    for seen in 0..out.len() {
        let Some((argc, cr)) = short_header(buf, pos, b'*') else {
            return (keys, seen);
        };
        pos = cr + 2;
        let (mut key_at, mut key) = (1, None);
        for i in 0..argc {
            let Some((len, cr)) = short_header(buf, pos, b'$') else {
                return (keys, seen);
            };
            let start = cr + 2;
            let end = start + len as usize;
            let Some(arg) = buf.get(start..end).filter(|_| end + 2 <= buf.len()) else {
                return (keys, seen);
            };
            if i == 0 && is_script_call(arg) {
                key_at = 3;
            } else if i == key_at {
                key = Some(arg);
            }
            pos = end + 2;
        }
        if let Some(k) = key {
            out[keys] = k;
            keys += 1;
        }
    }
    (keys, out.len())
}

/// The commands that run a script: their keys follow the script and a key count, and
/// their short arguments are packed (`packed_args`).
const SCRIPT_CALLS: [&str; 6] = [
    "evalsha",
    "eval",
    "fcall",
    "evalsha_ro",
    "eval_ro",
    "fcall_ro",
];

fn is_script_call(name: &[u8]) -> bool {
    SCRIPT_CALLS
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n.as_bytes()))
}

/// Parses an integer header as Redis' `string2ll` does.
#[inline]
fn header_int(s: &[u8]) -> Option<i64> {
    // Nearly every header is a few digits without a sign or a leading zero: those are
    // summed here (no overflow below 10 digits); the rest go through parse_i64.
    if let [b'1'..=b'9', rest @ ..] = s {
        if rest.len() < 9 && rest.iter().all(u8::is_ascii_digit) {
            return Some(s.iter().fold(0, |n, &c| n * 10 + (c - b'0') as i64));
        }
    }
    lockcore::num::parse_i64(s)
}

/// Takes one complete command off the front of `buf`.
///
/// Returns `Ok(None)` if more bytes are needed, `Ok(Some(argv))` for a command (possibly
/// empty: an empty inline line or `*0`, which the caller skips).
pub fn parse(buf: &mut BytesMut, lim: Limits) -> Result<Option<Vec<Bytes>>, ProtoError> {
    let mut argv = Vec::new();
    Ok(parse_into(buf, lim, &mut argv, &mut NameCache::default())?.then_some(argv))
}

/// A connection's last command name as static bytes, and its command. Nearly every
/// argument is copied into an allocation of its own (see [`parse`]), but a command's name
/// is never stored: a name spelled as a command is spelled, all lowercase or all uppercase
/// (what clients send), is handed out as `Bytes::from_static` of the command table's
/// spelling (`lockcore::commands::static_spelling`), and a pipeline of the same command
/// compares it with the previous name, allocating nothing for it and
/// (`NameCache::command`) not looking the command up again. Other spellings (`Get`), and
/// names that are no command, are copied and looked up as before.
#[derive(Debug, Default)]
pub struct NameCache {
    last: &'static [u8],
    spec: Option<&'static CommandSpec>,
}

impl NameCache {
    fn name(&mut self, name: &[u8]) -> Bytes {
        if !name.is_empty() && name == self.last {
            return Bytes::from_static(self.last);
        }
        match lockcore::commands::static_spelling(name) {
            Some((s, spec)) => {
                self.last = s;
                self.spec = Some(spec);
                Bytes::from_static(s)
            }
            None => Bytes::copy_from_slice(name),
        }
    }

    /// The top-level command `name` (a command's `argv[0]`) names, as
    /// `lockcore::commands::lookup` finds it: without a lookup when `name` is the static
    /// spelling this cache handed out last.
    #[inline]
    pub fn command(&self, name: &Bytes) -> Option<&'static CommandSpec> {
        if !self.last.is_empty()
            && name.as_ptr() == self.last.as_ptr()
            && name.len() == self.last.len()
        {
            return self.spec;
        }
        lockcore::commands::lookup(name)
    }
}

/// An argument after the name: its own allocation, except the empty string and single
/// bytes ("0", "1", a numkeys), which are static and cost no allocation.
#[inline]
fn arg_bytes(a: &[u8]) -> Bytes {
    static BYTES: [u8; 256] = {
        let mut t = [0u8; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = i as u8;
            i += 1;
        }
        t
    };
    match a {
        [] => Bytes::new(),
        [b] => Bytes::from_static(std::slice::from_ref(&BYTES[*b as usize])),
        _ => Bytes::copy_from_slice(a),
    }
}

/// The arguments of a short script command (EVALSHA, EVAL, FCALL and their `_RO` forms),
/// copied into one allocation that every argument shares, instead of one allocation each.
/// A script passes its keys and arguments to each `redis.call`, and cloning an argument
/// that has an allocation of its own allocates again (`Bytes` makes a shared header on the
/// first clone), so for a lock script this is one allocation and one free instead of
/// about seven of each. The cost: a value a script stores as it came (a stream field or
/// value, or a string or hash value of `inline::SHARE_MIN` bytes or more; keys, members,
/// elements and shorter strings are copied) keeps the whole allocation alive, which is why
/// only commands whose arguments fit in `PACK_MAX` bytes are packed.
/// False (and nothing pushed) for longer ones.
fn packed_args(buf: &[u8], spans: &[(usize, usize)], argv: &mut Vec<Bytes>) -> bool {
    let total: usize = spans.iter().map(|&(s, e)| e - s).sum();
    match total {
        0..=64 => pack::<64>(buf, spans, argv),
        65..=128 => pack::<128>(buf, spans, argv),
        129..=PACK_MAX => pack::<PACK_MAX>(buf, spans, argv),
        _ => return false,
    }
    true
}

/// The longest arguments (in total) [`packed_args`] packs.
const PACK_MAX: usize = 256;

fn pack<const N: usize>(buf: &[u8], spans: &[(usize, usize)], argv: &mut Vec<Bytes>) {
    let mut block = [0u8; N];
    let mut at = 0;
    for &(s, e) in spans {
        block[at..at + e - s].copy_from_slice(&buf[s..e]);
        at += e - s;
    }
    // One allocation: the reference count and the block itself (`Bytes::from_owner`).
    let whole = Bytes::from_owner(block);
    let mut at = 0;
    for &(s, e) in spans {
        let len = e - s;
        // Empty and one-byte arguments (`numkeys`, mostly) keep their static spellings.
        argv.push(if len <= 1 {
            arg_bytes(&buf[s..e])
        } else {
            whole.slice(at..at + len)
        });
        at += len;
    }
}

/// [`parse`] into `argv` (cleared first), so a connection reuses one vector's allocation
/// for every command: true when a command was taken (`argv` may be empty, see [`parse`]).
/// `names` is the connection's [`NameCache`].
pub fn parse_into(
    buf: &mut BytesMut,
    lim: Limits,
    argv: &mut Vec<Bytes>,
    names: &mut NameCache,
) -> Result<bool, ProtoError> {
    argv.clear();
    if buf.is_empty() {
        return Ok(false);
    }
    if buf[0] == b'*' {
        parse_multibulk(buf, lim, argv, names)
    } else {
        parse_inline(buf, argv)
    }
}

/// Commands with up to this many arguments keep their spans on the stack while parsed.
const SHORT_ARGS: usize = 8;

fn parse_multibulk(
    buf: &mut BytesMut,
    lim: Limits,
    argv: &mut Vec<Bytes>,
    names: &mut NameCache,
) -> Result<bool, ProtoError> {
    let (n, eol) = match short_header(buf, 0, b'*') {
        Some(h) => h,
        None => {
            let Some(eol) = find_crlf(buf, 0) else {
                if buf.len() > INLINE_MAX {
                    return Err(perr("too big mbulk count string"));
                }
                return Ok(false);
            };
            match header_int(&buf[1..eol]) {
                Some(n) => (n, eol),
                None => return Err(perr("invalid multibulk length")),
            }
        }
    };
    if n > MAX_MULTIBULK {
        return Err(perr("invalid multibulk length"));
    }
    if !lim.authenticated && n > UNAUTH_MAX_ARGS {
        return Err(perr("unauthenticated multibulk length"));
    }
    let mut pos = eol + 2;
    if n <= 0 {
        let _ = buf.split_to(pos);
        return Ok(true);
    }
    // Phase one: walk the headers and check that every argument is here. The spans of a
    // short command (nearly all of them) stay on the stack: one allocation less per command.
    let mut short = [(0usize, 0usize); SHORT_ARGS];
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for i in 0..n as usize {
        let (len, eol) = match short_header(buf, pos, b'$') {
            Some(h) => h,
            None => {
                if pos >= buf.len() {
                    return Ok(false);
                }
                let Some(eol) = find_crlf(buf, pos) else {
                    if buf.len() - pos > INLINE_MAX {
                        return Err(perr("too big bulk count string"));
                    }
                    return Ok(false);
                };
                if buf[pos] != b'$' {
                    return Err(perr(format!("expected '$', got '{}'", buf[pos] as char)));
                }
                match header_int(&buf[pos + 1..eol]) {
                    Some(l) => (l, eol),
                    None => return Err(perr("invalid bulk length")),
                }
            }
        };
        let len = match len {
            l if l >= 0 && l <= lim.max_bulk => l as usize,
            _ => return Err(perr("invalid bulk length")),
        };
        if !lim.authenticated && len as i64 > UNAUTH_MAX_BULK {
            return Err(perr("unauthenticated bulk length"));
        }
        let start = eol + 2;
        let end = start + len;
        if buf.len() < end + 2 {
            // Grow towards the declared size only as data arrives, a megabyte at a time.
            let want = (end + 2 - buf.len()).min(1 << 20);
            buf.reserve(want);
            return Ok(false);
        }
        if i < SHORT_ARGS {
            short[i] = (start, end);
        } else {
            if i == SHORT_ARGS {
                spans.reserve((n as usize).min(1024));
                spans.extend_from_slice(&short);
            }
            spans.push((start, end));
        }
        pos = end + 2;
    }
    let spans = if n as usize <= SHORT_ARGS {
        &short[..n as usize]
    } else {
        &spans[..]
    };
    // Phase two: copy each argument into an allocation of its own, then drop the frame.
    // Slicing the read buffer instead would save a copy, but every key and value stored
    // from it would then keep the whole buffer alive for as long as it lives. The name and
    // one-byte arguments come from static spellings (`NameCache`, `arg_bytes`).
    let (&(s0, e0), rest) = spans.split_first().expect("n > 0 arguments");
    argv.push(names.name(&buf[s0..e0]));
    let script = names
        .command(&argv[0])
        .is_some_and(|c| SCRIPT_CALLS.contains(&c.name));
    if !(script && packed_args(buf, rest, argv)) {
        argv.extend(rest.iter().map(|&(s, e)| arg_bytes(&buf[s..e])));
    }
    buf.advance(pos);
    Ok(true)
}

fn parse_inline(buf: &mut BytesMut, argv: &mut Vec<Bytes>) -> Result<bool, ProtoError> {
    // Redis looks for the LF with `strchr`: a NUL before it hides it, and the request
    // then waits for more data until it is too big.
    let nl = buf.iter().position(|&c| c == b'\n' || c == 0);
    let Some(nl) = nl.filter(|&i| buf[i] == b'\n') else {
        if buf.len() > INLINE_MAX {
            return Err(perr("too big inline request"));
        }
        return Ok(false);
    };
    // Redis reads 16 KiB at a time and gives up once 64 KiB hold no LF, so whether a line
    // a little over 64 KiB passes depends on how the bytes arrived; any longer line never
    // does. Refusing every line over the limit is deterministic and agrees with that.
    if nl > INLINE_MAX {
        return Err(perr("too big inline request"));
    }
    let line = buf.split_to(nl + 1);
    let mut text = &line[..nl];
    if text.last() == Some(&b'\r') {
        text = &text[..text.len() - 1];
    }
    match split_args(text) {
        Some(args) => {
            argv.extend(args.into_iter().map(Bytes::from));
            Ok(true)
        }
        None => Err(perr("unbalanced quotes in request")),
    }
}

/// C's `isspace`.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Splits a line into arguments like Redis' `sdssplitargs`: spaces separate, double quotes
/// allow `\n`, `\xHH` escapes, single quotes allow `\'`. A closing quote must be followed by
/// a space or the end. `None` on unbalanced quotes.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    // sdssplitargs works on a C string: a NUL byte ends the input.
    let line = match memchr(0, line) {
        Some(z) => &line[..z],
        None => line,
    };
    let mut out = Vec::new();
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && is_space(line[i]) {
            i += 1;
        }
        if i >= n {
            return Some(out);
        }
        let mut cur = Vec::new();
        let (mut inq, mut insq) = (false, false);
        loop {
            if inq {
                if i >= n {
                    return None;
                }
                let c = line[i];
                if c == b'\\'
                    && i + 3 < n
                    && line[i + 1] == b'x'
                    && hex(line[i + 2]).is_some()
                    && hex(line[i + 3]).is_some()
                {
                    cur.push(hex(line[i + 2]).unwrap() * 16 + hex(line[i + 3]).unwrap());
                    i += 3;
                } else if c == b'\\' && i + 1 < n {
                    i += 1;
                    cur.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        o => o,
                    });
                } else if c == b'"' {
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return None;
                    }
                    inq = false;
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else if insq {
                if i >= n {
                    return None;
                }
                let c = line[i];
                if c == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    i += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return None;
                    }
                    insq = false;
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else {
                if i >= n {
                    break;
                }
                // Inside a word sdssplitargs stops only at these four (and NUL); \v and \f,
                // which `isspace` skips between words, are part of the word.
                match line[i] {
                    b' ' | b'\n' | b'\r' | b'\t' => {
                        break;
                    }
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    c => cur.push(c),
                }
            }
            i += 1;
        }
        let _ = (inq, insq);
        out.push(cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIM: Limits = Limits {
        max_bulk: 512 * 1024 * 1024,
        authenticated: true,
    };

    fn p(s: &[u8]) -> Result<Option<Vec<Bytes>>, ProtoError> {
        let mut b = BytesMut::from(s);
        parse(&mut b, LIM)
    }

    /// The short-header fast path gives parse_i64's answer for every header it takes.
    #[test]
    fn header_int_agrees_with_parse_i64() {
        let mut cases: Vec<Vec<u8>> = [
            "0",
            "00",
            "01",
            "1",
            "9",
            "10",
            "-1",
            "-0",
            "+1",
            " 1",
            "1 ",
            "1a",
            "",
            "123456789",
            "999999999",
            "1000000000",
            "9999999999",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "12\r",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        for n in (0..2000).chain([65_535, 1 << 20, 512 << 20]) {
            cases.push(n.to_string().into_bytes());
        }
        for c in cases {
            assert_eq!(header_int(&c), lockcore::num::parse_i64(&c), "{c:?}");
        }
    }

    /// Names spelled as the command table spells them (lowercase or uppercase) come back
    /// static and with their command, the same as a lookup; other spellings are copies with
    /// the same bytes, and the cache answers a lookup for any name.
    #[test]
    fn command_names_are_static_and_looked_up_once() {
        let mut names = NameCache::default();
        for name in [
            "get",
            "GET",
            "evalsha",
            "EVALSHA",
            "Get",
            "nosuchcommand",
            "CLIENT",
        ] {
            let b = names.name(name.as_bytes());
            assert_eq!(&b[..], name.as_bytes());
            let want = lockcore::commands::lookup(name.as_bytes());
            assert_eq!(
                names.command(&b).map(|s| s.name),
                want.map(|s| s.name),
                "{name}"
            );
            let exact = want.is_some_and(|s| name == s.name || name == s.name.to_ascii_uppercase());
            // A static spelling is handed out again, same pointer, with no allocation.
            let again = names.name(name.as_bytes());
            assert_eq!(again.as_ptr() == b.as_ptr(), exact, "{name}");
        }
        // The cache does not answer for another name that merely has the same length.
        let mut names = NameCache::default();
        let get = names.name(b"get");
        assert_eq!(names.command(&get).unwrap().name, "get");
        assert_eq!(
            names.command(&Bytes::from_static(b"set")).unwrap().name,
            "set"
        );
        assert!(names.command(&Bytes::from_static(b"xyz")).is_none());
    }

    #[test]
    fn multibulk_whole_and_partial() {
        assert_eq!(
            p(b"*2\r\n$3\r\nget\r\n$1\r\nk\r\n").unwrap().unwrap(),
            vec![Bytes::from("get"), Bytes::from("k")]
        );
        assert_eq!(p(b"*2\r\n$3\r\nget\r\n$1\r\n").unwrap(), None);
        assert_eq!(p(b"*2\r\n$3\r\nget\r\n$1\r\nk\r").unwrap(), None);
    }

    /// Around SHORT_ARGS, where the spans move from the stack to the heap: every prefix of
    /// a frame waits for more, the whole frame gives back exactly its arguments, and the
    /// next frame stays in the buffer.
    #[test]
    fn multibulk_of_any_length_whole_and_partial() {
        for n in 1..=2 * SHORT_ARGS + 1 {
            let args: Vec<Bytes> = (0..n).map(|i| Bytes::from(format!("a{i}"))).collect();
            let mut frame = format!("*{n}\r\n").into_bytes();
            for a in &args {
                frame.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
                frame.extend_from_slice(a);
                frame.extend_from_slice(b"\r\n");
            }
            for cut in 1..frame.len() {
                assert_eq!(p(&frame[..cut]).unwrap(), None, "n={n} cut={cut}");
            }
            let mut b = BytesMut::from(&frame[..]);
            b.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
            assert_eq!(parse(&mut b, LIM).unwrap().unwrap(), args, "n={n}");
            assert_eq!(&b[..], &b"*1\r\n$4\r\nPING\r\n"[..]);
        }
    }

    #[test]
    fn protocol_errors_have_redis_texts() {
        assert_eq!(
            p(b"*x\r\n").unwrap_err().0,
            "ERR Protocol error: invalid multibulk length"
        );
        assert_eq!(
            p(b"*1\r\n+x\r\n").unwrap_err().0,
            "ERR Protocol error: expected '$', got '+'"
        );
        assert_eq!(
            p(b"*1\r\n$-5\r\n").unwrap_err().0,
            "ERR Protocol error: invalid bulk length"
        );
        assert_eq!(
            p(b"*1\r\n$99999999999\r\n").unwrap_err().0,
            "ERR Protocol error: invalid bulk length"
        );
        let mut b = BytesMut::from(&b"*20\r\n"[..]);
        let unauth = Limits {
            authenticated: false,
            ..LIM
        };
        assert_eq!(
            parse(&mut b, unauth).unwrap_err().0,
            "ERR Protocol error: unauthenticated multibulk length"
        );
    }

    #[test]
    fn inline_commands_split_like_redis() {
        assert_eq!(
            p(b"set a \"b c\"\r\n").unwrap().unwrap(),
            vec![Bytes::from("set"), Bytes::from("a"), Bytes::from("b c")]
        );
        assert_eq!(p(b"ping\n").unwrap().unwrap(), vec![Bytes::from("ping")]);
        assert_eq!(p(b"\r\n").unwrap().unwrap(), Vec::<Bytes>::new());
        assert_eq!(
            p(b"set \"a\r\n").unwrap_err().0,
            "ERR Protocol error: unbalanced quotes in request"
        );
        assert_eq!(split_args(b"\"\\x41\\n\"").unwrap(), vec![b"A\n".to_vec()]);
        assert_eq!(split_args(b"a\0b c").unwrap(), vec![b"a".to_vec()]);
    }

    #[test]
    fn huge_declared_length_allocates_nothing_big() {
        let mut b = BytesMut::from(&b"*1\r\n$536870912\r\nabc"[..]);
        assert_eq!(parse(&mut b, LIM).unwrap(), None);
        assert!(b.capacity() < 4 << 20);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn encode(argv: &[Vec<u8>]) -> Vec<u8> {
            let mut out = format!("*{}\r\n", argv.len()).into_bytes();
            for a in argv {
                out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
                out.extend_from_slice(a);
                out.extend_from_slice(b"\r\n");
            }
            out
        }

        /// What the parser did for every header before `short_header`: the `\r`, then
        /// the prefix, then `header_int` (`None` for all that the fast path refuses too).
        fn slow_header(buf: &[u8], pos: usize, prefix: u8) -> Option<(i64, usize)> {
            let eol = find_crlf(buf, pos)?;
            if buf[pos] != prefix {
                return None;
            }
            Some((header_int(&buf[pos + 1..eol])?, eol))
        }

        /// Header-shaped bytes: a prefix, digits (or not), a `\r` (or not), a tail.
        fn header_bytes() -> impl Strategy<Value = Vec<u8>> {
            (
                prop::sample::select(vec![b'$', b'*', b'+', b'0']),
                prop::collection::vec(
                    prop::sample::select(b"0123456789-+ \r\n\0a".to_vec()),
                    0..14,
                ),
            )
                .prop_map(|(p, rest)| [vec![p], rest].concat())
        }

        proptest! {
            /// `short_header`, where it answers, answers as the slow path does, and it
            /// answers for every plain header of up to nine digits.
            #[test]
            fn short_header_agrees_with_the_slow_path(
                lead in prop::collection::vec(any::<u8>(), 0..3),
                h in header_bytes(),
                n in 1i64..1_000_000_000,
            ) {
                let buf = [&lead[..], &h].concat();
                for prefix in [b'$', b'*'] {
                    if let Some(fast) = short_header(&buf, lead.len(), prefix) {
                        prop_assert_eq!(Some(fast), slow_header(&buf, lead.len(), prefix));
                    }
                    let plain = format!("{}{n}\r\n", prefix as char).into_bytes();
                    let want = Some((n, plain.len() - 2));
                    prop_assert_eq!(short_header(&plain, 0, prefix), want);
                    prop_assert_eq!(slow_header(&plain, 0, prefix), want);
                }
            }

            /// `peek_keys` names, for each complete command in a pipeline cut anywhere,
            /// the argument the parser puts at argv[1] (argv[3] for a script call), looks
            /// at no more commands than it has room for, and never reads past a cut.
            #[test]
            fn peek_keys_finds_each_complete_commands_key(
                cmds in proptest::collection::vec((
                    prop::sample::select(vec!["GET", "set", "EVALSHA", "eval", "ping"]),
                    proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..30), 0..5),
                ), 0..24),
                cut in any::<proptest::sample::Index>(),
                room in 0usize..20,
            ) {
                let argvs: Vec<Vec<Vec<u8>>> = cmds
                    .into_iter()
                    .map(|(name, args)| [vec![name.as_bytes().to_vec()], args].concat())
                    .collect();
                let wire: Vec<u8> = argvs.iter().flat_map(|a| encode(a)).collect();
                let at = cut.index(wire.len() + 1);
                let mut buf = BytesMut::from(&wire[..at]);
                let mut want = Vec::new();
                let mut complete = 0;
                while complete < room {
                    let Some(argv) = parse(&mut buf, LIM).unwrap() else { break };
                    let key_at = if is_script_call(&argv[0]) { 3 } else { 1 };
                    want.extend(argv.get(key_at).map(|k| k.to_vec()));
                    complete += 1;
                }
                let mut out = vec![&[][..]; room];
                let (n, seen) = peek_keys(&wire[..at], &mut out);
                prop_assert_eq!(seen, complete);
                prop_assert_eq!(out[..n].iter().map(|k| k.to_vec()).collect::<Vec<_>>(), want);
            }

            /// Whatever the bytes, `peek_keys` returns without panicking, and every key it
            /// names lies inside them.
            #[test]
            fn peek_keys_takes_any_bytes(
                parts in proptest::collection::vec(prop::sample::select(vec![
                    &b"*2\r\n"[..], b"*1\r\n", b"$3\r\n", b"$999999999\r\n", b"GET", b"\r\n",
                    b"key", b"$0\r\n", b"*-1\r\n", b"x", b"\r", b"$1\r\n",
                ]), 0..40),
            ) {
                let buf = parts.concat();
                let mut out = [&[][..]; 16];
                let (n, seen) = peek_keys(&buf, &mut out);
                prop_assert!(n <= seen && seen <= 16);
                let range = buf.as_ptr_range();
                for k in &out[..n] {
                    prop_assert!(range.contains(&k.as_ptr()) && k.len() < buf.len());
                }
            }

            /// Any command, fed in arbitrary pieces, parses back to exactly its arguments,
            /// and a partial command is never mistaken for a whole one.
            #[test]
            fn multibulk_round_trips_in_any_split(
                argv in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..8),
                cut in any::<proptest::sample::Index>(),
            ) {
                let wire = encode(&argv);
                let at = cut.index(wire.len());
                let mut buf = BytesMut::from(&wire[..at]);
                let first = parse(&mut buf, LIM).unwrap();
                if first.is_none() {
                    buf.extend_from_slice(&wire[at..]);
                    let got = parse(&mut buf, LIM).unwrap().unwrap();
                    prop_assert_eq!(got.iter().map(|b| b.to_vec()).collect::<Vec<_>>(), argv);
                } else {
                    prop_assert_eq!(at, wire.len());
                }
                prop_assert!(buf.is_empty());
            }

            /// A script command's arguments, packed into one shared allocation when they
            /// are short (`packed_args`) and copied one by one otherwise, parse back to
            /// exactly what was sent, on either side of every size class.
            #[test]
            fn script_commands_round_trip(
                name in prop::sample::select(vec!["evalsha", "EVALSHA", "eval", "fcall", "fcall_ro", "EvalSha"]),
                args in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 0..8),
            ) {
                let mut argv = vec![name.as_bytes().to_vec()];
                argv.extend(args);
                let mut buf = BytesMut::from(&encode(&argv)[..]);
                let mut names = NameCache::default();
                let mut got = Vec::new();
                prop_assert!(parse_into(&mut buf, LIM, &mut got, &mut names).unwrap());
                drop(buf);
                prop_assert_eq!(got.iter().map(|b| b.to_vec()).collect::<Vec<_>>(), argv);
            }

            /// Arbitrary bytes never panic the parser; they parse, wait for more, or fail.
            #[test]
            fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
                let mut buf = BytesMut::from(&bytes[..]);
                for _ in 0..64 {
                    match parse(&mut buf, LIM) {
                        Ok(Some(_)) if !buf.is_empty() => continue,
                        _ => break,
                    }
                }
            }
        }
    }
}
