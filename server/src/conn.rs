//! One client connection: read, parse, dispatch, reply.
//!
//! The task reads whatever the socket has, parses every complete command in the buffer and
//! runs them in order, taking the keyspace lock once for the whole batch (released before
//! any await), then writes all replies with one write. Between batches it also waits for
//! messages from other tasks: pub/sub deliveries, MONITOR lines, the wake-up of a blocked
//! command, or a kill.

use bytes::{Buf, Bytes, BytesMut};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use lockcore::commands::{self, flag, CommandSpec, Exec};
use lockcore::{error, ClientCtx, Reply};

use crate::protocol::{self, Limits};
use crate::shared::{ClientHandle, ClientInfo, CoreGuard, LockError, Msg, Shared, BUSY_ERR};

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
}

/// What the main loop does after a batch.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// The last command blocked; wait for its wake-up before reading more.
    Blocked,
    Close,
}

pub struct Conn {
    pub shared: Arc<Shared>,
    pub handle: Arc<ClientHandle>,
    pub cl: ClientCtx,
    pub authenticated: bool,
    pub multi: Option<Multi>,
    pub watched: Vec<(usize, Bytes)>,
    pub subs: HashSet<Bytes>,
    pub psubs: HashSet<Bytes>,
    pub ssubs: HashSet<Bytes>,
    pub reply_mode: ReplyMode,
    pub out: BytesMut,
    pub flow: Flow,
    pub monitor: bool,
    /// The name of the blocked command, for CLIENT LIST.
    pub blocked_cmd: Option<&'static CommandSpec>,
}

/// Accepts a connection and runs it to the end.
pub async fn serve(shared: Arc<Shared>, stream: TcpStream, addr: SocketAddr) {
    let _ = stream.set_nodelay(true);
    let laddr = stream.local_addr().unwrap_or(addr);
    let (tx, rx) = mpsc::unbounded_channel();
    let id = shared.next_client_id();
    let requirepass = !shared.config.read().get("requirepass").is_empty();
    let handle = Arc::new(ClientHandle {
        id,
        addr,
        laddr,
        created: Instant::now(),
        tx,
        info: parking_lot::Mutex::new(ClientInfo {
            resp: 2,
            multi: -1,
            user: "default".into(),
            last_interaction: Some(Instant::now()),
            ..Default::default()
        }),
        pending_out: Default::default(),
        soft_since_ms: Default::default(),
        killed: Default::default(),
    });
    shared.clients.insert(id, handle.clone());
    shared
        .counters
        .connections_received
        .fetch_add(1, Ordering::Relaxed);
    let mut conn = Conn {
        shared: shared.clone(),
        handle,
        cl: ClientCtx {
            id,
            ..Default::default()
        },
        authenticated: !requirepass,
        multi: None,
        watched: Vec::new(),
        subs: HashSet::new(),
        psubs: HashSet::new(),
        ssubs: HashSet::new(),
        reply_mode: ReplyMode::On,
        out: BytesMut::with_capacity(4096),
        flow: Flow::Continue,
        monitor: false,
        blocked_cmd: None,
    };
    let maxclients = shared.config.read().get_i64("maxclients") as usize;
    if shared.clients.len() > maxclients {
        shared
            .counters
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        let mut s = stream;
        let _ = s.write_all(b"-ERR max number of clients reached\r\n").await;
        conn.cleanup().await;
        return;
    }
    conn.run(stream, rx).await;
    conn.cleanup().await;
}

impl Conn {
    async fn run(&mut self, stream: TcpStream, mut rx: mpsc::UnboundedReceiver<Msg>) {
        let (mut rd, mut wr) = stream.into_split();
        let mut buf = BytesMut::with_capacity(16 * 1024);
        loop {
            if self.flow == Flow::Continue && !buf.is_empty() {
                self.process_buffer(&mut buf).await;
            }
            if !self.out.is_empty() {
                let n = self.out.len();
                if wr.write_all(&self.out).await.is_err() {
                    return;
                }
                self.shared
                    .counters
                    .net_output_bytes
                    .fetch_add(n as u64, Ordering::Relaxed);
                self.out.clear();
                if self.out.capacity() > 1 << 20 {
                    self.out = BytesMut::with_capacity(4096);
                }
            }
            if self.flow == Flow::Close {
                let _ = wr.shutdown().await;
                return;
            }
            let query_limit = self
                .shared
                .config
                .read()
                .get_i64("client-query-buffer-limit") as usize;
            tokio::select! {
                biased;
                msg = rx.recv() => match msg {
                    None | Some(Msg::Kill) => return,
                    Some(Msg::Push(r)) => {
                        self.push_out(r);
                        // Drain what else is queued so a burst goes out in one write.
                        while let Ok(m) = rx.try_recv() {
                            match m {
                                Msg::Push(r) => self.push_out(r),
                                Msg::Wake(r) => self.wake(r),
                                Msg::Kill => return,
                            }
                        }
                    }
                    Some(Msg::Wake(r)) => self.wake(r),
                },
                n = rd.read_buf(&mut buf) => match n {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        self.shared.counters.net_input_bytes.fetch_add(n as u64, Ordering::Relaxed);
                        if buf.len() > query_limit {
                            tracing::warn!(client = self.cl.id, "closing client that exceeded client-query-buffer-limit");
                            return;
                        }
                    }
                },
            }
        }
    }

    /// Encodes a push message and releases its bytes from the output-limit accounting.
    fn push_out(&mut self, r: Reply) {
        let before = self.out.len();
        r.encode(&mut self.out, self.cl.resp3);
        let n = self.out.len() - before;
        let _ = self
            .handle
            .pending_out
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |p| {
                Some(p.saturating_sub(n + 32))
            });
    }

    /// The reply to our blocked command arrived.
    fn wake(&mut self, r: Reply) {
        if self.flow == Flow::Blocked {
            self.flow = Flow::Continue;
            self.blocked_cmd = None;
            self.cl.blocked = false;
            self.reply(r);
        }
    }

    /// Writes a reply, honouring CLIENT REPLY OFF/SKIP.
    pub fn reply(&mut self, r: Reply) {
        match self.reply_mode {
            ReplyMode::On => r.encode(&mut self.out, self.cl.resp3),
            ReplyMode::Off => {}
            ReplyMode::Skip => self.reply_mode = ReplyMode::On,
        }
    }

    async fn process_buffer(&mut self, buf: &mut BytesMut) {
        let shared = self.shared.clone();
        let mut guard: Option<CoreGuard<'_>> = None;
        while self.flow == Flow::Continue && !buf.is_empty() {
            let lim = Limits {
                max_bulk: shared.config.read().get_i64("proto-max-bulk-len"),
                authenticated: self.authenticated,
            };
            let argv = match protocol::parse(buf, lim) {
                Ok(Some(argv)) => argv,
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(client = self.cl.id, "protocol error: {}", e.0);
                    self.out_error_and_close(&e.0);
                    buf.clear();
                    break;
                }
            };
            if argv.is_empty() {
                continue;
            }
            self.process_command(&shared, &mut guard, argv).await;
        }
        drop(guard);
        if buf.is_empty() && buf.capacity() > 1 << 20 {
            *buf = BytesMut::with_capacity(16 * 1024);
        } else if buf.remaining() == 0 {
            buf.clear();
        }
    }

    fn out_error_and_close(&mut self, e: &str) {
        Reply::err(e.to_string()).encode(&mut self.out, self.cl.resp3);
        self.flow = Flow::Close;
    }

    /// Central checks (lookup, arity, auth, MULTI queueing, pub/sub context, busy script),
    /// then execution. Mirrors Redis' `processCommand`.
    pub async fn process_command<'a>(
        &mut self,
        shared: &'a Shared,
        guard: &mut Option<CoreGuard<'a>>,
        argv: Vec<Bytes>,
    ) {
        {
            let mut info = self.handle.info.lock();
            info.last_interaction = Some(Instant::now());
        }
        let spec = match commands::lookup_checked(&argv) {
            Ok(s) => s,
            Err(e) => {
                if let Some(m) = &mut self.multi {
                    m.dirty = true;
                }
                self.reply(e);
                return;
            }
        };
        if !self.authenticated && !spec.has(flag::NO_AUTH) {
            if let Some(m) = &mut self.multi {
                m.dirty = true;
            }
            self.reply(Reply::err(error::NOAUTH));
            return;
        }
        let top = if spec.parent.is_empty() {
            spec.name
        } else {
            spec.parent
        };
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
            self.reply(Reply::err(format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                spec.full_name()
            )));
            return;
        }
        if let Some(m) = &mut self.multi {
            if !matches!(
                top,
                "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
            ) {
                if spec.has(flag::NO_MULTI) {
                    m.dirty = true;
                    self.reply(Reply::err("ERR Command not allowed inside a transaction"));
                    return;
                }
                m.queue.push((spec, argv));
                self.reply(lockcore::reply::QUEUED);
                return;
            }
        }
        {
            let mut info = self.handle.info.lock();
            info.last_cmd = spec.full_name();
        }
        // Past busy-reply-threshold every command without allow_busy gets BUSY, whether or
        // not it needs the keyspace (PING too, as in Redis).
        if guard.is_none() && !spec.has(flag::ALLOW_BUSY) && shared.script_busy() {
            self.reply(Reply::err(BUSY_ERR));
            return;
        }
        if crate::dispatch::needs_core(spec) && guard.is_none() {
            match shared.lock_core(spec.has(flag::ALLOW_BUSY)).await {
                Ok(g) => *guard = Some(g),
                Err(LockError::Busy) => {
                    self.reply(Reply::err(BUSY_ERR));
                    return;
                }
            }
        }
        let reply = self.execute(guard, spec, &argv);
        if !spec.has(flag::SKIP_MONITOR)
            && !spec.has(flag::ADMIN)
            && !shared.monitors.is_empty()
            && top != "exec"
        {
            shared.feed_monitors(self.cl.db, &self.handle.addr.to_string(), &argv);
        }
        if self.cl.blocked {
            self.flow = Flow::Blocked;
            self.blocked_cmd = Some(spec);
            // Release the lock before waiting: the wake-up comes from another client.
            *guard = None;
            return;
        }
        self.reply(reply);
    }

    /// Runs a checked command: engine commands under the lock, the rest in `dispatch`.
    pub fn execute(
        &mut self,
        guard: &mut Option<CoreGuard<'_>>,
        spec: &'static CommandSpec,
        argv: &[Bytes],
    ) -> Reply {
        match spec.exec {
            Exec::Engine(_) => {
                let core = guard
                    .as_mut()
                    .expect("engine command without the keyspace lock");
                let r = core.engine.call(&mut self.cl, spec, argv);
                core.engine.after_command();
                if spec.name == "select" && !r.is_error() {
                    self.handle.info.lock().db = self.cl.db;
                }
                r
            }
            Exec::Server | Exec::Container => {
                crate::dispatch::server_command(self, guard, spec, argv)
            }
        }
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
        let id = self.cl.id;
        crate::pubsub::unsubscribe_all(self);
        self.shared.monitors.remove(&id);
        if let Ok(mut core) = self.shared.lock_core(true).await {
            let watched = std::mem::take(&mut self.watched);
            core.engine.client_gone(id, &watched);
            crate::dispatch::on_disconnect(&mut core, id);
        }
        self.shared.clients.remove(&id);
    }
}
