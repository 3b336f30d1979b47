//! How the keyspace stores a key: up to 22 bytes inline in its `(Key, Entry)` pair (db.rs),
//! longer keys in one exactly-sized allocation (a [`PackBuf`], inline.rs); and how it hashes keys ([`KeyHasher`]).
//!
//! Why not `Bytes`: a `Bytes` takes 32 bytes of the pair and its bytes live in an
//! allocation of their own (32 bytes with malloc's header even for `lock:1`), which is 64
//! of the bytes a held Redisson lock costs (docs/architecture.md, "Bytes per key"). A
//! `Key` is 24 bytes, and the keys locks and most applications use (`lock:<id>`,
//! `key:000000123456`) fit inline: no allocation, and comparing a key during a lookup reads
//! the pair already in cache instead of following a pointer.

use std::ops::Deref;

use crate::storage::inline::PackBuf;

/// The keyspace hasher: aHash keyed with per-process random keys. Redis hashes keys with
/// SipHash-1-2 under a random key so that clients cannot flood one bucket; aHash keeps that
/// property (its keys are random per process and it is designed to resist collision
/// attacks) at a fraction of std's SipHash-1-3 cost, which showed up in profiles of SET/GET
/// over a 1M keyspace (docs/architecture.md).
pub type KeyHasher = ahash::RandomState;

/// The hasher of the member indexes of every hashtable set and hash: random per process,
/// as Redis keys its one SipHash per process. One per value took 32 bytes of each.
pub fn member_hasher() -> &'static KeyHasher {
    static H: std::sync::OnceLock<KeyHasher> = std::sync::OnceLock::new();
    H.get_or_init(Default::default)
}

/// The key's bytes: up to 22 in place, a longer key in one exactly-sized allocation.
#[derive(Clone, PartialEq, Eq)]
pub struct Key(PackBuf);

impl Key {
    pub fn new(b: &[u8]) -> Key {
        Key(PackBuf::from_slice(b))
    }

    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl Deref for Key {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::inline::INLINE;

    #[test]
    fn short_keys_are_inline_and_every_key_round_trips() {
        assert_eq!(std::mem::size_of::<Key>(), 24);
        for n in [0, 1, 9, 21, 22, 23, 100] {
            let b: Vec<u8> = (0..n as u8).collect();
            let k = Key::new(&b);
            assert_eq!(&*k, &b[..]);
            assert_eq!(k.0.is_inline(), n <= INLINE);
            assert_eq!(k.clone(), k);
        }
    }
}
