//! `load --http`: the HTTP versions a load speaks, each version's plan,
//! and the document of several versions run back to back against one
//! server (a table of them side by side, then each one's own tables).

use super::document;
use crate::cli::LoadHttp;
use crate::report::Document;
use crate::store::LoadRecord;
use crate::workload::load::{HttpVersion, Plan as LoadPlan};

/// The HTTP versions asked for (`--http`), each once, in order: HTTP/1.1
/// when none is given.
pub(super) fn http_versions(asked: Option<&[LoadHttp]>) -> Vec<HttpVersion> {
    let mut versions: Vec<HttpVersion> = asked
        .unwrap_or(&[LoadHttp::Http1_1])
        .iter()
        .map(|http| match http {
            LoadHttp::Http1_1 => HttpVersion::Http1_1,
            LoadHttp::Http2 => HttpVersion::Http2,
        })
        .collect();
    versions.sort();
    versions.dedup();
    versions
}

/// `plan` in HTTP `version`: HTTP/2 carries `streams` requests per
/// connection, HTTP/1.1 one.
pub(super) fn version_plan(plan: &LoadPlan, version: HttpVersion, streams: usize) -> LoadPlan {
    LoadPlan {
        http: version,
        streams: if version == HttpVersion::Http2 {
            streams
        } else {
            1
        },
        ..plan.clone()
    }
}

/// The document of loads of the same server in one or more HTTP versions:
/// with several, a table of them side by side first, then each version's
/// tables in turn (its figures' ids and its data keyed by its version).
pub(super) fn versions_document(records: &[&LoadRecord], heading: &str) -> Document {
    let mut documents = records.iter().map(|record| document(record, heading));
    let mut combined = documents
        .next()
        .expect("a load measures one version at least");
    if records.len() < 2 {
        return combined;
    }
    let mut versions = vec![(records[0].plan.http.id(), combined.data.clone())];
    for (record, other) in records[1..].iter().zip(documents) {
        let version = record.plan.http;
        combined.tables.extend(other.tables);
        combined.records.rows.extend(other.records.rows);
        combined.footer.extend(other.footer);
        combined
            .figures
            .extend(other.figures.into_iter().map(|mut figure| {
                figure.id = format!("{}_http{}", figure.id, version.id().replace('.', "_"));
                figure
            }));
        versions.push((version.id(), other.data));
    }
    let loads: Vec<_> = records
        .iter()
        .map(|r| (&r.plan, &r.result, r.server_cpu_ns))
        .collect();
    combined
        .tables
        .insert(0, crate::report::load::versions_table(&loads));
    combined.data["http_versions"] = versions
        .into_iter()
        .map(|(id, data)| (id.to_string(), data))
        .collect::<serde_json::Map<_, _>>()
        .into();
    combined
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_version_runs_once_in_order_with_streams_for_http2_only() {
        assert_eq!(http_versions(None), [HttpVersion::Http1_1]);
        assert_eq!(
            http_versions(Some(&[LoadHttp::Http2, LoadHttp::Http1_1, LoadHttp::Http2])),
            [HttpVersion::Http1_1, HttpVersion::Http2]
        );
        let plan = LoadPlan {
            rate: 10.0,
            ramp: std::time::Duration::ZERO,
            duration: std::time::Duration::from_secs(1),
            path: "/".into(),
            body: Vec::new(),
            mode: crate::workload::load::Mode::KeepAlive,
            clients: 2,
            max_requests: 10,
            http: HttpVersion::Http1_1,
            streams: 1,
        };
        let http1 = version_plan(&plan, HttpVersion::Http1_1, 8);
        let http2 = version_plan(&plan, HttpVersion::Http2, 8);
        assert_eq!((http1.http, http1.streams), (HttpVersion::Http1_1, 1));
        assert_eq!((http2.http, http2.streams), (HttpVersion::Http2, 8));
    }
}
