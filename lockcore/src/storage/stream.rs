//! The stream value: entries, Redis' node bookkeeping and consumer groups.
//!
//! Entries live in a `BTreeMap` by ID. Redis stores them in listpack "nodes" of at most
//! `stream-node-max-entries` entries (and `stream-node-max-bytes` bytes), and approximate
//! trimming (`~`) only ever drops whole nodes, so the lengths it leaves are visible to
//! clients. [`StreamValue::nodes`] keeps just that bookkeeping (the first ID, the live and
//! ever-inserted counts, an estimate of the listpack size) so `~` trims exactly as Redis does.

use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

use crate::num::parse_i64;

/// A stream entry ID: milliseconds and sequence.
pub type StreamId = (u64, u64);

pub const MAX_ID: StreamId = (u64::MAX, u64::MAX);

/// A stream: entries in ID order, Redis' node bookkeeping, and its consumer groups.
#[derive(Debug, Clone, Default)]
pub struct StreamValue {
    pub entries: BTreeMap<StreamId, Vec<Bytes>>,
    /// The last ID ever added or set by XSETID: XADD never goes at or below it.
    pub last_id: StreamId,
    /// `recorded-first-entry-id`: the first live entry (0-0 when empty).
    pub first_id: StreamId,
    /// The highest ID ever deleted (XDEL or trimming).
    pub max_deleted: StreamId,
    /// Entries ever added (XSETID ENTRIESADDED can set it).
    pub entries_added: u64,
    /// Redis' listpack nodes, by the ID of their first ("master") entry.
    pub nodes: BTreeMap<StreamId, Node>,
    /// Consumer groups by name (Redis keeps them in a radix tree: byte order).
    pub groups: BTreeMap<Bytes, Group>,
}

/// What a Redis listpack node holds, without the entries themselves.
#[derive(Debug, Clone)]
pub struct Node {
    /// The last entry ever inserted into the node, deleted or not.
    pub last: StreamId,
    /// Entries not deleted.
    pub live: usize,
    /// Entries ever inserted (live + deleted): a node is full by this count.
    pub total: usize,
    /// An estimate of the listpack's size in bytes.
    pub bytes: usize,
    /// The master entry's field names: entries with the same fields are stored compactly.
    pub master: Vec<Bytes>,
}

/// One not-yet-acknowledged delivery in a group's pending entries list.
#[derive(Debug, Clone)]
pub struct Nack {
    pub consumer: Bytes,
    pub delivery_time: i64,
    pub delivery_count: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Consumer {
    pub seen_time: i64,
    /// When it last read or claimed an entry (Redis 7.2's active time): None if never.
    pub active_time: Option<i64>,
    /// The IDs of this consumer's entries in the group PEL.
    pub pel: BTreeSet<StreamId>,
}

#[derive(Debug, Clone)]
pub struct Group {
    pub last_id: StreamId,
    /// The logical read counter; [`INVALID_READ`] when unknown.
    pub entries_read: i64,
    pub pel: BTreeMap<StreamId, Nack>,
    pub consumers: BTreeMap<Bytes, Consumer>,
}

/// Redis' SCG_INVALID_ENTRIES_READ.
pub const INVALID_READ: i64 = -1;

impl Group {
    pub fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// Removes `id` from the PEL and from its consumer's list.
    pub fn drop_nack(&mut self, id: StreamId) -> bool {
        match self.pel.remove(&id) {
            Some(n) => {
                if let Some(c) = self.consumers.get_mut(&n.consumer) {
                    c.pel.remove(&id);
                }
                true
            }
            None => false,
        }
    }
}

pub enum Trim {
    MaxLen(usize),
    MinId(StreamId),
}

/// The listpack size of a string element, as Redis' listpack encodes it (integers are
/// stored compactly).
fn lp_elem(s: &[u8]) -> usize {
    if let Some(v) = parse_i64(s) {
        return lp_int(v);
    }
    let len = s.len();
    let hdr = if len < 64 {
        1
    } else if len < 4096 {
        2
    } else {
        5
    };
    let body = hdr + len;
    body + if body < 128 {
        1
    } else if body < 16384 {
        2
    } else {
        3
    }
}

fn lp_int(v: i64) -> usize {
    let enc = if (0..=127).contains(&v) {
        1
    } else if (-4096..4096).contains(&v) {
        2
    } else if v as i16 as i64 == v {
        3
    } else if (-(1 << 23)..(1 << 23)).contains(&v) {
        4
    } else if v as i32 as i64 == v {
        5
    } else {
        9
    };
    enc + 1
}

impl StreamValue {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The last live entry's ID (0-0 when empty): Redis' streamLastValidID.
    pub fn last_valid_id(&self) -> StreamId {
        self.entries.keys().next_back().copied().unwrap_or((0, 0))
    }

    /// Appends an entry with a fresh `id` (greater than `last_id`), into the last node if
    /// it has room by Redis' rules, else into a new one.
    pub fn append(
        &mut self,
        id: StreamId,
        fields: Vec<Bytes>,
        max_entries: usize,
        max_bytes: usize,
    ) {
        let max_bytes = if max_bytes == 0 || max_bytes > 1 << 30 {
            1 << 30
        } else {
            max_bytes
        };
        let names: Vec<&Bytes> = fields.iter().step_by(2).collect();
        let raw: usize = fields.iter().map(|f| f.len()).sum();
        let fits = match self.nodes.values().next_back() {
            Some(n) => n.bytes + raw < max_bytes && !(max_entries > 0 && n.total >= max_entries),
            None => false,
        };
        let values_size: usize = fields.iter().skip(1).step_by(2).map(|v| lp_elem(v)).sum();
        if !fits {
            let master: Vec<Bytes> = names.iter().map(|b| (*b).clone()).collect();
            let bytes = 7
                + 3 * lp_int(0)
                + lp_int(master.len() as i64)
                + master.iter().map(|f| lp_elem(f)).sum::<usize>();
            self.nodes.insert(
                id,
                Node {
                    last: id,
                    live: 0,
                    total: 0,
                    bytes,
                    master,
                },
            );
        }
        let (&first, node) = self.nodes.iter_mut().next_back().unwrap();
        let same = node.master.len() == names.len()
            && node.master.iter().zip(&names).all(|(a, b)| a == *b);
        let ms_diff = id.0.wrapping_sub(first.0) as i64;
        let seq_diff = id.1.wrapping_sub(first.1) as i64;
        let mut size = lp_int(0) + lp_int(ms_diff) + lp_int(seq_diff) + values_size + 2;
        if !same {
            size += lp_int(names.len() as i64) + names.iter().map(|f| lp_elem(f)).sum::<usize>();
        }
        node.bytes += size;
        node.live += 1;
        node.total += 1;
        node.last = id;
        self.entries.insert(id, fields);
        self.last_id = id;
        self.entries_added += 1;
        if self.entries.len() == 1 {
            self.first_id = id;
        }
    }

    fn node_of(&mut self, id: StreamId) -> Option<(StreamId, &mut Node)> {
        self.nodes
            .range_mut(..=id)
            .next_back()
            .map(|(k, n)| (*k, n))
    }

    /// XDEL of one ID: true if it existed.
    pub fn delete(&mut self, id: StreamId) -> bool {
        if self.entries.remove(&id).is_none() {
            return false;
        }
        if let Some((k, n)) = self.node_of(id) {
            n.live -= 1;
            if n.live == 0 {
                self.nodes.remove(&k);
            }
        }
        if id > self.max_deleted {
            self.max_deleted = id;
        }
        if id == self.first_id {
            self.first_id = self.entries.keys().next().copied().unwrap_or((0, 0));
        }
        true
    }

    /// Redis' streamTrim: whole nodes from the head while the strategy allows, then (when
    /// exact) single entries of the next node. `limit` 0 means no limit.
    pub fn trim(&mut self, strat: &Trim, approx: bool, limit: usize) -> usize {
        let mut deleted = 0;
        loop {
            if let Trim::MaxLen(m) = strat {
                if self.len() <= *m {
                    break;
                }
            }
            let Some((&first, node)) = self.nodes.iter().next() else {
                break;
            };
            let (last, live) = (node.last, node.live);
            let remove_node = match strat {
                Trim::MaxLen(m) => self.len() - live >= *m,
                Trim::MinId(min) => last < *min,
            };
            if remove_node {
                if limit > 0 && deleted + live > limit {
                    break;
                }
                let ids: Vec<StreamId> =
                    self.entries.range(first..=last).map(|(k, _)| *k).collect();
                for k in &ids {
                    self.entries.remove(k);
                }
                self.nodes.remove(&first);
                deleted += live;
                continue;
            }
            if approx {
                break;
            }
            let ids: Vec<StreamId> = self.entries.range(first..=last).map(|(k, _)| *k).collect();
            for k in ids {
                let stop = match strat {
                    Trim::MaxLen(m) => self.len() <= *m,
                    Trim::MinId(min) => k >= *min,
                };
                if stop {
                    break;
                }
                self.entries.remove(&k);
                if let Some(n) = self.nodes.get_mut(&first) {
                    n.live -= 1;
                }
                deleted += 1;
            }
            break;
        }
        if deleted > 0 {
            self.first_id = self.entries.keys().next().copied().unwrap_or((0, 0));
        }
        deleted
    }

    /// True if a deleted entry may lie in `start..=end` (Redis' streamRangeHasTombstones).
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.is_empty() || self.max_deleted == (0, 0) {
            return false;
        }
        if self.first_id > self.max_deleted {
            return false;
        }
        start <= self.max_deleted && end >= self.max_deleted
    }

    /// The logical read counter of `id`, or [`INVALID_READ`] when it cannot be known
    /// (Redis' streamEstimateDistanceFromFirstEverEntry).
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        let added = self.entries_added as i64;
        if self.is_empty() && id <= self.last_id {
            return added;
        }
        if id == self.last_id {
            return added;
        } else if id > self.last_id {
            return INVALID_READ;
        }
        if self.max_deleted == (0, 0) || self.max_deleted < self.first_id {
            if id < self.first_id {
                return added - self.len() as i64;
            } else if id == self.first_id {
                return added - self.len() as i64 + 1;
            }
        }
        INVALID_READ
    }

    /// A group's lag, or `None` when unknown.
    pub fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != INVALID_READ && !self.range_has_tombstones(g.last_id, MAX_ID) {
            return Some(self.entries_added as i64 - g.entries_read);
        }
        let read = self.estimate_distance(g.last_id);
        (read != INVALID_READ).then(|| self.entries_added as i64 - read)
    }

    /// Moves a group past `id` after delivering it (the read counter as Redis keeps it).
    pub fn advance_group(&self, g: &mut Group, id: StreamId) {
        if id > g.last_id {
            if g.entries_read != INVALID_READ && !self.range_has_tombstones(id, MAX_ID) {
                g.entries_read += 1;
            } else if self.entries_added > 0 {
                g.entries_read = self.estimate_distance(id);
            }
            g.last_id = id;
        }
    }
}
