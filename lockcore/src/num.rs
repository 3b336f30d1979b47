//! Number parsing and formatting with Redis' exact rules.

/// Parses a signed 64-bit integer the way Redis' `string2ll` does: no sign other than a
/// leading `-`, no leading zeros, no spaces, no overflow.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !(b'1'..=b'9').contains(&digits[0]) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    if neg {
        if v > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

/// Parses a double as Redis' `getDoubleFromObject`/`strtod` accepts it: no leading space,
/// no NaN; `inf`, `+inf`, `-inf` and exponents are allowed.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s[0].is_ascii_whitespace() || s[s.len() - 1].is_ascii_whitespace() {
        return None;
    }
    let st = std::str::from_utf8(s).ok()?;
    let v: f64 = match st.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ => {
            // Rust accepts "inf"/"nan" spellings we already handled; reject the rest of them.
            if st
                .chars()
                .any(|c| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
            {
                return None;
            }
            st.parse().ok()?
        }
    };
    if v.is_nan() {
        None
    } else {
        Some(v)
    }
}

/// Formats like Redis' `ld2string(.., LD_STR_HUMAN)`: `%.17Lf` with the trailing zeros (and
/// a bare point) cut, and `-0` as `0`.
pub fn fmt_human(d: f64) -> String {
    let mut s = format!("{d:.17}");
    if s.contains('.') {
        let cut = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(cut);
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

/// Formats like C's `printf("%.17g", d)`, which Redis 7.0 uses for scores and doubles.
pub fn fmt_double_17g(d: f64) -> String {
    fmt_g(d, 17)
}

/// C's `%.<prec>g`.
pub fn fmt_g(d: f64, prec: usize) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if d == 0.0 {
        return if d.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let prec = prec.max(1);
    let e = format!("{:.*e}", prec - 1, d);
    let (mant, exp) = e.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    if exp < -4 || exp >= prec as i32 {
        let mant = trim_frac(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", mant, sign, exp.abs())
    } else {
        let decimals = (prec as i32 - 1 - exp).max(0) as usize;
        trim_frac(&format!("{:.*}", decimals, d)).to_string()
    }
}

fn trim_frac(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Formats the result of INCRBYFLOAT / HINCRBYFLOAT. Redis prints a long double with
/// `%.17Lf` and trims trailing zeros, which gives no exponent and, for the values that
/// round-trip, the same digits as the shortest representation of the double.
pub fn fmt_incrbyfloat(d: f64) -> String {
    let s = format!("{}", d);
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string2ll_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"01"), None);
        assert_eq!(parse_i64(b"+1"), None);
        assert_eq!(parse_i64(b"-0"), None);
        assert_eq!(parse_i64(b" 1"), None);
        assert_eq!(parse_i64(b""), None);
    }

    #[test]
    fn g17_matches_printf() {
        assert_eq!(fmt_double_17g(1.1), "1.1000000000000001");
        assert_eq!(fmt_double_17g(1.5), "1.5");
        assert_eq!(fmt_double_17g(10.0), "10");
        assert_eq!(fmt_double_17g(1e20), "1e+20");
        assert_eq!(fmt_double_17g(0.0001), "0.0001");
        assert_eq!(fmt_double_17g(0.00001), "1.0000000000000001e-05");
        assert_eq!(fmt_double_17g(-2.0), "-2");
        assert_eq!(fmt_double_17g(f64::INFINITY), "inf");
    }

    #[test]
    fn parse_f64_rules() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"1e3"), Some(1000.0));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"abc"), None);
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every i64 printed in decimal parses back to itself, and nothing else parses:
        /// a leading '+' or a leading zero is refused as string2ll refuses it.
        #[test]
        fn parse_i64_round_trips(n in any::<i64>()) {
            prop_assert_eq!(parse_i64(n.to_string().as_bytes()), Some(n));
            let plus = format!("+{}", n.unsigned_abs());
            prop_assert_eq!(parse_i64(plus.as_bytes()), None);
            let zero = format!("0{}", n.unsigned_abs());
            prop_assert_eq!(parse_i64(zero.as_bytes()), None);
        }

        /// `%.17g` output always reads back as the same double.
        #[test]
        fn g17_round_trips(d in any::<f64>().prop_filter("finite", |d| d.is_finite())) {
            let s = fmt_double_17g(d);
            prop_assert_eq!(s.parse::<f64>().unwrap(), d);
        }
    }
}
