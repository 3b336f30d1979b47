//! Replication between the datasets of one process: a primary's links to its replicas.
//!
//! The primary's engine records one entry per command (lockcore/src/engine/repl.rs); when
//! the keyspace lock is released ([`crate::state::CoreGuard`]) the entries go onto every
//! link's queue. A replica applies what is due from its link whenever its own keyspace
//! lock is taken, and a task per link (server/src/repl/) does it when no client does, so
//! without a fault a replica has a write before the primary's reply reaches the client.
//!
//! Faults (TUMBLER.REPL): a link can lag by a time of the replica's clock, stay a number of
//! entries behind, or stall. A link whose primary is down applies nothing; what it had not
//! applied when its replica is promoted is lost, as the writes in flight are when Redis'
//! primary dies.

use parking_lot::{Mutex, RwLock};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use lockcore::engine::repl::DbImage;
use lockcore::engine::repl::Entry;
use lockcore::Reply;

use crate::state::{ClientHandle, Core, Msg};

/// What a link carries: a full copy of the primary's data, or one entry.
pub enum Item {
    Full(Arc<FullSync>),
    Entry(Arc<Entry>),
}

/// A primary's data at `offset` (a full resynchronisation).
pub struct FullSync {
    pub dbs: Vec<DbImage>,
    pub offset: u64,
}

impl Item {
    fn offset(&self) -> u64 {
        match self {
            Item::Full(f) => f.offset,
            Item::Entry(e) => e.offset,
        }
    }
    fn time_ms(&self) -> Option<i64> {
        match self {
            Item::Full(_) => None,
            Item::Entry(e) => Some(e.time_ms),
        }
    }
}

/// Entries a link holds before its replica is dropped and given a full copy instead.
pub const MAX_QUEUED: usize = 100_000;

/// One replica's link to its primary (node indexes of the topology).
pub struct Link {
    pub primary: usize,
    pub replica: usize,
    queue: Mutex<VecDeque<Item>>,
    /// The offset the replica has applied (what it acknowledges).
    pub applied: AtomicU64,
    /// Whether the full copy has been taken (false while the primary is unreachable).
    pub synced: AtomicBool,
    /// Primary or replica down (TUMBLER.NODE DOWN): nothing is applied.
    pub down: AtomicBool,
    /// TUMBLER.REPL LAG: entries apply this many ms (replica's clock) after the primary's.
    pub lag_ms: AtomicI64,
    /// TUMBLER.REPL BEHIND: this many entries stay unapplied.
    pub behind: AtomicUsize,
    /// TUMBLER.REPL PAUSE.
    pub paused: AtomicBool,
    /// Replaced or removed: the link's task ends and nothing more is applied.
    pub closed: AtomicBool,
    /// When the replica last applied something (monotonic ms; INFO's lag).
    pub last_io: AtomicI64,
    /// Wakes the link's task: entries arrived, a fault changed.
    pub wake: tokio::sync::Notify,
    /// The primary's side, for WAIT.
    pub acks: Weak<Downstream>,
}

impl Link {
    pub fn new(primary: usize, replica: usize, acks: &Arc<Downstream>) -> Link {
        Link {
            primary,
            replica,
            queue: Mutex::new(VecDeque::new()),
            applied: AtomicU64::new(0),
            synced: AtomicBool::new(false),
            down: AtomicBool::new(false),
            lag_ms: AtomicI64::new(0),
            behind: AtomicUsize::new(0),
            paused: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            last_io: AtomicI64::new(crate::base::mono::Mono::now().ms()),
            wake: tokio::sync::Notify::new(),
            acks: Arc::downgrade(acks),
        }
    }

    pub fn push(&self, item: Item) {
        let mut q = self.queue.lock();
        if q.len() >= MAX_QUEUED {
            // A replica this far behind is dropped and resynchronised from a full copy, as
            // Redis drops one past its output buffer limit (the link's task takes the copy).
            q.clear();
            self.synced.store(false, Ordering::Release);
        } else if self.synced.load(Ordering::Acquire) {
            q.push_back(item);
        }
        drop(q);
        self.wake.notify_one();
    }

    /// Replaces whatever is queued with a full copy (a resynchronisation).
    pub fn restart_with(&self, full: FullSync) {
        let mut q = self.queue.lock();
        q.clear();
        q.push_back(Item::Full(Arc::new(full)));
        self.synced.store(true, Ordering::SeqCst);
        drop(q);
        self.wake.notify_one();
    }

    /// Entries queued and not applied.
    pub fn pending(&self) -> usize {
        self.queue.lock().len()
    }

    /// Forgets what was queued: the writes in flight are lost.
    pub fn discard(&self) -> usize {
        let mut q = self.queue.lock();
        let n = q.len();
        q.clear();
        n
    }

    /// Takes the next item the replica may apply at `now` (its clock), or says when one
    /// will be due (`Err(Some(ms))`), or that none will be without more input (`Err(None)`).
    fn next_due(&self, now: i64) -> Result<Item, Option<i64>> {
        if self.closed.load(Ordering::Acquire)
            || self.down.load(Ordering::Acquire)
            || self.paused.load(Ordering::Acquire)
        {
            return Err(None);
        }
        let mut q = self.queue.lock();
        if q.len() <= self.behind.load(Ordering::Relaxed) {
            return Err(None);
        }
        let lag = self.lag_ms.load(Ordering::Relaxed);
        if let Some(t) = q.front().and_then(Item::time_ms) {
            if lag > 0 && t + lag > now {
                return Err(Some(t + lag));
            }
        }
        q.pop_front().ok_or(None)
    }
}

/// A primary's replicas, and the clients waiting in WAIT for them.
#[derive(Default)]
pub struct Downstream {
    pub links: RwLock<Vec<Arc<Link>>>,
    waiters: Mutex<Vec<Waiter>>,
}

struct Waiter {
    client: Arc<ClientHandle>,
    target: u64,
    need: usize,
    id: u64,
    /// WAITAOF: the reply is `[0, n]`.
    aof: bool,
}

impl Waiter {
    fn answer(self, n: usize) {
        let n = Reply::Int(n as i64);
        let r = if self.aof {
            Reply::Array(vec![Reply::Int(0), n])
        } else {
            n
        };
        self.client.send(Msg::Wake(r));
    }
}

impl Downstream {
    /// Replicas that have applied everything up to `target`.
    pub fn acked(&self, target: u64) -> usize {
        self.links
            .read()
            .iter()
            .filter(|l| {
                !l.closed.load(Ordering::Acquire) && l.applied.load(Ordering::Acquire) >= target
            })
            .count()
    }

    /// WAIT blocks `client` until `need` replicas have `target`; returns the waiter's id.
    pub fn add_waiter(
        &self,
        client: Arc<ClientHandle>,
        target: u64,
        need: usize,
        aof: bool,
    ) -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        self.waiters.lock().push(Waiter {
            client,
            target,
            need,
            id,
            aof,
        });
        self.check_waiters();
        id
    }

    /// WAIT's timeout: the waiter gets the count it has now, if it still waits.
    pub fn expire_waiter(&self, id: u64) {
        let w = {
            let mut ws = self.waiters.lock();
            ws.iter()
                .position(|w| w.id == id)
                .map(|i| ws.swap_remove(i))
        };
        if let Some(w) = w {
            let n = self.acked(w.target);
            w.answer(n);
        }
    }

    /// Answers the waiters whose replicas have caught up.
    pub fn check_waiters(&self) {
        let mut ws = self.waiters.lock();
        if ws.is_empty() {
            return;
        }
        let mut i = 0;
        while i < ws.len() {
            let n = self.acked(ws[i].target);
            if n >= ws[i].need {
                let w = ws.swap_remove(i);
                w.answer(n);
            } else {
                i += 1;
            }
        }
    }
}

/// A dataset's replication state: its role, offsets and links.
pub struct ReplNode {
    /// The node index in the topology (0 for a one-node server).
    pub index: AtomicUsize,
    pub replid: Mutex<String>,
    pub replid2: Mutex<String>,
    pub second_offset: AtomicI64,
    /// master_repl_offset: a primary's last shipped entry; a replica's last applied one.
    pub offset: AtomicU64,
    /// Set while this dataset is a replica (cheap check on every keyspace lock).
    pub is_replica: AtomicBool,
    /// The link to its primary, while a replica.
    pub upstream: RwLock<Option<Arc<Link>>>,
    /// Its replicas.
    pub downstream: Arc<Downstream>,
}

impl Default for ReplNode {
    fn default() -> ReplNode {
        ReplNode {
            index: AtomicUsize::new(0),
            replid: Mutex::new(super::random_run_id()),
            replid2: Mutex::new("0".repeat(40)),
            second_offset: AtomicI64::new(-1),
            offset: AtomicU64::new(0),
            is_replica: AtomicBool::new(false),
            upstream: RwLock::new(None),
            downstream: Arc::default(),
        }
    }
}

impl ReplNode {
    /// Sends the entries the primary's engine recorded to every replica. Called as the
    /// keyspace lock is released, so entries leave in the order they were recorded.
    pub fn ship(&self, entries: Vec<Entry>) {
        let links = self.downstream.links.read();
        for e in entries {
            self.offset.store(e.offset, Ordering::Release);
            if links.is_empty() {
                continue;
            }
            let e = Arc::new(e);
            for l in links.iter() {
                l.push(Item::Entry(e.clone()));
            }
        }
    }

    /// Applies what is due from the upstream link into `core` (this dataset's, locked).
    /// Returns when the next lagging entry will be due (replica clock ms), if one waits.
    pub fn drain(&self, core: &mut Core) -> Option<i64> {
        let link = self.upstream.read().clone()?;
        let mut applied = None;
        let next = loop {
            let now = core.engine.clock.now_ms();
            match link.next_due(now) {
                Ok(item) => {
                    let off = item.offset();
                    match &item {
                        Item::Full(f) => {
                            for (i, db) in f.dbs.iter().enumerate() {
                                if i < core.engine.dbs.len() {
                                    core.engine.replace_db(i, db.to_db());
                                }
                            }
                        }
                        Item::Entry(e) => core.engine.repl_apply(e),
                    }
                    // A replica's own replicas get what it applied (chained replication).
                    if !self.downstream.links.read().is_empty() {
                        let fwd = match &item {
                            Item::Full(f) => Item::Full(f.clone()),
                            Item::Entry(e) => Item::Entry(e.clone()),
                        };
                        for l in self.downstream.links.read().iter() {
                            match &fwd {
                                Item::Full(f) => l.push(Item::Full(f.clone())),
                                Item::Entry(e) => l.push(Item::Entry(e.clone())),
                            }
                        }
                    }
                    applied = Some(off);
                }
                Err(next) => break next,
            }
        };
        if let Some(off) = applied {
            core.engine.after_command();
            self.offset.store(off, Ordering::Release);
            link.applied.store(off, Ordering::Release);
            link.last_io
                .store(crate::base::mono::Mono::now().ms(), Ordering::Relaxed);
            if let Some(d) = link.acks.upgrade() {
                d.check_waiters();
            }
        }
        next
    }
}
