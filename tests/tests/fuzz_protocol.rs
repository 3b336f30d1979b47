//! Protocol fuzzer (docs/fuzzing.md): valid request frames, mutated (bit flips,
//! truncation, huge and negative lengths, bad type prefixes, RESP3 types in requests,
//! deep nesting, bare LF, inline commands with odd bytes, random garbage) and written in
//! random chunk sizes.
//!
//! * `protocol_fuzz_against_redis`: one stream at a time on a fresh connection to tumbler
//!   and to redis-server, write side closed after it; everything each server sends back
//!   until it closes must be identical (protocol error texts included). Nothing is
//!   normalised: the commands in the corpus have deterministic replies.
//! * `protocol_fuzz_many_connections`: tumbler alone, many connections at once. Every
//!   byte a server sends must be well-formed RESP, every connection must be closed by the
//!   server after our write side closes (no hang), and after each batch a fresh connection
//!   must get PONG and an intact canary key, and no server task may have panicked.
//!
//! Environment: `FUZZ_SEED`, `FUZZ_PROTO_DIFF_COUNT` (streams compared with Redis),
//! `FUZZ_PROTO_FRAMES` (frames for the many-connections test), `FUZZ_SECS` (time cap).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use tumbler_tests::fuzz::{self, check_stream, Resp, Settings, Wire};
use tumbler_tests::{encode_cmd, RedisServer, Tumbler};

/// Commands whose replies are deterministic and that cannot disturb other clients or the
/// canary (no FLUSH*, CONFIG, CLIENT KILL/PAUSE, SHUTDOWN, DEBUG, blocking without timeout).
const CORPUS: &[&[&str]] = &[
    &["PING"],
    &["PING", "hi there"],
    &["ECHO", "abc"],
    &["ECHO", "a\x0bb\x0c"],
    &["ECHO", ""],
    &["SET", "fz:k", "value"],
    &["GET", "fz:k"],
    &["DEL", "fz:k", "fz:l"],
    &["INCR", "fz:n"],
    &["INCRBY", "fz:n", "-7"],
    &["APPEND", "fz:k", "xy"],
    &["STRLEN", "fz:k"],
    &["MGET", "fz:k", "fz:n", "fz:x"],
    &["EXISTS", "fz:k"],
    &["TYPE", "fz:h"],
    &["HSET", "fz:h", "f", "v", "g", "w"],
    &["HGET", "fz:h", "f"],
    &["HGETALL", "fz:h"],
    &["RPUSH", "fz:l", "a", "b", "c"],
    &["LRANGE", "fz:l", "0", "-1"],
    &["LPOP", "fz:l"],
    &["ZADD", "fz:z", "1", "a", "2.5", "b"],
    &["ZRANGE", "fz:z", "0", "-1", "WITHSCORES"],
    &["EXPIRE", "fz:k", "1000"],
    &["TTL", "fz:x"],
    &["EVAL", "return ARGV[1]", "0", "x"],
    &["EVAL", "return {1, 'two', {3}}", "0"],
    &["EVAL", "return redis.call('get', KEYS[1])", "1", "fz:k"],
    &["MULTI"],
    &["EXEC"],
    &["DISCARD"],
    &["SELECT", "1"],
    &["SELECT", "0"],
    &["SUBSCRIBE", "fz:ch"],
    &["UNSUBSCRIBE"],
    &["BLPOP", "fz:none", "0.01"],
    &["CLIENT", "SETNAME", "fuzzer"],
    &["QUIT"],
];

/// Commands only for the tumbler-only test (replies differ from Redis' or do not exist
/// there, but are still deterministic and harmless).
const TUMBLER_ONLY: &[&[&str]] = &[
    &["LOCK.ACQUIRE", "fz:lock", "me", "1000"],
    &["LOCK.RELEASE", "fz:lock", "me"],
    &["SEM.ACQUIRE", "fz:sem", "me", "2", "1000"],
    &["RW.RLOCK", "fz:rw", "me", "1000"],
    &["LOCK.INFO", "fz:lock"],
    &["HELLO", "3"],
    &["HELLO", "2"],
    &["PUBLISH", "fz:ch", "msg"],
];

struct Fz {
    rng: StdRng,
    /// Nesting up to 100,000 levels. Not against Redis: 100,000 error replies to a stream
    /// Redis then resets mid-way are a matter of timing there.
    deep: bool,
}

fn huge_len(rng: &mut StdRng) -> &'static str {
    [
        "2147483647",
        "2147483648",
        "9223372036854775807",
        "99999999999999999999",
        "536870912",
        "536870913",
        "1048577",
        "-2",
        "-1",
        "+5",
        " 5",
        "5 ",
        "0x10",
        "",
    ]
    .choose(rng)
    .unwrap()
}

impl Fz {
    fn valid(&mut self, tumbler_only: bool) -> Vec<u8> {
        let c = if tumbler_only && self.rng.gen_bool(0.15) {
            TUMBLER_ONLY.choose(&mut self.rng).unwrap()
        } else {
            let n = if self.rng.gen_bool(0.01) {
                CORPUS.len()
            } else {
                CORPUS.len() - 1
            };
            CORPUS[..n].choose(&mut self.rng).unwrap()
        };
        if self.rng.gen_bool(0.15) {
            // The same command inline.
            let mut l = c.iter().map(|a| {
                if a.is_empty() || a.contains(' ') {
                    format!("\"{a}\"")
                } else {
                    a.to_string()
                }
            });
            let mut s = l.next().unwrap();
            for a in l {
                s.push(' ');
                s.push_str(&a);
            }
            s.push_str(if self.rng.gen_bool(0.8) { "\r\n" } else { "\n" });
            return s.into_bytes();
        }
        encode_cmd(c)
    }

    fn odd_inline(&mut self) -> Vec<u8> {
        let alphabet: &[u8] = b"abcSETGETPING \t\"'\\x00\x01\x7f\xff\xc3\xa9{}$*:+-\r";
        let n = self.rng.gen_range(0..40);
        let mut v: Vec<u8> = (0..n)
            .map(|_| *alphabet.choose(&mut self.rng).unwrap())
            .collect();
        if self.rng.gen_bool(0.3) {
            v.insert(0, b'\0');
        }
        v.extend_from_slice(if self.rng.gen_bool(0.7) {
            b"\r\n"
        } else {
            b"\n"
        });
        v
    }

    fn resp3_request(&mut self) -> Vec<u8> {
        let r: &[&[u8]] = &[
            b"%1\r\n+a\r\n+b\r\n",
            b"~2\r\n$1\r\na\r\n$1\r\nb\r\n",
            b"#t\r\n",
            b"_\r\n",
            b",1.5\r\n",
            b"(12345678901234567890\r\n",
            b"=8\r\ntxt:PING\r\n",
            b"|1\r\n+key\r\n+val\r\n*1\r\n$4\r\nPING\r\n",
            b">2\r\n$4\r\nECHO\r\n$1\r\nx\r\n",
            b"!3\r\nERR\r\n",
            b"*2\r\n$4\r\nECHO\r\n:5\r\n",
            b"*2\r\n$4\r\nECHO\r\n%1\r\n+a\r\n+b\r\n",
            b"*2\r\n$4\r\nECHO\r\n_\r\n",
            b"*1\r\n+PING\r\n",
            b"*1\r\n#t\r\n",
        ];
        r.choose(&mut self.rng).unwrap().to_vec()
    }

    fn nested(&mut self) -> Vec<u8> {
        let depths: &[usize] = if self.deep {
            &[2, 10, 1000, 100_000]
        } else {
            &[2, 10, 100]
        };
        let depth = *depths.choose(&mut self.rng).unwrap();
        let unit: &[u8] = match self.rng.gen_range(0..3) {
            0 => b"*1\r\n",
            1 => b"%1\r\n",
            _ => b"[",
        };
        let mut v = unit.repeat(depth);
        v.extend_from_slice(b"$4\r\nPING\r\n");
        v
    }

    fn mutate(&mut self, mut f: Vec<u8>) -> Vec<u8> {
        match self.rng.gen_range(0..10) {
            0 | 1 => {
                for _ in 0..self.rng.gen_range(1..4) {
                    let i = self.rng.gen_range(0..f.len());
                    f[i] ^= 1 << self.rng.gen_range(0..8);
                }
                f
            }
            2 => {
                let n = self.rng.gen_range(0..f.len());
                f.truncate(n);
                f
            }
            3 => {
                // Replace the first length (`*N` or `$N`) with a huge, negative or bad one.
                let s = String::from_utf8_lossy(&f).into_owned();
                if let Some(p) = s.find(['*', '$']) {
                    if let Some(e) = s[p..].find("\r\n") {
                        let mut out = f[..=p].to_vec();
                        out.extend_from_slice(huge_len(&mut self.rng).as_bytes());
                        out.extend_from_slice(&f[p + e..]);
                        return out;
                    }
                }
                f
            }
            4 => {
                let prefixes = b"+-:,#%~>_(!=|?\x00\xff ";
                f[0] = *prefixes.choose(&mut self.rng).unwrap();
                f
            }
            5 => {
                // Bare LF instead of CR LF somewhere.
                if let Some(p) = f.windows(2).position(|w| w == b"\r\n") {
                    f.remove(p);
                }
                f
            }
            6 => {
                let i = self.rng.gen_range(0..=f.len());
                let junk: Vec<u8> = (0..self.rng.gen_range(1..8))
                    .map(|_| self.rng.gen())
                    .collect();
                f.splice(i..i, junk);
                f
            }
            7 => self.odd_inline(),
            8 => self.resp3_request(),
            _ => {
                if self.rng.gen_bool(0.2) {
                    self.nested()
                } else {
                    (0..self.rng.gen_range(1..64))
                        .map(|_| self.rng.gen())
                        .collect()
                }
            }
        }
    }

    /// A request stream of `n` frames, each mutated with probability `p`.
    fn stream(&mut self, n: usize, p: f64, tumbler_only: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for _ in 0..n {
            let f = self.valid(tumbler_only);
            if self.rng.gen_bool(p) {
                out.extend(self.mutate(f));
            } else {
                out.extend(f);
            }
        }
        if self.rng.gen_bool(0.002) {
            // A line longer than the inline limit (Redis: "too big inline request").
            out.extend(std::iter::repeat_n(b'a', 70 * 1024));
        }
        out
    }
}

/// Writes `bytes` in random chunk sizes, closes the write side, and reads everything until
/// the server closes. `Err` names a hang (no EOF within `wait`); the flag tells that the
/// connection ended in a reset.
fn exchange(
    addr: SocketAddr,
    bytes: &[u8],
    rng: &mut StdRng,
    wait: Duration,
) -> Result<(Vec<u8>, bool), String> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    let reader = {
        let mut r = s.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let mut buf = [0u8; 65536];
            loop {
                match r.read(&mut buf) {
                    Ok(0) => return Ok((out, false)),
                    Ok(n) => out.extend_from_slice(&buf[..n]),
                    // A server that closes with our input unread (protocol error, QUIT)
                    // resets the connection, and the kernel drops what it had not sent
                    // yet: the stream may end mid-reply.
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                        return Ok((out, true))
                    }
                    Err(e) => {
                        return Err(format!(
                            "no EOF from the server ({e}); got {} bytes: {}",
                            out.len(),
                            fuzz::cli_quote(&out[..out.len().min(300)])
                        ))
                    }
                }
            }
        })
    };
    let mut at = 0;
    while at < bytes.len() {
        let n = if rng.gen_bool(0.5) {
            bytes.len() - at
        } else {
            rng.gen_range(1..=(bytes.len() - at).min(64))
        };
        // The server may close first (protocol error, QUIT): later writes then fail.
        if s.write_all(&bytes[at..at + n]).is_err() {
            break;
        }
        at += n;
    }
    let _ = s.shutdown(Shutdown::Write);
    reader.join().unwrap()
}

/// Bytes as a quoted string with escapes (at most 2000 of them).
fn show(b: &[u8]) -> String {
    fuzz::cli_quote(&b[..b.len().min(2000)])
}

#[test]
fn protocol_fuzz_against_redis() {
    // CI: 5000 fixed streams (a few seconds in release), capped at 20 s.
    let set = Settings::from_env("FUZZ_PROTO_DIFF", 5000, 20);
    let Some(redis) = RedisServer::start() else {
        return;
    };
    fuzz::count_panics();
    let t = Tumbler::like(&redis, &[]);
    let start = Instant::now();
    let (mut done, mut bytes, mut failures) = (0u64, 0usize, Vec::new());
    for i in 0..set.count {
        if set.secs > 0 && start.elapsed().as_secs() >= set.secs {
            eprintln!("time cap of {} s reached", set.secs);
            break;
        }
        let seed = set.seed + i;
        let mut fz = Fz {
            rng: StdRng::seed_from_u64(seed),
            deep: false,
        };
        let n = fz.rng.gen_range(1..8);
        let mut input = fz.stream(n, 0.4, false);
        // Only bytes 1..=127 here: tumbler's error replies are UTF-8 text, so a command
        // name or argument with other bytes is echoed with U+FFFD (and one with a NUL is
        // not cut at the NUL as Redis' "%s" does). Known divergence, left to issue 10's
        // reply work; see fuzz_regressions.rs `error_replies_echo_raw_bytes` (ignored).
        // The many-connections test below sends every byte value.
        for b in input.iter_mut() {
            *b &= 0x7f;
            if *b == 0 {
                *b = 1;
            }
        }
        bytes += input.len();
        let chunk_seed = fz.rng.gen();
        let wait = Duration::from_secs(5);
        let a = exchange(t.addr, &input, &mut StdRng::seed_from_u64(chunk_seed), wait)
            .map(|(out, _)| out);
        let b = exchange(
            redis.addr,
            &input,
            &mut StdRng::seed_from_u64(chunk_seed),
            wait,
        )
        .map(|(out, _)| out);
        let same = match (&a, &b) {
            (Ok(x), Ok(y)) => x == y,
            (Err(_), Err(_)) => true,
            _ => false,
        };
        if !same {
            // Show where the two outputs part: 200 bytes before the first difference.
            let p = match (&a, &b) {
                (Ok(x), Ok(y)) => x.iter().zip(y).take_while(|(p, q)| p == q).count(),
                _ => 0,
            };
            let from = p.saturating_sub(200);
            let r = |x: &Result<Vec<u8>, String>| match x {
                Ok(v) => format!("({} bytes) ...{}", v.len(), show(&v[from.min(v.len())..])),
                Err(e) => format!("(error) {e}"),
            };
            let report = format!(
                "MISMATCH seed {seed} (replay: FUZZ_SEED={seed} cargo test -p tumbler-tests --test fuzz_protocol protocol_fuzz_against_redis)\n  sent:    ({} bytes) {}\n  tumbler: {}\n  redis:   {}\n",
                input.len(),
                show(&input[..input.len().min(600)]),
                r(&a),
                r(&b)
            );
            eprintln!("{report}");
            failures.push(report);
            if failures.len() >= 10 {
                break;
            }
        }
        if let Ok(out) = &a {
            if let Err(e) = check_stream(out) {
                failures.push(format!(
                    "seed {seed}: malformed reply stream: {e}: {:?}",
                    show(out)
                ));
            }
        }
        done += 1;
    }
    let panics = fuzz::panics();
    println!(
        "protocol fuzz vs redis: {done} streams ({bytes} bytes) from seed {}, {} mismatches, {} server panics, {:.1} s",
        set.seed,
        failures.len(),
        panics,
        start.elapsed().as_secs_f64()
    );
    assert_eq!(panics, 0, "the server panicked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Like `check_stream`, but a last reply cut short is allowed (the connection was reset).
fn check_prefix(bytes: &[u8]) -> Result<usize, String> {
    let (mut at, mut n) = (0, 0);
    while at < bytes.len() {
        match fuzz::parse(&bytes[at..])? {
            Some((_, len)) => {
                at += len;
                n += 1;
            }
            None => break,
        }
    }
    Ok(n)
}

const CANARY: &str = "fuzz-canary-value-\u{e9}\r\n\0end";

/// A fresh connection gets PONG and the canary is intact.
fn healthy(addr: SocketAddr) -> Result<(), String> {
    let mut w = Wire::connect(addr)?;
    let p = w.cmd(&["PING"])?;
    if p != Resp::Simple(b"PONG".to_vec()) {
        return Err(format!("PING: {}", p.show()));
    }
    let g = w.cmd(&["GET", "canary"])?;
    if g != Resp::Bulk(CANARY.as_bytes().to_vec()) {
        return Err(format!("canary: {}", g.show()));
    }
    Ok(())
}

#[test]
fn protocol_fuzz_many_connections() {
    // CI: 1,000,000 frames in batches of 16 connections, capped at 30 s.
    let frames = std::env::var("FUZZ_PROTO_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000u64);
    let mut set = Settings::from_env("FUZZ_PROTO_BATCHES", u64::MAX, 30);
    if std::env::var("FUZZ_PROTO_BATCHES_COUNT").is_err() {
        set.count = u64::MAX; // bounded by the frame count (FUZZ_SEED alone does not limit it)
    }
    fuzz::count_panics();
    let t = Tumbler::start();
    let mut w = Wire::connect(t.addr).unwrap();
    assert_eq!(
        w.cmd(&["SET", "canary", CANARY]).unwrap(),
        Resp::Simple(b"OK".to_vec())
    );
    let rss0 = fuzz::rss_kib(std::process::id()).unwrap_or(0);
    let mut rss_max = rss0;
    let start = Instant::now();
    let (mut sent, mut replies, mut conns, mut batch) = (0u64, 0u64, 0u64, 0u64);
    let mut failures: Vec<String> = Vec::new();
    while sent < frames && batch < set.count {
        if set.secs > 0 && start.elapsed().as_secs() >= set.secs {
            eprintln!("time cap of {} s reached", set.secs);
            break;
        }
        let seed = set.seed.wrapping_mul(1_000_003).wrapping_add(batch);
        let mut threads = Vec::new();
        for c in 0..16u64 {
            let addr = t.addr;
            threads.push(std::thread::spawn(move || {
                let mut fz = Fz {
                    rng: StdRng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(c)),
                    deep: true,
                };
                let n = fz.rng.gen_range(1..400);
                let p = *[0.0, 0.002, 0.01, 0.05, 0.3].choose(&mut fz.rng).unwrap();
                let input = fz.stream(n, p, true);
                if fz.rng.gen_bool(0.05) {
                    // Abrupt close without reading the replies.
                    if let Ok(mut s) = TcpStream::connect(addr) {
                        let _ = s.write_all(&input);
                    }
                    return Ok((n as u64, 0));
                }
                let mut crng = StdRng::seed_from_u64(fz.rng.gen());
                let (out, reset) = exchange(addr, &input, &mut crng, Duration::from_secs(30))
                    .map_err(|e| format!("batch seed {seed} conn {c}: {e}"))?;
                let checked = if reset {
                    check_prefix(&out)
                } else {
                    check_stream(&out)
                };
                let k = checked.map_err(|e| {
                    format!(
                        "batch seed {seed} conn {c}: malformed reply stream: {e}: {:?}",
                        show(&out)
                    )
                })?;
                Ok::<_, String>((n as u64, k as u64))
            }));
        }
        for th in threads {
            match th.join().unwrap() {
                Ok((n, k)) => {
                    sent += n;
                    replies += k;
                }
                Err(e) => failures.push(e),
            }
            conns += 1;
        }
        if let Err(e) = healthy(t.addr) {
            failures.push(format!(
                "after batch {batch} (seed {seed}): server unhealthy: {e}"
            ));
        }
        if fuzz::panics() > 0 || failures.len() >= 10 {
            break;
        }
        batch += 1;
        if batch % 8 == 0 {
            rss_max = rss_max.max(fuzz::rss_kib(std::process::id()).unwrap_or(0));
        }
        if batch % 5000 == 0 {
            eprintln!(
                "{sent} frames, {conns} connections, {} failures, {:.0} s",
                failures.len(),
                start.elapsed().as_secs_f64()
            );
        }
    }
    let panics = fuzz::panics();
    println!(
        "protocol fuzz, many connections: {sent} frames on {conns} connections in {batch} batches from seed {}, {replies} well-formed replies, {} failures, {} server panics, test-process RSS {} -> max {} KiB, {:.1} s",
        set.seed,
        failures.len(),
        panics,
        rss0,
        rss_max,
        start.elapsed().as_secs_f64()
    );
    healthy(t.addr).expect("server healthy at the end");
    assert_eq!(panics, 0, "the server panicked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
