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

use crate::conn::Conn;
use crate::shared::{ClientHandle, Msg};
use lockcore::CommandSpec;

#[derive(Default)]
pub struct PubSub {
    pub channels: DashMap<Bytes, Vec<Arc<ClientHandle>>>,
    pub patterns: DashMap<Bytes, Vec<Arc<ClientHandle>>>,
    pub shard_channels: DashMap<Bytes, Vec<Arc<ClientHandle>>>,
    /// `client-output-buffer-limit pubsub <hard> <soft> <soft-seconds>`, copied here by
    /// [`PubSub::set_limits`] so that delivery never reads the config table.
    pub limit: crate::climits::ClassLimit,
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

/// What a queued push counts against the output buffer limit: its payload plus a fixed
/// overhead per element. [`deliver`] adds it and the connection subtracts the same amount
/// once the bytes are written to the socket (`Conn::push_out`), so the counter is the
/// subscriber's unwritten backlog, as Redis' output buffer size is.
pub fn push_cost(r: &Reply) -> usize {
    match r {
        Reply::Push(items) => {
            items
                .iter()
                .map(|i| match i {
                    Reply::Bulk(b) => b.len() + 16,
                    _ => 16,
                })
                .sum::<usize>()
                + 16
        }
        // A MONITOR line.
        Reply::Simple(s) => s.len() + 16,
        _ => 0,
    }
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
    let cost = push_cost(&msg);
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

fn set_counts(c: &Conn) {
    let mut info = c.handle.info.lock();
    info.subs = c.subs.len();
    info.psubs = c.psubs.len();
    info.ssubs = c.ssubs.len();
}

/// SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE. Confirmations are pushes: they are written even under
/// CLIENT REPLY OFF/SKIP, as Redis 7 writes every pub/sub reply.
pub fn subscribe(c: &mut Conn, kind: &'static str, a: &[Bytes]) -> Reply {
    // Inside EXEC (deny_blocking with a transaction open) Redis 7.0 lets SUBSCRIBE and
    // PSUBSCRIBE through for backward compatibility but not SSUBSCRIBE.
    if c.cl.deny_blocking && (kind == "ssubscribe" || !c.in_exec) {
        return Reply::err(format!(
            "ERR {} isn't allowed for a DENY BLOCKING client",
            kind.to_ascii_uppercase()
        ));
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
        c.push(Reply::Push(vec![
            Reply::bulk_str(kind),
            Reply::Bulk(ch.clone()),
            Reply::Int(count as i64),
        ]));
    }
    Reply::NoReply
}

/// UNSUBSCRIBE, PUNSUBSCRIBE, SUNSUBSCRIBE; with no names, from everything of that kind
/// (or one reply with a nil name when there is nothing).
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
        c.push(Reply::Push(vec![
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
        c.push(Reply::Push(vec![
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
    // A flat array in both protocols, as Redis 7.0 replies (not a RESP3 map).
    let counts = |t: &DashMap<Bytes, Vec<Arc<ClientHandle>>>| {
        Reply::Array(
            a[2..]
                .iter()
                .flat_map(|ch| {
                    [
                        Reply::Bulk(ch.clone()),
                        Reply::Int(t.get(ch).map_or(0, |v| v.len() as i64)),
                    ]
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
        _ => Reply::err(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
            String::from_utf8_lossy(&a[1])
        )),
    }
}
