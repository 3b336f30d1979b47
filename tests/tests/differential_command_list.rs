//! COMMAND LIST with its filters, COMMAND GETKEYS of a command without mandatory keys, and
//! SORT_RO's movablekeys flag (server/src/commands/cmdlist.rs; unit/introspection-2), against
//! redis-server. The unfiltered list comes back in Redis' dict order, so it is checked for
//! members rather than compared byte for byte.

use tumbler_tests::{diff_against_redis, Tumbler};

#[test]
fn command_list_filters_and_errors_match_redis() {
    diff_against_redis(
        r#"
        COMMAND LIST FILTERBY PATTERN set
        COMMAND LIST FILTERBY PATTERN get
        COMMAND LIST FILTERBY PATTERN config|get
        COMMAND LIST FILTERBY PATTERN non_exists
        COMMAND LIST FILTERBY PATTERN non_exists*
        COMMAND LIST FILTERBY PATTERN script|k*
        COMMAND LIST FILTERBY MODULE non_existing_module
        COMMAND LIST FILTERBY ACLCAT non_existing_category
        COMMAND LIST bad_arg
        COMMAND LIST FILTERBY bad_arg
        COMMAND LIST FILTERBY bad_arg bad_arg2
        COMMAND LIST FILTERBY PATTERN
        COMMAND GETKEYS EVAL "return 1" 0
        COMMAND GETKEYS EVAL "return 1" 1 k
        COMMAND GETKEYS FCALL f 0
        COMMAND GETKEYS ZUNIONSTORE dst 0
        "#,
    );
}

#[test]
fn command_list_names_commands_and_subcommands() {
    let t = Tumbler::start();
    let mut c = t.raw();
    let all = c.cmd_str(&["COMMAND", "LIST"]);
    for name in ["set", "client|list", "config|get", "xgroup|create"] {
        assert!(all.contains(&format!("\r\n{name}\r\n")), "{name} missing");
    }
    let scripting = c.cmd_str(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "scripting"]);
    assert!(scripting.contains("\r\neval\r\n") && scripting.contains("\r\nscript|kill\r\n"));
    assert!(!scripting.contains("\r\nset\r\n"));
    let cl = c.cmd_str(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "cl*help"]);
    assert!(
        cl.contains("client|help") && cl.contains("cluster|help"),
        "{cl}"
    );
}

#[test]
fn sort_ro_is_movablekeys_as_in_redis() {
    // Only the flags are compared: Tumbler's key specs for SORT/SORT_RO omit Redis' second
    // (unknown-keys) spec.
    let t = Tumbler::start();
    let info = t.raw().cmd_str(&["COMMAND", "INFO", "sort_ro"]);
    assert!(info.contains("+readonly\r\n+movablekeys\r\n"), "{info}");
    let get = t.raw().cmd_str(&["COMMAND", "INFO", "get"]);
    assert!(!get.contains("movablekeys"), "{get}");
}

/// unit/introspection-2 "TTL, TYPE and EXISTS do not alter the last access time of a key":
/// they look up without touching the LRU clock (Redis' LOOKUP_NOTOUCH); GET and TOUCH do.
#[test]
fn ttl_type_and_exists_leave_the_idle_time_alone() {
    let t = Tumbler::start();
    let mut c = t.raw();
    let clock = t.time();
    clock.freeze();
    c.cmd(&["SET", "foo", "bar"]);
    clock.advance(std::time::Duration::from_secs(5));
    for cmd in [
        &["TTL", "foo"][..],
        &["PTTL", "foo"],
        &["EXPIRETIME", "foo"],
        &["PEXPIRETIME", "foo"],
        &["TYPE", "foo"],
        &["EXISTS", "foo"],
    ] {
        c.cmd(cmd);
    }
    assert_eq!(c.cmd_str(&["OBJECT", "IDLETIME", "foo"]), ":5\r\n");
    c.cmd(&["GET", "foo"]);
    assert_eq!(c.cmd_str(&["OBJECT", "IDLETIME", "foo"]), ":0\r\n");
}
