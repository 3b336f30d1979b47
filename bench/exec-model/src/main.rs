//! Execution-model prototype for Tumbler: minimal RESP2 server with
//! selectable execution models (see RESULTS.md).
use bytes::{Bytes, BytesMut};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

type Cmd = Vec<Bytes>;

// ---------------------------------------------------------------- keyspace

#[derive(Default)]
struct Keyspace {
    strings: HashMap<Bytes, Bytes>,
    hashes: HashMap<Bytes, HashMap<Bytes, i64>>,
    expires: HashMap<Bytes, u64>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn bulk(out: &mut Vec<u8>, v: &[u8]) {
    out.push(b'$');
    out.extend_from_slice(v.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(v);
    out.extend_from_slice(b"\r\n");
}

fn int(out: &mut Vec<u8>, n: i64) {
    out.push(b':');
    out.extend_from_slice(n.to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn parse_i64(b: &[u8]) -> Option<i64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

impl Keyspace {
    /// Lazily expire `key` if its deadline passed.
    fn check_expired(&mut self, key: &Bytes) {
        if let Some(&at) = self.expires.get(key) {
            if at <= now_ms() {
                self.expires.remove(key);
                self.strings.remove(key);
                self.hashes.remove(key);
            }
        }
    }

    fn exec(&mut self, args: &[Bytes], out: &mut Vec<u8>) {
        let name = &args[0];
        if name.eq_ignore_ascii_case(b"PING") {
            match args.len() {
                1 => out.extend_from_slice(b"+PONG\r\n"),
                _ => bulk(out, &args[1]),
            }
        } else if name.eq_ignore_ascii_case(b"GET") && args.len() == 2 {
            self.check_expired(&args[1]);
            match self.strings.get(&args[1]) {
                Some(v) => bulk(out, v),
                None => out.extend_from_slice(b"$-1\r\n"),
            }
        } else if name.eq_ignore_ascii_case(b"SET") && args.len() == 3 {
            self.hashes.remove(&args[1]);
            self.expires.remove(&args[1]);
            self.strings.insert(args[1].clone(), args[2].clone());
            out.extend_from_slice(b"+OK\r\n");
        } else if name.eq_ignore_ascii_case(b"HINCRBY") && args.len() == 4 {
            let Some(by) = parse_i64(&args[3]) else {
                out.extend_from_slice(b"-ERR value is not an integer or out of range\r\n");
                return;
            };
            self.check_expired(&args[1]);
            let h = self.hashes.entry(args[1].clone()).or_default();
            let v = h.entry(args[2].clone()).or_insert(0);
            *v += by;
            int(out, *v);
        } else if name.eq_ignore_ascii_case(b"LOCKSIM") && args.len() == 4 {
            // Stand-in for a reentrant-lock Lua script:
            //   if exists(key)==0 or hexists(key,field)==1 then
            //       hincrby(key,field,1); pexpire(key,ttl); return nil
            //   end; return pttl(key)
            let Some(ttl) = parse_i64(&args[3]) else {
                out.extend_from_slice(b"-ERR value is not an integer or out of range\r\n");
                return;
            };
            let (key, field) = (&args[1], &args[2]);
            self.check_expired(key); // op 1 (expires lookup)
            let now = now_ms();
            let free = match self.hashes.get(key) {
                // op 2 (exists)
                None => true,
                Some(h) => h.contains_key(field) || h.is_empty(), // op 3 (hexists)
            };
            if free {
                let h = self.hashes.entry(key.clone()).or_default(); // op 4
                *h.entry(field.clone()).or_insert(0) += 1; // op 5 (hincrby)
                self.expires.insert(key.clone(), now + ttl.max(0) as u64); // op 6 (pexpire)
                out.extend_from_slice(b"$-1\r\n");
            } else {
                let at = self.expires.get(key).copied().unwrap_or(now);
                int(out, at.saturating_sub(now) as i64);
            }
        } else if name.eq_ignore_ascii_case(b"CONFIG") {
            out.extend_from_slice(b"*0\r\n");
        } else {
            out.extend_from_slice(b"-ERR unknown command\r\n");
        }
    }

    fn exec_batch(&mut self, cmds: &[Cmd], out: &mut Vec<u8>) {
        for c in cmds {
            self.exec(c, out);
        }
    }
}

// ---------------------------------------------------------------- RESP parser

enum Parse {
    Cmd(Cmd),
    Incomplete,
    Error,
}

fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|p| p + from)
}

fn parse_num(b: &[u8]) -> Option<i64> {
    parse_i64(b)
}

/// Parse one RESP array of bulk strings from the front of `buf`.
fn parse_one(buf: &mut BytesMut) -> Parse {
    if buf.is_empty() {
        return Parse::Incomplete;
    }
    if buf[0] != b'*' {
        // Inline command (redis-benchmark's PING_INLINE): whitespace-split line.
        let Some(e) = buf.iter().position(|&b| b == b'\n') else { return Parse::Incomplete };
        let line = buf.split_to(e + 1).freeze();
        let args: Cmd = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
            .map(|w| line.slice_ref(w))
            .collect();
        return if args.is_empty() { parse_one(buf) } else { Parse::Cmd(args) };
    }
    let Some(e) = find_crlf(buf, 1) else { return Parse::Incomplete };
    let Some(n) = parse_num(&buf[1..e]) else { return Parse::Error };
    if !(1..=1024 * 1024).contains(&n) {
        return Parse::Error;
    }
    // First pass: find offsets without consuming.
    let mut pos = e + 2;
    let mut spans = Vec::with_capacity(n as usize);
    for _ in 0..n {
        if pos >= buf.len() {
            return Parse::Incomplete;
        }
        if buf[pos] != b'$' {
            return Parse::Error;
        }
        let Some(e) = find_crlf(buf, pos + 1) else { return Parse::Incomplete };
        let Some(len) = parse_num(&buf[pos + 1..e]) else { return Parse::Error };
        if !(0..=512 * 1024 * 1024).contains(&len) {
            return Parse::Error;
        }
        let start = e + 2;
        let end = start + len as usize;
        if end + 2 > buf.len() {
            return Parse::Incomplete;
        }
        spans.push((start, end));
        pos = end + 2;
    }
    let frame = buf.split_to(pos).freeze();
    Parse::Cmd(spans.into_iter().map(|(s, e)| frame.slice(s..e)).collect())
}

/// Parse every complete frame in `buf`. Returns Err on protocol error.
fn parse_all(buf: &mut BytesMut, cmds: &mut Vec<Cmd>) -> Result<(), ()> {
    loop {
        match parse_one(buf) {
            Parse::Cmd(c) => cmds.push(c),
            Parse::Incomplete => return Ok(()),
            Parse::Error => return Err(()),
        }
    }
}

// ---------------------------------------------------------------- connection loop

/// Generic connection driver: read, parse all complete frames, hand the
/// batch to `run` (which appends replies to `out`), write once.
async fn serve_conn<F, Fut>(mut sock: TcpStream, mut run: F)
where
    F: FnMut(Vec<Cmd>, Vec<u8>) -> Fut,
    Fut: std::future::Future<Output = Vec<u8>>,
{
    let _ = sock.set_nodelay(true);
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut out: Vec<u8> = Vec::with_capacity(16 * 1024);
    loop {
        match sock.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut cmds = Vec::new();
        let bad = parse_all(&mut buf, &mut cmds).is_err();
        if !cmds.is_empty() {
            out.clear();
            out = run(cmds, out).await;
            if sock.write_all(&out).await.is_err() {
                return;
            }
        }
        if bad {
            let _ = sock.write_all(b"-ERR Protocol error\r\n").await;
            return;
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(16 * 1024);
        }
    }
}

// ---------------------------------------------------------------- modes

async fn mode_mutex(l: TcpListener) {
    let ks = Arc::new(parking_lot::Mutex::new(Keyspace::default()));
    loop {
        let Ok((s, _)) = l.accept().await else { continue };
        let ks = ks.clone();
        tokio::spawn(serve_conn(s, move |cmds, mut out| {
            // Lock once per batch; released before the write.
            ks.lock().exec_batch(&cmds, &mut out);
            std::future::ready(out)
        }));
    }
}

async fn mode_tmutex(l: TcpListener) {
    let ks = Arc::new(tokio::sync::Mutex::new(Keyspace::default()));
    loop {
        let Ok((s, _)) = l.accept().await else { continue };
        let ks = ks.clone();
        tokio::spawn(serve_conn(s, move |cmds, mut out| {
            let ks = ks.clone();
            async move {
                ks.lock().await.exec_batch(&cmds, &mut out);
                out
            }
        }));
    }
}

type Job = (Vec<Cmd>, Vec<u8>, tokio::sync::oneshot::Sender<Vec<u8>>);

async fn mode_executor(l: TcpListener, std_chan: bool) {
    // Sender abstraction over crossbeam / std mpsc.
    #[derive(Clone)]
    enum Tx {
        Cb(crossbeam_channel::Sender<Job>),
        Std(std::sync::mpsc::Sender<Job>),
    }
    let tx = if std_chan {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::spawn(move || {
            let mut ks = Keyspace::default();
            while let Ok((cmds, mut out, reply)) = rx.recv() {
                ks.exec_batch(&cmds, &mut out);
                let _ = reply.send(out);
            }
        });
        Tx::Std(tx)
    } else {
        let (tx, rx) = crossbeam_channel::unbounded::<Job>();
        std::thread::spawn(move || {
            let mut ks = Keyspace::default();
            while let Ok((cmds, mut out, reply)) = rx.recv() {
                ks.exec_batch(&cmds, &mut out);
                let _ = reply.send(out);
            }
        });
        Tx::Cb(tx)
    };
    loop {
        let Ok((s, _)) = l.accept().await else { continue };
        let tx = tx.clone();
        tokio::spawn(serve_conn(s, move |cmds, out| {
            let tx = tx.clone();
            async move {
                let (rtx, rrx) = tokio::sync::oneshot::channel();
                let ok = match &tx {
                    Tx::Cb(t) => t.send((cmds, out, rtx)).is_ok(),
                    Tx::Std(t) => t.send((cmds, out, rtx)).is_ok(),
                };
                if !ok {
                    return Vec::new();
                }
                rrx.await.unwrap_or_default()
            }
        }));
    }
}

async fn mode_current(l: TcpListener) {
    let ks = Rc::new(RefCell::new(Keyspace::default()));
    loop {
        let Ok((s, _)) = l.accept().await else { continue };
        let ks = ks.clone();
        tokio::task::spawn_local(serve_conn(s, move |cmds, mut out| {
            ks.borrow_mut().exec_batch(&cmds, &mut out);
            std::future::ready(out)
        }));
    }
}

fn main() {
    let mut mode = String::from("current");
    let mut port: u16 = 7000;
    let mut workers: usize = 2;
    let mut chan = String::from("crossbeam");
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut v = || it.next().expect("missing flag value");
        match a.as_str() {
            "--mode" => mode = v(),
            "--port" => port = v().parse().expect("port"),
            "--workers" => workers = v().parse().expect("workers"),
            "--chan" => chan = v(),
            _ => panic!("unknown flag {a} (use --mode mutex|tmutex|executor|current --port N --workers N --chan crossbeam|std)"),
        }
    }
    let addr = format!("127.0.0.1:{port}");
    if mode == "current" {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            let l = TcpListener::bind(&addr).await.expect("bind");
            mode_current(l).await
        });
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let l = TcpListener::bind(&addr).await.expect("bind");
        match mode.as_str() {
            "mutex" => mode_mutex(l).await,
            "tmutex" => mode_tmutex(l).await,
            "executor" => mode_executor(l, chan == "std").await,
            m => panic!("unknown mode {m}"),
        }
    });
}
