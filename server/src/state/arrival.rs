//! Arrival order across connections on tokio's workers (TLS and Unix-socket connections,
//! and plain TCP ones with `event-loop no`; our own event loop, `evloop.rs`, keeps the
//! order by itself).
//!
//! Redis is one thread: `epoll_wait` hands it the readable sockets in the order their data
//! arrived, and it runs each one's commands in that order. So when a client sends
//! `XREADGROUP ... BLOCK 0` and, a moment later, another client sends `SET` on the same key,
//! Redis always blocks the first before running the second (the SET then unblocks it with
//! "the key no longer exists"). Redis' own test suite relies on that order.
//!
//! Tokio's I/O driver wakes connection tasks in that same order, but its scheduler does not
//! run them in it: the last task woken goes into the worker's LIFO slot and runs first, and
//! the second worker steals from the queue. Measured with two connections (one sends a
//! blocking XREADGROUP, the other a SET right after): redis-server 7.0.15 ran them in sending
//! order 300 times of 300, tumbler without this module about half the time.
//!
//! The fix keeps the order the driver knows. Each connection's read half is wrapped in
//! [`OrderedRead`], which hands the socket a waker of its own. When the driver wakes it (data
//! arrived), it takes a ticket from the server's [`Arrivals`] counter. Before running the
//! commands it read, a connection waits ([`Turn::wait`]) until no connection with an earlier
//! ticket is still waiting to run, runs them, then gives its ticket back. Waiting is bounded: a ticket
//! that has kept others waiting for [`MAX_WAIT`] is not waited for any more (its connection
//! is busy elsewhere: a stuck write, or a script holds the keyspace and this client sends
//! SCRIPT KILL), so the order is a best effort that never stalls anyone for long. The cost
//! per batch is three short critical sections on one mutex (push a ticket, look at the one
//! before it, pop), with no allocation, and no clock reading and no timer unless there is
//! someone to wait for.

use crate::base::mono::Mono;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use tokio::io::{AsyncRead, ReadBuf};

/// The longest a connection waits for connections whose data arrived before its own.
pub const MAX_WAIT: Duration = Duration::from_millis(10);

/// Tickets of connections that have unread or unrun input, in arrival order, with the time
/// each arrived and the waker of a connection waiting for its turn.
#[derive(Default)]
pub struct Arrivals {
    pending: Mutex<Ring>,
    /// How many tickets are out (the live entries of `pending`, readable without the mutex).
    out: AtomicU64,
}

/// The tickets still out, oldest first. Tickets are handed out in order under the mutex, so
/// taking one is a push at the back, and a given-back ticket is found by binary search and
/// removed at once: the queue holds only tickets that are out (at most one per connection),
/// however long one of them stays out, and needs no allocation once it has grown to the
/// number of connections with input. (A BTreeMap allocated a node per ticket whenever it
/// emptied, which at -P 1 is every request.)
struct Ring {
    next: u64,
    live: VecDeque<(u64, Entry)>,
}

impl Default for Ring {
    fn default() -> Self {
        // Ticket 0 means "none" (`Turn::ticket`), so the first one handed out is 1.
        Ring {
            next: 1,
            live: VecDeque::new(),
        }
    }
}

impl Ring {
    /// The position of ticket `t`. Tickets are whole numbers handed out one after another,
    /// so `t` is at most `t - front` places in; with no ticket given back out of order (the
    /// usual case) it is exactly there, and only otherwise is the queue searched.
    fn find(&self, t: u64) -> Option<usize> {
        let front = self.live.front()?.0;
        let most = usize::try_from(t.checked_sub(front)?).ok()?;
        if self.live.get(most).is_some_and(|(k, _)| *k == t) {
            return Some(most);
        }
        self.live.binary_search_by_key(&t, |(k, _)| *k).ok()
    }
}

struct Entry {
    /// When a connection first found this ticket ahead of its own (None until then): the
    /// clock is read only when someone waits, not for every arrival.
    seen: Option<Mono>,
    waiter: Option<Waker>,
}

impl Arrivals {
    fn take(&self) -> u64 {
        let mut ring = self.pending.lock();
        let t = ring.next;
        ring.next += 1;
        let entry = Entry {
            seen: None,
            waiter: None,
        };
        ring.live.push_back((t, entry));
        self.out.fetch_add(1, Ordering::Relaxed);
        t
    }

    /// Removes ticket `t` and wakes the connection whose ticket came right after it, if it
    /// waits: a connection waits on the nearest earlier ticket only (`earlier_pending`),
    /// so that is the one whose wait this release may end (when `t` was first in line, the
    /// one now first). Each release wakes at most one task. (Waking only the first in
    /// line left a connection waiting behind a ticket given back out of order asleep until
    /// its MAX_WAIT timeout whenever the first in line was itself a stuck one.)
    fn release(&self, t: u64) {
        let next = {
            let mut ring = self.pending.lock();
            let Some(i) = ring.find(t) else {
                return;
            };
            ring.live.remove(i);
            self.out.fetch_sub(1, Ordering::Relaxed);
            ring.live.get_mut(i).and_then(|(_, e)| e.waiter.take())
        };
        if let Some(w) = next {
            w.wake();
        }
    }

    /// Whether a ticket before `t` is still pending that has not kept others waiting for
    /// [`MAX_WAIT`] already; if so, `waker` is stored to be woken when the turn comes.
    /// Tickets that have are not waited for: their connection is busy elsewhere (a stuck
    /// write, a script), and waiting on it would slow every other client.
    fn earlier_pending(&self, t: u64, waker: &Waker) -> bool {
        let mut ring = self.pending.lock();
        let Some(i) = ring.find(t) else {
            return false;
        };
        // Only the nearest earlier ticket is looked at: the ones before it arrived earlier
        // still, so if it has kept others waiting for MAX_WAIT, they have been pending for
        // longer than that too.
        let earlier = i > 0 && {
            let now = Mono::now();
            let seen = ring.live[i - 1].1.seen.get_or_insert(now);
            now.ns_since(*seen) < MAX_WAIT.as_nanos() as u64
        };
        if earlier {
            ring.live[i].1.waiter = Some(waker.clone());
        }
        earlier
    }
}

/// One connection's place in the arrival order: its ticket (0 when it has none) and the
/// task waker that the socket's wake-ups are forwarded to.
pub struct Turn {
    arrivals: Arc<Arrivals>,
    ticket: AtomicU64,
    task: Mutex<Option<Waker>>,
    /// The socket holds this connection's waker and had no data when it was stored
    /// ([`OrderedRead`]'s arming): until the waker is woken, a read would find nothing.
    armed: AtomicBool,
}

impl Turn {
    pub fn new(arrivals: Arc<Arrivals>) -> Arc<Turn> {
        Arc::new(Turn {
            arrivals,
            ticket: AtomicU64::new(0),
            task: Mutex::new(None),
            armed: AtomicBool::new(false),
        })
    }

    /// Takes a ticket unless one is held (input that arrived earlier and has not run yet
    /// keeps its place).
    fn arrived(&self) {
        if self.ticket.load(Ordering::Acquire) != 0 {
            return;
        }
        let t = self.arrivals.take();
        if self
            .ticket
            .compare_exchange(0, t, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            self.arrivals.release(t);
        }
    }

    /// Waits (at most [`MAX_WAIT`]) until every connection whose input arrived before this
    /// one's has run it. Call it before running commands that were read, and
    /// [`Turn::give_back`] after: holding the ticket while they run keeps a later arrival
    /// on the other worker from overtaking them on the way to the keyspace lock.
    pub async fn wait(&self) {
        let t = self.ticket.load(Ordering::Acquire);
        if t == 0 {
            return;
        }

        // Only this ticket is out: nothing to wait for (no lock, no timer).
        if self.arrivals.out.load(Ordering::Relaxed) <= 1 {
            return;
        }
        let first_in_line =
            std::future::poll_fn(|cx| Poll::Ready(!self.arrivals.earlier_pending(t, cx.waker())))
                .await;
        if first_in_line {
            return;
        }
        let turn = std::future::poll_fn(|cx| {
            if self.arrivals.earlier_pending(t, cx.waker()) {
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        });
        // The timeout (a timer, armed only when there is someone to wait for) covers a
        // first-in-line ticket that goes stale while we wait.
        let _ = tokio::time::timeout(MAX_WAIT, turn).await;
    }

    /// Whether other connections have input that arrived and has not run yet (after
    /// [`Turn::give_back`], this connection's own ticket is not counted).
    pub fn others_waiting(&self) -> bool {
        self.arrivals.out.load(Ordering::Relaxed) != 0
    }

    /// Gives up the ticket, if any (nothing left to run, or the connection ends).
    pub fn give_back(&self) {
        let t = self.ticket.swap(0, Ordering::AcqRel);
        if t != 0 {
            self.arrivals.release(t);
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.give_back();
    }
}

/// Forwards the socket's wake-up to the task, after taking a ticket.
struct SocketWaker(Arc<Turn>);

impl Wake for SocketWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Before the task waker is read (under its lock): a read that finds `armed` still
        // set has stored its task waker first, so this wake-up reaches it.
        self.0.armed.store(false, Ordering::Release);
        self.0.arrived();
        if let Some(w) = self.0.task.lock().as_ref() {
            w.wake_by_ref();
        }
    }
}

/// A read half whose readiness wake-ups take a ticket in [`Arrivals`].
pub struct OrderedRead<R> {
    inner: R,
    turn: Arc<Turn>,
    waker: Waker,
    /// None: reads go straight to the socket, with no ticket ([`OrderedRead::direct`]).
    arm: Option<fn(&mut R, &mut Context<'_>) -> bool>,
}

impl<R> OrderedRead<R> {
    /// `arm` registers the socket waker without reading ([`crate::io::stream::Stream::arm_read`]).
    pub fn new(inner: R, turn: Arc<Turn>, arm: fn(&mut R, &mut Context<'_>) -> bool) -> Self {
        Self::with_arm(inner, turn, Some(arm))
    }

    /// Reads that take no ticket: for a connection whose event loop runs connections in
    /// arrival order by itself (`evloop.rs`). Its `turn` then never holds one.
    pub fn direct(inner: R, turn: Arc<Turn>) -> Self {
        Self::with_arm(inner, turn, None)
    }

    fn with_arm(
        inner: R,
        turn: Arc<Turn>,
        arm: Option<fn(&mut R, &mut Context<'_>) -> bool>,
    ) -> Self {
        let waker = Waker::from(Arc::new(SocketWaker(turn.clone())));
        OrderedRead {
            inner,
            turn,
            waker,
            arm,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for OrderedRead<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let Some(arm) = self.arm else {
            return Pin::new(&mut self.inner).poll_read(cx, buf);
        };
        crate::state::keep_waker(&self.turn.task, cx.waker());
        let this = &mut *self;
        // Armed and not woken since: the socket had no data then and has had none since,
        // so a read would only find nothing and store the same waker again (about 250
        // instructions per request at -P 1). The task waker is stored above, before this
        // load, so a wake-up racing with it still reaches the task.
        if this.turn.armed.load(Ordering::Acquire) {
            return Poll::Pending;
        }
        let before = buf.filled().len();
        let held = this.turn.ticket.load(Ordering::Acquire);
        let mut inner_cx = Context::from_waker(&this.waker);
        let r = Pin::new(&mut this.inner).poll_read(&mut inner_cx, buf);
        match r {
            Poll::Ready(Ok(())) if buf.filled().len() > before => {
                // Data that was already there when polled (no wake-up came first) arrived now.
                this.turn.arrived();
                // A successful read leaves no waker with the socket until the next read
                // returns Pending, which comes only after these commands ran and their
                // replies were written. The client may send its next command as soon as it
                // has its reply, before that: arm the waker now so that data's arrival takes
                // a ticket in the order the driver sees it, not when this task gets to it.
                // Set before arming: a wake-up that comes as soon as the waker is stored
                // must find it set, to clear it.
                this.turn.armed.store(true, Ordering::Release);
                if !arm(&mut this.inner, &mut inner_cx) {
                    this.turn.armed.store(false, Ordering::Release);
                }
            }
            // A ticket held from before this read, which found no data (a spurious wake-up,
            // or the data was read already), holds no place. A ticket taken while the read
            // ran is for data that arrived just now and keeps its place.
            Poll::Pending
                if held != 0
                    && this
                        .turn
                        .ticket
                        .compare_exchange(held, 0, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok() =>
            {
                this.turn.arrivals.release(held);
            }
            _ => {}
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn futures_noop_waker() -> Waker {
        struct Noop;
        impl Wake for Noop {
            fn wake(self: Arc<Self>) {}
        }
        Waker::from(Arc::new(Noop))
    }

    #[test]
    fn tickets_follow_arrival_and_are_given_back() {
        let arrivals = Arc::new(Arrivals::default());
        let a = Turn::new(arrivals.clone());
        let b = Turn::new(arrivals.clone());
        a.arrived();
        b.arrived();
        a.arrived(); // keeps its earlier place
        let (ta, tb) = (
            a.ticket.load(Ordering::Relaxed),
            b.ticket.load(Ordering::Relaxed),
        );
        assert!(ta < tb);
        let w = futures_noop_waker();
        assert!(arrivals.earlier_pending(tb, &w));
        assert!(!arrivals.earlier_pending(ta, &w));
        a.give_back();
        assert!(!arrivals.earlier_pending(tb, &w));
        drop(b);
        assert!(arrivals.pending.lock().live.is_empty());
    }

    #[test]
    fn tickets_given_back_out_of_order_leave_the_ring_in_order() {
        let arrivals = Arc::new(Arrivals::default());
        let w = futures_noop_waker();
        let t1 = arrivals.take();
        let t2 = arrivals.take();
        let t3 = arrivals.take();
        assert!(t1 < t2 && t2 < t3);
        // The middle one goes first: the third still waits for the first.
        arrivals.release(t2);
        assert!(arrivals.earlier_pending(t3, &w));
        assert_eq!(arrivals.out.load(Ordering::Relaxed), 2);
        arrivals.release(t1);
        assert!(!arrivals.earlier_pending(t3, &w));
        assert_eq!(arrivals.pending.lock().live.len(), 1);
        // Giving a ticket back twice changes nothing.
        arrivals.release(t1);
        assert_eq!(arrivals.out.load(Ordering::Relaxed), 1);
        let t4 = arrivals.take();
        assert!(t4 > t3);
        assert!(arrivals.earlier_pending(t4, &w));
        arrivals.release(t3);
        arrivals.release(t4);
        assert!(arrivals.pending.lock().live.is_empty());
        assert_eq!(arrivals.out.load(Ordering::Relaxed), 0);
        // Numbering goes on after the ring emptied.
        assert!(arrivals.take() > t4);
    }

    #[test]
    fn a_ticket_is_found_wherever_gaps_put_it() {
        let arrivals = Arrivals::default();
        let mut out: Vec<u64> = Vec::new();
        let mut x: u64 = 12345;
        for _ in 0..5_000 {
            // A pseudo-random mix of arrivals and give-backs in any order.
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if out.len() < 3 || x >> 62 != 0 {
                out.push(arrivals.take());
            } else {
                let i = (x >> 20) as usize % out.len();
                arrivals.release(out.remove(i));
            }
            let ring = arrivals.pending.lock();
            for (pos, t) in out.iter().enumerate() {
                assert_eq!(ring.find(*t), Some(pos));
            }
            let gone = out.last().map_or(0, |t| t + 1);
            assert_eq!(ring.find(gone), None);
            assert_eq!(ring.find(0), None);
        }
    }

    #[test]
    fn a_stale_earlier_ticket_is_not_waited_for() {
        let arrivals = Arc::new(Arrivals::default());
        let w = futures_noop_waker();
        let t1 = arrivals.take();
        let t2 = arrivals.take();
        assert!(arrivals.earlier_pending(t2, &w));
        // Both age past MAX_WAIT: the first is no longer waited for, and is still out.
        std::thread::sleep(2 * MAX_WAIT);
        assert!(!arrivals.earlier_pending(t2, &w));
        assert_eq!(arrivals.out.load(Ordering::Relaxed), 2);
        arrivals.release(t1);
        arrivals.release(t2);
    }

    #[test]
    fn a_release_wakes_the_connection_waiting_on_it_behind_a_stuck_one() {
        struct Flag(AtomicU64);
        impl Wake for Flag {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let arrivals = Arc::new(Arrivals::default());
        let noop = futures_noop_waker();
        let stuck = arrivals.take();
        let b = arrivals.take();
        // b waits on the stuck ticket, which then keeps it waiting past MAX_WAIT.
        assert!(arrivals.earlier_pending(b, &noop));
        std::thread::sleep(2 * MAX_WAIT);
        let c = arrivals.take();
        let flag = Arc::new(Flag(AtomicU64::new(0)));
        let waker = Waker::from(flag.clone());
        // c waits on b (its nearest earlier ticket, fresh), b no longer on the stuck one.
        assert!(arrivals.earlier_pending(c, &waker));
        assert!(!arrivals.earlier_pending(b, &noop));
        arrivals.release(b);
        assert_eq!(flag.0.load(Ordering::Relaxed), 1, "c was not woken");
        assert!(!arrivals.earlier_pending(c, &waker));
        arrivals.release(c);
        arrivals.release(stuck);
        assert_eq!(flag.0.load(Ordering::Relaxed), 1);
        assert!(arrivals.pending.lock().live.is_empty());
    }

    /// A socket for [`OrderedRead`]: hands out queued chunks, and keeps the waker it was
    /// last polled or armed with, as tokio's registration does.
    #[derive(Default)]
    struct FakeSocket {
        chunks: std::collections::VecDeque<&'static [u8]>,
        reads: usize,
        waker: Option<Waker>,
        /// Wake the stored waker as soon as arming stores it (data arriving just then).
        wake_while_arming: bool,
    }

    impl AsyncRead for FakeSocket {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            self.reads += 1;
            match self.chunks.pop_front() {
                Some(c) => {
                    buf.put_slice(c);
                    Poll::Ready(Ok(()))
                }
                None => {
                    self.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        }
    }

    fn arm_fake(r: &mut FakeSocket, cx: &mut Context<'_>) -> bool {
        if !r.chunks.is_empty() {
            return false;
        }
        r.waker = Some(cx.waker().clone());
        if r.wake_while_arming {
            r.waker.take().unwrap().wake();
        }
        true
    }

    struct Count(AtomicU64);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A reader for `turn` on a fake socket that holds "a", and a task waker that counts.
    fn reader_with_data(
        turn: &Arc<Turn>,
        wake_while_arming: bool,
    ) -> (OrderedRead<FakeSocket>, Arc<Count>, Waker) {
        let mut rd = OrderedRead::new(FakeSocket::default(), turn.clone(), arm_fake);
        rd.inner.chunks.push_back(b"a");
        rd.inner.wake_while_arming = wake_while_arming;
        let task = Arc::new(Count(AtomicU64::new(0)));
        let task_waker = Waker::from(task.clone());
        (rd, task, task_waker)
    }

    #[test]
    fn an_armed_read_waits_for_the_socket_wake_up_without_reading() {
        let arrivals = Arc::new(Arrivals::default());
        let turn = Turn::new(arrivals.clone());
        let (mut rd, task, task_waker) = reader_with_data(&turn, false);
        let mut cx = Context::from_waker(&task_waker);
        let mut mem = [0u8; 8];
        let mut buf = ReadBuf::new(&mut mem);
        assert!(Pin::new(&mut rd).poll_read(&mut cx, &mut buf).is_ready());
        assert_eq!(buf.filled(), b"a");
        assert_eq!(rd.inner.reads, 1);
        // Armed: the socket holds the waker, and reads until it wakes do not reach it.
        assert!(turn.armed.load(Ordering::Relaxed));
        for _ in 0..3 {
            assert!(Pin::new(&mut rd).poll_read(&mut cx, &mut buf).is_pending());
        }
        assert_eq!(rd.inner.reads, 1);
        assert_eq!(task.0.load(Ordering::Relaxed), 0);
        // Data arrives: the wake-up takes a ticket, reaches the task and disarms.
        rd.inner.chunks.push_back(b"b");
        rd.inner.waker.take().unwrap().wake();
        assert_eq!(task.0.load(Ordering::Relaxed), 1);
        assert!(!turn.armed.load(Ordering::Relaxed));
        assert_ne!(turn.ticket.load(Ordering::Relaxed), 0);
        assert!(Pin::new(&mut rd).poll_read(&mut cx, &mut buf).is_ready());
        assert_eq!(buf.filled(), b"ab");
        assert_eq!(rd.inner.reads, 2);
        turn.give_back();
        assert_eq!(arrivals.out.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_wake_up_while_arming_leaves_the_read_unarmed() {
        let turn = Turn::new(Arc::new(Arrivals::default()));
        let (mut rd, _task, task_waker) = reader_with_data(&turn, true);
        let mut cx = Context::from_waker(&task_waker);
        let mut mem = [0u8; 8];
        let mut buf = ReadBuf::new(&mut mem);
        assert!(Pin::new(&mut rd).poll_read(&mut cx, &mut buf).is_ready());
        assert!(!turn.armed.load(Ordering::Relaxed));
        // So the next read asks the socket (and, finding nothing, stores the waker).
        assert!(Pin::new(&mut rd).poll_read(&mut cx, &mut buf).is_pending());
        assert_eq!(rd.inner.reads, 2);
        assert!(rd.inner.waker.is_some());
    }

    #[test]
    fn a_ticket_that_stays_out_does_not_grow_the_queue() {
        // A client that stopped reading its replies and keeps sending holds its ticket for
        // as long as its write is stuck; everyone else's tickets come and go meanwhile.
        let arrivals = Arc::new(Arrivals::default());
        let stuck = arrivals.take();
        for _ in 0..10_000 {
            let t = arrivals.take();
            arrivals.release(t);
        }
        assert_eq!(arrivals.pending.lock().live.len(), 1);
        arrivals.release(stuck);
        assert!(arrivals.pending.lock().live.is_empty());
    }
}
