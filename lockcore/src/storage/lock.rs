//! The value of a native lock key (LOCK.*, SEM.*, RW.*): its kind and its holders. The
//! state machine that grants and releases them is `engine/locks/mod.rs`.

use bytes::Bytes;

use crate::storage::ClientId;

/// What kind of lock a key holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Mutex,
    Semaphore { permits: u64 },
    RwLock,
}

/// One owner's grant.
#[derive(Debug, Clone)]
pub struct Holder {
    pub owner: Bytes,
    /// Mutex reentrancy count, semaphore permits held, or write holds of an rwlock.
    pub holds: u64,
    /// Read holds (read-write locks only).
    pub reads: u64,
    /// The fencing token of this grant; re-acquisitions by the same owner keep it.
    pub token: u64,
    /// Lease deadline on the engine clock; `None` when bound only to its session.
    pub lease_until: Option<i64>,
    /// The connection a SESSION grant belongs to.
    pub session: Option<ClientId>,
}

/// The value of a lock key. It exists while somebody holds the lock.
#[derive(Debug, Clone)]
pub struct LockValue {
    pub kind: Kind,
    pub holders: Vec<Holder>,
}

impl LockValue {
    /// The name TYPE prints.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::Mutex => "lock",
            Kind::Semaphore { .. } => "semaphore",
            Kind::RwLock => "rwlock",
        }
    }
}
