//! `used_memory` and maxmemory eviction.
//!
//! Redis counts every byte it allocates (zmalloc) and compares that with `maxmemory`.
//! Tumbler does the same with [`CountingAlloc`], a global allocator over the system one that
//! adds each allocation's size (as glibc's malloc rounds it, header included) to one relaxed
//! atomic and subtracts it on free; the `tumbler` binary installs it. The count covers keys, values, client buffers, the Lua heap
//! (mlua allocates through Rust) and the server's own tables, like Redis' `used_memory`; it
//! leaves out fragmentation and memory malloc keeps after a free (INFO's `used_memory_rss`
//! shows those). Freeing a key lowers it at once, so eviction stops as soon as it is back under
//! the limit. A process that embeds Tumbler without installing the allocator falls back to
//! its resident set size (RSS), which freeing does not reliably lower.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering};
use std::time::Instant;

use lockcore::engine::evict::Policy;

use crate::state::Shared;

static ALLOCATED: AtomicIsize = AtomicIsize::new(0);

/// The bytes one block of `size` takes in glibc's malloc: an 8-byte header, rounded up to
/// 16, at least 32. Counting that rather than the bare size keeps `used_memory` close to
/// what the keys really cost (many small blocks), as Redis counts its allocator's usable
/// sizes.
#[inline]
fn charged(size: usize) -> isize {
    ((size + 8 + 15) & !15).max(32) as isize
}

/// The system allocator, counting the bytes in use (see the module doc). Install it with
/// `#[global_allocator] static A: tumbler::memory::CountingAlloc = tumbler::memory::CountingAlloc;`.
pub struct CountingAlloc;

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            ALLOCATED.fetch_add(charged(layout.size()), Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            ALLOCATED.fetch_add(charged(layout.size()), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        ALLOCATED.fetch_sub(charged(layout.size()), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            let delta = charged(new_size) - charged(layout.size());
            ALLOCATED.fetch_add(delta, Ordering::Relaxed);
        }
        p
    }
}

/// Bytes allocated through [`CountingAlloc`], or None if it is not the global allocator.
pub fn allocated() -> Option<u64> {
    let n = ALLOCATED.load(Ordering::Relaxed);
    (n > 0).then_some(n as u64)
}

/// INFO's `used_memory`: the allocator's count, else the RSS (re-read from /proc at most
/// every 10 ms so that the maxmemory check does not cost a file read per command).
pub fn used_memory() -> u64 {
    if let Some(n) = allocated() {
        return n;
    }
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    static READ_AT_MS: AtomicU64 = AtomicU64::new(0);
    static RSS: AtomicU64 = AtomicU64::new(0);
    let now = START.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1;
    let at = READ_AT_MS.load(Ordering::Relaxed);
    if at == 0 || now - at >= 10 {
        READ_AT_MS.store(now, Ordering::Relaxed);
        RSS.store(rss_bytes(), Ordering::Relaxed);
    }
    RSS.load(Ordering::Relaxed)
}

/// INFO's `used_memory_peak`: the highest `used` seen by INFO or eviction.
pub fn peak(used: u64) -> u64 {
    static PEAK: AtomicU64 = AtomicU64::new(0);
    PEAK.fetch_max(used, Ordering::Relaxed).max(used)
}

/// INFO's `mem_not_counted_for_evict`: Redis leaves out replication and AOF buffers, which
/// Tumbler does not have.
pub fn not_counted_for_evict() -> u64 {
    0
}

/// Redis' `performEvictions`: while used memory is over `maxmemory`, evicts one key at a
/// time by the policy (storage/evict.rs), each with the `evicted` keyspace event. Runs to
/// completion under the keyspace lock (Redis bounds one call by
/// `maxmemory-eviction-tenacity` and resumes later; Tumbler's keyspaces are CI-sized).
/// Returns false if memory is still over the limit and nothing more can be evicted
/// (Redis' EVICT_FAIL: commands that may grow memory are then refused with -OOM).
pub fn perform_evictions(shared: &Shared, engine: &mut lockcore::Engine) -> bool {
    let ok = evict_to_limit(shared, engine);
    shared.evict_failed.store(!ok, Ordering::Relaxed);
    ok
}

/// True if `maxmemory` is set and used memory (less what is not counted) is over it.
pub fn over_limit(shared: &Shared) -> bool {
    let max = shared.maxmemory.load(Ordering::Relaxed);
    max > 0 && used_memory().saturating_sub(not_counted_for_evict()) > max as u64
}

fn evict_to_limit(shared: &Shared, engine: &mut lockcore::Engine) -> bool {
    let over = || over_limit(shared);
    if !shared.evicting.load(Ordering::Relaxed) || shared.maxmemory.load(Ordering::Relaxed) <= 0 {
        // Eviction is off (CONFIG SET runs this too): let go of the pooled key handles.
        if !engine.evict_pool.is_empty() {
            engine.evict_pool.clear();
        }
        return !over();
    }
    let (policy, samples) = {
        let cfg = shared.config.read();
        let p = Policy::parse(cfg.get(crate::config::key::MAXMEMORY_POLICY))
            .unwrap_or(Policy::NoEviction);
        // Redis allows up to INT_MAX samples; beyond 1,024 only the cost grows.
        let samples = cfg
            .get_i64(crate::config::key::MAXMEMORY_SAMPLES)
            .clamp(1, 1024) as usize;
        (p, samples)
    };
    let mut n = 0u64;
    peak(used_memory());
    let mut ok = true;
    while over() {
        if engine.evict_by_policy(policy, samples).is_none() {
            // Nothing left to evict: the emptied tables may still hold memory.
            let mut shrunk = false;
            for db in engine.dbs.iter_mut() {
                shrunk |= db.shrink_if_sparse();
            }
            if shrunk && !over() {
                break;
            }
            ok = false;
            break;
        }
        n += 1;
    }
    if n > 0 {
        tracing::debug!(evicted = n, "maxmemory eviction");
    }
    ok
}

/// Resident set size of this process in bytes (Linux), else 0.
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}
