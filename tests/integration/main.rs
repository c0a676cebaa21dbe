//! The one integration test binary: real handshakes against every backend,
//! the pipeline on the mock backend, the store, and the command line.

mod backends;
mod bulk;
mod capacity;
mod cli;
mod compare;
mod cost;
mod counted;
mod docs;
mod dtls;
mod emulated;
mod link;
mod load;
mod load_shards;
mod manual;
mod merge;
mod nginx;
mod options;
mod pipeline;
mod plots;
mod processes;
mod quic;
mod ratios;
mod recommend;
mod serve;
mod servers;
mod slurm;
mod store;
mod tables;
mod target;
mod transports;
mod tunnel;
mod tunnel_generic;
mod tunnel_setup;
mod util;
mod wire;
