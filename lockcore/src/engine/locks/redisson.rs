//! Recognising Redisson's lock hashes in a keyspace, from what SCAN, HGETALL and PTTL show.
//!
//! Redisson stores an `RLock` (and a fair lock, and the holder side of an `RReadWriteLock`)
//! as a hash whose fields name the holder, `<client UUID>:<thread id>` (a write hold of a
//! read-write lock adds `:write`), with the reentrancy count as an integer value, and a TTL
//! (the lease, renewed by the watchdog). A read-write lock adds a `mode` field (`read` or
//! `write`). Waiters of a plain lock subscribe to `redisson_lock__channel:{<name>}`; those of
//! a fair lock queue in the list `redisson_lock_queue:{<name>}`.
//!
//! Pure functions over plain values, so a lock-order checker or any other tool can use them
//! without a terminal or a socket.

/// What kind of Redisson lock a hash is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedissonKind {
    /// `RLock` or `RFairLock` (the same hash; a fair lock also has a queue list).
    Lock,
    /// `RReadWriteLock` in `read` or `write` mode.
    ReadWrite { write: bool },
}

/// One holder: the client's UUID and thread, and its hold count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedissonHolder {
    /// `uuid:threadId` as stored (without a `:write` suffix).
    pub owner: String,
    pub holds: i64,
    /// A write hold of a read-write lock.
    pub write: bool,
}

/// A hash recognised as a Redisson lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedissonLock {
    pub kind: RedissonKind,
    pub holders: Vec<RedissonHolder>,
    /// The key's remaining TTL in ms (the lease).
    pub ttl_ms: i64,
}

/// True for a canonical textual UUID: 8-4-4-4-12 hex digits.
pub fn is_uuid(s: &str) -> bool {
    is_uuid_bytes(s.as_bytes())
}

/// [`is_uuid`] on bytes: the dashes first, then the hex groups (the lock-order checker
/// runs this on every hash write that could take a lock, so it is kept branch-light).
pub fn is_uuid_bytes(b: &[u8]) -> bool {
    let Ok(b) = <&[u8; 36]>::try_from(b) else {
        return false;
    };
    b[8] == b'-'
        && b[13] == b'-'
        && b[18] == b'-'
        && b[23] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, &c)| HEX[c as usize] || matches!(i, 8 | 13 | 18 | 23))
}

/// Which bytes are ASCII hex digits, as a table: one load per byte.
static HEX: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = (c as u8).is_ascii_hexdigit();
        c += 1;
    }
    t
};

/// Parses a holder field: `uuid:threadId` or `uuid:threadId:write`.
/// Returns the owner (`uuid:threadId`) and whether it is a write hold.
pub fn parse_holder_field(field: &str) -> Option<(&str, bool)> {
    let (owner, write) = match field.strip_suffix(":write") {
        Some(o) => (o, true),
        None => (field, false),
    };
    // `uuid:threadId`: the UUID is 36 bytes, so the thread id starts at byte 37 (a thread
    // id is digits only, so the last `:` is that one).
    let b = owner.as_bytes();
    let thread_ok = b.len() > 37 && b[36] == b':' && b[37..].iter().all(u8::is_ascii_digit);
    (thread_ok && is_uuid_bytes(&b[..36])).then_some((owner, write))
}

/// Recognises a hash (its fields and values, and its PTTL) as a Redisson lock. Every field
/// must be a holder with a positive integer count, apart from a read-write lock's `mode`;
/// the key must have a TTL (`pttl > 0`) and at least one holder.
pub fn recognise(fields: &[(Vec<u8>, Vec<u8>)], pttl: i64) -> Option<RedissonLock> {
    if pttl <= 0 {
        return None;
    }
    let mut mode = None;
    let mut holders = Vec::new();
    for (f, v) in fields {
        let f = std::str::from_utf8(f).ok()?;
        let v = std::str::from_utf8(v).ok()?;
        if f == "mode" {
            match v {
                "read" | "write" => mode = Some(v == "write"),
                _ => return None,
            }
            continue;
        }
        let (owner, write) = parse_holder_field(f)?;
        let holds: i64 = v.parse().ok().filter(|n| *n > 0)?;
        holders.push(RedissonHolder {
            owner: owner.to_string(),
            holds,
            write,
        });
    }
    if holders.is_empty() {
        return None;
    }
    let kind = match mode {
        Some(write) => RedissonKind::ReadWrite { write },
        None if holders.iter().any(|h| h.write) => return None,
        None => RedissonKind::Lock,
    };
    Some(RedissonLock {
        kind,
        holders,
        ttl_ms: pttl,
    })
}

/// The pub/sub channel a plain Redisson lock's waiters subscribe to.
pub fn channel_for(key: &str) -> String {
    format!("redisson_lock__channel:{{{key}}}")
}

/// The list a fair lock's waiters queue in.
pub fn fair_queue_for(key: &str) -> String {
    format!("redisson_lock_queue:{{{key}}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "5f0c1a8e-7b7d-4f0e-9a39-3c2b8e1d0a11";

    fn h(pairs: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        pairs
            .iter()
            .map(|(f, v)| (f.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn a_reentrant_rlock() {
        let f = format!("{ID}:57");
        let l = recognise(&h(&[(&f, "2")]), 29_000).unwrap();
        assert_eq!(l.kind, RedissonKind::Lock);
        assert_eq!(l.holders[0].owner, f);
        assert_eq!(l.holders[0].holds, 2);
        assert_eq!(l.ttl_ms, 29_000);
    }

    #[test]
    fn a_read_write_lock_in_both_modes() {
        let r1 = format!("{ID}:1");
        let r2 = format!("{ID}:2");
        let l = recognise(&h(&[("mode", "read"), (&r1, "1"), (&r2, "3")]), 10).unwrap();
        assert_eq!(l.kind, RedissonKind::ReadWrite { write: false });
        assert_eq!(l.holders.len(), 2);
        let w = format!("{ID}:9:write");
        let l = recognise(&h(&[("mode", "write"), (&w, "1")]), 10).unwrap();
        assert_eq!(l.kind, RedissonKind::ReadWrite { write: true });
        assert!(l.holders[0].write);
        assert_eq!(l.holders[0].owner, format!("{ID}:9"));
    }

    #[test]
    fn ordinary_hashes_are_not_locks() {
        let f = format!("{ID}:57");
        assert!(recognise(&h(&[(&f, "1")]), -1).is_none(), "no TTL");
        assert!(
            recognise(&h(&[(&f, "x")]), 100).is_none(),
            "count not an integer"
        );
        assert!(
            recognise(&h(&[(&f, "0")]), 100).is_none(),
            "count not positive"
        );
        assert!(recognise(&h(&[("name", "bob")]), 100).is_none());
        assert!(recognise(&h(&[(&f, "1"), ("name", "bob")]), 100).is_none());
        assert!(recognise(&h(&[("not-a-uuid:1", "1")]), 100).is_none());
        assert!(recognise(&h(&[(&format!("{ID}:"), "1")]), 100).is_none());
        assert!(
            recognise(&h(&[("mode", "read")]), 100).is_none(),
            "no holder"
        );
        assert!(recognise(&h(&[]), 100).is_none());
    }

    #[test]
    fn uuids_and_holder_fields() {
        assert!(is_uuid(ID));
        assert!(is_uuid(&ID.to_uppercase()));
        assert!(!is_uuid(&ID.replace('-', "0")));
        assert!(!is_uuid(&ID.replacen('5', "g", 1)));
        assert!(!is_uuid(&ID[1..]));
        assert!(!is_uuid(&format!("{ID}0")));
        let f = format!("{ID}:57");
        assert_eq!(parse_holder_field(&f), Some((f.as_str(), false)));
        let w = format!("{ID}:57:write");
        assert_eq!(parse_holder_field(&w), Some((f.as_str(), true)));
        assert_eq!(parse_holder_field(&format!("{ID}:")), None);
        assert_eq!(parse_holder_field(&format!("{ID}:5a")), None);
        assert_eq!(parse_holder_field(&format!("{ID}:1:2")), None);
        assert_eq!(parse_holder_field(&format!("x{ID}:1")), None);
        assert_eq!(parse_holder_field("mode"), None);
    }

    #[test]
    fn waiter_keys_use_redissons_braces() {
        assert_eq!(channel_for("orders"), "redisson_lock__channel:{orders}");
        assert_eq!(fair_queue_for("orders"), "redisson_lock_queue:{orders}");
    }
}
