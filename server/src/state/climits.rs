//! Per-client memory limits, as in Redis: `client-output-buffer-limit` for a connection's
//! own replies, and the figures CLIENT LIST and INFO show about client buffers.
//!
//! A connection runs a batch of pipelined commands and then writes all their replies, so
//! what it holds for a client is the encoded replies not yet written. Redis' check
//! (`checkClientOutputBufferLimits`) runs whenever output is added; here it runs after each
//! command of a batch and while a write is stuck, with the same rule: past the hard limit,
//! or past the soft limit for longer than the soft seconds, the client is closed at once and
//! what it had pending is dropped. Pub/sub deliveries queued by other tasks are checked at
//! delivery against the pubsub class (`pubsub::deliver`), and they count here too.
//!
//! The class is Redis' `getClientType`: a client with subscriptions is `pubsub`, any other
//! (MONITOR included) is `normal`. The `replica` class is accepted and shown by CONFIG but
//! applies to nobody: Tumbler has no replicas.

use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};

use lockcore::Reply;

use crate::state::ClientHandle;

/// One class's limits: bytes (0 = none) and seconds.
#[derive(Debug, Default)]
pub struct ClassLimit {
    pub hard: AtomicI64,
    pub soft: AtomicI64,
    pub soft_secs: AtomicI64,
}

impl ClassLimit {
    pub fn set(&self, (hard, soft, secs): (i64, i64, i64)) {
        self.hard.store(hard, Ordering::Relaxed);
        self.soft.store(soft, Ordering::Relaxed);
        self.soft_secs.store(secs, Ordering::Relaxed);
    }

    /// The smallest size at which [`ClassLimit::over`] can say yes (0: never).
    pub fn threshold(&self) -> usize {
        let (h, s) = (
            self.hard.load(Ordering::Relaxed),
            self.soft.load(Ordering::Relaxed),
        );
        match (h > 0, s > 0) {
            (true, true) => h.min(s) as usize,
            (true, false) => h as usize,
            (false, true) => s as usize,
            (false, false) => 0,
        }
    }

    /// Redis' `checkClientOutputBufferLimits` for `c` holding `pending` bytes: true once
    /// the hard limit is reached, or the soft limit has been reached continuously for the
    /// soft seconds. Tracks when the soft limit was first reached in `c.soft_since_ms`.
    pub fn over(&self, c: &ClientHandle, pending: usize) -> bool {
        let pending = pending as i64;
        let hard = self.hard.load(Ordering::Relaxed);
        if hard > 0 && pending >= hard {
            return true;
        }
        let soft = self.soft.load(Ordering::Relaxed);
        if soft > 0 && pending >= soft {
            // ms since the client connected, +1 so that 0 keeps meaning "not over".
            let now = c.created.elapsed().as_millis() as i64 + 1;
            let since = c.soft_since_ms.load(Ordering::Relaxed);
            if since == 0 {
                c.soft_since_ms.store(now, Ordering::Relaxed);
                return false;
            }
            return now - since >= self.soft_secs.load(Ordering::Relaxed) * 1000;
        }
        if c.soft_since_ms.load(Ordering::Relaxed) != 0 {
            c.soft_since_ms.store(0, Ordering::Relaxed);
        }
        false
    }
}

/// A connection's buffers as other connections see them (CLIENT LIST, INFO), published by
/// the connection task once per batch and after each write.
#[derive(Debug, Default)]
pub struct ClientMem {
    /// Bytes read and not yet parsed into commands.
    pub qbuf: AtomicUsize,
    /// Encoded replies not yet written to the socket.
    pub out: AtomicUsize,
}

/// Disconnect counters (INFO stats; the field names are Redis 7.2's, 7.0 has none).
#[derive(Debug, Default)]
pub struct LimitCounters {
    pub output_buffer_disconnections: AtomicU64,
    pub query_buffer_disconnections: AtomicU64,
}

/// Redis' static reply buffer (PROTO_REPLY_CHUNK_BYTES): CLIENT LIST shows the first 16 KiB of
/// pending output as `obl` and the rest as the reply list (`oll` blocks, `omem` bytes).
pub const REPLY_CHUNK: usize = 16 * 1024;

/// `(obl, oll, omem)` for `pending` output bytes.
pub fn output_fields(pending: usize) -> (usize, usize, usize) {
    let obl = pending.min(REPLY_CHUNK);
    let rest = pending - obl;
    (obl, rest.div_ceil(REPLY_CHUNK), rest)
}

/// Queues a MONITOR line for `c`, counting it against the normal class as Redis does for
/// monitors (its backlog is checked at delivery, like a subscriber's): a monitor that
/// stops reading is closed once its backlog passes the limits instead of growing.
pub fn deliver_monitor(sh: &crate::Shared, c: &ClientHandle, line: lockcore::Reply) {
    if c.killed.load(Ordering::Relaxed) {
        return;
    }
    let cost = push_cost(&line);
    let pending = c.pending_out.fetch_add(cost, Ordering::Relaxed) + cost;
    if sh.normal_output_limit.over(c, pending) {
        c.killed.store(true, Ordering::Relaxed);
        sh.counters
            .limits
            .output_buffer_disconnections
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            client = c.id,
            addr = %c.addr,
            "Client scheduled to be closed ASAP for overcoming of output buffer limits."
        );
        c.send(crate::state::Msg::Kill);
        return;
    }
    c.send(crate::state::Msg::Push(line));
}

/// What a queued push counts against the output buffer limit: its payload plus a fixed
/// overhead per element. [`deliver`] adds it and the connection subtracts the same amount
/// once the bytes are written to the socket (`Conn::push_out`), so the counter is the
/// subscriber's unwritten backlog, as Redis' output buffer size is.
pub fn push_cost(r: &Reply) -> usize {
    match r {
        Reply::Push(items) => {
            items
                .iter()
                .map(|i| match i {
                    Reply::Bulk(b) => b.len() + 16,
                    _ => 16,
                })
                .sum::<usize>()
                + 16
        }
        // A MONITOR line.
        Reply::Simple(s) => s.len() + 16,
        _ => 0,
    }
}
