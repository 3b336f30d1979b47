//! Redis' glob-style matcher (`stringmatchlen`): `*`, `?`, `[abc]`, `[^a-z]`, `\x`.
//! Used by KEYS, SCAN MATCH, PSUBSCRIBE, CONFIG GET and LOCK.LIST.

/// True if `s` matches `pattern`.
pub fn matches(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    let mut steps = 0u32;
    match_impl(pattern, s, nocase, &mut steps, 0)
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

/// Like Redis (since the fix for CVE-2022-36021), a pattern nesting more than 1000 `*`
/// deep matches nothing; the recursion depth stays small enough for a task's stack. We
/// also bound total work so a pattern cannot stall the keyspace lock.
const MAX_NESTING: u32 = 1000;

fn match_impl(mut p: &[u8], mut s: &[u8], nocase: bool, steps: &mut u32, nesting: u32) -> bool {
    *steps += 1;
    if *steps > 1_000_000 || nesting > MAX_NESTING {
        return false;
    }
    while !p.is_empty() && !s.is_empty() || (!p.is_empty() && p[0] == b'*') {
        match p[0] {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                for i in 0..=s.len() {
                    if match_impl(&p[1..], &s[i..], nocase, steps, nesting + 1) {
                        return true;
                    }
                    if *steps > 1_000_000 {
                        return false;
                    }
                }
                return false;
            }
            b'?' => {
                s = &s[1..];
                p = &p[1..];
            }
            b'[' => {
                p = &p[1..];
                let not = p.first() == Some(&b'^');
                if not {
                    p = &p[1..];
                }
                let mut matched = false;
                loop {
                    if p.is_empty() {
                        break;
                    }
                    if p[0] == b'\\' && p.len() >= 2 {
                        p = &p[1..];
                        if p[0] == s[0] {
                            matched = true;
                        }
                    } else if p[0] == b']' {
                        break;
                    } else if p.len() >= 3 && p[1] == b'-' {
                        let (mut lo, mut hi) = (p[0], p[2]);
                        if lo > hi {
                            std::mem::swap(&mut lo, &mut hi);
                        }
                        let c = s[0];
                        let (c, lo, hi) = if nocase {
                            (
                                c.to_ascii_lowercase(),
                                lo.to_ascii_lowercase(),
                                hi.to_ascii_lowercase(),
                            )
                        } else {
                            (c, lo, hi)
                        };
                        if c >= lo && c <= hi {
                            matched = true;
                        }
                        p = &p[2..];
                    } else if eq(p[0], s[0], nocase) {
                        matched = true;
                    }
                    p = &p[1..];
                }
                // p is at ']' or empty (an unterminated class matches as if closed).
                if !p.is_empty() {
                    p = &p[1..];
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                s = &s[1..];
            }
            b'\\' if p.len() >= 2 => {
                if !eq(p[1], s[0], nocase) {
                    return false;
                }
                p = &p[2..];
                s = &s[1..];
            }
            c => {
                if !eq(c, s[0], nocase) {
                    return false;
                }
                p = &p[1..];
                s = &s[1..];
            }
        }
        if s.is_empty() {
            while p.first() == Some(&b'*') {
                p = &p[1..];
            }
            break;
        }
    }
    p.is_empty() && s.is_empty()
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn glob_rules() {
        assert!(matches(b"*", b"", false));
        assert!(matches(b"h?llo", b"hello", false));
        assert!(matches(b"h*llo", b"heeeello", false));
        assert!(matches(b"h[ae]llo", b"hallo", false));
        assert!(!matches(b"h[^e]llo", b"hello", false));
        assert!(matches(b"h[a-b]llo", b"hbllo", false));
        assert!(matches(
            b"redisson_lock__channel:*",
            b"redisson_lock__channel:{a}",
            false
        ));
        assert!(matches(b"a\\*b", b"a*b", false));
        assert!(!matches(b"a\\*b", b"axb", false));
        assert!(matches(b"SAVE", b"save", true));
        assert!(!matches(b"a*b", b"a", false));
        assert!(matches(b"*a*a*a*a*a*a*a*a*a*b", &[b'a'; 30], false) == false);
    }
}
