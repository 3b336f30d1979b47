//! One client connection: read, parse, dispatch, reply.
//!
//! The task reads whatever the socket has, parses every complete command in the buffer and
//! runs them in order, taking the keyspace lock once for the whole batch (released before
//! any await), then writes all replies with one write. Between batches it also waits for
//! messages from other tasks: pub/sub deliveries, MONITOR lines, the wake-up of a blocked
//! command, or a kill.

pub mod accept;
pub mod checks;
pub mod client_line;
pub mod limits;
pub mod multi;
pub mod route;
pub mod subs;

use crate::state::fanout::SubSet;
use bytes::{Buf, Bytes, BytesMut};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use lockcore::commands;
use lockcore::engine::spec::{flag, CommandSpec, Exec};
use lockcore::{error, ClientCtx, Reply};

use crate::base::consts::OOM_ERR;
use crate::io::stream::{Stream, Transport};
use crate::resp::{self, Limits};
use crate::state::{ClientHandle, ClientInfo, CoreGuard, LockError, Msg, Shared};

/// A server command's handler: what runs a row the table marks `Exec::Server`. The row
/// is in lockcore's table; the handler registers itself beside its code with
/// [`server_command!`](crate::server_command), so a server command is one row plus one
/// handler. A container's handler runs all of its subcommands.
pub type Handler =
    fn(&mut Conn, &mut Option<CoreGuard<'_>>, &'static CommandSpec, &[Bytes]) -> Reply;

/// One registration: the top-level names of the rows `run` serves.
pub struct ServerCommand {
    pub names: &'static [&'static str],
    pub run: Handler,
}

/// Every server command's handler, gathered at link time from the `server_command!` lines
/// in the features (a test checks each `Exec::Server` row has exactly one).
#[linkme::distributed_slice]
pub static SERVER_COMMANDS: [ServerCommand];

/// A sentinel's commands (server/src/sentinel/ registers the one hook): `None` runs the
/// command as on a data node, `Some(Ok(reply))` answers it, `Some(Err(e))` refuses it.
pub type SentinelHook =
    fn(&mut Conn, &mut Option<CoreGuard<'_>>, &[Bytes]) -> Option<Result<Reply, Reply>>;

#[linkme::distributed_slice]
pub static SENTINEL_HOOK: [SentinelHook];

/// Registers a handler for the table rows named: `server_command!(["ping"], ping);`.
#[macro_export]
macro_rules! server_command {
    ([$($name:literal),+ $(,)?], $run:expr) => {
        const _: () = {
            #[linkme::distributed_slice($crate::conn::SERVER_COMMANDS)]
            static REGISTRATION: $crate::conn::ServerCommand = $crate::conn::ServerCommand {
                names: &[$($name),+],
                run: $run,
            };
        };
    };
}

/// The handler of a server command's row (a subcommand's is its container's), found by
/// the row's address.
#[inline]
pub fn handler(spec: &'static CommandSpec) -> Option<Handler> {
    // Fx, as lockcore's registry: it runs for every server command (EVALSHA among them),
    // where SipHash cost about 20 ns.
    type ByAddress = std::collections::HashMap<usize, Handler, rustc_hash::FxBuildHasher>;
    static BY_SPEC: std::sync::OnceLock<ByAddress> = std::sync::OnceLock::new();
    let map = BY_SPEC.get_or_init(|| {
        let mut map = ByAddress::default();
        for top in lockcore::commands::all() {
            let Some(r) = SERVER_COMMANDS.iter().find(|r| r.names.contains(&top.name)) else {
                continue;
            };
            for s in std::iter::once(top).chain(top.subcommands.iter()) {
                map.insert(s as *const CommandSpec as usize, r.run);
            }
        }
        map
    });
    map.get(&(spec as *const CommandSpec as usize)).copied()
}

/// True if a command runs under the keyspace lock: every engine command, and the server
/// commands whose row has the CORE flag.
#[inline]
pub fn needs_core(spec: &CommandSpec) -> bool {
    matches!(spec.exec, Exec::Engine(_)) || spec.has(flag::CORE)
}

/// CLIENT REPLY mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    Skip,
}

/// MULTI state: the queued commands and whether one was rejected while queueing.
#[derive(Default)]
pub struct Multi {
    pub queue: Vec<(&'static CommandSpec, Vec<Bytes>)>,
    pub dirty: bool,
    /// The union of the queued commands' flags (EXEC is refused on OOM if one is DENYOOM).
    pub flags: u32,
}

/// Unwritten replies past which a connection stops reading requests until the client reads
/// (Redis reads on without bound unless an output buffer limit is set; this keeps a client
/// that never reads from filling memory with replies by default).
const PIPELINE_OUT_CAP: usize = 256 << 20;

/// What the main loop does after a batch.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// The last command blocked; wait for its wake-up before reading more.
    Blocked,
    Close,
}

pub struct Conn {
    /// The command this client ran last (CLIENT LIST `cmd=`).
    pub last_spec: Option<&'static CommandSpec>,
    /// When the current batch of commands started (CLIENT LIST idle), read once per batch.
    pub batch_started: crate::base::mono::Mono,
    /// When the command running now started (`execute`); a script's run takes it as its
    /// own start instead of reading the clock again.
    pub cmd_started: crate::base::mono::Mono,
    /// A reading the next command of this batch takes as its start: the batch's start, then
    /// the end of each command. Cleared at every await, so a command's time never counts a
    /// wait for the keyspace lock (or anything else) that happened before it.
    chain: Option<crate::base::mono::Mono>,
    pub shared: Arc<Shared>,
    pub handle: Arc<ClientHandle>,
    pub cl: ClientCtx,
    pub authenticated: bool,
    /// The ACL user this connection is logged in as, and the ACL version it was read at.
    pub user: Arc<crate::state::acl::User>,
    pub acl_version: u64,
    pub multi: Option<Multi>,
    pub watched: Vec<(usize, Bytes)>,
    pub subs: SubSet,
    pub psubs: SubSet,
    pub ssubs: SubSet,
    pub reply_mode: ReplyMode,
    pub out: BytesMut,
    pub flow: Flow,
    pub monitor: bool,
    /// The name of the blocked command, for CLIENT LIST.
    pub blocked_cmd: Option<&'static CommandSpec>,
    /// How long the blocked command's first run took (its commandstats finish on wake-up).
    pub blocked_took: std::time::Duration,
    /// The arguments of a blocked command the slow log will record once it is served.
    pub slow_blocked_argv: Option<Vec<Bytes>>,
    /// The parsed command's arguments; kept between commands for its allocation.
    argv_scratch: Vec<Bytes>,
    /// The last command's name as static bytes (resp::NameCache).
    names: resp::NameCache,
    /// EXEC is running the queued commands.
    pub in_exec: bool,
    /// Output-limit cost of the pub/sub pushes in `out`, released once they are written.
    pub out_push_cost: usize,
    /// Which node the client reached, ASKING, READONLY (server/src/cluster/).
    pub cluster: crate::conn::route::ConnState,
}

/// Runs an accepted connection (TCP, TLS or Unix socket; server/src/net) to the end.
pub async fn serve<S: Stream>(
    shared: Arc<Shared>,
    stream: S,
    addr: SocketAddr,
    laddr: SocketAddr,
    transport: Transport,
) {
    serve_node(shared, stream, addr, laddr, transport, None).await
}

/// [`serve`] for a connection to one node of a multi-node process (server/src/cluster/).
pub async fn serve_node<S: Stream>(
    shared: Arc<Shared>,
    stream: S,
    addr: SocketAddr,
    laddr: SocketAddr,
    transport: Transport,
    node: Option<Arc<crate::state::cluster::Node>>,
) {
    let id = shared.next_client_id();
    let handle = Arc::new(ClientHandle {
        id,
        addr,
        laddr,
        created: Instant::now(),
        mailbox: Default::default(),
        info: parking_lot::Mutex::new(ClientInfo {
            resp: 2,
            multi: -1,
            tracking_redir: -1,
            user: "default".into(),
            last_interaction: Some(crate::base::mono::Mono::now()),
            ..Default::default()
        }),
        pending_out: Default::default(),
        soft_since_ms: Default::default(),
        killed: Default::default(),
        quitting: Default::default(),
        mem: Default::default(),
    });
    shared.clients.insert(id, handle.clone());
    shared
        .counters
        .connections_received
        .fetch_add(1, Ordering::Relaxed);
    let mut conn = Conn {
        last_spec: None,
        batch_started: crate::base::mono::Mono::now(),
        cmd_started: crate::base::mono::Mono::now(),
        chain: None,
        shared: shared.clone(),
        handle,
        cl: ClientCtx {
            id,
            ..Default::default()
        },
        authenticated: !shared.acl.default_needs_auth(),
        acl_version: shared.acl.version(),
        user: shared.acl.default_user(),
        multi: None,
        watched: Vec::new(),
        subs: SubSet::default(),
        psubs: SubSet::default(),
        ssubs: SubSet::default(),
        reply_mode: ReplyMode::On,
        out: BytesMut::with_capacity(4096),
        flow: Flow::Continue,
        monitor: false,
        blocked_cmd: None,
        blocked_took: std::time::Duration::ZERO,
        slow_blocked_argv: None,
        argv_scratch: Vec::new(),
        names: resp::NameCache::default(),
        in_exec: false,
        out_push_cost: 0,
        cluster: crate::conn::route::ConnState {
            node,
            ..Default::default()
        },
    };
    let (maxclients, denied) = {
        let cfg = shared.config.read();
        (
            cfg.get_i64(crate::config::key::MAXCLIENTS) as usize,
            crate::io::net::protected_mode_denies(
                cfg.get_bool(crate::config::key::PROTECTED_MODE),
                shared.acl.default_user().nopass,
                addr,
                transport,
            ),
        )
    };
    let refusal = if shared.clients.len() > maxclients {
        shared
            .counters
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        Some("-ERR max number of clients reached\r\n")
    } else if denied {
        Some(crate::io::net::DENIED)
    } else {
        None
    };
    if let Some(msg) = refusal {
        let (_, mut w) = stream.split();
        let _ = w.write_all(msg.as_bytes()).await;
        let _ = w.shutdown().await;
        conn.cleanup().await;
        return;
    }
    conn.run(stream).await;
    conn.cleanup().await;
}

/// Prefetches the keys of the next commands in `buf` (`Db::prefetch`): on a keyspace
/// larger than the CPU's caches, a lookup waits on three or four memory reads, and a
/// pipeline's commands otherwise wait on them one after another. Runs under the keyspace
/// lock, between commands; returns how many commands it covered (or, in a db too small to
/// gain from it or on a hot key, how many to run before asking again).
fn prefetch_keys(engine: &lockcore::engine::Engine, db: usize, buf: &[u8]) -> usize {
    let Some(d) = engine.worth_prefetching(db) else {
        return lockcore::storage::db::PREFETCH_MAX;
    };
    let mut keys = [&[][..]; lockcore::storage::db::PREFETCH_MAX];
    // A batch whose next command names the key the db found last is on a hot key (a lock
    // script repeated on one lock): its lines are in cache, and reading every header of
    // the rest of the batch would be pure cost (about 3 % of such a script's
    // instructions). Look again a window later.
    if let (1, _) = resp::peek_keys(buf, &mut keys[..1]) {
        if d.is_last_found(keys[0]) {
            return lockcore::storage::db::PREFETCH_MAX;
        }
    }
    let (n, seen) = resp::peek_keys(buf, &mut keys);
    if n > 0 {
        d.prefetch(&keys[..n]);
    }
    seen
}

impl Conn {
    /// Logs this client's command in the slow log (the caller checked `SlowLog::over`).
    #[cold]
    fn slowlog_record(&self, spec: &CommandSpec, argv: &[Bytes], took: std::time::Duration) {
        let name = self.handle.info.lock().name.clone();
        let addr = self.handle.addr.to_string();
        crate::stats::slowlog::record(&self.shared.slowlog, spec, argv, took, addr, name);
    }

    async fn run<S: Stream>(&mut self, stream: S) {
        let handle = self.handle.clone();
        let (rd, mut wr) = stream.split();
        // Runs input in the order it arrived across connections, as Redis does: our event
        // loop does by itself (evloop.rs), tokio's workers with tickets (arrival.rs).
        let turn = crate::state::arrival::Turn::new(self.shared.arrivals.clone());
        let mut rd = if S::LOOP_ORDERED {
            crate::state::arrival::OrderedRead::direct(rd, turn.clone())
        } else {
            crate::state::arrival::OrderedRead::new(rd, turn.clone(), S::arm_read)
        };
        let mut buf = BytesMut::with_capacity(16 * 1024);
        loop {
            if self.flow == Flow::Continue && !buf.is_empty() {
                turn.wait().await;
                let ran = self.process_buffer(&mut buf).await;
                turn.give_back();
                // Redis writes replies once per event-loop pass, after it has run every
                // readable client (beforeSleep). Writing each batch's replies at once
                // instead wakes a client that went to sleep waiting for them for almost
                // every batch: the wake-up (an IPI on a VM) is charged to our send and
                // doubled the kernel time per request at -P 16 (docs/architecture.md).
                // So while other connections' input waits to run, let it run first. A
                // batch of one command is quick enough that the client is still busy
                // with the other replies: the yield (one more task poll, ~500
                // instructions) is kept for pipelines.
                if ran > 1
                    && !self.out.is_empty()
                    && S::others_waiting().unwrap_or_else(|| turn.others_waiting())
                {
                    tokio::task::yield_now().await;
                }
            }
            self.publish_mem(buf.len(), self.out.len());
            if !self.out.is_empty() {
                if let Some(node) = &self.cluster.node {
                    crate::state::cluster::faults_before_write(node, &mut self.out).await;
                }
                if !self.write_out(&mut wr, &mut rd, &mut buf).await {
                    return;
                }
                self.out.clear();
                self.publish_mem(buf.len(), 0);
                if self.out_push_cost > 0 {
                    let cost = std::mem::take(&mut self.out_push_cost);
                    let _ = self.handle.pending_out.fetch_update(
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                        |p| Some(p.saturating_sub(cost)),
                    );
                }
                if self.out.capacity() > 1 << 20 {
                    self.out = BytesMut::with_capacity(4096);
                }
            }
            if self.flow == Flow::Close {
                let _ = wr.shutdown().await;
                return;
            }
            let query_limit = self.shared.query_buffer_limit.load(Ordering::Relaxed) as usize;
            tokio::select! {
                biased;
                msg = std::future::poll_fn(|cx| handle.mailbox.poll_recv(cx)) => match msg {
                    Msg::Kill => return,
                    Msg::Push(r) => {
                        self.push_out(r);
                        // Drain what else is queued so a burst goes out in one write.
                        while let Some(m) = handle.mailbox.try_recv() {
                            match m {
                                Msg::Push(r) => self.push_out(r),
                                Msg::Wake(r) => self.wake(r),
                                Msg::Kill => return,
                            }
                        }
                    }
                    Msg::Wake(r) => self.wake(r),
                },
                n = rd.read_buf(&mut buf) => match n {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if !self.took_input(n, buf.len(), query_limit) {
                            return;
                        }
                    }
                },
            }
        }
    }

    /// Counts `n` bytes read into a query buffer now `len` long; false when that is past
    /// `client-query-buffer-limit` and the client must be closed.
    fn took_input(&self, n: usize, len: usize, limit: usize) -> bool {
        let counters = &self.shared.counters;
        counters
            .net_input_bytes
            .fetch_add(n as u64, Ordering::Relaxed);
        if len > limit {
            tracing::warn!(
                client = self.cl.id,
                "closing client that reached max query buffer length"
            );
            counters
                .limits
                .query_buffer_disconnections
                .fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Writes `out` to the socket. A subscriber that stopped reading leaves this write
    /// pending forever, so it also watches for the kill that the output buffer limit (or
    /// CLIENT KILL) decides; returns false when the connection must end.
    ///
    /// While a write is stuck it keeps reading and running requests, as Redis does (replies
    /// wait in the output buffer): a client that pipelines a large batch and reads only
    /// after sending all of it would otherwise wait on us while we wait on it. Reading stops
    /// past [`PIPELINE_OUT_CAP`] of unwritten replies; the output buffer limits apply as
    /// they do to any reply.
    async fn write_out<W: AsyncWrite + Unpin, R: AsyncRead + Unpin>(
        &mut self,
        wr: &mut W,
        rd: &mut R,
        buf: &mut BytesMut,
    ) -> bool {
        let mut off = 0;
        // The socket almost always takes the whole batch of replies at once: write it
        // without arming the kill-check timer, which cost a timer-wheel insert and removal
        // per batch (docs/architecture.md).
        while off < self.out.len() {
            let out = &self.out[off..];
            let r = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(std::pin::Pin::new(&mut *wr).poll_write(cx, out))
            })
            .await;
            match r {
                std::task::Poll::Ready(Ok(0)) | std::task::Poll::Ready(Err(_)) => return false,
                std::task::Poll::Ready(Ok(n)) => {
                    off += n;
                    self.shared
                        .counters
                        .net_output_bytes
                        .fetch_add(n as u64, Ordering::Relaxed);
                }
                std::task::Poll::Pending => break,
            }
        }
        while off < self.out.len() {
            let query_limit = self.shared.query_buffer_limit.load(Ordering::Relaxed) as usize;
            // An unauthenticated client is not read on: its stall closes it (below).
            let read_more = self.flow != Flow::Close
                && self.authenticated
                && buf.len() <= query_limit
                && self.out.len() - off < PIPELINE_OUT_CAP;
            tokio::select! {
                r = wr.write(&self.out[off..]) => match r {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => {
                        off += n;
                        self.shared.counters.net_output_bytes.fetch_add(n as u64, Ordering::Relaxed);
                    }
                },
                n = rd.read_buf(buf), if read_more => match n {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => {
                        if !self.took_input(n, buf.len(), query_limit) {
                            return false;
                        }
                        if self.flow == Flow::Continue {
                            // Drop what is written so the output limit sees only the rest.
                            self.out.advance(off);
                            off = 0;
                            self.process_buffer(buf).await;
                            if self.handle.killed.load(Ordering::Relaxed) {
                                return false;
                            }
                            self.publish_mem(buf.len(), self.out.len());
                        }
                    }
                },
                _ = tokio::time::sleep(std::time::Duration::from_millis(50)) => {
                    // A stuck write is the reader's fault: CLIENT KILL, or the output
                    // buffer limit (its soft seconds run out here too).
                    if self.handle.killed.load(Ordering::Relaxed)
                        || self.check_output_limit(self.out.len() - off)
                        || self.unauthenticated_stall()
                    {
                        return false;
                    }
                }
            }
        }
        // TLS keeps encrypted records in the stream until flushed; TCP and Unix halves
        // flush at once, so one poll settles them without arming a timer.
        let first = std::future::poll_fn(|cx| {
            std::task::Poll::Ready(std::pin::Pin::new(&mut *wr).poll_flush(cx))
        })
        .await;
        match first {
            std::task::Poll::Ready(r) => return r.is_ok(),
            std::task::Poll::Pending => {}
        }
        loop {
            tokio::select! {
                r = wr.flush() => return r.is_ok(),
                _ = tokio::time::sleep(std::time::Duration::from_millis(50)) => {
                    if self.handle.killed.load(Ordering::Relaxed) || self.unauthenticated_stall() {
                        return false;
                    }
                }
            }
        }
    }

    /// A client that has not authenticated may not pile up replies it does not read: Redis
    /// closes it past 1024 bytes of output. Called when a write stalls (the kernel's buffers
    /// are already full), so it is closed now; waiting for more bytes could deadlock, as the
    /// input is not read while a write is pending.
    fn unauthenticated_stall(&self) -> bool {
        !self.authenticated
    }

    /// Encodes an out-of-band message (pub/sub delivery, MONITOR line); its output-limit
    /// cost is released when `out` has been written.
    fn push_out(&mut self, r: Reply) {
        self.out_push_cost += crate::state::climits::push_cost(&r);
        r.encode_fmt(
            &mut self.out,
            self.cl.resp3,
            self.shared.personality.doubles(),
        );
    }

    /// Writes a pub/sub reply (subscribe confirmations): always, whatever CLIENT REPLY says,
    /// as Redis 7 flags these replies as pushes.
    pub fn push(&mut self, r: Reply) {
        r.encode_fmt(
            &mut self.out,
            self.cl.resp3,
            self.shared.personality.doubles(),
        );
    }

    /// The reply to our blocked command arrived.
    fn wake(&mut self, r: Reply) {
        if self.flow == Flow::Blocked {
            self.flow = Flow::Continue;
            if let Some(spec) = self.blocked_cmd.take() {
                self.shared
                    .cmdstats
                    .record_unblocked(spec, self.blocked_took, &r);
                if let Some(argv) = self.slow_blocked_argv.take() {
                    if self.shared.slowlog.over(std::time::Duration::ZERO) {
                        self.slowlog_record(spec, &argv, std::time::Duration::ZERO);
                    }
                }
            }
            self.slow_blocked_argv = None;
            self.cl.blocked = false;
            self.reply(r);
        }
    }

    /// Writes a reply, honouring CLIENT REPLY OFF/SKIP.
    pub fn reply(&mut self, r: Reply) {
        // Nothing to write (CLIENT REPLY SKIP itself, a blocked command): a pending SKIP
        // must stay for the next real reply.
        if matches!(r, Reply::NoReply) {
            return;
        }
        match self.reply_mode {
            ReplyMode::On => r.encode_fmt(
                &mut self.out,
                self.cl.resp3,
                self.shared.personality.doubles(),
            ),
            ReplyMode::Off => {}
            ReplyMode::Skip => self.reply_mode = ReplyMode::On,
        }
    }

    /// Runs the complete commands in `buf`; returns how many ran.
    async fn process_buffer(&mut self, buf: &mut BytesMut) -> usize {
        self.batch_started = crate::base::mono::Mono::now();
        self.chain = Some(self.batch_started);
        let mut ran = 0;
        let shared = self.shared.clone();
        let mut guard: Option<CoreGuard<'_>> = None;
        // Commands in `buf` whose keys have been prefetched (`prefetch_keys`).
        let mut ahead = 0usize;
        while self.flow == Flow::Continue && !buf.is_empty() {
            let lim = Limits {
                max_bulk: shared.proto_max_bulk.load(Ordering::Relaxed),
                authenticated: self.authenticated,
            };
            // The argument vector keeps its allocation from one command to the next.
            let mut argv = std::mem::take(&mut self.argv_scratch);
            match resp::parse_into(buf, lim, &mut argv, &mut self.names) {
                Ok(true) => {}
                Ok(false) => {
                    self.argv_scratch = argv;
                    break;
                }
                Err(e) => {
                    tracing::debug!(client = self.cl.id, "protocol error: {}", e.0);
                    self.out_error_and_close(&e.0);
                    buf.clear();
                    break;
                }
            };
            if !argv.is_empty() {
                self.process_command(&shared, &mut guard, &mut argv).await;
                ran += 1;
                ahead = ahead.saturating_sub(1);
                if ahead == 0 && !buf.is_empty() {
                    if let Some(core) = &guard {
                        ahead = prefetch_keys(&core.engine, self.cl.db, buf);
                    }
                }
            }
            // The arguments go now (a large value is not kept until the next command), and
            // a huge argument count does not keep its vector.
            argv.clear();
            if argv.capacity() <= 1024 {
                self.argv_scratch = argv;
            }
            if self.check_output_limit(self.out.len()) {
                break;
            }
        }
        drop(guard);
        // What CLIENT LIST shows of this client, written once per batch rather than once
        // per command (the registry entry's mutex is shared with other connections).
        {
            let mut info = self.handle.info.lock();
            info.last_interaction = Some(self.batch_started);
            if self.last_spec.is_some() {
                info.last_cmd = self.last_spec;
            }
        }
        if buf.is_empty() && buf.capacity() > 1 << 20 {
            *buf = BytesMut::with_capacity(16 * 1024);
        } else if buf.remaining() == 0 {
            buf.clear();
        }
        ran
    }

    fn out_error_and_close(&mut self, e: &str) {
        self.shared.cmdstats.count_error(e);
        Reply::err(e.to_string()).encode(&mut self.out, self.cl.resp3); // no double in an error
        self.flow = Flow::Close;
    }

    /// Answers a command that `processCommand` refused, as Redis' `rejectCommand` does: the
    /// open transaction is flagged so EXEC fails, and a refused EXEC itself aborts the
    /// transaction with the reason (`-EXECABORT Transaction discarded because of: ...`).
    fn reject(
        &mut self,
        shared: &Shared,
        guard: &mut Option<CoreGuard<'_>>,
        argv: &[Bytes],
        err: Reply,
    ) {
        if let Some(m) = &mut self.multi {
            m.dirty = true;
        }
        // rejected_calls, unless the name is one time control or cluster control hide.
        if crate::state::timectl::hidden_name(shared, &argv[0])
            || crate::state::cluster::hidden_name(shared, &argv[0])
        {
            shared.cmdstats.count_error_reply(&err);
        } else if argv[0].eq_ignore_ascii_case(b"exec") {
            shared
                .cmdstats
                .rejected(&shared.personality, argv, &Reply::NoReply);
        } else {
            shared.cmdstats.rejected(&shared.personality, argv, &err);
        }
        if argv[0].eq_ignore_ascii_case(b"exec") {
            let msg = match &err {
                Reply::Error(e) => e.to_string(),
                _ => String::new(),
            };
            // Redis formats the reason without the generic "ERR " prefix but keeps
            // specific codes (OOM, BUSY, NOAUTH).
            let reason = msg.strip_prefix("ERR ").unwrap_or(&msg);
            self.multi = None;
            self.handle.info.lock().multi = -1;
            self.discard_watches(guard);
            let abort = Reply::err(format!(
                "EXECABORT Transaction discarded because of: {reason}"
            ));
            shared.cmdstats.count_error_reply(&abort);
            self.reply(abort);
            // As in Redis, monitors see the EXEC that ended the transaction.
            shared.feed_monitors(self.cl.db, &self.handle.addr.to_string(), argv);
            return;
        }
        self.reply(err);
    }

    /// Answers a command the cluster check redirected (Redis' clusterRedirectClient): a
    /// queued command flags the transaction; a refused EXEC discards it and answers with
    /// the redirection itself, not EXECABORT.
    fn cluster_reject(
        &mut self,
        shared: &Shared,
        guard: &mut Option<CoreGuard<'_>>,
        top: &str,
        argv: &[Bytes],
        err: Reply,
    ) {
        if top != "exec" {
            self.reject(shared, guard, argv, err);
            return;
        }
        self.multi = None;
        self.handle.info.lock().multi = -1;
        self.discard_watches(guard);
        shared.cmdstats.rejected(&shared.personality, argv, &err);
        self.reply(err);
    }

    /// Drops this client's WATCHes. Without the keyspace lock in hand (a refused EXEC while
    /// a script runs), the reply must not wait for the script, so the unwatch is handed to
    /// a task that takes the lock when the script is done.
    fn discard_watches(&mut self, guard: &mut Option<CoreGuard<'_>>) {
        if self.watched.is_empty() {
            return;
        }
        let w = std::mem::take(&mut self.watched);
        self.handle.info.lock().watch = 0;
        let id = self.cl.id;
        if let Some(core) = guard.as_mut() {
            core.engine.unwatch(id, &w);
        } else if let Some(g) = self.shared.core.try_lock() {
            let mut g = g;
            g.engine.unwatch(id, &w);
        } else {
            let shared = self.shared.clone();
            tokio::spawn(async move {
                if let Ok(mut core) = shared.lock_core(true).await {
                    core.engine.unwatch(id, &w);
                }
            });
        }
    }

    /// Central checks (lookup, arity, auth, NO_MULTI, OOM, pub/sub context, busy script,
    /// MULTI queueing), then execution and the MONITOR feed. Mirrors Redis'
    /// `processCommand` and `call`, in the same order, so that the same error wins.
    pub async fn process_command<'a>(
        &mut self,
        shared: &'a Shared,
        guard: &mut Option<CoreGuard<'a>>,
        argv: &mut Vec<Bytes>,
    ) {
        if crate::state::sentinel_mode::active(shared) {
            if let Some(hook) = SENTINEL_HOOK.first() {
                match hook(self, guard, argv) {
                    None => {}
                    Some(Ok(r)) => {
                        self.reply(r);
                        return;
                    }
                    Some(Err(e)) => {
                        self.reject(shared, guard, argv, e);
                        return;
                    }
                }
            }
        }
        let looked_up = if crate::state::timectl::hidden_name(shared, &argv[0])
            || crate::state::cluster::hidden_name(shared, &argv[0])
        {
            Err(error::unknown_command(argv))
        } else {
            commands::check_spec(&shared.personality, self.names.command(&argv[0]), argv)
        };
        let spec = match looked_up {
            Ok(s) => s,
            Err(e) => {
                self.reject(shared, guard, argv, e);
                return;
            }
        };
        if !self.authenticated && !spec.has(flag::NO_AUTH) {
            self.reject(shared, guard, argv, Reply::err(error::NOAUTH));
            return;
        }
        if let Err(e) = crate::conn::checks::check_command(self, spec, argv) {
            self.reject(shared, guard, argv, e);
            return;
        }
        let top = if spec.parent.is_empty() {
            spec.name
        } else {
            spec.parent
        };
        // One test for reads: writes, scripts (NOSCRIPT) and the rest that may replicate.
        if spec.has(flag::WRITE | flag::MAY_REPLICATE | flag::NOSCRIPT) {
            // WAIT waits for this client's writes (Redis' woff); a script may write too.
            if !self.cl.wrote
                && (spec.has(flag::WRITE | flag::MAY_REPLICATE) || spec.group == "scripting")
            {
                self.cl.wrote = true;
            }
            // A replica refuses writes (replica-read-only), as Redis' processCommand does.
            if spec.has(flag::WRITE)
                && shared.repl.is_replica.load(Ordering::Relaxed)
                && !shared.cluster.as_ref().is_some_and(|t| t.enabled)
                && shared
                    .config
                    .read()
                    .get_bool(crate::config::key::REPLICA_READ_ONLY)
            {
                self.reject(
                    shared,
                    guard,
                    argv,
                    Reply::err("READONLY You can't write against a read only replica."),
                );
                return;
            }
        }
        if self.multi.is_some() && spec.has(flag::NO_MULTI) {
            self.reject(
                shared,
                guard,
                argv,
                Reply::err("ERR Command not allowed inside a transaction"),
            );
            return;
        }
        if let Some(topo) = &shared.cluster {
            use crate::conn::route::Route;
            let refused = match crate::conn::route::check(self, topo, spec, argv) {
                Route::Serve => None,
                Route::Refuse(err) => Some(err),
                Route::Migrating(slot) => {
                    let r =
                        crate::conn::route::check_migrating(self, shared, guard, spec, argv, slot)
                            .await;
                    self.chain = None;
                    r
                }
            };
            if let Some(err) = refused {
                self.cluster_reject(shared, guard, top, argv, err);
                return;
            }
        }
        if evicting(shared) && crate::state::memory::over_limit(shared) {
            if guard.is_none() {
                let locked = shared.lock_core(spec.has(flag::ALLOW_BUSY)).await;
                self.chain = None;
                if let Ok(g) = locked {
                    *guard = Some(g);
                }
            }
            if let Some(core) = guard.as_mut() {
                crate::state::memory::perform_evictions(shared, &mut core.engine);
                // Redis evicts before the command runs, so this client's invalidations of
                // evicted keys go out before its reply.
                self.push_own_invalidations(&mut core.engine);
            }
        }
        if self.over_maxmemory(shared) {
            let denyoom = spec.has(flag::DENYOOM)
                || (top == "exec"
                    && self
                        .multi
                        .as_ref()
                        .is_some_and(|m| m.flags & flag::DENYOOM != 0));
            // Queueing in MULTI takes memory too; EXEC, DISCARD, QUIT and RESET never fail.
            let queueing =
                self.multi.is_some() && !matches!(top, "exec" | "discard" | "quit" | "reset");
            if denyoom || queueing {
                self.reject(shared, guard, argv, Reply::err(OOM_ERR));
                return;
            }
        }
        if self.in_resp2_pubsub()
            && !matches!(
                top,
                "subscribe"
                    | "ssubscribe"
                    | "unsubscribe"
                    | "sunsubscribe"
                    | "psubscribe"
                    | "punsubscribe"
                    | "ping"
                    | "quit"
                    | "reset"
            )
        {
            self.reject(shared, guard, argv, Reply::err(format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                spec.full_name()
            )));
            return;
        }
        if !spec.has(flag::ALLOW_BUSY) && guard.is_none() && shared.script_busy() {
            self.reject(shared, guard, argv, Reply::err(shared.busy_err()));
            return;
        }
        if let Some(m) = &mut self.multi {
            if !matches!(
                top,
                "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
            ) {
                // An already-aborted transaction keeps answering QUEUED but stores
                // nothing, as Redis does (a pipelining client may not notice the abort).
                if !m.dirty {
                    m.flags |= spec.flags;
                    m.queue.push((spec, std::mem::take(argv)));
                    self.handle.info.lock().multi = m.queue.len() as i64;
                }
                self.reply(lockcore::reply::QUEUED);
                return;
            }
        }
        self.last_spec = Some(spec);
        if needs_core(spec) && guard.is_none() {
            let locked = shared.lock_core(spec.has(flag::ALLOW_BUSY)).await;
            self.chain = None;
            match locked {
                Ok(g) => *guard = Some(g),
                Err(LockError::Busy) => {
                    self.reject(shared, guard, argv, Reply::err(shared.busy_err()));
                    return;
                }
            }
        }
        let reply = self.execute(guard, spec, argv);
        // CLIENT CACHING yes|no lapses after the next command (Redis' resetClient).
        if self.multi.is_none() && spec.parent != "client" {
            self.cl.tracking_caching = false;
        }
        // Redis feeds monitors after the command ran (so SELECT shows the new db and EXEC
        // comes after the commands it ran), whatever the outcome.
        self.feed_monitors_for(spec, argv);
        if self.cl.blocked {
            self.flow = Flow::Blocked;
            self.blocked_cmd = Some(spec);
            if self.shared.slowlog.over(std::time::Duration::ZERO) {
                self.slow_blocked_argv = Some(argv.clone());
            }
            // Release the lock before waiting: the wake-up comes from another client.
            *guard = None;
            return;
        }
        self.reply(reply);
        if let Some(g) = guard.as_mut() {
            self.push_own_invalidations(&mut g.engine);
        }
    }

    /// Writes the invalidations this client's tracking owes itself (RESP3 pushes; a RESP2
    /// client gets them only through REDIRECT).
    fn push_own_invalidations(&mut self, engine: &mut lockcore::Engine) {
        if !engine.tracking.has_pending() {
            return;
        }
        for r in crate::state::invalidations::own_pushes(engine, self.cl.id) {
            if self.cl.resp3 {
                self.push(r);
            }
        }
    }

    /// Sends a command to MONITOR clients unless its flags hide it (admin, skip_monitor),
    /// with passwords redacted as Redis does.
    pub fn feed_monitors_for(&self, spec: &CommandSpec, argv: &[Bytes]) {
        if self.shared.monitors.is_empty() || spec.has(flag::SKIP_MONITOR) || spec.has(flag::ADMIN)
        {
            return;
        }
        let argv = crate::base::argv::redact(argv);
        self.shared
            .feed_monitors(self.cl.db, &self.handle.addr.to_string(), &argv);
    }

    /// Redis' OOM state (Shared::over_maxmemory): over `maxmemory` and eviction could not
    /// help, so commands that may add memory are refused.
    #[inline]
    fn over_maxmemory(&self, shared: &Shared) -> bool {
        shared.over_maxmemory()
    }

    /// Runs a checked command: engine commands under the lock, the rest in `dispatch`.
    pub fn execute(
        &mut self,
        guard: &mut Option<CoreGuard<'_>>,
        spec: &'static CommandSpec,
        argv: &[Bytes],
    ) -> Reply {
        // Back to back in a batch, the previous command's end is this one's start (one
        // clock read less per command; the gap is the parse of this command).
        let started = self
            .chain
            .take()
            .unwrap_or_else(crate::base::mono::Mono::now);
        self.cmd_started = started;
        let reply = match spec.exec {
            Exec::Engine(_) => {
                if spec.name.starts_with("sort") {
                    self.cl.sort_patterns_denied = crate::conn::checks::sort_patterns_denied(
                        &self.shared,
                        &self.user,
                        spec,
                        argv,
                    );
                }
                let core = guard
                    .as_mut()
                    .expect("engine command without the keyspace lock");
                let db = self.cl.db;
                let r = core.engine.call(&mut self.cl, spec, argv);
                // Inside EXEC or a script (deny_blocking) blocked clients are served once,
                // after the whole transaction/script, as in Redis; the caller does that.
                if !self.cl.deny_blocking {
                    core.engine.after_command();
                }
                // SELECT: CLIENT LIST shows the client's db.
                if self.cl.db != db {
                    self.handle.info.lock().db = self.cl.db;
                }
                r
            }
            Exec::Server | Exec::Container => match handler(spec) {
                Some(run) => run(self, guard, spec, argv),
                None => Reply::err(format!(
                    "ERR command '{}' is not implemented yet",
                    spec.full_name()
                )),
            },
        };
        let ended = crate::base::mono::Mono::ended_since(started);
        self.chain = Some(ended);
        let took = ended.since(started);
        // A command that blocked counts its call now and its outcome when it is answered
        // (`wake`), as Redis does; inside EXEC or a script it has answered already.
        if self.cl.blocked && !self.cl.deny_blocking {
            self.blocked_took = took;
            self.shared.cmdstats.record_blocked(spec, took);
        } else {
            self.shared.cmdstats.record_reply(spec, took, &reply);
        }
        // A blocked command is logged when it is served (`wake`), as in Redis.
        if self.shared.slowlog.over(took) && !self.cl.blocked {
            self.slowlog_record(spec, argv, took);
        }
        reply
    }

    pub fn in_resp2_pubsub(&self) -> bool {
        !self.cl.resp3 && self.sub_count() > 0
    }

    pub fn sub_count(&self) -> usize {
        self.subs.len() + self.psubs.len() + self.ssubs.len()
    }

    /// Unregisters everything this client had: subscriptions, monitor, blocked command,
    /// watches, then the registry entry.
    async fn cleanup(&mut self) {
        self.handle.mailbox.close();
        let id = self.cl.id;
        self.unsubscribe_all();
        self.shared.monitors.remove(&id);
        if let Ok(mut core) = self.shared.lock_core(true).await {
            let watched = std::mem::take(&mut self.watched);
            core.engine.client_gone(id, &watched);
            core.on_disconnect(id);
        }
        self.shared.clients.remove(&id);
    }
}

/// True if `maxmemory-policy` evicts (anything but `noeviction`).
fn evicting(shared: &Shared) -> bool {
    shared.evicting.load(Ordering::Relaxed)
}
