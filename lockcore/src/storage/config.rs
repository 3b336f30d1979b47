//! The engine's settings that change command semantics and value encodings (the
//! listpack limits RESTORE and the write commands share).

use crate::storage::notify::NotifyFlags;

/// Engine settings that change command semantics. The server fills them from its config.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub notify: NotifyFlags,
    pub proto_max_bulk_len: usize,
    pub hash_max_listpack_entries: usize,
    pub hash_max_listpack_value: usize,
    pub list_max_listpack_size: i64,
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    /// `set-max-intset-entries`, `set-max-listpack-entries`, `set-max-listpack-value`
    /// (storage/set.rs' `SetLimits`; the listpack ones only from Redis 7.2).
    pub set_max_intset_entries: usize,
    pub set_max_listpack_entries: usize,
    pub set_max_listpack_value: usize,
    pub hll_sparse_max_bytes: usize,
    /// `maxmemory-policy` is an LFU one: accesses update the LFU counter (crate::storage::lfu).
    pub lfu: bool,
    /// `maxmemory` is set with an LRU or LFU policy: Redis then gives every integer its own
    /// object (each needs its own access data), so OBJECT REFCOUNT says 1, not shared.
    pub no_shared_integers: bool,
    pub lfu_log_factor: i64,
    pub lfu_decay_time: i64,
    pub stream_node_max_entries: usize,
    pub stream_node_max_bytes: usize,
    /// Which server this is (`personality`, engine/personality.rs); fixed at start-up.
    pub personality: crate::personality::Personality,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            notify: NotifyFlags::default(),
            proto_max_bulk_len: 512 * 1024 * 1024,
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            list_max_listpack_size: -2,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            set_max_intset_entries: 512,
            set_max_listpack_entries: 128,
            set_max_listpack_value: 64,
            hll_sparse_max_bytes: 3000,
            personality: crate::personality::Personality::DEFAULT,
            lfu: false,
            no_shared_integers: false,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
            stream_node_max_entries: 100,
            stream_node_max_bytes: 4096,
        }
    }
}
