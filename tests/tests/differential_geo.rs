//! Differential tests for the geo commands against a real redis-server: positions, hashes
//! and distances as Redis prints them, searches by radius and box (unsorted results in
//! Redis' box order, sorted, COUNT/ANY, WITH* options), the STORE forms and the errors.

use tumbler_tests::diff_against_redis as run;
use tumbler_tests::diff_against_redis_resp3 as run_resp3;

const GEO: &str = r#"
    GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania
    GEOADD Sicily 12.758489 38.788135 edge1 17.241510 38.788135 edge2 13.5 37.0 south
    GEOADD Sicily NX 13.361389 38.115556 Palermo 14.0 38.0 newone
    GEOADD Sicily XX CH 13.4 38.1 Palermo 0 0 nothere
    GEOADD Sicily NX XX 1 1 a
    GEOADD Sicily 1 1
    GEOADD Sicily 200 10 bad
    GEOADD Sicily 10 86 bad
    GEOADD Sicily x 10 bad
    GEOPOS Sicily Palermo Catania nosuch
    GEOPOS nosuch a
    GEOHASH Sicily Palermo Catania edge1 nosuch
    GEOHASH nosuch a
    GEODIST Sicily Palermo Catania
    GEODIST Sicily Palermo Catania km
    GEODIST Sicily Palermo Catania mi
    GEODIST Sicily Palermo Catania ft
    GEODIST Sicily Palermo Catania parsecs
    GEODIST Sicily Palermo nosuch
    GEODIST nosuch a b
    GEODIST Sicily Palermo Catania km extra
    GEORADIUS Sicily 15 37 200 km
    GEORADIUS Sicily 15 37 200 km ASC
    GEORADIUS Sicily 15 37 200 km DESC WITHDIST WITHCOORD WITHHASH
    GEORADIUS Sicily 15 37 200 km COUNT 2
    GEORADIUS Sicily 15 37 200 km COUNT 1 ANY
    GEORADIUS Sicily 15 37 200 km ANY
    GEORADIUS Sicily 15 37 200 km COUNT 0
    GEORADIUS Sicily 15 37 -1 km
    GEORADIUS Sicily 15 37 x km
    GEORADIUS Sicily 15 37 10 lightyears
    GEORADIUS Sicily 15 37 2000 km
    GEORADIUS Sicily 15 37 1 m
    GEORADIUS Sicily 15 37 200 km STORE dst
    ZRANGE dst 0 -1 WITHSCORES
    GEORADIUS Sicily 15 37 200 km STOREDIST dst
    ZRANGE dst 0 -1 WITHSCORES
    GEORADIUS Sicily 15 37 200 km STORE dst WITHDIST
    GEORADIUS Sicily 15 37 1 m STORE dst
    EXISTS dst
    GEORADIUS nosuch 15 37 200 km STORE dst
    GEORADIUS nosuch 15 37 200 km
    GEORADIUS_RO Sicily 15 37 200 km STORE dst
    GEORADIUS_RO Sicily 15 37 200 km WITHDIST
    GEORADIUSBYMEMBER Sicily Palermo 200 km WITHDIST
    GEORADIUSBYMEMBER Sicily nosuch 200 km
    GEORADIUSBYMEMBER nosuch nosuch 200 km
    GEORADIUSBYMEMBER_RO Sicily Palermo 100 km
    GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km
    GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 400 400 km ASC WITHCOORD WITHDIST
    GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 400 400 km DESC COUNT 3
    GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 100 50 km
    GEOSEARCH Sicily FROMLONLAT 15 37 FROMMEMBER Palermo BYRADIUS 200 km
    GEOSEARCH Sicily BYRADIUS 200 km
    GEOSEARCH Sicily FROMLONLAT 15 37
    GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km BYBOX 1 1 km
    GEOSEARCH Sicily FROMMEMBER nosuch BYRADIUS 200 km
    GEOSEARCH nosuch FROMMEMBER nosuch BYRADIUS 200 km
    GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 1 km
    GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km STORE x
    GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km
    ZRANGE dst 0 -1 WITHSCORES
    GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST
    ZRANGE dst 0 -1 WITHSCORES
    GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km WITHDIST
    GEOSEARCHSTORE dst nosuch FROMLONLAT 15 37 BYRADIUS 200 km
    EXISTS dst
    SET str v
    GEOADD str 1 1 a
    GEOPOS str a
    GEORADIUS str 1 1 1 km
    GEOADD poles 0 85 n 0 -85 s 179.9 0 e -179.9 0 w 0 0 c
    GEORADIUS poles 0 0 5000 km
    GEORADIUS poles 0 84 1000 km
    GEORADIUS poles 179 0 500 km WITHDIST
    GEOSEARCH poles FROMLONLAT 0 0 BYBOX 40000 40000 km
    COMMAND GETKEYS GEORADIUS k 1 1 1 km STORE a STOREDIST b
"#;

#[test]
fn geo() {
    run(GEO);
}

#[test]
fn geo_resp3() {
    run_resp3(GEO);
}

/// Many points around one spot: unsorted searches must list them in Redis' box order.
#[test]
fn unsorted_search_order() {
    let mut script = String::new();
    for i in 0..200 {
        let lon = -0.2 + (i % 20) as f64 * 0.021;
        let lat = 51.3 + (i / 20) as f64 * 0.023;
        script.push_str(&format!("GEOADD pts {lon:.5} {lat:.5} p{i}\n"));
    }
    for r in ["1", "5", "12", "40"] {
        script.push_str(&format!("GEORADIUS pts -0.1 51.4 {r} km\n"));
        script.push_str(&format!(
            "GEOSEARCH pts FROMLONLAT 0 51.45 BYBOX {r} {r} km\n"
        ));
    }
    run(&script);
}
