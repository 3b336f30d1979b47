//! Regression tests for bugs the fuzzers found (docs/fuzzing.md), each differential
//! against redis-server and each failing before its fix.

use tumbler_tests::diff_against_redis as run;

/// fuzz_differential seed 127: GETEX checks the key before the expire value, so a missing
/// key is nil (and a wrong type WRONGTYPE) whatever the EX/PX argument.
#[test]
fn getex_checks_the_key_before_the_expire_value() {
    run(r#"
        GETEX nokey EX 0
        GETEX nokey PX x
        GETEX nokey EXAT -1
        GETEX nokey EX
        HSET h f v
        GETEX h EX x
        GETEX h EX 0
        SET s v
        GETEX s EX 0
        GETEX s PX x
        GETEX s EX 100
        TTL s
        GETEX s PERSIST EX 1
        GETEX s EX 0 PX 1
    "#);
}
