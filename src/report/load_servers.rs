//! The table of one load over several servers or certificates (`load
//! --server A,B,... --cert C,D`): a row per server, certificate and HTTP
//! version with its answers per second, its median latency per phase, each
//! side's CPU per request and, with perf, the shared objects the server's
//! CPU went to; with several certificates, each row's server CPU per request
//! against the first certificate's on the same server and HTTP version. A
//! server that could not run, or not with that certificate or in that HTTP
//! version, is a row that says why.

use super::load::http_in_words;
use hdrhistogram::Histogram;

use super::{Column, Columns, Table};
use crate::workload::load::{percentiles, Latencies, LoadResult, Plan};

/// One row of the servers table.
pub enum ServerRow<'a> {
    /// A load that ran.
    Loaded {
        /// The server's name ("nginx"): rows of the same server are compared.
        name: &'a str,
        /// The server in words ("nginx 1.22.1 on OpenSSL 3.0.19").
        server: &'a str,
        /// The certificate's name ("rsa2048").
        cert: &'a str,
        plan: &'a Plan,
        result: &'a LoadResult,
        /// The server's CPU during the load, nanoseconds (None: not known).
        server_cpu_ns: Option<u64>,
        /// perf's shares per shared object, or why there are none.
        profile: &'a Result<Vec<(String, f64)>, String>,
    },
    /// A server, or one HTTP version of it, that could not be loaded.
    Unusable {
        /// The server's name ("apache").
        server: &'a str,
        /// The certificate's name, or "every" when the server could not run.
        cert: &'a str,
        /// The HTTP version in words, or "every" when none could run.
        http: String,
        reason: &'a str,
    },
}

/// The shared objects shown per row: the largest shares outside the kernel.
const TOP_OBJECTS: usize = 3;

/// The latency columns: header, priority on a narrow terminal, phase and
/// percentile (an index into [`crate::workload::load::PERCENTILES`]).
type LatencyColumn = (&'static str, u8, fn(&Latencies) -> &Histogram<u64>, usize);

/// The medians of each phase and the total's 99th percentile.
const LATENCY_COLUMNS: [LatencyColumn; 6] = [
    ("connect p50 ms", 3, |l| &l.connect, 0),
    ("handshake p50 ms", 2, |l| &l.handshake, 0),
    ("first byte p50 ms", 3, |l| &l.first_byte, 0),
    ("transfer p50 ms", 3, |l| &l.transfer, 0),
    ("total p50 ms", 1, |l| &l.total, 0),
    ("total p99 ms", 1, |l| &l.total, 2),
];

/// Every server's loads side by side, in the order they ran. `certs` are
/// the certificates loaded, in the order given: with two or more, a
/// certificate column and each row's server CPU per request against the
/// first certificate's; with one, the table is the same as without.
pub fn servers_table(rows: &[ServerRow<'_>], certs: &[&str]) -> Table {
    let first = match certs {
        [first, _, ..] => Some(*first),
        _ => None,
    };
    let mut table = columns(rows, first)
        .table(rows)
        .titled("Servers side by side (latency from each request's due time)");
    if let Some(ServerRow::Loaded { plan, .. }) =
        rows.iter().find(|r| matches!(r, ServerRow::Loaded { .. }))
    {
        table.notes.push(format!(
            "Each server was offered {:.0} requests per second after a {:.0} s ramp; answers/s is the rate answered after it (the whole run's without a ramp).",
            plan.rate,
            plan.ramp.as_secs_f64()
        ));
    }
    if let Some(first) = first {
        table.notes.push("The servers ran one after another, and each server once per certificate: started with it, loaded with the whole plan in every HTTP version and stopped before the next; each load is stored as a run of its own. CPU per request is per answered request; the shared objects are perf's shares of the server's user-space samples, the kernel's of all samples.".to_string());
        table.notes.push(format!("server CPU vs {first}: the row's server CPU per answered request divided by {first}'s on the same server in the same HTTP version (1.00 on {first}'s own rows; below 1 is cheaper). The loads ran back to back, not interleaved: a drift of the machine between them enters the ratio."));
    } else {
        table.notes.push("The servers ran one after another, each started, loaded with the whole plan in every HTTP version and stopped before the next; each load is stored as a run of its own. CPU per request is per answered request; the shared objects are perf's shares of the server's user-space samples, the kernel's of all samples.".to_string());
    }
    table
}

/// The servers table's columns; with `first` (two certificates or more)
/// the certificate after the server, and the ratio to the first one's
/// server CPU after the server CPU.
fn columns<'a>(rows: &'a [ServerRow<'a>], first: Option<&'a str>) -> Columns<'a, ServerRow<'a>> {
    let mut columns = Columns::new().with(Column::text("server"), |row: &ServerRow| match row {
        ServerRow::Loaded { server, .. } | ServerRow::Unusable { server, .. } => server.to_string(),
    });
    if first.is_some() {
        columns.push(Column::text("certificate"), |row| match row {
            ServerRow::Loaded { cert, .. } | ServerRow::Unusable { cert, .. } => cert.to_string(),
        });
    }
    columns.push(Column::text("HTTP"), |row| match row {
        ServerRow::Loaded { plan, .. } => http_in_words(plan),
        ServerRow::Unusable { http, .. } => http.clone(),
    });
    // After the ramp, the rate the plan offers (the whole run without one).
    columns.push(
        Column::number("answers/s after the ramp"),
        figure(|load| {
            let rate = load.result.steady_rate(load.plan);
            format!("{:.1}", rate.unwrap_or_else(|| load.result.achieved_rate()))
        }),
    );
    for (header, priority, phase, at) in LATENCY_COLUMNS {
        columns.push(
            Column::number(header).priority(priority),
            figure(move |load| {
                percentiles(phase(&load.result.latencies)).map_or("—".to_string(), |v| ms(v[at]))
            }),
        );
    }
    columns.push(
        Column::number("errors").priority(1),
        figure(|load| {
            let errors: usize = load.result.errors.iter().map(|(_, n)| n).sum();
            errors.to_string()
        }),
    );
    columns.push(
        Column::number("server CPU µs/req"),
        figure(|load| {
            load.server_cpu_ns
                .map_or("not known".to_string(), |ns| per_request(load.result, ns))
        }),
    );
    if let Some(first) = first {
        columns.push(
            Column::number(format!("server CPU vs {first}")),
            move |row| {
                cpu_ratio_to(row, rows, first)
                    .map_or("—".to_string(), |ratio| format!("{ratio:.2}"))
            },
        );
    }
    columns
        .with(
            Column::number("client CPU µs/req").priority(1),
            figure(|load| per_request(load.result, load.result.client_cpu_ns)),
        )
        .with(
            Column::text("server CPU per shared object (perf)").priority(2),
            figure(|load| {
                load.profile
                    .as_ref()
                    .map_or("—".to_string(), |s| top_objects(s))
            }),
        )
        .with(Column::notes("notes"), |row| match row {
            ServerRow::Loaded { .. } => String::new(),
            ServerRow::Unusable { reason, .. } => reason.to_string(),
        })
}

/// What the figures of a load that ran are read from.
struct Load<'r> {
    plan: &'r Plan,
    result: &'r LoadResult,
    server_cpu_ns: Option<u64>,
    profile: &'r Result<Vec<(String, f64)>, String>,
}

/// A figure of a load that ran, drawn by `cell`; "—" on a row that could
/// not be loaded.
fn figure(cell: impl Fn(&Load) -> String + Copy) -> impl Fn(&ServerRow<'_>) -> String + Copy {
    move |row| match row {
        ServerRow::Loaded {
            plan,
            result,
            server_cpu_ns,
            profile,
            ..
        } => cell(&Load {
            plan,
            result,
            server_cpu_ns: *server_cpu_ns,
            profile,
        }),
        ServerRow::Unusable { .. } => "—".to_string(),
    }
}

/// CPU nanoseconds per answered request, in microseconds.
fn per_request(result: &LoadResult, ns: u64) -> String {
    match result.answered {
        0 => "—".to_string(),
        n => format!("{:.0}", ns as f64 / 1000.0 / n as f64),
    }
}

/// The server CPU per answered request of a load that ran, nanoseconds.
fn server_cpu_per_request(row: &ServerRow<'_>) -> Option<f64> {
    match row {
        ServerRow::Loaded {
            result,
            server_cpu_ns: Some(cpu),
            ..
        } if result.answered > 0 => Some(*cpu as f64 / result.answered as f64),
        _ => None,
    }
}

/// `row`'s server CPU per request divided by that of the row of certificate
/// `first` on the same server, HTTP version and streams; `None` when
/// either did not run or has no CPU figure.
fn cpu_ratio_to(row: &ServerRow<'_>, rows: &[ServerRow<'_>], first: &str) -> Option<f64> {
    let ServerRow::Loaded { name, plan, .. } = row else {
        return None;
    };
    let base = rows.iter().find(|other| {
        matches!(other, ServerRow::Loaded { name: n, cert, plan: p, .. }
            if n == name && *cert == first && p.http == plan.http && p.streams == plan.streams)
    })?;
    let base = server_cpu_per_request(base).filter(|cpu| *cpu > 0.0)?;
    Some(server_cpu_per_request(row)? / base)
}

/// perf's largest shares outside the kernel, then the kernel's share of
/// all samples: "libcrypto.so.3 76%, libc.so.6 10%, apache2 5%; kernel 15%".
fn top_objects(shares: &[(String, f64)]) -> String {
    let is_kernel = |object: &str| object.starts_with("[kernel");
    let user: f64 = shares
        .iter()
        .filter(|(o, _)| !is_kernel(o))
        .map(|(_, s)| s)
        .sum();
    // A fold from +0: a sum of nothing would be -0, drawn "-0%".
    let kernel = shares
        .iter()
        .filter(|(o, _)| is_kernel(o))
        .fold(0.0, |sum, (_, s)| sum + s);
    let mut outside: Vec<&(String, f64)> = shares.iter().filter(|(o, _)| !is_kernel(o)).collect();
    outside.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut words: Vec<String> = outside
        .iter()
        .take(TOP_OBJECTS)
        .filter(|_| user > 0.0)
        .map(|(object, share)| format!("{object} {:.0}%", share / user * 100.0))
        .collect();
    if words.is_empty() {
        words.push("no user-space samples".to_string());
    }
    format!("{}; kernel {kernel:.0}%", words.join(", "))
}

fn ms(micros: u64) -> String {
    let ms = micros as f64 / 1000.0;
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::load::HttpVersion;

    #[test]
    fn the_largest_shared_objects_come_first_as_shares_of_user_space() {
        let shares = vec![
            ("[kernel.kallsyms]".to_string(), 20.0),
            ("libc.so.6".to_string(), 8.0),
            ("libcrypto.so.3".to_string(), 60.0),
            ("apache2".to_string(), 4.0),
            ("libssl.so.3".to_string(), 8.0),
        ];
        assert_eq!(
            top_objects(&shares),
            "libcrypto.so.3 75%, libc.so.6 10%, libssl.so.3 10%; kernel 20%"
        );
        assert_eq!(
            top_objects(&[("[kernel.kallsyms]".to_string(), 100.0)]),
            "no user-space samples; kernel 100%"
        );
        assert_eq!(
            top_objects(&[("tlslab".to_string(), 100.0)]),
            "tlslab 100%; kernel 0%"
        );
    }

    #[test]
    fn a_server_that_could_not_run_is_a_row_that_says_why() {
        let table = servers_table(
            &[ServerRow::Unusable {
                server: "apache",
                cert: "every",
                http: "every".to_string(),
                reason: "Apache httpd is not installed",
            }],
            &["ecdsa_p256"],
        );
        assert_eq!(table.rows.len(), 1);
        assert_eq!(table.rows[0].len(), table.columns.len());
        assert_eq!(table.rows[0][0], "apache");
        assert_eq!(table.rows[0][13], "Apache httpd is not installed");
    }

    fn plan(http: HttpVersion) -> Plan {
        Plan {
            rate: 10.0,
            ramp: std::time::Duration::ZERO,
            duration: std::time::Duration::from_secs(1),
            path: "/page_1".into(),
            body: Vec::new(),
            mode: crate::workload::load::Mode::NewConnection,
            clients: 1,
            max_requests: 10,
            http,
            streams: 1,
        }
    }

    fn answered(requests: usize) -> LoadResult {
        LoadResult {
            offered: requests,
            sent: requests,
            answered: requests,
            errors: Vec::new(),
            first_error: Vec::new(),
            latencies: Default::default(),
            bytes: 0,
            elapsed: std::time::Duration::from_secs(1),
            client_cpu_ns: 1_000,
            per_second: vec![requests],
            intervals: Vec::new(),
            resumed: 0,
            interrupted: false,
        }
    }

    #[test]
    fn each_certificate_is_a_column_and_its_server_cpu_a_ratio_to_the_first_on_the_same_server_and_version(
    ) {
        let (http1, http2) = (plan(HttpVersion::Http1_1), plan(HttpVersion::Http2));
        let (ten, twenty) = (answered(10), answered(20));
        let profile = Err("not asked for".to_string());
        let loaded = |name, cert, plan, result, cpu_ns| ServerRow::Loaded {
            name,
            server: name,
            cert,
            plan,
            result,
            server_cpu_ns: Some(cpu_ns),
            profile: &profile,
        };
        let rows = [
            // nginx: rsa2048 at 100 µs/req in HTTP/1.1, 80 in HTTP/2.
            loaded("nginx", "rsa2048", &http1, &ten, 1_000_000),
            loaded("nginx", "rsa2048", &http2, &ten, 800_000),
            // ecdsa_p256 at 40 and 60 µs/req: 0.40 and 0.75 of rsa2048's.
            loaded("nginx", "ecdsa_p256", &http1, &twenty, 800_000),
            loaded("nginx", "ecdsa_p256", &http2, &ten, 600_000),
            // Another server is compared with its own rsa2048 row only.
            loaded("embedded", "rsa2048", &http1, &ten, 500_000),
            loaded("embedded", "ecdsa_p256", &http1, &ten, 250_000),
            // A server without its rsa2048 row has no ratio.
            ServerRow::Unusable {
                server: "apache",
                cert: "rsa2048",
                http: "every".to_string(),
                reason: "could not start",
            },
            loaded("apache", "ecdsa_p256", &http1, &ten, 500_000),
        ];
        let table = servers_table(&rows, &["rsa2048", "ecdsa_p256"]);
        let headers = table.headers();
        assert_eq!(headers[1], "certificate");
        assert_eq!(headers[11], "server CPU µs/req");
        assert_eq!(headers[12], "server CPU vs rsa2048");
        assert_eq!(headers.len(), 16);
        assert!(table.columns[12].is_numeric() && !table.columns[1].is_numeric());
        assert_eq!(table.columns[15].kind, crate::report::ColumnKind::Notes);
        let column = |index: usize| -> Vec<&str> {
            table.rows.iter().map(|row| row[index].as_str()).collect()
        };
        assert_eq!(
            column(1),
            [
                "rsa2048",
                "rsa2048",
                "ecdsa_p256",
                "ecdsa_p256",
                "rsa2048",
                "ecdsa_p256",
                "rsa2048",
                "ecdsa_p256"
            ]
        );
        assert_eq!(column(11), ["100", "80", "40", "60", "50", "25", "—", "50"]);
        assert_eq!(
            column(12),
            ["1.00", "1.00", "0.40", "0.75", "1.00", "0.50", "—", "—"]
        );
        assert_eq!(table.rows[6][15], "could not start");
        assert!(
            table
                .notes
                .iter()
                .any(|note| note.starts_with("server CPU vs rsa2048: the row's server CPU per answered request divided by rsa2048's")),
            "{:?}",
            table.notes
        );
        // One certificate: the table of several servers as it was.
        let one = servers_table(&rows[..2], &["rsa2048"]);
        assert_eq!(one.columns.len(), 14);
        assert!(!one.headers().contains(&"certificate"));
        assert_eq!(one.rows[0].len(), 14);
    }
}
