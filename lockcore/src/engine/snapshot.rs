//! In-memory snapshots of one database (`TUMBLER.SNAPSHOT`), so that a test suite seeds its
//! fixtures once and puts them back after each test for the price of what the test changed.
//!
//! A snapshot is a copy of the db's entries ([`Db::copy`]: values share their byte buffers
//! with the live keys, so the copy costs the tables and the small values). Saving makes the
//! snapshot the db's *baseline*: from then on the db names every key it changes
//! (db.rs, [`Changes`](crate::storage::db::Changes)). Restoring the baseline puts back only
//! those keys; restoring any other snapshot, or after FLUSHDB or more changed keys than the
//! snapshot holds, copies the whole snapshot in. Either way the restored snapshot is the
//! baseline afterwards, so a restore after every test costs what each test changed.
//!
//! What a restore does around the data (docs/snapshots.md):
//! - WATCH is touched and tracking invalidated for the keys it changes (all of them when
//!   it copies the whole db), and clients blocked on those keys are re-tried, as after a
//!   write; it sends no keyspace events.
//! - Native locks come back with the holders that have a lease, whose timers are set
//!   again. A holder bound to its connection (SESSION) does not come back: the grant
//!   belongs to that connection, not to the data. Fencing tokens never go back: the counter
//!   is server-wide and keeps counting up.
//! - Pub/sub, scripts and functions, the lock-order checker and the other databases are
//!   left as they are.

use bytes::Bytes;
use std::collections::BTreeMap;

use crate::engine::spec::{flag::*, CommandSpec, Ctx, Exec, BASE};
use crate::engine::Engine;
use crate::reply::Reply;
use crate::storage::db::Db;
use crate::storage::value::{Entry, Value};

/// A named copy of one db.
#[derive(Debug)]
pub struct Snapshot {
    id: u64,
    db: Db,
}

/// The snapshots of a server, by name.
#[derive(Debug, Default)]
pub struct Snapshots {
    last_id: u64,
    by_name: BTreeMap<Bytes, Snapshot>,
}

/// Past an eighth of the snapshot's keys changed (or this many, if more), a restore copies
/// the whole snapshot instead of remembering more keys. Putting back one changed key costs
/// about ten times what copying one key does, because the changed keys come in no order
/// while a copy walks both tables in order (bench/snapshot.sh on 1,000,000 keys: 10,000
/// changed keys put back in 16 ms, all of them in 2.8 s of CPU; a whole copy, 0.3 s).
const MIN_CHANGES_LIMIT: usize = 1024;

fn changes_limit(snapshot_keys: usize) -> usize {
    (snapshot_keys / 8).max(MIN_CHANGES_LIMIT)
}

impl Snapshots {
    pub fn names(&self) -> impl Iterator<Item = &Bytes> {
        self.by_name.keys()
    }
}

/// Saves `db` as snapshot `name` (replacing one of that name) and makes it the baseline.
pub fn save(eng: &mut Engine, db: usize, name: Bytes) {
    let snaps = &mut eng.snapshots;
    snaps.last_id += 1;
    let id = snaps.last_id;
    let copy = eng.dbs[db].copy();
    let limit = changes_limit(copy.len());
    if let Some(old) = snaps.by_name.insert(name, Snapshot { id, db: copy }) {
        untrack(&mut eng.dbs, old.id);
    }
    eng.dbs[db].track_changes(id, limit);
}

/// Makes `db` what snapshot `name` holds. False if there is no such snapshot.
pub fn restore(eng: &mut Engine, db: usize, name: &[u8]) -> bool {
    let Some(snap) = eng.snapshots.by_name.get(name) else {
        return false;
    };
    let (id, limit) = (snap.id, changes_limit(snap.db.len()));
    let changes = eng.dbs[db].take_changes();
    match changes {
        Some(c) if c.base == id && !c.all => {
            let snap = &eng.snapshots.by_name[name];
            let mut changed = Vec::with_capacity(c.keys.len());
            for key in c.keys {
                let live = &mut eng.dbs[db];
                let old = snap.db.get(&key);
                // The changes name keys that were only read, too: those are left alone,
                // and so are their watchers.
                match (live.get(&key), old) {
                    (Some(now), Some(then)) if same(now, then) => continue,
                    (None, None) => continue,
                    _ => {}
                }
                live.remove(&key);
                if let Some(e) = old {
                    live.insert_entry(key.clone(), e.clone());
                }
                changed.push(key);
            }
            for key in &changed {
                crate::engine::locks::restored(eng, db, key);
                eng.touch_watched(db, key);
                eng.signal_ready(db, key);
            }
            eng.stats.dirty += changed.len() as u64;
        }
        _ => {
            let copy = eng.snapshots.by_name[name].db.copy();
            eng.replace_db(db, copy);
        }
    }
    eng.dbs[db].track_changes(id, limit);
    true
}

/// Whether two entries hold the same data: value, encoding and TTL (not the access time).
/// A stream always counts as changed, which only costs its copy and its watchers a touch.
fn same(a: &Entry, b: &Entry) -> bool {
    if a.expire_at() != b.expire_at() || a.raw() != b.raw() {
        return false;
    }
    match (&a.value, &b.value) {
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Hash(x), Value::Hash(y)) => {
            x.encoding() == y.encoding() && x.len() == y.len() && x.iter_ttl().eq(y.iter_ttl())
        }
        (Value::List(x), Value::List(y)) => x == y,
        (Value::Set(x), Value::Set(y)) => {
            x.is_intset() == y.is_intset() && x.len() == y.len() && x.ordered() == y.ordered()
        }
        (Value::ZSet(x), Value::ZSet(y)) => {
            x.is_big() == y.is_big()
                && x.len() == y.len()
                && (0..x.len()).all(|i| match (x.nth(i), y.nth(i)) {
                    (Some((s, m)), Some((t, n))) => s.to_bits() == t.to_bits() && m == n,
                    _ => false,
                })
        }
        (Value::Lock(x), Value::Lock(y)) => {
            x.kind == y.kind
                && x.holders.len() == y.holders.len()
                && x.holders.iter().zip(&y.holders).all(|(h, k)| {
                    (
                        &h.owner,
                        h.holds,
                        h.reads,
                        h.token,
                        h.lease_until,
                        h.session,
                    ) == (
                        &k.owner,
                        k.holds,
                        k.reads,
                        k.token,
                        k.lease_until,
                        k.session,
                    )
                })
        }
        (Value::VSet(x), Value::VSet(y)) => x.serialize() == y.serialize(),
        _ => false,
    }
}

/// Forgets snapshot `name`; false if there was none.
pub fn drop(eng: &mut Engine, name: &[u8]) -> bool {
    match eng.snapshots.by_name.remove(name) {
        Some(s) => {
            untrack(&mut eng.dbs, s.id);
            true
        }
        None => false,
    }
}

/// Stops the dbs whose baseline is snapshot `id` from naming their changes.
fn untrack(dbs: &mut [Db], id: u64) {
    for d in dbs.iter_mut().filter(|d| d.baseline() == Some(id)) {
        d.take_changes();
    }
}

// ---------------------------------------------------------------- TUMBLER.SNAPSHOT

pub const SNAPSHOT: &str = "tumbler.snapshot";

const fn sub(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        parent: SNAPSHOT,
        arity,
        flags,
        group: "server",
        since: "0.1.0",
        summary,
        acl: &["slow", "dangerous"],
        exec: Exec::Engine(h),
        ..BASE
    }
}

// NOSCRIPT: a script must not swap the keyspace under the keys it declared.
pub static SNAPSHOT_SUBS: &[CommandSpec] = &[
    sub(
        "save",
        3,
        NOSCRIPT | DENYOOM,
        "Copies the selected database into a named in-memory snapshot.",
        save_cmd,
    ),
    sub(
        "restore",
        3,
        WRITE | NOSCRIPT,
        "Makes the selected database what a snapshot holds.",
        restore_cmd,
    ),
    sub(
        "list",
        2,
        NOSCRIPT | LOADING | STALE,
        "Returns the names of the snapshots.",
        list_cmd,
    ),
    sub(
        "drop",
        3,
        NOSCRIPT | LOADING | STALE,
        "Forgets a snapshot.",
        drop_cmd,
    ),
    sub(
        "help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
        help_cmd,
    ),
];

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: SNAPSHOT,
    arity: -2,
    flags: 0,
    group: "server",
    since: "0.1.0",
    summary: "A container for in-memory snapshots of a database (tests).",
    exec: Exec::Container,
    subcommands: SNAPSHOT_SUBS,
    ..BASE
}];

fn save_cmd(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let db = ctx.dbi();
    save(ctx.eng, db, a[2].clone());
    Reply::ok()
}

fn restore_cmd(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let db = ctx.dbi();
    if restore(ctx.eng, db, &a[2]) {
        Reply::ok()
    } else {
        no_such(&a[2])
    }
}

fn list_cmd(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    Reply::Array(
        ctx.eng
            .snapshots
            .names()
            .cloned()
            .map(Reply::Bulk)
            .collect(),
    )
}

fn drop_cmd(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    Reply::Int(drop(ctx.eng, &a[2]) as i64)
}

fn help_cmd(_: &mut Ctx, _: &[Bytes]) -> Reply {
    const HELP: &[&str] = &[
        "TUMBLER.SNAPSHOT <subcommand> [<arg> ...]. Subcommands are:",
        "SAVE <name>",
        "    Copy the selected database into snapshot <name> (replacing one of that name).",
        "RESTORE <name>",
        "    Make the selected database what <name> holds; other databases are untouched.",
        "LIST",
        "    Return the names of the snapshots.",
        "DROP <name>",
        "    Forget snapshot <name>.",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(HELP.iter().map(|l| Reply::simple(l)).collect())
}

fn no_such(name: &[u8]) -> Reply {
    Reply::err(format!(
        "ERR no such snapshot '{}'",
        String::from_utf8_lossy(name)
    ))
}
