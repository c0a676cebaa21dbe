//! The capacity tables: per backend and handshake scenario of a
//! `handshake --capacity` run its status and the model's server cost, and
//! per thread count what the window counted. Each finished cell is
//! committed on its own, like handshake cells.

use anyhow::Result;
use rusqlite::params;

use super::{save_scenario, scenario_from_columns, Store};
use crate::workload::capacity::{CapacityCell, Step};

impl Store {
    /// Commits one finished capacity cell with all its steps.
    pub fn save_capacity_cell(&mut self, run_id: i64, cell: &CapacityCell) -> Result<()> {
        let tx = self.connection.transaction()?;
        let label = save_scenario(&tx, &cell.scenario)?;
        tx.execute(
            "INSERT INTO capacity_cells (run_id, scenario_id, backend, status, reason,
             modelled_server_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                run_id,
                label,
                cell.subject.name(),
                cell.status,
                cell.reason,
                cell.modelled_server_ns
            ],
        )?;
        let cell_id = tx.last_insert_rowid();
        {
            let mut insert = tx.prepare(
                "INSERT INTO capacity_steps (cell_id, threads, handshakes, window_ns,
                 server_cpu_ns, client_cpu_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for step in &cell.steps {
                insert.execute(params![
                    cell_id,
                    step.threads as i64,
                    step.handshakes as i64,
                    step.window_ns as i64,
                    step.server_cpu_ns as i64,
                    step.client_cpu_ns as i64
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Reads back every capacity cell of a run, in the order they finished.
    pub fn load_capacity_cells(&self, run_id: i64) -> Result<Vec<CapacityCell>> {
        let mut statement = self.connection.prepare(
            "SELECT c.id, c.backend, c.status, c.reason, c.modelled_server_ns,
                    s.tls_version, s.kx_group, s.cert, s.aead, s.resumption, s.mutual,
                    s.chain_depth, s.id
             FROM capacity_cells c JOIN scenarios s ON s.id = c.scenario_id
             WHERE c.run_id = ?1 ORDER BY c.id",
        )?;
        let rows = statement
            .query_map([run_id], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, crate::measure::CellStatus>(2)?,
                    row.get::<_, Option<String>>(3)?,
                    row.get::<_, Option<f64>>(4)?,
                    [
                        row.get(5)?,
                        row.get(6)?,
                        row.get(7)?,
                        row.get(8)?,
                        row.get(9)?,
                    ],
                    row.get::<_, bool>(10)?,
                    row.get::<_, u8>(11)?,
                    row.get::<_, String>(12)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut steps_query = self.connection.prepare(
            "SELECT threads, handshakes, window_ns, server_cpu_ns, client_cpu_ns
             FROM capacity_steps WHERE cell_id = ?1 ORDER BY threads",
        )?;
        let mut cells = Vec::with_capacity(rows.len());
        for (cell_id, backend, status, reason, modelled, axes, mutual, depth, label) in rows {
            let steps = steps_query
                .query_map([cell_id], |r| {
                    let number = |i: usize| r.get::<_, i64>(i).map(|v| v as u64);
                    Ok(Step {
                        threads: number(0)? as usize,
                        handshakes: number(1)?,
                        window_ns: number(2)?,
                        server_cpu_ns: number(3)?,
                        client_cpu_ns: number(4)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            cells.push(CapacityCell {
                // capacity loads libraries only.
                subject: super::cells::read_subject("library", &backend)?,
                scenario: scenario_from_columns(&axes, mutual, depth, &label)?,
                status,
                reason,
                modelled_server_ns: modelled,
                steps,
            });
        }
        Ok(cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{CertKind, Group, HandshakeScenario, TlsVersion};
    use crate::store::fixtures::run_info;
    use crate::store::RunKind;

    #[test]
    fn capacity_cells_round_trip() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .begin_run(&run_info(RunKind::Capacity, "tlslab handshake --capacity"))
            .unwrap();
        let scenario = HandshakeScenario::full(TlsVersion::Tls13, Group::P256, CertKind::Rsa2048);
        let step = |threads: usize| Step {
            threads,
            handshakes: 1_000 * threads as u64,
            window_ns: 2_000_000_000,
            server_cpu_ns: 700_000_000 * threads as u64,
            client_cpu_ns: 300_000_000 * threads as u64,
        };
        let measured = CapacityCell {
            subject: crate::scenario::Subject::from_name("openssl").unwrap(),
            scenario,
            status: crate::measure::CellStatus::Measured,
            reason: None,
            modelled_server_ns: Some(650_000.5),
            steps: vec![step(1), step(2)],
        };
        let unsupported = CapacityCell {
            subject: crate::scenario::Subject::from_name("rustls-ring").unwrap(),
            status: crate::measure::CellStatus::Unsupported,
            reason: Some("no such group".into()),
            modelled_server_ns: None,
            steps: Vec::new(),
            ..measured.clone()
        };
        for cell in [&measured, &unsupported] {
            store.save_capacity_cell(run, cell).unwrap();
        }
        assert_eq!(
            store.load_capacity_cells(run).unwrap(),
            vec![measured, unsupported]
        );
    }
}
