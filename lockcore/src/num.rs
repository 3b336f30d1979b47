//! Number parsing and formatting with Redis' exact rules.

/// The decimal text of `n` as Bytes. -9..=99 (a lock's hold count, HINCRBY's usual result)
/// come from a static table: no allocation.
pub fn int_bytes(n: i64) -> bytes::Bytes {
    static POS: [[u8; 2]; 100] = {
        let mut t = [[0u8; 2]; 100];
        let mut i = 0;
        while i < 100 {
            t[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
            i += 1;
        }
        t
    };
    static NEG: [[u8; 2]; 10] = {
        let mut t = [[0u8; 2]; 10];
        let mut i = 0;
        while i < 10 {
            t[i] = [b'-', b'0' + i as u8];
            i += 1;
        }
        t
    };
    match n {
        0..=9 => bytes::Bytes::from_static(&POS[n as usize][1..]),
        10..=99 => bytes::Bytes::from_static(&POS[n as usize]),
        -9..=-1 => bytes::Bytes::from_static(&NEG[(-n) as usize]),
        _ => bytes::Bytes::from(itoa::Buffer::new().format(n).to_owned()),
    }
}

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
    ld_str_human(format!("{d:.17}"))
}

/// The trimming of Redis' `ld2string(.., LD_STR_HUMAN)` applied to a `%.17Lf` text:
/// trailing zeros and a bare point cut, `-0` as `0`.
fn ld_str_human(mut s: String) -> String {
    if s.contains('.') {
        let cut = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(cut);
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

/// A C `long double` as Redis' x86-64 build has it: the x87 80-bit extended format, 64-bit
/// significand, rounding to nearest even. INCRBYFLOAT and HINCRBYFLOAT add in it, so
/// `INCRBYFLOAT k 0.1` three times gives `0.3` (a double would give 0.30000000000000004),
/// and their range reaches 1.19e4932.
pub type LongDouble = rustc_apfloat::ieee::X87DoubleExtended;

/// Parses an INCRBYFLOAT/HINCRBYFLOAT operand as Redis' `string2ld` does with `strtold`:
/// no leading space, nothing after the number, no NaN, and a finite text that overflows
/// to infinity or underflows to zero (ERANGE) refused; `inf` spelled out is accepted.
pub fn parse_long_double(s: &[u8]) -> Option<LongDouble> {
    use rustc_apfloat::{Float, Round, Status};
    // Grammar (and the inf/NaN spellings) as strtod reads it.
    let d = parse_f64(s)?;
    if d.is_infinite() && s.iter().any(|c| c.eq_ignore_ascii_case(&b'i')) {
        let inf = LongDouble::INFINITY;
        return Some(if d < 0.0 { -inf } else { inf });
    }
    if s.len() >= 5 * 1024 {
        // MAX_LONG_DOUBLE_CHARS: string2ld's buffer.
        return None;
    }
    let st = std::str::from_utf8(s).ok()?;
    let st = st.strip_prefix('+').unwrap_or(st);
    let r = LongDouble::from_str_r(st, Round::NearestTiesToEven).ok()?;
    let erange = r.status.intersects(Status::OVERFLOW | Status::UNDERFLOW);
    if erange && (r.value.is_infinite() || r.value.is_zero()) {
        return None;
    }
    Some(r.value)
}

/// `a + b` in long double, or None when the sum is NaN or infinite (INCRBYFLOAT's "would
/// produce NaN or Infinity").
pub fn add_long_double(a: LongDouble, b: LongDouble) -> Option<LongDouble> {
    use rustc_apfloat::Float;
    let r = (a + b).value;
    r.is_finite().then_some(r)
}

/// Formats a long double as Redis' `ld2string(.., LD_STR_HUMAN)`: glibc's `%.17Lf` (the
/// exact value rounded half to even at 17 decimals, no exponent), trailing zeros and a bare
/// point cut, and `-0` as `0`. The value must be finite.
pub fn fmt_long_double_human(v: LongDouble) -> String {
    use num_bigint::BigUint;
    use rustc_apfloat::Float;
    debug_assert!(v.is_finite());
    let bits = v.to_bits();
    let negative = bits >> 79 & 1 == 1;
    let significand = bits as u64;
    let biased = (bits >> 64) as i64 & 0x7fff;
    // value = significand * 2^exp (denormals have the exponent of the smallest normal).
    let exp = biased.max(1) - 16383 - 63;
    let mut n = BigUint::from(significand) * BigUint::from(10u64).pow(17);
    if exp >= 0 {
        n <<= exp as u64;
    } else {
        let shift = (-exp) as u64;
        let q = &n >> shift;
        let rem = n - (&q << shift);
        let half = BigUint::from(1u8) << (shift - 1);
        n = if rem > half || (rem == half && q.bit(0)) {
            q + 1u8
        } else {
            q
        };
    }
    let digits = format!("{n:0>18}");
    let (int, frac) = digits.split_at(digits.len() - 17);
    let sign = if negative { "-" } else { "" };
    ld_str_human(format!("{sign}{int}.{frac}"))
}

/// Formats like C's `printf("%.17g", d)`, which Redis 7.0 uses for scores and doubles.
pub fn fmt_double_17g(d: f64) -> String {
    fmt_g(d, 17)
}

/// How a release prints a double in a reply and a Lua number passed to a command: Redis
/// 7.0 with `%.17g`, Redis 7.2 and later (and Valkey) with the shortest text that reads
/// back as the same double (see [`fmt_shortest`]). GEO coordinates went from a long
/// double's `%.17Lf` to the shortest text in Redis 8.0 only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DoubleFmt {
    #[default]
    Printf17g,
    Shortest,
    ShortestGeo,
}

impl DoubleFmt {
    /// A double in a reply (Redis' `addReplyDouble`).
    pub fn double(self, d: f64) -> String {
        match self {
            DoubleFmt::Printf17g => fmt_double_17g(d),
            DoubleFmt::Shortest | DoubleFmt::ShortestGeo => fmt_shortest_reply(d),
        }
    }

    /// Redis' `d2string`, which ZSCAN's scores and a listpack's stored scores go through:
    /// an integral value within +-LLONG_MAX/2 as an integer in every release, else `%.17g`
    /// (7.0) or the shortest text (7.2+).
    pub fn d2string(self, d: f64) -> String {
        match self {
            DoubleFmt::Printf17g if d.is_finite() && d != 0.0 => match double_to_i64(d) {
                Some(i) => i.to_string(),
                None => fmt_double_17g(d),
            },
            DoubleFmt::Printf17g => fmt_double_17g(d),
            DoubleFmt::Shortest | DoubleFmt::ShortestGeo => fmt_shortest_reply(d),
        }
    }

    /// A score as DEBUG DIGEST mixes it in: `%.17g` (7.0) or `fpconv_dtoa` (7.2+), without
    /// the integer shortcut.
    pub fn digest(self, d: f64) -> String {
        match self {
            DoubleFmt::Printf17g => fmt_double_17g(d),
            _ if d.is_finite() && d != 0.0 => fmt_shortest(d),
            _ => fmt_double_17g(d),
        }
    }

    /// A GEO coordinate in a reply (`addReplyHumanLongDouble` before Redis 8.0 and in
    /// Valkey, a double since 8.0).
    pub fn human(self, d: f64) -> String {
        match self {
            DoubleFmt::ShortestGeo => fmt_shortest_reply(d),
            _ => fmt_human(d),
        }
    }
}

/// `d2string` of Redis 7.2+: NaN and infinities spelled out, a signed zero, an integral
/// value within +-LLONG_MAX/2 as an integer, the rest as [`fmt_shortest`].
pub fn fmt_shortest_reply(d: f64) -> String {
    if !d.is_finite() || d == 0.0 {
        return fmt_double_17g(d);
    }
    match double_to_i64(d) {
        Some(i) => i.to_string(),
        None => fmt_shortest(d),
    }
}

/// Redis' `double2ll`: `d` as an i64 when it is integral and within +-LLONG_MAX/2 (where
/// every such double is exact). -0 gives 0.
pub fn double_to_i64(d: f64) -> Option<i64> {
    const HALF: f64 = (i64::MAX / 2) as f64;
    if !(-HALF..=HALF).contains(&d) {
        return None;
    }
    let i = d as i64;
    (i as f64 == d).then_some(i)
}

/// A finite, non-zero double as Redis 7.2+'s `fpconv_dtoa` writes it: the shortest digits
/// that read back as `d`, then
/// - as an integer padded with zeros when the exponent is below the digit count plus 7
///   (`9223372036854776000`);
/// - as a plain decimal when the value has a fraction and its exponent is above -7, or
///   the digits reach within 4 of the point (`0.000001`, `0.3333333333333333`);
/// - else in scientific notation without a padded exponent (`1e+21`, `1.5e-7`).
pub fn fmt_shortest(d: f64) -> String {
    let sci = format!("{:e}", d.abs());
    let (mant, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let nd = digits.len() as i32;
    // d = digits * 10^k
    let k = exp.parse::<i32>().expect("exponent") - (nd - 1);
    let e = (k + nd - 1).abs();
    let mut out = String::with_capacity(26);
    if d < 0.0 {
        out.push('-');
    }
    if k >= 0 && e < nd + 7 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', k as usize));
    } else if k < 0 && (k > -7 || e < 4) {
        let offset = nd + k;
        if offset <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-offset) as usize));
            out.push_str(&digits);
        } else {
            out.push_str(&digits[..offset as usize]);
            out.push('.');
            out.push_str(&digits[offset as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if nd > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if k + nd - 1 < 0 { '-' } else { '+' });
        out.push_str(&e.to_string());
    }
    out
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

/// Parses a double the way C's `strtod` reads it, requiring the whole input: decimal or
/// hexadecimal (`0x1p3`) forms, `inf`/`infinity`; NaN is rejected. With `strict` (Redis'
/// `getDoubleFromObject`: scores, weights, timeouts) leading spaces, empty input and
/// overflow/underflow are errors; without it (score range bounds, which Redis parses
/// with a bare `strtod`) leading spaces are skipped and the empty string reads as 0.
pub(crate) fn parse_strtod(s: &[u8], strict: bool) -> Option<f64> {
    let mut i = 0;
    if strict {
        if s.is_empty() || s[0].is_ascii_whitespace() {
            return None;
        }
    } else {
        while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
            i += 1;
        }
        if i == s.len() {
            return (i == 0).then_some(0.0);
        }
    }
    let body = &s[i..];
    let (neg, rest) = match body.first() {
        Some(b'-') => (true, &body[1..]),
        Some(b'+') => (false, &body[1..]),
        _ => (false, body),
    };
    let lower = rest.to_ascii_lowercase();
    let v = if lower == b"inf" || lower == b"infinity" {
        f64::INFINITY
    } else if lower.starts_with(b"0x") {
        parse_hex_float(&lower[2..])?
    } else {
        if rest.is_empty()
            || !rest
                .iter()
                .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
        {
            return None;
        }
        let v: f64 = std::str::from_utf8(rest).ok()?.parse().ok()?;
        if strict
            && (v.is_infinite()
                || (v == 0.0
                    && rest.iter().any(|c| (b'1'..=b'9').contains(c))
                    && !mantissa_is_zero(rest)))
        {
            // strtod reports ERANGE; Redis rejects it.
            return None;
        }
        v
    };
    if v.is_nan() {
        return None;
    }
    Some(if neg { -v } else { v })
}

/// True if the digits before any exponent are all zero ("0.000e5").
fn mantissa_is_zero(s: &[u8]) -> bool {
    s.iter()
        .take_while(|c| !matches!(c, b'e' | b'E'))
        .all(|c| matches!(c, b'0' | b'.'))
}

/// The part of a C hex float after "0x": hex digits, an optional fraction, an optional
/// binary exponent `p[+-]N`.
fn parse_hex_float(s: &[u8]) -> Option<f64> {
    let (mant, exp) = match s.iter().position(|&c| c == b'p') {
        Some(p) => (&s[..p], Some(&s[p + 1..])),
        None => (s, None),
    };
    let (int, frac) = match mant.iter().position(|&c| c == b'.') {
        Some(p) => (&mant[..p], &mant[p + 1..]),
        None => (mant, &b""[..]),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0.0f64;
    for &c in int {
        v = v * 16.0 + (c as char).to_digit(16)? as f64;
    }
    let mut scale = 1.0 / 16.0;
    for &c in frac {
        v += (c as char).to_digit(16)? as f64 * scale;
        scale /= 16.0;
    }
    if let Some(e) = exp {
        let e: i32 = std::str::from_utf8(e).ok()?.parse().ok()?;
        v *= 2f64.powi(e);
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What redis-server 8.0.2 printed for each (ZADD then ZRANGE WITHSCORES, and EVAL
    /// passing the number to SET).
    #[test]
    fn shortest_doubles_as_redis_8() {
        let reply = [
            (0.1, "0.1"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (0.00001, "0.00001"),
            (1e17, "100000000000000000"),
            (4e18, "4000000000000000000"),
            (5e18, "5e+18"),
            (9223372036854775808.0, "9223372036854776000"),
            (72057594037927936.0, "72057594037927936"),
            (5e-324, "5e-324"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (1.23e-18, "1.23e-18"),
            (1.0 / 3.0, "0.3333333333333333"),
            (12345678.9, "12345678.9"),
            (123.456, "123.456"),
            (-1.5, "-1.5"),
            (-1e-7, "-1e-7"),
            (0.30000000000000004, "0.30000000000000004"),
            (13.361389338970184, "13.361389338970184"),
            (100.0, "100"),
        ];
        for (d, want) in reply {
            assert_eq!(DoubleFmt::Shortest.double(d), want, "{d:e}");
        }
        assert_eq!(fmt_shortest(1e20), "1e+20");
        assert_eq!(DoubleFmt::Shortest.double(-0.0), "-0");
        assert_eq!(DoubleFmt::Shortest.double(f64::INFINITY), "inf");
        assert_eq!(DoubleFmt::Printf17g.double(0.1), "0.10000000000000001");
        assert_eq!(double_to_i64(-0.0), Some(0));
        assert_eq!(double_to_i64(6e18), None);
    }

    #[test]
    fn int_bytes_is_the_decimal_text() {
        for n in (-1000..=1000).chain([i64::MIN, i64::MAX, -10, 100]) {
            assert_eq!(&int_bytes(n)[..], n.to_string().as_bytes(), "{n}");
        }
    }

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

    fn ld(s: &str) -> String {
        fmt_long_double_human(parse_long_double(s.as_bytes()).unwrap())
    }

    fn sum(a: &str, b: &str) -> String {
        let (a, b) = (
            parse_long_double(a.as_bytes()),
            parse_long_double(b.as_bytes()),
        );
        fmt_long_double_human(add_long_double(a.unwrap(), b.unwrap()).unwrap())
    }

    /// Outputs of redis-server 7.0.15 (x86-64, glibc) for the same INCRBYFLOATs.
    #[test]
    fn long_double_matches_redis() {
        assert_eq!(sum(&sum("0.1", "0.1"), "0.1"), "0.3");
        assert_eq!(ld("10.5"), "10.5");
        assert_eq!(ld("-0"), "0");
        assert_eq!(ld("5.0e3"), "5000");
        assert_eq!(ld("1e-20"), "0");
        assert_eq!(ld("-1e-20"), "0");
        assert_eq!(sum("1.1e300", "1.1e300"), "2200000000000000000063359061465590277183064664651725013436767694827274494554247624853764833524497315699976922482705985222673413109647090321946348450261220431240054188092790254799220835077967412931813277364328258722912773705124065910396636232562146487596473087632330523523555758381370069180821979267072");
        assert_eq!(sum("3.0e3", "2.0e3"), "5000");
        assert_eq!(ld("1e400").len(), 401);
        // strtold's ERANGE: overflow to infinity and underflow to zero are refused.
        assert!(parse_long_double(b"1e5000").is_none());
        assert!(parse_long_double(b"1e-5000").is_none());
        assert!(parse_long_double(b"0e-5000").is_some());
        assert!(parse_long_double(b"inf").is_some());
        assert!(parse_long_double(b"nan").is_none());
        assert!(parse_long_double(b" 1").is_none());
        assert!(parse_long_double(b"1 ").is_none());
        assert!(parse_long_double(b"1e").is_none());
        let inf = parse_long_double(b"inf").unwrap();
        assert!(add_long_double(inf, parse_long_double(b"1").unwrap()).is_none());
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

    #[test]
    fn strtod_like_redis() {
        assert_eq!(parse_strtod(b"0x10", true), Some(16.0));
        assert_eq!(parse_strtod(b"0x1.8p1", true), Some(3.0));
        assert_eq!(parse_strtod(b"-inf", true), Some(f64::NEG_INFINITY));
        assert_eq!(parse_strtod(b"5.", true), Some(5.0));
        assert_eq!(parse_strtod(b".5", true), Some(0.5));
        assert_eq!(parse_strtod(b" 1", true), None);
        assert_eq!(parse_strtod(b" 1", false), Some(1.0));
        assert_eq!(parse_strtod(b"", false), Some(0.0));
        assert_eq!(parse_strtod(b"", true), None);
        assert_eq!(parse_strtod(b"1 ", false), None);
        assert_eq!(parse_strtod(b"nan", true), None);
        assert_eq!(parse_strtod(b"1e400", true), None);
        assert_eq!(parse_strtod(b"1e-400", true), None);
        assert_eq!(parse_strtod(b"0e10", true), Some(0.0));
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

#[cfg(test)]
mod shortest_tests {
    #[test]
    fn matches_redis8_replies() {
        // What Redis 8.0.2 prints (ZSCORE, VEMB) for these values.
        for (d, want) in [
            (0.0001234, "1.234e-4"),
            (0.001234, "0.001234"),
            (1e22, "1e+22"),
            (1.2345678e21, "1.2345678e+21"),
            (123e5, "12300000"),
            (1.5e300, "1.5e+300"),
            (-0.0001234, "-1.234e-4"),
            (1e-300, "1e-300"),
            (123456789012345678.0, "123456789012345680"),
            (0.1234567890123, "0.1234567890123"),
            (5e-324, "5e-324"),
            (0.5, "0.5"),
            (-2.0, "-2"),
            (1e-7f32 as f64, "1.0000000116860974e-7"),
            // An integral value within +-LLONG_MAX/2 prints exactly, as an integer.
            (1e17f32 as f64, "99999998430674944"),
        ] {
            assert_eq!(super::DoubleFmt::Shortest.double(d), want, "{d}");
        }
    }
}
