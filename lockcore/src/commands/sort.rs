//! SORT and SORT_RO, following Redis 7.0's sort.c: BY (with `*` and `->field` patterns, or
//! a constant pattern that skips sorting), LIMIT, GET (`#` for the element itself), ASC/DESC,
//! ALPHA and STORE (a list; an empty result deletes the destination).
//!
//! What is sorted, and in which order ties and unsorted elements come out, follows Redis:
//! lists and sorted sets keep their own order when nothing is sorted (DESC reverses it),
//! sets are sorted ALPHA when an unsorted result would be stored or seen by a script, and
//! numeric ties are broken by comparing the elements as strings.

use bytes::Bytes;
use std::cmp::Ordering;

use crate::engine::spec::{flag::*, CommandSpec, Ctx, Keys, KEY1};
use crate::error;
use crate::num::{parse_f64, parse_i64};
use crate::reply::Reply;
use crate::storage::notify;
use crate::storage::value::Value;

const fn cmd(
    name: &'static str,
    flags: u32,
    keys: Keys,
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    crate::engine::spec::engine(
        "generic",
        &["set", "sortedset", "list", "dangerous"],
        name,
        -2,
        flags,
        keys,
        h,
    )
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd("sort", WRITE | DENYOOM, Keys::Sort, sort),
    cmd("sort_ro", READONLY, KEY1, sort_ro),
];

fn sort(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    sort_generic(ctx, a, false)
}

fn sort_ro(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    sort_generic(ctx, a, true)
}

struct Options {
    desc: bool,
    alpha: bool,
    limit: (i64, i64),
    store: Option<Bytes>,
    by: Option<Bytes>,
    /// BY with a pattern without `*`: nothing is sorted.
    dont_sort: bool,
    gets: Vec<Bytes>,
}

fn parse_options(
    a: &[Bytes],
    readonly: bool,
    patterns_denied: Option<&'static str>,
) -> Result<Options, Reply> {
    let mut o = Options {
        desc: false,
        alpha: false,
        limit: (0, -1),
        store: None,
        by: None,
        dont_sort: false,
        gets: vec![],
    };
    let mut j = 2;
    while j < a.len() {
        let left = a.len() - j - 1;
        let opt = &a[j];
        if opt.eq_ignore_ascii_case(b"asc") {
            o.desc = false;
        } else if opt.eq_ignore_ascii_case(b"desc") {
            o.desc = true;
        } else if opt.eq_ignore_ascii_case(b"alpha") {
            o.alpha = true;
        } else if opt.eq_ignore_ascii_case(b"limit") && left >= 2 {
            match (parse_i64(&a[j + 1]), parse_i64(&a[j + 2])) {
                (Some(s), Some(c)) => o.limit = (s, c),
                _ => return Err(error::not_integer()),
            }
            j += 2;
        } else if !readonly && opt.eq_ignore_ascii_case(b"store") && left >= 1 {
            o.store = Some(a[j + 1].clone());
            j += 1;
        } else if opt.eq_ignore_ascii_case(b"by") && left >= 1 {
            o.dont_sort = !a[j + 1].contains(&b'*');
            // A real pattern reads keys the key specs cannot name.
            if let (false, Some(why)) = (o.dont_sort, patterns_denied) {
                return Err(Reply::err(format!("ERR BY option of SORT denied {why}.")));
            }
            o.by = Some(a[j + 1].clone());
            j += 1;
        } else if opt.eq_ignore_ascii_case(b"get") && left >= 1 {
            if let Some(why) = patterns_denied {
                return Err(Reply::err(format!("ERR GET option of SORT denied {why}.")));
            }
            o.gets.push(a[j + 1].clone());
            j += 1;
        } else {
            return Err(error::syntax());
        }
        j += 1;
    }
    Ok(o)
}

/// Redis' lookupKeyByPattern: `#` is the element itself; otherwise the first `*` is
/// replaced by the element and the key read as a string, or, with `->field` after the
/// `*`, as a hash field. Anything else (no `*`, missing key, other type) is `None`.
fn lookup_by_pattern(ctx: &mut Ctx, pattern: &[u8], elem: &Bytes, write: bool) -> Option<Bytes> {
    if pattern == b"#" {
        return Some(elem.clone());
    }
    let star = pattern.iter().position(|&c| c == b'*')?;
    let field = pattern[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|p| star + 1 + p)
        .filter(|&p| p + 2 < pattern.len());
    let key_end = field.unwrap_or(pattern.len());
    let mut key = Vec::with_capacity(key_end + elem.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(elem);
    key.extend_from_slice(&pattern[star + 1..key_end]);
    let e = if write {
        ctx.write(&key)
    } else {
        ctx.read(&key)
    }?;
    match (&e.value, field) {
        (Value::Str(s), None) => Some(s.to_bytes()),
        (Value::Hash(h), Some(f)) => h.get_bytes(&pattern[f + 2..]),
        _ => None,
    }
}

/// A number as SORT reads it (C's strtod, whole string): leading blanks allowed, an empty
/// string is 0, NaN and out-of-range values are errors.
fn sort_score(s: &[u8]) -> Option<f64> {
    let t = s.trim_ascii_start();
    if t.is_empty() {
        return Some(0.0);
    }
    let v = parse_f64(t)?;
    let inf_spelled = t
        .iter()
        .any(|c| c.is_ascii_alphabetic() && !matches!(c, b'e' | b'E'));
    (v.is_finite() || inf_spelled).then_some(v)
}

struct Item {
    elem: Bytes,
    score: f64,
    /// The BY value compared with ALPHA (None when the BY key is missing).
    cmp: Option<Bytes>,
}

fn sort_generic(ctx: &mut Ctx, a: &[Bytes], readonly: bool) -> Reply {
    let mut o = match parse_options(a, readonly, ctx.cl.sort_patterns_denied) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let desc = o.desc;
    // The elements in their native order, and whether that order is a sorted set's.
    let (mut elems, is_set) = match ctx.read(&a[1]).map(|e| &e.value) {
        None => (vec![], false),
        Some(Value::List(l)) => (
            l.iter().map(Bytes::copy_from_slice).collect::<Vec<_>>(),
            false,
        ),
        Some(Value::Set(s)) => (s.ordered(), true),
        Some(Value::ZSet(z)) => (
            z.range(0, z.len()).into_iter().map(|(m, _)| m).collect(),
            false,
        ),
        Some(_) => return error::wrongtype(),
    };
    // An unsorted set would come out in hash order: stored or seen by a script it is
    // sorted ALPHA instead, so the result is the same everywhere.
    if o.dont_sort && is_set && (o.store.is_some() || ctx.cl.in_script) {
        o.dont_sort = false;
        o.alpha = true;
        o.by = None;
    }
    if o.dont_sort && !is_set && desc {
        elems.reverse();
    }
    let len = elems.len() as i64;
    let (limit_start, limit_count) = o.limit;
    let mut start = limit_start.max(0);
    let mut end = if limit_count < 0 {
        len - 1
    } else {
        start + limit_count - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    end = end.min(len - 1);

    let write = o.store.is_some();
    let mut items: Vec<Item> = elems
        .into_iter()
        .map(|elem| Item {
            elem,
            score: 0.0,
            cmp: None,
        })
        .collect();
    if !o.dont_sort {
        let mut bad_number = false;
        for it in &mut items {
            let by = match &o.by {
                Some(p) => match lookup_by_pattern(ctx, p, &it.elem, write) {
                    Some(v) => v,
                    None => continue,
                },
                None => it.elem.clone(),
            };
            if o.alpha {
                if o.by.is_some() {
                    it.cmp = Some(by);
                }
            } else {
                match sort_score(&by) {
                    Some(s) => it.score = s,
                    None => bad_number = true,
                }
            }
        }
        let by_pattern = o.by.is_some();
        let alpha = o.alpha;
        items.sort_by(|x, y| {
            let c = if !alpha {
                x.score
                    .partial_cmp(&y.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| x.elem.cmp(&y.elem))
            } else if by_pattern {
                x.cmp.cmp(&y.cmp)
            } else {
                x.elem.cmp(&y.elem)
            };
            if desc {
                c.reverse()
            } else {
                c
            }
        });
        if bad_number {
            return Reply::err("ERR One or more scores can't be converted into double");
        }
    }

    let range = if end >= start {
        &items[start as usize..=end as usize]
    } else {
        &items[..0]
    };
    let mut out: Vec<Option<Bytes>> = Vec::new();
    for it in range {
        if o.gets.is_empty() {
            out.push(Some(it.elem.clone()));
        }
        for g in &o.gets {
            out.push(lookup_by_pattern(ctx, g, &it.elem, write));
        }
    }
    let Some(dst) = o.store else {
        return Reply::Array(out.into_iter().map(Reply::opt_bulk).collect());
    };
    let n = out.len() as i64;
    let db = ctx.dbi();
    if out.is_empty() {
        if ctx.write(&dst).is_some() {
            crate::engine::delete_key(ctx.eng, db, &dst);
        }
    } else {
        let list = crate::storage::qlist::ListValue::from_items(
            ctx.eng.config.list_max_listpack_size,
            out.into_iter().map(Option::unwrap_or_default),
        );
        ctx.write(&dst);
        crate::engine::store(ctx.eng, db, dst.clone(), Value::List(list), None);
        ctx.modified(&dst, notify::LIST, "sortstore");
    }
    Reply::Int(n)
}
