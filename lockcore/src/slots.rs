//! Redis Cluster hash slots: which of the 16384 slots a key, or a command's keys, belong to.
//!
//! A key's slot is CRC16 (XMODEM) of the key modulo 16384, or of its hash tag: the part
//! between the first `{` and the next `}` when that part is not empty. So `{user1}.lock`
//! and `redisson_lock__channel:{user1}.lock` share a slot, which is how Redisson keeps a
//! lock, its channel and its fair-lock queues together.
//!
//! A command's keys come from the command table's key specs
//! ([`CommandSpec::for_each_key`]), the same data COMMAND GETKEYS and scripts read.

use bytes::Bytes;

use crate::engine::spec::CommandSpec;

/// CRC16-XMODEM with 16 lookup tables (8 KiB, built at compile time): 16 bytes per step
/// instead of one, about five times fewer instructions than a byte-at-a-time table on the
/// 10-20-byte keys clients send. The result is the same CRC as Redis' `crc16()`.
const CRC16: crc::Crc<u16, crc::Table<16>> =
    crc::Crc::<u16, crc::Table<16>>::new(&crc::CRC_16_XMODEM);

/// Number of hash slots in a Redis Cluster.
pub const SLOTS: usize = 16384;

/// The hash slot of `key` (Redis' `keyHashSlot`).
#[inline]
pub fn key_hash_slot(key: &[u8]) -> u16 {
    // Most keys have no tag, and this runs on every keyed command in a multi-node cluster.
    let hashed = if has_open_brace(key) {
        hash_tag(key)
    } else {
        key
    };
    CRC16.checksum(hashed) & (SLOTS as u16 - 1)
}

/// True if `key` contains `{`, eight bytes per step: a byte of `w ^ "{{{{{{{{"` is zero
/// exactly where `w` has a `{`, and `(x - 0x01..) & !x & 0x80..` is non-zero exactly when
/// some byte of `x` is zero. (`<[u8]>::contains` goes one byte per step: about 70
/// instructions on a 16-byte key, a third of the whole slot check.)
#[inline]
fn has_open_brace(key: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let brace = |w: u64| {
        let x = w ^ (LO * b'{' as u64);
        x.wrapping_sub(LO) & !x & HI != 0
    };
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    if key.len() < 8 {
        // Zero padding never looks like a `{`.
        let mut w = [0u8; 8];
        w[..key.len()].copy_from_slice(key);
        return brace(u64::from_le_bytes(w));
    }
    // Whole words, then the last eight bytes (overlapping the last word read).
    key.chunks_exact(8).any(|c| brace(word(c))) || brace(word(&key[key.len() - 8..]))
}

/// The part of `key` that is hashed: between the first `{` and the next `}` if non-empty.
fn hash_tag(key: &[u8]) -> &[u8] {
    key.iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            rest.iter()
                .position(|&b| b == b'}')
                .filter(|&close| close > 0)
                .map(|close| &rest[..close])
        })
        .unwrap_or(key)
}

/// Where a command's keys hash to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandSlot {
    /// The command names no keys.
    NoKeys,
    /// Every key is in this slot.
    Slot(u16),
    /// Keys span two or more slots (`-CROSSSLOT`).
    Cross,
}

impl CommandSlot {
    /// Combines two commands' slots, as EXEC does for its queued commands.
    pub fn merge(self, other: CommandSlot) -> CommandSlot {
        match (self, other) {
            (CommandSlot::NoKeys, x) | (x, CommandSlot::NoKeys) => x,
            (CommandSlot::Slot(a), CommandSlot::Slot(b)) if a == b => CommandSlot::Slot(a),
            _ => CommandSlot::Cross,
        }
    }
}

/// The slot of `argv`'s keys per `spec`'s key spec.
#[inline]
pub fn command_slot(spec: &CommandSpec, argv: &[Bytes]) -> CommandSlot {
    // The common case (GET, SET, HSET, ...: one key at argument 1) without the iterator.
    if let (
        crate::engine::spec::Keys::Range {
            first: 1, last: 1, ..
        },
        Some(k),
    ) = (spec.keys, argv.get(1))
    {
        return CommandSlot::Slot(key_hash_slot(k));
    }
    let mut out = CommandSlot::NoKeys;
    spec.for_each_key(argv, |i| {
        if out != CommandSlot::Cross {
            out = out.merge(CommandSlot::Slot(key_hash_slot(&argv[i])));
        }
    });
    out
}

/// True if `argv`'s keys span two or more slots. A command that names one key at most
/// (GET, SET, HSET, ...) costs one match: no key is looked at.
#[inline]
pub fn crosses_slots(spec: &CommandSpec, argv: &[Bytes]) -> bool {
    match spec.keys {
        crate::engine::spec::Keys::None => false,
        crate::engine::spec::Keys::Range { first, last, .. } if first == last => false,
        // EVAL/EVALSHA/FCALL with numkeys 0 or 1 (most lock scripts).
        crate::engine::spec::Keys::NumKeys { numkeys_at, .. }
            if argv
                .get(numkeys_at as usize)
                .is_some_and(|n| matches!(&n[..], b"0" | b"1")) =>
        {
            false
        }
        _ => {
            let mut same = SameSlot::default();
            same.add_command(spec, argv);
            same.cross()
        }
    }
}

/// Whether keys span slots, hashing only when they differ: one key, or one key named
/// several times, costs no CRC. The slot check of a node that owns every slot needs only
/// this (Redis still answers `-CROSSSLOT` there).
#[derive(Debug, Default)]
pub struct SameSlot<'a> {
    first: Option<&'a [u8]>,
    slot: Option<u16>,
    cross: bool,
}

impl<'a> SameSlot<'a> {
    /// Adds one key.
    #[inline]
    pub fn add(&mut self, key: &'a [u8]) {
        match self.first {
            None => self.first = Some(key),
            Some(f) if self.cross || f == key => {}
            Some(f) => {
                let s = *self.slot.get_or_insert_with(|| key_hash_slot(f));
                self.cross = key_hash_slot(key) != s;
            }
        }
    }

    /// Adds `argv`'s keys per `spec`'s key spec.
    #[inline]
    pub fn add_command(&mut self, spec: &CommandSpec, argv: &'a [Bytes]) {
        if let (
            crate::engine::spec::Keys::Range {
                first: 1, last: 1, ..
            },
            Some(k),
        ) = (spec.keys, argv.get(1))
        {
            return self.add(k);
        }
        spec.for_each_key(argv, |i| self.add(&argv[i]));
    }

    /// True if the keys added so far are in two or more slots.
    pub fn cross(&self) -> bool {
        self.cross
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis() {
        // Values from CLUSTER KEYSLOT on redis-server 7.0.
        assert_eq!(key_hash_slot(b"foo"), 12182);
        assert_eq!(key_hash_slot(b"bar"), 5061);
        assert_eq!(key_hash_slot(b"123456789"), 12739);
        assert_eq!(
            key_hash_slot(b"{user1000}.following"),
            key_hash_slot(b"user1000")
        );
        // An empty tag is no tag; only the first '{' counts.
        assert_eq!(key_hash_slot(b"foo{}{bar}"), 8363);
        assert_eq!(key_hash_slot(b"foo{{bar}}zap"), key_hash_slot(b"{bar"));
        assert_eq!(key_hash_slot(b"foo{bar}{zap}"), key_hash_slot(b"bar"));
        assert_eq!(key_hash_slot(b""), 0);
    }

    #[test]
    fn brace_scan_finds_every_position() {
        for len in 0..40usize {
            let plain = vec![b'a'; len];
            assert!(!has_open_brace(&plain), "len {len}");
            // Bytes next to `{` (0x7b) that a sloppy word test could mistake for it.
            let near: Vec<u8> = (0..len).map(|i| [0x7a, 0x7c, 0xfb, 0x00][i % 4]).collect();
            assert!(!has_open_brace(&near), "len {len}");
            for at in 0..len {
                let mut k = plain.clone();
                k[at] = b'{';
                assert!(has_open_brace(&k), "len {len} at {at}");
                let mut k = near.clone();
                k[at] = b'{';
                assert!(has_open_brace(&k), "len {len} at {at}");
            }
        }
    }

    #[test]
    fn same_slot_hashes_only_different_keys() {
        let cross = |keys: &[&[u8]]| {
            let mut s = SameSlot::default();
            keys.iter().for_each(|k| s.add(k));
            s.cross()
        };
        assert!(!cross(&[]));
        assert!(!cross(&[b"foo"]));
        assert!(!cross(&[b"foo", b"foo", b"foo"]));
        assert!(cross(&[b"foo", b"bar"]));
        assert!(cross(&[b"foo", b"foo", b"bar", b"foo"]));
        assert!(!cross(&[b"{u}a", b"{u}b", b"u"]));
        assert!(cross(&[b"{u}a", b"{u}b", b"v"]));
    }

    #[test]
    fn same_slot_agrees_with_command_slot() {
        let cmds: &[&[&str]] = &[
            &["get", "foo"],
            &["mset", "a", "1", "a", "2"],
            &["mset", "{t}a", "1", "{t}b", "2"],
            &["mset", "a", "1", "b", "2"],
            &["del", "x", "x", "y"],
            &["eval", "return 1", "0"],
            &["eval", "return 1", "1", "k"],
            &["evalsha", "0123", "1"],
            &["fcall", "f", "2", "a", "{a}"],
            &["eval", "return 1", "2", "{l}x", "{l}y", "arg"],
            &["evalsha", "0123", "2", "lock", "chan", "arg"],
            &["zunionstore", "d", "2", "d", "{d}"],
            &["xread", "count", "2", "streams", "s", "t", "0", "0"],
            &["ping"],
        ];
        for words in cmds {
            let argv: Vec<Bytes> = words.iter().map(|w| Bytes::from(w.to_string())).collect();
            let spec = crate::commands::lookup(&argv[0]).expect("known command");
            let mut same = SameSlot::default();
            same.add_command(spec, &argv);
            assert_eq!(same.cross(), crosses_slots(spec, &argv), "{words:?}");
            assert_eq!(
                same.cross(),
                command_slot(spec, &argv) == CommandSlot::Cross,
                "{words:?}"
            );
        }
    }
}
