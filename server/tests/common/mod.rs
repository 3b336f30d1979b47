//! What the binary tests share. Each test file compiles this module on its own and uses
//! part of it.
#![allow(dead_code)]

use std::io::BufRead;

/// The next line of Tumbler's own on stdout (`tumbler listening on ... port=P`, `tumbler
/// metrics on ...`), past the Redis-format log lines that come before and between them.
/// Empty at end of output.
pub fn tumbler_line(out: &mut impl BufRead) -> String {
    loop {
        let mut line = String::new();
        match out.read_line(&mut line) {
            Ok(0) | Err(_) => return String::new(),
            Ok(_) if line.starts_with("tumbler ") => return line,
            Ok(_) => continue,
        }
    }
}

/// A free loopback port (bound, then released), for a server that is given a fixed port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
