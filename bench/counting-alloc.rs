//! What the counting allocator (server/src/state/memory.rs) adds to an allocation: alloc + free
//! of 40-byte blocks, 20M per thread and round, the system allocator and the counting one
//! side by side, three interleaved rounds, on 1 and 2 threads (the relaxed counter is one
//! shared cache line). Standalone, no dependencies:
//!
//!     rustc -O bench/counting-alloc.rs -o target/counting-alloc && target/counting-alloc
//!
//! The allocator here mirrors `CountingAlloc` (same counter update and size rounding).
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

static ALLOCATED: AtomicIsize = AtomicIsize::new(0);

#[inline]
fn charged(size: usize) -> isize {
    ((size + 8 + 15) & !15).max(32) as isize
}

struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            ALLOCATED.fetch_add(charged(l.size()), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        ALLOCATED.fetch_sub(charged(l.size()), Ordering::Relaxed);
    }
}

fn run<A: GlobalAlloc + Sync>(a: &'static A, threads: usize, n: usize) -> f64 {
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(move || {
                let l = Layout::from_size_align(40, 8).unwrap();
                let mut v: [*mut u8; 8] = [std::ptr::null_mut(); 8];
                for i in 0..n {
                    let j = i % 8;
                    unsafe {
                        if !v[j].is_null() {
                            a.dealloc(v[j], l);
                        }
                        v[j] = a.alloc(l);
                        std::ptr::write_volatile(v[j], 1);
                    }
                }
                for p in v {
                    if !p.is_null() {
                        unsafe { a.dealloc(p, l) }
                    }
                }
            });
        }
    });
    t.elapsed().as_nanos() as f64 / (n * threads) as f64
}

static SYSTEM: System = System;
static COUNTING: Counting = Counting;

fn main() {
    let n = 20_000_000;
    for threads in [1, 2] {
        for round in 0..3 {
            let s = run(&SYSTEM, threads, n);
            let c = run(&COUNTING, threads, n);
            println!(
                "threads={threads} round={round}: system {s:.1} ns, counting {c:.1} ns per alloc+free, ratio {:.2}",
                c / s
            );
        }
    }
}
