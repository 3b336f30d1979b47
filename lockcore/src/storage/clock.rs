//! Time source for the keyspace.
//!
//! Every time-based rule (TTLs, active expiry, blocking timeouts, lock leases) reads the
//! clock through [`Clock`], never `SystemTime` directly. Tests use [`ManualClock`]; the server
//! uses [`ControlledClock`], which follows wall time but can be frozen and advanced when time
//! control is enabled.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// A source of "now" in Unix milliseconds (and microseconds, for TIME and MONITOR).
pub trait Clock: Send + Sync {
    fn now_us(&self) -> i64;
    fn now_ms(&self) -> Millis {
        self.now_us().div_euclid(1000)
    }
}

fn wall_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// Wall-clock time.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_us(&self) -> i64 {
        wall_us()
    }
}

/// A clock that only moves when told to. For unit tests.
#[derive(Debug)]
pub struct ManualClock {
    us: AtomicI64,
}

impl ManualClock {
    pub fn new(start_ms: Millis) -> Arc<Self> {
        Arc::new(ManualClock {
            us: AtomicI64::new(start_ms * 1000),
        })
    }
    pub fn advance_ms(&self, ms: i64) {
        self.us.fetch_add(ms * 1000, Ordering::SeqCst);
    }
    pub fn set_ms(&self, ms: Millis) {
        self.us.store(ms * 1000, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_us(&self) -> i64 {
        self.us.load(Ordering::SeqCst)
    }
}

/// Wall time plus an offset, optionally frozen.
///
/// `now = frozen ? frozen_at : wall + offset`. ADVANCE adds to the offset (or to `frozen_at`),
/// so time never runs backwards.
#[derive(Debug, Default)]
pub struct ControlledClock {
    offset_us: AtomicI64,
    frozen: AtomicBool,
    frozen_at_us: AtomicI64,
}

impl ControlledClock {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }
    /// Moves time forward by `ms` (negative values are refused by the caller).
    pub fn advance_ms(&self, ms: i64) {
        let d = ms.saturating_mul(1000);
        if self.frozen.load(Ordering::SeqCst) {
            self.frozen_at_us.fetch_add(d, Ordering::SeqCst);
        } else {
            self.offset_us.fetch_add(d, Ordering::SeqCst);
        }
    }
    pub fn freeze(&self) {
        if !self.frozen.load(Ordering::SeqCst) {
            self.frozen_at_us.store(self.now_us(), Ordering::SeqCst);
            self.frozen.store(true, Ordering::SeqCst);
        }
    }
    /// Resumes from the frozen instant: the offset absorbs the time spent frozen.
    pub fn resume(&self) {
        if self.frozen.load(Ordering::SeqCst) {
            let at = self.frozen_at_us.load(Ordering::SeqCst);
            self.offset_us.store(at - wall_us(), Ordering::SeqCst);
            self.frozen.store(false, Ordering::SeqCst);
        }
    }
    pub fn is_frozen(&self) -> bool {
        self.frozen.load(Ordering::SeqCst)
    }
}

impl Clock for ControlledClock {
    fn now_us(&self) -> i64 {
        if self.frozen.load(Ordering::SeqCst) {
            self.frozen_at_us.load(Ordering::SeqCst)
        } else {
            wall_us() + self.offset_us.load(Ordering::Relaxed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controlled_clock_freezes_and_advances_without_going_back() {
        let c = ControlledClock::new();
        c.freeze();
        let t0 = c.now_ms();
        c.advance_ms(30_001);
        assert_eq!(c.now_ms(), t0 + 30_001);
        c.resume();
        assert!(c.now_ms() >= t0 + 30_001);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(1000);
        assert_eq!(c.now_ms(), 1000);
        c.advance_ms(5);
        assert_eq!(c.now_ms(), 1005);
    }
}
