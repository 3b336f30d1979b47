//! Streams under concurrency, over TCP: consumers blocked in XREADGROUP on one group while
//! producers XADD from other connections. Every entry must reach exactly one consumer
//! (XREADGROUP's delivery and the PEL update are one atomic step), plain XREAD readers must
//! each see every entry in order, and the group ends with nothing pending.

use std::collections::BTreeSet;
use std::thread;
use tumbler_tests::fuzz::{parse, Resp};
use tumbler_tests::Tumbler;

const ENTRIES: usize = 2000;
const CONSUMERS: usize = 4;
const PRODUCERS: usize = 3;

/// The `(id, fields)` pairs of an XREAD/XREADGROUP reply (RESP2), or none for a null.
fn entries(reply: &[u8]) -> Vec<(String, Vec<String>)> {
    let (r, _) = parse(reply).expect("valid RESP").expect("complete reply");
    if matches!(r, Resp::NilArray) {
        return vec![];
    }
    let s = |r: &Resp| match r {
        Resp::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("expected a bulk string, got {}", other.show()),
    };
    let mut out = vec![];
    for stream in r.items() {
        for e in stream.items()[1].items() {
            let it = e.items();
            out.push((s(&it[0]), it[1].items().iter().map(s).collect()));
        }
    }
    out
}

#[test]
fn blocked_consumers_each_get_distinct_entries() {
    let t = Tumbler::start();
    let mut admin = t.raw();
    admin.cmd(&["XGROUP", "CREATE", "q", "g", "$", "MKSTREAM"]);

    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|c| {
            let mut conn = t.raw();
            thread::spawn(move || {
                let name = format!("c{c}");
                let mut got = vec![];
                loop {
                    let r = conn.cmd(&[
                        "XREADGROUP",
                        "GROUP",
                        "g",
                        &name,
                        "COUNT",
                        "3",
                        "BLOCK",
                        "10000",
                        "STREAMS",
                        "q",
                        ">",
                    ]);
                    let batch = entries(&r);
                    assert!(!batch.is_empty(), "{name} timed out waiting for entries");
                    let mut stop = false;
                    for (id, fields) in batch {
                        assert_eq!(conn.cmd_str(&["XACK", "q", "g", &id]), ":1\r\n");
                        if fields[0] == "stop" {
                            stop = true;
                        } else {
                            got.push(fields[1].clone());
                        }
                    }
                    if stop {
                        return got;
                    }
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let mut conn = t.raw();
            thread::spawn(move || {
                let mut last = "0-0".to_string();
                let mut got = vec![];
                while got.len() < ENTRIES {
                    let r = conn.cmd(&["XREAD", "BLOCK", "10000", "STREAMS", "q", &last]);
                    let batch = entries(&r);
                    assert!(!batch.is_empty(), "XREAD timed out");
                    for (id, fields) in batch {
                        last = id;
                        if fields[0] == "n" {
                            got.push(fields[1].clone());
                        }
                    }
                }
                got
            })
        })
        .collect();

    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let mut conn = t.raw();
            thread::spawn(move || {
                for i in (p..ENTRIES).step_by(PRODUCERS) {
                    let r = conn.cmd_str(&["XADD", "q", "*", "n", &i.to_string()]);
                    assert!(r.starts_with('$'), "XADD failed: {r}");
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    // One consumer may take several stop entries in one batch: keep adding them until
    // every consumer has seen one (bounded).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut stops = 0;
    while !consumers.iter().all(|c| c.is_finished()) {
        assert!(
            std::time::Instant::now() < deadline,
            "consumers did not stop"
        );
        admin.cmd(&["XADD", "q", "*", "stop", "1"]);
        stops += 1;
        thread::sleep(std::time::Duration::from_millis(5));
    }

    let mut all = vec![];
    for c in consumers {
        all.extend(c.join().unwrap());
    }
    let distinct: BTreeSet<&String> = all.iter().collect();
    assert_eq!(
        all.len(),
        ENTRIES,
        "some entries were delivered twice or lost"
    );
    assert_eq!(distinct.len(), ENTRIES);
    for r in readers {
        let got = r.join().unwrap();
        let distinct: BTreeSet<&String> = got.iter().collect();
        assert_eq!(
            distinct.len(),
            ENTRIES,
            "an XREAD reader missed or repeated entries"
        );
    }
    // Everything delivered was acknowledged; stop entries nobody took stay unread.
    assert_eq!(
        admin.cmd_str(&["XPENDING", "q", "g"]),
        "*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n"
    );
    assert_eq!(
        admin.cmd_str(&["XLEN", "q"]),
        format!(":{}\r\n", ENTRIES + stops)
    );
}
