//! Sorted sets. (Filled in by the sorted-set work; the type exists so the keyspace knows it.)

use bytes::Bytes;
use std::collections::HashMap;

#[derive(Debug, Clone, Default)]
pub struct ZSet {
    pub scores: HashMap<Bytes, f64>,
    /// Switched to "skiplist" encoding (never switches back).
    pub big: bool,
}

impl ZSet {
    pub fn len(&self) -> usize {
        self.scores.len()
    }
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }
}
