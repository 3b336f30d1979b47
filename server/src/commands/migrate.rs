//! MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
//! [AUTH2 username password] [KEYS key ...]: DUMP the keys, send RESTORE to the target
//! server over a plain TCP connection, delete each key the target acknowledged (unless
//! COPY), as Redis' `migrateCommand` does, with its replies and errors.
//!
//! Like Redis, MIGRATE is synchronous: it holds the keyspace lock while it talks to the
//! target, bounded by `timeout` ms for the connect, each write and each reply, so the keys
//! cannot change between the DUMP and the DEL. (Migrating to the same server therefore
//! times out, as it does in Redis.)
//!
//! Connections are cached per `host:port` as Redis' `migrateGetSocket` caches them: at most
//! 64, a random one dropped for a new one, each closed after 10 s unused (the timer task
//! sweeps them, as serverCron does), SELECT sent only when the target db changed, and one
//! retry on a fresh connection when a cached one turns out to be dead before the first
//! reply. INFO's `migrate_cached_sockets` counts them. The one difference: Tumbler sends
//! RESTORE, not RESTORE-ASKING, in cluster mode (the emulated cluster does not reshard).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use lockcore::num::parse_i64;
use lockcore::{error, Reply};

use crate::conn::Conn;
use crate::state::migrate::{Cached, CACHE_ITEMS};
use crate::state::Core;

fn bulk(out: &mut Vec<u8>, a: &[u8]) {
    out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
    out.extend_from_slice(a);
    out.extend_from_slice(b"\r\n");
}

fn array(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        bulk(out, a);
    }
}

const CONNECT_ERR: &str = "IOERR error or timeout connecting to the client";
const WRITE_ERR: &str = "IOERR error or timeout writing to target instance";
const READ_ERR: &str = "IOERR error or timeout reading to target instance";

pub fn command(c: &mut Conn, core: &mut Core, a: &[Bytes]) -> Reply {
    let (mut copy, mut replace) = (false, false);
    let mut user: Option<&Bytes> = None;
    let mut pass: Option<&Bytes> = None;
    let (mut first_key, mut num_keys) = (3, 1);
    let mut j = 6;
    while j < a.len() {
        let more = a.len() - 1 - j;
        let o = &a[j];
        if o.eq_ignore_ascii_case(b"copy") {
            copy = true;
        } else if o.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if o.eq_ignore_ascii_case(b"auth") {
            if more == 0 {
                return error::syntax();
            }
            j += 1;
            pass = Some(&a[j]);
        } else if o.eq_ignore_ascii_case(b"auth2") {
            if more < 2 {
                return error::syntax();
            }
            user = Some(&a[j + 1]);
            pass = Some(&a[j + 2]);
            j += 2;
        } else if o.eq_ignore_ascii_case(b"keys") {
            if !a[3].is_empty() {
                return Reply::err(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                );
            }
            first_key = j + 1;
            num_keys = a.len() - j - 1;
            break;
        } else {
            return error::syntax();
        }
        j += 1;
    }
    let (Some(timeout), Some(dbid)) = (parse_i64(&a[5]), parse_i64(&a[4])) else {
        return error::not_integer();
    };
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });

    // The keys that exist, with their payload and remaining TTL (Redis skips a key that
    // expired in between; a TTL under 1 ms is sent as 1).
    let db = c.cl.db;
    let fill = core.engine.config.list_max_listpack_size;
    let ver = core.engine.config.personality.rdb_version();
    let now = core.engine.now_ms();
    let mut keys: Vec<(Bytes, i64, Vec<u8>)> = Vec::new();
    for k in &a[first_key..first_key + num_keys] {
        let Some(e) = core.engine.lookup(db, k) else {
            continue;
        };
        let ttl = match e.expire_at() {
            Some(at) if at - now < 0 => continue,
            Some(at) => (at - now).max(1),
            None => 0,
        };
        let Some(payload) = lockcore::storage::rdb::dump(&e.value, fill, ver) else {
            return Reply::err("ERR MIGRATE of this type is not supported by tumbler");
        };
        keys.push((k.clone(), ttl, payload));
    }
    if keys.is_empty() {
        return Reply::simple("NOKEY");
    }

    let host = String::from_utf8_lossy(&a[1]).into_owned();
    let port: u16 = String::from_utf8_lossy(&a[2]).parse().unwrap_or(0);
    let name = format!("{host}:{}", String::from_utf8_lossy(&a[2]));
    let job = Job {
        dbid,
        timeout,
        copy,
        replace,
        user,
        pass,
        keys: &keys,
    };
    let cache = &c.shared.migrate_sockets;
    let mut map = cache.map.lock();
    let mut may_retry = true;
    // Redis' try_again / socket_err: a connection that failed is closed, and the command is
    // tried once more on a new one unless the failure was a timeout or keys had already
    // been acknowledged.
    let reply = loop {
        if !map.contains_key(&name) {
            if map.len() == CACHE_ITEMS {
                if let Some(k) = map.keys().next().cloned() {
                    map.remove(&k);
                }
            }
            match connect(&host, port, timeout) {
                Ok(conn) => {
                    map.insert(
                        name.clone(),
                        Cached {
                            conn,
                            last_dbid: -1,
                            last_use: Instant::now(),
                            dead: false,
                        },
                    );
                }
                Err(e) => break e,
            }
        }
        let cs = map.get_mut(&name).expect("cached above");
        match attempt(cs, &job, core, db) {
            Ok(reply) => {
                if cs.dead {
                    map.remove(&name);
                }
                break reply;
            }
            Err(failure) => {
                map.remove(&name);
                if !failure.timed_out && failure.retryable && may_retry {
                    may_retry = false;
                    continue;
                }
                break Reply::err(if failure.writing { WRITE_ERR } else { READ_ERR });
            }
        }
    };
    cache.len.store(map.len(), Ordering::Relaxed);
    reply
}

/// What one MIGRATE sends.
struct Job<'a> {
    dbid: i64,
    timeout: Duration,
    copy: bool,
    replace: bool,
    user: Option<&'a Bytes>,
    pass: Option<&'a Bytes>,
    keys: &'a [(Bytes, i64, Vec<u8>)],
}

/// A socket error: whether it was a timeout, whether it happened writing, and whether
/// nothing had been processed yet (so a retry is safe).
struct Failure {
    timed_out: bool,
    writing: bool,
    retryable: bool,
}

/// A new connection to the target.
fn connect(host: &str, port: u16, timeout: Duration) -> Result<BufReader<TcpStream>, Reply> {
    // Redis connects without blocking and learns of a refused connection only when it
    // writes: that is its "writing" error; a timeout or an unknown host is "connecting".
    let addr = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut it| it.next());
    match addr.map(|addr| TcpStream::connect_timeout(&addr, timeout)) {
        Some(Ok(s)) => {
            let _ = s.set_nodelay(true);
            Ok(BufReader::new(s))
        }
        Some(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            Err(Reply::err(WRITE_ERR))
        }
        _ => Err(Reply::err(CONNECT_ERR)),
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Reads one reply line; Err(timed out) when the connection failed or closed.
fn line(conn: &mut BufReader<TcpStream>, buf: &mut String) -> Result<(), bool> {
    buf.clear();
    match conn.read_line(buf) {
        Ok(n) if n > 0 => Ok(()),
        Ok(_) => Err(false),
        Err(e) => Err(is_timeout(&e)),
    }
}

/// One exchange over `cs`: AUTH if asked, SELECT if the target's db is not known to be
/// `dbid`, a RESTORE per key; each acknowledged key is deleted here unless COPY.
fn attempt(cs: &mut Cached, job: &Job<'_>, core: &mut Core, db: usize) -> Result<Reply, Failure> {
    cs.last_use = Instant::now();
    let sock = cs.conn.get_ref();
    let _ = sock.set_write_timeout(Some(job.timeout));
    let _ = sock.set_read_timeout(Some(job.timeout));
    let select = cs.last_dbid != job.dbid;
    let fail = |timed_out, writing, retryable| Failure {
        timed_out,
        writing,
        retryable,
    };

    let mut out = Vec::new();
    if let Some(p) = job.pass {
        match job.user {
            Some(u) => array(&mut out, &[b"AUTH", u, p]),
            None => array(&mut out, &[b"AUTH", p]),
        }
    }
    if select {
        array(&mut out, &[b"SELECT", job.dbid.to_string().as_bytes()]);
    }
    for (k, ttl, payload) in job.keys {
        let ttl = ttl.to_string();
        let mut args: Vec<&[u8]> = vec![b"RESTORE", k, ttl.as_bytes(), payload];
        if job.replace {
            args.push(b"REPLACE");
        }
        array(&mut out, &args);
    }
    if let Err(e) = cs.conn.get_mut().write_all(&out) {
        return Err(fail(is_timeout(&e), true, true));
    }

    let (mut auth_reply, mut select_reply) = (String::new(), String::new());
    if job.pass.is_some() {
        line(&mut cs.conn, &mut auth_reply).map_err(|t| fail(t, false, true))?;
    }
    if select {
        line(&mut cs.conn, &mut select_reply).map_err(|t| fail(t, false, true))?;
    }
    let mut error_from_target: Option<String> = None;
    let mut reply = String::new();
    for (j, (k, _, _)) in job.keys.iter().enumerate() {
        if let Err(t) = line(&mut cs.conn, &mut reply) {
            return match error_from_target {
                // The target's error is the reply; the connection is closed all the same.
                Some(e) => {
                    cs.dead = true;
                    Ok(Reply::err(format!(
                        "ERR Target instance replied with error: {e}"
                    )))
                }
                None => Err(fail(t, false, j == 0)),
            };
        }
        let failed = [&auth_reply, &select_reply, &reply]
            .into_iter()
            .find(|l| l.starts_with('-'));
        match failed {
            // The first error is the one reported, and the db is no longer known.
            Some(err) if error_from_target.is_none() => {
                cs.last_dbid = -1;
                error_from_target = Some(err[1..].trim_end().to_string());
            }
            Some(_) => {}
            None if !job.copy => {
                core.engine.dbs[db].remove(k);
                core.engine
                    .modified(db, k, lockcore::storage::notify::GENERIC, "del");
            }
            None => {}
        }
    }
    Ok(match error_from_target {
        Some(e) => Reply::err(format!("ERR Target instance replied with error: {e}")),
        None => {
            cs.last_dbid = job.dbid;
            Reply::ok()
        }
    })
}

crate::server_command!(["migrate"], |c, g, _, a| command(
    c,
    crate::state::core(g),
    a
));
