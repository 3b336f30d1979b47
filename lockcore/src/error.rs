//! Every error text Tumbler sends, byte for byte as Redis 7 sends it.
//!
//! Clients match on these strings (Redisson on `NOSCRIPT`, redis-py on `WRONGTYPE`, test
//! suites on whole messages), so they live here and nowhere else.

use crate::reply::Reply;

pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const SYNTAX: &str = "ERR syntax error";
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
pub const INCR_NAN: &str = "ERR increment would produce NaN or Infinity";
pub const NO_SUCH_KEY: &str = "ERR no such key";
pub const INVALID_EXPIRE: &str = "ERR invalid expire time in '%s' command";
pub const DB_INDEX_OUT_OF_RANGE: &str = "ERR DB index is out of range";
pub const INVALID_DB_INDEX: &str = "ERR invalid DB index";
pub const NOAUTH: &str = "NOAUTH Authentication required.";
pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
pub const AUTH_NOT_CONFIGURED: &str = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?";
pub const OFFSET_OUT_OF_RANGE: &str = "ERR offset is out of range";
pub const STRING_TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
pub const HASH_NOT_INTEGER: &str = "ERR hash value is not an integer";
pub const HASH_NOT_FLOAT: &str = "ERR hash value is not a float";
pub const INDEX_OUT_OF_RANGE: &str = "ERR index out of range";
pub const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
pub const TIMEOUT_NOT_FLOAT: &str = "ERR timeout is not a float or out of range";
pub const TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";
pub const MIN_MAX_NOT_FLOAT: &str = "ERR min or max is not a float";
pub const MIN_MAX_NOT_STRING: &str = "ERR min or max not valid string range item";
pub const EXEC_WITHOUT_MULTI: &str = "ERR EXEC without MULTI";
pub const DISCARD_WITHOUT_MULTI: &str = "ERR DISCARD without MULTI";
pub const MULTI_NESTED: &str = "ERR MULTI calls can not be nested";
pub const WATCH_IN_MULTI: &str = "ERR WATCH inside MULTI is not allowed";
pub const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";
pub const NOSCRIPT_ERR: &str = "NOSCRIPT No matching script. Please use EVAL.";
pub const SAME_OBJECT: &str = "ERR source and destination objects are the same";

/// `ERR wrong number of arguments for 'get' command`
pub fn wrong_arity(name: &str) -> Reply {
    Reply::err(format!(
        "ERR wrong number of arguments for '{}' command",
        name.to_ascii_lowercase()
    ))
}

/// `ERR unknown command 'foo', with args beginning with: 'a' 'b' `
pub fn unknown_command(argv: &[bytes::Bytes]) -> Reply {
    let name = String::from_utf8_lossy(argv.first().map(|b| &b[..]).unwrap_or(b""));
    let mut s = format!(
        "ERR unknown command '{}', with args beginning with: ",
        truncate_for_error(&name)
    );
    // Redis: `for (...; sdslen(args) < 128; ...) args = sdscatprintf(args, "'%.*s' ",
    // 128-(int)sdslen(args), argv[i])`: the 128 bytes count the argument list only, and
    // each argument is cut to what is left of them (and, being "%s", at a NUL).
    let mut args = String::new();
    for a in argv.iter().skip(1) {
        if args.len() >= 128 {
            break;
        }
        let a = a.split(|&c| c == 0).next().unwrap_or_default();
        let mut text = truncate_for_error(&String::from_utf8_lossy(a));
        let mut room = 128 - args.len();
        if text.len() > room {
            while !text.is_char_boundary(room) {
                room -= 1;
            }
            text.truncate(room);
        }
        args.push('\'');
        args.push_str(&text);
        args.push_str("' ");
    }
    s.push_str(&args);
    Reply::err(s)
}

/// `ERR unknown subcommand 'foo'. Try CLIENT HELP.`
pub fn unknown_subcommand(cmd: &str, sub: &[u8]) -> Reply {
    Reply::err(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        truncate_for_error(&String::from_utf8_lossy(sub)),
        cmd.to_ascii_uppercase()
    ))
}

/// `ERR invalid expire time in 'set' command`
pub fn invalid_expire(cmd: &str) -> Reply {
    Reply::err(INVALID_EXPIRE.replace("%s", &cmd.to_ascii_lowercase()))
}

/// Redis cuts user-supplied text in errors at 128 bytes.
fn truncate_for_error(s: &str) -> String {
    let cleaned: String = s
        .chars()
        .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
        .collect();
    if cleaned.len() > 128 {
        let mut end = 128;
        while !cleaned.is_char_boundary(end) {
            end -= 1;
        }
        cleaned[..end].to_string()
    } else {
        cleaned
    }
}

pub fn wrongtype() -> Reply {
    Reply::err(WRONGTYPE)
}
pub fn syntax() -> Reply {
    Reply::err(SYNTAX)
}
pub fn not_integer() -> Reply {
    Reply::err(NOT_INTEGER)
}
pub fn not_float() -> Reply {
    Reply::err(NOT_FLOAT)
}

// Native locks (locks.rs, docs/locking.md).
pub const LOCK_NOT_HELD: &str = "NOTHELD the lock is not held by this owner";
pub const LOCK_EMPTY_OWNER: &str = "ERR owner must not be empty";
pub const LOCK_UPGRADE: &str =
    "ERR cannot upgrade a read lock to a write lock: release the read lock first";
pub const LOCK_FENCED: &str = "FENCED the token does not hold the lock";
pub const LOCK_SAME_KEY: &str = "ERR key and lockkey must be different keys";
pub const SEM_PERMITS: &str = "ERR permits must be a positive integer";
pub const SEM_PERMITS_MISMATCH: &str = "ERR permits does not match the semaphore's permits";
pub const SEM_COUNT: &str = "ERR COUNT must be between 1 and permits";
pub const SEM_RELEASE_COUNT: &str = "ERR COUNT is more than the permits held by this owner";
