//! The tokens of Lua 5.1's lexer (`llex.c`), with the line numbers it keeps: a token's
//! `line` is the lexer's line number right after reading it, which is what `lastline`
//! becomes when the parser moves past it. Only source the VM compiled is lexed, so an
//! error here only means "not in the subset".

use super::luanum::str2d;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Name(String),
    Str(Vec<u8>),
    Num(f64),
    /// Keywords and operators.
    Sym(&'static str),
    Eof,
}

#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub line: u32,
}

const KEYWORDS: &[&str] = &[
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if", "in", "local",
    "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
];

/// Why a script is left to Lua.
pub type Reject = String;

struct Lexer<'s> {
    s: &'s [u8],
    i: usize,
    line: u32,
}

impl Lexer<'_> {
    fn cur(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn at(&self, k: usize) -> Option<u8> {
        self.s.get(self.i + k).copied()
    }

    /// `inclinenumber`: `\n`, `\r`, `\n\r` and `\r\n` each count as one line break.
    fn newline(&mut self) {
        let old = self.cur();
        self.i += 1;
        if matches!(self.cur(), Some(b'\n' | b'\r')) && self.cur() != old {
            self.i += 1;
        }
        self.line += 1;
    }

    /// `skip_sep` after a `[`: Some(level) if a long bracket opens here.
    fn long_bracket(&self) -> bool {
        let mut k = 1;
        while self.at(k) == Some(b'=') {
            k += 1;
        }
        self.at(k) == Some(b'[')
    }

    fn next_token(&mut self) -> Result<Tok, Reject> {
        loop {
            let Some(c) = self.cur() else {
                return Ok(Tok::Eof);
            };
            match c {
                b'\n' | b'\r' => self.newline(),
                b' ' | b'\t' | 0x0b | 0x0c => self.i += 1,
                b'-' => {
                    if self.at(1) != Some(b'-') {
                        self.i += 1;
                        return Ok(Tok::Sym("-"));
                    }
                    self.i += 2;
                    if self.cur() == Some(b'[') && self.long_bracket() {
                        return Err("long comment".into());
                    }
                    while let Some(c) = self.cur() {
                        if c == b'\n' || c == b'\r' {
                            break;
                        }
                        self.i += 1;
                    }
                }
                b'[' => {
                    if self.long_bracket() || self.at(1) == Some(b'=') {
                        return Err("long string".into());
                    }
                    self.i += 1;
                    return Ok(Tok::Sym("["));
                }
                b'=' | b'<' | b'>' | b'~' => {
                    let two = self.at(1) == Some(b'=');
                    self.i += 1 + two as usize;
                    return Ok(Tok::Sym(match (c, two) {
                        (b'=', false) => "=",
                        (b'=', true) => "==",
                        (b'<', false) => "<",
                        (b'<', true) => "<=",
                        (b'>', false) => ">",
                        (b'>', true) => ">=",
                        (b'~', true) => "~=",
                        _ => return Err("stray ~".into()),
                    }));
                }
                b'"' | b'\'' => return self.string(c),
                b'.' => {
                    if self.at(1) == Some(b'.') {
                        if self.at(2) == Some(b'.') {
                            return Err("varargs".into());
                        }
                        self.i += 2;
                        return Ok(Tok::Sym(".."));
                    }
                    if !self.at(1).is_some_and(|d| d.is_ascii_digit()) {
                        self.i += 1;
                        return Ok(Tok::Sym("."));
                    }
                    return self.numeral();
                }
                b'0'..=b'9' => return self.numeral(),
                c if c.is_ascii_alphabetic() || c == b'_' => {
                    let start = self.i;
                    while self
                        .cur()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                    {
                        self.i += 1;
                    }
                    let w = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                    return Ok(match KEYWORDS.iter().find(|k| **k == w) {
                        Some(k) => Tok::Sym(k),
                        None => Tok::Name(w.to_string()),
                    });
                }
                _ => {
                    const SINGLE: &[&str] = &[
                        "(", ")", "{", "}", "]", ";", ":", ",", "+", "*", "/", "%", "^", "#",
                    ];
                    let Some(s) = SINGLE.iter().find(|s| s.as_bytes()[0] == c) else {
                        return Err(format!("character {c:#x}"));
                    };
                    self.i += 1;
                    return Ok(Tok::Sym(s));
                }
            }
        }
    }

    /// `read_numeral`: digits and dots, an optional exponent sign, then any alphanumerics;
    /// the lexeme converts with `luaO_str2d`.
    fn numeral(&mut self) -> Result<Tok, Reject> {
        let start = self.i;
        while self.cur().is_some_and(|c| c.is_ascii_digit() || c == b'.') {
            self.i += 1;
        }
        if matches!(self.cur(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.cur(), Some(b'+' | b'-')) {
                self.i += 1;
            }
        }
        while self
            .cur()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            self.i += 1;
        }
        match str2d(&self.s[start..self.i]) {
            Some(n) => Ok(Tok::Num(n)),
            None => Err("malformed number".into()),
        }
    }

    /// `read_string` with Lua 5.1's escapes.
    fn string(&mut self, del: u8) -> Result<Tok, Reject> {
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let Some(c) = self.cur() else {
                return Err("unfinished string".into());
            };
            match c {
                _ if c == del => {
                    self.i += 1;
                    return Ok(Tok::Str(out));
                }
                b'\n' | b'\r' => return Err("unfinished string".into()),
                b'\\' => {
                    self.i += 1;
                    let Some(e) = self.cur() else {
                        return Err("unfinished string".into());
                    };
                    match e {
                        b'a' => out.push(7),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'v' => out.push(11),
                        b'\n' | b'\r' => {
                            out.push(b'\n');
                            self.newline();
                            continue;
                        }
                        b'0'..=b'9' => {
                            let mut v: u32 = 0;
                            let mut k = 0;
                            while k < 3 && self.cur().is_some_and(|d| d.is_ascii_digit()) {
                                v = v * 10 + (self.cur().unwrap() - b'0') as u32;
                                self.i += 1;
                                k += 1;
                            }
                            if v > 255 {
                                return Err("escape sequence too large".into());
                            }
                            out.push(v as u8);
                            continue;
                        }
                        other => out.push(other),
                    }
                    self.i += 1;
                }
                _ => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }
}

/// All tokens of `src`, ending with `Eof`.
pub fn tokens(src: &[u8]) -> Result<Vec<Token>, Reject> {
    let mut lx = Lexer {
        s: src,
        i: 0,
        line: 1,
    };
    let mut out = Vec::new();
    loop {
        let tok = lx.next_token()?;
        let eof = tok == Tok::Eof;
        out.push(Token { tok, line: lx.line });
        if eof {
            return Ok(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_escapes() {
        let t = tokens(b"local a = 'x\\\ny'\r\n-- c\n\"\\65\\t\" 0x10 .5").unwrap();
        assert_eq!(t[0].tok, Tok::Sym("local"));
        assert_eq!(t[3].tok, Tok::Str(b"x\ny".to_vec()));
        assert_eq!(t[3].line, 2);
        assert_eq!(t[4].tok, Tok::Str(b"A\t".to_vec()));
        assert_eq!(t[4].line, 4);
        assert_eq!(t[5].tok, Tok::Num(16.0));
        assert_eq!(t[6].tok, Tok::Num(0.5));
        assert!(tokens(b"return [[x]]").is_err());
        assert!(tokens(b"--[==[ x ]==] return 1").is_err());
        assert!(tokens(b"--[ x\nreturn 1").is_ok());
    }
}
