//! The handshake table a person reads: the scenario's axes as short
//! columns, then per measure (time, instructions, heap bytes) its columns,
//! the quantum safety and the notes, with what the columns mean under it.

use super::{CountedFigures, MemoryFigures, Row};
use crate::report::markup::format_us;
use crate::report::{axis_headers, Axis, Column, Columns, Table};
use crate::scenario::{HandshakeScenario, KxKind, Named, SignatureFamily, Subject};
use crate::stats::{PairedRatio, Summary};

/// Which parts of the handshake resist a quantum computer.
fn quantum_safe(scenario: &HandshakeScenario) -> &'static str {
    match (
        scenario.group.kind() == KxKind::Kem,
        scenario.cert.family() == SignatureFamily::MlDsa,
    ) {
        (true, true) => "kx + signature",
        (true, false) => "kx",
        (false, true) => "signature",
        (false, false) => "no",
    }
}

/// A row's notes: why it is not measured, what varies, what is weak.
fn notes(row: &Row) -> String {
    let mut notes: Vec<String> = Vec::new();
    if let Some(reason) = &row.reason {
        notes.push(format!("{}: {reason}", row.status));
    }
    for (measure, status, reason) in [
        (
            "instructions",
            row.instructions.as_ref().map(|f| f.status),
            row.instructions.as_ref().and_then(|f| f.reason.as_deref()),
        ),
        (
            "memory",
            row.memory.as_ref().map(|m| m.status),
            row.memory.as_ref().and_then(|m| m.reason.as_deref()),
        ),
    ] {
        // A counted-only row says its reason once, as the row's own.
        if let (Some(status), Some(reason)) = (status, reason) {
            if row.reason.as_deref() != Some(reason) {
                notes.push(format!("{measure} {status}: {reason}"));
            }
        }
    }
    if let Some(figures) = row.instructions.as_ref().filter(|f| !f.repeatable) {
        if let Some(spread) = figures.spread {
            notes.push(format!(
                "instructions vary: handshakes' counts spread {:.1}%",
                spread * 100.0
            ));
        }
    }
    if let Some(note) = &row.ratio_note {
        notes.push(note.clone());
    }
    if row.weak {
        notes.push("WEAK".to_string());
    }
    if row.status == crate::measure::CellStatus::Measured && !row.precise && row.sample_count > 0 {
        notes.push("precision not reached".to_string());
    }
    if let Some(wall) = row.wall_us {
        if wall.median_ci_coverage < 0.95 {
            notes.push(format!(
                "interval covers {:.1}% only (n = {})",
                wall.median_ci_coverage * 100.0,
                wall.count
            ));
        }
    }
    notes.extend(
        row.security_notes
            .iter()
            .filter(|n| !n.contains("quantum-safe"))
            .map(|n| n.to_string()),
    );
    notes.join("; ")
}

/// A ratio with its interval, when the interval holds.
pub(super) fn ratio_text(ratio: &PairedRatio) -> String {
    let spread = ratio.ci95.relative_half_width(ratio.value) * 100.0;
    if spread.is_finite() && ratio.coverage >= 0.95 {
        format!("{:.2} ±{spread:.1}%", ratio.value)
    } else {
        format!("{:.2}", ratio.value)
    }
}

/// The scenario's axes as short columns (so that a table fits a terminal
/// and a constant axis is said once), each with its cell.
pub(crate) const AXES: [Axis<HandshakeScenario>; 7] = [
    Axis {
        header: "protocol",
        cell: |s| s.version.display().to_string(),
    },
    Axis {
        header: "kx",
        cell: |s| s.group.display(),
    },
    Axis {
        header: "cert",
        cell: |s| s.cert.display().to_string(),
    },
    Axis {
        header: "suite",
        cell: |s| crate::scenario::Named::name(s.aead).to_string(),
    },
    Axis {
        header: "resume",
        cell: |s| crate::scenario::Named::id(s.resumption).to_string(),
    },
    Axis {
        header: "mTLS",
        cell: |s| if s.mutual { "yes" } else { "no" }.to_string(),
    },
    Axis {
        header: "chain",
        cell: |s| s.chain_depth.to_string(),
    },
];

/// The headers of [`AXES`].
pub(crate) const AXIS_HEADERS: [&str; 7] = axis_headers(&AXES);

/// The scenario's axes as short cells, one per [`AXES`].
pub(crate) fn axis_cells(scenario: &HandshakeScenario) -> Vec<String> {
    crate::report::axis_cells(&AXES, scenario)
}

/// The columns every table of handshake rows starts with: the backend,
/// the axes, and the transport when `with_transport` (some row ran over a
/// socket); `row` finds the handshake row in a line of the table.
pub(super) fn leading<'a, R: 'a>(with_transport: bool, row: fn(&R) -> &Row) -> Columns<'a, R> {
    let mut columns = Columns::new()
        .with(Column::axis("backend"), move |r: &R| {
            row(r).subject.to_string()
        })
        .with_axes(&AXES, move |r: &R| &row(r).scenario);
    if with_transport {
        columns.push(Column::axis("transport"), move |r: &R| {
            row(r).scenario.transport.display().to_string()
        });
    }
    columns
}

/// The cell of a figure that is not there.
fn dash() -> String {
    "—".to_string()
}

/// Millions, to three figures.
pub(super) fn millions(value: f64) -> String {
    format_us(value / 1e6)
}

/// Kibibytes, to three figures.
fn kibibytes(value: f64) -> String {
    format_us(value / 1024.0)
}

/// Which measures a table's rows carry.
#[derive(Debug, Clone, Copy)]
struct Measured {
    timed: bool,
    counted: bool,
    memory: bool,
}

impl Measured {
    fn of(rows: &[Row]) -> Self {
        let counted = rows.iter().any(|r| r.instructions.is_some());
        let memory = rows.iter().any(|r| r.memory.is_some());
        Self {
            timed: rows.iter().any(|r| r.sample_count > 0) || !(counted || memory),
            counted,
            memory,
        }
    }
}

/// The time columns: handshakes/s, each side's CPU, the wall time with
/// its interval, p99, n and the ratio.
fn time_columns<'a>(measured: Measured) -> Columns<'a, Row> {
    let median = |s: Option<Summary>| s.map(|s| format_us(s.median)).unwrap_or_else(dash);
    let ratio_header = if measured.counted {
        "× baseline (CPU time)"
    } else {
        "× baseline (±95% CI)"
    };
    Columns::new()
        .with(Column::number("handshakes/s").priority(3), |r: &Row| {
            r.handshakes_per_second
                .map(|h| format!("{h:.0}"))
                .unwrap_or_else(dash)
        })
        .with(Column::number("client CPU µs").priority(2), move |r| {
            median(r.client_cpu_us)
        })
        .with(Column::number("server CPU µs").priority(2), move |r| {
            median(r.server_cpu_us)
        })
        .with(Column::number("wall µs (median ±95% CI)"), |r| {
            r.wall_us
                .map(|w| {
                    let spread = w.median_ci95.relative_half_width(w.median) * 100.0;
                    format!("{} ±{spread:.1}%", format_us(w.median))
                })
                .unwrap_or_else(dash)
        })
        .with(Column::number("p99 µs").priority(5), |r| {
            r.wall_us.map(|s| format_us(s.p99)).unwrap_or_else(dash)
        })
        .with(Column::number("n").priority(4), |r| {
            if r.sample_count > 0 {
                r.sample_count.to_string()
            } else {
                dash()
            }
        })
        .with(Column::number(ratio_header), |r| {
            let timed = (r.sample_count > 0).then_some(r.ratio_to_baseline.as_ref());
            timed.flatten().map(ratio_text).unwrap_or_else(dash)
        })
}

/// The instruction columns: each side's millions, their spread, the
/// handshakes counted (when no time column says n) and the ratio.
fn instruction_columns<'a>(measured: Measured) -> Columns<'a, Row> {
    let side = |pick: fn(&CountedFigures) -> Option<Summary>| {
        move |r: &Row| {
            r.instructions
                .as_ref()
                .and_then(pick)
                .map(|s| millions(s.median))
                .unwrap_or_else(dash)
        }
    };
    let mut columns = Columns::new()
        .with(
            Column::number("client M instr").priority(1),
            side(|f| f.client),
        )
        .with(
            Column::number("server M instr").priority(1),
            side(|f| f.server),
        )
        .with(Column::number("spread").priority(4), |r| {
            r.instructions
                .as_ref()
                .and_then(|f| f.spread)
                .map(|s| format!("{:.2}%", s * 100.0))
                .unwrap_or_else(dash)
        });
    if !measured.timed {
        columns.push(Column::number("n").priority(4), |r| {
            r.instructions
                .as_ref()
                .map(|f| f.samples.len())
                .filter(|n| *n > 0)
                .map_or_else(dash, |n| n.to_string())
        });
    }
    let ratio_header = if measured.timed {
        "× baseline (instructions)"
    } else {
        "× baseline (±95% CI)"
    };
    columns.with(Column::number(ratio_header), |r| {
        r.instructions
            .as_ref()
            .and_then(|f| f.ratio_to_baseline.as_ref())
            .map(ratio_text)
            .unwrap_or_else(dash)
    })
}

/// The heap columns: each side's peak and what it keeps, in KiB.
fn memory_columns<'a>() -> Columns<'a, Row> {
    let figure = |pick: fn(&MemoryFigures) -> Option<f64>| {
        move |r: &Row| {
            r.memory
                .as_ref()
                .and_then(pick)
                .map(kibibytes)
                .unwrap_or_else(dash)
        }
    };
    Columns::new()
        .with(
            Column::number("client peak KiB").priority(1),
            figure(|m| m.client_peak_heap_bytes),
        )
        .with(
            Column::number("server peak KiB").priority(1),
            figure(|m| m.server_peak_heap_bytes),
        )
        .with(
            Column::number("client kept KiB").priority(2),
            figure(|m| m.client_retained_bytes),
        )
        .with(
            Column::number("server kept KiB").priority(2),
            figure(|m| m.server_retained_bytes),
        )
}

/// The table a person reads. Narrow terminals drop first p99 and the
/// sample count, then handshakes/s, then the CPU columns; the backend,
/// scenario, wall time, ratio and notes always stay. Counted runs show
/// each side's instructions (and heap bytes) beside or instead of the time.
pub(super) fn table(rows: &[Row], baseline: Option<&str>, counted_with: Option<&str>) -> Table {
    let measured = Measured::of(rows);
    // The transport is a column only when some row ran over a socket.
    let with_transport = rows.iter().any(|r| r.scenario.transport.is_socket());
    let mut columns = leading(with_transport, |r: &Row| r);
    if measured.timed {
        columns = columns.with_all(time_columns(measured));
    }
    if measured.counted {
        columns = columns.with_all(instruction_columns(measured));
    }
    if measured.memory {
        columns = columns.with_all(memory_columns());
    }
    // Quantum safety follows from the axes: said once when every row shares it.
    let mut table = columns
        .with(Column::axis("quantum-safe").priority(1), |r| {
            quantum_safe(&r.scenario).to_string()
        })
        .with(Column::notes("notes"), notes)
        .table(rows);
    table.notes = table_notes(rows, baseline, counted_with, measured, with_transport);
    table
}

/// What the columns mean and how the ratios were taken.
fn table_notes(
    rows: &[Row],
    baseline: Option<&str>,
    counted_with: Option<&str>,
    measured: Measured,
    with_transport: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    if measured.timed {
        notes.push("client/server CPU: the thread's CPU time inside each side's library calls (CLOCK_THREAD_CPUTIME_ID), median. Over memory, where the two sides take turns on one thread, it is the handshake's CPU time split as the wall time inside each side's calls; a handshake during which the thread was preempted is retaken with the clock read at every turn. The exports also hold the wall time inside the calls.".to_string());
    }
    if with_transport {
        notes.push("TCP, UDP rows: client and server in two threads over a loopback socket; each side's CPU includes the kernel's work for its socket calls (and for TCP its connect or accept), the wall time runs until the later side is done.".to_string());
    }
    // A server's row is a program's (nginx, Apache, HAProxy, Caddy):
    // tlslab's own server runs on a backend, and its rows are the
    // backend's. The programs' TLS rows' client is OpenSSL over TCP,
    // their QUIC rows' quinn.
    let mut programs: Vec<&str> = Vec::new();
    let mut tcp_programs: Vec<&str> = Vec::new();
    let mut quic_programs: Vec<&str> = Vec::new();
    for row in rows {
        let Some(server) = row.subject.server() else {
            continue;
        };
        let carried_by = match row.scenario.version {
            crate::scenario::TlsVersion::Quic => &mut quic_programs,
            _ => &mut tcp_programs,
        };
        for list in [&mut programs, carried_by] {
            if !list.contains(&server.id()) {
                list.push(server.id());
            }
        }
    }
    if !tcp_programs.is_empty() {
        notes.push(format!("{} rows: the client is tlslab's {} over TCP on loopback (its CPU from connect to the end of the handshake); the server CPU is the server's worker processes (all their threads) from before the connect to the connection's close (/proc/PID/task/*/schedstat), its kernel TCP work included.", tcp_programs.join(", "), crate::backend::client::DEFAULT_CLIENT.descriptor().library));
    }
    if !quic_programs.is_empty() {
        notes.push(format!("{} QUIC rows: the client is tlslab's QUIC client (quinn on the rustls backend the first line names) over UDP on loopback, offering the server's ALPN protocol (h3), its CPU from opening its socket until it is connected; the server CPU is its workers' from before the client's first datagram until the client has the server's HANDSHAKE_DONE and has closed, its kernel UDP work included (its work for the connection's close falls into the next handshake).", quic_programs.join(", ")));
    }
    // What each row's library says about its own rows, once each.
    for row in rows {
        let Some(id) = row.subject.backend() else {
            continue;
        };
        for note in (id.descriptor().notes)(&row.scenario) {
            if !notes.iter().any(|n| n == note) {
                notes.push(note.to_string());
            }
        }
    }
    if !programs.is_empty() {
        // Beside them (`--server embedded,nginx`), rows named after a
        // backend are tlslab's own server's.
        let is_backend = |row: &Row| matches!(row.subject, Subject::Library(_));
        if rows.iter().any(is_backend) {
            notes.push("Rows named after a backend: tlslab's embedded server on that backend, client and server in one process, measured as in a run without --server; the rounds interleave them with the servers' rows.".to_string());
        }
    }
    if measured.counted {
        notes.push(format!(
            "client/server M instr: instructions executed inside each side's library calls per handshake, in millions, counted under {}'s callgrind (median of the handshakes counted; setup and tlslab's bookkeeping between turns not counted). Counts repeat on any machine and beside any other work, but say nothing of cache misses, stalls or the clock: a row of fewer instructions can still take longer. Under valgrind the libraries see no AVX-512 (valgrind hides it), so their code paths can differ from a native run. spread: (max − min) / median of the handshakes' totals.",
            counted_with.unwrap_or("valgrind")
        ));
    }
    if measured.memory {
        notes.push("peak/kept KiB: heap bytes each side's allocations held at most during the handshake, and still held once it was done (what an established, idle connection keeps); every malloc of the libraries counted, median of the handshakes counted.".to_string());
    }
    if let Some(baseline) = baseline.map(crate::scenario::baseline::describe) {
        if measured.timed {
            notes.push(format!(
                "× baseline{}: CPU time (client + server) relative to {baseline}, the median of same-round ratios (rounds interleave every cell); ±: the 95% interval of that median from order statistics.",
                if measured.counted { " (CPU time)" } else { "" }
            ));
        }
        if measured.counted {
            notes.push(format!(
                "× baseline{}: instructions (client + server) relative to {baseline}, the median of the ratios of same-numbered handshakes; ± from six handshakes on.",
                if measured.timed { " (instructions)" } else { "" }
            ));
        }
    }
    notes
}
