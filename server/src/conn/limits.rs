//! The client output limits applied to a connection; the limits and counters are in
//! state/climits.rs.

use std::sync::atomic::Ordering;

use crate::state::climits::*;

impl super::Conn {
    /// The limits of this client's class.
    fn class_limit(&self) -> &ClassLimit {
        if self.sub_count() > 0 {
            &self.shared.pubsub.limit
        } else {
            &self.shared.normal_output_limit
        }
    }

    /// Output this client holds: encoded replies not yet written (`unwritten` of `out`)
    /// plus pub/sub pushes queued and not yet encoded.
    fn pending_output(&self, unwritten: usize) -> usize {
        let queued = self
            .handle
            .pending_out
            .load(Ordering::Relaxed)
            .saturating_sub(self.out_push_cost);
        unwritten + queued
    }

    /// Checks the output buffer limit with `unwritten` bytes of `out` still to write; past
    /// it, closes the client as Redis does (its pending output is dropped) and returns true.
    pub fn check_output_limit(&mut self, unwritten: usize) -> bool {
        // A client that has not authenticated may not pile up replies it does not read:
        // Redis closes it once its replies overflow the 16 KiB reply buffer by more than
        // 1024 bytes (checkClientOutputBufferLimits), whatever the socket would still
        // take. Waiting for the write to stall instead depends on the kernel's buffer
        // sizes: where they hold the whole flood, the client is never closed.
        if !self.authenticated && output_fields(self.pending_output(unwritten)).2 > 1024 {
            self.close_for_output_limit();
            return true;
        }
        let limit = self.class_limit();
        let threshold = limit.threshold();
        if threshold == 0
            || unwritten < threshold && self.handle.soft_since_ms.load(Ordering::Relaxed) == 0
        {
            return false;
        }
        if !limit.over(&self.handle, self.pending_output(unwritten)) {
            return false;
        }
        self.close_for_output_limit();
        true
    }

    /// Closes this client for its output, as Redis does (its pending output is dropped).
    fn close_for_output_limit(&mut self) {
        tracing::warn!(
            client = self.cl.id,
            addr = %self.handle.addr,
            "Client scheduled to be closed ASAP for overcoming of output buffer limits."
        );
        self.shared
            .counters
            .limits
            .output_buffer_disconnections
            .fetch_add(1, Ordering::Relaxed);
        self.handle.killed.store(true, Ordering::Relaxed);
        self.out.clear();
        self.flow = crate::conn::Flow::Close;
    }

    /// Publishes this connection's buffer sizes for CLIENT LIST and INFO.
    pub fn publish_mem(&self, qbuf: usize, unwritten: usize) {
        self.handle.mem.qbuf.store(qbuf, Ordering::Relaxed);
        self.handle.mem.out.store(unwritten, Ordering::Relaxed);
    }
}
