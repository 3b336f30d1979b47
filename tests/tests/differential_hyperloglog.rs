//! Differential tests for HyperLogLog against a real redis-server: the HLL string itself
//! (sparse, after splits and merges, promoted to dense, cached cardinality bytes) must be
//! byte-for-byte Redis', so that values move between the two servers.

use tumbler_tests::{diff_against_redis as run, RedisServer, Tumbler};

#[test]
fn sparse_dense_and_counts() {
    let mut script = String::from(
        "PFADD h\nGET h\nPFCOUNT h\nGET h\nPFADD h a b c d e\nGET h\nPFCOUNT h\nGET h\n\
         PFADD h a\nPFCOUNT h\nPFDEBUG ENCODING h\n",
    );
    // Enough elements to split and merge many runs, then promote past 3000 bytes.
    for i in 0..40 {
        let els: String = (0..50).map(|j| format!(" e{}", i * 50 + j)).collect();
        script.push_str(&format!("PFADD h{els}\nPFCOUNT h\n"));
        if i % 8 == 0 {
            script.push_str("GET h\nSTRLEN h\nPFDEBUG ENCODING h\n");
        }
    }
    script.push_str(
        "GET h\nPFADD other x y z\nPFCOUNT h other\nPFMERGE m other\nGET m\nPFMERGE m h\n\
         GET m\nPFCOUNT m\nPFMERGE h2 nosuch\nGET h2\nPFCOUNT nosuch1 nosuch2\n",
    );
    run(&script);
}

#[test]
fn errors_and_corruption() {
    run(r#"
        SET s notanhll
        PFADD s a
        PFCOUNT s
        PFCOUNT s nosuch
        PFMERGE d s
        SET n 123
        PFADD n a
        HSET hash f v
        PFADD hash a
        PFCOUNT hash
        PFMERGE hash
        PFADD h a b c
        SETRANGE h 4 "\x05"
        PFADD h d
        PFCOUNT h
        PFADD g a b c
        SETRANGE g 17 "\xff\xff\xff"
        PFCOUNT g
        PFADD g zz
        PFDEBUG ENCODING nosuch
        PFDEBUG FOO g
        PFADD dense x
        PFDEBUG TODENSE dense
        PFDEBUG TODENSE dense
        PFDEBUG ENCODING dense
        PFDEBUG DECODE dense
        STRLEN dense
        PFCOUNT dense
        PFADD sp a b c
        PFDEBUG DECODE sp
    "#);
}

/// An HLL made by redis-server counts and grows the same on tumbler, and the reverse.
#[test]
fn values_move_between_servers() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let (mut rt, mut rr) = (t.raw(), redis.raw());
    let els: Vec<String> = (0..3000).map(|i| format!("m{i}")).collect();
    let mut args = vec!["PFADD".to_string(), "k".into()];
    args.extend(els.iter().cloned());
    rr.cmd(&args);
    let dumped = rr.cmd(&["GET", "k"]);
    let value = &dumped[dumped.iter().position(|&b| b == b'\n').unwrap() + 1..dumped.len() - 2];
    rt.cmd(&[b"SET".as_slice(), b"k", value]);
    for cmd in [
        vec!["PFCOUNT", "k"],
        vec!["PFADD", "k", "new1", "new2"],
        vec!["GET", "k"],
    ] {
        assert_eq!(rt.cmd(&cmd), rr.cmd(&cmd), "{cmd:?}");
    }
}
