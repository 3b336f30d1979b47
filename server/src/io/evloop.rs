//! An event loop of our own for plain TCP connections (`event-loop yes`, the default).
//!
//! With it, the connection tasks of the TCP listeners run on one thread that waits in
//! `epoll_wait` itself, as Redis' `ae` does, instead of on tokio's scheduler and I/O
//! driver. The connection code is the same (`conn::serve`, an `async fn`): this module is
//! a small executor and reactor for it.
//!
//! * **Tasks** run in the order they were woken, first in first out. Sockets are woken in
//!   the order `epoll_wait` reports them, which is the order their data arrived.
//! * **Sockets** are registered once, edge-triggered, with a pointer to their readiness
//!   state ([`IoState`]). A read that finds nothing clears the read bit and stores the
//!   task's waker; the next event sets the bit and wakes it. A counter of events guards
//!   the clearing, so an event that comes while a read runs is never lost.
//! * **Timers, spawns and `yield_now`** still come from tokio: the loop thread enters the
//!   runtime's context, and tokio's worker fires the timers. A waker called from another
//!   thread (a timer, a publish, a wake-up of a blocked client) queues the task and writes
//!   to an eventfd when the loop sleeps.
//! * **A long Lua script** must not hold the thread every other connection runs on: past
//!   its hand-off point (`scripting::bridge`) the script's thread gives the loop to a new
//!   thread ([`hand_off`]) and finishes the script; the new thread serves everyone else,
//!   who get `-BUSY` until it ends. The old thread then puts the script's task back in the
//!   queue and exits. This is what `block_in_place` does for tokio's workers.
//!
//! TLS, Unix-socket and cluster-node connections stay on tokio.

use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

// A task's states. Only the thread that moved it from QUEUED to RUNNING polls it.
const IDLE: u8 = 0;
const QUEUED: u8 = 1;
const RUNNING: u8 = 2;
/// Woken while it ran: queued again when its poll returns.
const NOTIFIED: u8 = 3;
const DONE: u8 = 4;

/// The epoll token of the eventfd that wakes a sleeping loop.
const WAKE_TOKEN: u64 = 0;

struct Task {
    fut: Mutex<Option<BoxFuture>>,
    state: AtomicU8,
    lp: Arc<Inner>,
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            let next = match s {
                IDLE => QUEUED,
                RUNNING => NOTIFIED,
                _ => return,
            };
            match self
                .state
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    if next == QUEUED {
                        self.lp.push(self.clone());
                    }
                    return;
                }
                Err(now) => s = now,
            }
        }
    }
}

struct Inner {
    epfd: OwnedFd,
    wakefd: OwnedFd,
    queue: Mutex<VecDeque<Arc<Task>>>,
    /// The loop waits in `epoll_wait` with no timeout: a push must write to `wakefd`.
    sleeping: AtomicBool,
    /// The generation of the thread that runs the loop; a hand-off makes a new one.
    owner: AtomicU64,
    /// Sockets deregistered since the loop last dispatched events: freed by the loop
    /// before it waits again, so no event it still holds points at freed state.
    graveyard: Mutex<Vec<Arc<IoState>>>,
    rt: tokio::runtime::Handle,
    /// Tasks spawned and not finished.
    live: AtomicUsize,
    /// Every [`Loop`] handle is gone (the server stops): the thread exits once no task is
    /// left (stopping kills every client).
    stopping: AtomicBool,
}

impl Inner {
    fn push(&self, t: Arc<Task>) {
        self.queue.lock().push_back(t);
        if self.sleeping.swap(false, Ordering::AcqRel) {
            self.wake_loop();
        }
    }

    fn wake_loop(&self) {
        let one: u64 = 1;
        // SAFETY: an 8-byte write from a valid u64 to our own eventfd.
        let _ = unsafe {
            libc::write(
                self.wakefd.as_raw_fd(),
                &one as *const u64 as *const libc::c_void,
                8,
            )
        };
    }
}

/// The loop: where connections are spawned. When the last handle goes, the loop's thread
/// ends as soon as its tasks have.
#[derive(Clone)]
pub struct Loop(Arc<Handle>);

struct Handle(Arc<Inner>);

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.stopping.store(true, Ordering::SeqCst);
        self.0.wake_loop();
    }
}

thread_local! {
    /// The loop this thread runs, and its generation (so a hand-off happens once).
    static CURRENT: RefCell<Option<(Arc<Inner>, u64)>> = const { RefCell::new(None) };
}

impl Loop {
    /// Creates the loop and starts its thread, which enters `rt`'s context.
    pub fn start(rt: tokio::runtime::Handle) -> io::Result<Loop> {
        // SAFETY: plain system calls; their fds are owned at once.
        let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epfd < 0 {
            return Err(io::Error::last_os_error());
        }
        let epfd = unsafe { OwnedFd::from_raw_fd(epfd) };
        let wakefd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if wakefd < 0 {
            return Err(io::Error::last_os_error());
        }
        let wakefd = unsafe { OwnedFd::from_raw_fd(wakefd) };
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: WAKE_TOKEN,
        };
        // SAFETY: valid fds and event.
        if unsafe {
            libc::epoll_ctl(
                epfd.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                wakefd.as_raw_fd(),
                &mut ev,
            )
        } < 0
        {
            return Err(io::Error::last_os_error());
        }
        let inner = Arc::new(Inner {
            epfd,
            wakefd,
            queue: Mutex::new(VecDeque::new()),
            sleeping: AtomicBool::new(false),
            owner: AtomicU64::new(0),
            graveyard: Mutex::new(Vec::new()),
            rt,
            live: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
        });
        spawn_thread(inner.clone(), 0)?;
        Ok(Loop(Arc::new(Handle(inner))))
    }

    /// Runs `fut` on the loop.
    pub fn spawn(&self, fut: impl Future<Output = ()> + Send + 'static) {
        let inner = &self.0 .0;
        inner.live.fetch_add(1, Ordering::AcqRel);
        let t = Arc::new(Task {
            fut: Mutex::new(Some(Box::pin(fut))),
            state: AtomicU8::new(QUEUED),
            lp: inner.clone(),
        });
        inner.push(t);
    }

    /// Registers a connected socket with the loop.
    pub fn register(&self, s: std::net::TcpStream) -> io::Result<LoopStream> {
        s.set_nonblocking(true)?;
        let io = Arc::new(IoState {
            fd: OwnedFd::from(s),
            ready: AtomicU64::new(0),
            reader: Mutex::new(None),
            writer: Mutex::new(None),
        });
        let token = Arc::into_raw(io.clone()) as u64;
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: token,
        };
        let inner = &self.0 .0;
        // SAFETY: valid fds and event; the token's reference is released on failure.
        if unsafe {
            libc::epoll_ctl(
                inner.epfd.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                io.fd.as_raw_fd(),
                &mut ev,
            )
        } < 0
        {
            let err = io::Error::last_os_error();
            drop(unsafe { Arc::from_raw(token as *const IoState) });
            return Err(err);
        }
        Ok(LoopStream(Arc::new(Registration {
            io,
            token,
            lp: inner.clone(),
        })))
    }
}

fn spawn_thread(inner: Arc<Inner>, gen: u64) -> io::Result<()> {
    std::thread::Builder::new()
        .name("tumbler-loop".into())
        // As tokio's workers: deep Lua and deep replies run here.
        .stack_size(crate::base::consts::THREAD_STACK)
        .spawn(move || run(inner, gen))
        .map(|_| ())
}

/// Gives the loop to a new thread when called on the thread that runs it: the caller goes
/// on with what it is doing (a long script) while everyone else is served. None on any
/// other thread.
pub fn hand_off() -> Option<bool> {
    let (inner, gen) = CURRENT.with(|c| c.borrow_mut().take())?;
    if inner
        .owner
        .compare_exchange(gen, gen + 1, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Some(true);
    }
    if spawn_thread(inner.clone(), gen + 1).is_err() {
        // No thread to take it (out of threads or memory): this one keeps the loop, and
        // the script's hook asks again later, as after a hand-off tokio did not take.
        inner.owner.store(gen, Ordering::Release);
        CURRENT.with(|c| *c.borrow_mut() = Some((inner, gen)));
        return Some(false);
    }
    Some(true)
}

fn run(inner: Arc<Inner>, gen: u64) {
    let _rt = inner.rt.enter();
    CURRENT.with(|c| *c.borrow_mut() = Some((inner.clone(), gen)));
    let mut events: Vec<libc::epoll_event> = vec![libc::epoll_event { events: 0, u64: 0 }; 1024];
    loop {
        // The tasks queued now, in order; tasks they wake run in the next pass, after the
        // sockets that became readable meanwhile.
        let n = inner.queue.lock().len();
        for _ in 0..n {
            let Some(t) = inner.queue.lock().pop_front() else {
                break;
            };
            poll_task(&inner, t);
            if inner.owner.load(Ordering::Acquire) != gen {
                // Handed off while that task ran: the new thread has the loop.
                return;
            }
        }
        drop(std::mem::take(&mut *inner.graveyard.lock()));
        if inner.stopping.load(Ordering::SeqCst) && inner.live.load(Ordering::SeqCst) == 0 {
            return;
        }
        let timeout = if inner.queue.lock().is_empty() {
            inner.sleeping.store(true, Ordering::SeqCst);
            if inner.queue.lock().is_empty() {
                -1
            } else {
                inner.sleeping.store(false, Ordering::SeqCst);
                0
            }
        } else {
            0
        };
        // SAFETY: `events` is a valid buffer of its length.
        let k = unsafe {
            libc::epoll_wait(
                inner.epfd.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                timeout,
            )
        };
        inner.sleeping.store(false, Ordering::SeqCst);
        if inner.owner.load(Ordering::Acquire) != gen {
            return;
        }
        for ev in &events[..k.max(0) as usize] {
            let token = ev.u64;
            if token == WAKE_TOKEN {
                let mut v: u64 = 0;
                // SAFETY: an 8-byte read into a valid u64 from our eventfd.
                let _ = unsafe {
                    libc::read(
                        inner.wakefd.as_raw_fd(),
                        &mut v as *mut u64 as *mut libc::c_void,
                        8,
                    )
                };
                continue;
            }
            // SAFETY: a registered socket's token holds a reference to its state, released
            // only into the graveyard, which this thread empties before its next wait.
            let io = unsafe { &*(token as *const IoState) };
            io.event(ev.events);
        }
    }
}

fn poll_task(inner: &Arc<Inner>, t: Arc<Task>) {
    t.state.store(RUNNING, Ordering::Release);
    let waker = Waker::from(t.clone());
    let mut cx = Context::from_waker(&waker);
    let done = {
        let mut f = t.fut.lock();
        // A panic ends that connection only, as a tokio task's does.
        let done = match f.as_mut() {
            Some(fut) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                fut.as_mut().poll(&mut cx).is_ready()
            }))
            .unwrap_or(true),
            None => true,
        };
        if done {
            *f = None;
        }
        done
    };
    if done {
        t.state.store(DONE, Ordering::Release);
        inner.live.fetch_sub(1, Ordering::AcqRel);
    } else if t
        .state
        .compare_exchange(RUNNING, IDLE, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        // Woken while it ran.
        t.state.store(QUEUED, Ordering::Release);
        inner.push(t);
    }
}

// Readiness bits in the low byte of `IoState::ready`; the rest counts events.
const READ: u64 = 1;
const WRITE: u64 = 2;
/// The peer closed (or the socket failed): never cleared, so every later read or write
/// reaches the socket and sees the end, though edge-triggered epoll reports it only once.
const READ_CLOSED: u64 = 4;
const WRITE_CLOSED: u64 = 8;
const EVENT: u64 = 1 << 8;

/// The bits that let a read (`READ`) or a write (`WRITE`) go to the socket.
fn ready_mask(bit: u64) -> u64 {
    if bit == READ {
        READ | READ_CLOSED
    } else {
        WRITE | WRITE_CLOSED
    }
}

/// A socket's readiness, set by the loop's events and cleared by reads and writes that
/// find the socket empty (or full).
struct IoState {
    fd: OwnedFd,
    ready: AtomicU64,
    reader: Mutex<Option<Waker>>,
    writer: Mutex<Option<Waker>>,
}

impl IoState {
    fn event(&self, events: u32) {
        let mut bits = 0;
        let e = events as i32;
        if e & libc::EPOLLIN != 0 {
            bits |= READ;
        }
        if e & (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) != 0 {
            bits |= READ | READ_CLOSED;
        }
        if e & libc::EPOLLOUT != 0 {
            bits |= WRITE;
        }
        if e & (libc::EPOLLHUP | libc::EPOLLERR) != 0 {
            bits |= WRITE | WRITE_CLOSED;
        }
        self.ready.fetch_add(EVENT, Ordering::AcqRel);
        self.ready.fetch_or(bits, Ordering::AcqRel);
        if bits & READ != 0 {
            if let Some(w) = self.reader.lock().take() {
                w.wake();
            }
        }
        if bits & WRITE != 0 {
            if let Some(w) = self.writer.lock().take() {
                w.wake();
            }
        }
    }

    /// The readiness seen now if `bit` is set; otherwise stores the waker and looks again
    /// (an event between the two looks is seen by the second, one after it finds the waker).
    fn poll_ready(&self, cx: &Context<'_>, bit: u64) -> Poll<u64> {
        let mask = ready_mask(bit);
        let r = self.ready.load(Ordering::Acquire);
        if r & mask != 0 {
            return Poll::Ready(r);
        }
        let slot = if bit == READ {
            &self.reader
        } else {
            &self.writer
        };
        crate::state::keep_waker(slot, cx.waker());
        let r = self.ready.load(Ordering::Acquire);
        if r & mask != 0 {
            Poll::Ready(r)
        } else {
            Poll::Pending
        }
    }

    /// Clears `bit` unless an event came since `seen` was read.
    fn clear(&self, seen: u64, bit: u64) {
        let _ = self
            .ready
            .compare_exchange(seen, seen & !bit, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Runs `op` (a `recv` or a `send`, returning what the system call did) once the
    /// socket is ready for `bit`; when it finds the socket empty (or full), clears the bit
    /// and waits again. Returns the bytes moved and the readiness `op` ran under.
    fn poll_io(
        &self,
        cx: &Context<'_>,
        bit: u64,
        mut op: impl FnMut() -> isize,
    ) -> Poll<io::Result<(usize, u64)>> {
        loop {
            let seen = std::task::ready!(self.poll_ready(cx, bit));
            let n = op();
            if n >= 0 {
                return Poll::Ready(Ok((n as usize, seen)));
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::WouldBlock => self.clear(seen, bit),
                io::ErrorKind::Interrupted => {}
                _ => return Poll::Ready(Err(err)),
            }
        }
    }

    fn poll_read(&self, cx: &Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if buf.remaining() == 0 {
            // Nothing to read into; a recv of 0 bytes would look like the peer's close.
            return Poll::Ready(Ok(()));
        }
        // SAFETY: recv writes at most `len` bytes into the unfilled part, and only what it
        // reports written is marked initialized.
        let dst = unsafe { buf.unfilled_mut() };
        let (ptr, len) = (dst.as_mut_ptr() as *mut libc::c_void, dst.len());
        let fd = self.fd.as_raw_fd();
        let (n, seen) =
            std::task::ready!(self.poll_io(cx, READ, || unsafe { libc::recv(fd, ptr, len, 0) }))?;
        if n > 0 && n < len {
            // A short read emptied the socket: the next data is a new edge.
            self.clear(seen, READ);
        }
        unsafe { buf.assume_init(n) };
        buf.advance(n);
        Poll::Ready(Ok(()))
    }

    fn poll_write(&self, cx: &Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let fd = self.fd.as_raw_fd();
        // SAFETY: send reads `data.len()` bytes from a valid slice.
        let send = || unsafe {
            libc::send(
                fd,
                data.as_ptr() as *const libc::c_void,
                data.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        self.poll_io(cx, WRITE, send).map_ok(|(n, _)| n)
    }

    fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A socket's registration; deregisters it when both halves are gone.
struct Registration {
    io: Arc<IoState>,
    token: u64,
    lp: Arc<Inner>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: valid fds; the token's reference goes to the graveyard, which the loop
        // empties after dispatching the events it holds.
        unsafe {
            libc::epoll_ctl(
                self.lp.epfd.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                self.io.raw(),
                std::ptr::null_mut(),
            );
            let io = Arc::from_raw(self.token as *const IoState);
            // Close now: the peer must see the end without waiting for the loop.
            libc::shutdown(io.raw(), libc::SHUT_RDWR);
            self.lp.graveyard.lock().push(io);
        }
        if self.lp.sleeping.load(Ordering::Acquire) {
            self.lp.wake_loop();
        }
    }
}

/// A TCP connection on the loop.
pub struct LoopStream(Arc<Registration>);

/// Its read half.
pub struct LoopRead(Arc<Registration>);

/// Its write half.
pub struct LoopWrite(Arc<Registration>);

impl AsyncRead for LoopRead {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.0.io.poll_read(cx, buf)
    }
}

impl AsyncWrite for LoopWrite {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.io.poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // SAFETY: a valid fd.
        unsafe { libc::shutdown(self.0.io.raw(), libc::SHUT_WR) };
        Poll::Ready(Ok(()))
    }
}

impl crate::io::stream::Stream for LoopStream {
    type Read = LoopRead;
    type Write = LoopWrite;

    fn split(self) -> (LoopRead, LoopWrite) {
        (LoopRead(self.0.clone()), LoopWrite(self.0))
    }

    // The loop runs tasks in the order epoll reports their sockets: arrival order.
    const LOOP_ORDERED: bool = true;

    fn others_waiting() -> Option<bool> {
        CURRENT.with(|c| {
            c.borrow()
                .as_ref()
                .map(|(inner, _)| !inner.queue.lock().is_empty())
        })
    }
}
