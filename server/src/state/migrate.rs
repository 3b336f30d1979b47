//! MIGRATE's connection cache (the command is in commands/migrate.rs), swept by the cron.

use std::collections::HashMap;
use std::io::BufReader;
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// MIGRATE_SOCKET_CACHE_ITEMS and MIGRATE_SOCKET_CACHE_TTL in Redis.
pub const CACHE_ITEMS: usize = 64;
pub const CACHE_TTL: Duration = Duration::from_secs(10);

/// MIGRATE's cached connections, by `host:port` as the command spelled them.
#[derive(Default)]
pub struct SocketCache {
    pub map: parking_lot::Mutex<HashMap<String, Cached>>,
    /// The map's size, so INFO and the timer's sweep need no lock when it is empty.
    pub len: AtomicUsize,
}

pub struct Cached {
    pub conn: BufReader<TcpStream>,
    /// The db the target has selected on this connection, -1 if unknown.
    pub last_dbid: i64,
    pub last_use: Instant,
    /// A socket error after the target had already replied with an error: close it.
    pub dead: bool,
}

impl SocketCache {
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Closes the connections unused for more than 10 s (Redis' migrateCloseTimedoutSockets,
    /// run by the timer task).
    pub fn close_idle(&self) {
        if self.len() == 0 {
            return;
        }
        // A MIGRATE in progress holds the map while it talks to its target: sweep later
        // rather than block the timer on it.
        let Some(mut map) = self.map.try_lock() else {
            return;
        };
        map.retain(|_, c| c.last_use.elapsed() <= CACHE_TTL);
        self.len.store(map.len(), Ordering::Relaxed);
    }
}
