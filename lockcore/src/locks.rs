//! (Being built.)

use crate::commands::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
