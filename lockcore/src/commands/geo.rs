//! Geo commands on sorted sets, as Redis 7.0's geo.c and geohash*.c: a position is the
//! 52-bit interleaved geohash (26 steps) of its longitude and latitude (latitude limited to
//! ±85.05112878, Web Mercator's range), stored as the member's score. Searches cover the
//! center geohash box and its neighbours at a step estimated from the radius, exactly as
//! Redis picks them, so unsorted results come out in Redis' order.

use bytes::Bytes;

use crate::commands::zsets::{get_zset, store_result, zadd};
use crate::engine::spec::{flag::*, CommandSpec, Ctx, Keys, KEY1};
use crate::error;
use crate::num::parse_f64;
use crate::reply::Reply;
use crate::storage::zset::ZSet;

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    crate::engine::spec::engine("geo", &["geo"], name, arity, flags, keys, h)
}

/// GEORADIUS* read the key at 1 and may STORE to a key named by an option.
const RADIUS_KEYS: Keys = Keys::GeoRadius;
const STORE_KEYS: Keys = Keys::Range {
    first: 1,
    last: 2,
    step: 1,
};

pub static COMMANDS: &[CommandSpec] = &[
    cmd("geoadd", -5, WRITE | DENYOOM, KEY1, geoadd),
    cmd("geodist", -4, READONLY, KEY1, geodist),
    cmd("geohash", -2, READONLY, KEY1, geohash),
    cmd("geopos", -2, READONLY, KEY1, geopos),
    cmd("georadius", -6, WRITE | DENYOOM, RADIUS_KEYS, georadius),
    cmd("georadius_ro", -6, READONLY, KEY1, georadius_ro),
    cmd(
        "georadiusbymember",
        -5,
        WRITE | DENYOOM,
        RADIUS_KEYS,
        georadiusbymember,
    ),
    cmd(
        "georadiusbymember_ro",
        -5,
        READONLY,
        KEY1,
        georadiusbymember_ro,
    ),
    cmd("geosearch", -7, READONLY, KEY1, geosearch),
    cmd(
        "geosearchstore",
        -8,
        WRITE | DENYOOM,
        STORE_KEYS,
        geosearchstore,
    ),
];

const STEP_MAX: u32 = 26;
const LAT_MIN: f64 = -85.05112878;
const LAT_MAX: f64 = 85.05112878;
const LONG_MIN: f64 = -180.0;
const LONG_MAX: f64 = 180.0;
const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;

#[derive(Clone, Copy, PartialEq)]
struct Hash {
    bits: u64,
    step: u32,
}

const ZERO: Hash = Hash { bits: 0, step: 0 };

#[derive(Clone, Copy)]
struct Range {
    min: f64,
    max: f64,
}

const LONG_RANGE: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
const LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

struct Area {
    lon: Range,
    lat: Range,
}

/// Spreads the low 32 bits of `v` to the even bit positions.
fn spread(v: u32) -> u64 {
    (0..32).fold(0, |acc, i| acc | (((v as u64 >> i) & 1) << (2 * i)))
}

/// The even bit positions of `v`, packed.
fn squash(v: u64) -> u32 {
    (0..32).fold(0, |acc, i| acc | (((v >> (2 * i)) & 1) << i) as u32)
}

/// geohashEncode: latitude in the even bits, longitude in the odd ones.
fn encode(lon_r: Range, lat_r: Range, lon: f64, lat: f64, step: u32) -> Option<Hash> {
    if !(LONG_MIN..=LONG_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_r.min || lat > lat_r.max || lon < lon_r.min || lon > lon_r.max {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_off = (lat - lat_r.min) / (lat_r.max - lat_r.min) * scale;
    let lon_off = (lon - lon_r.min) / (lon_r.max - lon_r.min) * scale;
    Some(Hash {
        bits: spread(lat_off as u32) | (spread(lon_off as u32) << 1),
        step,
    })
}

fn decode(lon_r: Range, lat_r: Range, h: Hash) -> Area {
    let ilat = squash(h.bits) as f64;
    let ilon = squash(h.bits >> 1) as f64;
    let n = (1u64 << h.step) as f64;
    let (lat_scale, lon_scale) = (lat_r.max - lat_r.min, lon_r.max - lon_r.min);
    Area {
        lat: Range {
            min: lat_r.min + (ilat / n) * lat_scale,
            max: lat_r.min + ((ilat + 1.0) / n) * lat_scale,
        },
        lon: Range {
            min: lon_r.min + (ilon / n) * lon_scale,
            max: lon_r.min + ((ilon + 1.0) / n) * lon_scale,
        },
    }
}

/// A member's score back to (longitude, latitude): the center of its 26-step box.
fn decode_score(score: f64) -> [f64; 2] {
    let a = decode(
        LONG_RANGE,
        LAT_RANGE,
        Hash {
            bits: score as u64,
            step: STEP_MAX,
        },
    );
    [
        ((a.lon.min + a.lon.max) / 2.0).clamp(LONG_MIN, LONG_MAX),
        ((a.lat.min + a.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX),
    ]
}

fn align52(h: Hash) -> u64 {
    h.bits << (52 - h.step * 2)
}

fn deg_rad(d: f64) -> f64 {
    d * (std::f64::consts::PI / 180.0)
}

fn rad_deg(r: f64) -> f64 {
    r / (std::f64::consts::PI / 180.0)
}

fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// Haversine distance in meters, as geohashGetDistance.
fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let v = ((deg_rad(lon2) - deg_rad(lon1)) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// Moves `h` one box along the axis whose bits are `mine` (longitude: the odd bits,
/// latitude: the even ones), as Redis' geohash_move_x / geohash_move_y.
fn move_axis(h: &mut Hash, d: i8, mine: u64) {
    let shift = 64 - h.step * 2;
    let keep = h.bits & !mine;
    let zz = !mine >> shift;
    let v = h.bits & mine;
    let v = if d > 0 {
        v.wrapping_add(zz + 1)
    } else {
        (v | zz).wrapping_sub(zz + 1)
    };
    h.bits = (v & (mine >> shift)) | keep;
}

const LON_BITS: u64 = 0xaaaaaaaaaaaaaaaa;
const LAT_BITS: u64 = 0x5555555555555555;

/// The neighbours in Redis' search order after the center: N, S, E, W, NE, NW, SE, SW.
fn neighbors(h: Hash) -> [Hash; 8] {
    let mv = |dx: i8, dy: i8| {
        let mut n = h;
        if dx != 0 {
            move_axis(&mut n, dx, LON_BITS);
        }
        if dy != 0 {
            move_axis(&mut n, dy, LAT_BITS);
        }
        n
    };
    [
        mv(0, 1),
        mv(0, -1),
        mv(1, 0),
        mv(-1, 0),
        mv(1, 1),
        mv(-1, 1),
        mv(1, -1),
        mv(-1, -1),
    ]
}

#[derive(Clone, Copy)]
enum Shape {
    Radius(f64),
    Box(f64, f64),
}

struct Search {
    center: [f64; 2],
    shape: Shape,
    /// Meters per unit of the request.
    conversion: f64,
}

fn estimate_steps(mut range: f64, lat: f64) -> u32 {
    if range == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u32
}

/// The boxes to scan: center first, then the useful neighbours (zero = skipped).
fn search_boxes(s: &Search) -> [Hash; 9] {
    let [lon, lat] = s.center;
    let (half_h, half_w) = match s.shape {
        Shape::Radius(r) => (r, r),
        Shape::Box(w, h) => (h / 2.0, w / 2.0),
    };
    let (height, width) = (s.conversion * half_h, s.conversion * half_w);
    let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
    let long_delta_top = rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(lat + lat_delta).cos());
    let long_delta_bottom =
        rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(lat - lat_delta).cos());
    let south = lat < 0.0;
    let min_lon = lon
        - if south {
            long_delta_bottom
        } else {
            long_delta_top
        };
    let max_lon = lon
        + if south {
            long_delta_bottom
        } else {
            long_delta_top
        };
    let (min_lat, max_lat) = (lat - lat_delta, lat + lat_delta);
    let radius_m = s.conversion
        * match s.shape {
            Shape::Radius(r) => r,
            Shape::Box(w, h) => ((w / 2.0) * (w / 2.0) + (h / 2.0) * (h / 2.0)).sqrt(),
        };
    let mut steps = estimate_steps(radius_m, lat);
    let at = |steps: u32| {
        let h = encode(LONG_RANGE, LAT_RANGE, lon, lat, steps).unwrap_or(Hash {
            bits: 0,
            step: steps,
        });
        (h, neighbors(h), decode(LONG_RANGE, LAT_RANGE, h))
    };
    let (mut hash, mut nb, mut area) = at(steps);
    let [n, s_, e, w] = [nb[0], nb[1], nb[2], nb[3]].map(|x| decode(LONG_RANGE, LAT_RANGE, x));
    let decrease =
        n.lat.max < max_lat || s_.lat.min > min_lat || e.lon.max < max_lon || w.lon.min > min_lon;
    if steps > 1 && decrease {
        steps -= 1;
        (hash, nb, area) = at(steps);
    }
    if steps >= 2 {
        // Indices into nb: N 0, S 1, E 2, W 3, NE 4, NW 5, SE 6, SW 7.
        if area.lat.min < min_lat {
            for i in [1, 7, 6] {
                nb[i] = ZERO;
            }
        }
        if area.lat.max > max_lat {
            for i in [0, 4, 5] {
                nb[i] = ZERO;
            }
        }
        if area.lon.min < min_lon {
            for i in [3, 7, 5] {
                nb[i] = ZERO;
            }
        }
        if area.lon.max > max_lon {
            for i in [2, 6, 4] {
                nb[i] = ZERO;
            }
        }
    }
    let mut out = [ZERO; 9];
    out[0] = hash;
    out[1..].copy_from_slice(&nb);
    out
}

struct Point {
    member: Bytes,
    score: f64,
    dist: f64,
    xy: [f64; 2],
}

/// The distance from the search center if the point is inside the shape.
fn within(s: &Search, xy: [f64; 2]) -> Option<f64> {
    let [cx, cy] = s.center;
    match s.shape {
        Shape::Radius(r) => {
            let d = distance(cx, cy, xy[0], xy[1]);
            (d <= r * s.conversion).then_some(d)
        }
        Shape::Box(w, h) => {
            if lat_distance(xy[1], cy) > h * s.conversion / 2.0 {
                return None;
            }
            if distance(xy[0], xy[1], cx, xy[1]) > w * s.conversion / 2.0 {
                return None;
            }
            Some(distance(cx, cy, xy[0], xy[1]))
        }
    }
}

/// Redis' membersOfAllNeighbors: the points in each box (ascending score within a box),
/// skipping zeroed boxes and a box equal to the one processed before it. `limit` (ANY)
/// stops early.
fn search(z: &ZSet, s: &Search, limit: usize) -> Vec<Point> {
    let boxes = search_boxes(s);
    let mut out = Vec::new();
    let mut last: Option<Hash> = None;
    for b in boxes {
        if b == ZERO {
            continue;
        }
        if last == Some(b) {
            continue;
        }
        if limit > 0 && out.len() >= limit {
            break;
        }
        let min = align52(b) as f64;
        let max = align52(Hash {
            bits: b.bits + 1,
            step: b.step,
        }) as f64;
        let start = z.count_before(&|sc, _| sc < min);
        let end = z.count_before(&|sc, _| sc < max);
        for i in start..end {
            let Some((score, m)) = z.nth_owned(i) else {
                break;
            };
            let xy = decode_score(score);
            if let Some(dist) = within(s, xy) {
                out.push(Point {
                    member: m.clone(),
                    score,
                    dist,
                    xy,
                });
                if limit > 0 && out.len() >= limit {
                    break;
                }
            }
        }
        last = Some(b);
    }
    out
}

// ---------------------------------------------------------------- replies and parsing

/// A coordinate as Redis' addReplyHumanLongDouble sends it.
fn human(d: f64) -> Reply {
    Reply::HumanDouble(d)
}

fn dist_reply(d: f64) -> Reply {
    Reply::Bulk(Bytes::from(format!("{d:.4}")))
}

fn float_or(v: &[u8], msg: &'static str) -> Result<f64, Reply> {
    parse_f64(v).ok_or_else(|| Reply::err(msg))
}

fn lon_lat(a: &[Bytes]) -> Result<[f64; 2], Reply> {
    let lon = float_or(&a[0], "ERR value is not a valid float")?;
    let lat = float_or(&a[1], "ERR value is not a valid float")?;
    if !(LONG_MIN..=LONG_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return Err(Reply::err(format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        )));
    }
    Ok([lon, lat])
}

fn unit(v: &[u8]) -> Result<f64, Reply> {
    match v.to_ascii_lowercase().as_slice() {
        b"m" => Ok(1.0),
        b"km" => Ok(1000.0),
        b"ft" => Ok(0.3048),
        b"mi" => Ok(1609.34),
        _ => Err(Reply::err(
            "ERR unsupported unit provided. please use M, KM, FT, MI",
        )),
    }
}

fn radius_arg(a: &[Bytes]) -> Result<(f64, f64), Reply> {
    let r = float_or(&a[0], "ERR need numeric radius")?;
    if r < 0.0 {
        return Err(Reply::err("ERR radius cannot be negative"));
    }
    Ok((r, unit(&a[1])?))
}

fn member_pos(z: &ZSet, m: &[u8]) -> Result<[f64; 2], Reply> {
    z.score(m)
        .map(decode_score)
        .ok_or_else(|| Reply::err("ERR could not decode requested zset member"))
}

fn geoadd(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (mut xx, mut nx) = (false, false);
    let mut i = 2;
    while i < a.len() {
        let o = &a[i];
        if o.eq_ignore_ascii_case(b"nx") {
            nx = true;
        } else if o.eq_ignore_ascii_case(b"xx") {
            xx = true;
        } else if !o.eq_ignore_ascii_case(b"ch") {
            break;
        }
        i += 1;
    }
    if (a.len() - i) % 3 != 0 || (xx && nx) {
        return error::syntax();
    }
    let mut argv: Vec<Bytes> = vec![Bytes::from_static(b"zadd")];
    argv.extend_from_slice(&a[1..i]);
    for t in a[i..].chunks(3) {
        let [lon, lat] = match lon_lat(&t[..2]) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let h = encode(LONG_RANGE, LAT_RANGE, lon, lat, STEP_MAX).unwrap_or(ZERO);
        argv.push(Bytes::from(align52(h).to_string()));
        argv.push(t[2].clone());
    }
    zadd(ctx, &argv)
}

fn geodist(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let to_m = match a.len() {
        4 => 1.0,
        5 => match unit(&a[4]) {
            Ok(u) => u,
            Err(e) => return e,
        },
        _ => return error::syntax(),
    };
    let z = match get_zset(ctx, &a[1], true) {
        Ok(Some(z)) => z,
        Ok(None) => return Reply::Null,
        Err(e) => return e,
    };
    match (z.score(&a[2]), z.score(&a[3])) {
        (Some(s1), Some(s2)) => {
            let (p, q) = (decode_score(s1), decode_score(s2));
            dist_reply(distance(p[0], p[1], q[0], q[1]) / to_m)
        }
        _ => Reply::Null,
    }
}

fn geohash(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    const ALPHABET: &[u8] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let z = match get_zset(ctx, &a[1], true) {
        Ok(z) => z,
        Err(e) => return e,
    };
    let out = a[2..]
        .iter()
        .map(|m| {
            let Some(score) = z.as_ref().and_then(|z| z.score(m)) else {
                return Reply::Null;
            };
            let [lon, lat] = decode_score(score);
            let std_lat = Range {
                min: -90.0,
                max: 90.0,
            };
            let bits = encode(LONG_RANGE, std_lat, lon, lat, STEP_MAX).map_or(0, |h| h.bits);
            let s: Vec<u8> = (0..11)
                .map(|i| {
                    let idx = if i == 10 {
                        0
                    } else {
                        (bits >> (52 - (i + 1) * 5)) & 0x1f
                    };
                    ALPHABET[idx as usize]
                })
                .collect();
            Reply::Bulk(Bytes::from(s))
        })
        .collect();
    Reply::Array(out)
}

fn geopos(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let z = match get_zset(ctx, &a[1], true) {
        Ok(z) => z,
        Err(e) => return e,
    };
    Reply::Array(
        a[2..]
            .iter()
            .map(|m| match z.as_ref().and_then(|z| z.score(m)) {
                Some(score) => {
                    let [lon, lat] = decode_score(score);
                    Reply::Array(vec![human(lon), human(lat)])
                }
                None => Reply::NullArray,
            })
            .collect(),
    )
}

// ---------------------------------------------------------------- GEORADIUS / GEOSEARCH

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// GEORADIUS[_RO]: center and radius are positional.
    Coords,
    /// GEORADIUSBYMEMBER[_RO].
    Member,
    /// GEOSEARCH / GEOSEARCHSTORE.
    Search,
}

fn georadius(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    radius_generic(ctx, a, Kind::Coords, true, false)
}
fn georadius_ro(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    radius_generic(ctx, a, Kind::Coords, false, false)
}
fn georadiusbymember(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    radius_generic(ctx, a, Kind::Member, true, false)
}
fn georadiusbymember_ro(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    radius_generic(ctx, a, Kind::Member, false, false)
}
fn geosearch(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    radius_generic(ctx, a, Kind::Search, false, false)
}
fn geosearchstore(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    radius_generic(ctx, a, Kind::Search, false, true)
}

fn radius_generic(
    ctx: &mut Ctx,
    a: &[Bytes],
    kind: Kind,
    can_store: bool,
    searchstore: bool,
) -> Reply {
    match radius_inner(ctx, a, kind, can_store, searchstore) {
        Ok(r) | Err(r) => r,
    }
}

fn radius_inner(
    ctx: &mut Ctx,
    a: &[Bytes],
    kind: Kind,
    can_store: bool,
    searchstore: bool,
) -> Result<Reply, Reply> {
    let src = if searchstore { 2 } else { 1 };
    let z: Option<ZSet> = get_zset(ctx, &a[src], true)?.map(|z| z.clone());
    let mut center = [0.0; 2];
    let mut shape = Shape::Radius(0.0);
    let mut conversion = 1.0;
    let mut store: Option<Bytes> = if searchstore {
        Some(a[1].clone())
    } else {
        None
    };
    let base = match kind {
        Kind::Coords => {
            center = lon_lat(&a[2..4])?;
            let (r, c) = radius_arg(&a[4..6])?;
            (shape, conversion) = (Shape::Radius(r), c);
            6
        }
        Kind::Member => {
            if let Some(z) = &z {
                center = member_pos(z, &a[2])?;
                let (r, c) = radius_arg(&a[3..5])?;
                (shape, conversion) = (Shape::Radius(r), c);
            }
            5
        }
        Kind::Search => src + 1,
    };
    let (mut withdist, mut withhash, mut withcoord, mut any) = (false, false, false, false);
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let mut sort: Option<bool> = None; // Some(true) = ASC
    let mut count: i64 = 0;
    let mut storedist = false;
    let rest = &a[base..];
    let mut i = 0;
    while i < rest.len() {
        let arg = rest[i].to_ascii_lowercase();
        let left = rest.len() - i - 1;
        let search = kind == Kind::Search;
        match arg.as_slice() {
            b"withdist" => withdist = true,
            b"withhash" => withhash = true,
            b"withcoord" => withcoord = true,
            b"any" => any = true,
            b"asc" => sort = Some(true),
            b"desc" => sort = Some(false),
            b"count" if left >= 1 => {
                count = crate::num::parse_i64(&rest[i + 1]).ok_or_else(error::not_integer)?;
                if count <= 0 {
                    return Err(Reply::err("ERR COUNT must be > 0"));
                }
                i += 1;
            }
            b"store" | b"storedist" if left >= 1 && can_store && !search => {
                store = Some(rest[i + 1].clone());
                storedist = arg == b"storedist";
                i += 1;
            }
            b"storedist" if search && searchstore => storedist = true,
            b"frommember" if left >= 1 && search && !fromloc => {
                if let Some(z) = &z {
                    center = member_pos(z, &rest[i + 1])?;
                }
                frommember = true;
                i += 1;
            }
            b"fromlonlat" if left >= 2 && search && !frommember => {
                center = lon_lat(&rest[i + 1..i + 3])?;
                fromloc = true;
                i += 2;
            }
            b"byradius" if left >= 2 && search && !bybox => {
                let (r, c) = radius_arg(&rest[i + 1..i + 3])?;
                (shape, conversion) = (Shape::Radius(r), c);
                byradius = true;
                i += 2;
            }
            b"bybox" if left >= 3 && search && !byradius => {
                let w = float_or(&rest[i + 1], "ERR need numeric width")?;
                let h = float_or(&rest[i + 2], "ERR need numeric height")?;
                if h < 0.0 || w < 0.0 {
                    return Err(Reply::err("ERR height or width cannot be negative"));
                }
                conversion = unit(&rest[i + 3])?;
                shape = Shape::Box(w, h);
                bybox = true;
                i += 3;
            }
            _ => return Err(error::syntax()),
        }
        i += 1;
    }
    let name = String::from_utf8_lossy(&a[0]).into_owned();
    if store.is_some() && (withdist || withhash || withcoord) {
        return Err(Reply::err(format!(
            "ERR {} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            if searchstore {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            }
        )));
    }
    if kind == Kind::Search && !(frommember || fromloc) {
        return Err(Reply::err(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if kind == Kind::Search && !(byradius || bybox) {
        return Err(Reply::err(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
        )));
    }
    if any && count == 0 {
        return Err(Reply::err("ERR the ANY argument requires COUNT argument"));
    }
    let db = ctx.dbi();
    let Some(z) = z else {
        return Ok(match store {
            Some(dst) => {
                if ctx.write(&dst).is_some() {
                    crate::engine::delete_key(ctx.eng, db, &dst);
                }
                Reply::Int(0)
            }
            None => Reply::Array(vec![]),
        });
    };
    if count != 0 && sort.is_none() && !any {
        sort = Some(true);
    }
    let s = Search {
        center,
        shape,
        conversion,
    };
    let limit = if any { count as usize } else { 0 };
    let mut pts = search(&z, &s, limit);
    if pts.is_empty() && store.is_none() {
        return Ok(Reply::Array(vec![]));
    }
    if let Some(asc) = sort {
        pts.sort_by(|x, y| {
            let o = x
                .dist
                .partial_cmp(&y.dist)
                .unwrap_or(std::cmp::Ordering::Equal);
            if asc {
                o
            } else {
                o.reverse()
            }
        });
    }
    let n = if count == 0 {
        pts.len()
    } else {
        pts.len().min(count as usize)
    };
    pts.truncate(n);
    for p in &mut pts {
        p.dist /= conversion;
    }
    if let Some(dst) = store {
        let items = pts
            .into_iter()
            .map(|p| (p.member, if storedist { p.dist } else { p.score }))
            .collect();
        let event = if kind == Kind::Search {
            "geosearchstore"
        } else {
            "georadiusstore"
        };
        return Ok(store_result(ctx, &dst, items, event));
    }
    let opts = withdist as usize + withhash as usize + withcoord as usize;
    Ok(Reply::Array(
        pts.into_iter()
            .map(|p| {
                if opts == 0 {
                    return Reply::Bulk(p.member);
                }
                let mut v = vec![Reply::Bulk(p.member)];
                if withdist {
                    v.push(dist_reply(p.dist));
                }
                if withhash {
                    v.push(Reply::Int(p.score as i64));
                }
                if withcoord {
                    v.push(Reply::Array(vec![human(p.xy[0]), human(p.xy[1])]));
                }
                Reply::Array(v)
            })
            .collect(),
    ))
}
