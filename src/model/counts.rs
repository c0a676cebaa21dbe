//! The cost model: which operations each side of a handshake performs, and
//! what they cost given measured primitive rates.
//!
//! Full-handshake counts follow from the protocol. TLS 1.3 (RFC 8446 §7.1):
//! three HKDF-Extract (early, handshake and master secret), eighteen
//! HKDF-Expand (eight Derive-Secret: derived, client/server handshake
//! traffic, derived, client/server application traffic, exporter; a key and
//! an IV for each of the four traffic secrets; the two Finished keys) and two
//! HMACs (one Finished sent, one checked). TLS 1.2 (RFC 5246): four PRF
//! calls (master secret, key block, two Finished). The client checks the
//! server's handshake signature and one signature per chain element below
//! the trust anchor.
use crate::scenario::operations::CountedOp;
use crate::scenario::speed::{Operation, Primitive, SpeedRow};
use crate::scenario::Named;
use crate::scenario::Side;
use crate::scenario::{Group, HandshakeScenario, Resumption, TlsVersion};

/// How many times a side performs each counted operation in one handshake.
pub fn operation_counts(scenario: &HandshakeScenario, side: Side) -> Vec<(CountedOp, u64)> {
    let mut ops = Vec::new();
    let full = scenario.resumption == Resumption::Off;
    let rsa_transport = scenario.group == Group::RsaKeyTransport;
    let tls13 = scenario.version == TlsVersion::Tls13;
    // Key exchange: every full handshake; TLS 1.3 PSK resumption also runs
    // (EC)DHE (psk_dhe_ke); TLS 1.2 resumption runs none.
    if rsa_transport && full {
        ops.push((CountedOp::RsaKeyTransport, 1));
    } else if full || tls13 {
        ops.push((CountedOp::KxExchange, 1));
    }
    if full {
        let chain = u64::from(scenario.chain_depth.saturating_sub(1));
        let (signer, verifier) = if scenario.mutual {
            (true, true)
        } else {
            (side == Side::Server, side == Side::Client)
        };
        // With RSA key transport the server proves its key by decrypting: no signature.
        if signer && !rsa_transport {
            ops.push((CountedOp::Sign, 1));
        }
        if verifier {
            ops.push((CountedOp::VerifyChainSignature, chain));
            if !rsa_transport {
                ops.push((CountedOp::VerifyHandshakeSignature, 1));
            }
        }
    }
    match (tls13, full, side) {
        (true, true, _) => ops.extend([
            (CountedOp::HkdfExtract, 3),
            (CountedOp::HkdfExpand, 18),
            (CountedOp::Hmac, 2),
        ]),
        // PSK resumption adds the binder key, the binder's Finished key and
        // HMAC, and the secrets behind the next ticket, as rustls derives them.
        (true, false, Side::Client) => ops.extend([
            (CountedOp::HkdfExtract, 3),
            (CountedOp::HkdfExpand, 21),
            (CountedOp::Hmac, 3),
        ]),
        (true, false, Side::Server) => ops.extend([
            (CountedOp::HkdfExtract, 4),
            (CountedOp::HkdfExpand, 24),
            (CountedOp::Hmac, 3),
        ]),
        (false, true, _) => ops.push((CountedOp::Prf, 4)),
        (false, false, _) => ops.push((CountedOp::Prf, 3)),
    }
    ops.retain(|(_, count)| *count > 0);
    ops
}

/// The primitive row whose measured cost one counted operation is charged at.
/// HKDF steps and the PRF are charged as HMACs over short inputs (an
/// Extract or a one-block Expand is one HMAC; a TLS 1.2 PRF call averages
/// three).
pub fn cost_row(
    scenario: &HandshakeScenario,
    side: Side,
    op: CountedOp,
) -> Option<(SpeedRow, f64)> {
    let signature = Primitive::ALL
        .iter()
        .copied()
        .find(|p| p.cert_kind() == Some(scenario.cert));
    let group = Primitive::ALL
        .iter()
        .copied()
        .find(|p| p.group().map(equivalent_group) == Some(equivalent_group(scenario.group)));
    let hmac = if matches!(scenario.aead, crate::scenario::Aead::Aes256Gcm) {
        Primitive::HmacSha384
    } else {
        Primitive::HmacSha256
    };
    let row = |primitive: Primitive, operation: Operation, size: Option<usize>| SpeedRow {
        primitive,
        operation,
        size_bytes: size,
    };
    Some(match op {
        CountedOp::KxExchange => {
            let operation = match side {
                Side::Client => Operation::ClientExchange,
                Side::Server => Operation::ServerExchange,
            };
            (row(group?, operation, None), 1.0)
        }
        CountedOp::RsaKeyTransport => {
            // The client's public-key encryption costs about a verification,
            // the server's decryption about a signature.
            let operation = match side {
                Side::Client => Operation::Verify,
                Side::Server => Operation::Sign,
            };
            (row(signature?, operation, None), 1.0)
        }
        CountedOp::Sign => (row(signature?, Operation::Sign, None), 1.0),
        CountedOp::VerifyChainSignature | CountedOp::VerifyHandshakeSignature => {
            (row(signature?, Operation::Verify, None), 1.0)
        }
        CountedOp::HkdfExtract | CountedOp::HkdfExpand | CountedOp::Hmac => {
            (row(hmac, Operation::Mac, Some(HMAC_INPUT_BYTES)), 1.0)
        }
        CountedOp::Prf => (row(hmac, Operation::Mac, Some(HMAC_INPUT_BYTES)), 3.0),
        _ => return None,
    })
}

/// The input size HKDF and PRF steps are charged at (label, context and hash).
pub const HMAC_INPUT_BYTES: usize = 64;

/// TLS 1.2 DHE groups are modelled with the same-size RFC 7919 group.
fn equivalent_group(group: Group) -> Group {
    match group {
        Group::Dhe2048 => Group::Ffdhe2048,
        Group::Dhe3072 => Group::Ffdhe3072,
        Group::Dhe4096 => Group::Ffdhe4096,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::CertKind;

    fn scenario(version: TlsVersion, group: Group, cert: CertKind) -> HandshakeScenario {
        HandshakeScenario::full(version, group, cert)
    }

    #[test]
    fn the_classic_model_counts() {
        // RSA key transport: no handshake signature; the client still
        // verifies the chain.
        let rsa = scenario(TlsVersion::Tls12, Group::RsaKeyTransport, CertKind::Rsa2048);
        assert_eq!(
            operation_counts(&rsa, Side::Server),
            vec![(CountedOp::RsaKeyTransport, 1), (CountedOp::Prf, 4)]
        );
        assert_eq!(
            operation_counts(&rsa, Side::Client),
            vec![
                (CountedOp::RsaKeyTransport, 1),
                (CountedOp::VerifyChainSignature, 2),
                (CountedOp::Prf, 4)
            ]
        );
        let ecdhe = scenario(TlsVersion::Tls12, Group::P256, CertKind::EcdsaP256);
        assert_eq!(
            operation_counts(&ecdhe, Side::Client),
            vec![
                (CountedOp::KxExchange, 1),
                (CountedOp::VerifyChainSignature, 2),
                (CountedOp::VerifyHandshakeSignature, 1),
                (CountedOp::Prf, 4)
            ]
        );
        let costed: Vec<_> = operation_counts(&ecdhe, Side::Server)
            .into_iter()
            .filter_map(|(op, _)| cost_row(&ecdhe, Side::Server, op))
            .map(|(row, _)| row.label())
            .collect();
        assert_eq!(
            costed,
            vec![
                "speed_ecdh_p256_server_exchange",
                "speed_ecdsa_p256_sign",
                "speed_hmac_sha256_mac_64"
            ]
        );
    }
}
