//! SUBSCRIBE, UNSUBSCRIBE (and their pattern and shard forms) and PUBSUB; the tables and
//! the fan-out are in state/fanout.rs.

use bytes::Bytes;
use dashmap::DashMap;
use lockcore::engine::spec::CommandSpec;
use lockcore::Reply;
use std::sync::Arc;

use crate::conn::Conn;
use crate::state::fanout::*;
use crate::state::ClientHandle;

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
        c.set_sub_counts();
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
        c.set_sub_counts();
        c.push(Reply::Push(vec![
            Reply::bulk_str(kind),
            Reply::Bulk(ch),
            Reply::Int(count as i64),
        ]));
    }
    Reply::NoReply
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

crate::server_command!(
    ["subscribe", "ssubscribe", "psubscribe"],
    |c, _, spec, a| { subscribe(c, spec.name, a) }
);
crate::server_command!(
    ["unsubscribe", "sunsubscribe", "punsubscribe"],
    |c, _, spec, a| unsubscribe(c, spec.name, &a[1..])
);
crate::server_command!(["pubsub"], |c, _, spec, a| pubsub_command(c, spec, a));
