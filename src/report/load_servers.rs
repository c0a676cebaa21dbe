//! The table of one load over several servers (`load --server A,B,...`):
//! a row per server and HTTP version with its answers per second, its
//! median latency per phase, each side's CPU per request and, with perf,
//! the shared objects the server's CPU went to; a server that could not
//! run, or not in that HTTP version, is a row that says why.

use super::load::http_in_words;
use super::Table;
use crate::workload::load::{percentiles, LoadResult, Plan};

/// One row of the servers table.
pub enum ServerRow<'a> {
    /// A load that ran.
    Loaded {
        /// The server in words ("nginx 1.22.1 on OpenSSL 3.0.19").
        server: &'a str,
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
        /// The HTTP version in words, or "every" when none could run.
        http: String,
        reason: &'a str,
    },
}

/// The shared objects shown per row: the largest shares outside the kernel.
const TOP_OBJECTS: usize = 3;

/// Every server's loads side by side, in the order they ran.
pub fn servers_table(rows: &[ServerRow<'_>]) -> Table {
    let mut table = Table::new(
        &[
            "server",
            "HTTP",
            "answers/s after the ramp",
            "connect p50 ms",
            "handshake p50 ms",
            "first byte p50 ms",
            "transfer p50 ms",
            "total p50 ms",
            "total p99 ms",
            "errors",
            "server CPU µs/req",
            "client CPU µs/req",
            "server CPU per shared object (perf)",
            "notes",
        ],
        &[
            false, false, true, true, true, true, true, true, true, true, true, true, false, false,
        ],
    )
    .priorities(&[0, 0, 0, 3, 2, 3, 3, 1, 1, 1, 0, 1, 2, 0])
    .mark(&[13], super::ColumnKind::Notes)
    .titled("Servers side by side (latency from each request's due time)");
    for row in rows {
        table.rows.push(match row {
            ServerRow::Loaded {
                server,
                plan,
                result,
                server_cpu_ns,
                profile,
            } => loaded_row(server, plan, result, *server_cpu_ns, profile),
            ServerRow::Unusable {
                server,
                http,
                reason,
            } => {
                let mut cells = vec![server.to_string(), http.clone()];
                cells.extend(std::iter::repeat_n("—".to_string(), 11));
                cells.push(reason.to_string());
                cells
            }
        });
    }
    if let Some(ServerRow::Loaded { plan, .. }) =
        rows.iter().find(|r| matches!(r, ServerRow::Loaded { .. }))
    {
        table.notes.push(format!(
            "Each server was offered {:.0} requests per second after a {:.0} s ramp; answers/s is the rate answered after it (the whole run's without a ramp).",
            plan.rate,
            plan.ramp.as_secs_f64()
        ));
    }
    table.notes.push("The servers ran one after another, each started, loaded with the whole plan in every HTTP version and stopped before the next; each load is stored as a run of its own. CPU per request is per answered request; the shared objects are perf's shares of the server's user-space samples, the kernel's of all samples.".to_string());
    table
}

/// The cells of a load that ran.
fn loaded_row(
    server: &str,
    plan: &Plan,
    result: &LoadResult,
    server_cpu_ns: Option<u64>,
    profile: &Result<Vec<(String, f64)>, String>,
) -> Vec<String> {
    let latencies = &result.latencies;
    let median = |histogram| percentiles(histogram).map_or("—".to_string(), |v| ms(v[0]));
    let p99 = percentiles(&latencies.total).map_or("—".to_string(), |v| ms(v[2]));
    let per_request = |ns: u64| match result.answered {
        0 => "—".to_string(),
        n => format!("{:.0}", ns as f64 / 1000.0 / n as f64),
    };
    let errors: usize = result.errors.iter().map(|(_, n)| n).sum();
    vec![
        server.to_string(),
        http_in_words(plan),
        // After the ramp, the rate the plan offers (the whole run without one).
        format!(
            "{:.1}",
            result
                .steady_rate(plan)
                .unwrap_or_else(|| result.achieved_rate())
        ),
        median(&latencies.connect),
        median(&latencies.handshake),
        median(&latencies.first_byte),
        median(&latencies.transfer),
        median(&latencies.total),
        p99,
        errors.to_string(),
        server_cpu_ns.map_or("not known".to_string(), per_request),
        per_request(result.client_cpu_ns),
        profile
            .as_ref()
            .map_or("—".to_string(), |shares| top_objects(shares)),
        String::new(),
    ]
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
        let table = servers_table(&[ServerRow::Unusable {
            server: "apache",
            http: "every".to_string(),
            reason: "Apache httpd is not installed",
        }]);
        assert_eq!(table.rows.len(), 1);
        assert_eq!(table.rows[0].len(), table.headers.len());
        assert_eq!(table.rows[0][0], "apache");
        assert_eq!(table.rows[0][13], "Apache httpd is not installed");
    }
}
