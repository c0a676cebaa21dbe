//! The counted measures of handshakes, which hold on any machine because
//! they count rather than time: instructions executed per side under
//! valgrind's callgrind, and heap bytes per side ([`memory`]).
//!
//! For instructions tlslab runs itself again, under callgrind, as
//! `tlslab counted-child` ([`child`]): one child per core, each with a
//! share of the cells. A child prepares each cell uncounted and takes a
//! fixed number of samples: no work in it depends on time, so the counts
//! repeat. Each side's turns are counted apart (the turns of
//! [`crate::backend::turns`] switch collection on and write each turn's
//! count to the profile, labelled with its side); setup (certificates,
//! contexts) and tlslab's bookkeeping between turns are not counted. The
//! parent reads the profiles ([`profile`]) and, for the breakdown, sorts
//! every function's own count into the study's categories.

pub mod child;
pub mod memory;
pub mod plan;
pub mod profile;
pub mod values;

pub use plan::{ChildCell, CountPlan, PlannedCount, Work, CHILD_COMMAND, SAMPLE_LABEL};
pub use values::{CategoryCount, Counts, Instructions, ServerHandshakeCount};

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::backend::{Backend, Negotiated};
use crate::certs::CertCache;
use crate::measure::{CellStatus, Outcome, Timed};
use crate::scenario::{HandshakeScenario, KxKind, Measure, SignatureFamily};
use crate::workload::perf::ProfileCategory;

/// Counted samples per cell without `--runs`: counts repeat, so a few
/// suffice; rows whose counts vary (ML-DSA's rejection sampling) say so.
pub const COUNTED_SAMPLES: usize = 6;

impl Work {
    /// A rough relative cost, to share the cells out evenly among the children.
    fn weight(&self) -> f64 {
        match self {
            Work::Handshake { scenario } => weight(scenario),
            Work::Bulk { .. }
            | Work::Speed { .. }
            | Work::Tunnel { .. }
            | Work::TunnelSetup { .. } => 1.0,
        }
    }

    /// The certificate chain the work needs, if any.
    fn chain(&self) -> Option<(crate::scenario::CertKind, u8)> {
        match self {
            Work::Handshake { scenario } => Some((scenario.cert, scenario.chain_depth)),
            Work::Bulk { row, .. } => crate::scenario::bulk::BulkScenario::from_label(row)
                .and_then(|s| s.handshake())
                .map(|h| (h.cert, h.chain_depth)),
            Work::Speed { .. } | Work::Tunnel { .. } | Work::TunnelSetup { .. } => None,
        }
    }
}

/// What counting found for one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CountedCell {
    pub outcome: Outcome<Instructions>,
    pub negotiated: Option<Negotiated>,
    /// Per side and category (empty unless asked for).
    pub breakdown: Vec<CategoryCount>,
}

/// How to count.
#[derive(Debug, Clone)]
pub struct CountOptions {
    /// Samples per cell.
    pub samples: usize,
    /// Children at once (one per core).
    pub jobs: usize,
    /// Sort every function's count into categories.
    pub breakdown: bool,
}

/// Why a cell cannot be counted, if it cannot: counted handshakes run both
/// sides in turns on one thread, over memory.
pub fn uncountable(scenario: &HandshakeScenario) -> Option<String> {
    scenario.transport.is_socket().then(|| {
        format!(
            "counted over memory only (both sides in turns on one thread); {} rows are timed",
            scenario.transport.display()
        )
    })
}

/// Counts what `measures` ask for (instructions, memory; time is not
/// counted) on every planned cell; per cell its counts and, when counting
/// prepared it, what it negotiated. `progress` is told the counted
/// handshakes done so far.
pub fn count_matrix(
    planned: &[(HandshakeScenario, Arc<dyn Backend>)],
    certs: &CertCache,
    measures: &[Measure],
    options: &CountOptions,
    interrupt: &AtomicBool,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Vec<(Counts, Option<Negotiated>)>> {
    let countable: Vec<usize> = (0..planned.len())
        .filter(|&i| uncountable(&planned[i].0).is_none())
        .collect();
    let subset: Vec<(HandshakeScenario, Arc<dyn Backend>)> =
        countable.iter().map(|&i| planned[i].clone()).collect();
    let mut results: Vec<(Counts, Option<Negotiated>)> = planned
        .iter()
        .map(|(scenario, _)| {
            let mut counts = Counts::default();
            if let Some(reason) = uncountable(scenario) {
                let outcome: Outcome<()> = Outcome::Unsupported { reason };
                if measures.contains(&Measure::Instructions) {
                    counts.instructions = Some(outcome.without_samples());
                }
                if measures.contains(&Measure::Memory) {
                    counts.memory = Some(outcome.without_samples());
                }
            }
            (counts, None)
        })
        .collect();
    let done_before = std::sync::atomic::AtomicUsize::new(0);
    if measures.contains(&Measure::Memory) && !interrupted(interrupt) {
        let memory = memory::count_memory(&subset, certs, options.samples, interrupt, &|n| {
            done_before.store(n, Ordering::Relaxed);
            progress(n)
        })?;
        for (&i, cell) in countable.iter().zip(memory) {
            results[i].1 = results[i].1.take().or(cell.negotiated);
            results[i].0.memory = Some(cell.outcome);
        }
    }
    if measures.contains(&Measure::Instructions) && !interrupted(interrupt) {
        let before = done_before.load(Ordering::Relaxed);
        let work: Vec<CountedWork> = subset
            .iter()
            .map(|(scenario, backend)| {
                (
                    Work::Handshake {
                        scenario: *scenario,
                    },
                    Some(Arc::clone(backend)),
                )
            })
            .collect();
        let counted =
            count_instructions(&work, certs, options, interrupt, &|n| progress(before + n))?;
        for (&i, cell) in countable.iter().zip(counted) {
            results[i].1 = results[i].1.take().or(cell.negotiated);
            results[i].0.instructions = Some(cell.outcome);
            results[i].0.breakdown = cell.breakdown;
        }
    }
    Ok(results)
}

/// Counts `handshakes` handshakes of `scenario` on `backend` under
/// callgrind, with the breakdown, and returns the server side's
/// instructions per category; or why they could not be counted.
/// `valgrind` names the valgrind that counts.
pub fn count_server_handshake(
    scenario: &HandshakeScenario,
    backend: Arc<dyn Backend>,
    certs: &CertCache,
    handshakes: usize,
    valgrind: &str,
    interrupt: &AtomicBool,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<ServerHandshakeCount, String> {
    if let Some(reason) = uncountable(scenario) {
        return Err(reason);
    }
    let library = backend.library();
    let work = [(
        Work::Handshake {
            scenario: *scenario,
        },
        Some(backend),
    )];
    let options = CountOptions {
        samples: handshakes,
        jobs: 1,
        breakdown: true,
    };
    let [cell] = <[CountedCell; 1]>::try_from(
        count_instructions(&work, certs, &options, interrupt, progress)
            .map_err(|error| format!("{error:#}"))?,
    )
    .map_err(|_| "the counted child reported no cell".to_string())?;
    let samples = cell.outcome.samples();
    if let Some(reason) = cell.outcome.reason() {
        return Err(format!("{}: {reason}", cell.outcome.status()));
    }
    if samples.is_empty() {
        return Err("no handshake was counted (interrupted)".to_string());
    }
    let server: u64 = samples.iter().map(|s| s.value.server).sum();
    Ok(ServerHandshakeCount {
        subject: library.subject,
        library: format!("{} {}", library.library, library.version),
        valgrind: valgrind.to_string(),
        handshakes: samples.len(),
        server_instructions: server as f64 / samples.len() as f64,
        categories: cell
            .breakdown
            .into_iter()
            .filter(|c| c.side == "server")
            .map(|c| (c.category, c.instructions))
            .collect(),
    })
}

/// The valgrind command a counted child runs under.
fn valgrind_command(profile: &Path) -> Command {
    let mut command = Command::new("valgrind");
    command.args([
        "--tool=callgrind",
        "--collect-atstart=no",
        "--combine-dumps=yes",
        "--compress-pos=no",
        "--quiet",
    ]);
    command.arg(format!("--callgrind-out-file={}", profile.display()));
    command
}

/// A rough relative cost of a cell, to share the cells out evenly among
/// the children (the biggest first to the least loaded).
fn weight(scenario: &HandshakeScenario) -> f64 {
    use crate::scenario::{CertKind, Group};
    let kx = match (scenario.group, scenario.group.kind()) {
        (_, KxKind::Ffdh { bits }) => (f64::from(bits) / 1024.0).powf(2.5),
        (Group::P384, _) => 6.0,
        (Group::P521, _) => 14.0,
        (Group::X448, _) => 3.0,
        _ => 1.0,
    };
    let cert = match (scenario.cert, scenario.cert.family()) {
        (CertKind::Rsa3072, _) => 2.0,
        (CertKind::Rsa4096, _) => 4.0,
        (CertKind::EcdsaP384, _) => 6.0,
        (CertKind::EcdsaP521, _) => 14.0,
        (CertKind::Ed448, _) => 3.0,
        (_, SignatureFamily::MlDsa) => 2.0,
        _ => 1.0,
    };
    kx + cert
}

/// Shares out cells by their weights among `jobs` children: each cell to
/// the child with the least weight so far, the heaviest first; each child
/// keeps the plan's order (cell indices).
fn share_out(weights: &[f64], jobs: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]));
    let mut shares: Vec<(f64, Vec<usize>)> = vec![(0.0, Vec::new()); jobs.max(1)];
    for at in order {
        let least = shares
            .iter_mut()
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("at least one share");
        least.0 += weights[at];
        least.1.push(at);
    }
    shares
        .into_iter()
        .map(|(_, mut share)| {
            share.sort_unstable();
            share
        })
        .filter(|share| !share.is_empty())
        .collect()
}

/// A child under way.
struct Running {
    child: Child,
    profile: PathBuf,
    out: PathBuf,
    /// What the child wrote to standard error that was not progress.
    messages: Arc<Mutex<Vec<String>>>,
    /// (cell, sample) the child finished and verified.
    done: Arc<Mutex<Vec<(usize, usize)>>>,
}

/// A cell of counted work and its backend (`None` for bulk's no-crypto
/// rows and tunnel rows).
pub type CountedWork = (Work, Option<Arc<dyn Backend>>);

/// Counts every cell's instructions per side in children under callgrind.
/// `progress` is called with the number of samples done so far. Ctrl-C
/// (`interrupt`) stops the children; what they finished is kept.
pub fn count_instructions(
    cells: &[CountedWork],
    certs: &CertCache,
    options: &CountOptions,
    interrupt: &AtomicBool,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Vec<CountedCell>> {
    // Chains are made here, once, not under valgrind.
    for (cert, depth) in cells.iter().filter_map(|(work, _)| work.chain()) {
        let _ = certs.get(cert, depth);
    }
    crate::child::remove_leftovers();
    let scratch = crate::child::scratch_dir("counted").context("making a scratch directory")?;
    let exe = std::env::current_exe().context("finding tlslab's own binary")?;
    let weights: Vec<f64> = cells.iter().map(|(work, _)| work.weight()).collect();
    let shares = share_out(&weights, options.jobs);
    let done_total = Mutex::new(0usize);
    let mut counted: Vec<Option<CountedCell>> = vec![None; cells.len()];
    std::thread::scope(|scope| -> Result<()> {
        let mut running = Vec::new();
        let mut readers = Vec::new();
        for (job, share) in shares.iter().enumerate() {
            let plan = CountPlan {
                cert_dir: certs.dir().to_path_buf(),
                cells: share
                    .iter()
                    .map(|&i| PlannedCount {
                        index: i,
                        backend: cells[i].1.as_ref().map(|b| b.id().to_string()),
                        work: cells[i].0.clone(),
                        samples: options.samples,
                    })
                    .collect(),
            };
            let plan_path = scratch.path().join(format!("plan-{job}.json"));
            std::fs::write(&plan_path, serde_json::to_vec(&plan)?)?;
            let profile = scratch.path().join(format!("profile-{job}"));
            let out = scratch.path().join(format!("out-{job}.jsonl"));
            let mut command = valgrind_command(&profile);
            command
                .arg(&exe)
                .arg(CHILD_COMMAND)
                .arg(&plan_path)
                .arg(&out)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            // Killed by the kernel if tlslab is.
            let mut child = crate::child::spawn_tied(command, crate::child::Tie::Worker)
                .context("starting valgrind")?;
            let stderr = child.stderr.take().expect("stderr is piped");
            let messages = Arc::new(Mutex::new(Vec::new()));
            let done = Arc::new(Mutex::new(Vec::new()));
            let (to_messages, to_done, done_total) =
                (Arc::clone(&messages), Arc::clone(&done), &done_total);
            readers.push(scope.spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    match sample_of(&line) {
                        Some(sample) => {
                            to_done.lock().unwrap().push(sample);
                            let mut total = done_total.lock().unwrap();
                            *total += 1;
                            progress(*total);
                        }
                        None => to_messages.lock().unwrap().push(line),
                    }
                }
            }));
            running.push(Running {
                child,
                profile,
                out,
                messages,
                done,
            });
        }
        wait_all(&mut running, interrupt);
        // Each reader ends with its child's standard error.
        for reader in readers {
            let _ = reader.join();
        }
        for run in &running {
            read_child(run, options.breakdown, &mut counted)?;
        }
        Ok(())
    })?;
    Ok(counted
        .into_iter()
        .map(|cell| {
            cell.unwrap_or_else(|| CountedCell {
                outcome: if interrupted(interrupt) {
                    Outcome::Measured {
                        samples: Vec::new(),
                        precise: false,
                        note: None,
                    }
                } else {
                    Outcome::Failed {
                        reason: "the counted child process ended before this cell".to_string(),
                    }
                },
                negotiated: None,
                breakdown: Vec::new(),
            })
        })
        .collect())
}

fn interrupted(interrupt: &AtomicBool) -> bool {
    interrupt.load(Ordering::SeqCst)
}

/// Waits for every child; on Ctrl-C stops those still running.
fn wait_all(running: &mut [Running], interrupt: &AtomicBool) {
    loop {
        let mut all_done = true;
        for run in running.iter_mut() {
            if matches!(run.child.try_wait(), Ok(None)) {
                all_done = false;
                if interrupted(interrupt) {
                    let _ = run.child.kill();
                    let _ = run.child.wait();
                }
            }
        }
        if all_done {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// "tlslab sample CELL SAMPLE" → (cell, sample).
fn sample_of(label: &str) -> Option<(usize, usize)> {
    let rest = label.strip_prefix(SAMPLE_LABEL)?;
    let mut numbers = rest.split_ascii_whitespace().map(str::parse::<usize>);
    match (numbers.next(), numbers.next(), numbers.next()) {
        (Some(Ok(cell)), Some(Ok(sample)), None) => Some((cell, sample)),
        _ => None,
    }
}

/// Reads one child's profile and outcomes into `counted`.
fn read_child(run: &Running, breakdown: bool, counted: &mut [Option<CountedCell>]) -> Result<()> {
    let text = std::fs::read_to_string(&run.profile).unwrap_or_default();
    let parts = profile::parse(&text, breakdown);
    let done = run.done.lock().unwrap().clone();
    // Per (cell, sample): each side's instructions; per (cell, side,
    // category): instructions over the cell's samples.
    let mut samples: BTreeMap<(usize, usize), Instructions> = BTreeMap::new();
    let mut categories: BTreeMap<(usize, &'static str, ProfileCategory), u64> = BTreeMap::new();
    let mut current: Option<(usize, usize)> = None;
    for part in &parts {
        if let Some(sample) = sample_of(&part.label) {
            current = Some(sample);
            continue;
        }
        let side = match part.label.as_str() {
            "tlslab side client" => "client",
            "tlslab side server" => "server",
            _ => continue,
        };
        let Some(sample) = current.filter(|s| done.contains(s)) else {
            continue;
        };
        let counts = samples.entry(sample).or_default();
        if side == "client" {
            counts.client += part.total;
        } else {
            counts.server += part.total;
        }
        for function in &part.functions {
            let category =
                ProfileCategory::of_function(&function.function, &function.file, &function.object);
            *categories.entry((sample.0, side, category)).or_default() += function.instructions;
        }
    }
    let outcomes = std::fs::read_to_string(&run.out).unwrap_or_default();
    let mut reported = std::collections::BTreeSet::new();
    for line in outcomes.lines() {
        let cell: ChildCell =
            serde_json::from_str(line).context("reading a counted child's outcome")?;
        reported.insert(cell.index);
        let taken: Vec<Timed<Instructions>> = samples
            .range((cell.index, 0)..(cell.index + 1, 0))
            .map(|(&(_, sample), &value)| Timed {
                round: sample as u32,
                value,
            })
            .collect();
        let outcome = match cell.status {
            CellStatus::Measured => Outcome::Measured {
                precise: taken.len() == cell.samples,
                samples: taken.clone(),
                note: None,
            },
            CellStatus::Unsupported => Outcome::Unsupported {
                reason: cell.reason.unwrap_or_default(),
            },
            CellStatus::Failed => Outcome::Failed {
                reason: cell.reason.unwrap_or_default(),
            },
        };
        counted[cell.index] = Some(CountedCell {
            breakdown: category_means(&categories, cell.index, taken.len()),
            outcome,
            negotiated: cell.negotiated,
        });
    }
    // Cells the child was in when it stopped: their finished samples.
    let started: std::collections::BTreeSet<usize> = done.iter().map(|(cell, _)| *cell).collect();
    for index in started.difference(&reported) {
        let taken: Vec<Timed<Instructions>> = samples
            .range((*index, 0)..(*index + 1, 0))
            .map(|(&(_, sample), &value)| Timed {
                round: sample as u32,
                value,
            })
            .collect();
        counted[*index] = Some(CountedCell {
            breakdown: category_means(&categories, *index, taken.len()),
            outcome: Outcome::Measured {
                samples: taken,
                precise: false,
                note: None,
            },
            negotiated: None,
        });
    }
    let messages = run.messages.lock().unwrap();
    if parts.is_empty() && outcomes.is_empty() && !messages.is_empty() {
        bail!("the counted child failed: {}", messages.join("\n"));
    }
    Ok(())
}

/// One cell's categories per side, as means per sample.
fn category_means(
    categories: &BTreeMap<(usize, &'static str, ProfileCategory), u64>,
    index: usize,
    samples: usize,
) -> Vec<CategoryCount> {
    if samples == 0 {
        return Vec::new();
    }
    categories
        .iter()
        .filter(|((cell, _, _), _)| *cell == index)
        .map(|((_, side, category), total)| CategoryCount {
            side: side.to_string(),
            category: category.label().to_string(),
            instructions: *total as f64 / samples as f64,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{CertKind, Group, TlsVersion};

    #[test]
    fn cells_are_shared_out_evenly_and_in_order() {
        let cells: Vec<(usize, HandshakeScenario)> = [
            Group::P521,
            Group::X25519,
            Group::P256,
            Group::Dhe4096,
            Group::X25519,
        ]
        .iter()
        .enumerate()
        .map(|(i, group)| {
            (
                i,
                HandshakeScenario::full(TlsVersion::Tls12, *group, CertKind::EcdsaP256),
            )
        })
        .collect();
        let weights: Vec<f64> = cells.iter().map(|(_, s)| weight(s)).collect();
        let shares = share_out(&weights, 2);
        assert_eq!(shares.len(), 2);
        // The two heavy cells (P-521, DHE-4096) go to different children.
        let with = |i: usize| shares.iter().position(|s| s.contains(&i)).unwrap();
        assert_ne!(with(0), with(3));
        for share in &shares {
            assert!(share.windows(2).all(|w| w[0] < w[1]));
        }
        let all: usize = shares.iter().map(Vec::len).sum();
        assert_eq!(all, 5);
        assert_eq!(share_out(&weights[..1], 4).len(), 1);
    }

    #[test]
    fn sample_labels_read_back() {
        assert_eq!(sample_of("tlslab sample 3 14"), Some((3, 14)));
        assert_eq!(sample_of("tlslab sample 3"), None);
        assert_eq!(sample_of("tlslab side client"), None);
    }
}
