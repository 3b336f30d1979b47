//! What `tumbler top` shows: one row per lock, from LOCK.LIST / LOCK.INFO for native locks
//! and from SCAN TYPE hash + HGETALL + PTTL for Redisson's lock hashes.

use lockcore::engine::locks::redisson::{self, RedissonKind};
use tumbler_client::Client;

use super::reply::{call, int, pairs, text, Frame};

/// One holder of a lock as the table shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderView {
    pub owner: String,
    /// Hold count, permits, or "r2"/"w1" for read-write locks.
    pub holds: String,
    pub token: Option<i64>,
    pub ttl_ms: i64,
}

/// One lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub key: String,
    pub kind: String,
    pub holders: Vec<HolderView>,
    pub waiters: i64,
}

impl Row {
    /// The shortest lease among the holders (-1: bound to a session only).
    pub fn ttl_ms(&self) -> i64 {
        self.holders
            .iter()
            .map(|h| h.ttl_ms)
            .filter(|t| *t >= 0)
            .min()
            .unwrap_or(-1)
    }
}

/// Most contended first: waiters, then holders, then the key.
pub fn sort_by_contention(rows: &mut [Row]) {
    rows.sort_by(|a, b| {
        b.waiters
            .cmp(&a.waiters)
            .then(b.holders.len().cmp(&a.holders.len()))
            .then(a.key.cmp(&b.key))
    });
}

/// Bounds one refresh on a big keyspace.
const MAX_LOCKS: usize = 2_000;
const MAX_SCANNED: usize = 100_000;

fn holder(fields: &[(String, &Frame)]) -> HolderView {
    let get = |n: &str| fields.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
    let num = |n: &str| get(n).and_then(int);
    let holds = match (num("holds"), num("permits"), num("writes"), num("reads")) {
        (Some(h), _, _, _) => h.to_string(),
        (_, Some(p), _, _) => p.to_string(),
        (_, _, Some(w), _) if w > 0 => format!("w{w}"),
        (_, _, _, Some(r)) => format!("r{r}"),
        _ => String::new(),
    };
    HolderView {
        owner: get("owner").map(text).unwrap_or_default(),
        holds,
        token: num("token"),
        ttl_ms: num("ttl").unwrap_or(-1),
    }
}

/// Native locks, semaphores and read-write locks of the current database.
pub fn native(c: &mut Client) -> std::io::Result<Vec<Row>> {
    let list = call(c, &["LOCK.LIST", "COUNT", &MAX_LOCKS.to_string()])?;
    let Frame::Array(keys) = list else {
        return Ok(Vec::new());
    };
    let mut rows = Vec::new();
    for k in keys {
        let key = text(&k);
        let info = call(c, &["LOCK.INFO", key.as_str()])?;
        let fields = pairs(&info);
        if fields.is_empty() {
            continue; // released since LOCK.LIST
        }
        let get = |n: &str| fields.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        let typ = get("type").map(text).unwrap_or_default();
        let kind = match typ.as_str() {
            "semaphore" => format!(
                "semaphore {}/{}",
                get("permits").and_then(int).unwrap_or(0)
                    - get("available").and_then(int).unwrap_or(0),
                get("permits").and_then(int).unwrap_or(0)
            ),
            "rwlock" => format!("rwlock ({})", get("mode").map(text).unwrap_or_default()),
            t => t.to_string(),
        };
        let holders = match get("holders") {
            Some(Frame::Array(hs)) => hs.iter().map(|h| holder(&pairs(h))).collect(),
            _ => vec![holder(&fields)],
        };
        rows.push(Row {
            key,
            kind,
            holders,
            waiters: get("waiters").and_then(int).unwrap_or(0),
        });
    }
    Ok(rows)
}

/// Redisson lock hashes of the current database (SCAN TYPE hash, bounded).
pub fn redisson_locks(c: &mut Client) -> std::io::Result<Vec<Row>> {
    let mut rows = Vec::new();
    let mut cursor = "0".to_string();
    let mut scanned = 0;
    loop {
        let r = call(
            c,
            &["SCAN", cursor.as_str(), "TYPE", "hash", "COUNT", "1000"],
        )?;
        let Frame::Array(parts) = r else { break };
        let [next, Frame::Array(keys)] = parts.as_slice() else {
            break;
        };
        scanned += keys.len().max(1);
        for k in keys {
            let key = text(k);
            let Frame::Array(flat) = call(c, &["HGETALL", key.as_str()])? else {
                continue;
            };
            let fields: Vec<(Vec<u8>, Vec<u8>)> = flat
                .chunks(2)
                .filter(|p| p.len() == 2)
                .map(|p| (text(&p[0]).into_bytes(), text(&p[1]).into_bytes()))
                .collect();
            let pttl = int(&call(c, &["PTTL", key.as_str()])?).unwrap_or(-2);
            let Some(lock) = redisson::recognise(&fields, pttl) else {
                continue;
            };
            let queue = int(&call(c, &["LLEN", &redisson::fair_queue_for(&key)])?).unwrap_or(0);
            let subs = match call(c, &["PUBSUB", "NUMSUB", &redisson::channel_for(&key)])? {
                Frame::Array(a) if a.len() == 2 => int(&a[1]).unwrap_or(0),
                _ => 0,
            };
            let kind = match (lock.kind, queue > 0) {
                (RedissonKind::Lock, true) => "redisson fair lock".to_string(),
                (RedissonKind::Lock, false) => "redisson lock".to_string(),
                (RedissonKind::ReadWrite { write }, _) => {
                    format!("redisson rwlock ({})", if write { "write" } else { "read" })
                }
            };
            rows.push(Row {
                key,
                kind,
                holders: lock
                    .holders
                    .iter()
                    .map(|h| HolderView {
                        owner: h.owner.clone(),
                        holds: if h.write {
                            format!("w{}", h.holds)
                        } else {
                            h.holds.to_string()
                        },
                        token: None,
                        ttl_ms: lock.ttl_ms,
                    })
                    .collect(),
                waiters: queue.max(subs),
            });
            if rows.len() >= MAX_LOCKS {
                return Ok(rows);
            }
        }
        cursor = text(next);
        if cursor == "0" || scanned >= MAX_SCANNED {
            break;
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, holders: usize, waiters: i64) -> Row {
        Row {
            key: key.into(),
            kind: "lock".into(),
            holders: (0..holders)
                .map(|i| HolderView {
                    owner: format!("o{i}"),
                    holds: "1".into(),
                    token: Some(i as i64),
                    ttl_ms: 1000 + i as i64,
                })
                .collect(),
            waiters,
        }
    }

    #[test]
    fn most_contended_first() {
        let mut rows = vec![
            row("a", 1, 0),
            row("b", 1, 3),
            row("c", 2, 0),
            row("d", 1, 3),
        ];
        sort_by_contention(&mut rows);
        let keys: Vec<_> = rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["b", "d", "c", "a"]);
        assert_eq!(rows[2].ttl_ms(), 1000);
    }
}
