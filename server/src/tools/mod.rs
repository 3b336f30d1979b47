//! The tools in the binary: `tumbler bench` and `tumbler top`.

pub mod bench;
pub mod top;
