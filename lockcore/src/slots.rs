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

use crate::commands::CommandSpec;

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
    // `contains` on bytes is a word-at-a-time memchr: most keys have no tag, and this runs
    // on every command in cluster mode.
    let hashed = if key.contains(&b'{') {
        hash_tag(key)
    } else {
        key
    };
    CRC16.checksum(hashed) & (SLOTS as u16 - 1)
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
        crate::commands::Keys::Range {
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
}
