//! VSIM's FILTER expressions, as Redis 8.0.2 reads and runs them.
//!
//! The language: numbers (`12`, `-1.5`, `1e3`), strings in single or double quotes (a
//! backslash keeps the next character from ending the string; the text is compared as
//! written, escapes included), tuples `[1, "a"]` (flat, of numbers and strings), selectors
//! `.field` reading the element's JSON attribute at top level, and the operators, from
//! the highest precedence down: `!`/`not`, `**` (right associative), `* / %`, `+ -`,
//! `> >= < <= == != in`, `and`/`&&`, `or`/`||`, with parentheses. Comparisons convert
//! strings to numbers (0 when not numeric) unless both sides are strings; `==` with a
//! JSON null is true only against another null. An element without attributes, or whose
//! selected field is missing or not a number, string, boolean, null or flat array, never
//! matches. Errors: `ERR syntax error in FILTER expression near: <rest>`, where the rest
//! starts where the tokenizer stopped, or is the whole expression for a structural error
//! (Redis records no token offsets), or empty when the tokenizer stopped at the end.

/// A value or operator.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Str(Vec<u8>),
    Tuple(Vec<Tok>),
    Sel(Vec<u8>),
    Null,
    Op(Op),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Open,
    Close,
    Not,
    Pow,
    Mul,
    Div,
    Mod,
    Add,
    Sub,
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
    In,
    And,
    Or,
}

const OPS: &[(&str, Op)] = &[
    ("(", Op::Open),
    (")", Op::Close),
    ("!", Op::Not),
    ("not", Op::Not),
    ("**", Op::Pow),
    ("*", Op::Mul),
    ("/", Op::Div),
    ("%", Op::Mod),
    ("+", Op::Add),
    ("-", Op::Sub),
    (">", Op::Gt),
    (">=", Op::Ge),
    ("<", Op::Lt),
    ("<=", Op::Le),
    ("==", Op::Eq),
    ("!=", Op::Ne),
    ("in", Op::In),
    ("and", Op::And),
    ("&&", Op::And),
    ("or", Op::Or),
    ("||", Op::Or),
];

const OP_CHARS: &[u8] = b"+-*%/!()<>=|&";

impl Op {
    fn prec(self) -> i32 {
        match self {
            Op::Open | Op::Close => 7,
            Op::Not => 6,
            Op::Pow => 5,
            Op::Mul | Op::Div | Op::Mod => 4,
            Op::Add | Op::Sub => 3,
            Op::Gt | Op::Ge | Op::Lt | Op::Le | Op::Eq | Op::Ne | Op::In => 2,
            Op::And => 1,
            Op::Or => 0,
        }
    }
    fn arity(self) -> usize {
        match self {
            Op::Open | Op::Close => 0,
            Op::Not => 1,
            _ => 2,
        }
    }
}

/// A compiled expression: values and operators in postfix order.
#[derive(Debug, Clone)]
pub struct Filter {
    program: Vec<Tok>,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn is_sel_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// C's strtod over the whole text: the value, or None when something is left over.
fn strtod_all(s: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(s).ok()?;
    let t = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    if t.is_empty() {
        return if s.is_empty() { Some(0.0) } else { None };
    }
    let (neg, body) = match t.as_bytes()[0] {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    if body.len() > 2 && (body.starts_with("0x") || body.starts_with("0X")) {
        let v = u64::from_str_radix(&body[2..], 16).ok()? as f64;
        return Some(if neg { -v } else { v });
    }
    t.parse::<f64>().ok()
}

struct Lexer<'a> {
    s: &'a [u8],
    p: usize,
}

impl Lexer<'_> {
    fn peek(&self, off: usize) -> u8 {
        self.s.get(self.p + off).copied().unwrap_or(0)
    }

    fn number(&mut self) -> Option<Tok> {
        let start = self.p;
        loop {
            let c = self.peek(0);
            let idx = self.p - start;
            if c.is_ascii_digit() || c == b'.' || c == b'e' || c == b'E' || (idx == 0 && c == b'-')
            {
                if idx >= 255 {
                    return None;
                }
                self.p += 1;
            } else {
                break;
            }
        }
        let text = &self.s[start..self.p];
        std::str::from_utf8(text)
            .ok()?
            .parse::<f64>()
            .ok()
            .filter(|_| !text.is_empty())
            .map(Tok::Num)
    }

    fn string(&mut self) -> Option<Tok> {
        let quote = self.peek(0);
        self.p += 1;
        let start = self.p;
        while self.p < self.s.len() {
            let c = self.s[self.p];
            if c == b'\\' && self.p + 1 < self.s.len() {
                self.p += 2;
                continue;
            }
            if c == quote {
                let t = Tok::Str(self.s[start..self.p].to_vec());
                self.p += 1;
                return Some(t);
            }
            self.p += 1;
        }
        None
    }

    fn tuple(&mut self) -> Option<Tok> {
        self.p += 1;
        let mut items = Vec::new();
        loop {
            while is_space(self.peek(0)) {
                self.p += 1;
            }
            if self.peek(0) == b']' {
                self.p += 1;
                break;
            }
            let c = self.peek(0);
            let ele = if c.is_ascii_digit() || c == b'-' {
                self.number()?
            } else if c == b'"' || c == b'\'' {
                self.string()?
            } else {
                return None;
            };
            items.push(ele);
            while is_space(self.peek(0)) {
                self.p += 1;
            }
            match self.peek(0) {
                b']' => {
                    self.p += 1;
                    break;
                }
                b',' => self.p += 1,
                _ => return None,
            }
        }
        Some(Tok::Tuple(items))
    }

    fn operator(&mut self) -> Option<Tok> {
        let start = self.p;
        while self.p < self.s.len()
            && (self.s[self.p].is_ascii_alphabetic() || OP_CHARS.contains(&self.s[self.p]))
        {
            self.p += 1;
        }
        let run = &self.s[start..self.p];
        let best = OPS
            .iter()
            .filter(|(name, _)| run.starts_with(name.as_bytes()))
            .max_by_key(|(name, _)| name.len())?;
        self.p = start + best.0.len();
        Some(Tok::Op(best.1))
    }
}

/// Tokenizes `s`; on error, the offset where the tokenizer stopped.
fn tokenize(s: &[u8]) -> Result<Vec<Tok>, usize> {
    let mut lx = Lexer { s, p: 0 };
    let mut toks: Vec<Tok> = Vec::new();
    loop {
        while is_space(lx.peek(0)) {
            lx.p += 1;
        }
        let minus_is_number = match toks.last() {
            None => true,
            Some(Tok::Op(op)) => *op != Op::Close,
            Some(_) => false,
        };
        let c = lx.peek(0);
        if lx.p >= s.len() {
            return Ok(toks);
        }
        let t = if c.is_ascii_digit()
            || (minus_is_number && c == b'-' && lx.peek(1).is_ascii_digit())
        {
            lx.number()
        } else if c == b'"' || c == b'\'' {
            lx.string()
        } else if c == b'.' {
            // 8.0.2 takes any dot as a selector, an empty one (which never matches) too.
            lx.p += 1;
            let start = lx.p;
            while is_sel_char(lx.peek(0)) {
                lx.p += 1;
            }
            Some(Tok::Sel(s[start..lx.p].to_vec()))
        } else if c == b'[' {
            lx.tuple()
        } else if c.is_ascii_alphabetic() || OP_CHARS.contains(&c) {
            lx.operator()
        } else {
            None
        };
        match t {
            Some(t) => toks.push(t),
            None => return Err(lx.p),
        }
    }
}

/// Compiles a FILTER expression, or returns Redis' error reply text.
pub fn compile(expr: &[u8]) -> Result<Filter, String> {
    // Redis reads the argument as a C string.
    let text = match expr.iter().position(|&c| c == 0) {
        Some(n) => &expr[..n],
        None => expr,
    };
    let err = |pos: usize| {
        let pos = if pos >= expr.len() { 0 } else { pos };
        format!(
            "ERR syntax error in FILTER expression near: {}",
            String::from_utf8_lossy(&text[pos.min(text.len())..])
        )
    };
    let toks = tokenize(text).map_err(err)?;
    let mut program = Vec::new();
    let mut ops: Vec<Op> = Vec::new();
    let mut items: usize = 0;
    let emit = |op: Op, program: &mut Vec<Tok>, items: &mut usize| -> Result<(), String> {
        if *items < op.arity() {
            return Err(err(0));
        }
        *items = *items - op.arity() + 1;
        program.push(Tok::Op(op));
        Ok(())
    };
    for t in toks {
        let op = match t {
            Tok::Op(op) => op,
            v => {
                program.push(v);
                items += 1;
                continue;
            }
        };
        match op {
            Op::Open => ops.push(op),
            Op::Close => loop {
                match ops.pop() {
                    None => return Err(err(0)),
                    Some(Op::Open) => break,
                    Some(top) => emit(top, &mut program, &mut items)?,
                }
            },
            _ => {
                while let Some(&top) = ops.last() {
                    if top == Op::Open || top.prec() < op.prec() {
                        break;
                    }
                    if op == Op::Pow && top.prec() <= op.prec() {
                        break;
                    }
                    ops.pop();
                    emit(top, &mut program, &mut items)?;
                }
                ops.push(op);
            }
        }
    }
    while let Some(op) = ops.pop() {
        if op == Op::Open {
            return Err(err(0));
        }
        emit(op, &mut program, &mut items)?;
    }
    if items != 1 {
        return Err(err(0));
    }
    Ok(Filter { program })
}

fn to_num(t: &Tok) -> f64 {
    match t {
        Tok::Num(n) => *n,
        Tok::Str(s) if s.len() < 256 => strtod_all(s).unwrap_or(0.0),
        _ => 0.0,
    }
}

fn to_bool(t: &Tok) -> bool {
    match t {
        Tok::Num(n) => *n != 0.0,
        Tok::Str(s) => !s.is_empty(),
        Tok::Null => false,
        _ => true,
    }
}

fn equal(a: &Tok, b: &Tok) -> bool {
    match (a, b) {
        (Tok::Str(x), Tok::Str(y)) => x == y,
        (Tok::Num(x), Tok::Num(y)) => x == y,
        (Tok::Null, _) | (_, Tok::Null) => matches!((a, b), (Tok::Null, Tok::Null)),
        _ => to_num(a) == to_num(b),
    }
}

impl Filter {
    /// Whether an element with attribute `json` passes (None: no attribute, never).
    pub fn matches(&self, json: Option<&[u8]>) -> bool {
        let Some(json) = json else {
            return false;
        };
        let mut stack: Vec<Tok> = Vec::new();
        for t in &self.program {
            let op = match t {
                Tok::Sel(field) => {
                    match json_field(json, field) {
                        Some(v) if !field.is_empty() => stack.push(v),
                        _ => return false,
                    }
                    continue;
                }
                Tok::Op(op) => *op,
                v => {
                    stack.push(v.clone());
                    continue;
                }
            };
            let b = stack.pop().unwrap_or(Tok::Null);
            let a = if op.arity() == 2 {
                stack.pop().unwrap_or(Tok::Null)
            } else {
                Tok::Null
            };
            let flag = |x: bool| if x { 1.0 } else { 0.0 };
            let r = match op {
                Op::Not => flag(!to_bool(&b)),
                Op::Pow => to_num(&a).powf(to_num(&b)),
                Op::Mul => to_num(&a) * to_num(&b),
                Op::Div => to_num(&a) / to_num(&b),
                Op::Mod => libm_fmod(to_num(&a), to_num(&b)),
                Op::Add => to_num(&a) + to_num(&b),
                Op::Sub => to_num(&a) - to_num(&b),
                Op::Gt => flag(to_num(&a) > to_num(&b)),
                Op::Ge => flag(to_num(&a) >= to_num(&b)),
                Op::Lt => flag(to_num(&a) < to_num(&b)),
                Op::Le => flag(to_num(&a) <= to_num(&b)),
                Op::Eq => flag(equal(&a, &b)),
                Op::Ne => flag(!equal(&a, &b)),
                Op::In => flag(match &b {
                    Tok::Tuple(items) => items.iter().any(|e| equal(&a, e)),
                    _ => false,
                }),
                Op::And => flag(to_bool(&a) && to_bool(&b)),
                Op::Or => flag(to_bool(&a) || to_bool(&b)),
                Op::Open | Op::Close => 0.0,
            };
            stack.push(Tok::Num(r));
        }
        stack.pop().is_some_and(|t| to_bool(&t))
    }
}

/// C's fmod (Rust's `%` on floats is the same operation).
fn libm_fmod(a: f64, b: f64) -> f64 {
    a % b
}

// ------------------------------------------------------------------ JSON field access

fn json_skip_ws(j: &[u8], p: &mut usize) {
    while *p < j.len() && is_space(j[*p]) {
        *p += 1;
    }
}

fn json_skip_string(j: &[u8], p: &mut usize) -> bool {
    if *p >= j.len() || j[*p] != b'"' {
        return false;
    }
    *p += 1;
    while *p < j.len() {
        match j[*p] {
            b'\\' => *p += 2,
            b'"' => {
                *p += 1;
                return true;
            }
            _ => *p += 1,
        }
    }
    false
}

fn json_skip_value(j: &[u8], p: &mut usize) -> bool {
    json_skip_ws(j, p);
    if *p >= j.len() {
        return false;
    }
    let lit = |p: &mut usize, l: &[u8]| {
        if j[*p..].starts_with(l) {
            *p += l.len();
            true
        } else {
            false
        }
    };
    match j[*p] {
        b'"' => json_skip_string(j, p),
        c @ (b'{' | b'[') => {
            let close = if c == b'{' { b'}' } else { b']' };
            let mut depth = 1;
            *p += 1;
            while *p < j.len() && depth > 0 {
                let c2 = j[*p];
                if c2 == b'"' {
                    if !json_skip_string(j, p) {
                        return false;
                    }
                    continue;
                }
                if c2 == c {
                    depth += 1;
                } else if c2 == close {
                    depth -= 1;
                }
                *p += 1;
            }
            depth == 0
        }
        b't' => lit(p, b"true"),
        b'f' => lit(p, b"false"),
        b'n' => lit(p, b"null"),
        _ => {
            let s = *p;
            while *p < j.len() && is_json_num_char(j[*p]) {
                *p += 1;
            }
            *p > s
        }
    }
}

fn is_json_num_char(c: u8) -> bool {
    c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E')
}

fn json_value(j: &[u8], p: &mut usize) -> Option<Tok> {
    json_skip_ws(j, p);
    if *p >= j.len() {
        return None;
    }
    match j[*p] {
        b'"' => {
            *p += 1;
            let mut out = Vec::new();
            let mut esc = false;
            while *p < j.len() {
                let c = j[*p];
                *p += 1;
                if esc {
                    out.push(match c {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        other => other,
                    });
                    esc = false;
                } else if c == b'\\' {
                    esc = true;
                } else if c == b'"' {
                    return Some(Tok::Str(out));
                } else {
                    out.push(c);
                }
            }
            None
        }
        b'[' => {
            *p += 1;
            json_skip_ws(j, p);
            let mut items = Vec::new();
            if *p < j.len() && j[*p] == b']' {
                *p += 1;
                return Some(Tok::Tuple(items));
            }
            loop {
                items.push(json_value(j, p)?);
                json_skip_ws(j, p);
                match j.get(*p)? {
                    b',' => {
                        *p += 1;
                        json_skip_ws(j, p);
                    }
                    b']' => {
                        *p += 1;
                        return Some(Tok::Tuple(items));
                    }
                    _ => return None,
                }
            }
        }
        b't' => json_literal(j, p, b"true", Tok::Num(1.0)),
        b'f' => json_literal(j, p, b"false", Tok::Num(0.0)),
        b'n' => json_literal(j, p, b"null", Tok::Null),
        c if c.is_ascii_digit() || c == b'-' || c == b'+' => {
            let s = *p;
            while *p < j.len() && *p - s < 255 && is_json_num_char(j[*p]) {
                *p += 1;
            }
            strtod_all(&j[s..*p]).map(Tok::Num)
        }
        _ => None,
    }
}

fn json_literal(j: &[u8], p: &mut usize, lit: &[u8], t: Tok) -> Option<Tok> {
    if !j[*p..].starts_with(lit) {
        return None;
    }
    if let Some(&n) = j.get(*p + lit.len()) {
        if !is_space(n) && n != b',' && n != b']' && n != b'}' {
            return None;
        }
    }
    *p += lit.len();
    Some(t)
}

/// The top-level `field` of the JSON object `j`, as an expression value.
fn json_field(j: &[u8], field: &[u8]) -> Option<Tok> {
    let mut p = 0;
    json_skip_ws(j, &mut p);
    if j.get(p) != Some(&b'{') {
        return None;
    }
    p += 1;
    loop {
        json_skip_ws(j, &mut p);
        if *j.get(p)? != b'"' {
            return None;
        }
        let key_start = p + 1;
        if !json_skip_string(j, &mut p) {
            return None;
        }
        let key = &j[key_start..p - 1];
        json_skip_ws(j, &mut p);
        if j.get(p) != Some(&b':') {
            return None;
        }
        p += 1;
        json_skip_ws(j, &mut p);
        if p >= j.len() {
            return None;
        }
        if key == field {
            return json_value(j, &mut p);
        }
        if !json_skip_value(j, &mut p) {
            return None;
        }
        json_skip_ws(j, &mut p);
        match j.get(p)? {
            b',' => p += 1,
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(e: &str, j: &str) -> bool {
        compile(e.as_bytes()).unwrap().matches(Some(j.as_bytes()))
    }

    #[test]
    fn evaluates() {
        let j = r#"{"year": 1984, "name": "The Matrix", "tags": [1, "a"], "n": null, "t": true}"#;
        assert!(run(".year > 1980 and .name == 'The Matrix'", j));
        assert!(run("(5+2)*3 == 21", j));
        assert!(run("2 ** 3 ** 2 == 512", j));
        assert!(run("'a' in .tags and 1 in .tags", j));
        assert!(run(".year in [1984, 2000]", j));
        assert!(!run(".n", j));
        assert!(run("!.n", j));
        assert!(run(".t == 1", j));
        assert!(!run(".missing == 0", j));
        assert!(!run(".year < 1000 || .year == 1", j));
        assert!(run("-1 < 0", j));
        assert!(run("10 % 3 == 1", j));
    }

    #[test]
    fn errors() {
        let e = |s: &str| compile(s.as_bytes()).unwrap_err();
        assert_eq!(e("(1"), "ERR syntax error in FILTER expression near: (1");
        assert_eq!(
            e("1 @ 2"),
            "ERR syntax error in FILTER expression near: @ 2"
        );
        assert_eq!(e(""), "ERR syntax error in FILTER expression near: ");
        assert_eq!(
            e(".x == null"),
            "ERR syntax error in FILTER expression near: .x == null"
        );
        assert_eq!(
            e("foo == 1"),
            "ERR syntax error in FILTER expression near:  == 1"
        );
    }
}
