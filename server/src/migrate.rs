//! MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
//! [AUTH2 username password] [KEYS key ...]: DUMP the keys, send RESTORE to the target
//! server over a plain TCP connection, delete each key the target acknowledged (unless
//! COPY), as Redis' `migrateCommand` does, with its replies and errors.
//!
//! Like Redis, MIGRATE is synchronous: it holds the keyspace lock while it talks to the
//! target, bounded by `timeout` ms for the connect, each write and each reply, so the keys
//! cannot change between the DUMP and the DEL. (Migrating to the same server therefore
//! times out, as it does in Redis.) Differences: Tumbler opens a new connection per MIGRATE
//! instead of caching one for 10 s (INFO's `migrate_cached_sockets` stays 0), so it always
//! sends SELECT and never needs Redis' retry on a stale cached socket; and it sends
//! RESTORE, not RESTORE-ASKING, in cluster mode (the emulated cluster does not reshard).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use bytes::Bytes;
use lockcore::num::parse_i64;
use lockcore::{error, Reply};

use crate::conn::Conn;
use crate::shared::Core;

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
    let now = core.engine.now_ms();
    let mut keys: Vec<(Bytes, i64, Vec<u8>)> = Vec::new();
    for k in &a[first_key..first_key + num_keys] {
        let Some(e) = core.engine.lookup(db, k) else {
            continue;
        };
        let ttl = match e.expire_at {
            Some(at) if at - now < 0 => continue,
            Some(at) => (at - now).max(1),
            None => 0,
        };
        let Some(payload) = lockcore::rdb::dump(&e.value, fill) else {
            return Reply::err("ERR MIGRATE of this type is not supported by tumbler");
        };
        keys.push((k.clone(), ttl, payload));
    }
    if keys.is_empty() {
        return Reply::simple("NOKEY");
    }

    let host = String::from_utf8_lossy(&a[1]).into_owned();
    let port: u16 = String::from_utf8_lossy(&a[2]).parse().unwrap_or(0);
    // Redis connects without blocking and learns of a refused connection only when it
    // writes: that is its "writing" error; a timeout or an unknown host is "connecting".
    let addr = (host.as_str(), port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut it| it.next());
    let mut sock = match addr.map(|addr| TcpStream::connect_timeout(&addr, timeout)) {
        Some(Ok(s)) => s,
        Some(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return Reply::err(WRITE_ERR)
        }
        _ => return Reply::err(CONNECT_ERR),
    };
    let _ = sock.set_nodelay(true);
    let _ = sock.set_write_timeout(Some(timeout));
    let _ = sock.set_read_timeout(Some(timeout));

    let mut out = Vec::new();
    if let Some(p) = pass {
        match user {
            Some(u) => array(&mut out, &[b"AUTH", u, p]),
            None => array(&mut out, &[b"AUTH", p]),
        }
    }
    array(&mut out, &[b"SELECT", dbid.to_string().as_bytes()]);
    for (k, ttl, payload) in &keys {
        let ttl = ttl.to_string();
        let mut args: Vec<&[u8]> = vec![b"RESTORE", k, ttl.as_bytes(), payload];
        if replace {
            args.push(b"REPLACE");
        }
        array(&mut out, &args);
    }
    if sock.write_all(&out).is_err() {
        return Reply::err(WRITE_ERR);
    }

    let mut r = BufReader::new(sock);
    let mut line = |buf: &mut String| -> bool {
        buf.clear();
        matches!(r.read_line(buf), Ok(n) if n > 0)
    };
    let (mut auth_reply, mut select_reply) = (String::new(), String::new());
    if pass.is_some() && !line(&mut auth_reply) {
        return Reply::err(READ_ERR);
    }
    if !line(&mut select_reply) {
        return Reply::err(READ_ERR);
    }
    let mut error_from_target: Option<String> = None;
    let mut socket_error = false;
    let mut reply = String::new();
    for (k, _, _) in &keys {
        if !line(&mut reply) {
            socket_error = true;
            break;
        }
        let failed = [&auth_reply, &select_reply, &reply]
            .into_iter()
            .find(|l| l.starts_with('-'));
        match failed {
            // The first error is the one reported.
            Some(err) if error_from_target.is_none() => {
                error_from_target = Some(err[1..].trim_end().to_string());
            }
            Some(_) => {}
            None if !copy => {
                core.engine.dbs[db].remove(k);
                core.engine
                    .modified(db, k, lockcore::notify::GENERIC, "del");
            }
            None => {}
        }
    }
    match error_from_target {
        Some(e) => Reply::err(format!("ERR Target instance replied with error: {e}")),
        None if socket_error => Reply::err(READ_ERR),
        None => Reply::ok(),
    }
}
