//! `tlslab report`: a stored run shown again, as a table or an export, by
//! the same view that printed it.

use anyhow::Result;

use super::session::{check_exports, usage};
use crate::cli::ReportArgs;
use crate::report::handshake::HandshakeReport;
use crate::report::Format;
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

pub fn run(args: &ReportArgs) -> Result<i32> {
    let path = args.db.clone().unwrap_or_else(Store::default_path);
    if !path.exists() {
        return Err(usage(format!("there is no database at {}", path.display())));
    }
    check_exports(&args.exports)?;
    let store = Store::open(&path)?;
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
    println!(
        "{} run {} started {} ({})\n",
        run.kind, run.id, run.started_at, run.status
    );
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
        "bulk" => super::bulk::stored_document(&store, &run)?,
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
    print!("{}", document.render(Format::Table)?);
    args.exports.write(&document)?;
    Ok(0)
}
