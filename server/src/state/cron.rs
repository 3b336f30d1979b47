//! The server's cron (Redis' serverCron): active expiry, blocked-client timeouts, lock
//! leases, idle MIGRATE sockets. One task per node; it sleeps until the engine's next
//! deadline (at most 100 ms) or until a command or time control announces an earlier one.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use lockcore::storage::clock::Clock;

use super::Shared;

/// The background timer: active expiry, blocked-client timeouts, lock leases. It sleeps
/// until the engine's next deadline (at most 100 ms) or until a command or time control
/// announces an earlier one.
pub async fn run(shared: Arc<Shared>) {
    loop {
        if shared.shutting_down.load(Ordering::SeqCst) {
            return;
        }
        let wait = {
            let Ok(mut core) = shared.lock_core(true).await else {
                continue;
            };
            // The latency monitor's `expire-cycle`: a tick that deleted expired keys.
            let (t, expired) = (std::time::Instant::now(), core.engine.stats.expired_keys);
            core.engine.tick();
            if core.engine.stats.expired_keys != expired {
                let ms = t.elapsed().as_millis() as u64;
                shared.cmdstats.monitor.add_if_needed("expire-cycle", ms);
            }
            let now = Clock::now_ms(&*shared.clock);
            let wait = core
                .engine
                .next_deadline()
                .map_or(100, |t| (t - now).clamp(1, 100));
            // Under the lock, so a command that sets an earlier deadline after this sees
            // it and wakes the timer (a notification before the select below is kept).
            shared.timer_wake_at.store(now + wait, Ordering::Relaxed);
            wait as u64
        };
        // serverCron's migrateCloseTimedoutSockets.
        shared.migrate_sockets.close_idle();
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(wait)) => {}
            _ = shared.timer.notified() => {}
        }
    }
}
