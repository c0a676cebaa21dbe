//! `tlslab merge OUT IN...`: joins result databases, typically the shards
//! of one matrix run on several machines (`--shard i/n`), into OUT. Each
//! run keeps its own host record and provenance; runs already in OUT are
//! skipped. Every input is checked before OUT is touched.

use anyhow::Result;

use super::session::usage;
use crate::cli::MergeArgs;
use crate::store::Store;

pub fn run(args: &MergeArgs) -> Result<i32> {
    for input in &args.inputs {
        if !input.is_file() {
            return Err(usage(format!(
                "{} does not exist or is not a file",
                input.display()
            )));
        }
        if same_file(input, &args.out) {
            return Err(usage(format!(
                "{} is both the output and an input",
                input.display()
            )));
        }
    }
    super::session::check_output(&args.out)?;
    for input in &args.inputs {
        Store::check_mergeable(input)?;
    }
    let mut store = Store::open(&args.out)?;
    let (mut copied, mut skipped) = (0, 0);
    for input in &args.inputs {
        let summary = store.merge_from(input)?;
        let ids: Vec<String> = summary.copied.iter().map(i64::to_string).collect();
        eprintln!(
            "{}: {} run(s) copied{}, {} already present",
            input.display(),
            summary.copied.len(),
            if ids.is_empty() {
                String::new()
            } else {
                format!(" as {}", ids.join(", "))
            },
            summary.skipped
        );
        copied += summary.copied.len();
        skipped += summary.skipped;
    }
    eprintln!(
        "{copied} run(s) merged into {} ({skipped} skipped as already present)",
        args.out.display()
    );
    Ok(0)
}

/// Returns true if and only if both paths name one existing file.
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
