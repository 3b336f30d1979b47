//! What the sentinels read of and do to the data nodes: the replication topology's API
//! (server/src/repl/), in the terms a sentinel uses.

use std::sync::Arc;

use crate::state::cluster::Topology;

use crate::repl as api;

/// The node index of `node`'s primary, or None if it is a primary.
pub fn primary_of(topo: &Topology, node: usize) -> Option<usize> {
    match api::role(topo, node) {
        api::Role::Master => None,
        api::Role::Replica { of } => Some(of),
    }
}

pub fn offset(topo: &Topology, node: usize) -> u64 {
    api::offset(topo, node)
}

pub fn link_up(topo: &Topology, node: usize) -> bool {
    api::link_up(topo, node)
}

pub fn promote(topo: &Topology, node: usize) {
    api::promote(topo, node)
}

pub fn replicate(topo: &Arc<Topology>, node: usize, primary: usize) {
    api::replicate(topo, node, primary)
}

pub fn run_id(topo: &Topology, node: usize) -> String {
    api::run_id(topo, node)
}

pub fn priority(topo: &Topology, node: usize) -> i64 {
    api::priority(topo, node)
}

pub fn is_down(topo: &Topology, node: usize) -> bool {
    topo.nodes[node].is_down()
}

pub fn port(topo: &Topology, node: usize) -> u16 {
    topo.nodes[node].port()
}
