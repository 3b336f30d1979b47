//! Listeners, transports (TCP, TLS, Unix) and the event loop that drives connections.

pub mod evloop;
pub mod net;
pub mod stream;
