//! Pub/sub fan-out: who listens to which channel, and delivery.
//!
//! The tables are `DashMap`s outside the keyspace lock: SUBSCRIBE never needs the keyspace,
//! and PUBLISH (from a client, a script or a keyspace event) only reads them. Messages are
//! queued on each subscriber's channel in the order the publisher sent them.

use bytes::Bytes;
use dashmap::DashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use lockcore::{ClientId, Reply};

use crate::shared::{ClientHandle, Msg};

#[derive(Default)]
pub struct PubSub {
    pub channels: DashMap<Bytes, Vec<Arc<ClientHandle>>>,
    pub patterns: DashMap<Bytes, Vec<Arc<ClientHandle>>>,
    pub shard_channels: DashMap<Bytes, Vec<Arc<ClientHandle>>>,
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

/// Queues `msg` for `c`, accounting its size against the output buffer limits.
pub fn deliver(c: &ClientHandle, msg: Reply, size: usize) {
    c.pending_out.fetch_add(size, Ordering::Relaxed);
    c.send(Msg::Push(msg));
}

impl PubSub {
    pub fn publish_to(&self, channel: &Bytes, message: &Bytes, sharded: bool) -> i64 {
        let size = channel.len() + message.len() + 32;
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
                deliver(s, m, size);
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
                        deliver(s, m, size + entry.key().len());
                        n += 1;
                    }
                }
            }
        }
        n
    }
}

impl lockcore::engine::Broker for PubSub {
    fn publish(&self, channel: &Bytes, message: &Bytes, sharded: bool) -> i64 {
        self.publish_to(channel, message, sharded)
    }
}
