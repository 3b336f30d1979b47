//! Walking a plan: Lua 5.1's values and operators as the VM evaluates them, and Redis'
//! conversions between replies and Lua values (RESP2; plans never call redis.setresp).

use bytes::Bytes;
use std::rc::Rc;

use lockcore::CommandSpec;
use lockcore::Reply;

use super::luanum::{fmt14g, str2d, strcmp};
use super::parse::{ArithOp, Builtin, Chunk, CmpOp, Expr, Field, Name, Stmt};

/// How a script run ended other than by returning.
#[derive(Debug)]
pub enum Failure {
    /// `redis.call` raised this error text at this line.
    Call(String, u32),
    /// The VM raised a runtime error (`attempt to ...`) at this line.
    Runtime(String, u32),
}

/// A Lua value.
#[derive(Clone, Debug, Default)]
enum Val {
    #[default]
    Nil,
    Bool(bool),
    Num(f64),
    Str(Bytes),
    Tab(Rc<Tab>),
}

/// A table as scripts here can make them: a sequence, and the `err`/`ok` fields Redis
/// reads when converting.
#[derive(Debug, Default)]
struct Tab {
    seq: Vec<Val>,
    err: Option<Val>,
    ok: Option<Val>,
    /// An error table from a failed `redis.pcall` command: errorstats counted it already
    /// (Redis' `ignore_error_stats_update`).
    counted: bool,
}

impl Val {
    fn truthy(&self) -> bool {
        !matches!(self, Val::Nil | Val::Bool(false))
    }

    fn type_name(&self) -> &'static str {
        match self {
            Val::Nil => "nil",
            Val::Bool(_) => "boolean",
            Val::Num(_) => "number",
            Val::Str(_) => "string",
            Val::Tab(_) => "table",
        }
    }

    /// `luaV_tonumber`: numbers, and strings that convert.
    fn to_num(&self) -> Option<f64> {
        match self {
            Val::Num(n) => Some(*n),
            Val::Str(s) => str2d(s),
            _ => None,
        }
    }

    fn err_table(msg: impl Into<Bytes>) -> Val {
        Val::Tab(Rc::new(Tab {
            err: Some(Val::Str(msg.into())),
            ..Tab::default()
        }))
    }
}

/// `luaG_typeerror`'s text.
fn type_error(v: &Val, name: &Name, op: &str) -> String {
    match name {
        Name::Local(n) => format!("attempt to {op} local '{n}' (a {} value)", v.type_name()),
        Name::Field => format!("attempt to {op} field '?' (a {} value)", v.type_name()),
        // Unknown names are proven never blamed at plan time.
        Name::None | Name::Unknown => format!("attempt to {op} a {} value", v.type_name()),
    }
}

/// A reply converted to Lua as `redis.call` hands it to a RESP2 script.
fn from_reply(r: Reply) -> Val {
    let seq = |items: Vec<Reply>| {
        Val::Tab(Rc::new(Tab {
            seq: items.into_iter().map(from_reply).collect(),
            ..Tab::default()
        }))
    };
    match r {
        Reply::Int(i) => Val::Num(i as f64),
        Reply::Bulk(b) | Reply::BigNumber(b) | Reply::Verbatim(_, b) => Val::Str(b),
        Reply::Simple(s) => Val::Tab(Rc::new(Tab {
            ok: Some(Val::Str(Bytes::from(s.into_owned()))),
            ..Tab::default()
        })),
        Reply::Error(e) => Val::err_table(e.into_owned()),
        Reply::Null | Reply::NullArray | Reply::NoReply => Val::Bool(false),
        Reply::Array(items) | Reply::Push(items) | Reply::Set(items) => seq(items),
        Reply::Map(pairs) => seq(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect()),
        Reply::Double(d) => Val::Str(Bytes::from(Reply::fmt_double(d))),
        Reply::HumanDouble(d) => Val::Str(Bytes::from(lockcore::num::fmt_human(d))),
        Reply::ShortDouble(d) => Val::Str(Bytes::from(lockcore::num::fmt_shortest(d))),
        Reply::Bool(true) => Val::Num(1.0),
        Reply::Bool(false) => Val::Bool(false),
    }
}

/// Nesting limit of the reply conversion, as `bridge::lua_to_reply`.
const MAX_DEPTH: usize = 200;

/// A script's return value as the reply to EVAL (`bridge::lua_to_reply`).
fn to_reply(v: &Val, depth: usize) -> Reply {
    match v {
        Val::Nil | Val::Bool(false) => Reply::Null,
        Val::Bool(true) => Reply::Int(1),
        Val::Num(n) => Reply::Int(super::c_long_long(*n)),
        Val::Str(s) => Reply::Bulk(s.clone()),
        Val::Tab(t) => {
            if depth >= MAX_DEPTH {
                return Reply::err("ERR reached lua stack limit");
            }
            if let Some(Val::Str(e)) = &t.err {
                if t.counted && depth == 0 {
                    crate::stats::cmdstats::mark_error_counted();
                }
                return Reply::Error(String::from_utf8_lossy(e).into_owned().into());
            }
            if let Some(Val::Str(s)) = &t.ok {
                return Reply::Simple(String::from_utf8_lossy(s).into_owned().into());
            }
            Reply::Array(
                t.seq
                    .iter()
                    .take_while(|v| !matches!(v, Val::Nil))
                    .map(|v| to_reply(v, depth + 1))
                    .collect(),
            )
        }
    }
}

/// `redis.call`'s checks and command: the spec when known at compile time, the arguments
/// and the source line of the call (for the profiler); an error comes back as its text.
pub type CallFn<'c> =
    dyn FnMut(Option<&'static CommandSpec>, &[Bytes], u32) -> Result<Reply, String> + 'c;

struct Run<'r> {
    call: &'r mut CallFn<'r>,
    argv: &'r mut Vec<Bytes>,
    keys: &'r [Bytes],
    args: &'r [Bytes],
    /// The locals (one slot each, from 0), then the values being evaluated for a
    /// statement or call (pushed and popped, so a run allocates once).
    stack: Vec<Val>,
}

enum Flow {
    Next,
    Return(Val),
}

type R<T> = Result<T, Failure>;

pub fn run(
    chunk: &Chunk,
    call: &mut CallFn,
    argv: &mut Vec<Bytes>,
    keys: &[Bytes],
    args: &[Bytes],
) -> Result<Reply, Failure> {
    // The stack's allocation is kept for the thread's next run (a run allocated it anew).
    let mut stack = STACK.with(|s| std::mem::take(&mut *s.borrow_mut()));
    stack.clear();
    stack.resize(chunk.locals.len(), Val::Nil);
    let mut r = Run {
        call,
        argv,
        keys,
        args,
        stack,
    };
    let res = r.block(&chunk.body);
    let mut stack = std::mem::take(&mut r.stack);
    stack.clear();
    STACK.with(|s| *s.borrow_mut() = stack);
    match res? {
        Flow::Return(v) => Ok(to_reply(&v, 0)),
        Flow::Next => Ok(Reply::Null),
    }
}

thread_local! {
    /// [`Run::stack`]'s allocation between runs (empty then).
    static STACK: std::cell::RefCell<Vec<Val>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Run<'_> {
    fn block(&mut self, body: &[Stmt]) -> R<Flow> {
        for s in body {
            match s {
                Stmt::Local(slots, exprs) => {
                    let base = self.push_exprs(exprs)?;
                    for (i, slot) in slots.iter().enumerate() {
                        let v = self.stack.get(base + i).cloned().unwrap_or(Val::Nil);
                        self.stack[*slot] = v;
                    }
                    self.stack.truncate(base);
                }
                Stmt::Assign(slot, exprs) => {
                    let base = self.push_exprs(exprs)?;
                    self.stack.swap(*slot, base);
                    self.stack.truncate(base);
                }
                Stmt::Call(e) => {
                    self.expr(e)?;
                }
                Stmt::If(arms, els) => {
                    let mut taken = None;
                    for (c, b) in arms {
                        if self.expr(c)?.truthy() {
                            taken = Some(b);
                            break;
                        }
                    }
                    if let Some(b) = taken.or(els.as_ref()) {
                        if let Flow::Return(v) = self.block(b)? {
                            return Ok(Flow::Return(v));
                        }
                    }
                }
                Stmt::Do(b) => {
                    if let Flow::Return(v) = self.block(b)? {
                        return Ok(Flow::Return(v));
                    }
                }
                Stmt::Return(exprs) => {
                    let base = self.push_exprs(exprs)?;
                    let v = self.stack.get_mut(base).map_or(Val::Nil, std::mem::take);
                    self.stack.truncate(base);
                    return Ok(Flow::Return(v));
                }
            }
        }
        Ok(Flow::Next)
    }

    /// Evaluates `es` in order onto the stack; returns where they start.
    fn push_exprs(&mut self, es: &[Expr]) -> R<usize> {
        let base = self.stack.len();
        for e in es {
            let v = match self.leaf(e) {
                Some(v) => v,
                None => self.expr(e)?,
            };
            self.stack.push(v);
        }
        Ok(base)
    }

    /// The value of a literal, a local, or `KEYS[n]`/`ARGV[n]` with a literal `n`: most of
    /// a lock script's operands. Evaluated here without a call to [`Run::expr`], whose
    /// frame costs about 50 instructions per operand; `None` for every other expression.
    /// The results are [`Run::expr`]'s for the same expressions.
    #[inline(always)]
    fn leaf(&self, e: &Expr) -> Option<Val> {
        Some(match e {
            Expr::Str(s) => Val::Str(s.clone()),
            Expr::Num(n) => Val::Num(*n),
            Expr::Local(s) => self.stack[*s].clone(),
            Expr::Index(keys, k) => match **k {
                Expr::Num(n) => self.index(*keys, n),
                _ => return None,
            },
            _ => return None,
        })
    }

    /// `KEYS[n]` or `ARGV[n]` for a number `n` (nil unless it is a whole number in range).
    fn index(&self, keys: bool, n: f64) -> Val {
        let t = if keys { self.keys } else { self.args };
        // `as` saturates (NaN and negatives to 0), and a fraction does not survive the
        // round trip: the whole numbers 1..=len, without a call to `trunc`.
        let i = n as usize;
        match t.get(i.wrapping_sub(1)) {
            Some(b) if i as f64 == n => Val::Str(b.clone()),
            _ => Val::Nil,
        }
    }

    fn expr(&mut self, e: &Expr) -> R<Val> {
        Ok(match e {
            Expr::Nil => Val::Nil,
            Expr::Bool(b) => Val::Bool(*b),
            Expr::Num(n) => Val::Num(*n),
            Expr::Str(s) => Val::Str(s.clone()),
            Expr::Local(s) => self.stack[*s].clone(),
            Expr::Index(keys, k) => match self.expr(k)? {
                Val::Num(n) => self.index(*keys, n),
                _ => Val::Nil,
            },
            Expr::Len(keys) => {
                let n = if *keys {
                    self.keys.len()
                } else {
                    self.args.len()
                };
                Val::Num(n as f64)
            }
            Expr::Call(b, args, line, spec) => self.call(*b, args, *line, *spec)?,
            Expr::Table(fields) => {
                let mut t = Tab::default();
                for f in fields {
                    match f {
                        Field::Item(e) => {
                            let v = self.expr(e)?;
                            t.seq.push(v)
                        }
                        Field::Err(e) => t.err = Some(self.expr(e)?),
                        Field::Ok(e) => t.ok = Some(self.expr(e)?),
                    }
                }
                Val::Tab(Rc::new(t))
            }
            Expr::Arith(op, p, line, names) => {
                let a = self.expr(&p[0])?;
                let b = self.expr(&p[1])?;
                // luaV_arith, then luaG_aritherror: blame the first operand that does not
                // convert.
                match (a.to_num(), b.to_num()) {
                    (Some(x), Some(y)) => Val::Num(arith(*op, x, y)),
                    (None, _) => {
                        return Err(rt(
                            type_error(&a, &names[0], "perform arithmetic on"),
                            *line,
                        ))
                    }
                    (_, None) => {
                        return Err(rt(
                            type_error(&b, &names[1], "perform arithmetic on"),
                            *line,
                        ))
                    }
                }
            }
            Expr::Neg(x, line, name) => {
                let a = self.expr(x)?;
                match a.to_num() {
                    Some(n) => Val::Num(-n),
                    None => return Err(rt(type_error(&a, name, "perform arithmetic on"), *line)),
                }
            }
            Expr::Concat(p, line, names) => {
                let a = self.expr(&p[0])?;
                let b = self.expr(&p[1])?;
                // luaG_concaterror: blame the left operand unless it is a string or number.
                let piece = |v: &Val| match v {
                    Val::Str(s) => Some(s.clone()),
                    Val::Num(n) => Some(fmt14g(*n)),
                    _ => None,
                };
                match (piece(&a), piece(&b)) {
                    (Some(x), Some(y)) => {
                        let mut v = Vec::with_capacity(x.len() + y.len());
                        v.extend_from_slice(&x);
                        v.extend_from_slice(&y);
                        Val::Str(Bytes::from(v))
                    }
                    (None, _) => return Err(rt(type_error(&a, &names[0], "concatenate"), *line)),
                    (_, None) => return Err(rt(type_error(&b, &names[1], "concatenate"), *line)),
                }
            }
            Expr::Cmp(op, p, line) => {
                let a = self.expr(&p[0])?;
                let b = match self.leaf(&p[1]) {
                    Some(v) => v,
                    None => self.expr(&p[1])?,
                };
                let r = match op {
                    CmpOp::Eq => equal(&a, &b),
                    CmpOp::Ne => !equal(&a, &b),
                    // The compiler turns `a > b` into `b < a`, and `a >= b` into `b <= a`.
                    CmpOp::Lt => less(&a, &b, false, *line)?,
                    CmpOp::Le => less(&a, &b, true, *line)?,
                    CmpOp::Gt => less(&b, &a, false, *line)?,
                    CmpOp::Ge => less(&b, &a, true, *line)?,
                };
                Val::Bool(r)
            }
            Expr::Not(x) => Val::Bool(!self.expr(x)?.truthy()),
            Expr::And(p) => {
                let a = self.expr(&p[0])?;
                if a.truthy() {
                    self.expr(&p[1])?
                } else {
                    a
                }
            }
            Expr::Or(p) => {
                let a = self.expr(&p[0])?;
                if a.truthy() {
                    a
                } else {
                    self.expr(&p[1])?
                }
            }
        })
    }

    fn call(
        &mut self,
        b: Builtin,
        args: &[Expr],
        line: u32,
        spec: Option<&'static CommandSpec>,
    ) -> R<Val> {
        if matches!(b, Builtin::Call | Builtin::Pcall) {
            if let Some(r) = self.leaf_call(args, line, spec) {
                return r.or_else(|msg| call_failed(b, msg, line));
            }
        }
        let base = self.push_exprs(args)?;
        let v = match b {
            Builtin::Call | Builtin::Pcall => {
                let r = redis_call(self.call, spec, self.argv, &mut self.stack, base, line);
                match r.or_else(|msg| call_failed(b, msg, line)) {
                    Ok(v) => v,
                    Err(f) => {
                        self.stack.truncate(base);
                        return Err(f);
                    }
                }
            }
            Builtin::ToNumber => self.stack[base].to_num().map_or(Val::Nil, Val::Num),
            Builtin::ToString => Val::Str(match &self.stack[base] {
                Val::Nil => Bytes::from_static(b"nil"),
                Val::Bool(true) => Bytes::from_static(b"true"),
                Val::Bool(false) => Bytes::from_static(b"false"),
                Val::Num(n) => fmt14g(*n),
                Val::Str(s) => s.clone(),
                // Excluded at plan time (its text is an address).
                Val::Tab(_) => Bytes::from_static(b"table"),
            }),
            Builtin::StatusReply => match &self.stack[base..] {
                [Val::Str(s)] => Val::Tab(Rc::new(Tab {
                    ok: Some(Val::Str(s.clone())),
                    ..Tab::default()
                })),
                _ => Val::err_table("ERR wrong number or type of arguments"),
            },
            Builtin::ErrorReply => match &self.stack[base..] {
                [Val::Str(s)] => Val::err_table(error_reply(s)),
                _ => Val::err_table("ERR wrong number or type of arguments"),
            },
        };
        self.stack.truncate(base);
        Ok(v)
    }
}

/// A failed command: `redis.call` raises it, `redis.pcall` returns it as an error table.
fn call_failed(b: Builtin, msg: String, line: u32) -> R<Val> {
    if b == Builtin::Call {
        return Err(Failure::Call(msg, line));
    }
    Ok(Val::Tab(Rc::new(Tab {
        counted: counted_error(&msg),
        err: Some(Val::Str(msg.into())),
        ..Tab::default()
    })))
}

impl Run<'_> {
    /// `redis.call`/`pcall` whose arguments are all literals, locals and `KEYS[n]`/`ARGV[n]`
    /// with a literal `n` that hold strings or numbers (nearly every call of a lock
    /// script): their bytes go straight into `argv`, without the value stack. Evaluating
    /// such arguments has no effect and raises nothing, so this is [`Run::call`]'s generic
    /// path step for step; `None` (and nothing done) as soon as one argument is anything
    /// else, which leaves its evaluation and its error to that path.
    fn leaf_call(
        &mut self,
        args: &[Expr],
        line: u32,
        spec: Option<&'static CommandSpec>,
    ) -> Option<Result<Val, String>> {
        if args.is_empty() {
            return None;
        }
        self.argv.clear();
        for e in args {
            let b = match e {
                Expr::Str(s) => Some(s.clone()),
                Expr::Local(s) => match &self.stack[*s] {
                    Val::Str(b) => Some(b.clone()),
                    Val::Num(n) => Some(super::lua_number_bytes(*n)),
                    _ => None,
                },
                Expr::Index(keys, k) => match **k {
                    Expr::Num(n) => match self.index(*keys, n) {
                        Val::Str(b) => Some(b),
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            };
            match b {
                Some(b) => self.argv.push(b),
                None => {
                    self.argv.clear();
                    return None;
                }
            }
        }
        Some(call_argv(self.call, spec, self.argv, line))
    }
}

/// Whether errorstats counted a `redis.call` error already: a command's error or refusal
/// was, the call's own argument checks were not.
pub(crate) fn counted_error(msg: &str) -> bool {
    !msg.starts_with("ERR Please specify") && !msg.starts_with("ERR Lua redis lib")
}

/// `redis.call`'s argument checks (as `bridge::raw_call_inner`), then the command. Its
/// arguments are `stack[base..]`, which are moved into `argv` (not cloned: that was two
/// reference-count operations more per argument, and the first clone of an argument read
/// from the client allocated).
fn redis_call(
    call: &mut CallFn,
    spec: Option<&'static CommandSpec>,
    argv: &mut Vec<Bytes>,
    stack: &mut Vec<Val>,
    base: usize,
    line: u32,
) -> Result<Val, String> {
    if stack.len() <= base {
        return Err("ERR Please specify at least one argument for this redis lib call".into());
    }
    argv.clear();
    for v in stack.drain(base..) {
        match v {
            Val::Str(s) => argv.push(s),
            Val::Num(n) => argv.push(super::lua_number_bytes(n)),
            _ => {
                return Err(
                    "ERR Lua redis lib command arguments must be strings or integers".into(),
                )
            }
        }
    }
    call_argv(call, spec, argv, line)
}

/// Runs the command in `argv` (left empty) and turns its reply into a value; an error
/// reply, or a refusal of the call, is `Err`.
fn call_argv(
    call: &mut CallFn,
    spec: Option<&'static CommandSpec>,
    argv: &mut Vec<Bytes>,
    line: u32,
) -> Result<Val, String> {
    let r = call(spec, &argv[..], line);
    argv.clear();
    match r? {
        Reply::Error(e) => Err(e.into_owned()),
        reply => Ok(from_reply(reply)),
    }
}

fn rt(msg: String, line: u32) -> Failure {
    Failure::Runtime(msg, line)
}

fn arith(op: ArithOp, a: f64, b: f64) -> f64 {
    match op {
        ArithOp::Add => a + b,
        ArithOp::Sub => a - b,
        ArithOp::Mul => a * b,
        ArithOp::Div => a / b,
        // luai_nummod
        ArithOp::Mod => a - (a / b).floor() * b,
        ArithOp::Pow => a.powf(b),
    }
}

/// `luaV_equalval` for values without metatables.
fn equal(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Nil, Val::Nil) => true,
        (Val::Bool(x), Val::Bool(y)) => x == y,
        (Val::Num(x), Val::Num(y)) => x == y,
        (Val::Str(x), Val::Str(y)) => x == y,
        (Val::Tab(x), Val::Tab(y)) => Rc::ptr_eq(x, y),
        _ => false,
    }
}

/// `luaV_lessthan` / `luaV_lessequal`, with `luaG_ordererror`'s text.
fn less(a: &Val, b: &Val, or_equal: bool, line: u32) -> R<bool> {
    match (a, b) {
        (Val::Num(x), Val::Num(y)) => Ok(if or_equal { x <= y } else { x < y }),
        (Val::Str(x), Val::Str(y)) => {
            let o = strcmp(x, y);
            Ok(if or_equal { o.is_le() } else { o.is_lt() })
        }
        _ => {
            let (t1, t2) = (a.type_name(), b.type_name());
            let msg = if t1.as_bytes()[2] == t2.as_bytes()[2] {
                format!("attempt to compare two {t1} values")
            } else {
                format!("attempt to compare {t1} with {t2}")
            };
            Err(rt(msg, line))
        }
    }
}

/// `redis.error_reply(e)` for a string `e` (the sandbox's Lua version, step for step).
fn error_reply(e: &[u8]) -> Bytes {
    let mut e = e.to_vec();
    if e.first() != Some(&b'-') {
        e.insert(0, b'-');
    }
    let (code, msg): (&[u8], &[u8]) = match e.iter().position(|&c| c == b' ') {
        Some(sp) => (&e[1..sp], &e[sp + 1..]),
        None => (b"ERR", &e[1..]),
    };
    let crlf = |c: &u8| *c == b'\r' || *c == b'\n';
    let start = msg.iter().position(|c| !crlf(c)).unwrap_or(msg.len());
    let msg = &msg[start..];
    let end = msg.iter().rposition(|c| !crlf(c)).map_or(0, |i| i + 1);
    let msg = &msg[..end];
    let mut out = Vec::with_capacity(code.len() + 1 + msg.len());
    out.extend_from_slice(code);
    out.push(b' ');
    out.extend_from_slice(msg);
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_reply_is_the_sandboxs() {
        assert_eq!(&error_reply(b"My Error")[..], b"My Error");
        assert_eq!(&error_reply(b"bad")[..], b"ERR bad");
        assert_eq!(&error_reply(b"-X  \r\nmsg\r\n")[..], b"X  \r\nmsg");
        assert_eq!(&error_reply(b"- x")[..], b" x");
        assert_eq!(&error_reply(b"")[..], b"ERR ");
    }
}
