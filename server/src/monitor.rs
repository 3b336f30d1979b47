//! MONITOR's line format.

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
}
