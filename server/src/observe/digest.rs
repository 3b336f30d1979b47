//! DEBUG DIGEST and DEBUG DIGEST-VALUE, computed as Redis computes them, so
//! test suites that compare digests before and after an operation work unchanged.
//!
//! The digest (Redis' `computeDatasetDigest`) is order-independent where the data is
//! unordered: per key, SHA1 mixes of the key, the type and the value's parts (ordered for
//! lists and streams, XORed for set members, hash fields and sorted-set members), plus
//! `!!expire!!` for a key with a TTL; the keys' digests are XORed per database, each
//! database mixed in by its number. Tumbler's lock types, which Redis does not have, mix in
//! their type name and their DUMP-less debug form.
//! (DEBUG RELOAD writes and reads the RDB file: server/src/commands/rdb.rs.)

use lockcore::storage::value::{Entry, Value};
use lockcore::Engine;
use sha1::{Digest, Sha1};

type D = [u8; 20];

fn xor_digest(d: &mut D, data: &[u8]) {
    let h = Sha1::digest(data);
    for (a, b) in d.iter_mut().zip(h.iter()) {
        *a ^= b;
    }
}

fn mix_digest(d: &mut D, data: &[u8]) {
    xor_digest(d, data);
    let h = Sha1::digest(&d[..]);
    d.copy_from_slice(&h);
}

/// Redis' `xorObjectDigest`: the value's type and contents, and its TTL's presence.
fn xor_object(d: &mut D, e: &Entry, fmt: lockcore::num::DoubleFmt) {
    let ty: u32 = match &e.value {
        Value::Str(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
        Value::Stream(_) => 6,
        Value::Lock(_) => 100,
        Value::VSet(_) => 5,
    };
    mix_digest(d, &ty.to_be_bytes());
    match &e.value {
        Value::Str(s) => mix_digest(d, s),
        Value::List(l) => l.iter().for_each(|x| mix_digest(d, x)),
        Value::Set(s) => s.ordered().iter().for_each(|m| xor_digest(d, m)),
        Value::ZSet(z) => {
            for (m, score) in z.range(0, z.len()) {
                let mut ed = [0u8; 20];
                mix_digest(&mut ed, &m);
                mix_digest(&mut ed, fmt.digest(score).as_bytes());
                xor_digest(d, &ed);
            }
        }
        Value::Hash(h) => {
            for (f, v, t) in h.iter_ttl() {
                let mut ed = [0u8; 20];
                mix_digest(&mut ed, f);
                mix_digest(&mut ed, v);
                if t != lockcore::storage::value::NO_TTL {
                    xor_digest(&mut ed, b"!!hexpire!!");
                }
                xor_digest(d, &ed);
            }
        }
        Value::Stream(s) => {
            for (&(ms, seq), fields) in &s.entries {
                mix_digest(d, format!("{ms}.{seq}").as_bytes());
                fields.iter().for_each(|x| mix_digest(d, x));
            }
        }
        Value::Lock(l) => mix_digest(d, format!("{l:?}").as_bytes()),
        // Order-independent: each element's name, stored vector, norm and attribute.
        Value::VSet(v) => {
            for (name, n) in &v.elems {
                let mut ed = [0u8; 20];
                mix_digest(&mut ed, name);
                mix_digest(&mut ed, &n.raw_bytes());
                mix_digest(&mut ed, &n.l2.to_le_bytes());
                mix_digest(&mut ed, n.attr.as_deref().unwrap_or(b""));
                xor_digest(d, &ed);
            }
        }
    }
    if e.expire_at().is_some() {
        xor_digest(d, b"!!expire!!");
    }
}

/// DEBUG DIGEST: the whole dataset's digest as 40 hex digits (all zeros when empty).
pub fn dataset(engine: &Engine) -> String {
    let mut fin = [0u8; 20];
    for (j, db) in engine.dbs.iter().enumerate() {
        if db.is_empty() {
            continue;
        }
        mix_digest(&mut fin, &(j as u32).to_be_bytes());
        for (k, e) in db.iter() {
            let mut d = [0u8; 20];
            mix_digest(&mut d, k);
            xor_object(&mut d, e, engine.config.personality.doubles());
            xor_digest(&mut fin, &d);
        }
    }
    hex(&fin)
}

/// DEBUG DIGEST-VALUE: one key's value digest (all zeros for a missing key), scores
/// printed as `fmt` says.
pub fn value(e: Option<&Entry>, fmt: lockcore::num::DoubleFmt) -> String {
    let mut d = [0u8; 20];
    if let Some(e) = e {
        xor_object(&mut d, e, fmt);
    }
    hex(&d)
}

fn hex(d: &D) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}
