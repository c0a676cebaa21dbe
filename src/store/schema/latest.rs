//! The latest schema, as a new database gets it: every table with a
//! comment on what it holds. A migrated database ends up with the same
//! tables and columns, in the same order.

/// The latest schema, created directly in a new (empty) database. A
/// migrated database ends up with the same tables and columns, in the same
/// order (see the test `a_migrated_database_matches_a_new_one`).
pub(super) const LATEST: &str = r#"
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
-- Version 13: `subject_kind`, what `backend` names: a library (a
-- backend), a server under test, a tunnel engine, or 'plain' (no library).
CREATE TABLE libraries (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    backend TEXT NOT NULL,
    library TEXT NOT NULL,
    version TEXT NOT NULL,
    subject_kind TEXT NOT NULL DEFAULT 'library' CHECK (subject_kind IN ('library', 'server', 'engine', 'plain')),
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
-- Version 13: `subject_kind`, what `backend` names: a library or a
-- server under test (`handshake --server`).
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
    subject_kind TEXT NOT NULL DEFAULT 'library' CHECK (subject_kind IN ('library', 'server', 'engine', 'plain')),
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
-- suite 'none' and the backend 'none' (version 13: subject_kind 'plain').
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
    subject_kind TEXT NOT NULL DEFAULT 'library' CHECK (subject_kind IN ('library', 'server', 'engine', 'plain')),
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
-- Version 12: the connection set-up of tunnel engines (`tunnel --setup`):
-- one cell per engine, kind (a new tunnel, a renegotiation) and run,
-- what a sample covers, and each sample's
-- CPU per side (the initiator's, the responder's), wall time, and bytes
-- and messages each way; counted set-ups: how counting ended and each
-- sample's instructions (sender: the initiator, receiver: the responder).
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
