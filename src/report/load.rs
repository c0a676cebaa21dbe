//! The load view: offered against achieved rate, latency percentiles per
//! phase (from each request's due time), errors by kind, each side's CPU
//! per request, and where the server's CPU went (perf's categories, and
//! beside them, when counted, one server handshake's instructions per
//! category).

use hdrhistogram::Histogram;
use serde_json::json;

use super::compare::kind::Kind;
use super::{axis_headers, Axis, Column, Columns, Document, Table};
use crate::scenario::{Measure, Subject};
use crate::workload::counted::ServerHandshakeCount;
use crate::workload::load::{
    percentiles, HttpVersion, LoadResult, Mode, Plan, INTERVAL_PERCENTILES, PERCENTILES,
};
use crate::workload::perf::ProfileCategory;
use crate::workload::serve::ServerStats;

/// Everything a load run reports.
pub struct LoadReport<'a> {
    pub heading: String,
    /// The scenario in words ("TLS 1.2 RSA key transport RSA-2048 aes128gcm").
    pub scenario: String,
    /// "nginx 1.22.1 on OpenSSL 3.0.19" or "HOST:PORT (your server)".
    pub server: String,
    pub plan: &'a Plan,
    pub result: &'a LoadResult,
    /// The server's CPU during the run, nanoseconds (None: not known).
    pub server_cpu_ns: Option<u64>,
    /// perf's shares per shared object, or why there are none.
    pub profile: Result<Vec<(String, f64)>, String>,
    /// What perf sampled ("the server's worker process").
    pub profile_scope: String,
    /// perf's shares per symbol category, or why there are none.
    pub categories: Result<Vec<(String, f64)>, String>,
    /// The embedded server's own figures and its backend's id, when it was the target.
    pub embedded: Option<(&'a ServerStats, Subject)>,
    /// One server handshake counted per category (`--measure
    /// time,instructions`), or why not; `None` when not asked for.
    pub counted: Option<Result<ServerHandshakeCount, String>>,
}

/// The HTTP version of a plan in words, with HTTP/2's streams per connection.
pub fn http_in_words(plan: &Plan) -> String {
    match plan.http {
        HttpVersion::Http1_1 => plan.http.describe().to_string(),
        HttpVersion::Http2 => format!(
            "{} ({} stream{} per connection)",
            plan.http.describe(),
            plan.streams,
            if plan.streams == 1 { "" } else { "s" }
        ),
    }
}

/// A row of `compare`: a latency phase and a statistic of it ("p50", "p99").
pub(crate) type PhaseStatistic = (&'static str, &'static str);

/// A row's axes as `compare` shows them, each with its cell.
pub(crate) const COMPARED_AXES: [Axis<PhaseStatistic>; 2] = [
    Axis {
        header: "phase",
        cell: |(phase, _)| phase.to_string(),
    },
    Axis {
        header: "statistic",
        cell: |(_, statistic)| statistic.to_string(),
    },
];

/// What a load run's rows measure in `compare`: per phase, every answered
/// request's latency (p50, tested) and its 99th percentile (one figure).
pub fn compared(measure: Measure) -> Option<Kind> {
    (measure == Measure::Time).then(|| {
        Kind::rows("load", "server", axis_headers(&COMPARED_AXES).to_vec())
            .on_time(
                "ms",
                "one request's latency in that phase (total: from the moment it was due)",
                1e-3,
            )
            .with_notes(vec![
                "Load p50 rows: the samples of the test are every answered request's latency, read back from the run's HDR histogram (3 significant digits). The requests of one run are not independent (a stall delays every request queued behind it), so the interval is narrower than the truth: take a verdict as a pointer, and repeat the runs to confirm it.",
                "Load p99 rows: one figure per run (its order-statistic interval is not computed): B/A without an interval or a verdict, never failing the gate.",
            ])
    })
}

/// Loads of the same server in several HTTP versions side by side: each
/// version's rate, total latency, errors and each side's CPU per request.
pub fn versions_table(loads: &[(&Plan, &LoadResult, Option<u64>)]) -> Table {
    type Load<'l> = (&'l Plan, &'l LoadResult, Option<u64>);
    // The total latency's percentile `i` (of `PERCENTILES`).
    let total_at = |result: &LoadResult, i: usize| {
        percentiles(&result.latencies.total).map_or("—".to_string(), |v| ms(v[i]))
    };
    let per_request = |result: &LoadResult, ns: u64| match result.answered {
        0 => "—".to_string(),
        n => format!("{:.0}", ns as f64 / 1000.0 / n as f64),
    };
    let mut table = Columns::new()
        .with(Column::text("HTTP"), |(plan, _, _): &Load| {
            http_in_words(plan)
        })
        .with(Column::number("achieved req/s"), |(_, result, _)| {
            format!("{:.1}", result.achieved_rate())
        })
        .with(Column::number("p50 ms"), move |(_, result, _)| {
            total_at(result, 0)
        })
        .with(Column::number("p99 ms"), move |(_, result, _)| {
            total_at(result, 2)
        })
        .with(Column::number("answered"), |(_, result, _)| {
            result.answered.to_string()
        })
        .with(Column::number("errors"), |(_, result, _)| {
            result
                .errors
                .iter()
                .map(|(_, n)| n)
                .sum::<usize>()
                .to_string()
        })
        .with(
            Column::number("client CPU µs/req"),
            move |(_, result, _)| per_request(result, result.client_cpu_ns),
        )
        .with(
            Column::number("server CPU µs/req"),
            move |(_, result, server_cpu_ns)| {
                server_cpu_ns.map_or("not known".to_string(), |ns| per_request(result, ns))
            },
        )
        .table(loads)
        .titled("HTTP versions side by side (total latency, from each request's due time)");
    table.notes.push("The versions ran back to back against the same server, each with the whole plan; each is stored as a run of its own.".to_string());
    table
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

/// One latency phase: its name in tables and records, and its histogram (µs).
type Phase<'a> = (&'static str, &'a Histogram<u64>);

impl LoadReport<'_> {
    /// The run as tables (summary, latency, errors, the embedded server's
    /// own figures, the two profiles), per-phase records, JSON data, a
    /// footer of warnings and the figures.
    pub fn document(&self) -> Document {
        let phases = self.phases();
        let mut tables = vec![
            self.summary_table(),
            self.latency_table(&phases),
            self.error_table(),
        ];
        if let Some((stats, backend)) = self.embedded {
            tables.push(crate::report::serve::summary_table(
                stats,
                format!("The embedded server ({backend}), as it counted itself"),
            ));
            tables.push(crate::report::serve::breakdown_table(stats, backend));
        }
        tables.push(self.profile_table());
        tables.push(self.category_table());
        Document {
            heading: self.heading.clone(),
            tables,
            records: records_table(&phases),
            data: self.data(&phases),
            footer: self.footer(),
            figures: super::plot::load_figures(self.plan, self.result, &phases),
        }
    }

    /// The latency phases in the order every table, record and figure
    /// lists them: the parts of a request, then service and total.
    fn phases(&self) -> [Phase<'_>; 6] {
        let latencies = &self.result.latencies;
        [
            ("TCP connect", &latencies.connect),
            ("TLS handshake", &latencies.handshake),
            ("first byte", &latencies.first_byte),
            ("transfer", &latencies.transfer),
            ("service (start to end)", &latencies.service),
            ("total (due to end)", &latencies.total),
        ]
    }

    /// The headline figures: offered against achieved rate, what was sent,
    /// answered and checked, each side's CPU per request, and in resumed
    /// mode how many handshakes resumed.
    fn summary_table(&self) -> Table {
        let result = self.result;
        let plan = self.plan;
        let mut summary = Table::new(vec![Column::text("measure"), Column::number("value")])
            .titled(format!(
                "Load: {} against {}, {} connections, {}",
                self.scenario,
                self.server,
                plan.mode.id(),
                http_in_words(plan)
            ));
        let per_request = |ns: u64| {
            if result.answered == 0 {
                "—".to_string()
            } else {
                format!("{:.0}", ns as f64 / 1000.0 / result.answered as f64)
            }
        };
        let rows: Vec<(&str, String)> = vec![
            (
                "offered rate (req/s)",
                format!(
                    "{:.0} after a {:.0} s ramp",
                    plan.rate,
                    plan.ramp.as_secs_f64()
                ),
            ),
            (
                "achieved rate, whole run (answers/s)",
                format!("{:.1}", result.achieved_rate()),
            ),
            (
                "achieved rate after the ramp (answers/s)",
                result
                    .steady_rate(plan)
                    .map(|r| format!("{r:.1}"))
                    .unwrap_or_else(|| "—".to_string()),
            ),
            (
                "requests due / sent",
                format!("{} / {}", result.offered, result.sent),
            ),
            (
                "answered / errors",
                format!(
                    "{} / {}",
                    result.answered,
                    result.errors.iter().map(|(_, n)| n).sum::<usize>()
                ),
            ),
            (
                "payload checked (MB)",
                format!("{:.2}", result.bytes as f64 / 1e6),
            ),
            (
                "duration (s)",
                format!("{:.2}", result.elapsed.as_secs_f64()),
            ),
            (
                "client CPU per request (µs)",
                per_request(result.client_cpu_ns),
            ),
            (
                "server CPU per request (µs)",
                self.server_cpu_ns
                    .map(per_request)
                    .unwrap_or_else(|| "not known (your server)".to_string()),
            ),
        ];
        for (name, value) in rows {
            summary.rows.push(vec![name.to_string(), value]);
        }
        if plan.mode == Mode::Resume {
            summary.rows.push(vec![
                "handshakes resumed / made".to_string(),
                format!("{} / {}", result.resumed, self.handshakes()),
            ]);
            summary.notes.push("resume: each client's first connection is a full handshake; each later one offers the session (TLS 1.3 ticket, TLS 1.2 session id) of the client's previous connection. Resumed: the server accepted it (SSL_session_reused).".to_string());
        }
        summary
    }

    /// How many TLS handshakes the clients made (resumed or not).
    fn handshakes(&self) -> u64 {
        self.result.latencies.handshake.len()
    }

    /// Latency percentiles per phase, in milliseconds.
    fn latency_table(&self, phases: &[Phase]) -> Table {
        let mut columns = vec![Column::text("phase"), Column::number("n")];
        columns.extend(PERCENTILES.iter().map(|p| {
            Column::number(match p {
                p if *p >= 100.0 => "max ms".to_string(),
                p => format!("p{p} ms"),
            })
        }));
        let mut latency = Table::new(columns).titled("Latency per phase");
        for (name, histogram) in phases {
            let mut row = vec![name.to_string(), histogram.len().to_string()];
            match percentiles(histogram) {
                Some(values) => row.extend(values.into_iter().map(ms)),
                None => row.extend(PERCENTILES.iter().map(|_| "—".to_string())),
            }
            latency.rows.push(row);
        }
        latency.notes.push(
            "total: from the moment the request was due to its last byte, so a request that waited for a free client or a stalled server counts its wait (no coordinated omission); service: from when a client started it. Percentiles from HDR histograms (3 significant digits).".to_string(),
        );
        if self.plan.mode == Mode::KeepAlive {
            latency
                .notes
                .push("keepalive: connect and handshake happen once per client.".to_string());
        }
        latency
    }

    /// Errors by kind, each with the first message of its kind.
    fn error_table(&self) -> Table {
        let result = self.result;
        let mut errors = Table::new(vec![
            Column::text("error"),
            Column::number("count"),
            Column::text("first message"),
        ])
        .titled("Errors");
        errors.empty = Some("Errors: none.".to_string());
        for (kind, count) in &result.errors {
            let message = result
                .first_error
                .iter()
                .find(|(k, _)| k == kind)
                .map(|(_, m)| m.clone())
                .unwrap_or_default();
            errors.rows.push(vec![
                kind.describe().to_string(),
                count.to_string(),
                message,
            ]);
        }
        errors
    }

    /// perf's samples per shared object, each also as a share of the
    /// samples outside the kernel (what a profile of the program alone
    /// shows), or why there is no profile.
    fn profile_table(&self) -> Table {
        let mut profile = Table::new(vec![
            Column::text("shared object"),
            Column::number("share of samples"),
            Column::number("share outside the kernel"),
        ])
        .titled("Where the server's CPU went (perf, per shared object)");
        match &self.profile {
            Ok(shares) => {
                let is_kernel = |dso: &str| dso.starts_with("[kernel");
                let user: f64 = shares
                    .iter()
                    .filter(|(d, _)| !is_kernel(d))
                    .map(|(_, s)| s)
                    .sum();
                for (dso, share) in shares.iter().filter(|(_, s)| *s >= 0.1) {
                    let outside = if is_kernel(dso) || user <= 0.0 {
                        "—".to_string()
                    } else {
                        format!("{:.1}%", share / user * 100.0)
                    };
                    profile
                        .rows
                        .push(vec![dso.clone(), format!("{share:.1}%"), outside]);
                }
                profile.notes.push(format!("perf record -e cpu-clock on {} during the whole run; a stripped library (Debian's libcrypto) counts as a whole. Outside the kernel: the share of the process's user-space samples, as a profile of the program alone reports it.", self.profile_scope));
            }
            Err(reason) => {
                profile.empty = Some(format!("No profile: {reason}"));
            }
        }
        profile
    }

    /// Everything the run measured as JSON: the plan, the counts, rates,
    /// latencies per phase and per second of due time, CPU, both profiles,
    /// the counted server handshake and the embedded server's figures.
    fn data(&self, phases: &[Phase]) -> serde_json::Value {
        let result = self.result;
        let plan = self.plan;
        let latencies: serde_json::Value = phases
            .iter()
            .map(|(name, histogram)| {
                (
                    name.to_string(),
                    json!({
                        "count": histogram.len(),
                        "percentiles_us": percentiles(histogram).map(|values| {
                            PERCENTILES.iter().zip(values).map(|(p, v)| json!({"percentile": p, "us": v})).collect::<Vec<_>>()
                        }),
                    }),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into();
        json!({
            "scenario": self.scenario,
            "server": self.server,
            "plan": plan,
            "offered": result.offered,
            "sent": result.sent,
            "answered": result.answered,
            "errors": result.errors.iter().map(|(k, n)| json!({"kind": k, "count": n})).collect::<Vec<_>>(),
            "achieved_rate": result.achieved_rate(),
            "steady_rate": result.steady_rate(plan),
            "answers_per_second": result.per_second,
            "seconds_by_due_time": result.intervals.iter().enumerate().map(|(second, i)| json!({
                "second": second,
                "offered": i.offered,
                "answered": i.answered,
                "total_latency_us": i.latency_us.map(|values| {
                    INTERVAL_PERCENTILES.iter().zip(values).map(|(p, v)| json!({"percentile": p, "us": v})).collect::<Vec<_>>()
                }),
            })).collect::<Vec<_>>(),
            "payload_bytes_checked": result.bytes,
            "elapsed_s": result.elapsed.as_secs_f64(),
            "client_cpu_ns": result.client_cpu_ns,
            "server_cpu_ns": self.server_cpu_ns,
            "latencies": latencies,
            "profile": match &self.profile {
                Ok(shares) => json!(shares.iter().map(|(d, s)| json!({"dso": d, "percent": s})).collect::<Vec<_>>()),
                Err(reason) => json!({"unavailable": reason}),
            },
            "symbol_categories": match &self.categories {
                Ok(shares) => json!(shares.iter().map(|(c, s)| json!({"category": c, "percent": s})).collect::<Vec<_>>()),
                Err(reason) => json!({"unavailable": reason}),
            },
            "counted_server_handshake": self.counted.as_ref().map(|counted| match counted {
                Ok(count) => json!({
                    "backend": count.subject,
                    "library": count.library,
                    "valgrind": count.valgrind,
                    "handshakes": count.handshakes,
                    "server_instructions": count.server_instructions,
                    "categories": count.categories.iter().map(|(c, n)| json!({
                        "category": c,
                        "instructions": n,
                        "percent": n / count.server_instructions.max(1.0) * 100.0,
                    })).collect::<Vec<_>>(),
                }),
                Err(reason) => json!({"unavailable": reason}),
            }),
            "handshakes": self.handshakes(),
            "resumed_handshakes": result.resumed,
            "interrupted": result.interrupted,
            "embedded_server": self.embedded.map(|(stats, backend)| crate::report::serve::data(stats, backend)),
        })
    }

    /// What a reader must not miss under the tables: a resumed mode where
    /// nothing resumed, a target rate not reached, requests never started,
    /// the second latency took off, an interrupted run.
    fn footer(&self) -> Vec<String> {
        let result = self.result;
        let plan = self.plan;
        let mut footer = Vec::new();
        let handshakes = self.handshakes();
        if plan.mode == Mode::Resume && result.resumed == 0 && handshakes > 0 {
            footer.push(format!(
                "WARNING: resumed mode, but none of the {handshakes} handshakes resumed: every one was a full handshake (does the server keep a session cache or issue tickets?)"
            ));
        }
        if let Some(steady) = result.steady_rate(plan).filter(|r| *r < 0.95 * plan.rate) {
            footer.push(format!(
                "The target rate was not reached: {steady:.0} answers/s after the ramp against {:.0} offered.",
                plan.rate
            ));
        }
        let never_started = result.offered.saturating_sub(result.sent);
        if never_started > 0 && !result.interrupted {
            footer.push(format!(
                "{never_started} of the {} requests due were never started: every client was still busy when the run ended (more --clients or a lower --rate would start them; the latencies of those started count their wait for a client).",
                result.offered
            ));
        }
        if let Some(knee) = result.latency_knee() {
            footer.push(format!(
                "Latency took off in second {} of the run, at {} requests due in it: median total latency {} ms against {} ms early in the run.",
                knee.second + 1,
                knee.offered,
                ms(knee.p50_us),
                ms(knee.baseline_us)
            ));
        }
        if result.interrupted {
            footer.push("interrupted: the requests that finished are reported".to_string());
        }
        footer
    }
}

/// The latency percentiles per phase in microseconds, for CSV.
fn records_table(phases: &[Phase]) -> Table {
    let mut records = Table::records([
        "phase", "count", "p50_us", "p90_us", "p99_us", "p999_us", "max_us",
    ]);
    for (name, histogram) in phases {
        let mut row = vec![name.to_string(), histogram.len().to_string()];
        match percentiles(histogram) {
            Some(values) => row.extend(values.into_iter().map(|v| v.to_string())),
            None => row.extend(PERCENTILES.iter().map(|_| String::new())),
        }
        records.rows.push(row);
    }
    records
}

/// Returns true if and only if perf's category `label` is the TLS library's.
fn in_library(label: &str) -> bool {
    ProfileCategory::from_label(label).is_some_and(|c| ProfileCategory::TLS_LIBRARY.contains(&c))
}

/// Returns true if and only if two labels name the same category.
fn same_category(a: &str, b: &str) -> bool {
    ProfileCategory::from_label(a) == ProfileCategory::from_label(b)
}

/// A category's share of the TLS library's samples (`library` of them
/// all), in percent; `None` outside the library or without samples.
fn of_library(shares: &[(String, f64)], library: f64, label: &str) -> Option<f64> {
    let share = shares.iter().find(|(l, _)| l == label).map(|(_, s)| *s)?;
    (in_library(label) && library > 0.0).then(|| share / library * 100.0)
}

/// The symbol-category table's columns, with the counted handshake's
/// beside perf's when one was counted.
fn category_columns<'a>(
    shares: &'a [(String, f64)],
    library: f64,
    counted: Option<&'a ServerHandshakeCount>,
) -> Columns<'a, &'a str> {
    let dash = || "—".to_string();
    let mut columns = Columns::new()
        .with(Column::text("category"), |label: &&str| label.to_string())
        .with(Column::number("share of samples"), move |label| {
            let share = shares.iter().find(|(l, _)| l == label).map(|(_, s)| *s);
            share.map_or_else(dash, |s| format!("{s:.1}%"))
        })
        .with(Column::number("share of the TLS library"), move |label| {
            of_library(shares, library, label).map_or_else(dash, |p| format!("{p:.1}%"))
        });
    if let Some(count) = counted {
        // The counted handshake's instructions in a category (0: none).
        let instructions = move |label: &str| -> f64 {
            count
                .categories
                .iter()
                .filter(|(l, _)| same_category(l, label))
                .map(|(_, n)| *n)
                .sum()
        };
        let total = count.server_instructions.max(1.0);
        columns = columns
            .with(
                Column::number("handshake M instr (counted)"),
                move |label| {
                    let n = instructions(label);
                    if n > 0.0 {
                        format!("{:.3}", n / 1e6)
                    } else {
                        dash()
                    }
                },
            )
            .with(Column::number("share of the handshake"), move |label| {
                let n = instructions(label);
                if n > 0.0 {
                    format!("{:.1}%", n / total * 100.0)
                } else {
                    dash()
                }
            });
    }
    columns
}

impl LoadReport<'_> {
    /// perf's samples per symbol category, and each of the TLS library's
    /// categories as a share of the library's samples (the study's
    /// "inside the handshake" table); when a server handshake was counted
    /// (`--measure time,instructions`), its instructions per category
    /// beside them.
    fn category_table(&self) -> Table {
        let counted = self.counted.as_ref().and_then(|c| c.as_ref().ok());
        let no_profile = self.categories.as_ref().err();
        let empty = Vec::new();
        let shares = self.categories.as_ref().unwrap_or(&empty);
        let library: f64 = shares
            .iter()
            .filter(|(l, _)| in_library(l))
            .map(|(_, s)| s)
            .sum();
        // Per category as perf named them, then those only counting found.
        let mut labels: Vec<&str> = shares.iter().map(|(l, _)| l.as_str()).collect();
        for (label, _) in counted.map_or(&[][..], |c| &c.categories[..]) {
            if !labels.iter().any(|l| same_category(l, label)) {
                labels.push(label);
            }
        }
        if no_profile.is_some() && counted.is_none() {
            labels.clear();
        }
        let mut table = category_columns(shares, library, counted)
            .table(&labels)
            .titled("Where the server's CPU went (perf, per symbol category)");
        match no_profile {
            Some(reason) if counted.is_none() => {
                table.empty = Some(format!("No per-symbol profile: {reason}"));
            }
            Some(reason) => table.notes.push(format!("No per-symbol profile: {reason}")),
            None => {
                let kernel: f64 = shares
                    .iter()
                    .filter(|(l, _)| {
                        ProfileCategory::from_label(l) == Some(ProfileCategory::Kernel)
                    })
                    .map(|(_, s)| s)
                    .sum();
                if kernel < 100.0 {
                    table.notes.push(format!(
                        "The TLS library as a whole: {library:.1}% of the samples, {:.1}% outside the kernel.",
                        library / (100.0 - kernel) * 100.0
                    ));
                }
                let inside: Vec<String> = labels
                    .iter()
                    .filter_map(|label| {
                        let percent = of_library(shares, library, label)?;
                        Some(format!("{label} {percent:.1}%"))
                    })
                    .collect();
                table.notes.push(format!(
                    "Inside the TLS library: {}. Symbols put in categories by name (bn_*, ec_*, rsa*, x25519*: public key; sha*, hmac, kdf: hashing; aes*, gcm*, chacha*, *cbc*: symmetric; drbg, rand: random; x509, asn1, d2i/i2d: certificates; ssl*, tls*: TLS state machine; the rest of OpenSSL: plumbing). Symmetric includes the pages' record protection, which the classic study's handshake breakdown (public key 92%, hashing 1.3%, symmetric 0.15%) left out.",
                    inside.join(", ")
                ));
            }
        }
        self.counted_notes(&mut table);
        table
    }

    /// What the counted columns are, or why they are missing.
    fn counted_notes(&self, table: &mut Table) {
        match &self.counted {
            None => {}
            Some(Err(reason)) => table.notes.push(format!(
                "No counted handshake (--measure time,instructions): {reason}"
            )),
            Some(Ok(count)) => table.notes.push(format!(
                "Counted: the server's side of one handshake of the same scenario ({}), on {} ({}) in process, under {}'s callgrind after the load: the mean of {} handshakes, {:.3} M instructions each; every function's own instructions sorted into the same categories by its name and source file. perf samples the whole run (handshakes, the pages' record protection, HTTP, the kernel) by time; the count is one handshake's instructions and says nothing of cache misses or stalls: compare the order of the categories, not their shares.",
                self.scenario,
                count.subject,
                count.library,
                count.valgrind,
                count.handshakes,
                count.server_instructions / 1e6
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::workload::load::Latencies;

    fn document(resumed: usize) -> Document {
        document_answering(resumed, 10)
    }

    fn document_answering(resumed: usize, per_second: usize) -> Document {
        document_counted(resumed, per_second, None)
    }

    /// A one-second run at 10 req/s offered, `per_second` answered in it,
    /// with a counted server handshake or not.
    fn document_counted(
        resumed: usize,
        per_second: usize,
        counted: Option<Result<ServerHandshakeCount, String>>,
    ) -> Document {
        let plan = Plan {
            rate: 10.0,
            ramp: Duration::ZERO,
            duration: Duration::from_secs(1),
            path: "/page_1".into(),
            body: Vec::new(),
            mode: Mode::Resume,
            clients: 1,
            max_requests: 10,
            http: crate::workload::load::HttpVersion::Http1_1,
            streams: 1,
        };
        let mut latencies = Latencies::new();
        for _ in 0..10 {
            latencies.handshake.record(500).unwrap();
        }
        let result = LoadResult {
            offered: 10,
            sent: 10,
            answered: 10,
            errors: Vec::new(),
            first_error: Vec::new(),
            latencies,
            bytes: 10,
            elapsed: Duration::from_secs(1),
            client_cpu_ns: 1_000,
            per_second: vec![per_second],
            intervals: Vec::new(),
            resumed,
            interrupted: false,
        };
        LoadReport {
            heading: String::new(),
            scenario: "TLS 1.3".into(),
            server: "nginx".into(),
            plan: &plan,
            result: &result,
            server_cpu_ns: None,
            profile: Err("not asked for".into()),
            profile_scope: String::new(),
            categories: Ok(vec![
                ("public key".into(), 45.0),
                ("symmetric ciphers".into(), 15.0),
                ("kernel".into(), 40.0),
            ]),
            embedded: None,
            counted,
        }
        .document()
    }

    fn category_table(document: Document) -> Table {
        document
            .tables
            .into_iter()
            .find(|t| {
                t.title
                    .as_deref()
                    .is_some_and(|t| t.contains("per symbol category"))
            })
            .unwrap()
    }

    #[test]
    fn a_counted_handshake_stands_beside_perfs_categories() {
        let count = ServerHandshakeCount {
            subject: crate::scenario::Subject::from_name("openssl").unwrap(),
            library: "OpenSSL 3".into(),
            valgrind: "valgrind-3.19.0".into(),
            handshakes: 3,
            server_instructions: 4_000_000.0,
            categories: vec![
                ("public key".into(), 3_000_000.0),
                ("TLS state machine".into(), 1_000_000.0),
            ],
        };
        let table = category_table(document_counted(0, 10, Some(Ok(count))));
        assert_eq!(table.columns.len(), 5);
        // perf's category, its count beside it.
        assert_eq!(
            table.rows[0],
            vec!["public key", "45.0%", "75.0%", "3.000", "75.0%"]
        );
        // perf saw no symmetric code of the handshake's count...
        assert_eq!(table.rows[1][3..], ["—", "—"]);
        // ... and the count has a category perf did not name.
        let tls = table
            .rows
            .iter()
            .find(|r| r[0] == "TLS state machine")
            .unwrap();
        assert_eq!(tls[1..], ["—", "—", "1.000", "25.0%"]);
        assert!(table
            .notes
            .iter()
            .any(|n| n.contains("mean of 3 handshakes")));

        // Why not, when it could not be counted.
        let table = category_table(document_counted(0, 10, Some(Err("no valgrind".into()))));
        assert_eq!(table.columns.len(), 3);
        assert!(table.notes.iter().any(|n| n.ends_with("no valgrind")));
    }

    #[test]
    fn a_rate_not_reached_is_said_in_the_footer() {
        let said = |doc: &Document| doc.footer.iter().any(|l| l.contains("not reached"));
        assert!(said(&document_answering(10, 5)));
        assert!(!said(&document_answering(10, 10)));
    }

    #[test]
    fn a_resumed_mode_where_nothing_resumed_is_a_warning() {
        let none = document(0);
        assert!(
            none.footer.iter().any(|l| l.starts_with("WARNING")),
            "{:?}",
            none.footer
        );
        assert!(none.tables[0]
            .rows
            .iter()
            .any(|r| r[0] == "handshakes resumed / made" && r[1] == "0 / 10"));
        let nine = document(9);
        assert!(nine.footer.iter().all(|l| !l.contains("WARNING")));
        assert_eq!(nine.data["resumed_handshakes"], 9);
    }

    #[test]
    fn the_symbol_categories_are_shown_inside_the_tls_library() {
        let table = document(0)
            .tables
            .into_iter()
            .find(|t| {
                t.title
                    .as_deref()
                    .is_some_and(|t| t.contains("per symbol category"))
            })
            .unwrap();
        assert_eq!(table.rows[0], vec!["public key", "45.0%", "75.0%"]);
        assert_eq!(table.rows[2], vec!["kernel", "40.0%", "—"]);
        assert!(table.notes[0].contains("60.0% of the samples, 100.0% outside the kernel"));
        assert!(table.notes[1].contains("public key 75.0%, symmetric ciphers 25.0%"));
    }
}
