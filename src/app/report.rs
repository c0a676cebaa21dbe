//! `tlslab report`: a stored run shown again, as a table or an export, by
//! the same view that printed it.

use anyhow::Result;

use super::session::{check_exports, usage};
use crate::cli::ReportArgs;
use crate::report::handshake::HandshakeReport;
use crate::report::{Document, Table};
use crate::store::Store;

/// What a run's stored options say about its sampling.
struct StoredSampling {
    baseline: Option<String>,
    seed: Option<u64>,
    precision: Option<f64>,
}

fn stored_sampling(options_json: &str) -> StoredSampling {
    let options: serde_json::Value = serde_json::from_str(options_json).unwrap_or_default();
    StoredSampling {
        baseline: options
            .get("baseline")
            .and_then(|b| b.as_str())
            .map(String::from),
        seed: options.pointer("/sampling/seed").and_then(|s| s.as_u64()),
        precision: options
            .pointer("/sampling/precision")
            .and_then(|p| p.as_f64()),
    }
}

/// The stored runs, one line each: id, date, kind, host and status.
fn list_document(store: &Store, path: &std::path::Path) -> Result<Document> {
    let runs = store.list_runs()?;
    let mut table = Table::new(
        &["id", "started (UTC)", "kind", "host", "status", "command"],
        &[true, false, false, false, false, false],
    )
    .priorities(&[0, 0, 0, 0, 0, 1]);
    table.empty = Some("no run stored yet".to_string());
    let mut records = Table::new(
        &["id", "started_at", "kind", "host", "status", "command_line"],
        &[true, false, false, false, false, false],
    );
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
            run.kind.clone(),
            run.hostname.clone(),
            run.status.clone(),
            run.command_line.clone(),
        ]);
        records.rows.push(vec![
            run.id.to_string(),
            run.started_at.clone(),
            run.kind.clone(),
            run.hostname.clone(),
            run.status.clone(),
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
    })
}

pub fn run(args: &ReportArgs) -> Result<i32> {
    let path = args.db.clone().unwrap_or_else(Store::default_path);
    if !path.exists() {
        return Err(usage(format!("there is no database at {}", path.display())));
    }
    check_exports(&args.exports)?;
    let store = Store::open(&path)?;
    if args.list {
        let document = list_document(&store, &path)?;
        args.display.print(&document)?;
        args.exports.write(&document)?;
        return Ok(0);
    }
    let run_id = match args.run {
        Some(id) => id,
        None => store
            .latest_run_id()?
            .ok_or_else(|| usage(format!("the database {} holds no run", path.display())))?,
    };
    let Some(kind) = store.run_kind(run_id)? else {
        return Err(usage(format!(
            "there is no run {run_id} in {}",
            path.display()
        )));
    };
    let run = store.load_run(run_id)?;
    let sampling = stored_sampling(&run.options_json);
    args.display.print_line(&format!(
        "{} run {} started {} ({})",
        run.kind, run.id, run.started_at, run.status
    ));
    println!();
    let complete = run.status == "complete";
    let document = match kind.as_str() {
        "tunnel" => super::tunnel::stored_document(&store, &run, args.baseline.clone())?,
        "speed" => crate::report::speed::document(
            &store.load_speed_cells(run_id)?,
            Some(run_id),
            complete,
            &run.host,
            &run.libraries,
            sampling.seed,
        ),
        "cost" => super::cost::stored_document(&store, &run)?,
        _ => {
            let baseline = args
                .baseline
                .clone()
                .or(sampling.baseline)
                .or_else(|| super::handshake::first_measured_label(&run.cells));
            HandshakeReport {
                run_id: Some(run.id),
                complete,
                baseline: baseline.as_deref(),
                host: &run.host,
                libraries: &run.libraries,
                seed: sampling.seed,
                precision: sampling.precision,
                cells: &run.cells,
            }
            .document()
        }
    };
    args.display.print(&document)?;
    args.exports.write(&document)?;
    Ok(0)
}
