//! `tlslab cost`: what a handshake should cost each side from counted
//! operations times measured primitive costs, beside what it does cost, and
//! where the time goes.

pub mod instrument;
