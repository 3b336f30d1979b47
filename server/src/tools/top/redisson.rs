//! Recognising Redisson's lock hashes: the logic lives in `lockcore::engine::locks::redisson`, shared with
//! the lock-order checker (lockcore/src/locks/lockdep.rs), which recognises the same hashes as
//! scripts write them.

pub use lockcore::engine::locks::redisson::*;
