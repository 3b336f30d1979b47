//! DUMP/RESTORE of streams: redis-server 7.0's payloads (RDB type 19) of a variety of
//! streams RESTOREd on Tumbler read back the same as on redis-server (XINFO STREAM FULL,
//! XRANGE, XPENDING, XINFO GROUPS); the legacy type 15 payload of Redis' Tcl suite; and
//! corrupted payloads are refused with Redis' error, never a crash.

use tumbler_tests::bulk_payload as bulk;
use tumbler_tests::{Raw, RedisServer, Tumbler};

fn run(r: &mut Raw, line: &str) {
    let args: Vec<&str> = line.split_whitespace().collect();
    let reply = r.cmd(&args);
    assert!(
        reply[0] != b'-',
        "{line}: {}",
        String::from_utf8_lossy(&reply)
    );
}

/// Commands building streams of every shape redis-server serializes differently.
fn streams(r: &mut Raw) -> Vec<&'static str> {
    run(r, "CONFIG SET stream-node-max-entries 5");
    // Empty stream (created by a group), and one emptied by XDEL.
    run(r, "XGROUP CREATE empty g $ MKSTREAM");
    run(r, "XADD emptied 1-1 a 1");
    run(r, "XDEL emptied 1-1");
    // Several nodes, same and different fields, integers and strings, deletions, trims.
    for i in 1..=23 {
        if i % 3 == 0 {
            run(r, &format!("XADD multi {i}-{i} other x{i} f {i}"));
        } else {
            run(
                r,
                &format!("XADD multi {i}-0 f {} g -{}", i * 1000, i * 77777),
            );
        }
    }
    run(r, "XDEL multi 2-0 7-0 8-0 9-9 20-0");
    run(r, "XTRIM multi MAXLEN ~ 12");
    run(r, "XADD trimmed 5-1 k v");
    run(r, "XADD trimmed 5-2 k w");
    run(r, "XADD trimmed 6-0 k x");
    run(r, "XTRIM trimmed MINID 5-2");
    run(r, "XSETID trimmed 10-0 ENTRIESADDED 9 MAXDELETEDID 7-0");
    let big = "y".repeat(300);
    run(r, &format!("XADD bigvals 1-0 a {big} b 123456789012"));
    // Groups with PEL and consumers.
    for i in 1..=12 {
        run(r, &format!("XADD cg {i}-0 n {i}"));
    }
    run(r, "XGROUP CREATE cg g1 0");
    run(r, "XGROUP CREATE cg g2 5-0");
    run(r, "XGROUP CREATE cg g3 $");
    run(r, "XREADGROUP GROUP g1 alice COUNT 3 STREAMS cg >");
    run(r, "XREADGROUP GROUP g1 bob COUNT 2 STREAMS cg >");
    run(r, "XREADGROUP GROUP g1 carol COUNT 2 STREAMS cg 0");
    run(r, "XREADGROUP GROUP g2 alice STREAMS cg >");
    run(r, "XACK cg g1 2-0");
    run(r, "XCLAIM cg g1 bob 0 1-0");
    run(r, "XCLAIM cg g1 bob 0 3-0");
    run(r, "XDEL cg 4-0 11-0");
    run(r, "XGROUP CREATECONSUMER cg g2 idle");
    // Several nodes, groups and a PEL, but no deleted entries.
    for i in 1..=12 {
        let f = if i % 4 == 0 { "other" } else { "f" };
        run(
            r,
            &format!("XADD clean {i}-{} {f} v{i} n {}", i % 3, i * 99999),
        );
    }
    run(r, "XGROUP CREATE clean grp 0");
    run(r, "XREADGROUP GROUP grp c1 COUNT 4 STREAMS clean >");
    run(r, "XREADGROUP GROUP grp c2 COUNT 4 STREAMS clean >");
    vec![
        "empty", "emptied", "multi", "trimmed", "bigvals", "cg", "clean",
    ]
}

fn same(t: &mut Raw, r: &mut Raw, args: &[&str]) {
    let (a, b) = (t.cmd(args), r.cmd(args));
    assert_eq!(
        String::from_utf8_lossy(&a),
        String::from_utf8_lossy(&b),
        "{args:?} differs (left tumbler, right redis-server)"
    );
}

#[test]
fn redis_stream_payloads_restore_identically() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let tumbler = Tumbler::like(&redis, &[]);
    let (mut r, mut t) = (redis.raw(), tumbler.raw());
    run(&mut t, "CONFIG SET stream-node-max-entries 5");
    for key in streams(&mut r) {
        let payload = bulk(&r.cmd(&["DUMP", key]));
        assert_eq!(payload[0], 19, "{key}: type");
        let reply = t.cmd(&[b"RESTORE".as_ref(), key.as_bytes(), b"0", &payload]);
        assert_eq!(&reply[..], b"+OK\r\n", "{key}");
        same(&mut t, &mut r, &["XINFO", "STREAM", key, "FULL"]);
        same(&mut t, &mut r, &["XRANGE", key, "-", "+"]);
        same(&mut t, &mut r, &["XREVRANGE", key, "+", "-", "COUNT", "3"]);
        same(&mut t, &mut r, &["XLEN", key]);
        same(&mut t, &mut r, &["TYPE", key]);
        for g in ["g", "g1", "g2", "g3"] {
            same(&mut t, &mut r, &["XPENDING", key, g]);
        }
        // Both keep working the same after the round trip.
        same(&mut t, &mut r, &["XADD", key, "99999-1", "z", "1"]);
        same(&mut t, &mut r, &["XLEN", key]);
        same(&mut t, &mut r, &["XINFO", "STREAM", key]);
    }
    // The same stream sent again and the two groups read on: PEL and counters agree.
    let payload = bulk(&r.cmd(&["DUMP", "cg"]));
    r.cmd(&["DEL", "cg"]);
    for s in [&mut t, &mut r] {
        s.cmd(&[b"RESTORE".as_ref(), b"cg2", b"0", &payload]);
    }
    same(
        &mut t,
        &mut r,
        &["XREADGROUP", "GROUP", "g2", "bob", "STREAMS", "cg2", ">"],
    );
    same(&mut t, &mut r, &["XACK", "cg2", "g1", "1-0", "5-0", "6-0"]);
    // (Summaries only: the extended form's idle times depend on the clock.)
    same(&mut t, &mut r, &["XPENDING", "cg2", "g1"]);
    same(&mut t, &mut r, &["XPENDING", "cg2", "g2"]);
    same(&mut t, &mut r, &["XINFO", "GROUPS", "cg2"]);
}

/// The payload of Redis' "Loading from legacy (Redis <= v6.2.x, rdb_ver < 10) persistence"
/// test: RDB type 15, DUMPed by Redis 5.
const LEGACY: &[u8] = b"\x0F\x01\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\xC3\x40\x4A\x40\x57\x16\x57\x00\x00\x00\x23\x00\x02\x01\x04\x01\x01\x01\x84\x64\x61\x74\x61\x05\x00\x01\x03\x01\x00\x20\x01\x03\x81\x61\x02\x04\x20\x0A\x00\x01\x40\x0A\x00\x62\x60\x0A\x00\x02\x40\x0A\x00\x63\x60\x0A\x40\x22\x01\x81\x64\x20\x0A\x40\x39\x20\x0A\x00\x65\x60\x0A\x00\x05\x40\x0A\x00\x66\x20\x0A\x00\xFF\x02\x06\x00\x02\x02\x67\x31\x05\x00\x04\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x01\x03\x63\x31\x31\x3E\xF7\x83\x43\x7A\x01\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x02\x67\x32\x00\x00\x00\x00\x09\x00\x3D\x52\xEF\x68\x67\x52\x1D\xFA";

#[test]
fn legacy_type_15_payload_restores_as_on_redis() {
    let tumbler = Tumbler::start();
    let mut t = tumbler.raw();
    assert_eq!(
        &t.cmd(&[b"RESTORE".as_ref(), b"x", b"0", LEGACY])[..],
        b"+OK\r\n"
    );
    let full = t.cmd_str(&["XINFO", "STREAM", "x", "FULL"]);
    assert!(full.contains("max-deleted-entry-id\r\n$3\r\n0-0"), "{full}");
    assert!(full.contains("entries-added\r\n:2"), "{full}");
    assert!(
        full.contains("entries-read\r\n:1\r\n$3\r\nlag\r\n:1"),
        "{full}"
    );
    assert!(
        full.contains("entries-read\r\n:0\r\n$3\r\nlag\r\n:2"),
        "{full}"
    );
    if let Some(redis) = RedisServer::start() {
        let mut r = redis.raw();
        r.cmd(&[b"RESTORE".as_ref(), b"x", b"0", LEGACY]);
        for args in [
            &["XINFO", "STREAM", "x", "FULL"][..],
            &["XRANGE", "x", "-", "+"],
            &["XPENDING", "x", "g1"],
            &["XINFO", "GROUPS", "x"],
        ] {
            same(&mut t, &mut r, args);
        }
    }
}

/// Every truncation and many single-byte corruptions of a stream payload (with the CRC
/// recomputed so the body is parsed) are answered, never crash the server.
#[test]
fn corrupt_stream_payloads_are_refused_not_fatal() {
    let tumbler = Tumbler::start();
    let mut t = tumbler.raw();
    let mut body = LEGACY[..LEGACY.len() - 8].to_vec();
    body.truncate(body.len() - 2);
    let seal = |b: &[u8]| {
        let mut p = b.to_vec();
        p.extend_from_slice(&10u16.to_le_bytes());
        let crc = lockcore::storage::rdb::crc64(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        p
    };
    let mut refused = 0;
    for cut in 1..body.len() {
        let reply = t.cmd(&[
            b"RESTORE".as_ref(),
            b"c",
            b"0",
            &seal(&body[..cut]),
            b"REPLACE",
        ]);
        assert!(reply.starts_with(b"-ERR Bad data format"), "cut {cut}");
        refused += 1;
    }
    for i in 0..body.len() {
        for x in [0x01u8, 0x80, 0xff] {
            let mut b = body.clone();
            b[i] ^= x;
            let reply = t.cmd(&[b"RESTORE".as_ref(), b"c", b"0", &seal(&b), b"REPLACE"]);
            assert!(reply[0] == b'+' || reply.starts_with(b"-ERR Bad data format"));
            if reply[0] == b'+' {
                // Whatever was accepted reads back without trouble.
                t.cmd(&["XINFO", "STREAM", "c", "FULL"]);
                t.cmd(&["XRANGE", "c", "-", "+"]);
            }
        }
    }
    assert!(refused > 100);
    assert_eq!(&t.cmd(&["PING"])[..], b"+PONG\r\n");
}

/// Tumbler's DUMP of the same streams (received from redis-server, so that the times in
/// PELs and consumers are the same) RESTOREs on redis-server and reads back as the
/// original; streams without deleted entries inside their nodes come out byte for byte as
/// redis-server's payload (Tumbler keeps no tombstones, so it writes none).
#[test]
fn tumbler_stream_payloads_restore_on_redis() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let tumbler = Tumbler::like(&redis, &[]);
    let (mut r, mut t) = (redis.raw(), tumbler.raw());
    let keys = streams(&mut r);
    for key in keys {
        let theirs = bulk(&r.cmd(&["DUMP", key]));
        let reply = t.cmd(&[b"RESTORE".as_ref(), key.as_bytes(), b"0", &theirs]);
        assert_eq!(&reply[..], b"+OK\r\n", "{key}");
        let payload = bulk(&t.cmd(&["DUMP", key]));
        assert_eq!(payload[0], 19, "{key}: type");
        let copy = format!("{key}-copy");
        let reply = r.cmd(&[b"RESTORE".as_ref(), copy.as_bytes(), b"0", &payload]);
        assert_eq!(&reply[..], b"+OK\r\n", "{key}");
        // The copy on redis-server reads as the original on redis-server.
        for args in [
            &["XINFO", "STREAM", "K", "FULL"][..],
            &["XRANGE", "K", "-", "+"],
            &["XPENDING", "K", "g1"],
        ] {
            let a: Vec<&str> = args
                .iter()
                .map(|x| if *x == "K" { key } else { x })
                .collect();
            let b: Vec<&str> = args
                .iter()
                .map(|x| if *x == "K" { copy.as_str() } else { x })
                .collect();
            let (x, y) = (r.cmd(&a), r.cmd(&b));
            assert_eq!(
                String::from_utf8_lossy(&x),
                String::from_utf8_lossy(&y).replace(&copy, key),
                "{key}: {args:?} (left original, right Tumbler's payload)"
            );
        }
        if ["empty", "emptied", "bigvals", "clean"].contains(&key) {
            assert_eq!(
                payload, theirs,
                "{key}: payload differs from redis-server's"
            );
        }
    }
}

/// DEBUG RELOAD takes streams through the RDB path: each reads back the same (digest,
/// XINFO STREAM FULL), and node fullness survives (the next XADDs land in the same nodes
/// as on redis-server, whose reload keeps tombstones).
#[test]
fn debug_reload_keeps_streams() {
    // DEBUG RELOAD writes dump.rdb (Redis' and Tumbler's alike): directories of their own.
    let dir = std::env::temp_dir().join(format!("tumbler-stream-reload-{}", std::process::id()));
    let tdir = dir.join("tumbler");
    std::fs::create_dir_all(&tdir).unwrap();
    let tumbler = Tumbler::start_with(&[("dir", tdir.to_str().unwrap())]);
    let mut t = tumbler.raw();
    let keys = streams(&mut t);
    let before: Vec<(Vec<u8>, Vec<u8>)> = keys
        .iter()
        .map(|k| {
            let d = t.cmd(&["DEBUG", "DIGEST-VALUE", k]).to_vec();
            assert!(d[0] == b'*', "{}", String::from_utf8_lossy(&d));
            (d, t.cmd(&["XINFO", "STREAM", k, "FULL"]).to_vec())
        })
        .collect();
    assert_eq!(&t.cmd(&["DEBUG", "RELOAD"])[..], b"+OK\r\n");
    for (k, (d, full)) in keys.iter().zip(&before) {
        assert_eq!(&t.cmd(&["DEBUG", "DIGEST-VALUE", k])[..], &d[..], "{k}");
        assert_eq!(
            String::from_utf8_lossy(&t.cmd(&["XINFO", "STREAM", k, "FULL"])),
            String::from_utf8_lossy(full),
            "{k}"
        );
    }
    let dir_arg = dir.to_str().unwrap().to_string();
    let redis = RedisServer::start_with(&["--enable-debug-command", "yes", "--dir", &dir_arg]);
    if let Some(redis) = redis {
        let mut r = redis.raw();
        streams(&mut r);
        assert_eq!(&r.cmd(&["DEBUG", "RELOAD"])[..], b"+OK\r\n");
        for i in 1..=4 {
            let id = format!("1000-{i}");
            same(&mut t, &mut r, &["XADD", "multi", &id, "f", "1"]);
            same(&mut t, &mut r, &["XADD", "cg", &id, "n", "1"]);
        }
        same(&mut t, &mut r, &["XTRIM", "multi", "MAXLEN", "~", "3"]);
        same(&mut t, &mut r, &["XTRIM", "cg", "MAXLEN", "~", "3"]);
        same(&mut t, &mut r, &["XINFO", "STREAM", "multi"]);
        same(&mut t, &mut r, &["XINFO", "STREAM", "cg"]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
