//! Lua 5.1's conversions between numbers and strings, made with the same C library calls
//! the embedded VM makes (`luaO_str2d` is `strtod`, then `strtoul` for a trailing `x`;
//! `lua_number2str` is `sprintf("%.14g")`; string order is `strcoll`), so a plan converts
//! and compares exactly as the VM in the same process does, whatever the C locale.

use std::ffi::{c_char, c_int, c_ulong};

extern "C" {
    fn strtod(s: *const c_char, end: *mut *mut c_char) -> f64;
    fn strtoul(s: *const c_char, end: *mut *mut c_char, base: c_int) -> c_ulong;
    fn snprintf(buf: *mut c_char, n: usize, fmt: *const c_char, ...) -> c_int;
    fn strcoll(a: *const c_char, b: *const c_char) -> c_int;
    fn strlen(s: *const c_char) -> usize;
}

/// Runs `f` on a NUL-terminated copy of `s` (C sees `s` up to its first NUL, as Lua's
/// `svalue` does).
fn with_cstr<R>(s: &[u8], f: impl FnOnce(*const c_char) -> R) -> R {
    let mut small = [0u8; 64];
    if s.len() < small.len() {
        small[..s.len()].copy_from_slice(s);
        f(small.as_ptr().cast())
    } else {
        let mut v = Vec::with_capacity(s.len() + 1);
        v.extend_from_slice(s);
        v.push(0);
        f(v.as_ptr().cast())
    }
}

/// C's `isspace` in the "C" locale.
fn c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `luaO_str2d`: the number a string converts to (tonumber, arithmetic on strings,
/// numerals in source), or None.
pub fn str2d(s: &[u8]) -> Option<f64> {
    with_cstr(s, |p| unsafe {
        let mut end: *mut c_char = std::ptr::null_mut();
        let mut r = strtod(p, &mut end);
        if end.cast_const() == p {
            return None;
        }
        if *end == b'x' as c_char || *end == b'X' as c_char {
            r = strtoul(p, &mut end, 16) as f64;
        }
        let mut q = end.cast_const();
        while *q != 0 && c_space(*q as u8) {
            q = q.add(1);
        }
        (*q == 0).then_some(r)
    })
}

/// `lua_number2str`: `%.14g`, as tostring and `..` format numbers.
pub fn fmt14g(n: f64) -> bytes::Bytes {
    let mut buf = [0u8; 48];
    let len = unsafe { snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%.14g".as_ptr(), n) };
    let len = (len.max(0) as usize).min(buf.len() - 1);
    bytes::Bytes::copy_from_slice(&buf[..len])
}

/// `%.17g`, as Redis formats a Lua number argument of `redis.call`.
pub fn fmt17g(n: f64) -> String {
    let mut buf = [0u8; 48];
    let len = unsafe { snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%.17g".as_ptr(), n) };
    let len = (len.max(0) as usize).min(buf.len() - 1);
    String::from_utf8_lossy(&buf[..len]).into_owned()
}

/// `l_strcmp`: Lua's string order, `strcoll` piece by piece across embedded NULs.
pub fn strcmp(l: &[u8], r: &[u8]) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (mut l, mut r) = (l, r);
    loop {
        let c = with_cstr(l, |lp| {
            with_cstr(r, |rp| unsafe { (strcoll(lp, rp), strlen(lp)) })
        });
        if c.0 != 0 {
            return c.0.cmp(&0);
        }
        let len = c.1;
        if len == r.len() {
            return if len == l.len() {
                Ordering::Equal
            } else {
                Ordering::Greater
            };
        }
        if len == l.len() {
            return Ordering::Less;
        }
        l = &l[len + 1..];
        r = &r[len + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn str2d_is_luas() {
        assert_eq!(str2d(b"10"), Some(10.0));
        assert_eq!(str2d(b" 3.7 \n"), Some(3.7));
        assert_eq!(str2d(b"0x10"), Some(16.0));
        assert_eq!(str2d(b"1e20"), Some(1e20));
        assert_eq!(str2d(b"inf"), Some(f64::INFINITY));
        assert_eq!(str2d(b"12\0abc"), Some(12.0));
        assert_eq!(str2d(b""), None);
        assert_eq!(str2d(b"abc"), None);
        assert_eq!(str2d(b"1 2"), None);
        assert!(str2d(b"-0").unwrap().is_sign_negative());
    }

    #[test]
    fn fmt14g_is_printf() {
        assert_eq!(&fmt14g(3.7)[..], b"3.7");
        assert_eq!(&fmt14g(1e20)[..], b"1e+20");
        assert_eq!(&fmt14g(-0.0)[..], b"-0");
        assert_eq!(&fmt14g(f64::INFINITY)[..], b"inf");
        assert_eq!(&fmt14g(2f64.powi(53))[..], b"9.007199254741e+15");
    }

    #[test]
    fn strcmp_orders_bytes() {
        use std::cmp::Ordering::*;
        assert_eq!(strcmp(b"a", b"b"), Less);
        assert_eq!(strcmp(b"a\0b", b"a"), Greater);
        assert_eq!(strcmp(b"a\0a", b"a\0b"), Less);
        assert_eq!(strcmp(b"abc", b"abc"), Equal);
        assert_eq!(strcmp(b"10", b"9"), Less);
    }
}

/// A Lua number as Redis passes it to a command (not Lua's lossy `%.14g`). Redis 7.0
/// (`fmt` Printf17g): `%.17g`; integers below 1e17 print the same as integers, faster (and
/// -9..=99 without an allocation); -0, NaN and the rest go through the C library's printf,
/// as Redis' snprintf does. Redis 7.2+ (Shortest): an integral value within +-LLONG_MAX/2
/// (-0 included) as an integer, NaN and infinities as printf has them, the rest as the
/// shortest text that reads back the same (`lockcore::num::fmt_shortest`).
pub fn lua_number_bytes(n: f64, fmt: lockcore::num::DoubleFmt) -> bytes::Bytes {
    if n.abs() < 1e17 && n == (n as i64) as f64 && !(n == 0.0 && n.is_sign_negative()) {
        return lockcore::num::int_bytes(n as i64);
    }
    match fmt {
        lockcore::num::DoubleFmt::Shortest | lockcore::num::DoubleFmt::ShortestGeo
            if n.is_finite() =>
        {
            match lockcore::num::double_to_i64(n) {
                Some(i) => lockcore::num::int_bytes(i),
                None => bytes::Bytes::from(lockcore::num::fmt_shortest(n)),
            }
        }
        _ => bytes::Bytes::from(fmt17g(n)),
    }
}

/// C's `(long long)` cast of a Lua number as Redis' x86-64 build performs it: NaN and
/// out-of-range values give i64::MIN (Rust's `as` would saturate instead).
pub fn c_long_long(n: f64) -> i64 {
    if n.is_nan() || !(-9223372036854775808.0..9223372036854775808.0).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}
