//! The handshake tables: handshake scenarios, cells per backend with what
//! was negotiated, and every raw sample with each side's time and its
//! round; the counts beside a cell (instructions, heap bytes, the wire, the
//! networks) are in [`counts`](super::counts). The samples are committed
//! round by round as they are taken, each cell's end when it stops, so a
//! run killed at any moment keeps every round that ended.

use anyhow::Result;
use rusqlite::types::Value;
use rusqlite::{params, Connection};

use super::cells::{self, Columns, SampledCell};
use super::{counts, outcome_from_columns, Store};
use crate::backend::Negotiated;
use crate::measure::{Outcome, Timed};
use crate::scenario::{parse_name, HandshakeScenario, Named};
use crate::workload::handshake::{CellResult, Sample};

impl Store {
    /// Commits one finished cell with all its samples: the samples its
    /// rounds stored already ([`Store::save_handshake_samples`]) stay, the
    /// rest are added, and its end (status, what was negotiated, whether
    /// precise, its counts) is set. A cell that ended without being
    /// measured keeps no sample.
    pub fn save_cell(&mut self, run_id: i64, cell: &CellResult) -> Result<()> {
        cells::save_end(&mut self.connection, run_id, cell)
    }

    /// Commits one round's samples of handshake cells still sampling, in
    /// one transaction ([`cells::save_round`]).
    pub fn save_handshake_samples(
        &mut self,
        run_id: i64,
        taken: &[(&CellResult, &[Timed<Sample>])],
    ) -> Result<()> {
        cells::save_round(&mut self.connection, run_id, taken)
    }

    /// Reads a run's handshake cells back, each with its samples and counts,
    /// in the order they were first stored.
    pub(super) fn load_cells(&self, run_id: i64) -> Result<Vec<CellResult>> {
        let mut statement = self.connection.prepare(
            "SELECT c.id, c.backend, c.status, c.reason, c.negotiated_version, c.negotiated_suite,
                    c.negotiated_group, c.negotiated_signature, c.resumed, c.precise,
                    s.tls_version, s.kx_group, s.cert, s.aead, s.resumption, s.mutual, s.chain_depth,
                    s.id, c.subject_kind
             FROM cells c JOIN scenarios s ON s.id = c.scenario_id
             WHERE c.run_id = ?1 ORDER BY c.id",
        )?;
        let rows = statement.query_map([run_id], |row| {
            Ok(StoredCellRow {
                cell_id: row.get(0)?,
                subject_name: row.get(1)?,
                status: row.get(2)?,
                reason: row.get(3)?,
                version: row.get(4)?,
                suite: row.get(5)?,
                group: row.get(6)?,
                signature: row.get(7)?,
                resumed: row.get(8)?,
                precise: row.get(9)?,
                axes: [
                    row.get(10)?,
                    row.get(11)?,
                    row.get(12)?,
                    row.get(13)?,
                    row.get(14)?,
                ],
                mutual: row.get(15)?,
                chain_depth: row.get(16)?,
                label: row.get(17)?,
                subject_kind: row.get(18)?,
            })
        })?;
        // Samples from schema version 0 have no CPU times: they read as the
        // wall-clock time inside the calls (which includes the CPU time), so
        // old runs still show a number rather than zero.
        let mut samples_query = self.connection.prepare(
            "SELECT round, wall_ns, client_ns, server_ns, coalesce(client_cpu_ns, client_ns),
                    coalesce(server_cpu_ns, server_ns)
             FROM samples WHERE cell_id = ?1 ORDER BY seq",
        )?;
        let mut cells = Vec::new();
        for row in rows {
            let row = row?;
            let scenario =
                scenario_from_columns(&row.axes, row.mutual, row.chain_depth, &row.label)?;
            let outcome = outcome_from_columns(&row.status, row.reason, row.precise, || {
                Ok(samples_query
                    .query_map([row.cell_id], |r| {
                        Ok(Timed {
                            round: r.get(0)?,
                            value: Sample {
                                wall_ns: r.get::<_, i64>(1)? as u64,
                                client_ns: r.get::<_, i64>(2)? as u64,
                                server_ns: r.get::<_, i64>(3)? as u64,
                                client_cpu_ns: r.get::<_, i64>(4)? as u64,
                                server_cpu_ns: r.get::<_, i64>(5)? as u64,
                            },
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?)
            })?;
            // Stored whenever the cell had one (in practice, measured cells).
            let negotiated = row.version.map(|version| Negotiated {
                version,
                suite: row.suite.unwrap_or_default(),
                group: row.group,
                signature: row.signature,
                resumed: row.resumed.unwrap_or(false),
                alpn: None,
                early_data: scenario.resumption.sends_early_data(),
            });
            cells.push(CellResult {
                counts: counts::read_counts(&self.connection, row.cell_id)?,
                subject: cells::read_subject(&row.subject_kind, &row.subject_name)?,
                scenario,
                negotiated,
                outcome,
            });
        }
        Ok(cells)
    }
}

/// A handshake cell: its row in `cells` (its scenario in `scenarios`),
/// its samples in `samples`, its counts (instructions, heap bytes, the
/// wire, the networks) in the tables of [`counts`].
impl SampledCell for CellResult {
    type Sample = Sample;
    const CELLS: &'static str = "cells";
    const SAMPLES: &'static str = "samples";
    const KEY_COLUMNS: [&'static str; 2] = ["scenario_id", "backend"];
    const NAME: &'static str = "cell";
    const SAMPLE_COLUMNS: &'static [&'static str] = &[
        "wall_ns",
        "client_ns",
        "server_ns",
        "client_cpu_ns",
        "server_cpu_ns",
    ];

    fn key(&self) -> [String; 2] {
        [self.scenario.label(), self.subject.name()]
    }

    fn outcome(&self) -> &Outcome<Sample> {
        &self.outcome
    }

    fn save_scenario(&self, tx: &Connection) -> Result<()> {
        save_scenario(tx, &self.scenario).map(drop)
    }

    fn first_columns(&self) -> Columns {
        vec![
            (
                "subject_kind",
                Value::from(self.subject.kind().id().to_string()),
            ),
            ("weak", Value::from(self.scenario.is_weak())),
            (
                "security_notes",
                Value::from(self.scenario.security_notes().join("; ")),
            ),
        ]
    }

    /// What its preparing handshake negotiated, set again at its end.
    fn end_columns(&self) -> Columns {
        let negotiated = self.negotiated.as_ref();
        vec![
            (
                "negotiated_version",
                Value::from(negotiated.map(|n| n.version.clone())),
            ),
            (
                "negotiated_suite",
                Value::from(negotiated.map(|n| n.suite.clone())),
            ),
            (
                "negotiated_group",
                Value::from(negotiated.and_then(|n| n.group.clone())),
            ),
            (
                "negotiated_signature",
                Value::from(negotiated.and_then(|n| n.signature.clone())),
            ),
            ("resumed", Value::from(negotiated.map(|n| n.resumed))),
        ]
    }

    fn sample_values(sample: &Sample) -> Vec<Value> {
        [
            sample.wall_ns,
            sample.client_ns,
            sample.server_ns,
            sample.client_cpu_ns,
            sample.server_cpu_ns,
        ]
        .map(|number| Value::from(number as i64))
        .to_vec()
    }

    fn replace_counts(&self, tx: &Connection, cell_id: i64) -> Result<()> {
        counts::delete_counts(tx, cell_id)?;
        counts::write_counts(tx, cell_id, &self.counts)
    }
}

/// Adds a handshake scenario to `scenarios` unless it is there; returns its id (its label).
pub(super) fn save_scenario(connection: &Connection, s: &HandshakeScenario) -> Result<String> {
    let label = s.label();
    connection.execute(
        "INSERT OR IGNORE INTO scenarios
         (id, kind, tls_version, kx_group, cert, aead, resumption, mutual, chain_depth)
         VALUES (?1, 'handshake', ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            label,
            s.version.id(),
            s.group.id(),
            s.cert.id(),
            s.aead.id(),
            s.resumption.id(),
            s.mutual,
            s.chain_depth
        ],
    )?;
    Ok(label)
}

/// A handshake scenario from its row of `scenarios`: the axes (version,
/// group, certificate, suite, resumption), mutual, chain depth and its id,
/// which carries what has no column (a DTLS row's MTU, the transport).
pub(super) fn scenario_from_columns(
    axes: &[String; 5],
    mutual: bool,
    chain_depth: u8,
    label: &str,
) -> Result<HandshakeScenario> {
    let [version, group, cert, aead, resumption] = axes;
    let version = parse_name(version)?;
    Ok(HandshakeScenario {
        version,
        group: parse_name(group)?,
        cert: parse_name(cert)?,
        aead: parse_name(aead)?,
        resumption: parse_name(resumption)?,
        mutual,
        chain_depth,
        mtu_bytes: HandshakeScenario::mtu_from_label(version, label),
        transport: crate::scenario::Transport::from_label(label),
    })
}

/// One row of `cells` joined with its scenario.
struct StoredCellRow {
    cell_id: i64,
    /// The subject's name (the `backend` column), read with `subject_kind`.
    subject_name: String,
    status: String,
    reason: Option<String>,
    version: Option<String>,
    suite: Option<String>,
    group: Option<String>,
    signature: Option<String>,
    resumed: Option<bool>,
    precise: Option<bool>,
    axes: [String; 5],
    mutual: bool,
    chain_depth: u8,
    /// The scenario id: it carries a DTLS row's MTU, which has no column.
    label: String,
    subject_kind: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Outcome;
    use crate::scenario::{Aead, CertKind, Group, Resumption, TlsVersion};
    use crate::store::fixtures::{handshake_run_info as run_info, measured_cell, scenario};
    use crate::store::{RunKind, RunStatus};

    #[test]
    fn a_run_round_trips() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store.begin_run(&run_info()).unwrap();
        let measured = measured_cell();
        let unsupported = CellResult {
            counts: Default::default(),
            scenario: HandshakeScenario {
                group: Group::X448,
                ..scenario()
            },
            negotiated: None,
            outcome: Outcome::Unsupported {
                reason: "no X448".into(),
            },
            ..measured_cell()
        };
        let failed = CellResult {
            counts: Default::default(),
            subject: crate::scenario::Subject::from_name("openssl").unwrap(),
            negotiated: None,
            outcome: Outcome::Failed {
                reason: "broke in round 3".into(),
            },
            ..measured_cell()
        };
        store.save_cell(run, &measured).unwrap();
        store.save_cell(run, &unsupported).unwrap();
        store.save_cell(run, &failed).unwrap();

        let loaded = store.load_run(run).unwrap();
        assert_eq!(loaded.status, RunStatus::Incomplete);
        assert_eq!(loaded.kind, RunKind::Handshake);
        assert_eq!(loaded.cells, vec![measured, unsupported, failed]);
        assert_eq!(loaded.libraries, run_info().libraries);
        store.finish_run(run, true).unwrap();
        assert_eq!(store.load_run(run).unwrap().status, RunStatus::Complete);
        assert_eq!(store.latest_run_id().unwrap(), Some(run));
        assert_eq!(store.run_kind(run).unwrap(), Some(RunKind::Handshake));
        assert_eq!(store.run_kind(run + 1).unwrap(), None);
    }

    /// Wire figures, a modelled profile and one measured over a link come
    /// back as they were saved, in order; saving the counts again replaces them.
    #[test]
    fn wire_figures_and_network_results_round_trip() {
        use crate::scenario::network::parse_profiles;
        use crate::transport::tap::{Side, TurnRecord};
        use crate::workload::annotate::model_cells;
        use crate::workload::network::LinkSample;
        let mut store = Store::open_in_memory().unwrap();
        let run = store.begin_run(&run_info()).unwrap();
        let mut cell = measured_cell();
        let turn = |side, writes: &[usize], read_from: &[usize], done| TurnRecord {
            side,
            ns: 5_000,
            writes: writes.to_vec(),
            read_from: read_from.to_vec(),
            done,
        };
        cell.counts.wire = Some(crate::workload::wire::Wire {
            client_bytes: 300,
            server_bytes: 4_000,
            client_records: 2,
            server_records: 6,
            client_flights: 2,
            server_flights: 1,
            round_trips: Some(1.0),
            server_round_trips: Some(1.5),
            client_packets: 2,
            server_packets: 3,
            datagrams: false,
            fragments: None,
            handshakes: 5,
            bytes_spread: 2,
            turns: vec![
                turn(Side::Client, &[250], &[], false),
                turn(Side::Server, &[4_000], &[0], false),
                turn(Side::Client, &[50], &[1], true),
            ],
        });
        let profiles = parse_profiles("wan,rtt=10ms,loss=1%").unwrap();
        model_cells(std::slice::from_mut(&mut cell), &profiles);
        cell.counts.network[1].link = Some("tun".to_string());
        cell.counts.network[1].measured = Some(Outcome::Measured {
            samples: (0..3)
                .map(|i| Timed {
                    round: i,
                    value: LinkSample {
                        latency_ns: 21_000_000 + u64::from(i),
                        client_cpu_ns: 300_000,
                        server_cpu_ns: 500_000,
                    },
                })
                .collect(),
            precise: false,
            note: None,
        });
        store.save_cell(run, &cell).unwrap();
        let loaded = store.load_run(run).unwrap();
        assert_eq!(loaded.cells, vec![cell.clone()]);
        assert!(loaded.cells[0].counts.network[0].model.unwrap().ms > 100.0);
        cell.counts.network.truncate(1);
        store.save_counts(run, &cell).unwrap();
        assert_eq!(store.load_run(run).unwrap().cells, vec![cell]);
    }

    /// Issue 23 item 4: a cell's rounds stored as each ends read back as
    /// a measured cell still sampling (not precise), and its end completes
    /// it into the cell saved whole; a cell that fails keeps no sample.
    #[test]
    fn a_cell_stored_round_by_round_reads_back_as_if_saved_whole() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store.begin_run(&run_info()).unwrap();
        let measured = CellResult {
            outcome: Outcome::Measured {
                samples: measured_cell().samples().to_vec(),
                precise: true,
                note: None,
            },
            ..measured_cell()
        };
        let failing = CellResult {
            subject: crate::scenario::Subject::from_name("openssl").unwrap(),
            ..measured_cell()
        };
        let samples = measured.samples();
        store
            .save_handshake_samples(
                run,
                &[(&measured, &samples[..1]), (&failing, &samples[..1])],
            )
            .unwrap();
        let sampling = store.load_run(run).unwrap().cells;
        assert_eq!(sampling.len(), 2);
        assert_eq!(
            sampling[0].outcome,
            Outcome::Measured {
                samples: samples[..1].to_vec(),
                precise: false,
                note: None
            }
        );
        assert_eq!(sampling[0].negotiated, measured.negotiated);
        store
            .save_handshake_samples(run, &[(&measured, &samples[1..])])
            .unwrap();
        store.save_cell(run, &measured).unwrap();
        let failed = CellResult {
            negotiated: None,
            outcome: Outcome::Failed {
                reason: "broke in round 1".into(),
            },
            ..failing
        };
        store.save_cell(run, &failed).unwrap();
        assert_eq!(
            store.load_run(run).unwrap().cells,
            vec![measured.clone(), failed]
        );
        let stored: i64 = store
            .connection
            .query_row("SELECT count(*) FROM samples", [], |row| row.get(0))
            .unwrap();
        assert_eq!(stored, samples.len() as i64);
    }

    #[test]
    fn dtls_rows_round_trip_with_their_mtu() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store.begin_run(&run_info()).unwrap();
        let dtls = |mtu_bytes| HandshakeScenario {
            version: TlsVersion::Dtls12,
            group: Group::Dhe2048,
            cert: CertKind::Rsa2048,
            aead: Aead::Aes128CbcSha,
            resumption: Resumption::Ticket,
            mutual: false,
            chain_depth: 3,
            mtu_bytes: Some(mtu_bytes),
            transport: crate::scenario::Transport::Memory,
        };
        let cells: Vec<CellResult> = [crate::scenario::DEFAULT_MTU_BYTES, 576]
            .into_iter()
            .map(|mtu| CellResult {
                counts: Default::default(),
                scenario: dtls(mtu),
                ..measured_cell()
            })
            .collect();
        for cell in &cells {
            store.save_cell(run, cell).unwrap();
        }
        assert_eq!(store.load_run(run).unwrap().cells, cells);
    }

    /// A 0-RTT row keeps its resumption mode (`0rtt` in the scenarios
    /// table and its label) and reads back as early data accepted, as it
    /// was when it was measured.
    #[test]
    fn zero_rtt_rows_round_trip() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store.begin_run(&run_info()).unwrap();
        let mut scenario =
            HandshakeScenario::full(TlsVersion::Quic, Group::X25519, CertKind::EcdsaP256);
        scenario.resumption = Resumption::ZeroRtt;
        let mut negotiated = crate::store::fixtures::negotiated();
        negotiated.version = "QUIC".into();
        negotiated.early_data = true;
        let cell = CellResult {
            scenario,
            negotiated: Some(negotiated),
            ..measured_cell()
        };
        store.save_cell(run, &cell).unwrap();
        let stored: String = store
            .connection
            .query_row("SELECT resumption FROM scenarios", [], |row| row.get(0))
            .unwrap();
        assert_eq!(stored, "0rtt");
        let loaded = store.load_run(run).unwrap().cells;
        assert_eq!(
            loaded[0].scenario.label(),
            "handshake_quic_x25519_ecdsa_p256_aes128gcm_resume_0rtt"
        );
        assert_eq!(loaded, vec![cell]);
    }
}
