//! `TUMBLER.STATE`: the whole keyspace as text a person reads when a test has failed. The
//! test packages write it beside an RDB of the same keyspace (docs/snapshots.md): keys,
//! types, TTLs and values, native-lock holders and the clients waiting on each key, and
//! the lock-order checker's report.
//!
//! Long values are cut: a string after [`MAX_BYTES`] bytes, a collection after
//! [`MAX_ITEMS`] items, each with a note of what was left out. The RDB holds everything.

use bytes::Bytes;
use std::fmt::Write;

use crate::engine::spec::{flag::*, CommandSpec, Ctx, Exec, BASE};
use crate::engine::Engine;
use crate::reply::{repr, Reply};
use crate::storage::value::{Entry, Value};

/// The bytes of a string printed before it is cut.
pub const MAX_BYTES: usize = 512;
/// The items of a collection printed before it is cut.
pub const MAX_ITEMS: usize = 64;

/// `s` quoted as Redis quotes values in MONITOR and logs ([`repr`]), cut after
/// [`MAX_BYTES`] with a note of the bytes left out.
fn quoted(out: &mut String, s: &[u8]) {
    out.push_str(&repr(&s[..s.len().min(MAX_BYTES)]));
    if s.len() > MAX_BYTES {
        let _ = write!(out, " (... {} more bytes)", s.len() - MAX_BYTES);
    }
}

fn item(out: &mut String, s: &[u8]) {
    out.push_str("    ");
    quoted(out, s);
    out.push('\n');
}

fn pair(out: &mut String, a: &[u8], b: &[u8]) {
    out.push_str("    ");
    quoted(out, a);
    out.push_str(" => ");
    quoted(out, b);
    out.push('\n');
}

fn more(out: &mut String, len: usize) {
    if len > MAX_ITEMS {
        let _ = writeln!(out, "    (... {} more)", len - MAX_ITEMS);
    }
}

/// One key: its header line, then its contents indented.
fn key(out: &mut String, eng: &Engine, db: usize, k: &[u8], e: &Entry, now: i64) {
    let v = &e.value;
    out.push_str("  ");
    quoted(out, k);
    let _ = write!(out, " {} encoding={}", v.type_name(), e.encoding());
    match e.expire_at() {
        Some(t) => {
            let _ = write!(out, " ttl={}ms", (t - now).max(0));
        }
        None => out.push_str(" ttl=none"),
    }
    match v {
        Value::Str(s) => {
            out.push_str(" value=");
            quoted(out, s);
            out.push('\n');
        }
        Value::Hash(h) => {
            let _ = writeln!(out, " fields={}", h.len());
            for (f, x, t) in h.iter_ttl().take(MAX_ITEMS) {
                pair(out, f, x);
                if t != crate::storage::value::NO_TTL {
                    // The field's TTL on the line of its pair.
                    if out.ends_with('\n') {
                        out.pop();
                    }
                    let _ = writeln!(out, " ttl={}ms", (t - now).max(0));
                }
            }
            more(out, h.len());
        }
        Value::List(l) => {
            let _ = writeln!(out, " len={}", l.len());
            for x in l.iter().take(MAX_ITEMS) {
                item(out, x);
            }
            more(out, l.len());
        }
        Value::Set(s) => {
            let _ = writeln!(out, " members={}", s.len());
            for x in s.ordered().iter().take(MAX_ITEMS) {
                item(out, x);
            }
            more(out, s.len());
        }
        Value::ZSet(z) => {
            let _ = writeln!(out, " members={}", z.len());
            for (m, score) in z.range(0, z.len().min(MAX_ITEMS)) {
                out.push_str("    ");
                quoted(out, &m);
                let _ = writeln!(out, " score={}", crate::num::fmt_double_17g(score));
            }
            more(out, z.len());
        }
        Value::Stream(s) => {
            let _ = writeln!(
                out,
                " entries={} last-id={}-{} groups={}",
                s.entries.len(),
                s.last_id.0,
                s.last_id.1,
                s.groups.len()
            );
            for (id, fields) in s.entries.iter().take(MAX_ITEMS) {
                let _ = write!(out, "    {}-{}", id.0, id.1);
                for f in fields {
                    out.push(' ');
                    quoted(out, f);
                }
                out.push('\n');
            }
            more(out, s.entries.len());
            for (name, g) in &s.groups {
                out.push_str("    group ");
                quoted(out, name);
                let _ = writeln!(
                    out,
                    " last-delivered-id={}-{} pending={} consumers={}",
                    g.last_id.0,
                    g.last_id.1,
                    g.pel.len(),
                    g.consumers.len()
                );
            }
        }
        Value::VSet(v) => {
            let _ = writeln!(
                out,
                " elements={} dim={} quant={} m={}",
                v.len(),
                v.dim,
                v.quant.name(),
                v.m
            );
            let mut names: Vec<&Bytes> = v.elems.keys().collect();
            names.sort();
            for x in names.iter().take(MAX_ITEMS) {
                item(out, x);
            }
            more(out, v.len());
        }
        Value::Lock(l) => {
            let _ = writeln!(out, " holders={}", l.holders.len());
            for h in &l.holders {
                out.push_str("    holder ");
                quoted(out, &h.owner);
                let _ = write!(
                    out,
                    " holds={} reads={} token={}",
                    h.holds, h.reads, h.token
                );
                match h.lease_until {
                    Some(t) => {
                        let _ = write!(out, " lease={}ms", (t - now).max(0));
                    }
                    None => out.push_str(" lease=none"),
                }
                if let Some(c) = h.session {
                    let _ = write!(out, " session=client:{c}");
                }
                out.push('\n');
            }
        }
    }
    let waiters = eng.waiters(db, &Bytes::copy_from_slice(k));
    for (id, cmd) in waiters {
        let _ = writeln!(out, "    waiter client:{id} blocked in {cmd}");
    }
}

/// The text `TUMBLER.STATE` returns.
pub fn render(eng: &Engine) -> String {
    let now = eng.now_ms();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Tumbler keyspace at {now} ms (server clock), last fencing token {}",
        eng.locks.last_token()
    );
    for (db, d) in eng.dbs.iter().enumerate() {
        if d.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\n# db{db}: {} keys, {} with a TTL",
            d.len(),
            d.expires_count()
        );
        let mut keys: Vec<(&[u8], &Entry)> = d.iter().collect();
        keys.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (k, e) in keys {
            key(&mut out, eng, db, k, e, now);
        }
    }
    let blocked = eng.blocked_count();
    let _ = writeln!(out, "\n# blocked clients: {blocked}");
    out.push_str("\n# lockdep\n");
    match eng.lockdep.as_deref() {
        Some(ld) => out.push_str(&ld.report()),
        None => out.push_str("off (start with --lockdep yes to record lock order)"),
    }
    out.push('\n');
    out
}

pub const STATE: &str = "tumbler.state";

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: STATE,
    arity: 1,
    flags: NOSCRIPT | LOADING | STALE,
    group: "server",
    since: "0.1.0",
    summary: "Returns the whole keyspace, its locks and waiters as readable text.",
    acl: &["slow", "dangerous"],
    exec: Exec::Engine(state_cmd),
    ..BASE
}];

fn state_cmd(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    Reply::Bulk(Bytes::from(render(ctx.eng)))
}
