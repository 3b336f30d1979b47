//! A connection's subscriptions: the counts CLIENT LIST shows, and dropping them all.

use crate::state::fanout::remove;

impl super::Conn {
    pub fn set_sub_counts(&self) {
        let mut info = self.handle.info.lock();
        info.subs = self.subs.len();
        info.psubs = self.psubs.len();
        info.ssubs = self.ssubs.len();
    }

    /// Leaves every channel, pattern and shard channel (RESET, disconnect).
    pub fn unsubscribe_all(&mut self) {
        let ps = self.shared.pubsub.clone();
        for ch in self.subs.drain() {
            remove(&ps.channels, &ch, self.cl.id);
        }
        for ch in self.psubs.drain() {
            remove(&ps.patterns, &ch, self.cl.id);
        }
        for ch in self.ssubs.drain() {
            remove(&ps.shard_channels, &ch, self.cl.id);
        }
        self.set_sub_counts();
    }
}
