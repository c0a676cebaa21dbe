//! `tlslab report`: stored runs shown again, as a table, an export or charts,
//! by the same view that printed them; several runs in one HTML page.

use anyhow::{Context, Result};

use super::session::{check_exports, check_output, stored_sampling, usage, NoResults};
use super::study::Study;
use crate::cli::ReportArgs;
use crate::report::html::{self, RunSection};
use crate::report::{Column, Document, Table};
use crate::stats::Drift;
use crate::store::{RunKind, Store, StoredRun};

/// The stored runs, one line each: id, date, kind, host and status.
fn list_document(store: &Store, path: &std::path::Path) -> Result<Document> {
    let runs = store.list_runs()?;
    let mut table = Table::new(vec![
        Column::number("id"),
        Column::text("started (UTC)"),
        Column::text("kind"),
        Column::text("host"),
        Column::text("status"),
        Column::text("command").priority(1),
    ]);
    table.empty = Some("no run stored yet".to_string());
    let mut records =
        Table::records(["id", "started_at", "kind", "host", "status", "command_line"]);
    for run in &runs {
        // "2026-11-22T12:41:37.123Z" reads as "2026-11-22 12:41".
        let started: String = run
            .started_at
            .replacen('T', " ", 1)
            .chars()
            .take(16)
            .collect();
        table.rows.push(vec![
            run.id.to_string(),
            started,
            run.kind.to_string(),
            run.hostname.clone(),
            run.status.to_string(),
            run.command_line.clone(),
        ]);
        records.rows.push(vec![
            run.id.to_string(),
            run.started_at.clone(),
            run.kind.to_string(),
            run.hostname.clone(),
            run.status.to_string(),
            run.command_line.clone(),
        ]);
    }
    let data = serde_json::json!({
        "database": path.display().to_string(),
        "runs": runs.iter().map(|run| serde_json::json!({
            "id": run.id,
            "started_at": run.started_at,
            "kind": run.kind,
            "host": run.hostname,
            "status": run.status,
            "command_line": run.command_line,
        })).collect::<Vec<_>>(),
    });
    Ok(Document {
        heading: format!("Runs stored in {}", path.display()),
        tables: vec![table],
        records,
        data,
        footer: vec![
            "Show one with `tlslab report --run ID`; compare two with `tlslab compare A B`."
                .to_string(),
        ],
        figures: Vec::new(),
    })
}

pub fn run(args: &ReportArgs) -> Result<i32> {
    let path = args.db.clone().unwrap_or_else(Store::default_path);
    if !path.exists() {
        return Err(usage(format!("there is no database at {}", path.display())));
    }
    check_exports(&args.exports)?;
    if let Some(html) = &args.html {
        check_output(html)?;
    }
    // Each run once, in the order asked.
    let asked = crate::scenario::distinct(&args.run);
    // Combined shards make one document per host.
    let several = asked.len() > 1 && !args.combine;
    let exports = &args.exports;
    if several
        && [
            &exports.export_json,
            &exports.export_csv,
            &exports.export_markdown,
        ]
        .iter()
        .any(|p| p.is_some())
    {
        return Err(usage(
            "--export-json, --export-csv and --export-markdown take one run; --html and --plot take several",
        ));
    }
    let store = Store::open_read_only(&path)?;
    if args.list {
        let document = list_document(&store, &path)?;
        args.display.print(&document)?;
        args.exports.write(&document)?;
        return Ok(0);
    }
    let run_ids = if asked.is_empty() && args.combine {
        let ids = super::combine::latest_sharded_command(&store)?;
        if ids.is_empty() {
            return Err(usage(format!(
                "--combine without --run reads the latest sharded command's runs, and no handshake, speed, tunnel or bulk run in {} was run with --shard",
                path.display()
            )));
        }
        ids
    } else if asked.is_empty() {
        vec![store
            .latest_run_id()?
            .ok_or_else(|| usage(format!("the database {} holds no run", path.display())))?]
    } else {
        asked
    };
    // Every run is read once, and checked before anything is printed or
    // written.
    let mut runs = Vec::with_capacity(run_ids.len());
    for run_id in &run_ids {
        if store.run_kind(*run_id)?.is_none() {
            return Err(usage(format!(
                "there is no run {run_id} in {}",
                path.display()
            )));
        }
        let run = store.load_run(*run_id)?;
        if let Some(baseline) = &args.baseline {
            check_baseline(&store, &run, baseline)?;
        }
        runs.push(run);
    }
    if args.combine {
        return show_combined(&store, runs, args);
    }
    if several && super::combine::are_shards(&runs) {
        eprintln!("note: these runs are shards of one command: --combine shows them as one table");
    }
    let mut shown = Vec::new();
    for run in runs {
        let run_id = run.id;
        let document = match stored_document(&store, &run, args.baseline.clone()) {
            Ok(document) => document,
            // Among several runs, one with nothing to show is passed over.
            Err(error) if several && error.downcast_ref::<NoResults>().is_some() => {
                eprintln!("note: run {run_id} is left out: {error:#}");
                continue;
            }
            Err(error) => return Err(error),
        };
        if !shown.is_empty() {
            println!();
        }
        args.display.print_line(&format!(
            "{} run {} started {} ({})",
            run.kind, run.id, run.started_at, run.status
        ));
        println!();
        args.display.print(&document)?;
        if several {
            exports.write_plots(&document, &format!("run{}_", run.id))?;
        } else {
            exports.write(&document)?;
        }
        shown.push((run, document));
    }
    if let Some(html) = &args.html {
        let sections: Vec<RunSection> = shown
            .iter()
            .map(|(run, document)| section(&store, run, document))
            .collect::<Result<_>>()?;
        let ids: Vec<String> = shown.iter().map(|(run, _)| run.id.to_string()).collect();
        let title = format!(
            "tlslab report: run{} {}",
            if ids.len() > 1 { "s" } else { "" },
            ids.join(", ")
        );
        std::fs::write(html, html::page(&title, &sections)?)
            .with_context(|| format!("cannot write {}", html.display()))?;
        eprintln!("HTML report written to {}", html.display());
    }
    Ok(0)
}

/// `--combine`: the runs as the shards of one command, one document per
/// host, printed, exported and written to the HTML page.
fn show_combined(store: &Store, runs: Vec<StoredRun>, args: &ReportArgs) -> Result<i32> {
    let run_ids: Vec<i64> = runs.iter().map(|run| run.id).collect();
    let combined = super::combine::combine(store, runs, args.baseline.clone())?;
    let per_host = combined.len() > 1;
    if per_host
        && [
            &args.exports.export_json,
            &args.exports.export_csv,
            &args.exports.export_markdown,
        ]
        .iter()
        .any(|p| p.is_some())
    {
        return Err(usage(format!(
            "the runs come from {} hosts, combined per host: --export-json, --export-csv and --export-markdown take one table; --html and --plot take several",
            combined.len()
        )));
    }
    let mut sections = Vec::new();
    for (i, group) in combined.iter().enumerate() {
        let first = &group.runs[0];
        let ids: Vec<String> = group.runs.iter().map(|r| r.id.to_string()).collect();
        if i > 0 {
            println!();
        }
        let title = format!(
            "{} runs {} combined, on {}",
            first.kind,
            ids.join(", "),
            first.host.hostname
        );
        args.display.print_line(&title);
        println!();
        args.display.print(&group.document)?;
        if per_host {
            args.exports
                .write_plots(&group.document, &format!("runs{}_", ids.join("-")))?;
        } else {
            args.exports.write(&group.document)?;
        }
        let mut section = section(store, first, &group.document)?;
        section.anchor = format!("runs-{}", ids.join("-"));
        section.title = title;
        section.provenance[0] = (
            "runs".to_string(),
            format!("{} ({}), combined", ids.join(", "), first.kind),
        );
        sections.push(section);
    }
    if let Some(html) = &args.html {
        let ids: Vec<String> = run_ids.iter().map(|id| id.to_string()).collect();
        let title = format!("tlslab report: runs {} combined", ids.join(", "));
        std::fs::write(html, html::page(&title, &sections)?)
            .with_context(|| format!("cannot write {}", html.display()))?;
        eprintln!("HTML report written to {}", html.display());
    }
    Ok(0)
}

/// Refuses a `--baseline` that is not a row of the run (listing its rows),
/// or a run whose kind has no baseline row.
fn check_baseline(store: &Store, run: &StoredRun, baseline: &str) -> Result<()> {
    let (run_id, kind) = (run.id, run.kind);
    let mut labels: Vec<String> = match kind {
        RunKind::Handshake => run.cells.iter().map(|c| c.scenario.label()).collect(),
        RunKind::Tunnel => store
            .load_tunnel_cells(run_id)?
            .iter()
            .map(|c| c.scenario.label())
            .collect(),
        RunKind::Capacity | RunKind::Bulk | RunKind::Speed | RunKind::Cost | RunKind::Load => {
            return Err(usage(format!(
                "--baseline names a row of a handshake or tunnel run; run {run_id} is a {kind} run"
            )))
        }
    };
    if labels.iter().any(|label| label == baseline) {
        return Ok(());
    }
    if kind == RunKind::Handshake {
        if let Some(version) = crate::scenario::baseline::twin_protocol(baseline) {
            let version = version.map_err(usage)?;
            if run.cells.iter().any(|c| c.scenario.version == version) {
                return Ok(());
            }
            return Err(usage(format!(
                "the baseline '{baseline}' names {}, which no row of run {run_id} ran",
                version.display()
            )));
        }
    }
    labels.sort();
    labels.dedup();
    Err(usage(format!(
        "the baseline '{baseline}' is not a row of run {run_id}; its rows: {}",
        labels.join(", ")
    )))
}

/// A stored run as a document, by the view of its kind: the study that
/// made it reads it back.
fn stored_document(store: &Store, run: &StoredRun, baseline: Option<String>) -> Result<Document> {
    use super::{bulk, capacity, cost, handshake, load, speed, tunnel};
    match run.kind {
        RunKind::Handshake => handshake::HandshakeStudy::stored_document(store, run, baseline),
        RunKind::Capacity => capacity::CapacityStudy::stored_document(store, run, baseline),
        RunKind::Bulk => bulk::BulkStudy::stored_document(store, run, baseline),
        RunKind::Tunnel => tunnel::TunnelStudy::stored_document(store, run, baseline),
        RunKind::Speed => speed::SpeedStudy::stored_document(store, run, baseline),
        RunKind::Cost => cost::CostStudy::stored_document(store, run, baseline),
        RunKind::Load => load::LoadStudy::stored_document(store, run, baseline),
    }
}

/// A load run's latencies per phase, each request's stored in the phase's
/// histogram (to 3 significant digits).
fn load_latency_counts(document: &Document) -> Vec<(String, usize)> {
    document
        .data
        .get("latencies")
        .and_then(|l| l.as_object())
        .map(|phases| {
            phases
                .iter()
                .filter_map(|(phase, v)| {
                    Some((format!("latency: {phase}"), v["count"].as_u64()? as usize))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A run's part of the HTML report: its provenance beside its document.
fn section<'a>(store: &Store, run: &StoredRun, document: &'a Document) -> Result<RunSection<'a>> {
    let command = store.load_run_command(run.id)?;
    let sampling = stored_sampling(&run.options_json);
    let host = &run.host;
    let drift = document
        .data
        .get("drift")
        .or_else(|| document.data.pointer("/provenance/drift"))
        .and_then(|d| {
            let number = |key: &str| d.get(key).and_then(|v| v.as_f64());
            Some(Drift {
                rounds: d.get("rounds")?.as_u64()? as usize,
                p10: number("p10")?,
                p90: number("p90")?,
                min: number("min")?,
                max: number("max")?,
            })
        });
    let mut provenance = vec![
        ("run".to_string(), format!("{} ({})", run.id, run.kind)),
        ("status".to_string(), run.status.to_string()),
        ("started".to_string(), run.started_at.clone()),
    ];
    if let Some(command) = &command {
        if let Some(finished) = &command.finished_at {
            provenance.push(("finished".to_string(), finished.clone()));
        }
        provenance.push(("tool version".to_string(), command.tool_version.clone()));
        provenance.push(("command line".to_string(), command.command_line.clone()));
    }
    provenance.extend([
        ("host".to_string(), host.hostname.clone()),
        (
            "CPU".to_string(),
            format!("{} ({} cores)", host.cpu_model, host.cores),
        ),
        (
            "CPU crypto flags".to_string(),
            host.crypto_flags().join(" "),
        ),
        ("kernel".to_string(), host.kernel.clone()),
        ("OS".to_string(), host.os.clone()),
    ]);
    for library in &run.libraries {
        provenance.push((
            format!("library ({})", library.subject),
            format!("{} {}", library.library, library.version),
        ));
    }
    provenance.push((
        "seed".to_string(),
        sampling
            .seed
            .map(|s| s.to_string())
            .unwrap_or_else(|| "not recorded".to_string()),
    ));
    provenance.push((
        "drift during the run".to_string(),
        match drift {
            Some(d) => format!(
                "per-round speed index {:.3} to {:.3} (10th-90th percentile), {:.3} to {:.3} overall, over {} rounds: a spread of {:.1}%",
                d.p10,
                d.p90,
                d.min,
                d.max,
                d.rounds,
                d.spread() * 100.0
            ),
            None => "not recorded (too few rounds, or a kind of run that does not measure it)"
                .to_string(),
        },
    ));
    let options = serde_json::from_str::<serde_json::Value>(&run.options_json)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| run.options_json.clone());
    Ok(RunSection {
        anchor: format!("run-{}", run.id),
        title: format!(
            "Run {}: {}, started {} ({})",
            run.id, run.kind, run.started_at, run.status
        ),
        provenance,
        details: vec![
            ("Every CPU flag".to_string(), host.cpu_flags.clone()),
            ("The run's stored options".to_string(), options),
        ],
        stored_samples: if run.kind == RunKind::Load {
            load_latency_counts(document)
        } else {
            run.cells
                .iter()
                .map(|c| {
                    (
                        format!("{} · {}", c.subject, c.scenario.label()),
                        c.samples().len(),
                    )
                })
                .collect()
        },
        document,
    })
}
