//! Keyspace notifications (`notify-keyspace-events`), and the [`Broker`] they and PUBLISH go
//! through.

use bytes::Bytes;

pub const KEYSPACE: u32 = 1 << 0; // K
pub const KEYEVENT: u32 = 1 << 1; // E
pub const GENERIC: u32 = 1 << 2; // g
pub const STRING: u32 = 1 << 3; // $
pub const LIST: u32 = 1 << 4; // l
pub const SET: u32 = 1 << 5; // s
pub const HASH: u32 = 1 << 6; // h
pub const ZSET: u32 = 1 << 7; // z
pub const EXPIRED: u32 = 1 << 8; // x
pub const EVICTED: u32 = 1 << 9; // e
pub const STREAM: u32 = 1 << 10; // t
pub const KEY_MISS: u32 = 1 << 11; // m
pub const MODULE: u32 = 1 << 12; // d
pub const NEW: u32 = 1 << 13; // n
/// Tumbler's native locks (`L`); included in `A`.
pub const LOCK: u32 = 1 << 14;
/// `A`: every class but key-miss and new.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE | LOCK;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NotifyFlags(pub u32);

impl NotifyFlags {
    /// Parses the config string ("KEA", "Kx", ""). `None` on an unknown letter.
    pub fn parse(s: &[u8]) -> Option<NotifyFlags> {
        let mut f = 0;
        for &c in s {
            f |= match c {
                b'A' => ALL,
                b'g' => GENERIC,
                b'$' => STRING,
                b'l' => LIST,
                b's' => SET,
                b'h' => HASH,
                b'z' => ZSET,
                b'x' => EXPIRED,
                b'e' => EVICTED,
                b'K' => KEYSPACE,
                b'E' => KEYEVENT,
                b't' => STREAM,
                b'm' => KEY_MISS,
                b'd' => MODULE,
                b'n' => NEW,
                b'L' => LOCK,
                _ => return None,
            };
        }
        Some(NotifyFlags(f))
    }

    /// The canonical string CONFIG GET prints.
    pub fn to_config_string(self) -> String {
        let f = self.0;
        let mut s = String::new();
        if f & ALL == ALL {
            s.push('A');
        } else {
            for (bit, c) in [
                (GENERIC, 'g'),
                (STRING, '$'),
                (LIST, 'l'),
                (SET, 's'),
                (HASH, 'h'),
                (ZSET, 'z'),
                (EXPIRED, 'x'),
                (EVICTED, 'e'),
                (STREAM, 't'),
                (MODULE, 'd'),
                (LOCK, 'L'),
            ] {
                if f & bit != 0 {
                    s.push(c);
                }
            }
        }
        if f & KEYSPACE != 0 {
            s.push('K');
        }
        if f & KEYEVENT != 0 {
            s.push('E');
        }
        if f & KEY_MISS != 0 {
            s.push('m');
        }
        if f & NEW != 0 {
            s.push('n');
        }
        s
    }

    /// True if events of `class` are published at all.
    pub fn wants(self, class: u32) -> bool {
        self.0 & (KEYSPACE | KEYEVENT) != 0 && self.0 & class != 0
    }
}

/// Where PUBLISH, SPUBLISH and keyspace events go. Implemented by the server's pub/sub
/// registry; returns the number of receivers.
pub trait Broker: Send + Sync {
    fn publish(&self, channel: &Bytes, message: &Bytes, sharded: bool) -> i64;
    /// Logs a finding at warning level (the lock-order checker's); lockcore has no logger.
    fn log_warning(&self, _message: &str) {}
}

/// A broker with no subscribers, for unit tests and embedding without pub/sub.
pub struct NoBroker;
impl Broker for NoBroker {
    fn publish(&self, _: &Bytes, _: &Bytes, _: bool) -> i64 {
        0
    }
}

/// Publishes `__keyspace@<db>__:<key> <event>` and `__keyevent@<db>__:<event> <key>`.
pub fn publish(broker: &dyn Broker, flags: NotifyFlags, event: &str, db: usize, key: &Bytes) {
    if flags.0 & KEYSPACE != 0 {
        let mut ch = format!("__keyspace@{db}__:").into_bytes();
        ch.extend_from_slice(key);
        broker.publish(
            &Bytes::from(ch),
            &Bytes::copy_from_slice(event.as_bytes()),
            false,
        );
    }
    if flags.0 & KEYEVENT != 0 {
        let ch = Bytes::from(format!("__keyevent@{db}__:{event}"));
        broker.publish(&ch, key, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_like_redis() {
        let f = NotifyFlags::parse(b"KEA").unwrap();
        assert_eq!(f.to_config_string(), "AKE");
        assert_eq!(NotifyFlags::parse(b"Kx").unwrap().to_config_string(), "xK");
        assert!(NotifyFlags::parse(b"Q").is_none());
        assert!(!NotifyFlags::parse(b"A").unwrap().wants(EXPIRED));
    }
}
