//! SLOWLOG: the commands that took at least `slowlog-log-slower-than` microseconds, newest
//! first, at most `slowlog-max-len` of them, in Redis' entry format.
//!
//! The hot path is [`SlowLog::over`]: one relaxed load and one comparison of the time the
//! command took (already measured for the command stats) against the threshold. A disabled
//! log (`slowlog-log-slower-than -1`) stores `u64::MAX`, so no command is ever over it.
//! Only a command over the threshold builds an entry and takes the log's mutex.
//!
//! As in Redis: a command is logged after it ran (so `CONFIG SET slowlog-log-slower-than 0`
//! logs itself); EXEC is not logged (`skip_slowlog`), the commands it ran are; commands run
//! by scripts are logged as Redis logs its Lua client's (see [`record_script`] for the one
//! approximation), and so is the EVAL; a blocking command is logged when it is served, not
//! when it blocks. Tumbler serves a blocked command inside the command that woke it, so
//! its entry records 0 µs (Redis records the time of that last execution, also tiny).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use lockcore::engine::spec::{flag, CommandSpec};
use lockcore::num::parse_i64;
use lockcore::Reply;
use parking_lot::Mutex;

use crate::config::Config;

/// Redis' SLOWLOG_ENTRY_MAX_ARGC and SLOWLOG_ENTRY_MAX_STRING.
const MAX_ARGC: usize = 32;
const MAX_STRING: usize = 128;

struct Entry {
    id: u64,
    /// Unix seconds when the command finished.
    time: i64,
    usec: u64,
    argv: Vec<Bytes>,
    /// `ip:port` of the client.
    peer: String,
    name: Bytes,
}

pub struct SlowLog {
    /// Microseconds; `u64::MAX` when disabled.
    threshold_us: AtomicU64,
    max_len: AtomicU64,
    /// Never reset (SLOWLOG RESET keeps counting), as in Redis.
    next_id: AtomicU64,
    entries: Mutex<VecDeque<Entry>>,
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog {
            threshold_us: AtomicU64::new(10_000),
            max_len: AtomicU64::new(128),
            next_id: AtomicU64::new(0),
            entries: Mutex::new(VecDeque::new()),
        }
    }
}

impl SlowLog {
    /// Takes `slowlog-log-slower-than` and `slowlog-max-len` out of the config.
    pub fn configure(&self, cfg: &Config) {
        let t = cfg.get_i64(crate::config::key::SLOWLOG_LOG_SLOWER_THAN);
        self.threshold_us
            .store(u64::try_from(t).unwrap_or(u64::MAX), Ordering::Relaxed);
        self.max_len.store(
            cfg.get_i64(crate::config::key::SLOWLOG_MAX_LEN).max(0) as u64,
            Ordering::Relaxed,
        );
    }

    /// True if a command that took `took` belongs in the log.
    #[inline]
    pub fn over(&self, took: Duration) -> bool {
        took.as_micros() as u64 >= self.threshold_us.load(Ordering::Relaxed)
    }

    /// `slowlog-log-slower-than 0`: every command is logged, whatever it took.
    #[inline]
    pub fn logs_everything(&self) -> bool {
        self.threshold_us.load(Ordering::Relaxed) == 0
    }

    fn push(&self, argv: Vec<Bytes>, usec: u64, peer: String, name: Bytes) {
        let entry = Entry {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
            usec,
            argv,
            peer,
            name,
        };
        let max = self.max_len.load(Ordering::Relaxed) as usize;
        let mut log = self.entries.lock();
        log.push_front(entry);
        // As Redis: trimmed on push, so lowering slowlog-max-len takes effect on the next entry.
        log.truncate(max);
    }

    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn reset(&self) {
        self.entries.lock().clear();
    }

    /// The newest `count` entries as SLOWLOG GET replies them.
    fn get(&self, count: usize) -> Reply {
        let log = self.entries.lock();
        Reply::Array(
            log.iter()
                .take(count)
                .map(|e| {
                    Reply::Array(vec![
                        Reply::Int(e.id as i64),
                        Reply::Int(e.time),
                        Reply::Int(e.usec as i64),
                        Reply::Array(e.argv.iter().cloned().map(Reply::Bulk).collect()),
                        Reply::bulk_str(&e.peer),
                        Reply::Bulk(e.name.clone()),
                    ])
                })
                .collect(),
        )
    }
}

/// Logs a command `c` ran that took `took` (the caller checked [`SlowLog::over`]).
#[cold]
pub fn record(
    log: &SlowLog,
    spec: &CommandSpec,
    argv: &[Bytes],
    took: Duration,
    addr: String,
    name: Bytes,
) {
    if spec.has(flag::SKIP_SLOWLOG) {
        return;
    }
    log.push(entry_argv(argv), took.as_micros() as u64, addr, name);
}

/// Logs a command a script ran, as Redis does for its Lua client (`?:0`, no name), when it
/// alone passed the threshold (the bridge already times every `redis.call` for
/// commandstats).
#[cold]
pub fn record_script(log: &SlowLog, argv: &[Bytes], took: Duration) {
    log.push(
        entry_argv(argv),
        took.as_micros() as u64,
        "?:0".to_string(),
        Bytes::new(),
    );
}

/// The arguments an entry keeps: secrets redacted as Redis redacts them, at most 32
/// arguments (the 32nd says how many more there were) of at most 128 bytes each.
fn entry_argv(argv: &[Bytes]) -> Vec<Bytes> {
    let argv = redact(argv);
    let n = argv.len();
    let kept = n.min(MAX_ARGC);
    let mut out = Vec::with_capacity(kept);
    for (j, a) in argv.into_iter().take(kept).enumerate() {
        if kept != n && j == kept - 1 {
            out.push(Bytes::from(format!(
                "... ({} more arguments)",
                n - kept + 1
            )));
        } else if a.len() > MAX_STRING {
            let mut s = a[..MAX_STRING].to_vec();
            s.extend_from_slice(format!("... ({} more bytes)", a.len() - MAX_STRING).as_bytes());
            out.push(Bytes::from(s));
        } else {
            out.push(a);
        }
    }
    out
}

/// AUTH and HELLO passwords (as MONITOR hides them), every argument of ACL SETUSER after
/// its name's position, MIGRATE's AUTH/AUTH2 credentials, and the values of CONFIG SET's
/// sensitive parameters.
fn redact(argv: &[Bytes]) -> Vec<Bytes> {
    const REDACTED: Bytes = Bytes::from_static(b"(redacted)");
    let mut v = crate::base::argv::redact(argv);
    let sub = |s: &[u8]| v.len() > 1 && v[1].eq_ignore_ascii_case(s);
    if v[0].eq_ignore_ascii_case(b"acl") && sub(b"setuser") {
        for a in v.iter_mut().skip(2) {
            *a = REDACTED;
        }
    } else if v[0].eq_ignore_ascii_case(b"migrate") {
        let mut j = 6;
        while j < v.len() {
            let more = v.len() - 1 - j;
            if v[j].eq_ignore_ascii_case(b"auth") && more >= 1 {
                v[j + 1] = REDACTED;
                j += 1;
            } else if v[j].eq_ignore_ascii_case(b"auth2") && more >= 2 {
                v[j + 1] = REDACTED;
                v[j + 2] = REDACTED;
                j += 2;
            } else if !v[j].eq_ignore_ascii_case(b"copy") && !v[j].eq_ignore_ascii_case(b"replace")
            {
                break;
            }
            j += 1;
        }
    } else if v[0].eq_ignore_ascii_case(b"config") && sub(b"set") {
        let mut j = 2;
        while j + 1 < v.len() {
            let p = v[j].to_ascii_lowercase();
            if matches!(&p[..], b"masterauth" | b"masteruser" | b"requirepass") {
                v[j + 1] = REDACTED;
            }
            j += 2;
        }
    }
    v
}

/// SLOWLOG GET [count] | LEN | RESET | HELP.
pub fn command(log: &SlowLog, spec: &CommandSpec, a: &[Bytes]) -> Reply {
    match spec.name {
        "get" if a.len() > 3 => Reply::err(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try SLOWLOG HELP.",
            String::from_utf8_lossy(&a[1])
        )),
        "get" => {
            let count = match a.get(2) {
                None => 10,
                // Redis gives the range error for a non-integer too.
                Some(n) => match parse_i64(n) {
                    Some(-1) => usize::MAX,
                    Some(n) if n >= 0 => n as usize,
                    _ => return Reply::err("ERR count should be greater than or equal to -1"),
                },
            };
            log.get(count)
        }
        "len" => Reply::Int(log.len() as i64),
        "reset" => {
            log.reset();
            Reply::ok()
        }
        _ => help(),
    }
}

/// Valkey 8.1's COMMANDLOG GET count type | LEN type | RESET type | HELP. The `slow` log is
/// the slow log; Tumbler does not measure request and reply sizes, so the `large-request`
/// and `large-reply` logs stay empty.
pub fn commandlog(log: &SlowLog, spec: &CommandSpec, a: &[Bytes]) -> Reply {
    if spec.name == "help" {
        return commandlog_help();
    }
    let kind = &a[a.len() - 1];
    let slow = kind.eq_ignore_ascii_case(b"slow");
    if !slow
        && !kind.eq_ignore_ascii_case(b"large-request")
        && !kind.eq_ignore_ascii_case(b"large-reply")
    {
        return Reply::err(
            "ERR type should be one of the following: slow, large-request, large-reply",
        );
    }
    match spec.name {
        "get" => {
            let count = match parse_i64(&a[2]) {
                Some(-1) => usize::MAX,
                Some(n) if n >= 0 => n as usize,
                _ => return Reply::err("ERR count should be greater than or equal to -1"),
            };
            if slow {
                log.get(count)
            } else {
                Reply::Array(vec![])
            }
        }
        "len" => Reply::Int(if slow { log.len() as i64 } else { 0 }),
        _ => {
            if slow {
                log.reset();
            }
            Reply::ok()
        }
    }
}

fn commandlog_help() -> Reply {
    const HELP: &[&str] = &[
        "COMMANDLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <count> <type>",
        "    Return top <count> entries of the specified <type> from the commandlog (-1 mean all).",
        "    Entries are made of:",
        "    id, timestamp,",
        "        time in microseconds for type of slow,",
        "        or size in bytes for type of large-request,",
        "        or size in bytes for type of large-reply",
        "    arguments array, client IP and port,",
        "    client name",
        "LEN <type>",
        "    Return the length of the specified type of commandlog.",
        "RESET <type>",
        "    Reset the specified type of commandlog.",
        "HELP",
        "    Print this help.",
    ];
    Reply::Array(HELP.iter().map(|l| Reply::simple(l)).collect())
}

fn help() -> Reply {
    const HELP: &[&str] = &[
        "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(HELP.iter().map(|l| Reply::simple(l)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::from(s.to_string())
    }

    #[test]
    fn trims_long_argument_lists_and_strings() {
        let argv: Vec<Bytes> = (0..34).map(|i| b(&i.to_string())).collect();
        let e = entry_argv(&argv);
        assert_eq!(e.len(), 32);
        assert_eq!(e[30], b("30"));
        assert_eq!(e[31], b("... (3 more arguments)"));
        let long = "A".repeat(129);
        let e = entry_argv(&[b("set"), b(&long)]);
        assert_eq!(e[1], b(&format!("{}... (1 more bytes)", "A".repeat(128))));
        // Exactly 32 arguments and 128 bytes are kept whole.
        let argv: Vec<Bytes> = (0..32).map(|_| b(&"x".repeat(128))).collect();
        assert_eq!(entry_argv(&argv), argv);
    }

    #[test]
    fn redacts_secrets() {
        let e = entry_argv(&[b("acl"), b("setuser"), b("u"), b(">pw")]);
        assert_eq!(
            e,
            vec![b("acl"), b("setuser"), b("(redacted)"), b("(redacted)")]
        );
        let e = entry_argv(&[
            b("config"),
            b("set"),
            b("masterauth"),
            b("x"),
            b("hz"),
            b("5"),
        ]);
        assert_eq!(e[3], b("(redacted)"));
        assert_eq!(e[5], b("5"));
    }
}
