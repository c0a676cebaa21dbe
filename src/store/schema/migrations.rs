//! The schema as it first landed (version 0) and the migrations that bring
//! an older file up to date, one SQL batch per version. Frozen: a change of
//! the layout is a new migration (and the same change in [`LATEST`]).
//!
//! [`LATEST`]: super::latest::LATEST

/// `MIGRATIONS[n]` takes a database from version `n` to `n + 1`; each is a
/// list of SQL batches run in order, all of them in one transaction.
pub(super) const MIGRATIONS: &[&[&str]] = &[
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
    &[VERSION_11_TO_12],
    &[VERSION_12_TO_13],
];

/// Version 0: the schema as it landed, before `user_version` was set.
/// Every version-0 tlslab ran it on each open, so the first migration runs
/// it too: a file made before `speed` or `tunnel` existed gets their tables
/// as they were. Frozen: never edit it, add a migration instead.
pub(in crate::store) const VERSION_0: &str = r#"
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

/// Version 12: the connection set-up of tunnel engines (`tunnel --setup`).
const VERSION_11_TO_12: &str = r#"
CREATE TABLE tunnel_setup_cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    engine TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('connect', 'renegotiate')),
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    precise INTEGER,
    covers TEXT NOT NULL,
    sample_count INTEGER NOT NULL,
    counted_status TEXT CHECK (counted_status IN ('measured', 'unsupported', 'failed')),
    counted_reason TEXT,
    counted_precise INTEGER,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (run_id, engine, kind)
);
CREATE TABLE tunnel_setup_samples (
    cell_id INTEGER NOT NULL REFERENCES tunnel_setup_cells (id),
    seq INTEGER NOT NULL,
    round INTEGER NOT NULL,
    initiator_cpu_ns INTEGER NOT NULL,
    responder_cpu_ns INTEGER NOT NULL,
    wall_ns INTEGER NOT NULL,
    bytes_to_responder INTEGER NOT NULL,
    bytes_to_initiator INTEGER NOT NULL,
    messages_to_responder INTEGER NOT NULL,
    messages_to_initiator INTEGER NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
CREATE TABLE tunnel_setup_count_samples (
    cell_id INTEGER NOT NULL REFERENCES tunnel_setup_cells (id),
    seq INTEGER NOT NULL,
    sender INTEGER NOT NULL,
    receiver INTEGER NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
"#;

/// Version 13: each row's subject is typed: `subject_kind` beside the
/// name in `backend`. Rows stored before it are read by their names,
/// which never clashed: the servers under test, bulk's plain rows, the
/// tunnel engines in `libraries`, and libraries (backends) for the rest.
const VERSION_12_TO_13: &str = r#"
ALTER TABLE libraries ADD COLUMN subject_kind TEXT NOT NULL DEFAULT 'library' CHECK (subject_kind IN ('library', 'server', 'engine', 'plain'));
ALTER TABLE cells ADD COLUMN subject_kind TEXT NOT NULL DEFAULT 'library' CHECK (subject_kind IN ('library', 'server', 'engine', 'plain'));
ALTER TABLE bulk_cells ADD COLUMN subject_kind TEXT NOT NULL DEFAULT 'library' CHECK (subject_kind IN ('library', 'server', 'engine', 'plain'));
UPDATE libraries SET subject_kind = CASE
    WHEN backend IN ('nginx', 'apache', 'haproxy', 'caddy', 'embedded') THEN 'server'
    WHEN backend = 'none' THEN 'plain'
    WHEN replace(backend, ' (generic)', '') IN
        ('inprocess', 'openvpn', 'openvpn-tls', 'wireguard', 'wireguard-go') THEN 'engine'
    ELSE 'library' END;
UPDATE cells SET subject_kind = 'server'
    WHERE backend IN ('nginx', 'apache', 'haproxy', 'caddy');
UPDATE bulk_cells SET subject_kind = 'plain' WHERE backend = 'none';
"#;
