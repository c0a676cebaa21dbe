//! HTTP/1.1 for the embedded server: request heads parsed with `httparse`
//! (bare LF line ends accepted, as RFC 9112 allows), the status a request
//! gets (for HTTP/2 as well: [`route`]), response heads, and the generated
//! pages handed out in slices of one static pattern, so no page is ever
//! held in memory whole.

use std::sync::OnceLock;

use crate::workload::site::page_bytes;

/// The longest request head the server reads; a longer one is answered 431.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most header fields a request may have; more are answered 431.
const MAX_HEADER_FIELDS: usize = 64;
/// The largest page served (as `tlslab load --size` allows).
pub const MAX_PAGE_BYTES: usize = 100_000_000;
/// The most page bytes handed to the TLS library at once (one record).
pub const PAGE_SLICE_BYTES: usize = 16 * 1024;
/// The length of the pattern every generated page repeats (a to z).
const PAGE_PATTERN_BYTES: usize = 26;

/// The status of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    RequestTimeout,
    HeadTooLarge,
    VersionNotSupported,
}

impl Status {
    /// The status code alone (HTTP/2 sends no reason).
    pub fn code(self) -> u16 {
        match self {
            Status::Ok => 200,
            Status::BadRequest => 400,
            Status::NotFound => 404,
            Status::MethodNotAllowed => 405,
            Status::RequestTimeout => 408,
            Status::HeadTooLarge => 431,
            Status::VersionNotSupported => 505,
        }
    }

    /// The status line's code and reason.
    fn line(self) -> &'static str {
        match self {
            Status::Ok => "200 OK",
            Status::BadRequest => "400 Bad Request",
            Status::NotFound => "404 Not Found",
            Status::MethodNotAllowed => "405 Method Not Allowed",
            Status::RequestTimeout => "408 Request Timeout",
            Status::HeadTooLarge => "431 Request Header Fields Too Large",
            Status::VersionNotSupported => "505 HTTP Version Not Supported",
        }
    }
}

/// A request the server answers with a page.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub page_size: usize,
    pub keep_alive: bool,
}

/// What the bytes received so far hold.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Not a whole head yet, and not too long to become one.
    Incomplete,
    /// A request for a page, whose head took this many bytes.
    Page(Request, usize),
    /// A head the server refuses with this status (and then closes).
    Refused(Status),
}

/// Parses the request head at the start of `received`.
pub fn parse(received: &[u8]) -> Parsed {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADER_FIELDS];
    let mut request = httparse::Request::new(&mut fields);
    let head_bytes = match request.parse(received) {
        Ok(httparse::Status::Complete(bytes)) => bytes,
        Ok(httparse::Status::Partial) if received.len() > MAX_HEAD_BYTES => {
            return Parsed::Refused(Status::HeadTooLarge)
        }
        Ok(httparse::Status::Partial) => return Parsed::Incomplete,
        Err(httparse::Error::TooManyHeaders) => return Parsed::Refused(Status::HeadTooLarge),
        Err(httparse::Error::Version) => return Parsed::Refused(Status::VersionNotSupported),
        Err(_) => return Parsed::Refused(Status::BadRequest),
    };
    if head_bytes > MAX_HEAD_BYTES {
        return Parsed::Refused(Status::HeadTooLarge);
    }
    let version = request.version.unwrap_or(1);
    let page_size = match route(request.method.unwrap_or(""), request.path.unwrap_or("")) {
        Ok(page_size) => page_size,
        Err(status) => return Parsed::Refused(status),
    };
    let headers: &[httparse::Header] = request.headers;
    let options: Vec<String> = field_values(headers, "connection")
        .iter()
        .flat_map(|v| v.split(',').map(|o| o.trim().to_string()))
        .collect();
    // HTTP/1.1 keeps the connection unless told otherwise; HTTP/1.0 closes it.
    let mut keep_alive = if options.iter().any(|o| o == "close") {
        false
    } else {
        options.iter().any(|o| o == "keep-alive") || version == 1
    };
    // A GET with a body: its bytes would be read as the next request.
    if field_values(headers, "content-length")
        .iter()
        .any(|v| v.trim() != "0")
        || !field_values(headers, "transfer-encoding").is_empty()
    {
        keep_alive = false;
    }
    Parsed::Page(
        Request {
            page_size,
            keep_alive,
        },
        head_bytes,
    )
}

/// The page a request for `path` by `method` gets, by its size: `GET
/// /page_SIZE` (SIZE in digits, at most [`MAX_PAGE_BYTES`]); else the status
/// it is refused with (405 for another method, 404 for another path). The
/// same for HTTP/1.1 and HTTP/2.
pub fn route(method: &str, path: &str) -> Result<usize, Status> {
    if method != "GET" {
        return Err(Status::MethodNotAllowed);
    }
    path.strip_prefix("/page_")
        .filter(|size| size.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|size| size.parse::<usize>().ok())
        .filter(|size| *size <= MAX_PAGE_BYTES)
        .ok_or(Status::NotFound)
}

/// The values of every header field named `name`, lowercased.
fn field_values(headers: &[httparse::Header], name: &str) -> Vec<String> {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase())
        .collect()
}

/// The response head for `status` with a body of `body_bytes`.
pub fn response_head(status: Status, body_bytes: usize, keep_alive: bool) -> Vec<u8> {
    format!(
        "HTTP/1.1 {}\r\nServer: tlslab\r\nContent-Type: application/octet-stream\r\nContent-Length: {body_bytes}\r\nConnection: {}\r\n\r\n",
        status.line(),
        if keep_alive { "keep-alive" } else { "close" }
    )
    .into_bytes()
}

/// Bytes `offset..offset + length` of any generated page (at most
/// [`PAGE_SLICE_BYTES`] of them): every page is the same repeating
/// pattern, so one static buffer serves every page at every offset, and a
/// slice asked for twice is the same memory (as OpenSSL wants a write it
/// retries to be).
pub fn page_slice(offset: usize, length: usize) -> &'static [u8] {
    static PATTERN: OnceLock<Vec<u8>> = OnceLock::new();
    let pattern = PATTERN.get_or_init(|| page_bytes(PAGE_SLICE_BYTES + PAGE_PATTERN_BYTES));
    let start = offset % PAGE_PATTERN_BYTES;
    &pattern[start..start + length.min(PAGE_SLICE_BYTES)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(size: usize, keep_alive: bool, head: &str) -> Parsed {
        Parsed::Page(
            Request {
                page_size: size,
                keep_alive,
            },
            head.len(),
        )
    }

    #[test]
    fn requests_parse() {
        let head = "GET /page_50000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        assert_eq!(parse(head.as_bytes()), page(50_000, false, head));
        let head = "GET /page_10 HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(parse(head.as_bytes()), page(10, true, head));
        let head = "GET /page_10 HTTP/1.0\r\n\r\n";
        assert_eq!(parse(head.as_bytes()), page(10, false, head));
        let head = "GET /page_10 HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n";
        assert_eq!(parse(head.as_bytes()), page(10, true, head));
        let head = "GET /page_10 HTTP/1.1\r\nConnection: upgrade, close\r\n\r\n";
        assert_eq!(parse(head.as_bytes()), page(10, false, head));
        let refused = |head: &str| match parse(head.as_bytes()) {
            Parsed::Refused(status) => Some(status),
            _ => None,
        };
        assert_eq!(
            refused("GET /index.html HTTP/1.1\r\n\r\n"),
            Some(Status::NotFound)
        );
        assert_eq!(
            refused("GET /page_+5 HTTP/1.1\r\n\r\n"),
            Some(Status::NotFound)
        );
        assert_eq!(
            refused("GET /page_100000001 HTTP/1.1\r\n\r\n"),
            Some(Status::NotFound)
        );
        assert_eq!(
            refused("POST /page_10 HTTP/1.1\r\n\r\n"),
            Some(Status::MethodNotAllowed)
        );
        assert_eq!(
            refused("GET /page_10 HTTP/1.1\r\nBad Header\r\n\r\n"),
            Some(Status::BadRequest)
        );
        assert_eq!(
            refused("GET /page_10 HTTP/2.0\r\n\r\n"),
            Some(Status::VersionNotSupported)
        );
    }

    #[test]
    fn a_request_with_a_body_closes_its_connection() {
        let head = "GET /page_10 HTTP/1.1\r\nContent-Length: 5\r\n\r\n";
        assert_eq!(parse(head.as_bytes()), page(10, false, head));
    }

    #[test]
    fn a_head_stays_incomplete_until_its_blank_line() {
        assert_eq!(
            parse(b"GET /page_10 HTTP/1.1\r\nHost: x\r\n"),
            Parsed::Incomplete
        );
        assert_eq!(parse(b"GE"), Parsed::Incomplete);
        // Pipelined: the first head ends where the second begins.
        let two = b"GET /page_1 HTTP/1.1\r\n\r\nGET /page_2 HTTP/1.1\r\n\r\n";
        assert_eq!(parse(two), page(1, true, "GET /page_1 HTTP/1.1\r\n\r\n"));
    }

    #[test]
    fn bare_lf_line_ends_are_accepted() {
        let head = "GET /page_10 HTTP/1.1\nHost: x\n\n";
        assert_eq!(parse(head.as_bytes()), page(10, true, head));
    }

    #[test]
    fn a_head_longer_than_the_limit_is_refused_431() {
        let mut long = b"GET /page_10 HTTP/1.1\r\nX: ".to_vec();
        long.resize(MAX_HEAD_BYTES + 1, b'a');
        assert_eq!(parse(&long), Parsed::Refused(Status::HeadTooLarge));
        let many: String = std::iter::once("GET /page_10 HTTP/1.1\r\n".to_string())
            .chain((0..100).map(|i| format!("X-{i}: y\r\n")))
            .chain(std::iter::once("\r\n".to_string()))
            .collect();
        assert_eq!(
            parse(many.as_bytes()),
            Parsed::Refused(Status::HeadTooLarge)
        );
    }

    #[test]
    fn page_slices_put_together_are_the_page() {
        let size = 3 * PAGE_SLICE_BYTES + 17;
        let mut served = Vec::new();
        let mut offset = 5;
        served.extend_from_slice(&page_bytes(size)[..offset]);
        while offset < size {
            let slice = page_slice(offset, size - offset);
            offset += slice.len();
            served.extend_from_slice(slice);
        }
        assert_eq!(served, page_bytes(size));
        assert_eq!(page_slice(7, 100).as_ptr(), page_slice(7, 100).as_ptr());
    }
}
