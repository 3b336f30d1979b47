//! Argument templates: `key:{rand}`, `owner-{client}`, `{seq}`, `{round}`.
//!
//! A template is parsed once into literal runs and placeholders, then expanded per request
//! straight into the RESP output buffer. `{{` and `}}` stand for literal braces (as in Rust
//! format strings), so a Redis Cluster hash tag is written `lock:{{user}}`. Any other
//! `{name}` is an error, so a typo such as `{rnd}` is caught before anything is sent.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Lit(Vec<u8>),
    /// Uniform in `0..keyspace`, zero-padded to 12 digits as redis-benchmark's
    /// `__rand_int__`, so keys compare byte for byte with a redis-benchmark run.
    Rand,
    /// The client's number, 0-based.
    Client,
    /// The client's request (or, for multi-command workloads, cycle) counter, 0-based.
    Seq,
    /// The round, 1-based: built-in workloads put it in their key names so that a later
    /// round does not find the keys an earlier one left.
    Round,
}

/// One parsed argument template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

/// Why a template did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub template: String,
    pub reason: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad template \"{}\": {}", self.template, self.reason)
    }
}

/// The values placeholders expand to for one request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Vars {
    pub rand: u64,
    pub client: u64,
    pub seq: u64,
    pub round: u64,
}

impl Template {
    pub fn parse(s: &str) -> Result<Template, TemplateError> {
        let err = |reason: String| TemplateError {
            template: s.to_string(),
            reason,
        };
        let b = s.as_bytes();
        let mut parts = Vec::new();
        let mut lit = Vec::new();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'{' if b.get(i + 1) == Some(&b'{') => {
                    lit.push(b'{');
                    i += 2;
                }
                b'}' if b.get(i + 1) == Some(&b'}') => {
                    lit.push(b'}');
                    i += 2;
                }
                b'{' => {
                    let Some(end) = b[i..].iter().position(|&c| c == b'}') else {
                        return Err(err(format!(
                            "unclosed '{{' at byte {i} (write {{{{ for a literal brace)"
                        )));
                    };
                    let name = &s[i + 1..i + end];
                    let part = match name {
                        "rand" => Part::Rand,
                        "client" => Part::Client,
                        "seq" => Part::Seq,
                        "round" => Part::Round,
                        _ => {
                            return Err(err(format!(
                                "unknown placeholder {{{name}}} (known: {{rand}} {{client}} {{seq}} {{round}}; write {{{{{name}}}}} for literal braces)"
                            )))
                        }
                    };
                    if !lit.is_empty() {
                        parts.push(Part::Lit(std::mem::take(&mut lit)));
                    }
                    parts.push(part);
                    i += end + 1;
                }
                b'}' => {
                    return Err(err(format!(
                        "unmatched '}}' at byte {i} (write }}}} for a literal brace)"
                    )))
                }
                c => {
                    lit.push(c);
                    i += 1;
                }
            }
        }
        if !lit.is_empty() || parts.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Ok(Template { parts })
    }

    /// A template that is only the given text (braces included, nothing expanded).
    pub fn literal(s: &[u8]) -> Template {
        Template {
            parts: vec![Part::Lit(s.to_vec())],
        }
    }

    /// The text, if the template has no placeholder.
    fn as_literal(&self) -> Option<&[u8]> {
        match self.parts.as_slice() {
            [Part::Lit(l)] => Some(l),
            _ => None,
        }
    }

    /// Appends the expansion to `out`.
    pub fn expand_into(&self, v: &Vars, out: &mut Vec<u8>) {
        let mut num = itoa::Buffer::new();
        for p in &self.parts {
            match p {
                Part::Lit(l) => out.extend_from_slice(l),
                Part::Rand => {
                    let digits = num.format(v.rand).as_bytes();
                    if digits.len() < 12 {
                        out.extend_from_slice(&b"000000000000"[digits.len()..]);
                    }
                    out.extend_from_slice(digits);
                }
                Part::Client => out.extend_from_slice(num.format(v.client).as_bytes()),
                Part::Seq => out.extend_from_slice(num.format(v.seq).as_bytes()),
                Part::Round => out.extend_from_slice(num.format(v.round).as_bytes()),
            }
        }
    }

    pub fn expand(&self, v: &Vars) -> Vec<u8> {
        let mut out = Vec::new();
        self.expand_into(v, &mut out);
        out
    }
}

/// A command: one template per argument.
#[derive(Debug, Clone)]
pub struct CmdTemplate {
    pub args: Vec<Template>,
    /// The RESP encoding as runs of fixed bytes (the header, literal arguments with their
    /// `$len` lines) and arguments to expand, built once so that a request costs a few
    /// copies, not a formatting pass per argument.
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone)]
enum Piece {
    Fixed(Vec<u8>),
    /// Index into `args`.
    Arg(usize),
}

impl CmdTemplate {
    pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<CmdTemplate, TemplateError> {
        Ok(CmdTemplate::new(
            args.iter()
                .map(|a| Template::parse(a.as_ref()))
                .collect::<Result<_, _>>()?,
        ))
    }

    pub fn new(args: Vec<Template>) -> CmdTemplate {
        let mut pieces = Vec::new();
        let mut fixed = format!("*{}\r\n", args.len()).into_bytes();
        for (i, a) in args.iter().enumerate() {
            match a.as_literal() {
                Some(l) => {
                    fixed.extend_from_slice(format!("${}\r\n", l.len()).as_bytes());
                    fixed.extend_from_slice(l);
                    fixed.extend_from_slice(b"\r\n");
                }
                None => {
                    if !fixed.is_empty() {
                        pieces.push(Piece::Fixed(std::mem::take(&mut fixed)));
                    }
                    pieces.push(Piece::Arg(i));
                }
            }
        }
        if !fixed.is_empty() {
            pieces.push(Piece::Fixed(fixed));
        }
        CmdTemplate { args, pieces }
    }

    /// Replaces argument `i` with a literal.
    pub fn set_literal(&mut self, i: usize, text: &[u8]) {
        let mut args = std::mem::take(&mut self.args);
        args[i] = Template::literal(text);
        *self = CmdTemplate::new(args);
    }

    /// The command's name, lowercased, for INFO commandstats (`cmdstat_<name>`).
    pub fn name(&self) -> String {
        let v = Vars::default();
        String::from_utf8_lossy(&self.args[0].expand(&v)).to_ascii_lowercase()
    }

    /// Appends the command as a RESP multibulk, expanding each argument in place.
    pub fn encode_into(&self, v: &Vars, out: &mut Vec<u8>, scratch: &mut Vec<u8>) {
        let mut num = itoa::Buffer::new();
        for p in &self.pieces {
            match p {
                Piece::Fixed(b) => out.extend_from_slice(b),
                Piece::Arg(i) => {
                    scratch.clear();
                    self.args[*i].expand_into(v, scratch);
                    out.push(b'$');
                    out.extend_from_slice(num.format(scratch.len()).as_bytes());
                    out.extend_from_slice(b"\r\n");
                    out.extend_from_slice(scratch);
                    out.extend_from_slice(b"\r\n");
                }
            }
        }
    }

    pub fn expand(&self, v: &Vars) -> Vec<Vec<u8>> {
        self.args.iter().map(|a| a.expand(v)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(t: &str, v: Vars) -> String {
        String::from_utf8(Template::parse(t).unwrap().expand(&v)).unwrap()
    }

    #[test]
    fn expands_placeholders_and_escapes() {
        let v = Vars {
            rand: 42,
            client: 3,
            seq: 7,
            round: 2,
        };
        assert_eq!(x("key:{rand}", v), "key:000000000042");
        assert_eq!(x("{client}-{seq}-{round}", v), "3-7-2");
        assert_eq!(x("lock:{{user}}", v), "lock:{user}");
        assert_eq!(x("", v), "");
        assert_eq!(x("plain", v), "plain");
    }

    #[test]
    fn rejects_bad_templates() {
        for (t, why) in [
            ("key:{rnd}", "unknown placeholder {rnd}"),
            ("key:{rand", "unclosed '{'"),
            ("key:}", "unmatched '}'"),
        ] {
            let e = Template::parse(t).unwrap_err();
            assert!(e.reason.contains(why), "{t}: {e}");
            assert!(e.to_string().starts_with(&format!("bad template \"{t}\"")));
        }
    }

    #[test]
    fn encodes_resp() {
        let c = CmdTemplate::parse(&["GET", "k:{client}", "{{x}}"]).unwrap();
        let (mut out, mut s) = (Vec::new(), Vec::new());
        c.encode_into(
            &Vars {
                client: 12,
                ..Vars::default()
            },
            &mut out,
            &mut s,
        );
        assert_eq!(out, b"*3\r\n$3\r\nGET\r\n$4\r\nk:12\r\n$3\r\n{x}\r\n");
        assert_eq!(c.name(), "get");
    }
}
