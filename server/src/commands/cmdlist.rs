//! COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern], as Redis 7.0:
//! every command and every subcommand (`client|list`), from the command table.
//! A filter that matches nothing gives an empty array. The one module is Redis 8.0's
//! built-in `vectorset` (its commands, group "module", listed uppercase as Redis lists
//! them, without ACL categories). Any other argument shape is a syntax error.

use bytes::Bytes;
use lockcore::personality::Personality;
use lockcore::CommandSpec;
use lockcore::{error, Reply};

/// `all` is the visible top-level commands; `a` the whole argument vector (COMMAND LIST ...);
/// `p` leaves out the subcommands the personality does not have.
pub fn command_list(p: &Personality, all: &[&'static CommandSpec], a: &[Bytes]) -> Reply {
    let filter: Box<dyn Fn(&CommandSpec) -> bool> = match a.len() {
        2 => Box::new(|_| true),
        5 if a[2].eq_ignore_ascii_case(b"filterby") => {
            let arg = a[4].clone();
            let p = *p;
            if a[3].eq_ignore_ascii_case(b"module") {
                Box::new(move |c| c.group == "module" && arg.as_ref() == b"vectorset")
            } else if a[3].eq_ignore_ascii_case(b"aclcat") {
                Box::new(move |c| {
                    c.group != "module"
                        && c.acl_categories_in(&p)
                            .any(|cat| cat.as_bytes().eq_ignore_ascii_case(&arg))
                })
            } else if a[3].eq_ignore_ascii_case(b"pattern") {
                Box::new(move |c| lockcore::glob::matches(&arg, c.full_name().as_bytes(), true))
            } else {
                return error::syntax();
            }
        }
        _ => return error::syntax(),
    };
    let mut out = Vec::new();
    for c in all {
        for s in std::iter::once(*c).chain(c.subcommands.iter().filter(|s| p.has(s.avail))) {
            if filter(s) {
                out.push(Reply::bulk_str(&s.listed_name()));
            }
        }
    }
    Reply::Array(out)
}
