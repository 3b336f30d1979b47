//! Arguments as MONITOR and the slow log show them: passwords redacted (the quoting is
//! `lockcore::reply::repr`).

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

#[cfg(test)]
mod tests {
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
