//! Streams in the RDB payload: RESTORE of redis-server 7.0's `RDB_TYPE_STREAM_LISTPACKS_2`
//! (19) and the older `RDB_TYPE_STREAM_LISTPACKS` (15).
//!
//! A stream is its listpack nodes (each keyed by its 16-byte big-endian master ID), then
//! length, last ID, (19 only: first ID, max deleted ID, entries added), then the consumer
//! groups with their PEL (raw 16-byte IDs, delivery time, count) and consumers (name,
//! seen time, the IDs they own). A node's listpack holds the master entry (count, deleted
//! count, the master field names, a 0 terminator) and then per entry: flags, ms and seq
//! deltas from the master ID, the fields (or just the values when they are the master's),
//! and the entry's element count. Payloads are hostile input: every inconsistency is
//! "Bad data format" (`None`), never a panic.

use bytes::Bytes;
use std::collections::BTreeMap;

use super::{listpack_entries, put_len, put_string, Listpack, Reader};
use crate::storage::stream::{Consumer, Group, Nack, Node, StreamId, StreamValue};

pub(super) const T_STREAM_LISTPACKS: u8 = 15;
pub(super) const T_STREAM_LISTPACKS_2: u8 = 19;
/// Redis 7.2+: type 19 plus each consumer's active time.
pub(super) const T_STREAM_LISTPACKS_3: u8 = 21;

const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;

fn int(b: &Bytes) -> Option<i64> {
    crate::num::parse_i64(b)
}

fn raw_id(s: &[u8]) -> Option<StreamId> {
    if s.len() != 16 {
        return None;
    }
    Some((
        u64::from_be_bytes(s[..8].try_into().ok()?),
        u64::from_be_bytes(s[8..].try_into().ok()?),
    ))
}

fn id(r: &mut Reader) -> Option<StreamId> {
    Some((r.len()? as u64, r.len()? as u64))
}

fn ms_time(r: &mut Reader) -> Option<i64> {
    Some(i64::from_le_bytes(r.take(8)?.try_into().ok()?))
}

/// Parses one node into `s`; `prev` is the last entry ID seen so far (IDs must grow).
fn load_node(
    s: &mut StreamValue,
    master_id: StreamId,
    lp: &[u8],
    prev: &mut Option<StreamId>,
) -> Option<()> {
    let e = listpack_entries(lp)?;
    let mut it = e.iter();
    let count = int(it.next()?)?;
    let deleted = int(it.next()?)?;
    let nfields = int(it.next()?)?;
    if count < 0 || deleted < 0 || !(0..=e.len() as i64).contains(&nfields) {
        return None;
    }
    let master: Vec<Bytes> = (0..nfields)
        .map(|_| it.next().cloned())
        .collect::<Option<_>>()?;
    if int(it.next()?)? != 0 {
        return None;
    }
    let (mut live, mut dead, mut last) = (0i64, 0i64, None);
    while let Some(flags) = it.next() {
        let flags = int(flags)?;
        if !(0..=3).contains(&flags) {
            return None;
        }
        let ms = master_id.0.wrapping_add(int(it.next()?)? as u64);
        let seq = master_id.1.wrapping_add(int(it.next()?)? as u64);
        let eid = (ms, seq);
        if eid < master_id || prev.is_some_and(|p| eid <= p) {
            return None;
        }
        *prev = Some(eid);
        last = Some(eid);
        let mut fields = Vec::new();
        if flags & FLAG_SAMEFIELDS != 0 {
            for f in &master {
                fields.push(f.clone());
                fields.push(it.next()?.clone());
            }
        } else {
            let n = int(it.next()?)?;
            if n < 0 || n > e.len() as i64 {
                return None;
            }
            for _ in 0..2 * n {
                fields.push(it.next()?.clone());
            }
        }
        int(it.next()?)?; // lp-count
        if flags & FLAG_DELETED != 0 {
            dead += 1;
        } else {
            live += 1;
            s.entries.insert(eid, fields);
        }
    }
    if live != count || dead != deleted {
        return None;
    }
    let last = last?;
    if live > 0 {
        s.nodes.insert(
            master_id,
            Node {
                last,
                live: live as usize,
                total: (live + dead) as usize,
                bytes: lp.len(),
                master,
            },
        );
    }
    Some(())
}

pub(super) fn load(r: &mut Reader, t: u8) -> Option<StreamValue> {
    let mut s = StreamValue::default();
    let nodes = r.len()?;
    let mut prev = None;
    let mut prev_key = None;
    for _ in 0..nodes {
        let key = raw_id(&r.string()?)?;
        if prev_key.is_some_and(|p| key <= p) {
            return None;
        }
        prev_key = Some(key);
        let lp = r.string()?;
        load_node(&mut s, key, &lp, &mut prev)?;
    }
    let length = r.len()?;
    s.last_id = id(r)?;
    if length != s.entries.len() || prev.is_some_and(|p| p > s.last_id) {
        return None;
    }
    if t >= T_STREAM_LISTPACKS_2 {
        s.first_id = id(r)?;
        s.max_deleted = id(r)?;
        s.entries_added = r.len()? as u64;
    } else {
        s.first_id = s.entries.keys().next().copied().unwrap_or((0, 0));
        s.entries_added = length as u64;
    }
    let ngroups = r.len()?;
    for _ in 0..ngroups {
        let name = r.string()?;
        let last_id = id(r)?;
        let entries_read = if t >= T_STREAM_LISTPACKS_2 {
            r.len()? as i64
        } else {
            s.estimate_distance(last_id)
        };
        let mut g = Group::new(last_id, entries_read);
        let npel = r.len()?;
        for _ in 0..npel {
            let nid = raw_id(r.take(16)?)?;
            let delivery_time = ms_time(r)?;
            let delivery_count = r.len()? as u64;
            let nack = Nack {
                consumer: Bytes::new(),
                delivery_time,
                delivery_count,
            };
            if g.pel.insert(nid, nack).is_some() {
                return None;
            }
        }
        let nconsumers = r.len()?;
        let mut consumers = BTreeMap::new();
        for _ in 0..nconsumers {
            let cname = r.string()?;
            let mut c = Consumer {
                seen_time: ms_time(r)?,
                ..Consumer::default()
            };
            if t == T_STREAM_LISTPACKS_3 {
                // Redis 7.2's active time (-1: never active).
                let t = ms_time(r)?;
                c.active_time = (t != -1).then_some(t);
            }
            let n = r.len()?;
            for _ in 0..n {
                let nid = raw_id(r.take(16)?)?;
                let nack = g.pel.get_mut(&nid)?;
                // Each PEL entry belongs to exactly one consumer.
                if !nack.consumer.is_empty() || !c.pel.insert(nid) {
                    return None;
                }
                nack.consumer = cname.clone();
            }
            if consumers.insert(cname, c).is_some() {
                return None;
            }
        }
        if g.pel.values().any(|n| n.consumer.is_empty()) {
            return None;
        }
        g.consumers = consumers;
        if s.groups.insert(name, g).is_some() {
            return None;
        }
    }
    Some(s)
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_len(out, id.0 as usize);
    put_len(out, id.1 as usize);
}

fn put_raw_id(out: &mut Vec<u8>, id: StreamId) {
    out.extend_from_slice(&id.0.to_be_bytes());
    out.extend_from_slice(&id.1.to_be_bytes());
}

/// One node's listpack: the master entry, then each live entry (Tumbler keeps no
/// tombstones, so the deleted count is 0 and deleted entries are not written).
fn node_listpack(
    master_id: StreamId,
    master: &[Bytes],
    entries: &[(&StreamId, &Vec<Bytes>)],
) -> Vec<u8> {
    let mut lp = Listpack::new();
    lp.push_int(entries.len() as i64);
    lp.push_int(0);
    lp.push_int(master.len() as i64);
    for f in master {
        lp.push(f);
    }
    lp.push_int(0);
    for (id, fields) in entries {
        let n = fields.len() / 2;
        let same = n == master.len() && fields.iter().step_by(2).zip(master).all(|(a, b)| a == b);
        lp.push_int(if same { FLAG_SAMEFIELDS } else { 0 });
        lp.push_int(id.0.wrapping_sub(master_id.0) as i64);
        lp.push_int(id.1.wrapping_sub(master_id.1) as i64);
        if same {
            for v in fields.iter().skip(1).step_by(2) {
                lp.push(v);
            }
            lp.push_int(n as i64 + 3);
        } else {
            lp.push_int(n as i64);
            for f in fields.iter() {
                lp.push(f);
            }
            lp.push_int(2 * n as i64 + 4);
        }
    }
    lp.finish()
}

/// Writes `s` as redis-server 7.0's rdbSaveObject lays it out (RDB type 19), or for RDB
/// version 11 and later (`v3`) as Redis 7.2's type 21, with each consumer's active time.
pub(super) fn dump(s: &StreamValue, out: &mut Vec<u8>, lzf: bool, v3: bool) {
    out.push(if v3 {
        T_STREAM_LISTPACKS_3
    } else {
        T_STREAM_LISTPACKS_2
    });
    // The nodes with live entries, by master ID; entries before the first node (never
    // expected) get a node of their own keyed by the first entry.
    let mut keys: Vec<(StreamId, Vec<Bytes>)> = s
        .nodes
        .iter()
        .map(|(k, n)| (*k, n.master.clone()))
        .collect();
    if let Some((first, fields)) = s.entries.iter().next() {
        if keys.first().is_none_or(|k| *first < k.0) {
            let names = fields.iter().step_by(2).cloned().collect();
            keys.insert(0, (*first, names));
        }
    }
    let mut nodes = Vec::new();
    for (i, (key, master)) in keys.iter().enumerate() {
        let end = keys.get(i + 1).map(|k| k.0);
        let entries: Vec<_> = match end {
            Some(e) => s.entries.range(*key..e).collect(),
            None => s.entries.range(*key..).collect(),
        };
        if !entries.is_empty() {
            nodes.push((*key, node_listpack(*key, master, &entries)));
        }
    }
    put_len(out, nodes.len());
    for (key, lp) in &nodes {
        let mut k = Vec::with_capacity(16);
        put_raw_id(&mut k, *key);
        put_string(out, &k, lzf);
        put_string(out, lp, lzf);
    }
    put_len(out, s.entries.len());
    put_id(out, s.last_id);
    put_id(out, s.first_id);
    put_id(out, s.max_deleted);
    put_len(out, s.entries_added as usize);
    put_len(out, s.groups.len());
    for (name, g) in &s.groups {
        put_string(out, name, lzf);
        put_id(out, g.last_id);
        put_len(out, g.entries_read as u64 as usize);
        put_len(out, g.pel.len());
        for (id, n) in &g.pel {
            put_raw_id(out, *id);
            out.extend_from_slice(&n.delivery_time.to_le_bytes());
            put_len(out, n.delivery_count as usize);
        }
        put_len(out, g.consumers.len());
        for (cname, c) in &g.consumers {
            put_string(out, cname, lzf);
            out.extend_from_slice(&c.seen_time.to_le_bytes());
            if v3 {
                out.extend_from_slice(&c.active_time.unwrap_or(-1).to_le_bytes());
            }
            put_len(out, c.pel.len());
            for id in &c.pel {
                put_raw_id(out, *id);
            }
        }
    }
}
