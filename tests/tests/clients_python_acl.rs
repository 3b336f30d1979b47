//! redis-py with an ACL username and password (tests/clients/python/acl_users.py), over
//! RESP2 (AUTH user pass) and RESP3 (HELLO 3 AUTH user pass).

use std::process::Command;
use std::time::Duration;

use tumbler_tests::clients::{self, require, run_scenario, servers};

fn scenario(name: &str) {
    let Some(python) = require(
        clients::clients_dir().join("venv/bin/python"),
        "python venv",
    ) else {
        return;
    };
    let servers = servers(1);
    let mut cmd = Command::new(python);
    cmd.arg(clients::programs_dir().join("python/acl_users.py"))
        .arg(name)
        .arg(servers[0].port().to_string());
    run_scenario(cmd, name, Duration::from_secs(60));
}

#[test]
fn redis_py_acl_user_resp2() {
    scenario("acl_users_resp2");
}

#[test]
fn redis_py_acl_user_resp3() {
    scenario("acl_users_resp3");
}
