//! Redis' LFU access counter, kept when `maxmemory-policy` is an `*-lfu` policy so that
//! OBJECT FREQ and RESTORE ... FREQ behave as in Redis.
//!
//! Redis keeps the counter in the object's 24 LRU bits: the last decrement time in minutes
//! (16 bits) and a logarithmic 8-bit counter. Tumbler keeps the same two numbers in the
//! entry's `lru_ms`, stored negated (`-1 - (minutes << 8 | counter)`) so that they never
//! look like an LRU access time (Unix ms, never negative). An entry still holding an access
//! time when LFU is switched on counts as new (counter 5, `LFU_INIT_VAL`), as Redis' fresh
//! objects do; switching back to LRU, an LFU entry reads as long idle. (Redis too says that
//! "LRU and LFU data will take some time to adjust".)
//!
//! The counter decays by one every `lfu-decay-time` minutes and grows with probability
//! `1 / ((counter - 5) * lfu-log-factor + 1)` per access, as in Redis' `evict.c`.

use rand::Rng;

/// Redis' LFU_INIT_VAL.
pub const INIT_VAL: u8 = 5;

/// Minutes, modulo 2^16, as Redis' `LFUGetTimeInMinutes`.
fn minutes(now_ms: i64) -> i64 {
    (now_ms / 60_000) & 0xffff
}

/// The `lru_ms` of an entry with `counter` as of `now_ms`.
pub fn encode(now_ms: i64, counter: u8) -> i64 {
    -1 - ((minutes(now_ms) << 8) | counter as i64)
}

/// (minutes, counter) of an LFU-encoded `lru_ms`; an access time reads as new.
fn decode(lru_ms: i64, now_ms: i64) -> (i64, u8) {
    if lru_ms >= 0 {
        return (minutes(now_ms), INIT_VAL);
    }
    let v = -1 - lru_ms;
    (v >> 8, (v & 0xff) as u8)
}

/// The counter after its decay (Redis' `LFUDecrAndReturn`); OBJECT FREQ's reply.
pub fn decayed(lru_ms: i64, now_ms: i64, decay_time: i64) -> u8 {
    let (ldt, counter) = decode(lru_ms, now_ms);
    let now = minutes(now_ms);
    let elapsed = if now >= ldt {
        now - ldt
    } else {
        65535 - ldt + now
    };
    let periods = if decay_time > 0 {
        elapsed / decay_time
    } else {
        0
    };
    (counter as i64 - periods).max(0) as u8
}

/// Redis' `LFULogIncr`.
fn log_incr(counter: u8, log_factor: i64) -> u8 {
    if counter == 255 {
        return 255;
    }
    let r: f64 = rand::thread_rng().gen();
    let base = (counter as f64 - INIT_VAL as f64).max(0.0);
    let p = 1.0 / (base * log_factor as f64 + 1.0);
    if r < p {
        counter + 1
    } else {
        counter
    }
}

/// The `lru_ms` after one access (Redis' `updateLFU`).
pub fn touched(lru_ms: i64, now_ms: i64, log_factor: i64, decay_time: i64) -> i64 {
    let c = decayed(lru_ms, now_ms, decay_time);
    encode(now_ms, log_incr(c, log_factor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_and_decays() {
        let now = 1_700_000_000_000;
        assert_eq!(decayed(now, now, 1), INIT_VAL);
        let v = encode(now, 100);
        assert!(v < 0);
        assert_eq!(decayed(v, now, 1), 100);
        assert_eq!(decayed(v, now + 30 * 60_000, 1), 70);
        assert_eq!(decayed(v, now + 30 * 60_000, 10), 97);
        assert_eq!(decayed(v, now + 300 * 60_000, 1), 0);
        assert_eq!(decayed(v, now + 300 * 60_000, 0), 100);
        assert_eq!(decayed(encode(now, 255), now, 1), 255);
    }

    #[test]
    fn grows_logarithmically() {
        let now = 1_700_000_000_000;
        let mut v = encode(now, 0);
        for _ in 0..5 {
            v = touched(v, now, 10, 1);
        }
        // Below LFU_INIT_VAL every access counts.
        assert_eq!(decayed(v, now, 1), 5);
        for _ in 0..1000 {
            v = touched(v, now, 10, 1);
        }
        let c = decayed(v, now, 1);
        // Redis' table for lfu-log-factor 10: about 18 after 1000 hits.
        assert!((10..=30).contains(&c), "{c}");
        assert_eq!(touched(encode(now, 255), now, 10, 1), encode(now, 255));
    }
}
