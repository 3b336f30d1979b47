//! Heap bytes per held Redisson lock, counted exactly: 10,000 x `HSET lock:N <uuid>:1 1` +
//! `PEXPIRE lock:N 3600000` through `Engine::run`, as bench/ab.sh's memory step sends them.
//!
//! A counting global allocator (this test binary only) records every live allocation by
//! requested size, and the bytes glibc malloc (the server's allocator) really takes for
//! it: the request plus its 8-byte header, rounded up to 16, at least 32. The test prints
//! the breakdown docs/architecture.md quotes ("Bytes per key") and fails if a change makes
//! a lock cost more than the bound below.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

use lockcore::engine::{ClientCtx, Engine};
use lockcore::storage::clock::ManualClock;

/// Live allocations by requested size (1..=SMALL), and the bytes of larger ones.
const SMALL: usize = 512;
static COUNT: [AtomicI64; SMALL + 1] = [const { AtomicI64::new(0) }; SMALL + 1];
static BIG_BYTES: AtomicI64 = AtomicI64::new(0);
static CHUNK_BYTES: AtomicI64 = AtomicI64::new(0);

fn chunk(n: usize) -> i64 {
    (((n + 8 + 15) & !15).max(32)) as i64
}

struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note(l.size(), 1);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        note(l.size(), -1);
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        note(l.size(), -1);
        note(new, 1);
        System.realloc(p, l, new)
    }
}

fn note(size: usize, sign: i64) {
    CHUNK_BYTES.fetch_add(sign * chunk(size), Relaxed);
    if size <= SMALL {
        COUNT[size].fetch_add(sign, Relaxed);
    } else {
        BIG_BYTES.fetch_add(sign * size as i64, Relaxed);
    }
}

#[global_allocator]
static A: Counting = Counting;

fn snapshot() -> (Vec<i64>, i64, i64) {
    (
        COUNT.iter().map(|c| c.load(Relaxed)).collect(),
        BIG_BYTES.load(Relaxed),
        CHUNK_BYTES.load(Relaxed),
    )
}

/// At most this many malloc bytes per held lock. redis-server 7.0.15 measures 204-211
/// bytes of RSS per lock in bench/ab.sh (INFO used_memory: 194); this test counts 164.5
/// since the keyspace's table holds 8-byte slots into dense pairs (docs/architecture.md).
const BOUND: f64 = 180.0;

#[test]
fn bytes_per_held_redisson_lock() {
    const N: usize = 10_000;
    let mut e = Engine::with_clock(16, ManualClock::new(1_000_000));
    let mut cl = ClientCtx::default();
    let cmds: Vec<(String, String)> = (0..N)
        .map(|i| {
            (
                format!("lock:{i}"),
                format!("6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b{i:04x}:1"),
            )
        })
        .collect();
    let (c0, b0, t0) = snapshot();
    for (k, f) in &cmds {
        e.run(&mut cl, &[b"HSET", k.as_bytes(), f.as_bytes(), b"1"]);
        e.run(&mut cl, &[b"PEXPIRE", k.as_bytes(), b"3600000"]);
    }
    let (c1, b1, t1) = snapshot();
    let per = (t1 - t0) as f64 / N as f64;
    println!("malloc bytes per lock: {per:.1}");
    for (size, (a, b)) in c0.iter().zip(&c1).enumerate() {
        let n = b - a;
        if n.abs() >= (N / 10) as i64 {
            println!(
                "  {n:6} live allocations of {size:3} bytes: {:.1} bytes per lock",
                (n * chunk(size)) as f64 / N as f64
            );
        }
    }
    println!(
        "  large allocations (tables): {:.1} bytes per lock",
        (b1 - b0) as f64 / N as f64
    );
    assert_eq!(e.dbs[0].len(), N);
    assert!(
        per <= BOUND,
        "{per:.1} malloc bytes per lock, bound {BOUND}"
    );
}
