//! CSV quoting (RFC 4180), shared by every record table.

/// A field quoted when it holds a comma, a quote or a line break.
pub(crate) fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}
