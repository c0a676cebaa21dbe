//! A handshake matrix from the command line: the default matrix or a
//! preset's, with every axis option given replacing its axis (for
//! `handshake`, `handshake --capacity` and `cost`).

use anyhow::Result;

use super::session::usage;
use crate::cli::{AxisArgs, HandshakeArgs, MutualArg};
use crate::scenario::presets::Preset;
use crate::scenario::{
    distinct, Aead, CertKind, Group, HandshakeMatrix, Resumption, TlsVersion, DEFAULT_CHAIN_DEPTH,
    DEFAULT_MTU_BYTES,
};

/// The matrix without a preset or axis options.
pub(crate) fn default_matrix() -> HandshakeMatrix {
    HandshakeMatrix {
        versions: vec![TlsVersion::Tls13],
        groups: vec![Group::X25519],
        certs: vec![CertKind::Rsa2048, CertKind::EcdsaP256],
        aeads: vec![Aead::Aes128Gcm],
        resumptions: vec![Resumption::Off],
        mutual: vec![false],
        chain_depth: DEFAULT_CHAIN_DEPTH,
        mtu_bytes: DEFAULT_MTU_BYTES,
        transports: vec![crate::scenario::Transport::Memory],
    }
}

impl AxisArgs {
    /// The matrix with every axis given on the command line replaced.
    pub(crate) fn apply(&self, mut matrix: HandshakeMatrix) -> HandshakeMatrix {
        if let Some(list) = &self.tls {
            matrix.versions = distinct(list);
        }
        if let Some(list) = &self.group {
            matrix.groups = distinct(list);
        }
        if let Some(list) = &self.cert {
            matrix.certs = distinct(list);
        }
        if let Some(list) = &self.suite {
            matrix.aeads = distinct(list);
        }
        if let Some(list) = &self.resumption {
            matrix.resumptions = distinct(list);
        }
        if let Some(depth) = self.chain_depth {
            matrix.chain_depth = depth;
        }
        if let Some(mtu_bytes) = self.mtu {
            matrix.mtu_bytes = mtu_bytes;
        }
        matrix
    }
}

/// Builds the matrix from a preset and the axis options that override it.
pub(crate) fn matrix_from(args: &HandshakeArgs, preset: Option<Preset>) -> Result<HandshakeMatrix> {
    overridden(
        args,
        preset.map(Preset::matrix).unwrap_or_else(default_matrix),
    )
}

/// A matrix with every axis option given replaced.
pub(crate) fn overridden(args: &HandshakeArgs, matrix: HandshakeMatrix) -> Result<HandshakeMatrix> {
    let mut matrix = args.axes.apply(matrix);
    if let Some(list) = &args.transport {
        matrix.transports = distinct(list);
    }
    if let Some(mutual) = args.mutual {
        matrix.mutual = match mutual {
            MutualArg::Off => vec![false],
            MutualArg::On => vec![true],
            MutualArg::Both => vec![false, true],
        };
    }
    matrix.validate().map_err(usage)?;
    Ok(matrix)
}
