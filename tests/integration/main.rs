//! The one integration test binary: real handshakes against every backend,
//! the pipeline on the mock backend, the store, and the command line.

mod backends;
mod bulk;
mod cli;
mod cost;
mod pipeline;
mod tunnel;
mod util;
