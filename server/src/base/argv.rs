//! Arguments as MONITOR and the slow log show them: passwords redacted, bytes quoted.

use bytes::Bytes;

const REDACTED: &[u8] = b"(redacted)";

/// The arguments MONITOR shows: passwords of AUTH and HELLO ... AUTH replaced by
/// `(redacted)`, at the positions Redis redacts them (only once the command got far
/// enough to read them: `AUTH a b c` is a syntax error and shows as sent).
pub fn redact(argv: &[Bytes]) -> Vec<Bytes> {
    let mut v = argv.to_vec();
    let name = &argv[0];
    if name.eq_ignore_ascii_case(b"auth") {
        if v.len() <= 3 {
            for a in v.iter_mut().skip(1) {
                *a = Bytes::from_static(REDACTED);
            }
        }
    } else if name.eq_ignore_ascii_case(b"hello") && v.len() > 1 {
        if !matches!(lockcore::num::parse_i64(&v[1]), Some(2 | 3)) {
            return v;
        }
        let mut j = 2;
        while j < v.len() {
            let more = v.len() - 1 - j;
            if v[j].eq_ignore_ascii_case(b"auth") && more >= 2 {
                v[j + 1] = Bytes::from_static(REDACTED);
                v[j + 2] = Bytes::from_static(REDACTED);
                j += 3;
            } else if v[j].eq_ignore_ascii_case(b"setname") && more >= 1 {
                j += 2;
            } else {
                break;
            }
        }
    }
    v
}

/// Quotes an argument as Redis' `sdscatrepr` does: `"..."` with `\\`, `\"`, `\n`, `\r`,
/// `\t`, `\a`, `\b` escapes and `\xhh` for other non-printable bytes.
pub fn quote_arg(a: &[u8]) -> String {
    let mut s = String::with_capacity(a.len() + 2);
    s.push('"');
    for &c in a {
        match c {
            b'\\' => s.push_str("\\\\"),
            b'"' => s.push_str("\\\""),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            7 => s.push_str("\\a"),
            8 => s.push_str("\\b"),
            c if c.is_ascii_graphic() || c == b' ' => s.push(c as char),
            c => s.push_str(&format!("\\x{:02x}", c)),
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn quotes_like_sdscatrepr() {
        assert_eq!(super::quote_arg(b"a b"), "\"a b\"");
        assert_eq!(super::quote_arg(b"\"\n\x01"), "\"\\\"\\n\\x01\"");
    }

    #[test]
    fn redacts_passwords_like_redis() {
        use bytes::Bytes;
        let v =
            |s: &[&str]| -> Vec<Bytes> { s.iter().map(|a| Bytes::from(a.to_string())).collect() };
        assert_eq!(
            super::redact(&v(&["auth", "p"])),
            v(&["auth", "(redacted)"])
        );
        assert_eq!(
            super::redact(&v(&["AUTH", "u", "p"])),
            v(&["AUTH", "(redacted)", "(redacted)"])
        );
        assert_eq!(
            super::redact(&v(&["auth", "a", "b", "c"])),
            v(&["auth", "a", "b", "c"])
        );
        assert_eq!(
            super::redact(&v(&["hello", "3", "SETNAME", "n", "AUTH", "u", "p"])),
            v(&[
                "hello",
                "3",
                "SETNAME",
                "n",
                "AUTH",
                "(redacted)",
                "(redacted)"
            ])
        );
        assert_eq!(
            super::redact(&v(&["hello", "4", "AUTH", "u", "p"])),
            v(&["hello", "4", "AUTH", "u", "p"])
        );
    }
}
