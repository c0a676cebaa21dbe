//! The database's layout and its versions: the latest schema for a new file,
//! the schema as it first landed (version 0), and the migrations that bring
//! an older file up to date. The version is kept in `PRAGMA user_version`.

use anyhow::{bail, Context, Result};
use rusqlite::{Connection, ErrorCode, TransactionBehavior};

/// The schema this tlslab writes. A database with a higher `user_version`
/// was written by a newer tlslab and is refused.
pub const SCHEMA_VERSION: i64 = 11;

/// `MIGRATIONS[n]` takes a database from version `n` to `n + 1`; each is a
/// list of SQL batches run in order, all of them in one transaction.
const MIGRATIONS: &[&[&str]] = &[
    &[VERSION_0, VERSION_0_TO_1],
    &[VERSION_1_TO_2],
    &[VERSION_2_TO_3],
    &[VERSION_3_TO_4],
    &[VERSION_4_TO_5],
    &[VERSION_5_TO_6],
    &[VERSION_6_TO_7],
    &[VERSION_7_TO_8],
    &[VERSION_8_TO_9],
    &[VERSION_9_TO_10],
    &[VERSION_10_TO_11],
];

/// The columns of tlslab's `runs` table as version 0 made it. No migration
/// has changed them, and no other tool's table is likely to have exactly
/// these: they are how a file is known as a tlslab database.
const RUNS_COLUMNS: &[&str] = &[
    "id",
    "started_at",
    "finished_at",
    "status",
    "kind",
    "tool_version",
    "command_line",
    "options_json",
    "host_id",
];

/// The columns migrations added to `runs` after [`RUNS_COLUMNS`], each
/// with the version that added it.
const RUNS_COLUMNS_ADDED: &[(i64, &str)] = &[(10, "baseline")];

/// The columns of `runs` at a schema version, in order.
fn runs_columns_at(version: i64) -> Vec<&'static str> {
    let added = RUNS_COLUMNS_ADDED
        .iter()
        .filter(|(since, _)| *since <= version)
        .map(|(_, column)| *column);
    RUNS_COLUMNS.iter().copied().chain(added).collect()
}

/// The latest schema, created directly in a new (empty) database. A
/// migrated database ends up with the same tables and columns, in the same
/// order (see the test `a_migrated_database_matches_a_new_one`).
const LATEST: &str = r#"
CREATE TABLE hosts (
    id INTEGER PRIMARY KEY,
    hostname TEXT NOT NULL,
    cpu_model TEXT NOT NULL,
    cpu_flags TEXT NOT NULL,
    cores INTEGER NOT NULL,
    kernel TEXT NOT NULL,
    os TEXT NOT NULL,
    UNIQUE (hostname, cpu_model, cpu_flags, cores, kernel, os)
);
-- Version 10: `baseline`, the label of the row the run's ratios were
-- taken against, as the run resolved it (NULL: none, or a run stored
-- before version 10).
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    finished_at TEXT,
    status TEXT NOT NULL CHECK (status IN ('incomplete', 'complete')),
    kind TEXT NOT NULL,
    tool_version TEXT NOT NULL,
    command_line TEXT NOT NULL,
    options_json TEXT NOT NULL,
    host_id INTEGER NOT NULL REFERENCES hosts (id),
    baseline TEXT
);
CREATE TABLE libraries (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    backend TEXT NOT NULL,
    library TEXT NOT NULL,
    version TEXT NOT NULL,
    PRIMARY KEY (run_id, backend)
);
-- When each round of the interleaved sampler started, in nanoseconds from
-- the start of sampling (a moment after the run's `started_at`), and
-- (version 7) other processes' CPU use while it ran, in CPUs (NULL where
-- the machine does not say).
CREATE TABLE rounds (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    round INTEGER NOT NULL,
    offset_ns INTEGER NOT NULL,
    others_cpu REAL,
    PRIMARY KEY (run_id, round)
) WITHOUT ROWID;
CREATE TABLE scenarios (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    tls_version TEXT NOT NULL,
    kx_group TEXT NOT NULL,
    cert TEXT NOT NULL,
    aead TEXT NOT NULL,
    resumption TEXT NOT NULL,
    mutual INTEGER NOT NULL,
    chain_depth INTEGER NOT NULL
);
CREATE TABLE cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    scenario_id TEXT NOT NULL REFERENCES scenarios (id),
    backend TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    negotiated_version TEXT,
    negotiated_suite TEXT,
    negotiated_group TEXT,
    negotiated_signature TEXT,
    resumed INTEGER,
    precise INTEGER,
    weak INTEGER NOT NULL,
    security_notes TEXT NOT NULL,
    sample_count INTEGER NOT NULL,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (run_id, scenario_id, backend)
);
-- The round and CPU columns come last, where version 1 added them to
-- version 0's table. The CPU times are NULL in rows from version 0.
CREATE TABLE samples (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    seq INTEGER NOT NULL,
    wall_ns INTEGER NOT NULL,
    client_ns INTEGER NOT NULL,
    server_ns INTEGER NOT NULL,
    round INTEGER NOT NULL DEFAULT 0,
    client_cpu_ns INTEGER,
    server_cpu_ns INTEGER,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
CREATE TABLE speed_cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    row_id TEXT NOT NULL,
    backend TEXT NOT NULL,
    primitive TEXT NOT NULL,
    operation TEXT NOT NULL,
    size_bytes INTEGER,
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    batch INTEGER,
    precise INTEGER,
    sample_count INTEGER NOT NULL,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (run_id, row_id, backend)
);
CREATE TABLE speed_samples (
    cell_id INTEGER NOT NULL REFERENCES speed_cells (id),
    seq INTEGER NOT NULL,
    ns_per_op REAL NOT NULL,
    round INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
CREATE TABLE tunnel_scenarios (
    id TEXT PRIMARY KEY,
    baseline INTEGER NOT NULL,
    cipher TEXT NOT NULL,
    digest TEXT NOT NULL,
    compression TEXT NOT NULL,
    payload TEXT NOT NULL,
    payload_bytes INTEGER NOT NULL
);
CREATE TABLE tunnel_cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    scenario_id TEXT NOT NULL REFERENCES tunnel_scenarios (id),
    engine TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    precise INTEGER,
    weak INTEGER NOT NULL,
    security_notes TEXT NOT NULL,
    sample_count INTEGER NOT NULL,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (run_id, scenario_id, engine)
);
CREATE TABLE tunnel_samples (
    cell_id INTEGER NOT NULL REFERENCES tunnel_cells (id),
    seq INTEGER NOT NULL,
    packets INTEGER NOT NULL,
    payload_bytes INTEGER NOT NULL,
    send_ns INTEGER NOT NULL,
    receive_ns INTEGER NOT NULL,
    round INTEGER NOT NULL DEFAULT 0,
    send_cpu_ns INTEGER,
    receive_cpu_ns INTEGER,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
-- Version 3: `tlslab bulk`; the no-crypto rows have tls_version and
-- suite 'none' and the backend 'none'.
CREATE TABLE bulk_scenarios (
    id TEXT PRIMARY KEY,
    tls_version TEXT NOT NULL,
    suite TEXT NOT NULL,
    write_bytes INTEGER NOT NULL
);
CREATE TABLE bulk_cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    scenario_id TEXT NOT NULL REFERENCES bulk_scenarios (id),
    backend TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    negotiated_version TEXT,
    negotiated_suite TEXT,
    sample_bytes INTEGER NOT NULL,
    precise INTEGER,
    security_notes TEXT NOT NULL,
    sample_count INTEGER NOT NULL,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (run_id, scenario_id, backend)
);
CREATE TABLE bulk_samples (
    cell_id INTEGER NOT NULL REFERENCES bulk_cells (id),
    seq INTEGER NOT NULL,
    round INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    writes INTEGER NOT NULL,
    sender_ns INTEGER NOT NULL,
    receiver_ns INTEGER NOT NULL,
    sender_cpu_ns INTEGER NOT NULL,
    receiver_cpu_ns INTEGER NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
-- Version 4: `tlslab load`: one summary per run; per phase the
-- percentiles the report prints (microseconds; NULL when no request
-- reached the phase) and the HDR histogram's recorded buckets (each
-- bucket's highest equivalent value and its count), from which the report
-- is rebuilt; answers per second; errors by kind; perf's shares.
CREATE TABLE load_summaries (
    run_id INTEGER PRIMARY KEY REFERENCES runs (id),
    scenario_id TEXT NOT NULL,
    scenario TEXT NOT NULL,
    server TEXT NOT NULL,
    mode TEXT NOT NULL,
    rate_per_s REAL NOT NULL,
    ramp_s REAL NOT NULL,
    duration_s REAL NOT NULL,
    page_bytes INTEGER NOT NULL,
    clients INTEGER NOT NULL,
    max_requests INTEGER NOT NULL,
    offered INTEGER NOT NULL,
    sent INTEGER NOT NULL,
    answered INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    handshakes INTEGER NOT NULL,
    resumed_handshakes INTEGER NOT NULL,
    payload_bytes INTEGER NOT NULL,
    elapsed_ns INTEGER NOT NULL,
    achieved_rate_per_s REAL NOT NULL,
    steady_rate_per_s REAL,
    client_cpu_ns INTEGER NOT NULL,
    server_cpu_ns INTEGER,
    profile_unavailable TEXT,
    interrupted INTEGER NOT NULL,
    -- What perf sampled; as JSON, the embedded server's own figures when it was
    -- the target ("embedded") and perf's shares per symbol category
    -- ("symbol_categories": {"Ok": [[category, percent], ...]} or {"Err": why not});
    -- runs stored before the categories hold the bare [figures, backend] pair.
    profile_scope TEXT,
    embedded_json TEXT
);
CREATE TABLE load_errors (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    kind TEXT NOT NULL,
    count INTEGER NOT NULL,
    first_message TEXT NOT NULL,
    PRIMARY KEY (run_id, kind)
) WITHOUT ROWID;
CREATE TABLE load_phases (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    phase TEXT NOT NULL,
    requests INTEGER NOT NULL,
    p50_us INTEGER,
    p90_us INTEGER,
    p99_us INTEGER,
    p999_us INTEGER,
    max_us INTEGER,
    PRIMARY KEY (run_id, phase)
) WITHOUT ROWID;
CREATE TABLE load_histograms (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    phase TEXT NOT NULL,
    latency_us INTEGER NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (run_id, phase, latency_us)
) WITHOUT ROWID;
CREATE TABLE load_seconds (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    second INTEGER NOT NULL,
    answered INTEGER NOT NULL,
    PRIMARY KEY (run_id, second)
) WITHOUT ROWID;
CREATE TABLE load_profile (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    seq INTEGER NOT NULL,
    shared_object TEXT NOT NULL,
    percent REAL NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
-- Version 5: `tlslab handshake --capacity`: per backend and scenario its
-- status and the cost model's server CPU per handshake (ns); per thread
-- count the handshakes that finished inside the window (all threads) and
-- each side's CPU time summed over them.
CREATE TABLE capacity_cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    scenario_id TEXT NOT NULL REFERENCES scenarios (id),
    backend TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    modelled_server_ns REAL,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (run_id, scenario_id, backend)
);
CREATE TABLE capacity_steps (
    cell_id INTEGER NOT NULL REFERENCES capacity_cells (id),
    threads INTEGER NOT NULL,
    handshakes INTEGER NOT NULL,
    window_ns INTEGER NOT NULL,
    server_cpu_ns INTEGER NOT NULL,
    client_cpu_ns INTEGER NOT NULL,
    PRIMARY KEY (cell_id, threads)
) WITHOUT ROWID;
-- Version 6: per second of a load run (by due time), the requests due in
-- it, how many of them were answered and their total latency's
-- percentiles (microseconds, 2 significant digits; NULL when none was
-- answered): latency against offered rate.
CREATE TABLE load_intervals (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    second INTEGER NOT NULL,
    offered INTEGER NOT NULL,
    answered INTEGER NOT NULL,
    p50_us INTEGER,
    p90_us INTEGER,
    p99_us INTEGER,
    max_us INTEGER,
    PRIMARY KEY (run_id, second)
) WITHOUT ROWID;
-- Version 8: the counted measures of handshake, bulk and speed cells (`--measure
-- instructions,memory`); of handshake cells: per cell and measure how counting ended; its
-- samples per side (instructions per handshake; memory as two series,
-- peak_heap_bytes and retained_bytes); for instructions with
-- `--breakdown`, each side's instructions per handshake per category.
CREATE TABLE counts (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    measure TEXT NOT NULL CHECK (measure IN ('instructions', 'memory')),
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    precise INTEGER,
    PRIMARY KEY (cell_id, measure)
) WITHOUT ROWID;
CREATE TABLE count_samples (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    series TEXT NOT NULL CHECK (series IN ('instructions', 'peak_heap_bytes', 'retained_bytes')),
    seq INTEGER NOT NULL,
    client INTEGER NOT NULL,
    server INTEGER NOT NULL,
    PRIMARY KEY (cell_id, series, seq)
) WITHOUT ROWID;
CREATE TABLE count_breakdown (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    side TEXT NOT NULL CHECK (side IN ('client', 'server')),
    category TEXT NOT NULL,
    instructions REAL NOT NULL,
    PRIMARY KEY (cell_id, side, category)
) WITHOUT ROWID;
-- And of bulk cells (`bulk --measure instructions`): how counting ended,
-- and each sample's instructions per side for the cell's sample_bytes.
CREATE TABLE bulk_counts (
    cell_id INTEGER PRIMARY KEY REFERENCES bulk_cells (id),
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    precise INTEGER,
    -- (version 11) the bytes per counted sample; NULL before: the cell's sample_bytes
    sample_bytes INTEGER
);
CREATE TABLE bulk_count_samples (
    cell_id INTEGER NOT NULL REFERENCES bulk_cells (id),
    seq INTEGER NOT NULL,
    sender INTEGER NOT NULL,
    receiver INTEGER NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
-- And of speed cells: how counting ended, the operations per sample, and
-- each sample's instructions for them.
CREATE TABLE speed_counts (
    cell_id INTEGER PRIMARY KEY REFERENCES speed_cells (id),
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    precise INTEGER,
    operations INTEGER NOT NULL
);
CREATE TABLE speed_count_samples (
    cell_id INTEGER NOT NULL REFERENCES speed_cells (id),
    seq INTEGER NOT NULL,
    instructions INTEGER NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
-- Version 9: each handshake cell's bytes on the wire, traced over
-- memory (`turns_json`: the traced handshake's turns, which the network
-- model replays); per network profile (`--network`) the model's time in
-- ms (`model_json`: the rest of its answer) and, over an emulated link
-- (`link`), every handshake's latency from connect() until the client
-- could send application data, with each side's CPU.
CREATE TABLE wire (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    client_bytes INTEGER NOT NULL,
    server_bytes INTEGER NOT NULL,
    client_records INTEGER NOT NULL,
    server_records INTEGER NOT NULL,
    client_flights INTEGER NOT NULL,
    server_flights INTEGER NOT NULL,
    round_trips REAL,
    server_round_trips REAL,
    client_packets INTEGER NOT NULL,
    server_packets INTEGER NOT NULL,
    datagrams INTEGER NOT NULL,
    fragments INTEGER,
    handshakes INTEGER NOT NULL,
    bytes_spread INTEGER NOT NULL,
    turns_json TEXT NOT NULL,
    PRIMARY KEY (cell_id)
) WITHOUT ROWID;
CREATE TABLE network (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    profile TEXT NOT NULL,
    seq INTEGER NOT NULL,
    profile_json TEXT NOT NULL,
    model_ms REAL,
    model_json TEXT,
    link TEXT,
    status TEXT CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    PRIMARY KEY (cell_id, profile)
) WITHOUT ROWID;
CREATE TABLE network_samples (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    profile TEXT NOT NULL,
    seq INTEGER NOT NULL,
    latency_ns INTEGER NOT NULL,
    client_cpu_ns INTEGER NOT NULL,
    server_cpu_ns INTEGER NOT NULL,
    PRIMARY KEY (cell_id, profile, seq)
) WITHOUT ROWID;
-- Version 11: the counted instructions of tunnel cells (`tunnel --measure
-- instructions`, in-process engine): how counting ended, the packets and
-- payload bytes per sample, and each sample's instructions per side (the
-- sender's protect, the receiver's unprotect); and bulk_counts.sample_bytes.
CREATE TABLE tunnel_counts (
    cell_id INTEGER PRIMARY KEY REFERENCES tunnel_cells (id),
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    precise INTEGER,
    packets INTEGER NOT NULL,
    payload_bytes INTEGER NOT NULL
);
CREATE TABLE tunnel_count_samples (
    cell_id INTEGER NOT NULL REFERENCES tunnel_cells (id),
    seq INTEGER NOT NULL,
    sender INTEGER NOT NULL,
    receiver INTEGER NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
"#;

/// Version 0: the schema as it landed, before `user_version` was set.
/// Every version-0 tlslab ran it on each open, so the first migration runs
/// it too: a file made before `speed` or `tunnel` existed gets their tables
/// as they were. Frozen: never edit it, add a migration instead.
pub(super) const VERSION_0: &str = r#"
CREATE TABLE IF NOT EXISTS hosts (
    id INTEGER PRIMARY KEY,
    hostname TEXT NOT NULL,
    cpu_model TEXT NOT NULL,
    cpu_flags TEXT NOT NULL,
    cores INTEGER NOT NULL,
    kernel TEXT NOT NULL,
    os TEXT NOT NULL,
    UNIQUE (hostname, cpu_model, cpu_flags, cores, kernel, os)
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    finished_at TEXT,
    status TEXT NOT NULL CHECK (status IN ('incomplete', 'complete')),
    kind TEXT NOT NULL,
    tool_version TEXT NOT NULL,
    command_line TEXT NOT NULL,
    options_json TEXT NOT NULL,
    host_id INTEGER NOT NULL REFERENCES hosts (id)
);
CREATE TABLE IF NOT EXISTS libraries (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    backend TEXT NOT NULL,
    library TEXT NOT NULL,
    version TEXT NOT NULL,
    PRIMARY KEY (run_id, backend)
);
CREATE TABLE IF NOT EXISTS scenarios (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    tls_version TEXT NOT NULL,
    kx_group TEXT NOT NULL,
    cert TEXT NOT NULL,
    aead TEXT NOT NULL,
    resumption TEXT NOT NULL,
    mutual INTEGER NOT NULL,
    chain_depth INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    scenario_id TEXT NOT NULL REFERENCES scenarios (id),
    backend TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    negotiated_version TEXT,
    negotiated_suite TEXT,
    negotiated_group TEXT,
    negotiated_signature TEXT,
    resumed INTEGER,
    precise INTEGER,
    weak INTEGER NOT NULL,
    security_notes TEXT NOT NULL,
    sample_count INTEGER NOT NULL,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (run_id, scenario_id, backend)
);
CREATE TABLE IF NOT EXISTS samples (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    seq INTEGER NOT NULL,
    wall_ns INTEGER NOT NULL,
    client_ns INTEGER NOT NULL,
    server_ns INTEGER NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS speed_cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    row_id TEXT NOT NULL,
    backend TEXT NOT NULL,
    primitive TEXT NOT NULL,
    operation TEXT NOT NULL,
    size_bytes INTEGER,
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    batch INTEGER,
    precise INTEGER,
    sample_count INTEGER NOT NULL,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (run_id, row_id, backend)
);
CREATE TABLE IF NOT EXISTS speed_samples (
    cell_id INTEGER NOT NULL REFERENCES speed_cells (id),
    seq INTEGER NOT NULL,
    ns_per_op REAL NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS tunnel_scenarios (
    id TEXT PRIMARY KEY,
    baseline INTEGER NOT NULL,
    cipher TEXT NOT NULL,
    digest TEXT NOT NULL,
    compression TEXT NOT NULL,
    payload TEXT NOT NULL,
    payload_bytes INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tunnel_cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    scenario_id TEXT NOT NULL REFERENCES tunnel_scenarios (id),
    engine TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    precise INTEGER,
    weak INTEGER NOT NULL,
    security_notes TEXT NOT NULL,
    sample_count INTEGER NOT NULL,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (run_id, scenario_id, engine)
);
CREATE TABLE IF NOT EXISTS tunnel_samples (
    cell_id INTEGER NOT NULL REFERENCES tunnel_cells (id),
    seq INTEGER NOT NULL,
    packets INTEGER NOT NULL,
    payload_bytes INTEGER NOT NULL,
    send_ns INTEGER NOT NULL,
    receive_ns INTEGER NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
"#;

/// Version 1: every sample knows its round, the rounds' start times are
/// kept per run, and handshake samples have each side's CPU time.
const VERSION_0_TO_1: &str = r#"
ALTER TABLE samples ADD COLUMN round INTEGER NOT NULL DEFAULT 0;
ALTER TABLE samples ADD COLUMN client_cpu_ns INTEGER;
ALTER TABLE samples ADD COLUMN server_cpu_ns INTEGER;
ALTER TABLE speed_samples ADD COLUMN round INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tunnel_samples ADD COLUMN round INTEGER NOT NULL DEFAULT 0;
CREATE TABLE rounds (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    round INTEGER NOT NULL,
    offset_ns INTEGER NOT NULL,
    PRIMARY KEY (run_id, round)
) WITHOUT ROWID;
"#;

/// Version 2: in-process tunnel samples have the thread's CPU time of each
/// end (NULL in older rows: read back as their wall time).
const VERSION_1_TO_2: &str = r#"
ALTER TABLE tunnel_samples ADD COLUMN send_cpu_ns INTEGER;
ALTER TABLE tunnel_samples ADD COLUMN receive_cpu_ns INTEGER;
"#;

/// Version 3: `tlslab bulk` rows, their cells per backend and every sample
/// with each side's time.
const VERSION_2_TO_3: &str = r#"
CREATE TABLE bulk_scenarios (
    id TEXT PRIMARY KEY,
    tls_version TEXT NOT NULL,
    suite TEXT NOT NULL,
    write_bytes INTEGER NOT NULL
);
CREATE TABLE bulk_cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    scenario_id TEXT NOT NULL REFERENCES bulk_scenarios (id),
    backend TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    negotiated_version TEXT,
    negotiated_suite TEXT,
    sample_bytes INTEGER NOT NULL,
    precise INTEGER,
    security_notes TEXT NOT NULL,
    sample_count INTEGER NOT NULL,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (run_id, scenario_id, backend)
);
CREATE TABLE bulk_samples (
    cell_id INTEGER NOT NULL REFERENCES bulk_cells (id),
    seq INTEGER NOT NULL,
    round INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    writes INTEGER NOT NULL,
    sender_ns INTEGER NOT NULL,
    receiver_ns INTEGER NOT NULL,
    sender_cpu_ns INTEGER NOT NULL,
    receiver_cpu_ns INTEGER NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
"#;

/// Version 4: `tlslab load` runs (see the latest schema's comment).
const VERSION_3_TO_4: &str = r#"
CREATE TABLE load_summaries (
    run_id INTEGER PRIMARY KEY REFERENCES runs (id),
    scenario_id TEXT NOT NULL,
    scenario TEXT NOT NULL,
    server TEXT NOT NULL,
    mode TEXT NOT NULL,
    rate_per_s REAL NOT NULL,
    ramp_s REAL NOT NULL,
    duration_s REAL NOT NULL,
    page_bytes INTEGER NOT NULL,
    clients INTEGER NOT NULL,
    max_requests INTEGER NOT NULL,
    offered INTEGER NOT NULL,
    sent INTEGER NOT NULL,
    answered INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    handshakes INTEGER NOT NULL,
    resumed_handshakes INTEGER NOT NULL,
    payload_bytes INTEGER NOT NULL,
    elapsed_ns INTEGER NOT NULL,
    achieved_rate_per_s REAL NOT NULL,
    steady_rate_per_s REAL,
    client_cpu_ns INTEGER NOT NULL,
    server_cpu_ns INTEGER,
    profile_unavailable TEXT,
    interrupted INTEGER NOT NULL,
    -- What perf sampled, and the embedded server's own figures (JSON) when it was the target.
    profile_scope TEXT,
    embedded_json TEXT
);
CREATE TABLE load_errors (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    kind TEXT NOT NULL,
    count INTEGER NOT NULL,
    first_message TEXT NOT NULL,
    PRIMARY KEY (run_id, kind)
) WITHOUT ROWID;
CREATE TABLE load_phases (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    phase TEXT NOT NULL,
    requests INTEGER NOT NULL,
    p50_us INTEGER,
    p90_us INTEGER,
    p99_us INTEGER,
    p999_us INTEGER,
    max_us INTEGER,
    PRIMARY KEY (run_id, phase)
) WITHOUT ROWID;
CREATE TABLE load_histograms (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    phase TEXT NOT NULL,
    latency_us INTEGER NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (run_id, phase, latency_us)
) WITHOUT ROWID;
CREATE TABLE load_seconds (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    second INTEGER NOT NULL,
    answered INTEGER NOT NULL,
    PRIMARY KEY (run_id, second)
) WITHOUT ROWID;
CREATE TABLE load_profile (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    seq INTEGER NOT NULL,
    shared_object TEXT NOT NULL,
    percent REAL NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
"#;

/// Version 5: `tlslab handshake --capacity` cells and their steps (see
/// the latest schema's comment).
const VERSION_4_TO_5: &str = r#"
CREATE TABLE capacity_cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    scenario_id TEXT NOT NULL REFERENCES scenarios (id),
    backend TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    modelled_server_ns REAL,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (run_id, scenario_id, backend)
);
CREATE TABLE capacity_steps (
    cell_id INTEGER NOT NULL REFERENCES capacity_cells (id),
    threads INTEGER NOT NULL,
    handshakes INTEGER NOT NULL,
    window_ns INTEGER NOT NULL,
    server_cpu_ns INTEGER NOT NULL,
    client_cpu_ns INTEGER NOT NULL,
    PRIMARY KEY (cell_id, threads)
) WITHOUT ROWID;
"#;

/// Version 6: a load run's latency percentiles per second (see the latest
/// schema's comment).
const VERSION_5_TO_6: &str = r#"
CREATE TABLE load_intervals (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    second INTEGER NOT NULL,
    offered INTEGER NOT NULL,
    answered INTEGER NOT NULL,
    p50_us INTEGER,
    p90_us INTEGER,
    p99_us INTEGER,
    max_us INTEGER,
    PRIMARY KEY (run_id, second)
) WITHOUT ROWID;
"#;

/// Version 7: other processes' CPU use per round (see the latest schema's
/// comment).
const VERSION_6_TO_7: &str = r#"
ALTER TABLE rounds ADD COLUMN others_cpu REAL;
"#;

/// Version 8: the counted measures of handshake cells.
const VERSION_7_TO_8: &str = r#"
CREATE TABLE counts (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    measure TEXT NOT NULL CHECK (measure IN ('instructions', 'memory')),
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    precise INTEGER,
    PRIMARY KEY (cell_id, measure)
) WITHOUT ROWID;
CREATE TABLE count_samples (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    series TEXT NOT NULL CHECK (series IN ('instructions', 'peak_heap_bytes', 'retained_bytes')),
    seq INTEGER NOT NULL,
    client INTEGER NOT NULL,
    server INTEGER NOT NULL,
    PRIMARY KEY (cell_id, series, seq)
) WITHOUT ROWID;
CREATE TABLE count_breakdown (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    side TEXT NOT NULL CHECK (side IN ('client', 'server')),
    category TEXT NOT NULL,
    instructions REAL NOT NULL,
    PRIMARY KEY (cell_id, side, category)
) WITHOUT ROWID;
-- And of bulk cells (`bulk --measure instructions`): how counting ended,
-- and each sample's instructions per side for the cell's sample_bytes.
CREATE TABLE bulk_counts (
    cell_id INTEGER PRIMARY KEY REFERENCES bulk_cells (id),
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    precise INTEGER
);
CREATE TABLE bulk_count_samples (
    cell_id INTEGER NOT NULL REFERENCES bulk_cells (id),
    seq INTEGER NOT NULL,
    sender INTEGER NOT NULL,
    receiver INTEGER NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
-- And of speed cells: how counting ended, the operations per sample, and
-- each sample's instructions for them.
CREATE TABLE speed_counts (
    cell_id INTEGER PRIMARY KEY REFERENCES speed_cells (id),
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    precise INTEGER,
    operations INTEGER NOT NULL
);
CREATE TABLE speed_count_samples (
    cell_id INTEGER NOT NULL REFERENCES speed_cells (id),
    seq INTEGER NOT NULL,
    instructions INTEGER NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
"#;

/// Version 9: wire figures and network results of handshake cells.
const VERSION_8_TO_9: &str = r#"
CREATE TABLE wire (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    client_bytes INTEGER NOT NULL,
    server_bytes INTEGER NOT NULL,
    client_records INTEGER NOT NULL,
    server_records INTEGER NOT NULL,
    client_flights INTEGER NOT NULL,
    server_flights INTEGER NOT NULL,
    round_trips REAL,
    server_round_trips REAL,
    client_packets INTEGER NOT NULL,
    server_packets INTEGER NOT NULL,
    datagrams INTEGER NOT NULL,
    fragments INTEGER,
    handshakes INTEGER NOT NULL,
    bytes_spread INTEGER NOT NULL,
    turns_json TEXT NOT NULL,
    PRIMARY KEY (cell_id)
) WITHOUT ROWID;
CREATE TABLE network (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    profile TEXT NOT NULL,
    seq INTEGER NOT NULL,
    profile_json TEXT NOT NULL,
    model_ms REAL,
    model_json TEXT,
    link TEXT,
    status TEXT CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    PRIMARY KEY (cell_id, profile)
) WITHOUT ROWID;
CREATE TABLE network_samples (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    profile TEXT NOT NULL,
    seq INTEGER NOT NULL,
    latency_ns INTEGER NOT NULL,
    client_cpu_ns INTEGER NOT NULL,
    server_cpu_ns INTEGER NOT NULL,
    PRIMARY KEY (cell_id, profile, seq)
) WITHOUT ROWID;
"#;

/// Version 10: the baseline row each run's ratios were taken against.
const VERSION_9_TO_10: &str = r#"
ALTER TABLE runs ADD COLUMN baseline TEXT;
"#;

/// Version 11: the counted instructions of tunnel cells, and the bytes
/// per counted bulk sample.
const VERSION_10_TO_11: &str = r#"
ALTER TABLE bulk_counts ADD COLUMN sample_bytes INTEGER;
CREATE TABLE tunnel_counts (
    cell_id INTEGER PRIMARY KEY REFERENCES tunnel_cells (id),
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    precise INTEGER,
    packets INTEGER NOT NULL,
    payload_bytes INTEGER NOT NULL
);
CREATE TABLE tunnel_count_samples (
    cell_id INTEGER NOT NULL REFERENCES tunnel_cells (id),
    seq INTEGER NOT NULL,
    sender INTEGER NOT NULL,
    receiver INTEGER NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
"#;

/// What a database holds before it is touched.
struct Found {
    /// Every table, SQLite's own excepted.
    tables: Vec<String>,
    /// `PRAGMA user_version`.
    version: i64,
    /// The columns of its `runs` table, in order (empty without one).
    runs_columns: Vec<String>,
}

impl Found {
    /// Reads the tables and the version; `name` names the file in errors.
    fn read(connection: &Connection, name: &str) -> Result<Self> {
        let tables = connection
            .prepare(
                "SELECT name FROM sqlite_master
                 WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!'
                 ORDER BY name",
            )
            .and_then(|mut statement| {
                statement
                    .query_map([], |row| row.get(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()
            });
        let tables = match tables {
            Ok(tables) => tables,
            Err(error) if error.sqlite_error_code() == Some(ErrorCode::NotADatabase) => {
                bail!("{name} is not a tlslab database (not SQLite)")
            }
            Err(error) => {
                return Err(error).with_context(|| format!("cannot read the database {name}"))
            }
        };
        let version = connection
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .with_context(|| format!("cannot read the schema version of {name}"))?;
        let runs_columns = connection
            .prepare("SELECT name FROM pragma_table_info('runs') ORDER BY cid")
            .and_then(|mut statement| {
                statement
                    .query_map([], |row| row.get(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()
            })
            .with_context(|| format!("cannot read the database {name}"))?;
        Ok(Self {
            tables,
            version,
            runs_columns,
        })
    }

    /// Refuses a database from another tool or from a newer tlslab: a
    /// tlslab database is empty, or its `runs` table has exactly tlslab's
    /// columns for its version.
    fn check(&self, name: &str) -> Result<()> {
        // Tables without `runs` are someone else's, whatever their version says.
        if !self.tables.is_empty() && !self.tables.iter().any(|t| t == "runs") {
            bail!(
                "{name} is not a tlslab database: it has tables ({}) but no `runs` table",
                self.tables.join(", ")
            );
        }
        if self.version < 0 {
            bail!(
                "{name} is not a tlslab database (schema version {})",
                self.version
            );
        }
        // A `runs` table of someone else's: tlslab's has exactly its
        // columns (a newer tlslab's may have more after them).
        if !self.tables.is_empty() {
            let expected = runs_columns_at(self.version.min(SCHEMA_VERSION));
            let found: Vec<&str> = self.runs_columns.iter().map(String::as_str).collect();
            let ours = if self.version > SCHEMA_VERSION {
                found.starts_with(&expected)
            } else {
                found == expected
            };
            if !ours {
                bail!(
                    "{name} is not a tlslab database: its `runs` table has the columns ({}), \
                     not tlslab's ({})",
                    found.join(", "),
                    expected.join(", ")
                );
            }
        }
        if self.version > SCHEMA_VERSION {
            bail!(
                "the database {name} was written by a newer tlslab (schema version {}; \
                 this tlslab knows up to {SCHEMA_VERSION})",
                self.version
            );
        }
        Ok(())
    }

    /// True if and only if the database has tables at the latest version.
    fn is_current(&self) -> bool {
        !self.tables.is_empty() && self.version == SCHEMA_VERSION
    }
}

/// Checks that a database opened read-only is a tlslab database that this
/// tlslab can read (see [`Found::check`]) and returns its schema version;
/// an empty file is refused, as it holds no run.
pub(super) fn check_input(connection: &Connection, name: &str) -> Result<i64> {
    let found = Found::read(connection, name)?;
    found.check(name)?;
    if found.tables.is_empty() {
        bail!("{name} is not a tlslab database (it has no tables)");
    }
    Ok(found.version)
}

/// Creates the latest schema in an empty database, or migrates an older
/// one, in one transaction; refuses a file that is not a tlslab database
/// or is newer than this code.
pub(super) fn bring_up_to_date(connection: &mut Connection, name: &str) -> Result<()> {
    let found = Found::read(connection, name)?;
    found.check(name)?;
    if found.is_current() {
        return Ok(());
    }
    // Read again under the write lock: another tlslab may have migrated the
    // file in between.
    let tx = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .with_context(|| format!("cannot write to the database {name}"))?;
    let found = Found::read(&tx, name)?;
    found.check(name)?;
    if found.is_current() {
        return Ok(());
    }
    if found.tables.is_empty() {
        tx.execute_batch(LATEST)
            .with_context(|| format!("cannot create the tables in {name}"))?;
    } else {
        for (from, batches) in MIGRATIONS.iter().enumerate().skip(found.version as usize) {
            for batch in batches.iter() {
                tx.execute_batch(batch).with_context(|| {
                    format!(
                        "cannot migrate the database {name} from schema version {from} to {}",
                        from + 1
                    )
                })?;
            }
        }
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()
        .with_context(|| format!("cannot write to the database {name}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every table's columns as SQLite describes them (name, type, not
    /// null, default, primary key position), table by table.
    fn layout(connection: &Connection) -> Vec<(String, Vec<String>)> {
        let tables = Found::read(connection, "test").unwrap().tables;
        tables
            .into_iter()
            .map(|table| {
                let mut statement = connection
                    .prepare(
                        "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1)",
                    )
                    .unwrap();
                let columns = statement
                    .query_map([&table], |row| {
                        Ok(format!(
                            "{} {} notnull={} default={:?} pk={}",
                            row.get::<_, String>(0)?,
                            row.get::<_, String>(1)?,
                            row.get::<_, i64>(2)?,
                            row.get::<_, Option<String>>(3)?,
                            row.get::<_, i64>(4)?
                        ))
                    })
                    .unwrap()
                    .collect::<rusqlite::Result<Vec<_>>>()
                    .unwrap();
                (table, columns)
            })
            .collect()
    }

    #[test]
    fn a_migrated_database_matches_a_new_one() {
        let mut new = Connection::open_in_memory().unwrap();
        bring_up_to_date(&mut new, "new").unwrap();
        let mut old = Connection::open_in_memory().unwrap();
        old.execute_batch(VERSION_0).unwrap();
        bring_up_to_date(&mut old, "old").unwrap();
        assert_eq!(layout(&old), layout(&new));
        assert!(layout(&new).iter().any(|(table, _)| table == "rounds"));
    }

    #[test]
    fn every_version_below_the_latest_has_a_migration() {
        assert_eq!(MIGRATIONS.len() as i64, SCHEMA_VERSION);
    }
}
