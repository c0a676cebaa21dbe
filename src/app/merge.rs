//! `tlslab merge OUT IN...`: joins result databases, typically the shards
//! of one matrix run on several machines (`--shard i/n`), into OUT. Each
//! run keeps its own host record and provenance; runs already in OUT are
//! skipped. Every input is checked before OUT is touched, and a merge that
//! fails leaves no OUT it created. The shards of a sharded load (`load
//! --shard`), once all in OUT, are joined into one load run besides
//! ([`super::load_shards`]).

use anyhow::Result;

use super::load_shards;
use super::session::usage;
use crate::cli::MergeArgs;
use crate::store::{same_file, Store};

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
                "{} is the output {} (the same file): the output cannot be an input",
                input.display(),
                args.out.display()
            )));
        }
    }
    super::session::check_output(&args.out)?;
    for input in &args.inputs {
        Store::check_mergeable(input)?;
    }
    check_load_shards(args)?;
    let created = !args.out.exists();
    let merged = merge_into(args);
    if merged.is_err() && created {
        remove_database(&args.out);
    }
    merged
}

/// Opens OUT and merges every input into it.
fn merge_into(args: &MergeArgs) -> Result<i32> {
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
    let out = args.out.display().to_string();
    for note in load_shards::join(&mut store, &out)? {
        eprintln!("{note}");
    }
    Ok(0)
}

/// The shards of sharded loads that OUT and the inputs would bring
/// together, checked before anything is written: they must make whole
/// loads (see [`load_shards::check`]).
fn check_load_shards(args: &MergeArgs) -> Result<()> {
    let mut shards = Vec::new();
    let databases = std::iter::once(&args.out)
        .filter(|out| out.exists())
        .chain(&args.inputs);
    for path in databases {
        // An older database holds no sharded load.
        if let Ok(store) = Store::open_read_only(path) {
            shards.extend(load_shards::sharded_loads(
                &store,
                &path.display().to_string(),
            )?);
        }
    }
    load_shards::check(&shards)
}

/// Removes a database this merge created, with SQLite's files beside it.
fn remove_database(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    for suffix in ["-journal", "-wal", "-shm"] {
        let mut beside = path.as_os_str().to_owned();
        beside.push(suffix);
        let _ = std::fs::remove_file(beside);
    }
}
