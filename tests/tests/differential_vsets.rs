//! Vector sets (Redis 8.0): the same commands to tumbler (personality redis-8.0) and to
//! redis8-server 8.0.2, replies compared byte for byte, in RESP2 and RESP3.
//!
//! What depends on Redis' HNSW graph (VLINKS' neighbours, VINFO's max-level, VRANDMEMBER's
//! picks) or on its process (VINFO's vset-uid counts every set the process made) is checked
//! for shape, not bytes (lockcore/src/storage/vset.rs says why). Test vectors avoid equal
//! distances, whose order in Redis follows the graph walk.

use bytes::Bytes;
use tumbler_tests::{diff_against, diff_script, Raw, RedisServer, Tumbler};

const REF: &str = "redis8-server";

/// Both servers, tumbler in the redis-8.0 personality.
fn pair() -> Option<(Tumbler, RedisServer)> {
    let r = RedisServer::start_bin(REF, &[])?;
    let t = Tumbler::like(&r, &[]);
    Some((t, r))
}

fn same(t: &mut Raw, r: &mut Raw, args: &[Vec<u8>]) -> Bytes {
    let a = t.cmd(args);
    let b = r.cmd(args);
    let shown: Vec<String> = args
        .iter()
        .map(|x| String::from_utf8_lossy(x).into_owned())
        .collect();
    assert_eq!(
        String::from_utf8_lossy(&a),
        String::from_utf8_lossy(&b),
        "{shown:?}: tumbler (left) and redis8 (right) disagree"
    );
    a
}

fn args(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// A deterministic pseudo-random sequence in -1..1.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f64 / (1u64 << 24) as f64 * 2.0 - 1.0) as f32
    }
}

const BASICS: &str = r#"
    VADD k VALUES 3 1 2 3 a
    VADD k VALUES 3 1 2 4 b M 16
    VADD k values 3 1 0 0 c SETATTR '{"x":1}' EF 100
    VADD k VALUES 3 1 2 3 a
    VADD k VALUES 3 -1 5 2 a CAS
    VSIM k VALUES 3 1 2 3 WITHSCORES
    VSIM k VALUES 3 1 2 3
    VSIM k ELE c WITHSCORES COUNT 2
    VSIM k ELE a WITHSCORES EPSILON 0.1
    VSIM k ELE a WITHSCORES EPSILON 0.5 TRUTH NOTHREAD EF 5 FILTER-EF 3
    VSIM k ELE c WITHSCORES FILTER '.x == 1'
    VSIM nokey ELE c WITHSCORES
    VEMB k a
    VEMB k c
    VEMB k a RAW
    VEMB k c raw
    VEMB k nope
    VEMB nokey a
    VCARD k
    VCARD nokey
    VDIM k
    VISMEMBER k a
    VISMEMBER k zz
    VISMEMBER nokey a
    VGETATTR k c
    VGETATTR k a
    VGETATTR nokey a
    VSETATTR k a '{"y":"s"}'
    VGETATTR k a
    VSETATTR k zz '{}'
    VSETATTR nokey a '{}'
    VSETATTR k a ''
    VGETATTR k a
    VADD k VALUES 3 1 2 3 a SETATTR '{"z":2}'
    VGETATTR k a
    VADD k VALUES 3 1 2 3 a SETATTR ''
    VGETATTR k a
    VADD k VALUES 3 9 9 1 new SETATTR ''
    VGETATTR k new
    TYPE k
    OBJECT ENCODING k
    VINFO nokey
    VLINKS nokey a
    VLINKS k nope
    VRANDMEMBER nokey
    VRANDMEMBER nokey 3
    VRANDMEMBER nokey 0
    VRANDMEMBER k 0
    VREM k a
    VREM k a
    VREM k zz
    VREM nokey a
    VCARD k
    VREM k b
    VREM k c
    VREM k new
    EXISTS k
    VCARD k
    SET s v
    VADD s VALUES 1 1 a
    VSIM s ELE a
    VCARD s
    VDIM s
    VEMB s a
    VREM s a
    VINFO s
    VLINKS s a
    VRANDMEMBER s
    VGETATTR s a
    VSETATTR s a b
    VISMEMBER s a
    VADD v VALUES 2 1 1 a
    LPUSH v x
    GET v
    SADD v x
    COPY v v2
    COPY v v2 REPLACE
    SET v2 x
    COPY v v2
    COPY v v2 REPLACE
    GET v2
    COPY nokey v2
    RENAME v v3
    VCARD v
    VEMB v3 a
    EXPIRE v3 100
    VCARD v3
    PERSIST v3
    MOVE v3 2
    EXISTS v3
    SELECT 2
    VCARD v3
    SELECT 0
    DEL v3 v
    EXISTS v3 v
    COMMAND INFO vadd vsim vcard vrem vemb vsetattr vismember vrandmember vlinks vinfo vdim vgetattr
    COMMAND DOCS vadd
    COMMAND DOCS vsim vcard
    COMMAND LIST FILTERBY PATTERN vadd
    COMMAND LIST FILTERBY PATTERN VSI*
    COMMAND LIST FILTERBY MODULE nosuchmodule
    COMMAND GETKEYS VADD k VALUES 1 1 a
    COMMAND GETKEYS VSIM k ELE a
    ACL SETUSER u2 on nopass ~* +@all -@write
    ACL DRYRUN u2 VADD k VALUES 1 1 a
    ACL DRYRUN u2 VCARD k
    ACL DELUSER u2
"#;

#[test]
fn commands_and_replies_resp2() {
    diff_against(REF, BASICS);
}

#[test]
fn commands_and_replies_resp3() {
    let Some((t, r)) = pair() else { return };
    let (mut a, mut b) = (t.raw(), r.raw());
    a.cmd(&["HELLO", "3"]);
    b.cmd(&["HELLO", "3"]);
    diff_script(&mut a, &mut b, BASICS);
}

/// Every quantisation: VEMB's de-quantised values, RAW blobs, norms and ranges, and VSIM
/// scores, zero vectors included.
#[test]
fn quantisations() {
    diff_against(
        REF,
        r#"
        VADD n VALUES 4 0.1 -0.5 3.25 7 a NOQUANT
        VADD n VALUES 4 -1 2 -3 4 b NOQUANT
        VADD n VALUES 4 0 0 0 0 z NOQUANT
        VADD n VALUES 4 1e-7 2e-7 3e-7 1e-6 tiny NOQUANT
        VADD n VALUES 4 123456789 1 2 3 big NOQUANT
        VEMB n a
        VEMB n b
        VEMB n z
        VEMB n tiny
        VEMB n big
        VEMB n a RAW
        VEMB n z RAW
        VSIM n ELE a WITHSCORES
        VSIM n ELE b WITHSCORES COUNT 3
        VSIM n VALUES 4 1 1 1 1 WITHSCORES
        VADD q VALUES 4 0.1 -0.5 3.25 7 a
        VADD q VALUES 4 -1 2 -3 4 b Q8
        VADD q VALUES 4 0 0 0 0 z
        VADD q VALUES 4 1e-7 2e-7 3e-7 1e-6 tiny
        VEMB q a
        VEMB q b
        VEMB q z
        VEMB q tiny
        VEMB q a RAW
        VEMB q z RAW
        VSIM q ELE a WITHSCORES COUNT 2
        VSIM q ELE b WITHSCORES COUNT 2
        VSIM q VALUES 4 5 -3 1 2 WITHSCORES COUNT 2
        VADD b VALUES 5 0.1 -0.5 3.25 7 0 a BIN
        VADD b VALUES 5 1 1 -1 -1 -1 b BIN
        VADD b VALUES 5 1 -1 1 1 1 c BIN
        VEMB b a
        VEMB b a RAW
        VEMB b c RAW
        VSIM b ELE a WITHSCORES
        VSIM b VALUES 5 1 2 3 4 5 WITHSCORES
        VADD b VALUES 5 1 1 1 1 1 d
        VADD b VALUES 5 1 1 1 1 1 d NOQUANT
        VADD b VALUES 5 1 1 1 1 1 d Q8
        VADD n VALUES 4 1 1 1 1 d
        VADD q VALUES 4 1 1 1 1 d BIN
        VADD w VALUES 70 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 -1 1 1 a BIN
        VEMB w a RAW
        VADD e VALUES 2 1e39 1 a NOQUANT
        VEMB e a
    "#,
    );
}

#[test]
fn errors_and_arities() {
    diff_against(
        REF,
        r#"
        VADD e VALUES 2 1 1 a M 3
        VADD e VALUES 2 1 1 a M 4
        VADD e2 VALUES 2 1 1 a M 4096
        VADD e3 VALUES 2 1 1 a M 4097
        VADD e3 VALUES 2 1 1 a M x
        VADD e VALUES 2 1 1 b M 5
        VADD e VALUES 2 1 1 b
        VADD e VALUES 2 1 1 b EF 0
        VADD e VALUES 2 1 1 b EF 1000001
        VADD e VALUES 2 1 2 b EF 1000000 M 4
        VADD e VALUES 2 1 1 b foo
        VADD e VALUES 2 1 1 b EF
        VADD e VALUES 2 1 1 b SETATTR
        VADD e VALUES 2 1 1 b M
        VADD e VALUES 3 1 1 1 c M 4
        VADD e VALUES 2 1 1
        VADD e VALUES 2 1 x a
        VADD e FP32 abc a
        VADD e FP32 "" a
        VADD e REDUCE 0 VALUES 2 1 1 a
        VADD e REDUCE -1 VALUES 2 1 1 a
        VADD e REDUCE x VALUES 2 1 1 a
        VADD e REDUCE 1 VALUES 2 1 1 a M 4
        VADD e VALUES 0 a
        VADD e VALUES -1 a
        VADD e VALUES 70000 a
        VADD e VALUES 2 1 1 a NOQUANT M 4
        VADD e VALUES 2 1 1 a BIN M 4
        VADD e VALUES 2 1 1 a Q8 M 4 CAS
        VADD e VALUES 2 1 1 a q8 m 4 cas ef 5 setattr '{"a":1}'
        VGETATTR e a
        VADD e
        VADD
        VADD e a b c
        VADD e a b c d
        VADD e VALUES 2 inf 1 z M 4
        VADD e VALUES 2 nan 1 z M 4
        VSIM e
        VSIM
        VSIM e ELE
        VSIM e ELE zz
        VSIM e foo 1
        VSIM e VALUES 3 1 1 1
        VSIM e VALUES 2 1 1 COUNT 0
        VSIM e VALUES 2 1 1 COUNT -1
        VSIM e VALUES 2 1 1 COUNT x
        VSIM e VALUES 2 1 1 EPSILON 0
        VSIM e VALUES 2 1 1 EPSILON -1
        VSIM e VALUES 2 1 1 EPSILON x
        VSIM e VALUES 2 1 1 EF 0
        VSIM e VALUES 2 1 1 EF 1000001
        VSIM e VALUES 2 1 1 FILTER-EF 0
        VSIM e VALUES 2 1 1 FILTER-EF x
        VSIM e VALUES 2 1 1 bogus
        VSIM e VALUES 2 1 1 COUNT
        VSIM e VALUES 2 1 1 FILTER
        VSIM e VALUES 2 1 1 WITHATTRIBS
        VSIM e VALUES 2 1 1 TRUTH NOTHREAD COUNT 5 EF 7 FILTER-EF 9 WITHSCORES
        VSIM nokey VALUES 2 1 1 bogus
        VSIM e VALUES x 1 1
        VSIM e VALUES 2 1 y
        VSIM e VALUES 2 1
        VSIM e FP32 abc
        VSIM e REDUCE 2 VALUES 2 1 1
        VCARD
        VCARD e x
        VDIM nokey
        VDIM
        VEMB e a foo
        VEMB e a raw RAW
        VEMB e
        VLINKS e a foo
        VLINKS e
        VLINKS e a b c
        VRANDMEMBER e x
        VRANDMEMBER e 1 2
        VRANDMEMBER
        VINFO
        VINFO e x
        VGETATTR e
        VSETATTR e a
        VSETATTR e a b c
        VREM e
        VREM e a b
        VISMEMBER e
        VISMEMBER e a b
    "#,
    );
}

/// FILTER: a table of expressions over attributes of every kind, and the errors.
#[test]
fn filter_expressions() {
    let attrs: &[(&str, Option<&str>)] = &[
        (
            "a",
            Some(
                r#"{"year": 1984, "name": "The Matrix", "rating": 8.7, "tags": ["sci-fi", "action"], "n": null, "t": true, "f": false}"#,
            ),
        ),
        (
            "b",
            Some(
                r#"{"year": 1999, "name": "Matrix 2", "rating": 7, "tags": [1, 2, 3], "s": "10", "e": ""}"#,
            ),
        ),
        (
            "c",
            Some(
                r#"{"year": "2001", "name": "it's", "esc": "a\"b", "nl": "x\ny", "obj": {"k": 1}, "arr": [[1], 2]}"#,
            ),
        ),
        ("d", Some(r#"{"x":1, bad"#)),
        ("e", Some("[1, 2]")),
        ("f", Some("not json")),
        (
            "g",
            Some(r#"  {  "year"  :  2020  ,  "rating" : -1.5e1 }  "#),
        ),
        ("h", Some(r#"{"year":1e3,"name":"+5","t":trueish}"#)),
        ("i", Some(r#"{"dup":1,"dup":2}"#)),
        ("j", None),
    ];
    let filters = [
        ".year > 1990",
        ".year >= 1984",
        ".year < 2000 and .rating > 8",
        ".year == 1999 or .year == 2020",
        ".name == \"The Matrix\"",
        ".name == 'The Matrix'",
        ".name != \"The Matrix\"",
        "\"sci-fi\" in .tags",
        "2 in .tags",
        ".year in [1984, 1999]",
        ".name in [\"Matrix 2\", \"x\"]",
        "!.t",
        "not .f",
        ".t",
        ".f",
        ".n",
        "!.n",
        ".n == 0",
        ".s == 10",
        ".s == \"10\"",
        ".s + 1 == 11",
        ".e",
        "!.e",
        ".rating * 2 > 15",
        ".rating / 2 < 4",
        ".year % 100 == 84",
        "2 ** 3 ** 2 == 512",
        "(2 ** 3) ** 2 == 64",
        "-.rating < 0",
        ".rating - -1 > 8",
        "1 - -1 == 2",
        "(1 + 2) * 3 == 9",
        "1 + 2 * 3 == 7",
        ".year > 1990 && .year < 2000",
        ".year < 1990 || .rating < 0",
        ".missing",
        "!.missing",
        ".missing == null",
        ".obj",
        "!.obj",
        ".arr",
        "1 in .arr",
        ".esc == \"a\\\"b\"",
        ".nl",
        ".dup == 1",
        ".dup == 2",
        ".x == 1",
        ".year == 1000",
        ".name == \"+5\"",
        ".name == 5",
        ".t == 1",
        "1",
        "0",
        "\"a\"",
        "\"\"",
        "[1]",
        "[]",
        ".year",
        "1 and 0",
        "not not 1",
        "!!1",
        "! !1",
        "!(!1)",
        ".year>1990",
        ".year>=-1",
        "1e3 == 1000",
        ".5 == 0.5",
        "1.5.5 == 1",
        "1e == 1",
        ".ye_ar",
        ".year-1 > 0",
        "x",
        "foo == 1",
        ".year == \"1999\"",
        "\"1999\" == .year",
        ".year in .tags",
        "[1,2] in [1]",
        "1 in [1, \"1\"]",
        "\"1\" in [1]",
        "\"abc\" > 1",
        "\"abc\" < 1",
        "1 / 0 > 1",
        "0 / 0 == 0 / 0",
        "'it\\'s' == .name",
        ".name == \"it's\"",
        "\"unterminated",
        "[1, 2",
        "[1 2]",
        "[a]",
        "(1",
        "1)",
        ")",
        "(",
        "1 +",
        "+ 1",
        "1 @ 2",
        "",
        "   ",
        ".",
        ". year",
        ".year ==",
        "== 1",
        "1 ==== 1",
        "1 = 1",
        "1 & 1",
        "1 | 1",
        "1 ||| 1",
        "and",
        ".year and",
        "a.year",
        "1 in 1",
        "[1] == 0",
        ".x.y",
        "1 2",
        "in",
        "1 < 2 < 3",
        "3 > 2 > 1",
        "nota",
        "notx == 1",
        "anda",
        ".year inx [1]",
        "- 1 == -1",
        "-1 == - 1",
        "--1 == 1",
        "1--1 == 2",
        "1 -1 == 0",
        "(1)-1 == 0",
        "2**-1 == 0.5",
        "1e-5 > 0",
        ".year\u{0}junk",
        "é == 1",
    ];
    let Some((t, r)) = pair() else { return };
    for resp3 in [false, true] {
        let (mut a, mut b) = (t.raw(), r.raw());
        if resp3 {
            a.cmd(&["HELLO", "3"]);
            b.cmd(&["HELLO", "3"]);
        }
        same(&mut a, &mut b, &args(&["DEL", "fk"]));
        for (i, (name, attr)) in attrs.iter().enumerate() {
            let y = (i + 1).to_string();
            let mut c = args(&["VADD", "fk", "VALUES", "2", "1", &y, name]);
            if let Some(attr) = attr {
                c.extend(args(&["SETATTR", attr]));
            }
            same(&mut a, &mut b, &c);
        }
        for f in filters {
            same(
                &mut a,
                &mut b,
                &args(&[
                    "VSIM", "fk", "VALUES", "2", "1", "1", "COUNT", "20", "FILTER", f,
                ]),
            );
            same(
                &mut a,
                &mut b,
                &args(&[
                    "VSIM",
                    "fk",
                    "ELE",
                    "c",
                    "WITHSCORES",
                    "FILTER",
                    f,
                    "COUNT",
                    "3",
                ]),
            );
        }
    }
}

/// FP32 blobs, and a set of 300 random vectors where VSIM's top 10 (with TRUTH, and
/// without) is Redis' answer, scores included.
#[test]
fn random_set_top_k() {
    let Some((t, r)) = pair() else { return };
    let (mut a, mut b) = (t.raw(), r.raw());
    let mut rng = Lcg(42);
    let dim = 24;
    for (key, quant) in [("rq", "Q8"), ("rn", "NOQUANT"), ("rb", "BIN")] {
        for i in 0..300 {
            let v: Vec<f32> = (0..dim).map(|_| rng.next()).collect();
            let name = format!("e{i}");
            let c: Vec<Vec<u8>> = if i % 2 == 0 {
                let blob: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                vec![
                    b"VADD".to_vec(),
                    key.into(),
                    b"FP32".to_vec(),
                    blob,
                    name.into(),
                    quant.into(),
                ]
            } else {
                let mut c = args(&["VADD", key, "VALUES", &dim.to_string()]);
                c.extend(v.iter().map(|x| x.to_string().into_bytes()));
                c.extend(args(&[&name, quant]));
                c
            };
            same(&mut a, &mut b, &c);
        }
        same(&mut a, &mut b, &args(&["VCARD", key]));
        for i in 0..4 {
            let v: Vec<f32> = (0..dim).map(|_| rng.next()).collect();
            let blob: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            let mut c = vec![b"VSIM".to_vec(), key.into(), b"FP32".to_vec(), blob];
            c.extend(args(&["WITHSCORES", "COUNT", "10"]));
            if i % 2 == 0 {
                c.extend(args(&["TRUTH"]));
            }
            if key != "rb" {
                same(&mut a, &mut b, &c);
            }
            let e = format!("e{}", i * 37);
            same(&mut a, &mut b, &args(&["VEMB", key, &e]));
            same(&mut a, &mut b, &args(&["VEMB", key, &e, "RAW"]));
            if key != "rb" {
                same(
                    &mut a,
                    &mut b,
                    &args(&["VSIM", key, "ELE", &e, "WITHSCORES", "COUNT", "5", "TRUTH"]),
                );
            }
        }
        same(&mut a, &mut b, &args(&["VDIM", key]));
    }
}

/// REDUCE: Redis projects at random, so only the dimensions compare; Tumbler's own
/// projection is checked for consistency.
#[test]
fn reduce() {
    let Some((t, r)) = pair() else { return };
    let (mut a, mut b) = (t.raw(), r.raw());
    for c in [
        &[
            "VADD", "p", "REDUCE", "2", "VALUES", "4", "1", "2", "3", "4", "a",
        ][..],
        &[
            "VADD", "p", "REDUCE", "2", "VALUES", "4", "4", "3", "2", "1", "b",
        ],
        &["VADD", "p", "VALUES", "4", "1", "0", "0", "1", "c"],
        &[
            "VADD", "p", "REDUCE", "3", "VALUES", "4", "1", "0", "0", "1", "c",
        ],
        &["VADD", "p", "VALUES", "2", "1", "0", "c"],
        &[
            "VADD", "p", "REDUCE", "2", "VALUES", "5", "1", "0", "0", "1", "1", "c",
        ],
        &["VADD", "p", "VALUES", "3", "1", "0", "1", "c"],
        &["VADD", "plain", "VALUES", "3", "1", "0", "1", "c"],
        &[
            "VADD", "plain", "REDUCE", "2", "VALUES", "3", "1", "0", "1", "d",
        ],
        &["VDIM", "p"],
        &["VCARD", "p"],
        &["VSIM", "p", "VALUES", "3", "1", "0", "1"],
        &["VSIM", "p", "VALUES", "5", "1", "0", "1", "1", "1"],
    ] {
        same(&mut a, &mut b, &args(c));
    }
    let ta = a.cmd_str(&["VSIM", "p", "VALUES", "4", "1", "2", "3", "4", "COUNT", "1"]);
    assert!(ta.contains("a"), "{ta}");
    let tv = a.cmd_str(&["VEMB", "p", "a"]);
    assert!(tv.starts_with("*2"), "{tv}");
    let info = a.cmd_str(&["VINFO", "p"]);
    assert!(info.contains("projection-input-dim\r\n:4"), "{info}");
}

/// Graph-dependent replies: VLINKS and VRANDMEMBER have Redis' shapes, VINFO the same
/// fields (graph and process fields checked for range only).
#[test]
fn graph_shaped_replies() {
    let Some((t, r)) = pair() else { return };
    let (mut a, mut b) = (t.raw(), r.raw());
    for i in 0..40 {
        let (x, y) = ((i as f32).cos().to_string(), (i as f32).sin().to_string());
        same(
            &mut a,
            &mut b,
            &args(&[
                "VADD",
                "g",
                "VALUES",
                "2",
                &x,
                &y,
                &format!("m{i}"),
                "M",
                "4",
            ]),
        );
    }
    // VLINKS: one array per level, the last (level 0) with up to 2*M names of members.
    for withscores in [false, true] {
        let mut c = args(&["VLINKS", "g", "m3"]);
        if withscores {
            c.extend(args(&["WITHSCORES"]));
        }
        let reply = a.cmd_str(&c);
        assert!(reply.starts_with('*'), "{reply}");
        let lines: Vec<&str> = reply.split("\r\n").collect();
        let levels: usize = lines[0][1..].parse().unwrap();
        assert!((1..=17).contains(&levels), "{reply}");
        let last = lines.iter().rposition(|l| l.starts_with('*')).unwrap();
        let n: usize = lines[last][1..].parse().unwrap();
        let per = if withscores { 2 } else { 1 };
        assert!(n > 0 && n <= 8 * per, "{reply}");
        assert!(
            !reply.contains("$2\r\nm3\r\n"),
            "an element is not its own neighbour: {reply}"
        );
    }
    let mut r3 = t.raw();
    r3.cmd(&["HELLO", "3"]);
    let s = r3.cmd_str(&["VLINKS", "g", "m3", "WITHSCORES"]);
    assert!(s.contains('%') && s.contains(','), "{s}");
    // VRANDMEMBER: counts and uniqueness as Redis.
    for (count, len) in [("5", 5), ("-5", 5), ("100", 40), ("-100", 100)] {
        for raw in [&mut a, &mut b] {
            let s = raw.cmd_str(&["VRANDMEMBER", "g", count]);
            assert!(s.starts_with(&format!("*{len}\r\n")), "{count}: {s}");
            if !count.starts_with('-') {
                let names: std::collections::HashSet<&str> =
                    s.split("\r\n").filter(|l| l.starts_with('m')).collect();
                assert_eq!(names.len(), len, "{s}");
            }
        }
    }
    let one = a.cmd_str(&["VRANDMEMBER", "g"]);
    assert!(one.starts_with("$") && one.contains("\r\nm"), "{one}");
    // VINFO: same keys in the same order; the graph-independent values equal.
    let (vi, vr) = (a.cmd_str(&["VINFO", "g"]), b.cmd_str(&["VINFO", "g"]));
    let fields = |s: &str| -> Vec<String> { s.split("\r\n").map(str::to_string).collect() };
    let (fi, fr) = (fields(&vi), fields(&vr));
    assert_eq!(fi.len(), fr.len(), "{vi} / {vr}");
    for (k, (x, y)) in fi.iter().zip(&fr).enumerate() {
        let name = if k > 0 { fi[k - 1].as_str() } else { "" };
        if name == "+max-level" || name == "+vset-uid" {
            assert!(x.starts_with(':'), "{vi}");
        } else {
            assert_eq!(x, y, "VINFO: {vi} / {vr}");
        }
    }
}

/// The key-level commands treat a vector set as a value of its own type; DUMP/RESTORE
/// round-trips in Tumbler and SAVE keeps every key.
#[test]
fn keyspace_and_persistence() {
    let dir = tumbler_tests::rdb::temp_dir("vsets");
    let dir_s = dir.to_str().unwrap().to_string();
    let t = Tumbler::start_with(&[("personality", "redis-8.0"), ("dir", &dir_s)]);
    let mut c = t.raw();
    for x in [
        &[
            "VADD",
            "v",
            "VALUES",
            "3",
            "1",
            "2",
            "3",
            "a",
            "SETATTR",
            "{\"x\":1}",
        ][..],
        &["VADD", "v", "VALUES", "3", "3", "2", "1", "b"],
        &["VADD", "vb", "VALUES", "3", "3", "-2", "1", "b", "BIN"],
        &[
            "VADD", "vn", "REDUCE", "2", "VALUES", "3", "3", "-2", "1", "b", "NOQUANT", "M", "8",
        ],
    ] {
        assert_eq!(c.cmd_str(x), ":1\r\n");
    }
    assert_eq!(c.cmd_str(&["TYPE", "v"]), "+vectorset\r\n");
    assert_eq!(c.cmd_str(&["OBJECT", "ENCODING", "v"]), "$3\r\nraw\r\n");
    let mem = c.cmd_str(&["MEMORY", "USAGE", "v"]);
    assert!(
        mem.starts_with(':') && mem[1..mem.len() - 2].parse::<i64>().unwrap() > 0,
        "{mem}"
    );
    let d = c.cmd_str(&["DEBUG", "DIGEST-VALUE", "v"]);
    assert!(d.len() > 40 && !d.contains("0000000000"), "{d}");
    for key in ["v", "vb", "vn"] {
        let mut before = Vec::new();
        for e in ["a", "b"] {
            before.push(c.cmd_str(&["VEMB", key, e, "RAW"]));
            before.push(c.cmd_str(&["VGETATTR", key, e]));
        }
        let digest = c.cmd_str(&["DEBUG", "DIGEST-VALUE", key]);
        let dump = c.cmd(&["DUMP", key]);
        let payload = tumbler_tests::bulk_payload(&dump);
        let copy = format!("{key}-copy");
        assert_eq!(
            c.cmd_str(&[
                b"RESTORE".to_vec(),
                copy.clone().into_bytes(),
                b"0".to_vec(),
                payload.clone()
            ]),
            "+OK\r\n"
        );
        assert_eq!(c.cmd_str(&["DEBUG", "DIGEST-VALUE", &copy]), digest);
        let mut after = Vec::new();
        for e in ["a", "b"] {
            after.push(c.cmd_str(&["VEMB", &copy, e, "RAW"]));
            after.push(c.cmd_str(&["VGETATTR", &copy, e]));
        }
        assert_eq!(after, before);
        // A corrupt payload is refused.
        let mut bad = payload.clone();
        let n = bad.len();
        bad[n - 12] ^= 0xff;
        assert!(c
            .cmd_str(&[b"RESTORE".to_vec(), b"bad".to_vec(), b"0".to_vec(), bad])
            .starts_with("-ERR"));
    }
    assert_eq!(
        c.cmd_str(&["VSIM", "v-copy", "ELE", "a", "FILTER", ".x == 1"]),
        "*1\r\n$1\r\na\r\n"
    );
    assert_eq!(c.cmd_str(&["MOVE", "v-copy", "3"]), ":1\r\n");
    assert_eq!(c.cmd_str(&["SELECT", "3"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["VCARD", "v-copy"]), ":2\r\n");
    assert_eq!(c.cmd_str(&["SELECT", "0"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["SET", "plain", "x"]), "+OK\r\n");
    let state = c.cmd_str(&["TUMBLER.STATE"]);
    assert!(state.contains("vectorset"), "{state}");
    assert_eq!(c.cmd_str(&["TUMBLER.SNAPSHOT", "SAVE", "s1"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["VREM", "v", "a"]), ":1\r\n");
    assert_eq!(c.cmd_str(&["TUMBLER.SNAPSHOT", "RESTORE", "s1"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["VCARD", "v"]), ":2\r\n");
    let saved = c.cmd_str(&["SAVE"]);
    assert_eq!(saved, "+OK\r\n");
    assert_eq!(c.cmd_str(&["GET", "plain"]), "$1\r\nx\r\n");
    assert_eq!(c.cmd_str(&["VCARD", "v"]), ":2\r\n");
    // The file loads back, vector sets included.
    let emb = c.cmd_str(&["VEMB", "vn", "b", "RAW"]);
    let t2 = Tumbler::start_with(&[("personality", "redis-8.0"), ("dir", &dir_s)]);
    let mut c2 = t2.raw();
    assert_eq!(c2.cmd_str(&["GET", "plain"]), "$1\r\nx\r\n");
    assert_eq!(c2.cmd_str(&["VCARD", "v"]), ":2\r\n");
    assert_eq!(c2.cmd_str(&["VGETATTR", "v", "a"]), "$7\r\n{\"x\":1}\r\n");
    assert_eq!(c2.cmd_str(&["VEMB", "vn", "b", "RAW"]), emb);
    drop(t2);
    // In no ACL category: +@write does not grant VADD (Redis 8.0 words the denial
    // differently from 7.x, so only the command's name is compared).
    c.cmd_str(&["ACL", "SETUSER", "u1", "on", "nopass", "~*", "+@write"]);
    let denied = c.cmd_str(&["ACL", "DRYRUN", "u1", "VADD", "k", "VALUES", "1", "1", "a"]);
    assert!(
        denied.contains("no permissions to run the 'VADD' command"),
        "{denied}"
    );
    let cat = c.cmd_str(&["ACL", "CAT", "write"]);
    assert!(!cat.to_ascii_lowercase().contains("vadd"), "{cat}");
    // WRONGTYPE from other types' commands.
    assert!(c.cmd_str(&["GET", "v"]).starts_with("-WRONGTYPE"));
    assert!(c.cmd_str(&["HGET", "v", "a"]).starts_with("-WRONGTYPE"));
    assert!(c.cmd_str(&["ZCARD", "v"]).starts_with("-WRONGTYPE"));
    drop(t);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Before Redis 8.0, and in Valkey, the commands do not exist.
#[test]
fn absent_in_other_personalities() {
    for p in ["redis-7.2", "valkey-9.1", "redis-7.4"] {
        let t = Tumbler::start_with(&[("personality", p)]);
        let mut c = t.raw();
        for cmd in ["VADD", "VSIM", "VCARD", "VREM", "VEMB", "VINFO", "VLINKS"] {
            let r = c.cmd_str(&[cmd, "k", "VALUES", "1", "1", "a"]);
            assert!(r.starts_with("-ERR unknown command"), "{p} {cmd}: {r}");
        }
        let info = c.cmd_str(&["COMMAND", "INFO", "vadd"]);
        assert!(
            info.starts_with("*1\r\n") && !info.contains("vadd"),
            "{p}: {info}"
        );
    }
    diff_against(
        "valkey9-server",
        r#"
        VADD k VALUES 1 1 a
        VSIM k ELE a
        VCARD k
        COMMAND INFO vadd vsim
    "#,
    );
}
