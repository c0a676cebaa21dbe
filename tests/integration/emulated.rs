//! The ARM builds under emulation (issue 27, the seeds' devices): the
//! release binary that `scripts/cross.sh aarch64|armv7` built, run under
//! qemu-user for a tiny in-process handshake on every backend (TLS 1.3, and
//! DTLS 1.3 for dimpl); its table has a measured row per backend and its
//! host line says the run was emulated. Then the seeds' topology: the ARM
//! binary serving handshakes in one network namespace, the native binary
//! measuring from another. Skips visibly unless a cross binary and its qemu
//! exist; with CI set (.ci/run builds aarch64 first) they must.

use std::path::PathBuf;
use std::process::Command;

use crate::util;

/// One ARM target: where scripts/cross.sh leaves its binary, and the qemu
/// that runs it with the cross toolchain's libraries.
struct ArmTarget {
    triple: &'static str,
    /// `std::env::consts::ARCH` of the binary, as its host line names it.
    arch: &'static str,
    qemu: &'static str,
    sysroot: &'static str,
}

const TARGETS: [ArmTarget; 2] = [
    ArmTarget {
        triple: "aarch64-unknown-linux-gnu",
        arch: "aarch64",
        qemu: "qemu-aarch64",
        sysroot: "/usr/aarch64-linux-gnu",
    },
    ArmTarget {
        triple: "armv7-unknown-linux-gnueabihf",
        arch: "arm",
        qemu: "qemu-arm",
        sysroot: "/usr/arm-linux-gnueabihf",
    },
];

impl ArmTarget {
    /// scripts/cross.sh's binary: under `TLSLAB_CROSS_TARGET_DIR` if set,
    /// else its default target/cross.
    fn binary(&self) -> PathBuf {
        std::env::var_os("TLSLAB_CROSS_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/cross"))
            .join(self.triple)
            .join("release/tlslab")
    }

    fn qemu_found(&self) -> bool {
        Command::new(self.qemu)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }
}

#[test]
fn the_arm_binary_handshakes_on_every_backend_under_qemu() {
    const TEST: &str = "emulated::the_arm_binary_handshakes_on_every_backend_under_qemu";
    let built: Vec<&ArmTarget> = TARGETS.iter().filter(|t| t.binary().exists()).collect();
    // .ci/run builds the aarch64 binary before its CI=true pass (armv7 is
    // tested when a developer built it too).
    let no_build = built
        .is_empty()
        .then(|| "no ARM build under target/cross".to_string());
    if util::skip_without(no_build, TEST, "scripts/cross.sh --install aarch64") {
        return;
    }
    let missing_qemu = built
        .iter()
        .find(|t| !t.qemu_found())
        .map(|t| format!("{} is not installed", t.qemu));
    if util::skip_without(missing_qemu, TEST, "apt-get install qemu-user") {
        return;
    }
    let certs = tempfile::tempdir().unwrap();
    for target in built {
        let binary = target.binary();
        let args = [
            "handshake",
            "--tls",
            "1.3,dtls1.3",
            "--group",
            "x25519",
            "--cert",
            "ecdsa_p256",
            "--runs",
            "3",
            "--warmup",
            "0",
            "--no-db",
            "--quiet",
            "--cert-dir",
        ];
        let output = Command::new(target.qemu)
            .arg("-L")
            .arg(target.sysroot)
            .arg(&binary)
            .args(args)
            .arg(certs.path().join(target.arch))
            .env_remove("COLUMNS")
            .output()
            .expect("qemu runs");
        let run = util::Run {
            output,
            command: format!("{} -L {} {}", target.qemu, target.sysroot, binary.display()),
        };
        run.expect_code(0);
        let stdout = run.stdout();
        for (backend, protocol) in [
            ("openssl", "TLS 1.3"),
            ("rustls-aws-lc", "TLS 1.3"),
            ("rustls-ring", "TLS 1.3"),
            ("dimpl", "DTLS 1.3"),
        ] {
            let measured = stdout.lines().any(|line| {
                util::has_row(line, &[backend, protocol, "X25519", "ECDSA P-256"])
                    && !line.contains("unsupported")
            });
            assert!(
                measured,
                "{}: no measured {backend} {protocol} row\n{stdout}",
                target.triple
            );
        }
        if std::env::consts::ARCH == "x86_64" {
            let note = format!("emulated: {} binary on x86_64", target.arch);
            assert!(
                stdout.contains(&note),
                "{}: the host line should say `{note}`\n{stdout}",
                target.triple
            );
        }
    }
}

/// The seeds' topology under emulation: the aarch64 binary as the server
/// (`serve --handshakes` under qemu-user in one network namespace, as on
/// the board) and the native binary as the measuring client (`handshake
/// --remote` from the other, as on the PC). Every row has both sides' CPU,
/// and the note on the server names its host as emulated.
#[test]
fn an_emulated_arm_server_answers_the_native_client_across_namespaces() {
    const TEST: &str =
        "emulated::an_emulated_arm_server_answers_the_native_client_across_namespaces";
    let target = &TARGETS[0];
    let missing = if !target.binary().exists() {
        Some(format!("no {} build under target/cross", target.triple))
    } else if !target.qemu_found() {
        Some(format!("{} is not installed", target.qemu))
    } else {
        None
    };
    if util::skip_without(
        missing,
        TEST,
        "scripts/cross.sh --install aarch64; apt-get install qemu-user",
    ) {
        return;
    }
    let Some(link) = crate::link::link("rtt=2ms", TEST) else {
        return;
    };
    let address = format!("{}:8445", tlslab::transport::link::SERVER_ADDRESS);
    let mut qemu = Command::new(target.qemu);
    qemu.arg("-L").arg(target.sysroot).arg(target.binary());
    let server = crate::link::ServingHandshakes::start(qemu, &link, &address);

    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("remote.json");
    let mut client = Command::new(env!("CARGO_BIN_EXE_tlslab"));
    client
        .args([
            "handshake",
            "--remote",
            &address,
            "--backend",
            "openssl,dimpl",
        ])
        .args(["--tls", "1.3,dtls1.2", "--group", "x25519", "--cert"])
        .args([
            "ecdsa_p256",
            "--runs",
            "3",
            "--warmup",
            "0",
            "--no-db",
            "-q",
        ])
        .arg("--export-json")
        .arg(&json)
        .arg("--cert-dir")
        .arg(util::cert_dir())
        .env_remove("COLUMNS");
    crate::link::inside(&mut client, link.client());
    let output = client.output().unwrap();
    server.stop();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The table, for `--nocapture` (docs/devices.md shows one).
    eprintln!("{stdout}");
    let note = format!("emulated: {} binary on x86_64", target.arch);
    if std::env::consts::ARCH == "x86_64" {
        assert!(
            stdout.contains("Server elsewhere") && stdout.contains(&note),
            "the note on the server should say `{note}`\n{stdout}"
        );
    }
    crate::link::remote_rows_with_both_sides(&json, &stdout);
}
