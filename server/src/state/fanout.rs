//! Pub/sub fan-out: who listens to which channel, and delivery.
//!
//! The tables are `DashMap`s outside the keyspace lock: SUBSCRIBE never needs the keyspace,
//! and PUBLISH (from a client, a script or a keyspace event) only reads them. Messages are
//! queued on each subscriber's channel in the order the publisher sent them.

use bytes::Bytes;
use dashmap::DashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use lockcore::{ClientId, Reply};

use crate::state::{ClientHandle, Msg};

#[derive(Default)]
pub struct PubSub {
    pub channels: DashMap<Bytes, Vec<Arc<ClientHandle>>>,
    pub patterns: DashMap<Bytes, Vec<Arc<ClientHandle>>>,
    pub shard_channels: DashMap<Bytes, Vec<Arc<ClientHandle>>>,
    /// `client-output-buffer-limit pubsub <hard> <soft> <soft-seconds>`, copied here by
    /// [`PubSub::set_limits`] so that delivery never reads the config table.
    pub limit: crate::state::climits::ClassLimit,
    /// Subscribers disconnected by that limit at delivery.
    pub limit_kills: AtomicU64,
}

/// Adds `c` to `table[name]`; false if it was already there.
pub fn add(
    table: &DashMap<Bytes, Vec<Arc<ClientHandle>>>,
    name: &Bytes,
    c: &Arc<ClientHandle>,
) -> bool {
    let mut v = table.entry(name.clone()).or_default();
    if v.iter().any(|h| h.id == c.id) {
        return false;
    }
    v.push(c.clone());
    true
}

/// Removes client `id` from `table[name]`; false if it was not there.
pub fn remove(table: &DashMap<Bytes, Vec<Arc<ClientHandle>>>, name: &Bytes, id: ClientId) -> bool {
    let mut removed = false;
    let empty = match table.get_mut(name) {
        Some(mut v) => {
            let before = v.len();
            v.retain(|h| h.id != id);
            removed = v.len() != before;
            v.is_empty()
        }
        None => false,
    };
    if empty {
        table.remove_if(name, |_, v| v.is_empty());
    }
    removed
}

/// Queues `msg` for subscriber `c`, enforcing the pubsub output buffer limits like
/// Redis' `checkClientOutputBufferLimits`: past the hard limit, or past the soft limit for
/// longer than the soft seconds, the subscriber is disconnected instead of letting its
/// backlog grow. A client already condemned gets nothing more (it is still counted as a
/// receiver, as in Redis).
pub fn deliver(ps: &PubSub, c: &ClientHandle, msg: Reply) {
    if c.killed.load(Ordering::Relaxed) {
        return;
    }
    let cost = crate::state::climits::push_cost(&msg);
    let pending = c.pending_out.fetch_add(cost, Ordering::Relaxed) + cost;
    if ps.limit.over(c, pending) {
        c.killed.store(true, Ordering::Relaxed);
        ps.limit_kills.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            client = c.id,
            addr = %c.addr,
            "Client scheduled to be closed ASAP for overcoming of output buffer limits."
        );
        c.send(Msg::Kill);
        return;
    }
    c.send(Msg::Push(msg));
}

impl PubSub {
    /// Takes the pubsub class of `client-output-buffer-limit` from the config.
    pub fn set_limits(&self, cfg: &crate::config::Config) {
        self.limit.set(cfg.pubsub_output_limit());
    }

    /// Delivers `message` to the subscribers of `channel` (and, unless sharded, of the
    /// matching patterns); returns how many received it.
    pub fn publish_to(&self, channel: &Bytes, message: &Bytes, sharded: bool) -> i64 {
        let mut n = 0;
        let table = if sharded {
            &self.shard_channels
        } else {
            &self.channels
        };
        let kind = if sharded { "smessage" } else { "message" };
        if let Some(subs) = table.get(channel) {
            for s in subs.iter() {
                let m = Reply::Push(vec![
                    Reply::bulk_str(kind),
                    Reply::Bulk(channel.clone()),
                    Reply::Bulk(message.clone()),
                ]);
                deliver(self, s, m);
                n += 1;
            }
        }
        if !sharded && !self.patterns.is_empty() {
            for entry in self.patterns.iter() {
                if lockcore::glob::matches(entry.key(), channel, false) {
                    for s in entry.value().iter() {
                        let m = Reply::Push(vec![
                            Reply::bulk_str("pmessage"),
                            Reply::Bulk(entry.key().clone()),
                            Reply::Bulk(channel.clone()),
                            Reply::Bulk(message.clone()),
                        ]);
                        deliver(self, s, m);
                        n += 1;
                    }
                }
            }
        }
        n
    }
}

impl lockcore::storage::notify::Broker for PubSub {
    fn publish(&self, channel: &Bytes, message: &Bytes, sharded: bool) -> i64 {
        self.publish_to(channel, message, sharded)
    }
    fn log_warning(&self, message: &str) {
        tracing::warn!("{message}");
    }
}

// ---------------------------------------------------------------- subscriptions

/// A client's subscriptions of one kind, in subscription order: UNSUBSCRIBE and
/// PUNSUBSCRIBE without arguments answer in that order (Redis 7.0 keeps a client's
/// patterns in a list).
#[derive(Default)]
pub struct SubSet {
    order: Vec<Bytes>,
    set: std::collections::HashSet<Bytes>,
}

impl SubSet {
    pub fn insert(&mut self, b: Bytes) -> bool {
        if self.set.insert(b.clone()) {
            self.order.push(b);
            true
        } else {
            false
        }
    }

    pub fn remove(&mut self, b: &Bytes) -> bool {
        if self.set.remove(b) {
            self.order.retain(|x| x != b);
            true
        } else {
            false
        }
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Bytes> {
        self.order.iter()
    }

    pub fn drain(&mut self) -> impl Iterator<Item = Bytes> + '_ {
        self.set.clear();
        self.order.drain(..)
    }
}
