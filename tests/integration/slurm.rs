//! Slurm for real: a single-node cluster (munged, slurmctld and slurmd
//! started directly as daemons, no systemd, a minimal slurm.conf in a
//! temporary directory) runs `deploy/slurm-array.sh` as array jobs; the
//! shards' databases merged with `tlslab merge` give the unsharded table;
//! and `deploy/slurm-load.sh` as a job of two tasks, two shards of one load
//! against one server, merged into one load run.
//! Every daemon is stopped by its PID and its files removed, on failure too.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::merge::{assert_combined_rows_equal, cells, path_text, report_rows};
use crate::util::{cert_dir, skip_without, tlslab};

/// What the array's tasks run: the kex-matrix preset on the mock backend,
/// whose timings are deterministic, so shards and the whole run agree.
const PRESET: &str = "kex-matrix";
const BASELINE: &str = "handshake_1.2_rsa_rsa2048_aes128gcm";
/// How long the cluster may take to come up, and one array job to finish.
const START_LIMIT: Duration = Duration::from_secs(30);
const JOB_LIMIT: Duration = Duration::from_secs(60);

/// Where a program is: on PATH or in the system directories daemons live in.
fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/sbin", "/usr/bin", "/sbin", "/bin"])
        .map(|dir| Path::new(dir).join(program))
        .find(|candidate| candidate.is_file());
    found
}

/// The Slurm and munge programs the test runs.
struct Programs {
    mungekey: PathBuf,
    munged: PathBuf,
    slurmctld: PathBuf,
    slurmd: PathBuf,
    sbatch: PathBuf,
    squeue: PathBuf,
    scontrol: PathBuf,
    scancel: PathBuf,
    sinfo: PathBuf,
}

impl Programs {
    /// The programs, or the names of those missing.
    fn find() -> Result<Programs, String> {
        let names = [
            "mungekey",
            "munged",
            "slurmctld",
            "slurmd",
            "sbatch",
            "squeue",
            "scontrol",
            "scancel",
            "sinfo",
        ];
        let found: Vec<Option<PathBuf>> = names.iter().map(|name| find(name)).collect();
        let missing: Vec<&str> = names
            .iter()
            .zip(&found)
            .filter(|(_, path)| path.is_none())
            .map(|(name, _)| *name)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "Slurm or munge is not installed (no {})",
                missing.join(", ")
            ));
        }
        let mut found = found.into_iter().map(Option::unwrap);
        let mut next = || found.next().unwrap();
        Ok(Programs {
            mungekey: next(),
            munged: next(),
            slurmctld: next(),
            slurmd: next(),
            sbatch: next(),
            squeue: next(),
            scontrol: next(),
            scancel: next(),
            sinfo: next(),
        })
    }
}

/// A free TCP port (bound, read, released), for a daemon to listen on.
fn free_ports() -> (u16, u16) {
    let first = TcpListener::bind("0.0.0.0:0").unwrap();
    let second = TcpListener::bind("0.0.0.0:0").unwrap();
    (
        first.local_addr().unwrap().port(),
        second.local_addr().unwrap().port(),
    )
}

/// This machine's memory in MB, less a tenth (slurmd refuses a node
/// configured with more memory than it finds).
fn real_memory_mb() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
        .expect("MemTotal in /proc/meminfo");
    kib / 1024 * 9 / 10
}

fn short_host_name() -> String {
    let output = Command::new("hostname").arg("-s").output().unwrap();
    assert!(output.status.success(), "hostname -s");
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// The outcome of one task of an array job.
#[derive(Debug)]
struct Task {
    id: String,
    state: String,
    exit_code: String,
}

/// A running single-node cluster. Dropping it cancels its jobs, stops its
/// daemons by PID (SIGTERM, then SIGKILL after 5 s) and removes its
/// directory: the key, the configuration, state, logs and results.
struct Cluster {
    programs: Programs,
    dir: tempfile::TempDir,
    conf: PathBuf,
    /// Daemons in the order started; stopped in the reverse order.
    daemons: Vec<(&'static str, Child)>,
    jobs: Vec<String>,
}

impl Cluster {
    fn start(programs: Programs) -> Cluster {
        // munged wants every directory above its socket to be searchable by
        // all, and Unix socket paths are short: a directory of its own in /tmp.
        let dir = tempfile::Builder::new()
            .prefix("tlslab-slurm-")
            .tempdir_in("/tmp")
            .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().to_path_buf();
        for sub in ["munge", "state", "spool"] {
            std::fs::create_dir(path.join(sub)).unwrap();
        }
        let conf = path.join("slurm.conf");
        let mut cluster = Cluster {
            programs,
            dir,
            conf,
            daemons: Vec::new(),
            jobs: Vec::new(),
        };

        let key = path.join("munge/munge.key");
        let status = Command::new(&cluster.programs.mungekey)
            .arg("--create")
            .arg(format!("--keyfile={}", key.display()))
            .status()
            .unwrap();
        assert!(status.success(), "mungekey");
        let socket = path.join("munge/munge.socket");
        let mut munged = Command::new(&cluster.programs.munged);
        cluster.spawn(
            "munged",
            munged.args([
                "--foreground".into(),
                format!("--socket={}", socket.display()),
                format!("--key-file={}", key.display()),
                format!("--log-file={}", path.join("munged.log").display()),
                format!("--pid-file={}", path.join("munge/munged.pid").display()),
                format!("--seed-file={}", path.join("munge/munged.seed").display()),
            ]),
        );
        cluster.wait_for(|_| socket.exists(), "munged's socket");

        let host = short_host_name();
        let (controller_port, node_port) = free_ports();
        let cpus = std::thread::available_parallelism().unwrap().get();
        let conf = format!(
            "ClusterName=tlslabtest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={controller_port}
SlurmdPort={node_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket}
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory} State=UNKNOWN
PartitionName=tlslab Nodes={host} Default=YES MaxTime=INFINITE State=UP
",
            socket = socket.display(),
            dir = path.display(),
            memory = real_memory_mb(),
        );
        std::fs::write(&cluster.conf, conf).unwrap();

        let mut slurmctld = Command::new(&cluster.programs.slurmctld);
        slurmctld.arg("-D").arg("-f").arg(&cluster.conf);
        cluster.spawn("slurmctld", &mut slurmctld);
        let mut slurmd = Command::new(&cluster.programs.slurmd);
        slurmd.arg("-D").arg("-f").arg(&cluster.conf);
        cluster.spawn("slurmd", &mut slurmd);
        let sinfo = cluster.programs.sinfo.clone();
        cluster.wait_for(
            |cluster| {
                let output = cluster
                    .command(&sinfo)
                    .args(["-h", "-o", "%t"])
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&output.stdout).trim() == "idle"
            },
            "the node to be idle",
        );
        cluster
    }

    /// Starts a daemon in the foreground, its output in NAME.out.
    fn spawn(&mut self, name: &'static str, command: &mut Command) {
        let out = std::fs::File::create(self.dir.path().join(format!("{name}.out"))).unwrap();
        let child = command
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        self.daemons.push((name, child));
    }

    /// A Slurm client command that talks to this cluster.
    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command.env("SLURM_CONF", &self.conf);
        command
    }

    /// Waits until `ready`, panicking with the daemons' logs after START_LIMIT
    /// or when a daemon has exited.
    fn wait_for(&mut self, mut ready: impl FnMut(&Cluster) -> bool, what: &str) {
        let start = Instant::now();
        while !ready(self) {
            let exited = self
                .daemons
                .iter_mut()
                .find_map(|(name, child)| Some((*name, child.try_wait().unwrap()?)));
            if let Some((name, status)) = exited {
                panic!(
                    "{name} exited ({status}) waiting for {what}\n{}",
                    self.logs()
                );
            }
            if start.elapsed() > START_LIMIT {
                panic!("no {what} after {START_LIMIT:?}\n{}", self.logs());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Every log and task output of the cluster, for a failure message.
    fn logs(&self) -> String {
        let mut text = String::new();
        let mut entries: Vec<PathBuf> = std::fs::read_dir(self.dir.path())
            .map(|dir| dir.flatten().map(|entry| entry.path()).collect())
            .unwrap_or_default();
        entries.sort();
        for path in entries {
            if path.extension().is_some_and(|e| e == "log" || e == "out") {
                let mut content = String::new();
                if let Ok(mut file) = std::fs::File::open(&path) {
                    let _ = file.read_to_string(&mut content);
                }
                let tail: Vec<&str> = content.lines().rev().take(30).collect();
                text.push_str(&format!("--- {}\n", path.display()));
                for line in tail.into_iter().rev() {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
        text
    }

    /// Submits deploy/slurm-array.sh as an array job (`--array=ARRAY`), its
    /// tasks writing their shards into `out`, and returns the job id.
    fn submit(&mut self, array: &str, out: &Path, args: &str) -> String {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/slurm-array.sh");
        let mut sbatch = self.command(&self.programs.sbatch);
        sbatch
            .arg("--parsable")
            .arg(format!("--array={array}"))
            .arg(format!(
                "--output={}/task-%A_%a.out",
                self.dir.path().display()
            ))
            .arg(format!("--chdir={}", self.dir.path().display()));
        // The recipe asks for two CPUs per task; a one-core node has one.
        if std::thread::available_parallelism().unwrap().get() < 2 {
            sbatch.arg("--cpus-per-task=1");
        }
        let output = sbatch
            .arg(&script)
            .env("TLSLAB", env!("CARGO_BIN_EXE_tlslab"))
            .env("TLSLAB_PRESET", PRESET)
            .env("TLSLAB_ARGS", args)
            .env("TLSLAB_OUT", out)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "sbatch: {}\n{}",
            String::from_utf8_lossy(&output.stderr),
            self.logs()
        );
        let job = String::from_utf8(output.stdout)
            .unwrap()
            .trim()
            .split(';')
            .next()
            .unwrap()
            .to_string();
        self.jobs.push(job.clone());
        job
    }

    /// Submits deploy/slurm-load.sh with `tasks` tasks on one node, its
    /// shards loading `target` with `args` and written into `out`; returns
    /// the job id.
    fn submit_load(&mut self, tasks: usize, out: &Path, target: &str, args: &str) -> String {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/slurm-load.sh");
        let output = self
            .command(&self.programs.sbatch)
            .arg("--parsable")
            .arg(format!("--ntasks={tasks}"))
            // Both tasks on this node, one core each.
            .arg("--cpus-per-task=1")
            .arg(format!(
                "--output={}/load-%j.out",
                self.dir.path().display()
            ))
            .arg(format!("--chdir={}", self.dir.path().display()))
            .arg(&script)
            .env("TLSLAB", env!("CARGO_BIN_EXE_tlslab"))
            .env("TLSLAB_TARGET", target)
            .env("TLSLAB_ARGS", args)
            .env("TLSLAB_OUT", out)
            .env("TLSLAB_START_MARGIN", "5")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "sbatch: {}\n{}",
            String::from_utf8_lossy(&output.stderr),
            self.logs()
        );
        let job = String::from_utf8(output.stdout).unwrap().trim().to_string();
        self.jobs.push(job.clone());
        job
    }

    /// Waits until every task of `job` has left the queue and returns them.
    fn wait(&mut self, job: &str) -> Vec<Task> {
        let start = Instant::now();
        loop {
            let output = self
                .command(&self.programs.squeue)
                .args(["-h", "-j", job])
                .output()
                .unwrap();
            if output.status.success() && output.stdout.is_empty() {
                break;
            }
            assert!(
                start.elapsed() < JOB_LIMIT,
                "job {job} still queued after {JOB_LIMIT:?}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        self.jobs.retain(|j| j != job);
        let output = self
            .command(&self.programs.scontrol)
            .args(["-o", "show", "job", job])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        let field = |line: &str, name: &str| {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(name))
                .unwrap_or_default()
                .to_string()
        };
        let mut tasks: Vec<Task> = text
            .lines()
            .map(|line| Task {
                id: field(line, "ArrayTaskId="),
                state: field(line, "JobState="),
                exit_code: field(line, "ExitCode="),
            })
            .collect();
        tasks.sort_by_key(|task| task.id.parse::<u32>().unwrap_or(u32::MAX));
        tasks
    }

    /// The output of one task of a job.
    fn task_output(&self, job: &str, task: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("task-{job}_{task}.out")))
            .unwrap_or_default()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for job in &self.jobs {
            let _ = self
                .command(&self.programs.scancel)
                .arg(job)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        for (_, child) in self.daemons.iter_mut().rev() {
            // SIGTERM by PID, then SIGKILL if it has not exited within 5 s.
            let pid = child.id() as libc::pid_t;
            unsafe { libc::kill(pid, libc::SIGTERM) };
            let start = Instant::now();
            while child.try_wait().ok().flatten().is_none() {
                if start.elapsed() > Duration::from_secs(5) {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        // The TempDir removes the directory when it drops, after this.
    }
}

/// Merges the shard files in `out` into `out/all.sqlite`, returning it.
fn merge_shards(out: &Path) -> PathBuf {
    let all = out.join("all.sqlite");
    let mut args = vec!["merge".to_string(), path_text(&all)];
    let mut shards: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("shard-"))
        })
        .collect();
    shards.sort();
    args.extend(shards.iter().map(|shard| path_text(shard)));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    tlslab(&args).expect_code(0);
    all
}

/// Issue 19: the Slurm recipe runs on a real (single-node) Slurm: a plain
/// array and a stepped one each give shards whose merged table equals the
/// unsharded run's, and an array given as a list fails in every task with
/// the recipe's message and writes no shard.
#[test]
fn slurm_runs_the_array_recipe_and_the_merged_shards_equal_the_unsharded_run() {
    const TEST: &str = "slurm_runs_the_array_recipe_and_the_merged_shards_equal_the_unsharded_run";
    let programs = match Programs::find() {
        Ok(programs) => programs,
        Err(missing) => {
            let _ = skip_without(Some(missing), TEST, "apt-get install slurm-wlm munge");
            return;
        }
    };
    let not_root = (unsafe { libc::geteuid() } != 0)
        .then(|| "the test cluster's daemons run as root, and this is not root".to_string());
    if skip_without(not_root, TEST, "run the tests as root") {
        return;
    }
    let started = Instant::now();
    let mut cluster = Cluster::start(programs);
    let mut phases = vec![format!(
        "cluster up {:.1} s",
        started.elapsed().as_secs_f64()
    )];
    let args = format!(
        "--backend mock --runs 4 --warmup 0 --seed 7 --cert-dir {}",
        cert_dir().display()
    );

    let results = cluster.dir.path().join("results");
    let whole = results.join("whole.sqlite");
    std::fs::create_dir(&results).unwrap();
    let mut unsharded: Vec<&str> = vec!["handshake", "--preset", PRESET];
    unsharded.extend(args.split(' '));
    let whole_text = path_text(&whole);
    unsharded.extend(["--db", &whole_text, "-q"]);
    tlslab(&unsharded).expect_code(0);
    let unsharded_rows = report_rows(&whole, &[]);

    for (array, ids) in [("0-2", [0, 1, 2]), ("3-7:2", [3, 5, 7])] {
        let out = results.join(format!("array-{}", array.replace(':', "-step-")));
        let submitted = Instant::now();
        let job = cluster.submit(array, &out, &args);
        let tasks = cluster.wait(&job);
        phases.push(format!(
            "--array={array} {:.1} s",
            submitted.elapsed().as_secs_f64()
        ));
        let ids_seen: Vec<String> = tasks.iter().map(|task| task.id.clone()).collect();
        assert_eq!(ids_seen, ids.map(|id| id.to_string()), "{array}: {tasks:?}");
        for task in &tasks {
            assert!(
                task.state == "COMPLETED" && task.exit_code == "0:0",
                "{array}: task {task:?}\n{}\n{}",
                cluster.task_output(&job, &task.id),
                cluster.logs()
            );
        }
        let all = merge_shards(&out);
        assert_eq!(cells(&all), cells(&whole), "{array}");
        let combined = report_rows(&all, &["--run", "1,2,3", "--combine"]);
        assert_combined_rows_equal(&unsharded_rows, &combined, BASELINE, 3);
    }

    // A list of ids: every task refuses, no shard is written.
    let out = results.join("array-list");
    let job = cluster.submit("0,1,5", &out, &args);
    let tasks = cluster.wait(&job);
    assert_eq!(tasks.len(), 3, "{tasks:?}");
    for task in &tasks {
        assert_eq!(
            (task.state.as_str(), task.exit_code.as_str()),
            ("FAILED", "2:0"),
            "{task:?}"
        );
        let output = cluster.task_output(&job, &task.id);
        assert!(
            output.contains("cannot tell which shard is its"),
            "{output}"
        );
    }
    assert!(!out.join("shard-0.sqlite").exists());

    let took = started.elapsed();
    drop(cluster);
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "slurm: {}; {:.1} s in all",
        phases.join(", "),
        took.as_secs_f64()
    );
}

/// Issue 26: the sharded load recipe on a real (single-node) Slurm: two
/// tasks, one shard each from a common start, against one server (nginx
/// when installed, else `tlslab serve`; on loopback, stopped by its PID), merged into one load
/// run whose request count is the sum of the shards' and whose percentiles
/// are those of every request.
#[test]
fn slurm_runs_the_load_recipe_two_tasks_against_one_server_merged_into_one_run() {
    const TEST: &str =
        "slurm_runs_the_load_recipe_two_tasks_against_one_server_merged_into_one_run";
    let programs = match Programs::find() {
        Ok(programs) => programs,
        Err(missing) => {
            let _ = skip_without(Some(missing), TEST, "apt-get install slurm-wlm munge");
            return;
        }
    };
    let not_root = (unsafe { libc::geteuid() } != 0)
        .then(|| "the test cluster's daemons run as root, and this is not root".to_string());
    if skip_without(not_root, TEST, "run the tests as root") {
        return;
    }
    let started = Instant::now();
    let server = crate::load_shards::ServedPage::start();
    let mut cluster = Cluster::start(programs);
    let out = cluster.dir.path().join("load");
    let args = format!(
        "--rate 40 --duration 2 --clients 4 --no-probe --cert-dir {}",
        cert_dir().display()
    );
    let job = cluster.submit_load(2, &out, &server.address, &args);
    let tasks = cluster.wait(&job);
    let output = std::fs::read_to_string(cluster.dir.path().join(format!("load-{job}.out")))
        .unwrap_or_default();
    assert!(
        tasks.len() == 1 && tasks[0].state == "COMPLETED" && tasks[0].exit_code == "0:0",
        "{tasks:?}\n{output}\n{}",
        cluster.logs()
    );
    let all = merge_shards(&out);
    let joined = crate::load_shards::assert_one_joined_load(&all);
    assert_eq!(joined.answered_per_shard.len(), 2, "{joined:?}");
    // 40 requests a second for 2 s, 40 per shard.
    assert_eq!(joined.answered, 80, "{joined:?}\n{output}");
    let took = started.elapsed();
    let server_name = server.name();
    drop(cluster);
    drop(server);
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "slurm load against {}: shards answered {:?}, joined {} (total p50 {} µs, p99 {} µs); {:.1} s in all",
        server_name,
        joined.answered_per_shard,
        joined.answered,
        joined.total_p50_us,
        joined.total_p99_us,
        took.as_secs_f64()
    );
}
