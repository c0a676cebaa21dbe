//! One generated test per (shared test, backend | server | engine), in the
//! manner of rustls' `test_for_each_provider!`: a shared test is written
//! once, as a function of what it runs on, and [`for_each_backend!`],
//! [`for_each_server!`] and [`for_each_engine!`] make of it a module of
//! `#[test]`s named after each backend, server or engine
//! (`backends::mutual_tls::rustls_ring`, `servers::…::caddy`,
//! `tunnel::…::wireguard_go`). So each shows up by name in `cargo test`
//! (and `-- --list`), fails alone, and the others still run; a backend the
//! build lacks (wolfssl without its feature) has no test at all rather than
//! one that passes having run nothing.
//!
//! `TLSLAB_TEST_BACKENDS` (comma-separated ids or aliases) narrows the
//! backend tests: an unknown name fails every one of them listing the
//! valid names, and a backend not named prints a `skipped:` line (a choice
//! made on purpose, so it does not fail under `CI`). A server or engine
//! that cannot run here (its program missing, not root) prints a
//! `skipped:` line and fails under `CI` (see `util::skip_without`).
//!
//! The lists of names below are checked against the vocabulary
//! (`Named::ALL`) by [`every_backend_server_and_engine_has_its_generated_tests`],
//! which lists this binary's tests: a new backend, server or engine is
//! added here, or that test fails.

use tlslab::backend::{Backend, BackendId};
use tlslab::scenario::names::Named;
use tlslab::scenario::tunnel::EngineId;
use tlslab::scenario::ServerKind;
use tlslab::workload::server::ServerDescriptor;
use tlslab::workload::tunnel::TunnelEngine;

use crate::util;

/// Generates, for each `fn NAME(backend: &dyn Backend) { .. }` given, a
/// module `NAME` holding one `#[test]` per backend (`NAME::openssl`,
/// `NAME::rustls_aws_lc`, ...) that runs the body on that backend. With
/// `mock;` first, the mock backend gets its test too (for the tests that
/// hold every registered backend, the never-listed mock included).
macro_rules! for_each_backend {
    (@one $case:ident, $name:ident, $id:ident) => {
        #[test]
        fn $name() {
            $crate::each::on_backend(module_path!(), tlslab::backend::BackendId::$id, $case)
        }
    };
    (@listed $case:ident) => {
        $crate::each::for_each_backend!(@one $case, openssl, Openssl);
        $crate::each::for_each_backend!(@one $case, rustls_aws_lc, RustlsAwsLc);
        $crate::each::for_each_backend!(@one $case, rustls_ring, RustlsRing);
        $crate::each::for_each_backend!(@one $case, dimpl, Dimpl);
        // Only in a build that has wolfSSL (the cargo feature `wolfssl`).
        #[cfg(feature = "wolfssl")]
        $crate::each::for_each_backend!(@one $case, wolfssl, Wolfssl);
    };
    (@module [$($also:ident $id:ident)?]
        $(#[$attr:meta])* $test:ident, $backend:ident, $body:block
    ) => {
        $(#[$attr])*
        mod $test {
            #[allow(unused_imports)]
            use super::*;

            fn case($backend: &dyn tlslab::backend::Backend) $body

            $crate::each::for_each_backend!(@listed case);
            $($crate::each::for_each_backend!(@one case, $also, $id);)?
        }
    };
    (mock; $($(#[$attr:meta])* fn $test:ident($backend:ident: &dyn Backend) $body:block)*) => {
        $(
            $crate::each::for_each_backend!(
                @module [mock Mock] $(#[$attr])* $test, $backend, $body
            );
        )*
    };
    ($($(#[$attr:meta])* fn $test:ident($backend:ident: &dyn Backend) $body:block)*) => {
        $($crate::each::for_each_backend!(@module [] $(#[$attr])* $test, $backend, $body);)*
    };
}
pub(crate) use for_each_backend;

/// Generates, for each `fn NAME(server: &'static ServerDescriptor) { .. }`
/// given, a module `NAME` with one `#[test]` per registered server
/// (`NAME::nginx`, `NAME::apache`, ...); a server whose program is missing
/// prints a `skipped:` line (and fails under `CI`). With `programs;` first,
/// the embedded server (in tlslab's process) has no test (for the tests of
/// a program tlslab starts).
macro_rules! for_each_server {
    (@one $case:ident, $name:ident, $kind:ident) => {
        #[test]
        fn $name() {
            $crate::each::on_server(module_path!(), tlslab::scenario::ServerKind::$kind, $case)
        }
    };
    (@module [$($also:ident $kind:ident)?]
        $(#[$attr:meta])* $test:ident, $server:ident, $body:block
    ) => {
        $(#[$attr])*
        mod $test {
            #[allow(unused_imports)]
            use super::*;

            fn case($server: &'static tlslab::workload::server::ServerDescriptor) $body

            $crate::each::for_each_server!(@one case, nginx, Nginx);
            $crate::each::for_each_server!(@one case, apache, Apache);
            $crate::each::for_each_server!(@one case, haproxy, Haproxy);
            $crate::each::for_each_server!(@one case, caddy, Caddy);
            $($crate::each::for_each_server!(@one case, $also, $kind);)?
        }
    };
    (programs;
        $($(#[$attr:meta])*
        fn $test:ident($server:ident: &'static ServerDescriptor) $body:block)*
    ) => {
        $($crate::each::for_each_server!(@module [] $(#[$attr])* $test, $server, $body);)*
    };
    (
        $($(#[$attr:meta])*
        fn $test:ident($server:ident: &'static ServerDescriptor) $body:block)*
    ) => {
        $(
            $crate::each::for_each_server!(
                @module [embedded Embedded] $(#[$attr])* $test, $server, $body
            );
        )*
    };
}
pub(crate) use for_each_server;

/// Generates, for each `fn NAME(engine: &'static dyn TunnelEngine) { .. }`
/// given, a module `NAME` with one `#[test]` per registered tunnel engine
/// (`NAME::inprocess`, `NAME::openvpn`, ...); an engine that cannot run
/// here (not root, a missing program) prints a `skipped:` line (and fails
/// under `CI`). With `real;` first, the in-process engine has no test (for
/// the tests of an engine beside it).
macro_rules! for_each_engine {
    (@one $case:ident, $name:ident, $id:ident) => {
        #[test]
        fn $name() {
            let id = tlslab::scenario::tunnel::EngineId::$id;
            $crate::each::on_engine(module_path!(), id, $case)
        }
    };
    (@module [$($also:ident $id:ident)?]
        $(#[$attr:meta])* $test:ident, $engine:ident, $body:block
    ) => {
        $(#[$attr])*
        mod $test {
            #[allow(unused_imports)]
            use super::*;

            fn case($engine: &'static dyn tlslab::workload::tunnel::TunnelEngine) $body

            $($crate::each::for_each_engine!(@one case, $also, $id);)?
            $crate::each::for_each_engine!(@one case, openvpn, Openvpn);
            $crate::each::for_each_engine!(@one case, openvpn_tls, OpenvpnTls);
            $crate::each::for_each_engine!(@one case, wireguard, Wireguard);
            $crate::each::for_each_engine!(@one case, wireguard_go, WireguardGo);
        }
    };
    (real;
        $($(#[$attr:meta])*
        fn $test:ident($engine:ident: &'static dyn TunnelEngine) $body:block)*
    ) => {
        $($crate::each::for_each_engine!(@module [] $(#[$attr])* $test, $engine, $body);)*
    };
    (
        $($(#[$attr:meta])*
        fn $test:ident($engine:ident: &'static dyn TunnelEngine) $body:block)*
    ) => {
        $(
            $crate::each::for_each_engine!(
                @module [inprocess Inprocess] $(#[$attr])* $test, $engine, $body
            );
        )*
    };
}
pub(crate) use for_each_engine;

/// The test's name as `cargo test` shows it, from the module path of its
/// generated module and the name it runs on.
fn test_name(module: &str, on: &str) -> String {
    let module = module.split_once("::").map_or(module, |(_, rest)| rest);
    format!("{module}::{}", on.replace('-', "_"))
}

std::thread_local! {
    /// The name of the generated test running on this thread.
    static CURRENT_TEST: std::cell::RefCell<String> =
        const { std::cell::RefCell::new(String::new()) };
}

/// The name of the generated test running on this thread
/// (`backends::mutual_tls::dimpl`), for the skip lines a shared test prints.
pub fn current_test() -> String {
    CURRENT_TEST.with(|name| name.borrow().clone())
}

/// Remembers `name` as the test running on this thread, and returns it.
fn running(name: String) -> String {
    CURRENT_TEST.with(|current| current.replace(name.clone()));
    name
}

/// Runs `case` on backend `id`, unless `TLSLAB_TEST_BACKENDS` leaves it
/// out (then a `skipped:` line says so); an unknown name there fails.
pub fn on_backend(module: &str, id: BackendId, case: fn(&dyn Backend)) {
    let test = running(test_name(module, id.id()));
    if !util::backend_under_test(id.id()) {
        util::note_skipped(
            &test,
            &format!("{} is not in TLSLAB_TEST_BACKENDS", id.id()),
        );
        return;
    }
    let backend = id.open();
    case(backend.as_ref());
}

/// Runs `case` on the registered server of `kind`, or skips visibly when
/// its program is missing (failing under `CI`).
pub fn on_server(module: &str, kind: ServerKind, case: fn(&'static ServerDescriptor)) {
    let descriptor = tlslab::workload::server::descriptor(kind);
    let test = running(test_name(module, kind.id()));
    if util::skip_without((descriptor.missing)(), &test, descriptor.install) {
        return;
    }
    case(descriptor);
}

/// Runs `case` on engine `id`, or skips visibly when it cannot run here
/// (failing under `CI`).
pub fn on_engine(module: &str, id: EngineId, case: fn(&'static dyn TunnelEngine)) {
    let test = running(test_name(module, id.id()));
    let engine = id.open();
    if util::skip_without(
        engine.preflight().err(),
        &test,
        "what the reason names, as root",
    ) {
        return;
    }
    case(engine);
}

/// The names of this binary's tests under `module` (`backends::mutual_tls`),
/// as `cargo test -- --list` shows them.
fn listed_tests(module: &str) -> Vec<String> {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--list", "--format", "terse", module])
        .output()
        .expect("the test binary lists its tests");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.strip_suffix(": test"))
        .map(str::to_string)
        .collect()
}

/// The generated tests of `module` are one per name in `names`, no more.
fn assert_one_test_each<'a>(module: &str, names: impl IntoIterator<Item = &'a str>) {
    let mut expected: Vec<String> = names
        .into_iter()
        .map(|name| format!("{module}::{}", name.replace('-', "_")))
        .collect();
    expected.sort();
    let mut listed = listed_tests(&format!("{module}::"));
    listed.sort();
    assert_eq!(listed, expected, "the generated tests of {module}");
}

/// Every backend this build has (and the mock, where a suite holds it),
/// every server and every engine of the vocabulary has its generated test
/// in the shared suites, so one added to `Named::ALL` and not to the macros
/// above is caught here.
#[test]
fn every_backend_server_and_engine_has_its_generated_tests() {
    let built = || {
        BackendId::ALL
            .iter()
            .filter(|id| **id != BackendId::Wolfssl || cfg!(feature = "wolfssl"))
            .filter(|id| **id != BackendId::Mock)
            .map(|id| id.id())
    };
    assert_one_test_each("backends::mutual_tls", built());
    assert_one_test_each(
        "backends::every_descriptor_agrees_with_its_backend",
        built().chain(["mock"]),
    );
    assert_one_test_each(
        "servers::every_server_serves_a_verified_handshake_through_its_trait_and_stops",
        ServerKind::ALL.iter().map(|kind| kind.id()),
    );
    assert_one_test_each(
        "servers::serve::serve_server_answers_a_request_and_stops_on_sigterm_with_nothing_left",
        ServerKind::ALL
            .iter()
            .filter(|kind| **kind != ServerKind::Embedded)
            .map(|kind| kind.id()),
    );
    assert_one_test_each(
        "tunnel::ctrl_c_keeps_the_samples_every_engine_took",
        EngineId::ALL.iter().map(|id| id.id()),
    );
    assert_one_test_each(
        "tunnel::every_engine_measures_beside_the_in_process_rows",
        EngineId::ALL
            .iter()
            .filter(|id| **id != EngineId::Inprocess)
            .map(|id| id.id()),
    );
}
