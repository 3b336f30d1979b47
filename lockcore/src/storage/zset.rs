//! The sorted-set type: a member → score map plus an order-statistic treap ordered by
//! (score, member bytes), the order Redis' skiplist keeps.
//!
//! The treap stores subtree sizes, so rank lookups (ZRANK), element-by-rank (ZRANGE) and
//! "how many elements sort before this bound" (ZCOUNT, BYSCORE, BYLEX) are all O(log n).
//! Nodes live in an arena (`Vec`) addressed by `u32` indices with a free list, which keeps
//! the structure compact and avoids a pointer per child.

use bytes::Bytes;
use std::cmp::Ordering;
use std::collections::HashMap;

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone)]
struct Node {
    score: f64,
    member: Bytes,
    pri: u32,
    left: u32,
    right: u32,
    size: u32,
}

/// The order of a sorted set: score first, then member bytes (memcmp), as in Redis.
pub fn cmp_entry(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> Ordering {
    match s1.partial_cmp(&s2) {
        Some(Ordering::Equal) | None => m1.cmp(m2),
        Some(o) => o,
    }
}

#[derive(Debug, Clone)]
struct Treap {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    seed: u64,
}

impl Treap {
    fn new() -> Treap {
        Treap {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            // A per-set random seed: priorities an attacker cannot predict keep the
            // expected depth logarithmic whatever the insertion order.
            seed: rand::random::<u64>() | 1,
        }
    }

    fn rand(&mut self) -> u32 {
        // xorshift64*: priorities only need to be well spread, not secure.
        let mut x = self.seed;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.seed = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }

    fn size(&self, n: u32) -> u32 {
        if n == NIL {
            0
        } else {
            self.nodes[n as usize].size
        }
    }

    fn fix(&mut self, n: u32) {
        let (l, r) = (self.nodes[n as usize].left, self.nodes[n as usize].right);
        self.nodes[n as usize].size = 1 + self.size(l) + self.size(r);
    }

    /// Splits `t` into (nodes for which `before` holds, the rest); `before` must hold for a
    /// prefix of the order.
    fn split(&mut self, t: u32, before: &dyn Fn(f64, &[u8]) -> bool) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        let n = &self.nodes[t as usize];
        if before(n.score, &n.member) {
            let r = n.right;
            let (a, b) = self.split(r, before);
            self.nodes[t as usize].right = a;
            self.fix(t);
            (t, b)
        } else {
            let l = n.left;
            let (a, b) = self.split(l, before);
            self.nodes[t as usize].left = b;
            self.fix(t);
            (a, t)
        }
    }

    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].pri > self.nodes[b as usize].pri {
            let r = self.nodes[a as usize].right;
            let m = self.merge(r, b);
            self.nodes[a as usize].right = m;
            self.fix(a);
            a
        } else {
            let l = self.nodes[b as usize].left;
            let m = self.merge(a, l);
            self.nodes[b as usize].left = m;
            self.fix(b);
            b
        }
    }

    fn insert(&mut self, score: f64, member: Bytes) {
        let pri = self.rand();
        let node = Node {
            score,
            member,
            pri,
            left: NIL,
            right: NIL,
            size: 1,
        };
        let idx = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        // One walk down: the nodes above the new one (priority at least its own) each gain
        // one element below; where its priority puts it, the subtree there is split by its
        // key into its two children. A split + two merges over the whole path walked it
        // three times (callgrind: ~5,000 instructions of an 11,500-instruction ZADD into a
        // 260k-member set).
        // The member is taken out while walking (a clone would promote its buffer).
        let m = std::mem::take(&mut self.nodes[idx as usize].member);
        let mut parent = NIL;
        let mut went_left = false;
        let mut t = self.root;
        while t != NIL && self.nodes[t as usize].pri >= pri {
            let n = &mut self.nodes[t as usize];
            n.size += 1;
            parent = t;
            went_left = cmp_entry(n.score, &n.member, score, &m) != Ordering::Less;
            t = if went_left { n.left } else { n.right };
        }
        let (a, b) = self.split(t, &|sc, mb| cmp_entry(sc, mb, score, &m) == Ordering::Less);
        let x = &mut self.nodes[idx as usize];
        x.member = m;
        x.left = a;
        x.right = b;
        self.fix(idx);
        self.link(parent, went_left, idx);
    }

    /// Points `parent`'s left or right child (the root when `parent` is NIL) at `n`.
    fn link(&mut self, parent: u32, left: bool, n: u32) {
        if parent == NIL {
            self.root = n;
        } else if left {
            self.nodes[parent as usize].left = n;
        } else {
            self.nodes[parent as usize].right = n;
        }
    }

    /// The node holding (`score`, `member`), found by one walk down.
    fn find(&self, score: f64, member: &[u8]) -> Option<u32> {
        let mut t = self.root;
        while t != NIL {
            let n = &self.nodes[t as usize];
            t = match cmp_entry(score, member, n.score, &n.member) {
                Ordering::Less => n.left,
                Ordering::Greater => n.right,
                Ordering::Equal => return Some(t),
            };
        }
        None
    }

    fn remove(&mut self, score: f64, member: &[u8]) {
        let Some(target) = self.find(score, member) else {
            return;
        };
        // Walk down again, now that the node is known to be there: every node above it
        // loses one element below, and it is replaced by the merge of its two children.
        let (mut parent, mut left, mut t) = (NIL, false, self.root);
        while t != target {
            let n = &mut self.nodes[t as usize];
            n.size -= 1;
            parent = t;
            left = cmp_entry(score, member, n.score, &n.member) == Ordering::Less;
            t = if left { n.left } else { n.right };
        }
        let (l, r) = (self.nodes[t as usize].left, self.nodes[t as usize].right);
        let m = self.merge(l, r);
        self.link(parent, left, m);
        self.nodes[t as usize].member = Bytes::new();
        self.free.push(t);
    }

    /// How many elements satisfy `before` (a predicate true for a prefix of the order).
    fn count_before(&self, before: &dyn Fn(f64, &[u8]) -> bool) -> usize {
        let mut n = self.root;
        let mut count = 0;
        while n != NIL {
            let node = &self.nodes[n as usize];
            if before(node.score, &node.member) {
                count += self.size(node.left) as usize + 1;
                n = node.right;
            } else {
                n = node.left;
            }
        }
        count
    }

    fn nth(&self, mut i: usize) -> Option<(f64, &Bytes)> {
        let mut n = self.root;
        while n != NIL {
            let node = &self.nodes[n as usize];
            let ls = self.size(node.left) as usize;
            match i.cmp(&ls) {
                Ordering::Less => n = node.left,
                Ordering::Equal => return Some((node.score, &node.member)),
                Ordering::Greater => {
                    i -= ls + 1;
                    n = node.right;
                }
            }
        }
        None
    }
}

/// A sorted set.
#[derive(Debug, Clone)]
pub struct ZSet {
    pub scores: HashMap<Bytes, f64, crate::storage::key::KeyHasher>,
    order: Treap,
    /// Switched to "skiplist" encoding (never switches back).
    pub big: bool,
}

impl Default for ZSet {
    fn default() -> Self {
        ZSet {
            scores: HashMap::default(),
            order: Treap::new(),
            big: false,
        }
    }
}

impl ZSet {
    pub fn len(&self) -> usize {
        self.scores.len()
    }
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Sets `member`'s score; returns the previous score if it existed.
    pub fn insert(&mut self, member: Bytes, score: f64) -> Option<f64> {
        // A listpack stores the score as text that reads back as +0, so -0 does not survive
        // in a small set; the skiplist keeps the double as is.
        let score = if !self.big && score == 0.0 {
            0.0
        } else {
            score
        };
        let old = self.scores.insert(member.clone(), score);
        if let Some(o) = old {
            if o == score {
                return old;
            }
            self.order.remove(o, &member);
        }
        self.order.insert(score, member);
        old
    }

    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let s = self.scores.remove(member)?;
        self.order.remove(s, member);
        Some(s)
    }

    /// 0-based rank in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let s = self.score(member)?;
        Some(
            self.order
                .count_before(&|sc, mb| cmp_entry(sc, mb, s, member) == Ordering::Less),
        )
    }

    /// The element at ascending rank `i`.
    pub fn nth(&self, i: usize) -> Option<(f64, &Bytes)> {
        self.order.nth(i)
    }

    /// The number of elements for which `before(score, member)` holds; it must hold for a
    /// prefix of the order (e.g. "score < 5").
    pub fn count_before(&self, before: &dyn Fn(f64, &[u8]) -> bool) -> usize {
        self.order.count_before(before)
    }

    /// Elements with ascending ranks `start..end`, cloned.
    pub fn range(&self, start: usize, end: usize) -> Vec<(Bytes, f64)> {
        (start..end.min(self.len()))
            .filter_map(|i| self.nth(i).map(|(s, m)| (m.clone(), s)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_rank_and_nth_agree_with_a_sorted_vec() {
        let mut z = ZSet::default();
        let mut model: Vec<(f64, Vec<u8>)> = Vec::new();
        let mut x: u64 = 7;
        for i in 0..3000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let m = format!("m{}", (x >> 40) % 500).into_bytes();
            let s = ((x >> 20) % 50) as f64;
            if i % 3 == 0 {
                z.remove(&m);
                model.retain(|(_, mm)| *mm != m);
            } else {
                z.insert(Bytes::from(m.clone()), s);
                model.retain(|(_, mm)| *mm != m);
                model.push((s, m));
            }
        }
        model.sort_by(|a, b| cmp_entry(a.0, &a.1, b.0, &b.1));
        assert_eq!(z.len(), model.len());
        for (i, (s, m)) in model.iter().enumerate() {
            assert_eq!(z.rank(m), Some(i));
            let (ns, nm) = z.nth(i).unwrap();
            assert_eq!((ns, &nm[..]), (*s, &m[..]));
        }
        assert_eq!(
            z.count_before(&|s, _| s < 10.0),
            model.iter().filter(|(s, _)| *s < 10.0).count()
        );
    }

    /// Checks a subtree's sizes, order and heap priorities; returns its size.
    fn check(t: &Treap, n: u32, lo: Option<(f64, &[u8])>, hi: Option<(f64, &[u8])>) -> u32 {
        if n == NIL {
            return 0;
        }
        let node = &t.nodes[n as usize];
        let k = (node.score, &node.member[..]);
        if let Some((s, m)) = lo {
            assert_eq!(cmp_entry(s, m, k.0, k.1), Ordering::Less);
        }
        if let Some((s, m)) = hi {
            assert_eq!(cmp_entry(k.0, k.1, s, m), Ordering::Less);
        }
        for c in [node.left, node.right] {
            if c != NIL {
                assert!(t.nodes[c as usize].pri <= node.pri, "heap order");
            }
        }
        let size = 1 + check(t, node.left, lo, Some(k)) + check(t, node.right, Some(k), hi);
        assert_eq!(node.size, size, "subtree size");
        size
    }

    #[test]
    fn one_walk_insert_and_remove_keep_sizes_order_and_priorities() {
        let mut z = ZSet::default();
        let mut model: Vec<(f64, Vec<u8>)> = Vec::new();
        let mut x: u64 = 99;
        for i in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let m = format!("m{}", (x >> 33) % 2_000).into_bytes();
            // Few distinct scores: ties are broken by the member bytes.
            let s = ((x >> 17) % 7) as f64 - 3.0;
            if (x >> 60) % 3 == 0 {
                assert_eq!(z.remove(&m).is_some(), model.iter().any(|(_, mm)| *mm == m));
                model.retain(|(_, mm)| *mm != m);
            } else {
                z.insert(Bytes::from(m.clone()), s);
                model.retain(|(_, mm)| *mm != m);
                model.push((s, m));
            }
            if i % 997 == 0 {
                assert_eq!(
                    check(&z.order, z.order.root, None, None) as usize,
                    model.len()
                );
            }
        }
        assert_eq!(
            check(&z.order, z.order.root, None, None) as usize,
            model.len()
        );
        model.sort_by(|a, b| cmp_entry(a.0, &a.1, b.0, &b.1));
        for (i, (s, m)) in model.iter().enumerate() {
            assert_eq!(z.rank(m), Some(i));
            assert_eq!(
                z.nth(i).map(|(ns, nm)| (ns, nm.to_vec())),
                Some((*s, m.clone()))
            );
        }
    }

    #[test]
    fn sorted_insertion_order_stays_shallow() {
        // 200k ascending inserts: a degenerate tree would overflow the stack in split/merge.
        let mut z = ZSet::default();
        for i in 0..200_000u32 {
            z.insert(Bytes::from(format!("{i:08}")), i as f64);
        }
        assert_eq!(z.rank(b"00150000"), Some(150_000));
        assert_eq!(z.nth(199_999).map(|(s, _)| s), Some(199_999.0));
        for i in (0..200_000u32).step_by(2) {
            z.remove(format!("{i:08}").as_bytes());
        }
        assert_eq!(z.len(), 100_000);
        assert_eq!(z.nth(0).map(|(s, _)| s), Some(1.0));
    }
}
