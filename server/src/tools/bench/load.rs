//! The load generator: N connections, each sending `pipeline` commands, then reading as many
//! replies, until the request budget or the deadline is spent.
//!
//! Like redis-benchmark, a request's latency runs from the write of its batch to the
//! parse of its reply. Replies are framed by `redis-protocol`'s `decode_range`, which
//! copies nothing; only error replies are looked at, to count them by type.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use redis_protocol::resp2::decode::decode_range;
use redis_protocol::resp2::types::RangeFrame;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::template::{CmdTemplate, Vars};
use super::tls::TlsTarget;

/// What every client of one round sends.
pub struct Plan {
    /// Commands each client sends in turn; `{rand}` is drawn once per cycle.
    pub cycle: Vec<CmdTemplate>,
    pub keyspace: u64,
    pub round: u64,
    /// AUTH / SELECT, sent before the clock starts.
    pub handshake: Vec<Vec<String>>,
    /// `rediss://`: every connection is TLS, its handshake done before the clock starts.
    pub tls: Option<TlsTarget>,
}

/// How long a round runs.
#[derive(Debug, Clone, Copy)]
pub enum Budget {
    Requests(u64),
    Duration(Duration),
}

/// Errors of one type: how many, and the first message seen.
#[derive(Debug, Clone, Default)]
pub struct ErrorCount {
    pub count: u64,
    pub example: String,
}

/// One round against one server, as the client saw it.
pub struct Outcome {
    pub requests: u64,
    pub elapsed: Duration,
    /// Latency in nanoseconds.
    pub hist: Histogram<u64>,
    /// By error type: the error reply's first word (`ERR`, `NOSCRIPT`, `WRONGTYPE`...).
    pub errors: BTreeMap<String, ErrorCount>,
}

/// Progress the caller can watch while a round runs.
#[derive(Default)]
pub struct Progress {
    pub done: AtomicU64,
}

struct Shared {
    remaining: AtomicI64,
    deadline: Option<Instant>,
    progress: Arc<Progress>,
    /// Set by the first client that fails, so the others stop early.
    stop: AtomicBool,
}

pub fn new_hist() -> Histogram<u64> {
    // 1 ns .. 100 s at 3 significant digits: 0.1 % resolution at any latency.
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("histogram bounds")
}

/// The type of an error reply: its first word, as INFO errorstats groups them.
pub fn error_type(msg: &str) -> String {
    msg.split_whitespace().next().unwrap_or("ERR").to_string()
}

/// Runs one round: connects `clients` connections to `addr`, runs the plan, and returns
/// the merged outcome, or the first connection failure (one line).
pub async fn run(
    addr: SocketAddr,
    plan: Arc<Plan>,
    clients: usize,
    pipeline: usize,
    budget: Budget,
    progress: Arc<Progress>,
) -> Result<Outcome, String> {
    // Connect everyone first: connection set-up is not part of the measurement.
    let mut conns = Vec::with_capacity(clients);
    for _ in 0..clients {
        let s = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        conns.push(s);
    }
    match plan.tls.clone() {
        None => drive(conns, plan, pipeline, budget, progress).await,
        Some(tls) => {
            let mut wrapped = Vec::with_capacity(clients);
            for s in conns {
                wrapped.push(tls.wrap(s).await?);
            }
            drive(wrapped, plan, pipeline, budget, progress).await
        }
    }
}

/// The rest of a round, over connected streams (TCP or TLS; one copy of the loop each).
async fn drive<S>(
    conns: Vec<S>,
    plan: Arc<Plan>,
    pipeline: usize,
    budget: Budget,
    progress: Arc<Progress>,
) -> Result<Outcome, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let clients = conns.len();
    let mut streams = Vec::with_capacity(clients);
    for mut s in conns {
        handshake(&mut s, &plan.handshake).await?;
        streams.push(s);
    }
    // Histograms are allocated before the clock starts (a few hundred KiB each).
    let hists: Vec<Histogram<u64>> = (0..clients).map(|_| new_hist()).collect();
    let start = Instant::now();
    let shared = Arc::new(Shared {
        deadline: match budget {
            Budget::Duration(d) => Some(start + d),
            Budget::Requests(_) => None,
        },
        remaining: AtomicI64::new(match budget {
            Budget::Requests(n) => n as i64,
            Budget::Duration(_) => i64::MAX,
        }),
        progress,
        stop: AtomicBool::new(false),
    });
    let tasks: Vec<_> = streams
        .into_iter()
        .enumerate()
        .zip(hists)
        .map(|((id, s), hist)| {
            let plan = plan.clone();
            let shared = shared.clone();
            tokio::spawn(async move {
                let r = client(id as u64, s, hist, &plan, pipeline, &shared).await;
                if r.is_err() {
                    shared.stop.store(true, Ordering::Relaxed);
                }
                r
            })
        })
        .collect();
    let mut out = Outcome {
        requests: 0,
        elapsed: Duration::ZERO,
        hist: new_hist(),
        errors: BTreeMap::new(),
    };
    let mut first_err = None;
    // The round ends when the last client has its last reply (merging comes after).
    let mut end = start;
    for t in tasks {
        match t.await {
            Ok(Ok(c)) => {
                out.requests += c.requests;
                end = end.max(c.end);
                out.hist.add(&c.hist).expect("same bounds");
                for (k, v) in c.errors {
                    let e = out.errors.entry(k).or_default();
                    if e.count == 0 {
                        e.example = v.example;
                    }
                    e.count += v.count;
                }
            }
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(e) => {
                first_err.get_or_insert(format!("client task failed: {e}"));
            }
        }
    }
    out.elapsed = end - start;
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    cmds: &[Vec<String>],
) -> Result<(), String> {
    let mut buf = BytesMut::with_capacity(1024);
    for cmd in cmds {
        let t = CmdTemplate::new(
            cmd.iter()
                .map(|a| super::template::Template::literal(a.as_bytes()))
                .collect(),
        );
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        t.encode_into(&Vars::default(), &mut out, &mut scratch);
        s.write_all(&out).await.map_err(|e| e.to_string())?;
        s.flush().await.map_err(|e| e.to_string())?;
        loop {
            match decode_range(&buf) {
                Ok(Some((f, n))) => {
                    if let RangeFrame::Error((a, b)) = f {
                        let msg = String::from_utf8_lossy(&buf[a..b]).into_owned();
                        return Err(format!("{} failed: {msg}", cmd[0]));
                    }
                    buf.advance(n);
                    break;
                }
                Ok(None) => {}
                Err(e) => return Err(e.to_string()),
            }
            if s.read_buf(&mut buf).await.map_err(|e| e.to_string())? == 0 {
                return Err(format!("{} failed: connection closed", cmd[0]));
            }
        }
    }
    Ok(())
}

struct ClientOutcome {
    end: Instant,
    requests: u64,
    hist: Histogram<u64>,
    errors: BTreeMap<String, ErrorCount>,
}

async fn client<S: AsyncRead + AsyncWrite + Unpin>(
    id: u64,
    mut s: S,
    mut hist: Histogram<u64>,
    plan: &Plan,
    pipeline: usize,
    shared: &Shared,
) -> Result<ClientOutcome, String> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(
        id.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ plan.round.wrapping_mul(0xff51_afd7_ed55_8ccd),
    );
    let mut errors: BTreeMap<String, ErrorCount> = BTreeMap::new();
    let mut out = Vec::with_capacity(pipeline * 64);
    let mut scratch = Vec::with_capacity(64);
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut vars = Vars {
        client: id,
        round: plan.round,
        ..Vars::default()
    };
    let ncycle = plan.cycle.len() as u64;
    let mut sent_total = 0u64;
    let mut requests = 0u64;
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        let n = match shared.deadline {
            Some(d) => {
                if Instant::now() >= d {
                    break;
                }
                pipeline
            }
            None => {
                let left = shared
                    .remaining
                    .fetch_sub(pipeline as i64, Ordering::Relaxed);
                if left <= 0 {
                    break;
                }
                (left as usize).min(pipeline)
            }
        };
        out.clear();
        for _ in 0..n {
            let step = sent_total % ncycle;
            if step == 0 {
                vars.seq = sent_total / ncycle;
                vars.rand = rng.gen_range(0..plan.keyspace.max(1));
            }
            plan.cycle[step as usize].encode_into(&vars, &mut out, &mut scratch);
            sent_total += 1;
        }
        let t0 = Instant::now();
        s.write_all(&out)
            .await
            .map_err(|e| format!("connection lost during the run: {e}"))?;
        // A no-op on TCP; TLS may hold the last record until flushed.
        s.flush()
            .await
            .map_err(|e| format!("connection lost during the run: {e}"))?;
        let mut got = 0;
        while got < n {
            // Every reply that came in one read arrived at the same moment: one clock read
            // per read, as redis-benchmark does.
            let mut ns = None;
            loop {
                match next_reply(&buf) {
                    Ok(Some((len, err))) => {
                        let ns = *ns.get_or_insert_with(|| t0.elapsed().as_nanos() as u64);
                        hist.saturating_record(ns.max(1));
                        if let Some((a, b)) = err {
                            let msg = String::from_utf8_lossy(&buf[a..b]).into_owned();
                            let e = errors.entry(error_type(&msg)).or_default();
                            if e.count == 0 {
                                e.example = msg;
                            }
                            e.count += 1;
                        }
                        buf.advance(len);
                        got += 1;
                        if got == n {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => return Err(format!("undecodable reply: {e}")),
                }
            }
            if got < n {
                if buf.capacity() - buf.len() < 16 * 1024 {
                    buf.reserve(64 * 1024);
                }
                let r = s
                    .read_buf(&mut buf)
                    .await
                    .map_err(|e| format!("connection lost during the run: {e}"))?;
                if r == 0 {
                    return Err("the server closed the connection during the run".into());
                }
            }
        }
        requests += n as u64;
        shared.progress.done.fetch_add(n as u64, Ordering::Relaxed);
    }
    Ok(ClientOutcome {
        end: Instant::now(),
        requests,
        hist,
        errors,
    })
}

/// A complete reply's length and, for an error reply, the range of its message.
type Framed = (usize, Option<(usize, usize)>);

/// The length of the first complete reply in `buf` and, for an error reply, its message's
/// range. Bulk strings, integers and status replies (nearly every reply a benchmark sees) are
/// framed here by their header line; aggregates go to `redis-protocol`'s decoder.
fn next_reply(buf: &[u8]) -> Result<Option<Framed>, String> {
    let Some(&tag) = buf.first() else {
        return Ok(None);
    };
    if matches!(tag, b'$' | b':' | b'+' | b'-') {
        let Some(eol) = buf.windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        return Ok(Some(match tag {
            b'$' => {
                let n: i64 = std::str::from_utf8(&buf[1..eol])
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| "bad bulk length".to_string())?;
                let len = if n < 0 {
                    eol + 2
                } else {
                    eol + 2 + n as usize + 2
                };
                if buf.len() < len {
                    return Ok(None);
                }
                (len, None)
            }
            b'-' => (eol + 2, Some((1, eol))),
            _ => (eol + 2, None),
        }));
    }
    match decode_range(buf) {
        Ok(Some((f, len))) => Ok(Some((
            len,
            match f {
                RangeFrame::Error(r) => Some(r),
                _ => None,
            },
        ))),
        Ok(None) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::next_reply;

    #[test]
    fn frames_replies() {
        assert_eq!(next_reply(b"$3\r\nabc\r\n+OK"), Ok(Some((9, None))));
        assert_eq!(next_reply(b"$3\r\nab"), Ok(None));
        assert_eq!(next_reply(b"$-1\r\n"), Ok(Some((5, None))));
        assert_eq!(next_reply(b":12\r\n"), Ok(Some((5, None))));
        assert_eq!(next_reply(b"-ERR x\r\n"), Ok(Some((8, Some((1, 6))))));
        assert_eq!(next_reply(b"*2\r\n$1\r\na\r\n:1\r\n"), Ok(Some((15, None))));
        assert_eq!(next_reply(b"*2\r\n$1\r\na\r\n"), Ok(None));
        assert_eq!(next_reply(b""), Ok(None));
        assert!(next_reply(b"$x\r\n").is_err());
    }
}
