//! A parser for the subset of Lua 5.1 that plans run, shaped like `lparser.c` (same
//! statement and expression grammar, same operator priorities) so it reads the same tree
//! and records the same line numbers the VM's code generator does:
//! - a call's line is the line of its `(` (`funcargs`);
//! - an arithmetic, comparison or concatenation's line is `lastline` after its right
//!   operand (`luaK_posfix`), a unary minus's after its operand (`luaK_prefix`), and a
//!   chain of `..` is one instruction, with the line of its innermost `..`.
//!
//! It also records, for each operand that can be blamed in an error message, the name the
//! VM's `getobjname` gives it: `local 'x'` for a local, `field '?'` for `KEYS[i]` and
//! `ARGV[i]`, nothing for constants, calls and computed values. Where the VM's answer
//! depends on code layout (an `and`/`or` value), the planner only accepts the operand if
//! its type proves it can never be blamed.

use bytes::Bytes;

use lockcore::engine::spec::{CommandSpec, Exec};

use super::lex::{tokens, Reject, Tok, Token};

/// How the VM names an operand in "attempt to ... (a nil value)".
#[derive(Clone, Debug, PartialEq)]
pub enum Name {
    None,
    Local(String),
    /// `KEYS[i]`/`ARGV[i]`: `field '?'` (the key is not a string constant).
    Field,
    /// Depends on code layout: such an operand must be proven never blamed.
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Builtin {
    Call,
    Pcall,
    StatusReply,
    ErrorReply,
    ToNumber,
    ToString,
}

#[derive(Debug)]
pub enum Field {
    Item(Expr),
    Err(Expr),
    Ok(Expr),
}

#[derive(Debug)]
pub enum Expr {
    Nil,
    Bool(bool),
    Num(f64),
    Str(Bytes),
    Local(usize),
    /// `KEYS[e]` (true) or `ARGV[e]` (false).
    Index(bool, Box<Expr>),
    /// `#KEYS` (true) or `#ARGV` (false).
    Len(bool),
    /// A call of one of the builtins; `line` is its `(`. For `redis.call`/`pcall` of a
    /// literal command name, the command's spec when it is known at compile time.
    Call(Builtin, Vec<Expr>, u32, Option<&'static CommandSpec>),
    Table(Vec<Field>),
    Arith(ArithOp, Box<[Expr; 2]>, u32, Box<[Name; 2]>),
    Neg(Box<Expr>, u32, Name),
    Concat(Box<[Expr; 2]>, u32, Box<[Name; 2]>),
    Cmp(CmpOp, Box<[Expr; 2]>, u32),
    Not(Box<Expr>),
    And(Box<[Expr; 2]>),
    Or(Box<[Expr; 2]>),
}

#[derive(Debug)]
pub enum Stmt {
    /// `local a, b = e1, e2, ...`: every expression is evaluated, then the slots set.
    Local(Vec<usize>, Vec<Expr>),
    /// `a = e1, e2, ...`
    Assign(usize, Vec<Expr>),
    Call(Expr),
    /// `if c then b {elseif c then b} [else b] end`
    If(Vec<(Expr, Vec<Stmt>)>, Option<Vec<Stmt>>),
    Do(Vec<Stmt>),
    Return(Vec<Expr>),
}

/// A parsed script: its statements and its locals' names (one slot per declaration).
#[derive(Debug)]
pub struct Chunk {
    pub body: Vec<Stmt>,
    pub locals: Vec<String>,
}

/// Deeper nesting than this is left to Lua (the VM's own limit is 200 levels).
const MAX_DEPTH: usize = 100;

struct Parser {
    t: Vec<Token>,
    p: usize,
    /// `ls->lastline`: the line of the last token consumed.
    lastline: u32,
    locals: Vec<String>,
    /// Visible locals, innermost last: (name, slot).
    scope: Vec<(String, usize)>,
    depth: usize,
}

/// Priorities from `lparser.c`: (left, right).
fn binop(t: &Tok) -> Option<(&'static str, u8, u8)> {
    let Tok::Sym(s) = t else { return None };
    let (l, r) = match *s {
        "+" | "-" => (6, 6),
        "*" | "/" | "%" => (7, 7),
        "^" => (10, 9),
        ".." => (5, 4),
        "==" | "~=" | "<" | "<=" | ">" | ">=" => (3, 3),
        "and" => (2, 2),
        "or" => (1, 1),
        _ => return None,
    };
    Some((s, l, r))
}

const UNARY_PRIORITY: u8 = 8;

/// Lua 5.1's `constfolding`, used only to see which numerals the compiler makes.
fn fold(op: ArithOp, a: f64, b: f64) -> Option<f64> {
    let r = match op {
        ArithOp::Add => a + b,
        ArithOp::Sub => a - b,
        ArithOp::Mul => a * b,
        ArithOp::Div if b == 0.0 => return None,
        ArithOp::Div => a / b,
        ArithOp::Mod if b == 0.0 => return None,
        ArithOp::Mod => a - (a / b).floor() * b,
        ArithOp::Pow => a.powf(b),
    };
    (!r.is_nan()).then_some(r)
}

/// A folded constant equal to zero with the sign bit set shares a constant slot with 0
/// in the VM (its constant table is keyed by value), so which zero a script sees depends
/// on constant order: such scripts stay on Lua.
fn check_numeral(n: f64) -> Result<Expr, Reject> {
    if n == 0.0 && n.is_sign_negative() {
        return Err("constant -0".into());
    }
    Ok(Expr::Num(n))
}

impl Parser {
    fn tok(&self) -> &Tok {
        &self.t[self.p].tok
    }

    fn peek(&self, k: usize) -> &Tok {
        &self.t[(self.p + k).min(self.t.len() - 1)].tok
    }

    fn next(&mut self) {
        self.lastline = self.t[self.p].line;
        if self.p + 1 < self.t.len() {
            self.p += 1;
        }
    }

    fn is(&self, s: &str) -> bool {
        matches!(self.tok(), Tok::Sym(x) if *x == s)
    }

    fn test(&mut self, s: &str) -> bool {
        if self.is(s) {
            self.next();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, s: &str) -> Result<(), Reject> {
        if self.test(s) {
            Ok(())
        } else {
            Err(format!("expected {s}"))
        }
    }

    fn name(&mut self) -> Result<String, Reject> {
        match self.tok().clone() {
            Tok::Name(n) => {
                self.next();
                Ok(n)
            }
            _ => Err("expected a name".into()),
        }
    }

    fn resolve(&self, name: &str) -> Option<usize> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, s)| *s)
    }

    fn enter(&mut self) -> Result<(), Reject> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("nesting too deep".into());
        }
        Ok(())
    }

    fn block_follow(&self) -> bool {
        matches!(self.tok(), Tok::Eof)
            || self.is("else")
            || self.is("elseif")
            || self.is("end")
            || self.is("until")
    }

    /// `chunk`: statements, each optionally followed by `;`, until a block ends; a
    /// `return` is last.
    fn block(&mut self) -> Result<Vec<Stmt>, Reject> {
        self.enter()?;
        let mark = self.scope.len();
        let mut out = Vec::new();
        while !self.block_follow() {
            let s = self.statement()?;
            let last = matches!(s, Stmt::Return(_));
            out.push(s);
            self.test(";");
            if last {
                break;
            }
        }
        self.scope.truncate(mark);
        self.depth -= 1;
        Ok(out)
    }

    fn statement(&mut self) -> Result<Stmt, Reject> {
        match self.tok().clone() {
            Tok::Sym("if") => self.if_stat(),
            Tok::Sym("do") => {
                self.next();
                let b = self.block()?;
                self.expect("end")?;
                Ok(Stmt::Do(b))
            }
            Tok::Sym("local") => {
                self.next();
                if self.is("function") {
                    return Err("local function".into());
                }
                let mut names = vec![self.name()?];
                while self.test(",") {
                    names.push(self.name()?);
                }
                let exprs = if self.test("=") {
                    self.explist()?
                } else {
                    Vec::new()
                };
                // The new locals are visible only after the statement.
                let mut slots = Vec::new();
                for n in names {
                    let slot = self.locals.len();
                    self.locals.push(n.clone());
                    self.scope.push((n, slot));
                    slots.push(slot);
                }
                Ok(Stmt::Local(slots, exprs))
            }
            Tok::Sym("return") => {
                self.next();
                let exprs = if self.block_follow() || self.is(";") {
                    Vec::new()
                } else {
                    self.explist()?
                };
                Ok(Stmt::Return(exprs))
            }
            Tok::Sym(s @ ("while" | "for" | "repeat" | "function" | "break")) => {
                Err(format!("`{s}`"))
            }
            Tok::Name(n) if self.resolve(&n).is_some() => {
                // An assignment to a local (calling a local is not in the subset).
                let slot = self.resolve(&n).unwrap();
                self.next();
                if !self.is("=") {
                    return Err("a local used as a function or table".into());
                }
                self.next();
                Ok(Stmt::Assign(slot, self.explist()?))
            }
            _ => {
                let e = self.primary_exp()?;
                if !matches!(e, Expr::Call(..)) {
                    return Err("statement is not a call".into());
                }
                if self.is("=") || self.is(",") {
                    return Err("assignment to a global".into());
                }
                Ok(Stmt::Call(e))
            }
        }
    }

    fn if_stat(&mut self) -> Result<Stmt, Reject> {
        let mut arms = Vec::new();
        // At `if` or `elseif`.
        loop {
            self.next();
            let c = self.expr()?;
            self.expect("then")?;
            let b = self.block()?;
            arms.push((c, b));
            if !self.is("elseif") {
                break;
            }
        }
        let els = if self.test("else") {
            Some(self.block()?)
        } else {
            None
        };
        self.expect("end")?;
        Ok(Stmt::If(arms, els))
    }

    fn explist(&mut self) -> Result<Vec<Expr>, Reject> {
        let mut v = vec![self.expr()?];
        while self.test(",") {
            v.push(self.expr()?);
        }
        Ok(v)
    }

    fn expr(&mut self) -> Result<Expr, Reject> {
        self.subexpr(0)
    }

    /// `subexpr`: a unary or simple expression, then binary operators above `limit`.
    fn subexpr(&mut self, limit: u8) -> Result<Expr, Reject> {
        self.enter()?;
        let mut v = if self.is("not") || self.is("-") || self.is("#") {
            let op = match self.tok() {
                Tok::Sym(s) => *s,
                _ => unreachable!(),
            };
            self.next();
            if op == "#" {
                // Only `#KEYS` and `#ARGV` (a table the VM refills per run).
                match (self.tok().clone(), self.peek(1).clone()) {
                    (Tok::Name(n), t)
                        if (n == "KEYS" || n == "ARGV")
                            && self.resolve(&n).is_none()
                            && !matches!(t, Tok::Sym("[" | "." | ":" | "(" | "{" | "^"))
                            && !matches!(t, Tok::Str(_)) =>
                    {
                        self.next();
                        Expr::Len(n == "KEYS")
                    }
                    _ => return Err("`#` of something other than KEYS or ARGV".into()),
                }
            } else {
                let operand = self.subexpr(UNARY_PRIORITY)?;
                if op == "not" {
                    Expr::Not(Box::new(operand))
                } else {
                    match operand {
                        Expr::Num(n) => check_numeral(-n)?,
                        e => {
                            let name = name_of(&e, &self.locals);
                            Expr::Neg(Box::new(e), self.lastline, name)
                        }
                    }
                }
            }
        } else {
            self.simple_exp()?
        };
        v = self.binary_tail(v, limit)?;
        self.depth -= 1;
        Ok(v)
    }

    fn binary_tail(&mut self, mut v: Expr, limit: u8) -> Result<Expr, Reject> {
        while let Some((op, left, right)) = binop(self.tok()) {
            if left <= limit {
                break;
            }
            self.next();
            let r = self.subexpr(right)?;
            let line = self.lastline;
            let names = |l: &Expr, r: &Expr, locals: &[String]| {
                Box::new([name_of(l, locals), name_of(r, locals)])
            };
            v = match op {
                "+" | "-" | "*" | "/" | "%" | "^" => {
                    let aop = match op {
                        "+" => ArithOp::Add,
                        "-" => ArithOp::Sub,
                        "*" => ArithOp::Mul,
                        "/" => ArithOp::Div,
                        "%" => ArithOp::Mod,
                        _ => ArithOp::Pow,
                    };
                    match (&v, &r) {
                        (Expr::Num(a), Expr::Num(b)) if fold(aop, *a, *b).is_some() => {
                            check_numeral(fold(aop, *a, *b).unwrap())?
                        }
                        _ => {
                            let n = names(&v, &r, &self.locals);
                            Expr::Arith(aop, Box::new([v, r]), line, n)
                        }
                    }
                }
                ".." => {
                    // A chain is one CONCAT instruction with the innermost line.
                    let line = match &r {
                        Expr::Concat(_, l, _) => *l,
                        _ => line,
                    };
                    let n = names(&v, &r, &self.locals);
                    Expr::Concat(Box::new([v, r]), line, n)
                }
                "and" => Expr::And(Box::new([v, r])),
                "or" => Expr::Or(Box::new([v, r])),
                _ => {
                    let c = match op {
                        "==" => CmpOp::Eq,
                        "~=" => CmpOp::Ne,
                        "<" => CmpOp::Lt,
                        "<=" => CmpOp::Le,
                        ">" => CmpOp::Gt,
                        _ => CmpOp::Ge,
                    };
                    Expr::Cmp(c, Box::new([v, r]), line)
                }
            };
        }
        Ok(v)
    }

    fn simple_exp(&mut self) -> Result<Expr, Reject> {
        let e = match self.tok().clone() {
            Tok::Num(n) => check_numeral(n)?,
            Tok::Str(s) => Expr::Str(Bytes::from(s)),
            Tok::Sym("nil") => Expr::Nil,
            Tok::Sym("true") => Expr::Bool(true),
            Tok::Sym("false") => Expr::Bool(false),
            Tok::Sym("{") => return self.constructor(),
            Tok::Sym(s @ ("function" | "...")) => return Err(format!("`{s}`")),
            _ => return self.primary_exp(),
        };
        self.next();
        Ok(e)
    }

    fn constructor(&mut self) -> Result<Expr, Reject> {
        self.enter()?;
        self.next();
        let mut fields = Vec::new();
        while !self.is("}") {
            match (self.tok().clone(), self.peek(1).clone()) {
                (Tok::Name(n), Tok::Sym("=")) => {
                    self.next();
                    self.next();
                    let e = self.expr()?;
                    fields.push(match n.as_str() {
                        "err" => Field::Err(e),
                        "ok" => Field::Ok(e),
                        _ => return Err(format!("table field `{n}`")),
                    });
                }
                (Tok::Sym("["), _) => return Err("table field `[k] =`".into()),
                _ => fields.push(Field::Item(self.expr()?)),
            }
            if !self.test(",") && !self.test(";") {
                break;
            }
        }
        self.expect("}")?;
        self.depth -= 1;
        Ok(Expr::Table(fields))
    }

    /// `primaryexp` plus its suffixes, for the forms in the subset: a local, `KEYS[e]`,
    /// `ARGV[e]`, `( e )`, and calls of the builtins.
    fn primary_exp(&mut self) -> Result<Expr, Reject> {
        let e = match self.tok().clone() {
            Tok::Sym("(") => {
                self.next();
                let e = self.expr()?;
                self.expect(")")?;
                e
            }
            Tok::Name(n) => {
                self.next();
                if let Some(slot) = self.resolve(&n) {
                    Expr::Local(slot)
                } else {
                    match n.as_str() {
                        "KEYS" | "ARGV" => {
                            self.expect("[")?;
                            let k = self.expr()?;
                            self.expect("]")?;
                            if matches!(k, Expr::Str(_)) {
                                return Err("KEYS/ARGV indexed by a string".into());
                            }
                            Expr::Index(n == "KEYS", Box::new(k))
                        }
                        "redis" => {
                            self.expect(".")?;
                            let f = match self.name()?.as_str() {
                                "call" => Builtin::Call,
                                "pcall" => Builtin::Pcall,
                                "status_reply" => Builtin::StatusReply,
                                "error_reply" => Builtin::ErrorReply,
                                other => return Err(format!("redis.{other}")),
                            };
                            self.call_args(f)?
                        }
                        "tonumber" => self.call_args(Builtin::ToNumber)?,
                        "tostring" => self.call_args(Builtin::ToString)?,
                        other => return Err(format!("global `{other}`")),
                    }
                }
            }
            _ => return Err("unexpected token".into()),
        };
        if self.is("[") || self.is(".") || self.is(":") || self.is("(") || self.is("{") {
            return Err("suffix on an expression".into());
        }
        if matches!(self.tok(), Tok::Str(_)) {
            return Err("string call syntax".into());
        }
        Ok(e)
    }

    fn call_args(&mut self, f: Builtin) -> Result<Expr, Reject> {
        if !self.is("(") {
            return Err("call without parentheses".into());
        }
        // `funcargs`: the call's line is the line of its `(`.
        let line = self.t[self.p].line;
        self.next();
        let mut args = if self.is(")") {
            Vec::new()
        } else {
            self.explist()?
        };
        self.expect(")")?;
        if matches!(f, Builtin::ToNumber | Builtin::ToString) && args.len() != 1 {
            return Err("tonumber/tostring without exactly one argument".into());
        }
        let mut spec = None;
        if matches!(f, Builtin::Call | Builtin::Pcall) {
            // A numeral argument is only ever formatted, as redis.call formats numbers; here
            // when every release formats it alike (integers), else when the script runs.
            for a in args.iter_mut() {
                if let Expr::Num(n) = a {
                    let old = super::lua_number_bytes(*n, lockcore::num::DoubleFmt::Printf17g);
                    if old == super::lua_number_bytes(*n, lockcore::num::DoubleFmt::Shortest) {
                        *a = Expr::Str(old);
                    }
                }
            }
            // Each argument is one value, so the count is fixed: the lookup and arity
            // check of a literal command without subcommands cannot change at run time
            // (unless the personality decides them: those are looked up at run time).
            let argc = args.len();
            if let Some(Expr::Str(name)) = args.first_mut() {
                spec = lockcore::commands::lookup(name).filter(|s| {
                    !matches!(s.exec, Exec::Container) && s.ok_in_every_personality(argc)
                });
                // A name written as the table spells it becomes the table's static copy:
                // the same bytes (MONITOR and SLOWLOG show what the script wrote), and
                // passing it to each call then costs no reference counting.
                if let Some(s) = spec {
                    if name[..] == *s.name.as_bytes() {
                        *name = Bytes::from_static(s.name.as_bytes());
                    }
                }
            }
        }
        Ok(Expr::Call(f, args, line, spec))
    }
}

/// The name the VM's `getobjname` gives the register holding `e`.
fn name_of(e: &Expr, locals: &[String]) -> Name {
    match e {
        Expr::Local(s) => Name::Local(locals[*s].clone()),
        Expr::Index(..) => Name::Field,
        Expr::And(_) | Expr::Or(_) => Name::Unknown,
        _ => Name::None,
    }
}

// ---------------------------------------------------------------- types
//
// A flow-insensitive type set per local (the union of everything ever assigned to it),
// used to prove that a construct cannot reach a case the plan does not reproduce:
// `tostring` of a table (its text is an address) and a blamed operand whose name
// depends on code layout.

pub const NIL: u8 = 1;
pub const BOOL: u8 = 2;
pub const NUM: u8 = 4;
pub const STR: u8 = 8;
pub const TAB: u8 = 16;
const ANY_REPLY: u8 = NUM | STR | BOOL | TAB;

fn type_of(e: &Expr, lt: &[u8]) -> u8 {
    match e {
        Expr::Nil => NIL,
        Expr::Bool(_) => BOOL,
        Expr::Num(_) => NUM,
        Expr::Str(_) => STR,
        Expr::Local(s) => lt[*s],
        Expr::Index(..) => STR | NIL,
        Expr::Len(_) => NUM,
        Expr::Call(b, ..) => match b {
            Builtin::Call | Builtin::Pcall => ANY_REPLY,
            Builtin::StatusReply | Builtin::ErrorReply => TAB,
            Builtin::ToNumber => NUM | NIL,
            Builtin::ToString => STR,
        },
        Expr::Table(_) => TAB,
        Expr::Arith(..) | Expr::Neg(..) => NUM,
        Expr::Concat(..) => STR,
        Expr::Cmp(..) | Expr::Not(_) => BOOL,
        Expr::And(p) => (type_of(&p[0], lt) & (NIL | BOOL)) | type_of(&p[1], lt),
        Expr::Or(p) => (type_of(&p[0], lt) & !NIL) | type_of(&p[1], lt),
    }
}

/// Widens `lt[slot]` by `t`; true if it changed.
fn widen(lt: &mut [u8], slot: usize, t: u8) -> bool {
    let changed = lt[slot] | t != lt[slot];
    lt[slot] |= t;
    changed
}

fn assign_types(body: &[Stmt], lt: &mut [u8]) -> bool {
    let mut changed = false;
    for s in body {
        match s {
            Stmt::Local(slots, exprs) => {
                for (i, slot) in slots.iter().enumerate() {
                    let t = exprs.get(i).map_or(NIL, |e| type_of(e, lt));
                    changed |= widen(lt, *slot, t);
                }
            }
            Stmt::Assign(slot, exprs) => {
                let t = type_of(&exprs[0], lt);
                changed |= widen(lt, *slot, t);
            }
            Stmt::If(arms, els) => {
                for (_, b) in arms {
                    changed |= assign_types(b, lt);
                }
                if let Some(b) = els {
                    changed |= assign_types(b, lt);
                }
            }
            Stmt::Do(b) => changed |= assign_types(b, lt),
            Stmt::Call(_) | Stmt::Return(_) => {}
        }
    }
    changed
}

fn check_expr(e: &Expr, lt: &[u8]) -> Result<(), Reject> {
    let never_blamed = |e: &Expr, name: &Name, ok: u8| -> Result<(), Reject> {
        if *name == Name::Unknown && type_of(e, lt) & !ok != 0 {
            return Err("an `and`/`or` operand that may fail".into());
        }
        Ok(())
    };
    match e {
        Expr::Index(_, k) | Expr::Not(k) => check_expr(k, lt),
        Expr::Call(b, args, ..) => {
            if *b == Builtin::ToString && type_of(&args[0], lt) & TAB != 0 {
                return Err("tostring of a possible table".into());
            }
            args.iter().try_for_each(|a| check_expr(a, lt))
        }
        Expr::Table(fields) => fields.iter().try_for_each(|f| match f {
            Field::Item(e) | Field::Err(e) | Field::Ok(e) => check_expr(e, lt),
        }),
        Expr::Arith(_, p, _, n) => {
            never_blamed(&p[0], &n[0], NUM)?;
            never_blamed(&p[1], &n[1], NUM)?;
            check_expr(&p[0], lt)?;
            check_expr(&p[1], lt)
        }
        Expr::Neg(x, _, n) => {
            never_blamed(x, n, NUM)?;
            check_expr(x, lt)
        }
        Expr::Concat(p, _, n) => {
            never_blamed(&p[0], &n[0], NUM | STR)?;
            never_blamed(&p[1], &n[1], NUM | STR)?;
            check_expr(&p[0], lt)?;
            check_expr(&p[1], lt)
        }
        Expr::Cmp(_, p, _) | Expr::And(p) | Expr::Or(p) => {
            check_expr(&p[0], lt)?;
            check_expr(&p[1], lt)
        }
        _ => Ok(()),
    }
}

fn check_block(body: &[Stmt], lt: &[u8]) -> Result<(), Reject> {
    for s in body {
        match s {
            Stmt::Local(_, es) | Stmt::Assign(_, es) | Stmt::Return(es) => {
                es.iter().try_for_each(|e| check_expr(e, lt))?
            }
            Stmt::Call(e) => check_expr(e, lt)?,
            Stmt::If(arms, els) => {
                for (c, b) in arms {
                    check_expr(c, lt)?;
                    check_block(b, lt)?;
                }
                if let Some(b) = els {
                    check_block(b, lt)?;
                }
            }
            Stmt::Do(b) => check_block(b, lt)?,
        }
    }
    Ok(())
}

/// Parses `src` (a script the VM compiled) into a chunk, or says why it is not in the
/// subset.
pub fn parse(src: &[u8]) -> Result<Chunk, Reject> {
    let t = tokens(src)?;
    let mut p = Parser {
        t,
        p: 0,
        lastline: 1,
        locals: Vec::new(),
        scope: Vec::new(),
        depth: 0,
    };
    let body = p.block()?;
    if !matches!(p.tok(), Tok::Eof) {
        return Err("unexpected token".into());
    }
    let mut lt = vec![0u8; p.locals.len()];
    while assign_types(&body, &mut lt) {}
    check_block(&body, &lt)?;
    Ok(Chunk {
        body,
        locals: p.locals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";

    #[test]
    fn lock_scripts_parse() {
        parse(LOCK.as_bytes()).unwrap();
        parse(b"if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end").unwrap();
        parse(b"local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1) if (counter > 0) then return 0 end").unwrap();
    }

    #[test]
    fn outside_the_subset() {
        for s in [
            "for i=1,2 do end",
            "while true do end",
            "x = 1",
            "return string.rep('a', 2)",
            "local t = {} t[1] = 2",
            "return tostring(redis.call('get', 'x'))",
            "return -0",
            "return 0 * -1",
            "return (KEYS[1] or 1) + 1",
            "return #KEYS[1]",
            "return redis.setresp(3)",
            "local f = tonumber return f('1')",
            "return {double = 1}",
            "return [[x]]",
        ] {
            assert!(parse(s.as_bytes()).is_err(), "{s}");
        }
    }

    #[test]
    fn lines_follow_the_compiler() {
        let c = parse(b"local a = KEYS[1]\nreturn a +\n 1 .. ARGV[1]\n .. 'x'").unwrap();
        let Stmt::Return(e) = &c.body[1] else {
            panic!()
        };
        let Expr::Concat(p, line, _) = &e[0] else {
            panic!("{e:?}")
        };
        assert_eq!(*line, 4);
        let Expr::Arith(_, _, l2, n) = &p[0] else {
            panic!()
        };
        assert_eq!(*l2, 3);
        assert_eq!(n[0], Name::Local("a".into()));
        let c = parse(b"return redis.call(\n'get', KEYS[1]) > 0").unwrap_or_else(|e| panic!("{e}"));
        let Stmt::Return(e) = &c.body[0] else {
            panic!()
        };
        let Expr::Cmp(CmpOp::Gt, p, 2) = &e[0] else {
            panic!("{e:?}")
        };
        assert!(matches!(p[0], Expr::Call(Builtin::Call, _, 1, Some(_))));
    }
}
