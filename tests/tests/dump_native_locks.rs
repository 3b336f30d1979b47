//! DUMP of Tumbler's native lock values (LOCK.*, SEM.*, RW.*). They have no Redis RDB type,
//! so DUMP answers `-ERR DUMP of this type is not supported by tumbler` (documented in
//! docs/locking.md) and the lock is left exactly as it was: still held, same TTL, same owner.

use tumbler_tests::Tumbler;

#[test]
fn dump_of_a_native_lock_is_a_clear_error_and_changes_nothing() {
    let t = Tumbler::start();
    let mut c = t.raw();
    let err = "-ERR DUMP of this type is not supported by tumbler\r\n";
    assert!(c
        .cmd_str(&["LOCK.ACQUIRE", "lk", "o1", "60000"])
        .starts_with(':'));
    assert!(c
        .cmd_str(&["SEM.ACQUIRE", "sm", "o1", "3", "60000"])
        .starts_with(':'));
    assert!(c
        .cmd_str(&["RW.RLOCK", "rw", "o1", "60000"])
        .starts_with(':'));
    for (key, ty) in [("lk", "lock"), ("sm", "semaphore"), ("rw", "rwlock")] {
        assert_eq!(c.cmd_str(&["DUMP", key]), err, "{key}");
        assert_eq!(c.cmd_str(&["TYPE", key]), format!("+{ty}\r\n"));
        let pttl = c.cmd_str(&["PTTL", key]);
        assert!(
            pttl.starts_with(':') && pttl != ":-1\r\n" && pttl != ":-2\r\n",
            "{pttl}"
        );
    }
    // Still held by o1: another owner cannot take the exclusive lock.
    assert_eq!(c.cmd_str(&["LOCK.ACQUIRE", "lk", "o2", "60000"]), "$-1\r\n");
}
