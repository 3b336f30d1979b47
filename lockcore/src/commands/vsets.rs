//! Vector set commands (Redis 8.0 personalities only): VADD, VREM, VCARD, VDIM, VEMB,
//! VGETATTR, VSETATTR, VINFO, VISMEMBER, VLINKS, VRANDMEMBER, VSIM.
//!
//! Replies, errors and their order follow Redis 8.0.2's vector-sets module. The type and
//! its arithmetic are in storage/vset.rs, FILTER in storage/vexpr.rs; what differs from
//! Redis (exact search instead of an HNSW graph, so graph-shaped replies only share their
//! shape) is written down there. Everything runs inside the engine like any command: no
//! threads, so CAS and NOTHREAD are accepted and change nothing.

use bytes::Bytes;
use rand::Rng;

use crate::engine::spec::{flag::*, CommandSpec, Ctx, KEY1};
use crate::error;
use crate::num::{parse_f64, parse_i64};
use crate::personality::Since;
use crate::reply::Reply;
use crate::storage::value::Value;
use crate::storage::vexpr;
use crate::storage::vset::{self, Quant, VectorSet};

const fn cmd(name: &'static str, flags: u32, h: crate::engine::spec::Handler) -> CommandSpec {
    crate::engine::spec::since(
        Since::redis(800),
        crate::engine::spec::engine("module", &[], name, -1, flags, KEY1, h),
    )
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd("vadd", WRITE | DENYOOM, vadd),
    cmd("vrem", WRITE, vrem),
    cmd("vcard", READONLY | FAST, vcard),
    cmd("vdim", READONLY | FAST, vdim),
    cmd("vemb", READONLY | FAST, vemb),
    cmd("vgetattr", READONLY | FAST, vgetattr),
    cmd("vsetattr", WRITE | FAST, vsetattr),
    cmd("vinfo", READONLY | FAST, vinfo),
    cmd("vismember", READONLY, vismember),
    cmd("vlinks", READONLY | FAST, vlinks),
    cmd("vrandmember", READONLY, vrandmember),
    cmd("vsim", READONLY, vsim),
];

/// The module sends no keyspace events (not even `del` when VREM empties the set): the
/// write epilogue runs (WATCH, tracking, dirty) with no event class.
const NO_EVENT: u32 = 0;

fn arity(name: &str) -> Reply {
    Reply::err(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// A score or component: a double, which the redis-8.0 personality prints as Redis 8's
/// addReplyDouble does (the shortest round-tripping text).
fn dbl(d: f64) -> Reply {
    Reply::Double(d)
}

/// The vector set at `key`: None if absent, WRONGTYPE for another type.
fn get<'a>(ctx: &'a mut Ctx, key: &[u8], write: bool) -> Result<Option<&'a mut VectorSet>, Reply> {
    let e = if write { ctx.write(key) } else { ctx.read(key) };
    match e {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::VSet(v) => Ok(Some(v)),
            _ => Err(error::wrongtype()),
        },
    }
}

/// Parses `[REDUCE dim] FP32 blob | VALUES n v...` at `a[at..]` (REDUCE only when
/// `reduce` is wanted): the vector, the reduction asked (0 for none) and the arguments
/// used; None for Redis' "invalid vector specification".
fn parse_vector(a: &[Bytes], mut at: usize, reduce: bool) -> Option<(Vec<f32>, usize, usize)> {
    let start = at;
    let mut rdim = 0;
    if reduce && a.len() > at + 2 && a[at].eq_ignore_ascii_case(b"reduce") {
        match parse_i64(&a[at + 1]) {
            Some(n) if n > 0 => rdim = n as usize,
            _ => return None,
        }
        at += 2;
    }
    let fmt = a.get(at)?;
    if fmt.eq_ignore_ascii_case(b"fp32") {
        let blob = a.get(at + 1)?;
        if blob.len() % 4 != 0 || blob.is_empty() || blob.len() / 4 > vset::MAX_DIM {
            return None;
        }
        let v = blob
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        Some((v, rdim, at + 2 - start))
    } else if fmt.eq_ignore_ascii_case(b"values") {
        let n = parse_i64(a.get(at + 1)?)?;
        if n < 1 || n as usize > vset::MAX_DIM {
            return None;
        }
        let n = n as usize;
        if a.len() < at + 2 + n {
            return None;
        }
        let mut v = Vec::with_capacity(n);
        for x in &a[at + 2..at + 2 + n] {
            v.push(parse_f64(x)? as f32);
        }
        Some((v, rdim, at + 2 + n - start))
    } else {
        None
    }
}

fn vadd(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() < 5 {
        return arity("VADD");
    }
    let Some((vec, rdim, used)) = parse_vector(a, 2, true) else {
        return Reply::err("ERR invalid vector specification");
    };
    if a.len() < 3 + used {
        return arity("VADD");
    }
    let name = a[2 + used].clone();
    let (mut quant, mut m, mut attr) = (Quant::Q8, vset::DEFAULT_M as i64, None);
    let mut j = 3 + used;
    while j < a.len() {
        let o = &a[j];
        let has_arg = j + 1 < a.len();
        if o.eq_ignore_ascii_case(b"cas") {
        } else if o.eq_ignore_ascii_case(b"ef") && has_arg {
            match parse_i64(&a[j + 1]) {
                Some(n) if n > 0 && n <= 1_000_000 => {}
                _ => return Reply::err("ERR invalid EF"),
            }
            j += 1;
        } else if o.eq_ignore_ascii_case(b"m") && has_arg {
            match parse_i64(&a[j + 1]) {
                Some(n) if (vset::MIN_M..=vset::MAX_M).contains(&n) => m = n,
                _ => return Reply::err("ERR invalid M"),
            }
            j += 1;
        } else if o.eq_ignore_ascii_case(b"setattr") && has_arg {
            attr = Some(a[j + 1].clone());
            j += 1;
        } else if o.eq_ignore_ascii_case(b"noquant") {
            quant = Quant::NoQuant;
        } else if o.eq_ignore_ascii_case(b"bin") {
            quant = Quant::Bin;
        } else if o.eq_ignore_ascii_case(b"q8") {
            quant = Quant::Q8;
        } else {
            return Reply::err("ERR invalid option after element");
        }
        j += 1;
    }
    let dim = vec.len();
    let added = match get(ctx, &a[1], true) {
        Err(e) => return e,
        Ok(Some(vs)) => {
            if vs.quant != quant {
                return Reply::err("ERR asked quantization mismatch with existing vector set");
            }
            if vs.m as i64 != m {
                return Reply::err("ERR asked M value mismatch with existing vector set");
            }
            let want = if vs.proj.is_some() { rdim } else { dim };
            if vs.dim != want {
                return Reply::err(format!(
                    "ERR Vector dimension mismatch - got {} but set has {}",
                    dim, vs.dim
                ));
            }
            if rdim != 0 && vs.proj.is_none() {
                return Reply::err("ERR cannot add projection to existing set without projection");
            }
            let vec = match &vs.proj {
                Some((input, _)) if *input != dim => {
                    return Reply::err(format!(
                        "ERR Input dimension mismatch for projection - got {} but projection expects {}",
                        dim, input
                    ))
                }
                Some(_) => vs.project(vec),
                None => vec,
            };
            vs.insert(name, vec, attr)
        }
        Ok(None) => {
            let mut vs = VectorSet::new(if rdim > 0 { rdim } else { dim }, quant, m as u32);
            let vec = if rdim > 0 {
                vs.set_projection(dim);
                vs.project(vec)
            } else {
                vec
            };
            vs.insert(name, vec, attr);
            let db = ctx.dbi();
            let now = ctx.now();
            ctx.note_new_key(&a[1]);
            ctx.eng.dbs[db].insert(a[1].clone(), Value::VSet(Box::new(vs)), None, now);
            true
        }
    };
    // An update (reply 0) replaced the element's vector: WATCH sees it too.
    ctx.modified(&a[1], NO_EVENT, "vadd");
    Reply::Bool(added)
}

fn vrem(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() != 3 {
        return arity("VREM");
    }
    let vs = match get(ctx, &a[1], true) {
        Err(e) => return e,
        Ok(None) => return Reply::Bool(false),
        Ok(Some(vs)) => vs,
    };
    if !vs.remove(&a[2]) {
        return Reply::Bool(false);
    }
    let empty = vs.is_empty();
    ctx.modified(&a[1], NO_EVENT, "vrem");
    if empty {
        let db = ctx.dbi();
        ctx.eng.dbs[db].remove(&a[1]);
    }
    Reply::Bool(true)
}

fn vcard(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() != 2 {
        return arity("VCARD");
    }
    match get(ctx, &a[1], false) {
        Err(e) => e,
        Ok(None) => Reply::Int(0),
        Ok(Some(vs)) => Reply::Int(vs.len() as i64),
    }
}

fn vdim(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() != 2 {
        return arity("VDIM");
    }
    match get(ctx, &a[1], false) {
        Err(e) => e,
        Ok(None) => Reply::err("ERR key does not exist"),
        Ok(Some(vs)) => Reply::Int(vs.dim as i64),
    }
}

fn vemb(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() < 3 {
        return arity("VEMB");
    }
    let mut raw = false;
    for o in &a[3..] {
        if o.eq_ignore_ascii_case(b"raw") {
            raw = true;
        } else {
            return Reply::err("ERR invalid option");
        }
    }
    let vs = match get(ctx, &a[1], false) {
        Err(e) => return e,
        Ok(None) => return Reply::Null,
        Ok(Some(vs)) => vs,
    };
    let Some(n) = vs.elems.get(&a[2]) else {
        return Reply::Null;
    };
    if raw {
        let mut out = vec![
            Reply::simple(vs.quant.name()),
            Reply::Bulk(Bytes::from(n.raw_bytes())),
            dbl(n.l2 as f64),
        ];
        if let vset::Stored::Q8(_, range) = &n.vec {
            out.push(dbl(*range as f64));
        }
        return Reply::Array(out);
    }
    Reply::Array(
        n.approx(vs.dim)
            .into_iter()
            .map(|x| dbl(x as f64))
            .collect(),
    )
}

fn vgetattr(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() != 3 {
        return arity("VGETATTR");
    }
    match get(ctx, &a[1], false) {
        Err(e) => e,
        Ok(None) => Reply::Null,
        Ok(Some(vs)) => Reply::opt_bulk(vs.elems.get(&a[2]).and_then(|n| n.attr.clone())),
    }
}

fn vsetattr(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() != 4 {
        return arity("VSETATTR");
    }
    let vs = match get(ctx, &a[1], true) {
        Err(e) => return e,
        Ok(None) => return Reply::Bool(false),
        Ok(Some(vs)) => vs,
    };
    let Some(n) = vs.elems.get_mut(&a[2]) else {
        return Reply::Bool(false);
    };
    n.attr = (!a[3].is_empty()).then(|| a[3].clone());
    ctx.modified(&a[1], NO_EVENT, "vsetattr");
    Reply::Bool(true)
}

fn vinfo(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() != 2 {
        return arity("VINFO");
    }
    let vs = match get(ctx, &a[1], false) {
        Err(e) => return e,
        Ok(None) => return Reply::NullArray,
        Ok(Some(vs)) => vs,
    };
    let s = Reply::simple;
    let i = |n: u64| Reply::Int(n as i64);
    Reply::Map(vec![
        (s("quant-type"), s(vs.quant.name())),
        (s("hnsw-m"), i(vs.m as u64)),
        (s("vector-dim"), i(vs.dim as u64)),
        (
            s("projection-input-dim"),
            i(vs.proj.as_ref().map_or(0, |(n, _)| *n as u64)),
        ),
        (s("size"), i(vs.len() as u64)),
        (s("max-level"), i(vs.max_level as u64)),
        (s("attributes-count"), i(vs.attrs_count() as u64)),
        (s("vset-uid"), i(vs.uid)),
        (s("hnsw-max-node-uid"), i(vs.last_id)),
    ])
}

fn vismember(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() != 3 {
        return arity("VISMEMBER");
    }
    match get(ctx, &a[1], false) {
        Err(e) => e,
        Ok(None) => Reply::Bool(false),
        Ok(Some(vs)) => Reply::Bool(vs.elems.contains_key(&a[2])),
    }
}

fn vlinks(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() < 3 || a.len() > 4 {
        return arity("VLINKS");
    }
    let withscores = a.len() == 4;
    if withscores && !a[3].eq_ignore_ascii_case(b"withscores") {
        return arity("VLINKS");
    }
    let vs = match get(ctx, &a[1], false) {
        Err(e) => return e,
        Ok(None) => return Reply::Null,
        Ok(Some(vs)) => vs,
    };
    let Some(levels) = vs.links(&a[2]) else {
        return Reply::Null;
    };
    Reply::Array(
        levels
            .into_iter()
            .map(|l| {
                if withscores {
                    Reply::Map(
                        l.into_iter()
                            .map(|(k, d)| {
                                let sim = (1.0 - d as f64 / 2.0) as f32;
                                (Reply::Bulk(k.clone()), dbl(sim as f64))
                            })
                            .collect(),
                    )
                } else {
                    Reply::Array(l.into_iter().map(|(k, _)| Reply::Bulk(k.clone())).collect())
                }
            })
            .collect(),
    )
}

fn vrandmember(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() != 2 && a.len() != 3 {
        return arity("VRANDMEMBER");
    }
    let with_count = a.len() == 3;
    let mut count = 1;
    if with_count {
        match parse_i64(&a[2]) {
            Some(0) => return Reply::Array(vec![]),
            Some(n) => count = n,
            None => return Reply::err("ERR COUNT value is not an integer"),
        }
    }
    let vs = match get(ctx, &a[1], false) {
        Err(e) => return e,
        Ok(None) if with_count => return Reply::Array(vec![]),
        Ok(None) => return Reply::Null,
        Ok(Some(vs)) => vs,
    };
    let n = vs.len();
    let mut rng = rand::thread_rng();
    let pick = |rng: &mut rand::rngs::ThreadRng| {
        Reply::Bulk(vs.elems.get_index(rng.gen_range(0..n)).unwrap().0.clone())
    };
    if !with_count {
        return pick(&mut rng);
    }
    if count < 0 {
        let c = count.unsigned_abs() as usize;
        return Reply::Array((0..c).map(|_| pick(&mut rng)).collect());
    }
    let c = (count as usize).min(n);
    let idx = rand::seq::index::sample(&mut rng, n, c);
    Reply::Array(
        idx.into_iter()
            .map(|i| Reply::Bulk(vs.elems.get_index(i).unwrap().0.clone()))
            .collect(),
    )
}

fn vsim(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() < 4 {
        return arity("VSIM");
    }
    let resp3 = ctx.cl.resp3;
    let vs = match get(ctx, &a[1], false) {
        Err(e) => return e,
        Ok(None) => return Reply::Array(vec![]),
        Ok(Some(vs)) => vs,
    };
    let (query, used) = if a[2].eq_ignore_ascii_case(b"ele") {
        let Some(n) = vs.elems.get(&a[3]) else {
            return Reply::err("ERR element not found in set");
        };
        (n.approx(vs.dim), 2)
    } else {
        let Some((mut v, _, used)) = parse_vector(a, 2, false) else {
            return Reply::err("ERR invalid vector specification");
        };
        if let Some((input, _)) = &vs.proj {
            if v.len() != vs.dim {
                if v.len() != *input {
                    return Reply::err(format!(
                        "ERR Input dimension mismatch for projection - got {} but projection expects {}",
                        v.len(),
                        input
                    ));
                }
                v = vs.project(v);
            }
        }
        (v, used)
    };
    if query.len() != vs.dim {
        return Reply::err(format!(
            "ERR Vector dimension mismatch - got {} but set has {}",
            query.len(),
            vs.dim
        ));
    }
    let (mut withscores, mut count, mut epsilon) = (false, 10i64, 2.0f64);
    let mut filter: Option<vexpr::Filter> = None;
    let mut j = 2 + used;
    while j < a.len() {
        let o = &a[j];
        let has_arg = j + 1 < a.len();
        if o.eq_ignore_ascii_case(b"withscores") {
            withscores = true;
        } else if o.eq_ignore_ascii_case(b"truth") || o.eq_ignore_ascii_case(b"nothread") {
        } else if o.eq_ignore_ascii_case(b"count") && has_arg {
            match parse_i64(&a[j + 1]) {
                Some(n) if n > 0 => count = n,
                _ => return Reply::err("ERR invalid COUNT"),
            }
            j += 1;
        } else if o.eq_ignore_ascii_case(b"epsilon") && has_arg {
            match parse_f64(&a[j + 1]) {
                Some(e) if e > 0.0 => epsilon = e,
                _ => return Reply::err("ERR invalid EPSILON"),
            }
            j += 1;
        } else if o.eq_ignore_ascii_case(b"ef") && has_arg {
            // No upper bound here in 8.0.2 (VADD's EF has one).
            match parse_i64(&a[j + 1]) {
                Some(n) if n > 0 => {}
                _ => return Reply::err("ERR invalid EF"),
            }
            j += 1;
        } else if o.eq_ignore_ascii_case(b"filter-ef") && has_arg {
            match parse_i64(&a[j + 1]) {
                Some(n) if n > 0 => {}
                _ => return Reply::err("ERR invalid FILTER-EF"),
            }
            j += 1;
        } else if o.eq_ignore_ascii_case(b"filter") && has_arg {
            match vexpr::compile(&a[j + 1]) {
                Ok(f) => filter = Some(f),
                Err(e) => return Reply::err(e),
            }
            j += 1;
        } else {
            return Reply::err("ERR syntax error in VSIM command");
        }
        j += 1;
    }
    let q = vs.query(query);
    let eps = epsilon as f32;
    let ranked = vs.ranked(&q, usize::try_from(count).unwrap_or(usize::MAX), |n| {
        filter.as_ref().is_none_or(|f| f.matches(n.attr.as_deref()))
    });
    let hits = ranked.into_iter().take_while(|(_, _, d)| d / 2.0 <= eps);
    if withscores {
        let pairs = hits
            .map(|(k, _, d)| (Reply::Bulk(k.clone()), dbl(vset::score(d))))
            .collect::<Vec<_>>();
        if resp3 {
            Reply::Map(pairs)
        } else {
            Reply::Array(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect())
        }
    } else {
        Reply::Array(hits.map(|(k, _, _)| Reply::Bulk(k.clone())).collect())
    }
}
