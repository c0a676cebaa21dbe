//! The document of loads side by side (`load --server A,B,...` or `--cert
//! A,B`): the servers table (a row per server, certificate and HTTP
//! version, and each certificate's server CPU per request against the
//! first's), then each load's own tables, records and data, each marked
//! with its server, certificate and version.

use super::document;
use super::servers::LoadCell;
use crate::report::load_servers::{servers_table, ServerRow};
use crate::report::Document;
use crate::scenario::{CertKind, Named};
use crate::store::LoadRecord;
use crate::workload::load::HttpVersion;

/// The document of a load over several servers or certificates (`certs`,
/// in the order given): the servers table first, then each load's own
/// tables (titled with its server, certificate when several, and version),
/// its records with those in front, and its data under `servers` in the
/// order the rows run.
pub(super) fn servers_document(cells: &[LoadCell], certs: &[CertKind], heading: &str) -> Document {
    let several_certs = certs.len() > 1;
    let cert_names: Vec<&str> = certs.iter().map(|cert| cert.id()).collect();
    let mut combined = Document {
        heading: heading.to_string(),
        tables: vec![servers_table(&rows(cells), &cert_names)],
        records: crate::report::Table::default(),
        data: serde_json::json!({}),
        footer: Vec::new(),
        figures: Vec::new(),
    };
    let mut data = Vec::new();
    for cell in cells {
        match cell {
            LoadCell::Loaded {
                server,
                cert,
                record,
            } => {
                let load = Load {
                    server,
                    cert: several_certs.then_some(*cert),
                    record,
                };
                data.push(load.append_to(&mut combined, heading));
            }
            LoadCell::Unusable {
                server,
                cert,
                http,
                reason,
                failed,
            } => {
                let mut unusable = serde_json::json!({
                    "server": server,
                    "http": http.map(HttpVersion::id),
                    "unusable": reason,
                    "failed": failed,
                });
                if several_certs {
                    unusable["cert"] = cert.map(CertKind::id).into();
                }
                data.push(unusable);
            }
        }
    }
    combined.data["servers"] = data.into();
    combined
}

/// The servers table's rows, one per cell.
fn rows(cells: &[LoadCell]) -> Vec<ServerRow<'_>> {
    cells
        .iter()
        .map(|cell| match cell {
            LoadCell::Loaded {
                server,
                cert,
                record,
            } => ServerRow::Loaded {
                name: server,
                server: &record.server,
                cert: cert.id(),
                plan: &record.plan,
                result: &record.result,
                server_cpu_ns: record.server_cpu_ns,
                profile: &record.profile,
            },
            LoadCell::Unusable {
                server,
                cert,
                http,
                reason,
                ..
            } => ServerRow::Unusable {
                server,
                cert: cert.map_or("every", CertKind::id),
                http: http.map_or("every".to_string(), |v| v.describe().to_string()),
                reason,
            },
        })
        .collect()
}

/// One load that ran, as the document of several shows it.
struct Load<'a> {
    /// The server's name ("nginx").
    server: &'a str,
    /// Its certificate, when the load has several (else nothing says it).
    cert: Option<CertKind>,
    record: &'a LoadRecord,
}

impl Load<'_> {
    /// Appends the load's own tables (titled with its server, certificate
    /// and version), records (those in front), footer and figures to
    /// `combined`, and returns its data.
    fn append_to(&self, combined: &mut Document, heading: &str) -> serde_json::Value {
        let (server, record) = (self.server, self.record);
        let version = record.plan.http.id();
        let mut own = document(record, heading);
        // "nginx with rsa2048" with several certificates, "nginx" else.
        let with_cert = |name: &str| match self.cert {
            Some(cert) => format!("{name} with {}", cert.id()),
            None => name.to_string(),
        };
        let prefix = format!(
            "{} over {}",
            with_cert(&record.server),
            record.plan.http.describe()
        );
        for table in &mut own.tables {
            table.title = Some(match &table.title {
                Some(title) => format!("{prefix}: {title}"),
                None => prefix.clone(),
            });
        }
        combined.tables.extend(own.tables);
        let mut front = vec![
            ("server", server.to_string()),
            ("http", version.to_string()),
        ];
        if let Some(cert) = self.cert {
            front.insert(1, ("certificate", cert.id().to_string()));
        }
        let records = &mut combined.records;
        if records.columns.is_empty() {
            *records = crate::report::Table {
                rows: Vec::new(),
                ..own.records.clone()
            };
            records.columns.splice(
                0..0,
                front
                    .iter()
                    .map(|(header, _)| crate::report::Column::text(*header)),
            );
        }
        for mut row in own.records.rows {
            row.splice(0..0, front.iter().map(|(_, value)| value.clone()));
            records.rows.push(row);
        }
        let named = with_cert(server);
        combined.footer.extend(
            own.footer
                .into_iter()
                .map(|line| format!("{named} over HTTP/{version}: {line}")),
        );
        let cert_suffix = self
            .cert
            .map_or(String::new(), |cert| format!("_{}", cert.id()));
        combined
            .figures
            .extend(own.figures.into_iter().map(|mut figure| {
                figure.id = format!(
                    "{}_{server}{cert_suffix}_http{}",
                    figure.id,
                    version.replace('.', "_")
                );
                figure
            }));
        let mut data = own.data;
        data["server_name"] = server.into();
        if let Some(cert) = self.cert {
            data["cert"] = cert.id().into();
        }
        data
    }
}
