//! Replication as state: what a primary records after each command, and how a replica
//! applies it.
//!
//! Redis replicates the commands a primary ran (with their effects made deterministic:
//! relative TTLs as absolute ones, a script's writes instead of the script, SPOP as SREM).
//! Tumbler replicates the *state* they left: after each command the primary records, for
//! every key the command touched, the key's value and TTL as they now are (or that it is
//! gone), and for a flushed or swapped database the whole database. The same epilogue
//! that invalidates WATCH and client-side caches ([`Engine::touch_watched`]) names the keys,
//! so every write, expiry and eviction is seen, scripts and transactions included, and
//! nothing needs rewriting. The keyspace events the command sent go along, so a replica's
//! subscribers hear what Redis' replicas would.
//!
//! Each recorded [`Entry`] carries a byte offset (INFO replication's `master_repl_offset`,
//! what WAIT counts acknowledgements against) and the primary's time, which a lagging
//! replica is delayed from. The server moves entries to replicas (server/src/state/repl.rs).

use bytes::Bytes;
use std::collections::HashSet;

use crate::engine::Engine;
use crate::storage::db::Db;
use crate::storage::value::{Entry as Stored, Value};

/// What a primary has recorded since the last entry.
#[derive(Default)]
pub struct Capture {
    keys: Vec<(usize, Bytes)>,
    seen: HashSet<(usize, Bytes)>,
    whole: Vec<usize>,
    events: Vec<Event>,
    /// Entries recorded and not yet taken by the server.
    pub sealed: Vec<Entry>,
    /// The offset the next entry starts at (Redis' offsets start at 1).
    pub offset: u64,
}

/// A keyspace event to send again on the replica.
#[derive(Clone, Debug)]
pub struct Event {
    pub class: u32,
    pub event: Box<str>,
    pub db: usize,
    pub key: Bytes,
}

/// One change to a replica's keyspace.
#[derive(Clone, Debug)]
pub enum Op {
    /// The key's value and TTL now, or `None`: it is gone.
    Key(usize, Bytes, Option<Stored>),
    /// The whole database now (FLUSHDB, FLUSHALL, SWAPDB, a snapshot restored).
    Db(usize, DbImage),
}

/// A database's keys, values and TTLs, as a value replicas can share across threads
/// (a [`Db`] keeps a lookup cache that is not `Sync`).
#[derive(Clone, Debug, Default)]
pub struct DbImage(pub Vec<(Bytes, Stored)>);

impl DbImage {
    pub fn of(db: &Db) -> DbImage {
        DbImage(
            db.iter()
                .map(|(k, e)| (Bytes::copy_from_slice(k), e.clone()))
                .collect(),
        )
    }

    pub fn to_db(&self) -> Db {
        let mut d = Db::default();
        for (k, e) in &self.0 {
            d.insert_entry(k.clone(), e.clone());
        }
        d
    }
}

/// One recorded change: everything one command (or one timer step) did.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The offset after this entry.
    pub offset: u64,
    /// The primary's clock when it was recorded.
    pub time_ms: i64,
    pub ops: Vec<Op>,
    pub events: Vec<Event>,
}

impl Capture {
    /// A capture whose offsets continue from `offset`.
    pub fn starting_at(offset: u64) -> Capture {
        Capture {
            offset,
            ..Capture::default()
        }
    }

    pub(crate) fn key(&mut self, db: usize, key: &[u8]) {
        let k = (db, Bytes::copy_from_slice(key));
        if self.seen.insert(k.clone()) {
            self.keys.push(k);
        }
    }

    pub(crate) fn whole_db(&mut self, db: usize) {
        if !self.whole.contains(&db) {
            self.whole.push(db);
        }
    }

    pub(crate) fn event(&mut self, class: u32, event: &str, db: usize, key: &Bytes) {
        self.events.push(Event {
            class,
            event: event.into(),
            db,
            key: key.clone(),
        });
    }

    fn pending(&self) -> bool {
        !self.keys.is_empty() || !self.whole.is_empty() || !self.events.is_empty()
    }
}

impl Engine {
    /// Turns what the last command did into an [`Entry`] (a no-op without a capture or
    /// without changes). Called after every command; the server takes the entries.
    #[inline]
    pub fn repl_seal(&mut self) {
        if self.repl.is_some() {
            self.repl_seal_now();
        }
    }

    fn repl_seal_now(&mut self) {
        let Some(cap) = self.repl.as_deref_mut() else {
            return;
        };
        if !cap.pending() {
            return;
        }
        let keys = std::mem::take(&mut cap.keys);
        cap.seen.clear();
        let whole = std::mem::take(&mut cap.whole);
        let events = std::mem::take(&mut cap.events);
        let mut ops = Vec::with_capacity(keys.len() + whole.len());
        // Offsets grow by about what Redis would have sent: the key and a small header
        // per key, more for a whole database.
        let mut size = 0u64;
        for &db in &whole {
            ops.push(Op::Db(db, DbImage::of(&self.dbs[db])));
            size += 64;
        }
        for (db, key) in keys {
            if whole.contains(&db) {
                continue;
            }
            let now = self.dbs[db].get(&key).cloned();
            size += 24 + key.len() as u64;
            ops.push(Op::Key(db, key, now));
        }
        size += events.len() as u64;
        let time_ms = self.now_ms();
        let cap = self.repl.as_deref_mut().expect("checked above");
        cap.offset += size.max(1);
        let offset = cap.offset;
        cap.sealed.push(Entry {
            offset,
            time_ms,
            ops,
            events,
        });
    }

    /// Applies one entry on a replica: its keys and databases as the primary had them,
    /// then the primary's keyspace events. WATCH, client-side caching and blocked readers
    /// see each change as they would a local write.
    pub fn repl_apply(&mut self, e: &Entry) {
        let now = self.now_ms();
        for op in &e.ops {
            match op {
                Op::Db(db, copy) => {
                    let db = *db;
                    if db >= self.dbs.len() {
                        continue;
                    }
                    self.replace_db(db, copy.to_db());
                }
                Op::Key(db, key, state) => {
                    let db = *db;
                    if db >= self.dbs.len() {
                        continue;
                    }
                    match state {
                        Some(stored) => {
                            let mut s = stored.clone();
                            s.lru_ms = now;
                            let lock = matches!(s.value, Value::Lock(_));
                            self.dbs[db].insert_entry(key.clone(), s);
                            if lock {
                                crate::engine::locks::restored(self, db, key);
                            }
                        }
                        None => {
                            self.dbs[db].remove(key);
                        }
                    }
                    self.touch_watched(db, key);
                    self.stats.dirty += 1;
                    self.signal_ready(db, key);
                }
            }
        }
        for ev in &e.events {
            self.notify(ev.class, &ev.event, ev.db, &ev.key);
        }
    }

    /// Replaces database `db` with `with` (a full resynchronisation, a whole database of an
    /// entry, a snapshot restored whole): watchers of keys on either side are touched,
    /// caches flushed, native locks' timers and blocked clients told.
    pub fn replace_db(&mut self, db: usize, with: Db) {
        self.touch_all_watched(db, true);
        let n = self.dbs[db].len() + with.len();
        self.dbs[db] = with;
        let locks: Vec<Bytes> = self.dbs[db]
            .iter()
            .filter(|(_, e)| matches!(e.value, Value::Lock(_)))
            .map(|(k, _)| Bytes::copy_from_slice(k))
            .collect();
        for key in &locks {
            crate::engine::locks::restored(self, db, key);
        }
        self.touch_all_watched(db, true);
        self.tracking.flush();
        self.signal_db(db);
        self.stats.dirty += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ClientCtx;

    fn pair() -> (Engine, Engine) {
        let mut p = Engine::new(2);
        p.repl = Some(Box::default());
        (p, Engine::new(2))
    }

    fn ship(p: &mut Engine, r: &mut Engine) -> u64 {
        let cap = p.repl.as_deref_mut().unwrap();
        let entries = std::mem::take(&mut cap.sealed);
        let mut last = 0;
        for e in &entries {
            r.repl_apply(e);
            last = e.offset;
        }
        last
    }

    fn get(e: &mut Engine, db: usize, k: &[u8]) -> Option<Value> {
        e.dbs[db].get(k).map(|x| x.value.clone())
    }

    #[test]
    fn writes_expiry_flush_and_swap_reach_the_replica() {
        let (mut p, mut r) = pair();
        let mut cl = ClientCtx::default();
        p.run(&mut cl, &[b"SET", b"a", b"1", b"PX", b"100000"]);
        p.run(&mut cl, &[b"HSET", b"h", b"f", b"v"]);
        p.run(&mut cl, &[b"RPUSH", b"l", b"x", b"y"]);
        let o1 = ship(&mut p, &mut r);
        assert!(o1 > 0);
        assert!(get(&mut r, 0, b"a").is_some());
        assert_eq!(
            r.dbs[0].get(b"a").unwrap().expire_at(),
            p.dbs[0].get(b"a").unwrap().expire_at()
        );
        assert!(get(&mut r, 0, b"h").is_some());
        p.run(&mut cl, &[b"DEL", b"h"]);
        p.run(&mut cl, &[b"LPOP", b"l"]);
        let o2 = ship(&mut p, &mut r);
        assert!(o2 > o1);
        assert!(get(&mut r, 0, b"h").is_none());
        assert_eq!(r.dbs[0].len(), 2);
        // A transaction-like sequence with a flush in the middle ends as on the primary.
        p.run(&mut cl, &[b"SET", b"b", b"1"]);
        p.run(&mut cl, &[b"FLUSHALL"]);
        p.run(&mut cl, &[b"SET", b"c", b"1"]);
        p.run(&mut cl, &[b"SELECT", b"1"]);
        ship(&mut p, &mut r);
        assert_eq!(r.dbs[0].len(), 1);
        assert!(get(&mut r, 0, b"c").is_some());
        cl.db = 0;
        p.run(&mut cl, &[b"SWAPDB", b"0", b"1"]);
        ship(&mut p, &mut r);
        assert_eq!(r.dbs[0].len(), 0);
        assert!(get(&mut r, 1, b"c").is_some());
        // Reads record nothing.
        p.run(&mut cl, &[b"GET", b"zz"]);
        p.repl_seal();
        assert!(p.repl.as_ref().unwrap().sealed.is_empty());
    }
}
