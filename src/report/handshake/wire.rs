//! The handshake on the wire and over networks: per row its bytes,
//! records, flights, round trips and packets (the `--wire` table), and
//! per row and network profile the model's time from connect() until the
//! client can send application data beside what a link measured (the
//! network table, with the rows whose flight costs an extra round trip
//! called out). Also the fields of the JSON rows and CSV records.

use serde::Serialize;

use super::super::markup::format_us;
use super::super::{ColumnKind, Table};
use super::{axis_cells, Row, AXIS_HEADERS};
use crate::transport::tap::TurnRecord;
use crate::transport::tap::MSS_BYTES;
use crate::workload::network::NetworkResult;
use crate::workload::wire::Wire;

/// A row's wire figures, as exported (`wire.client_bytes`...).
#[derive(Debug, Clone, Serialize)]
pub struct WireFigures {
    pub client_bytes: u64,
    pub server_bytes: u64,
    /// Round trips until the client can send application data.
    pub round_trips: Option<f64>,
    pub server_round_trips: Option<f64>,
    /// Records both ways.
    pub records: u32,
    pub client_records: u32,
    pub server_records: u32,
    pub client_flights: u32,
    pub server_flights: u32,
    /// TCP segments at the MSS both ways (TLS).
    pub segments: Option<u32>,
    /// Datagrams both ways (DTLS).
    pub datagrams: Option<u32>,
    pub client_packets: u32,
    pub server_packets: u32,
    /// DTLS: extra records fragmenting at the MTU cost.
    pub fragments: Option<u32>,
    pub handshakes: u32,
    pub bytes_spread: u64,
    pub turns: Vec<TurnRecord>,
}

impl WireFigures {
    pub fn of(wire: &Wire) -> Self {
        Self {
            client_bytes: wire.client_bytes,
            server_bytes: wire.server_bytes,
            round_trips: wire.round_trips,
            server_round_trips: wire.server_round_trips,
            records: wire.records(),
            client_records: wire.client_records,
            server_records: wire.server_records,
            client_flights: wire.client_flights,
            server_flights: wire.server_flights,
            segments: wire.segments(),
            datagrams: wire.datagram_count(),
            client_packets: wire.client_packets,
            server_packets: wire.server_packets,
            fragments: wire.fragments,
            handshakes: wire.handshakes,
            bytes_spread: wire.bytes_spread,
            turns: wire.turns.clone(),
        }
    }
}

/// A row over one network profile, as exported (`network.model_ms`...).
#[derive(Debug, Clone, Serialize)]
pub struct NetworkFigures {
    pub profile: String,
    pub rtt_ms: f64,
    pub rate_bps: Option<f64>,
    pub loss: f64,
    pub initcwnd: u32,
    /// The model's median time from connect() until the client can send
    /// application data.
    pub model_ms: Option<f64>,
    pub model_mean_ms: Option<f64>,
    pub model_lossless_share: Option<f64>,
    pub path_round_trips: Option<f64>,
    /// Round trips spent waiting for ACKs: a flight over the initial window.
    pub window_round_trips: Option<f64>,
    /// The link measured over (`tun`), if any.
    pub link: Option<String>,
    pub status: Option<crate::measure::CellStatus>,
    pub reason: Option<String>,
    /// The median measured latency.
    pub measured_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    /// Measured over model, minus one.
    pub difference: Option<f64>,
    pub latencies_ms: Vec<f64>,
    /// Each side's median CPU in the measured handshakes, µs.
    pub client_cpu_us: Option<f64>,
    pub server_cpu_us: Option<f64>,
}

impl NetworkFigures {
    pub fn of(result: &NetworkResult) -> Self {
        let model = result.model.as_ref();
        let measured = result.measured.as_ref();
        let measured_ms = result.measured_ms();
        let model_ms = model.map(|m| m.ms);
        let cpu = |pick: fn(&crate::workload::network::LinkSample) -> u64| {
            let values: Vec<f64> = measured
                .map(|o| o.samples())
                .unwrap_or_default()
                .iter()
                .map(|s| pick(&s.value) as f64 / 1e3)
                .collect();
            crate::stats::median(&values)
        };
        Self {
            profile: result.profile.label.clone(),
            rtt_ms: result.profile.rtt_ms,
            rate_bps: result.profile.rate_bps,
            loss: result.profile.loss,
            initcwnd: result.profile.initcwnd,
            model_ms,
            model_mean_ms: model.map(|m| m.mean_ms),
            model_lossless_share: model.map(|m| m.lossless_share),
            path_round_trips: model.map(|m| m.path_round_trips),
            window_round_trips: model.map(|m| m.window_round_trips),
            link: result.link.clone(),
            status: measured.map(|o| o.status()),
            reason: measured.and_then(|o| o.reason()).map(String::from),
            measured_ms,
            p95_ms: result.p95_ms(),
            difference: measured_ms
                .zip(model_ms)
                .filter(|(_, model)| *model > 0.0)
                .map(|(measured, model)| measured / model - 1.0),
            latencies_ms: result.latencies_ms(),
            client_cpu_us: cpu(|s| s.client_cpu_ns),
            server_cpu_us: cpu(|s| s.server_cpu_ns),
        }
    }
}

fn dash() -> String {
    "—".to_string()
}

fn half_steps(value: Option<f64>) -> String {
    value.map_or_else(dash, |v| {
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    })
}

/// The header cells every table of rows starts with: backend, the axes,
/// and the transport when some row ran over a socket.
fn leading(rows: &[&Row]) -> (Vec<&'static str>, bool) {
    let with_transport = rows.iter().any(|r| r.scenario.transport.is_socket());
    let mut headers = vec!["backend"];
    headers.extend(AXIS_HEADERS);
    if with_transport {
        headers.push("transport");
    }
    (headers, with_transport)
}

fn leading_cells(row: &Row, with_transport: bool) -> Vec<String> {
    let mut cells = vec![row.subject.to_string()];
    cells.extend(axis_cells(&row.scenario));
    if with_transport {
        cells.push(row.scenario.transport.display().to_string());
    }
    cells
}

/// The `--wire` table: a row per traced row.
pub fn wire_table(rows: &[Row]) -> Option<Table> {
    let traced: Vec<&Row> = rows.iter().filter(|r| r.wire.is_some()).collect();
    if traced.is_empty() {
        return None;
    }
    let (mut headers, with_transport) = leading(&traced);
    let axes = headers.len();
    let datagrams = traced
        .iter()
        .any(|r| r.wire.as_ref().is_some_and(|w| w.datagrams.is_some()));
    let streams = traced
        .iter()
        .any(|r| r.wire.as_ref().is_some_and(|w| w.segments.is_some()));
    headers.extend([
        "client B",
        "server B",
        "records c/s",
        "flights c/s",
        "RTs client",
        "RTs server",
    ]);
    if streams {
        headers.push("segments c/s");
    }
    if datagrams {
        headers.extend(["datagrams c/s", "fragments"]);
    }
    headers.push("notes");
    let mut numeric = vec![false; axes];
    numeric.extend(vec![true; headers.len() - axes - 1]);
    numeric.push(false);
    let notes_column = headers.len() - 1;
    // On a narrow terminal the packet counts go first, then records and
    // flights, then the server's round trips; the bytes and the client's
    // round trips stay.
    let priority: Vec<u8> = headers
        .iter()
        .map(|header| match *header {
            "segments c/s" | "datagrams c/s" | "fragments" => 3,
            "records c/s" | "flights c/s" => 2,
            "RTs server" => 1,
            _ => 0,
        })
        .collect();
    let mut table = Table::new(&headers, &numeric)
        .priorities(&priority)
        .mark(&(0..axes).collect::<Vec<_>>(), ColumnKind::Axis)
        .mark(&[notes_column], ColumnKind::Notes)
        .titled("On the wire (per handshake)");
    for row in traced {
        let wire = row.wire.as_ref().expect("traced rows only");
        let mut cells = leading_cells(row, with_transport);
        cells.extend([
            wire.client_bytes.to_string(),
            wire.server_bytes.to_string(),
            format!("{}/{}", wire.client_records, wire.server_records),
            format!("{}/{}", wire.client_flights, wire.server_flights),
            half_steps(wire.round_trips),
            half_steps(wire.server_round_trips),
        ]);
        let pair = || format!("{}/{}", wire.client_packets, wire.server_packets);
        if streams {
            cells.push(wire.segments.map_or_else(dash, |_| pair()));
        }
        if datagrams {
            cells.push(wire.datagrams.map_or_else(dash, |_| pair()));
            cells.push(wire.fragments.map_or_else(dash, |f| f.to_string()));
        }
        let mut notes = Vec::new();
        if wire.bytes_spread > 0 {
            // ECDSA's DER signatures vary in length; so do QUIC's packets
            // (their frames from one handshake to the next).
            let ecdsa = row.scenario.cert.family() == crate::scenario::SignatureFamily::Ecdsa;
            let quic = row.scenario.version == crate::scenario::TlsVersion::Quic;
            notes.push(format!(
                "bytes vary by up to {} over {} handshakes{}",
                wire.bytes_spread,
                wire.handshakes,
                match (ecdsa, quic) {
                    (true, false) => " (DER signatures)",
                    (true, true) => " (DER signatures; QUIC's packets)",
                    (false, true) => " (QUIC's packets)",
                    (false, false) => "",
                }
            ));
        }
        notes.extend(amplification_note(row, wire));
        notes.extend(zero_rtt_note(row));
        if row.scenario.transport.is_socket() {
            notes.push("traced over memory: the same bytes".to_string());
        }
        cells.push(notes.join("; "));
        table.rows.push(cells);
    }
    table.notes.push(format!(
        "client/server B: the TLS or DTLS records each side sent in the handshake (no TCP, UDP or IP headers), traced over memory, the median of {} handshakes; records, flights (a side's writes between two of the peer's) per side; RTs: round trips from the client's first byte until each side's library says it is done and can send application data (TCP's own handshake not counted; DTLS's cookie exchange counted); segments: TCP segments the flights take at an MSS of {MSS_BYTES} bytes (a 1500-byte MTU with timestamps); datagrams: DTLS datagrams at the row's MTU, or QUIC's UDP payloads (its packets coalesced; B counts whole datagrams, the client's Initial padded to at least 1,200 bytes); fragments: records beyond those the same handshake takes at the largest MTU.",
        crate::workload::annotate::TRACED_HANDSHAKES
    ));
    Some(table)
}

/// A QUIC row whose client needed more than one round trip because the
/// server's flight was larger than QUIC lets it send to an address not
/// yet validated: three times what it received (RFC 9000 §8.1), here the
/// client's first flight (its Initial, padded to at least 1,200 bytes).
fn amplification_note(row: &Row, wire: &WireFigures) -> Option<String> {
    use crate::transport::tap::Side;
    if row.scenario.version != crate::scenario::TlsVersion::Quic {
        return None;
    }
    let extra = wire.round_trips.map(|rt| rt - 1.0).filter(|e| *e > 0.0)?;
    let initial = wire
        .turns
        .iter()
        .find(|turn| turn.side == Side::Client && !turn.writes.is_empty())?
        .bytes() as u64;
    (wire.server_bytes > 3 * initial).then(|| {
        format!(
            "+{} round trip{}: the server's {} B pass 3× the client's first {} B (anti-amplification)",
            half_steps(Some(extra)),
            if extra > 1.0 { "s" } else { "" },
            wire.server_bytes,
            initial
        )
    })
}

/// On a 0-RTT row, that its round trips and times run until the client's
/// handshake is done, while its request already left with the first flight.
fn zero_rtt_note(row: &Row) -> Option<String> {
    row.scenario.resumption.sends_early_data().then(|| {
        "0-RTT: the request left with the client's first flight; counted here until its handshake is done".to_string()
    })
}

/// Why a row over a profile needs more round trips than its protocol.
fn window_note(row: &Row, figures: &NetworkFigures) -> Option<String> {
    let extra = figures.window_round_trips.filter(|w| *w > 0.0)?;
    let wire = row.wire.as_ref()?;
    Some(format!(
        "+{} round trip{}: the server's {} segments pass the initial window of {}",
        half_steps(Some(extra)),
        if extra > 1.0 { "s" } else { "" },
        wire.server_packets,
        figures.initcwnd
    ))
}

/// The network table: a row per row and profile.
pub fn network_table(rows: &[Row]) -> Option<Table> {
    let modelled: Vec<&Row> = rows.iter().filter(|r| !r.network.is_empty()).collect();
    if modelled.is_empty() {
        return None;
    }
    let linked = modelled
        .iter()
        .flat_map(|r| &r.network)
        .any(|n| n.link.is_some());
    let (mut headers, with_transport) = leading(&modelled);
    let axes = headers.len();
    headers.extend(["network", "RTs on path", "model ms"]);
    if linked {
        headers.extend(["link", "measured ms", "p95 ms", "Δ", "n"]);
    }
    headers.push("notes");
    let mut numeric = vec![false; axes + 1];
    numeric.extend(vec![true; 2]);
    if linked {
        numeric.push(false);
        numeric.extend(vec![true; 4]);
    }
    numeric.push(false);
    let notes_column = headers.len() - 1;
    // On a narrow terminal the link's sample count and p95 go first, then
    // the round trips on the path; the model, the measured time and their
    // difference stay.
    let priority: Vec<u8> = headers
        .iter()
        .map(|header| match *header {
            "n" => 3,
            "p95 ms" => 2,
            "RTs on path" => 1,
            _ => 0,
        })
        .collect();
    let mut table = Table::new(&headers, &numeric)
        .priorities(&priority)
        .mark(&(0..axes).collect::<Vec<_>>(), ColumnKind::Axis)
        .mark(&[notes_column], ColumnKind::Notes)
        .titled("Over the network: from connect() until the client can send application data");
    let ms = |value: Option<f64>| value.map_or_else(dash, format_us);
    for row in modelled {
        for figures in &row.network {
            let mut cells = leading_cells(row, with_transport);
            cells.extend([
                figures.profile.clone(),
                half_steps(figures.path_round_trips),
                ms(figures.model_ms),
            ]);
            if linked {
                cells.extend([
                    figures.link.clone().unwrap_or_else(dash),
                    ms(figures.measured_ms),
                    ms(figures.p95_ms),
                    figures
                        .difference
                        .map_or_else(dash, |d| format!("{:+.1}%", d * 100.0)),
                    match figures.latencies_ms.len() {
                        0 => dash(),
                        n => n.to_string(),
                    },
                ]);
            }
            let mut notes = Vec::new();
            notes.extend(window_note(row, figures));
            notes.extend(row.wire.as_ref().and_then(|w| amplification_note(row, w)));
            notes.extend(zero_rtt_note(row));
            if let (Some(status), Some(reason)) = (figures.status, &figures.reason) {
                notes.push(format!("link {status}: {reason}"));
            }
            if figures.model_ms.is_none() {
                notes.push("no wire trace to model".to_string());
            }
            if row.sample_count == 0 && figures.model_ms.is_some() {
                notes.push("no CPU measured: the path alone".to_string());
            }
            cells.push(notes.join("; "));
            table.rows.push(cells);
        }
    }
    let profiles: Vec<String> = {
        let mut seen: Vec<String> = Vec::new();
        for row in rows {
            for n in &row.network {
                let described = describe(n);
                if !seen.contains(&described) {
                    seen.push(described);
                }
            }
        }
        seen
    };
    table.notes.push(format!(
        "Profiles: {}. model ms: the traced handshake replayed over the profile — TCP's handshake first (DTLS's cookie exchange is in the trace; QUIC has none: its first flight is the handshake's), each side's measured median CPU per handshake shared over its turns, each flight's segments released by TCP's congestion window (the initial window, one more segment per ACK) and queued at the rate, half the round trip each way; the median handshake's time (with loss: the loss-free time while most handshakes lose no packet). RTs on path: the round trips without CPU or rate limit, TCP's handshake included.",
        profiles.join("; ")
    ));
    if linked {
        table.notes.push("link tun: client and server in two network namespaces joined by tlslab's user-space link (two TUN devices and a thread that delays, paces and drops each packet as the profile says; the kernel's own TCP, its congestion window and timers, and the libraries' DTLS timers); the server is a `tlslab serve --handshakes` process in its namespace that reports its CPU per handshake. measured ms: the median handshake from the client's connect() until its library was done; Δ: measured over model.".to_string());
    }
    Some(table)
}

fn describe(network: &NetworkFigures) -> String {
    let profile = crate::scenario::network::NetworkProfile {
        label: network.profile.clone(),
        rtt_ms: network.rtt_ms,
        rate_bps: network.rate_bps,
        loss: network.loss,
        initcwnd: network.initcwnd,
    };
    profile.describe()
}

/// The CSV headers of the wire and network fields.
pub const RECORD_HEADERS: [&str; 14] = [
    "wire.client_bytes",
    "wire.server_bytes",
    "wire.round_trips",
    "wire.records",
    "wire.segments",
    "wire.datagrams",
    "wire.fragments",
    "network.profile",
    "network.model_ms",
    "network.link",
    "network.measured_ms",
    "network.p95_ms",
    "network.samples",
    "network.window_round_trips",
];

/// The wire and network fields of one CSV record (`network` empty for a
/// row without profiles).
pub fn record_fields(row: &Row, network: Option<&NetworkFigures>) -> Vec<String> {
    let number = |value: Option<f64>| value.map(|v| format!("{v:.3}")).unwrap_or_default();
    let count = |value: Option<u32>| value.map(|v| v.to_string()).unwrap_or_default();
    let wire = row.wire.as_ref();
    vec![
        wire.map(|w| w.client_bytes.to_string()).unwrap_or_default(),
        wire.map(|w| w.server_bytes.to_string()).unwrap_or_default(),
        number(wire.and_then(|w| w.round_trips)),
        count(wire.map(|w| w.records)),
        count(wire.and_then(|w| w.segments)),
        count(wire.and_then(|w| w.datagrams)),
        count(wire.and_then(|w| w.fragments)),
        network.map(|n| n.profile.clone()).unwrap_or_default(),
        number(network.and_then(|n| n.model_ms)),
        network.and_then(|n| n.link.clone()).unwrap_or_default(),
        number(network.and_then(|n| n.measured_ms)),
        number(network.and_then(|n| n.p95_ms)),
        network
            .filter(|n| n.link.is_some())
            .map(|n| n.latencies_ms.len().to_string())
            .unwrap_or_default(),
        number(network.and_then(|n| n.window_round_trips)),
    ]
}
