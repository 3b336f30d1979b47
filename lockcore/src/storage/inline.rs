//! Small byte strings stored in place, in the 24 bytes a value's pointer and length would
//! take anyway (issue 40, "Bytes per key").
//!
//! A key's [`Value`](crate::storage::value::Value) is 32 bytes of its keyspace pair: a tag
//! and 24 bytes of payload. A value of up to [`INLINE`] bytes (a short string, or the packed
//! buffer of a small hash, set, sorted set or list) now sits in those 24 bytes instead of in
//! an allocation of its own. The allocation was at least 32 bytes from malloc, 48 for a
//! string (a `Bytes` with a shared owner), on top of the pair: a key `SET key:1 value-1`
//! took 143 bytes where redis-server takes 107, a five-member sorted set 127 against 106.
//!
//! [`PackBuf`] replaces the `Box<[u8]>` of the packed encodings (listpack.rs, zset.rs,
//! qlist.rs, value.rs' intset): inline up to 22 bytes, an exactly-sized allocation past
//! that. [`StrVal`] holds a string: inline up to 22 bytes, an exactly-sized allocation up to
//! [`SHARE_MIN`] - 1 bytes, and past that the argument's own `Bytes`, boxed, so that SET
//! of a large value copies nothing and GET replies with the same buffer.

use bytes::{Bytes, BytesMut};
use std::ops::{Deref, DerefMut};

/// What glibc's malloc takes for `n` bytes (its chunk: the size, 8 bytes of header,
/// rounded up to 16, at least 32); 0 for an empty `Box<[u8]>`, which allocates nothing.
pub fn malloc_size(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        ((n + 8 + 15) & !15).max(32)
    }
}

/// Bytes stored in place.
pub const INLINE: usize = 22;

/// Strings of this many bytes or more keep the `Bytes` they came in (see the module doc).
/// Below it a string is copied into an exactly-sized allocation, and GET copies it out
/// again (a malloc and at most 4 KiB of memcpy). Shared, a string pays a 48-byte box and
/// the 32-byte header `Bytes` makes on a first clone: 7 % of a 1000-byte value, which took
/// 1,179 bytes a key against redis-server's 1,104 at a threshold of 512.
pub const SHARE_MIN: usize = 4096;

/// A byte buffer, inline up to [`INLINE`] bytes, else one exactly-sized allocation. 24 bytes,
/// with spare tag values, so an enum of it and a `Box` stays 24 bytes.
#[derive(Clone)]
pub enum PackBuf {
    Inline { len: u8, buf: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl Default for PackBuf {
    fn default() -> Self {
        PackBuf::Inline {
            len: 0,
            buf: [0; INLINE],
        }
    }
}

impl PackBuf {
    pub fn from_slice(b: &[u8]) -> PackBuf {
        if b.len() <= INLINE {
            let mut buf = [0; INLINE];
            buf[..b.len()].copy_from_slice(b);
            PackBuf::Inline {
                len: b.len() as u8,
                buf,
            }
        } else {
            PackBuf::Heap(b.into())
        }
    }

    /// The bytes this buffer takes from the allocator (MEMORY USAGE): none inline.
    pub fn heap_bytes(&self) -> usize {
        match self {
            PackBuf::Inline { .. } => 0,
            PackBuf::Heap(b) => malloc_size(b.len()),
        }
    }

    pub fn is_inline(&self) -> bool {
        matches!(self, PackBuf::Inline { .. })
    }

    /// The bytes as a vector, a heap buffer's own allocation reused (an edit then grows it
    /// in place where malloc can).
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            PackBuf::Heap(b) => b.into_vec(),
            p => p.to_vec(),
        }
    }
}

impl From<Vec<u8>> for PackBuf {
    fn from(v: Vec<u8>) -> PackBuf {
        if v.len() <= INLINE {
            PackBuf::from_slice(&v)
        } else {
            PackBuf::Heap(v.into_boxed_slice())
        }
    }
}

impl From<Box<[u8]>> for PackBuf {
    fn from(v: Box<[u8]>) -> PackBuf {
        if v.len() <= INLINE {
            PackBuf::from_slice(&v)
        } else {
            PackBuf::Heap(v)
        }
    }
}

impl From<PackBuf> for Bytes {
    /// The buffer's bytes: a heap buffer handed over without a copy.
    fn from(p: PackBuf) -> Bytes {
        match p {
            PackBuf::Heap(b) => Bytes::from(b),
            p => Bytes::copy_from_slice(&p),
        }
    }
}

impl Deref for PackBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            PackBuf::Inline { len, buf } => &buf[..*len as usize],
            PackBuf::Heap(b) => b,
        }
    }
}

impl DerefMut for PackBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            PackBuf::Inline { len, buf } => &mut buf[..*len as usize],
            PackBuf::Heap(b) => b,
        }
    }
}

impl PartialEq for PackBuf {
    fn eq(&self, o: &PackBuf) -> bool {
        **self == **o
    }
}
impl Eq for PackBuf {}

impl std::fmt::Debug for PackBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", &**self)
    }
}

/// A string value (see the module doc): a [`PackBuf`] below [`SHARE_MIN`] bytes, else the
/// `Bytes` it came in, boxed. 24 bytes.
#[derive(Clone)]
pub enum StrVal {
    Packed(PackBuf),
    Shared(Box<Bytes>),
}

impl Default for StrVal {
    fn default() -> Self {
        StrVal::Packed(PackBuf::default())
    }
}

impl StrVal {
    /// A copy of `b`.
    pub fn from_slice(b: &[u8]) -> StrVal {
        if b.len() < SHARE_MIN {
            StrVal::Packed(PackBuf::from_slice(b))
        } else {
            StrVal::Shared(Box::new(Bytes::copy_from_slice(b)))
        }
    }

    /// `b` as the keyspace keeps it: copied when short, else `b` itself.
    pub fn new(b: &Bytes) -> StrVal {
        if b.len() < SHARE_MIN {
            StrVal::Packed(PackBuf::from_slice(b))
        } else {
            StrVal::Shared(Box::new(b.clone()))
        }
    }

    /// The string as a `Bytes` (a reply): the same buffer for a shared string, else a copy.
    pub fn to_bytes(&self) -> Bytes {
        match self {
            StrVal::Shared(b) => (**b).clone(),
            StrVal::Packed(p) => Bytes::copy_from_slice(p),
        }
    }

    /// The string as a `Bytes`, without a copy when it is shared or on the heap.
    pub fn into_bytes(self) -> Bytes {
        match self {
            StrVal::Shared(b) => *b,
            StrVal::Packed(p) => Bytes::from(p),
        }
    }

    /// The string as a buffer to edit in place (SETBIT, SETRANGE): a heap string's own
    /// allocation, a shared one's when nothing else holds it, else a copy.
    pub fn into_mut(self) -> BytesMut {
        self.into_bytes()
            .try_into_mut()
            .unwrap_or_else(|b| BytesMut::from(&b[..]))
    }

    /// An edited buffer back as a string, without a copy past the inline size.
    pub fn from_mut(b: BytesMut) -> StrVal {
        if b.len() <= INLINE {
            StrVal::from_slice(&b)
        } else {
            StrVal::from(Vec::<u8>::from(b))
        }
    }

    /// The bytes this string takes from the allocator beyond its 24 (MEMORY USAGE). A
    /// shared buffer counts whole, as the string holds it.
    pub fn heap_bytes(&self) -> usize {
        match self {
            StrVal::Packed(p) => p.heap_bytes(),
            StrVal::Shared(b) => malloc_size(std::mem::size_of::<Bytes>()) + malloc_size(b.len()),
        }
    }
}

impl From<Bytes> for StrVal {
    fn from(b: Bytes) -> StrVal {
        if b.len() < SHARE_MIN {
            StrVal::Packed(PackBuf::from_slice(&b))
        } else {
            StrVal::Shared(Box::new(b))
        }
    }
}

impl From<&[u8]> for StrVal {
    fn from(b: &[u8]) -> StrVal {
        StrVal::from_slice(b)
    }
}

impl From<Vec<u8>> for StrVal {
    fn from(v: Vec<u8>) -> StrVal {
        if v.len() < SHARE_MIN {
            StrVal::Packed(PackBuf::from(v))
        } else {
            StrVal::Shared(Box::new(Bytes::from(v)))
        }
    }
}

impl Deref for StrVal {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            StrVal::Packed(p) => p,
            StrVal::Shared(b) => b,
        }
    }
}

impl PartialEq for StrVal {
    fn eq(&self, o: &StrVal) -> bool {
        **self == **o
    }
}
impl Eq for StrVal {}

impl PartialEq<[u8]> for StrVal {
    fn eq(&self, o: &[u8]) -> bool {
        **self == *o
    }
}

impl PartialEq<Bytes> for StrVal {
    fn eq(&self, o: &Bytes) -> bool {
        **self == **o
    }
}

impl std::fmt::Debug for StrVal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", Bytes::copy_from_slice(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_leave_room_for_a_tag() {
        assert_eq!(std::mem::size_of::<PackBuf>(), 24);
        assert_eq!(std::mem::size_of::<StrVal>(), 24);
        // An enum of a PackBuf and a Box (a small or big encoding) uses PackBuf's spare
        // tag values.
        enum Two {
            _A(PackBuf),
            _B(Box<u64>),
        }
        assert_eq!(std::mem::size_of::<Two>(), 24);
    }

    #[test]
    fn every_length_round_trips_in_its_form() {
        for n in [0, 1, 21, 22, 23, 100, SHARE_MIN - 1, SHARE_MIN, 5000] {
            let v: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let b = Bytes::from(v.clone());
            let p = PackBuf::from(v.clone());
            assert_eq!(&*p, &v[..]);
            assert_eq!(p.is_inline(), n <= INLINE);
            assert_eq!(p.heap_bytes(), if n <= INLINE { 0 } else { malloc_size(n) });
            let mut q = p.clone();
            if let Some(x) = q.first_mut() {
                *x ^= 1;
                assert_ne!(q, p);
            }
            for s in [
                StrVal::new(&b),
                StrVal::from(b.clone()),
                StrVal::from(v.clone()),
                StrVal::from_slice(&v),
            ] {
                assert_eq!(&*s, &v[..]);
                assert_eq!(s.to_bytes(), b);
                let form = match &s {
                    StrVal::Packed(p) if p.is_inline() => 0,
                    StrVal::Packed(_) => 1,
                    StrVal::Shared(_) => 2,
                };
                let want = if n <= INLINE {
                    0
                } else if n < SHARE_MIN {
                    1
                } else {
                    2
                };
                assert_eq!(form, want, "length {n}");
                assert_eq!(s.clone().into_bytes(), b);
            }
        }
        // An edit reuses a heap or unshared buffer, and gives it back without a copy.
        for n in [100, SHARE_MIN + 10] {
            let s = StrVal::from(vec![1u8; n]);
            let p = s.as_ptr();
            let mut m = s.into_mut();
            assert_eq!(m.as_ptr(), p, "length {n}");
            m[0] = 2;
            let q = m.as_ptr();
            let back = StrVal::from_mut(m);
            assert_eq!((back.as_ptr(), back[0], back.len()), (q, 2, n));
        }
        assert_eq!(&*StrVal::from_mut(BytesMut::from(&b"abc"[..])), b"abc");
        // Past SHARE_MIN a string keeps the spare room an edit grew: a run of appends does
        // not reallocate each time.
        let mut s = StrVal::from(vec![0u8; SHARE_MIN]);
        let mut moves = 0;
        for _ in 0..1000 {
            let mut m = s.into_mut();
            let p = m.as_ptr();
            m.extend_from_slice(b"0123456789");
            moves += usize::from(m.as_ptr() != p);
            s = StrVal::from_mut(m);
        }
        assert_eq!(s.len(), SHARE_MIN + 10_000);
        assert!(moves < 10, "{moves} reallocations in 1000 appends");
        // A large argument is kept, not copied: GET replies with the same buffer.
        let big = Bytes::from(vec![7u8; SHARE_MIN]);
        let s = StrVal::new(&big);
        assert_eq!(s.to_bytes().as_ptr(), big.as_ptr());
    }
}
