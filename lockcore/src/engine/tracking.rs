//! Client-side caching (`CLIENT TRACKING`): which clients cached which keys, and the
//! invalidations owed to them, as Redis 7.0's tracking.c keeps them.
//!
//! The engine records reads of tracking clients (default mode) and every modified key; the
//! server drains [`Tracking::pending`] after each command, under the keyspace lock, and
//! turns each entry into a push (or a `__redis__:invalidate` message for a redirect).

use std::collections::{BTreeMap, HashMap, HashSet};

use bytes::Bytes;

use crate::storage::ClientId;

/// One client's tracking mode (`CLIENT TRACKING on ...`).
#[derive(Debug, Clone, Default)]
pub struct TrackState {
    pub redirect: ClientId,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// The redirect client was gone at the last invalidation.
    pub broken_redirect: bool,
    pub prefixes: Vec<Bytes>,
}

/// An invalidation to deliver: `None` keys is the null invalidation of FLUSHDB/FLUSHALL.
pub type Invalidation = (ClientId, Option<Vec<Bytes>>);

/// A BCAST prefix: its clients, and the keys modified under it with who modified each.
type PrefixEntry = (HashSet<ClientId>, Vec<(Bytes, ClientId)>);

#[derive(Debug, Default)]
pub struct Tracking {
    pub clients: HashMap<ClientId, TrackState>,
    /// Default mode: key -> clients that may have cached it.
    table: HashMap<Bytes, HashSet<ClientId>>,
    /// BCAST: prefix -> (clients, keys modified under it since the last flush with the
    /// client that modified each, for NOLOOP).
    /// Ordered as Redis' radix tree, which sets the order of the messages.
    prefixes: BTreeMap<Bytes, PrefixEntry>,
    /// The declared keys (KEYS) of the running script of a tracking client.
    pub script_keys: Vec<Bytes>,
    /// The client whose command runs now (NOLOOP).
    pub current: ClientId,
    /// Invalidations owed, in order; the server drains them.
    pub pending: Vec<Invalidation>,
    /// `tracking-table-max-keys` (0 = unlimited).
    pub max_keys: usize,
    /// Items (key, client) in the table, for INFO `tracking_total_items`.
    items: usize,
}

fn overlaps(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

impl Tracking {
    pub fn is_tracking(&self, id: ClientId) -> bool {
        self.clients.contains_key(&id)
    }

    pub fn state(&self, id: ClientId) -> Option<&TrackState> {
        self.clients.get(&id)
    }

    /// Checks new BCAST prefixes against the client's and each other (Redis'
    /// `checkPrefixCollisionsOrReply`); the error text on a collision.
    pub fn prefix_collision(&self, id: ClientId, new: &[Bytes]) -> Option<String> {
        let old: &[Bytes] = self.clients.get(&id).map_or(&[], |s| &s.prefixes);
        for (i, p) in new.iter().enumerate() {
            if let Some(o) = old.iter().find(|o| overlaps(o, p)) {
                return Some(format!(
                    "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                    String::from_utf8_lossy(p),
                    String::from_utf8_lossy(o)
                ));
            }
            if let Some(q) = new[i + 1..].iter().find(|q| overlaps(p, q)) {
                return Some(format!(
                    "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                    String::from_utf8_lossy(p),
                    String::from_utf8_lossy(q)
                ));
            }
        }
        None
    }

    /// `CLIENT TRACKING on`: options accumulate on an already tracking client, as in Redis.
    pub fn enable(&mut self, id: ClientId, opts: &TrackState, prefixes: Vec<Bytes>) {
        let s = self.clients.entry(id).or_default();
        s.broken_redirect = false;
        s.redirect = opts.redirect;
        s.bcast |= opts.bcast;
        s.optin |= opts.optin;
        s.optout |= opts.optout;
        s.noloop |= opts.noloop;
        if opts.bcast {
            let prefixes = if prefixes.is_empty() {
                vec![Bytes::new()]
            } else {
                prefixes
            };
            for p in prefixes {
                if !s.prefixes.contains(&p) {
                    s.prefixes.push(p.clone());
                }
                self.prefixes.entry(p).or_default().0.insert(id);
            }
        }
    }

    /// `CLIENT TRACKING off`, RESET, disconnect. Its keys stay in the table until touched.
    pub fn disable(&mut self, id: ClientId) {
        let Some(s) = self.clients.remove(&id) else {
            return;
        };
        for p in s.prefixes {
            if let Some(e) = self.prefixes.get_mut(&p) {
                e.0.remove(&id);
                if e.0.is_empty() {
                    self.prefixes.remove(&p);
                }
            }
        }
    }

    /// A read-only command of `id` read `keys` (Redis' `trackingRememberKeys`).
    pub fn remember(&mut self, id: ClientId, caching: bool, keys: impl Iterator<Item = Bytes>) {
        let Some(s) = self.clients.get(&id) else {
            return;
        };
        if s.bcast || (s.optin && !caching) || (s.optout && caching) {
            return;
        }
        for k in keys {
            if self.table.entry(k).or_default().insert(id) {
                self.items += 1;
            }
        }
        self.enforce_max_keys();
    }

    /// Past `tracking-table-max-keys`, evicts keys (sending their invalidation), as Redis'
    /// `trackingLimitUsedSlots` does.
    pub fn enforce_max_keys(&mut self) {
        if self.max_keys == 0 {
            return;
        }
        while self.table.len() > self.max_keys {
            let Some(k) = self.table.keys().next().cloned() else {
                break;
            };
            self.invalidate_default(&k, 0);
        }
    }

    /// `key` was modified (any db, as Redis' table ignores dbs).
    pub fn invalidate(&mut self, key: &[u8]) {
        if self.clients.is_empty() && self.table.is_empty() {
            return;
        }
        let current = self.current;
        if !self.prefixes.is_empty() {
            for (p, (_, keys)) in self.prefixes.iter_mut() {
                if key.starts_with(p) {
                    keys.push((Bytes::copy_from_slice(key), current));
                }
            }
        }
        self.invalidate_default(key, current);
    }

    fn invalidate_default(&mut self, key: &[u8], current: ClientId) {
        let Some(ids) = self.table.remove(key) else {
            return;
        };
        self.items -= ids.len();
        let mut ids: Vec<ClientId> = ids.into_iter().collect();
        ids.sort_unstable();
        for id in ids {
            let Some(s) = self.clients.get(&id) else {
                continue;
            };
            if s.bcast || (s.noloop && id == current) {
                continue;
            }
            self.pending
                .push((id, Some(vec![Bytes::copy_from_slice(key)])));
        }
    }

    /// FLUSHDB/FLUSHALL: every tracking client gets a null invalidation and the table is
    /// emptied (Redis' `trackingInvalidateKeysOnFlush`).
    pub fn flush(&mut self) {
        let mut ids: Vec<ClientId> = self.clients.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            self.pending.push((id, None));
        }
        self.table.clear();
        self.items = 0;
    }

    /// Moves the BCAST keys collected since the last call into `pending`, one message per
    /// client and prefix (Redis' `trackingBroadcastInvalidationMessages`).
    pub fn flush_broadcast(&mut self) {
        // Every batch ends here (the keyspace guard's drop): nothing to do without BCAST.
        if self.prefixes.is_empty() {
            return;
        }
        let mut out = Vec::new();
        for (clients, keys) in self.prefixes.values_mut() {
            if keys.is_empty() {
                continue;
            }
            let mut ids: Vec<ClientId> = clients.iter().copied().collect();
            ids.sort_unstable();
            for id in ids {
                let noloop = self.clients.get(&id).is_some_and(|s| s.noloop);
                let ks: Vec<Bytes> = keys
                    .iter()
                    .filter(|(_, by)| !(noloop && *by == id))
                    .map(|(k, _)| k.clone())
                    .collect();
                if !ks.is_empty() {
                    out.push((id, Some(ks)));
                }
            }
            keys.clear();
        }
        self.pending.extend(out);
    }

    /// Takes the invalidations owed to `id` itself without a redirect: the connection
    /// writes them right after its reply, as Redis 7.0 does for the current client.
    /// Whether any invalidation waits to be sent (checked after every command).
    #[inline]
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    pub fn take_own(&mut self, id: ClientId) -> Vec<Option<Vec<Bytes>>> {
        if self.pending.is_empty() || self.clients.get(&id).is_none_or(|s| s.redirect != 0) {
            return Vec::new();
        }
        let mut own = Vec::new();
        self.pending.retain_mut(|(to, keys)| {
            if *to == id {
                own.push(keys.take());
                false
            } else {
                true
            }
        });
        own
    }

    /// INFO: tracking_total_keys, tracking_total_items, tracking_total_prefixes.
    pub fn totals(&self) -> (usize, usize, usize) {
        (self.table.len(), self.items, self.prefixes.len())
    }
}
