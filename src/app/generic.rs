//! `--cpu-features generic`: the same command again in a child process
//! whose libraries see no CPU features (each backend's descriptor says how
//! to mask them: OpenSSL's and aws-lc's capability mask cleared; a tunnel
//! engine says it of its own cryptography), its rows "<backend> (generic)"
//! (`tunnel`: "<engine> (generic)") beside the native ones; a backend or
//! engine that cannot be masked gets rows that say why.
//!
//! The child is tlslab itself, `tlslab generic-child PLAN` (hidden): the
//! parent writes its own parsed arguments to PLAN as JSON, changed only
//! where the child must differ (native CPU features, so it does not start
//! a child of its own; a scratch database; quiet; no exports; the backends
//! or engines whose features can be masked), and the child runs the same command from
//! them. So every option reaches the child as the parent parsed it; a
//! command line rebuilt flag by flag silently dropped each new flag. The
//! child is tied to the parent (killed with it, stopped as it is) and
//! stores its run in the scratch database, which the parent reads back.

use std::path::Path;
use std::process::{Command as Process, Stdio};

use anyhow::{bail, Context, Result};

use super::study::Session;
use crate::backend::{descriptor_by_id, CpuMasking, REGISTRY};
use crate::cli::{DatabaseArgs, GenericChildArgs, GenericPlan};
use crate::scenario::{CpuFeatures, Named, Subject};
use crate::store::Store;
use crate::workload::tunnel::ENGINES;

/// The hidden command a generic-CPU child runs.
pub const CHILD_COMMAND: &str = "generic-child";

/// The subject of a generic-CPU row of the backend whose id is `id`
/// ("openssl (generic)"): `unmaskable` names only registered backends.
pub(crate) fn generic_row(id: &str) -> Subject {
    let descriptor = descriptor_by_id(id).expect("only a registered backend has generic rows");
    Subject::library(descriptor.id).with_cpu_features(CpuFeatures::Generic)
}

/// The backends whose CPU features a child can mask.
pub(crate) fn maskable<'a>(backends: &[&'a str]) -> Vec<&'a str> {
    backends
        .iter()
        .copied()
        .filter(|id| unmaskable_reason(id).is_none())
        .collect()
}

/// Each backend whose CPU features cannot be masked, with the reason its
/// generic rows give.
pub(crate) fn unmaskable<'a>(backends: &[&'a str]) -> Vec<(&'a str, &'static str)> {
    backends
        .iter()
        .filter_map(|id| Some((*id, unmaskable_reason(id)?)))
        .collect()
}

/// Why a backend's CPU features cannot be masked, if they cannot.
fn unmaskable_reason(id: &str) -> Option<&'static str> {
    impossible_reason(descriptor_by_id(id)?.cpu_masking)
}

/// Why CPU features masked this way cannot be turned off, if they cannot
/// (a backend's descriptor or a tunnel engine says how).
pub(crate) fn impossible_reason(masking: CpuMasking) -> Option<&'static str> {
    match masking {
        CpuMasking::Impossible(reason) => Some(reason),
        CpuMasking::Environment { .. } | CpuMasking::Unused => None,
    }
}

/// The environment of a generic-CPU child: every registered library's
/// and tunnel engine's masking (a library ignores the others' variables;
/// a tunnel engine's daemons inherit the child's environment), so the
/// backends a preset or a server brings into the child are masked too.
fn masking_environment() -> Vec<(&'static str, &'static str)> {
    let maskings = REGISTRY
        .iter()
        .map(|descriptor| descriptor.cpu_masking)
        .chain(ENGINES.iter().map(|engine| (engine.open)().cpu_masking()));
    let mut environment = Vec::new();
    for masking in maskings {
        if let CpuMasking::Environment { variable, value } = masking {
            if !environment.contains(&(variable, value)) {
                environment.push((variable, value));
            }
        }
    }
    environment
}

/// The database a child stores its run in: `database`, on disk.
pub(crate) fn child_database(database: &Path) -> DatabaseArgs {
    DatabaseArgs {
        db: Some(database.to_path_buf()),
        no_db: false,
    }
}

/// Runs the plan `plan` makes (given the scratch database the child is to
/// store its run in) in a generic-CPU child tied to this process, and
/// reads its run back with `read`. `None` when Ctrl-C (or SIGTERM) stopped
/// it before it stored a run; an error with the child's standard error
/// when it failed without storing one.
pub(crate) fn run_child<T>(
    plan: impl FnOnce(&Path) -> GenericPlan,
    session: &Session,
    read: impl FnOnce(&Store) -> Option<T>,
) -> Result<Option<T>> {
    crate::child::remove_leftovers();
    let scratch = crate::child::scratch_dir("generic").context("making a scratch directory")?;
    let database = scratch.path().join("generic.sqlite");
    let plan_path = scratch.path().join("plan.json");
    let plan = serde_json::to_vec_pretty(&plan(&database))?;
    std::fs::write(&plan_path, plan)
        .with_context(|| format!("cannot write {}", plan_path.display()))?;
    let mut child = Process::new(std::env::current_exe()?);
    child
        .arg(CHILD_COMMAND)
        .arg(&plan_path)
        .envs(masking_environment())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Killed with tlslab; stopped as tlslab is (Ctrl-C, SIGTERM), and
    // what it measured until then is kept.
    let output = crate::child::run_worker(child, session.interrupt())
        .context("starting the generic-CPU child process")?;
    let stored = Store::open_read_only(&database)
        .ok()
        .and_then(|store| read(&store));
    match stored {
        Some(stored) => Ok(Some(stored)),
        // Stopped before it stored a run: nothing of it to keep.
        None if session.interrupted() => Ok(None),
        None => bail!(
            "the generic-CPU child process failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ),
    }
}

/// The plan of `tlslab generic-child PLAN`: the command its parent
/// planned, which `app::run` runs.
pub fn read_plan(args: &GenericChildArgs) -> Result<GenericPlan> {
    let text = std::fs::read(&args.plan)
        .with_context(|| format!("cannot read {}", args.plan.display()))?;
    serde_json::from_slice(&text)
        .with_context(|| format!("{} is not a generic-CPU plan", args.plan.display()))
}

/// The CPU feature sets as stored with a run: "native,generic".
pub(crate) fn feature_list(sets: &[CpuFeatures]) -> String {
    sets.iter()
        .map(|set| set.id())
        .collect::<Vec<_>>()
        .join(",")
}
