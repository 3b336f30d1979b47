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

use crate::conn::Conn;
use crate::shared::{ClientHandle, Msg};
use lockcore::commands::CommandSpec;

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

// ---------------------------------------------------------------- subscriptions

fn set_counts(c: &Conn) {
    let mut info = c.handle.info.lock();
    info.subs = c.subs.len();
    info.psubs = c.psubs.len();
    info.ssubs = c.ssubs.len();
}

pub fn subscribe(c: &mut Conn, kind: &'static str, a: &[Bytes]) -> Reply {
    if c.multi.is_some() && kind != "ssubscribe" {
        // Inside MULTI, SUBSCRIBE is allowed in Redis 7.0 only for RESP3 clients.
    }
    let ps = c.shared.pubsub.clone();
    for ch in &a[1..] {
        let (set, table) = match kind {
            "subscribe" => (&mut c.subs, &ps.channels),
            "psubscribe" => (&mut c.psubs, &ps.patterns),
            _ => (&mut c.ssubs, &ps.shard_channels),
        };
        if set.insert(ch.clone()) {
            add(table, ch, &c.handle);
        }
        let count = if kind == "ssubscribe" {
            c.ssubs.len()
        } else {
            c.subs.len() + c.psubs.len()
        };
        set_counts(c);
        c.reply(Reply::Push(vec![
            Reply::bulk_str(kind),
            Reply::Bulk(ch.clone()),
            Reply::Int(count as i64),
        ]));
    }
    Reply::NoReply
}

pub fn unsubscribe(c: &mut Conn, kind: &'static str, names: &[Bytes]) -> Reply {
    let ps = c.shared.pubsub.clone();
    let targets: Vec<Bytes> = if names.is_empty() {
        let set = match kind {
            "unsubscribe" => &c.subs,
            "punsubscribe" => &c.psubs,
            _ => &c.ssubs,
        };
        set.iter().cloned().collect()
    } else {
        names.to_vec()
    };
    if targets.is_empty() {
        let count = if kind == "sunsubscribe" {
            c.ssubs.len()
        } else {
            c.subs.len() + c.psubs.len()
        };
        c.reply(Reply::Push(vec![
            Reply::bulk_str(kind),
            Reply::Null,
            Reply::Int(count as i64),
        ]));
        return Reply::NoReply;
    }
    for ch in targets {
        let (set, table) = match kind {
            "unsubscribe" => (&mut c.subs, &ps.channels),
            "punsubscribe" => (&mut c.psubs, &ps.patterns),
            _ => (&mut c.ssubs, &ps.shard_channels),
        };
        if set.remove(&ch) {
            remove(table, &ch, c.cl.id);
        }
        let count = if kind == "sunsubscribe" {
            c.ssubs.len()
        } else {
            c.subs.len() + c.psubs.len()
        };
        set_counts(c);
        c.reply(Reply::Push(vec![
            Reply::bulk_str(kind),
            Reply::Bulk(ch),
            Reply::Int(count as i64),
        ]));
    }
    Reply::NoReply
}

/// Drops every subscription of a client (RESET, disconnect), without replies.
pub fn unsubscribe_all(c: &mut Conn) {
    let ps = c.shared.pubsub.clone();
    for ch in c.subs.drain() {
        remove(&ps.channels, &ch, c.cl.id);
    }
    for ch in c.psubs.drain() {
        remove(&ps.patterns, &ch, c.cl.id);
    }
    for ch in c.ssubs.drain() {
        remove(&ps.shard_channels, &ch, c.cl.id);
    }
    set_counts(c);
}

/// PUBSUB CHANNELS | NUMSUB | NUMPAT | SHARDCHANNELS | SHARDNUMSUB
pub fn pubsub_command(c: &mut Conn, spec: &CommandSpec, a: &[Bytes]) -> Reply {
    let ps = &c.shared.pubsub;
    let names = |t: &DashMap<Bytes, Vec<Arc<ClientHandle>>>, pat: Option<&Bytes>| {
        Reply::Array(
            t.iter()
                .filter(|e| pat.is_none_or(|p| lockcore::glob::matches(p, e.key(), false)))
                .map(|e| Reply::Bulk(e.key().clone()))
                .collect(),
        )
    };
    let counts = |t: &DashMap<Bytes, Vec<Arc<ClientHandle>>>| {
        Reply::Map(
            a[2..]
                .iter()
                .map(|ch| {
                    (
                        Reply::Bulk(ch.clone()),
                        Reply::Int(t.get(ch).map_or(0, |v| v.len() as i64)),
                    )
                })
                .collect(),
        )
    };
    match spec.name {
        "channels" if a.len() <= 3 => names(&ps.channels, a.get(2)),
        "shardchannels" if a.len() <= 3 => names(&ps.shard_channels, a.get(2)),
        "numsub" => counts(&ps.channels),
        "shardnumsub" => counts(&ps.shard_channels),
        "numpat" => Reply::Int(ps.patterns.len() as i64),
        "help" => Reply::Array(
            [
                "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "CHANNELS [<pattern>]",
                "NUMPAT",
                "NUMSUB [<channel> ...]",
                "SHARDCHANNELS [<pattern>]",
                "SHARDNUMSUB [<shardchannel> ...]",
                "HELP",
            ]
            .iter()
            .map(|s| Reply::simple(s))
            .collect(),
        ),
        _ => lockcore::error::wrong_arity(&spec.full_name()),
    }
}
