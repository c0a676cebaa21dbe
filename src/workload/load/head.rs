//! The head of an answer to the load client, parsed with `httparse` (as the
//! embedded server parses requests): its status, how its body is framed,
//! whether the server keeps the connection, and where the body starts.
//! Bare LF line ends are accepted, as RFC 9112 allows. A head that is
//! malformed, carries more than [`MAX_HEADER_FIELDS`] fields or passes
//! [`MAX_RESPONSE_HEAD_BYTES`] fails the request with a message saying so.

use super::ErrorKind;

/// The longest answer head the client reads; a longer one is an error.
pub const MAX_RESPONSE_HEAD_BYTES: usize = 64 * 1024;
/// The most header fields an answer head may carry.
const MAX_HEADER_FIELDS: usize = 64;

/// Why a request failed, and the message shown for it.
type Failure = (ErrorKind, String);

/// What the load client uses of an answer's head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    /// The status code (200 for a page).
    pub status: u16,
    /// The body's length from Content-Length, if the head has one.
    pub content_length: Option<usize>,
    /// True if and only if the body is chunked (`Transfer-Encoding: chunked`),
    /// which makes any Content-Length meaningless.
    pub chunked: bool,
    /// True if and only if the server keeps the connection open after this
    /// answer: HTTP/1.1 unless it says `Connection: close`, HTTP/1.0 only
    /// when it says `Connection: keep-alive`.
    pub keep_alive: bool,
    /// The head's length in bytes, its blank line included: where the
    /// body starts in the bytes received.
    pub head_bytes: usize,
}

impl ResponseHead {
    /// Parses the head at the start of `received`, the answer's bytes so
    /// far, however the reads split them: `None` while the head is not
    /// complete and not yet too long to become one.
    pub fn parse(received: &[u8]) -> Result<Option<Self>, Failure> {
        let mut fields = [httparse::EMPTY_HEADER; MAX_HEADER_FIELDS];
        let mut response = httparse::Response::new(&mut fields);
        let head_bytes = match response.parse(received) {
            Ok(httparse::Status::Complete(bytes)) if bytes <= MAX_RESPONSE_HEAD_BYTES => bytes,
            Ok(httparse::Status::Partial) if received.len() <= MAX_RESPONSE_HEAD_BYTES => {
                return Ok(None)
            }
            Ok(_) => {
                return Err(malformed(format!(
                    "the answer's head is over {} KiB",
                    MAX_RESPONSE_HEAD_BYTES / 1024
                )))
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Err(malformed(format!(
                    "the answer's head has over {MAX_HEADER_FIELDS} header fields"
                )))
            }
            Err(error) => {
                return Err(malformed(format!(
                    "malformed answer head ({error}): {}",
                    first_line(received)
                )))
            }
        };
        let status = response.code.expect("a complete head has a status");
        let headers: &[httparse::Header] = response.headers;
        let connection = tokens(headers, "connection");
        let keep_alive = if connection.iter().any(|t| t == "close") {
            false
        } else {
            response.version == Some(1) || connection.iter().any(|t| t == "keep-alive")
        };
        Ok(Some(Self {
            status,
            content_length: content_length(headers)?,
            chunked: tokens(headers, "transfer-encoding")
                .last()
                .map(String::as_str)
                == Some("chunked"),
            keep_alive,
            head_bytes,
        }))
    }

    /// The body's length in bytes: its Content-Length. A chunked body, or
    /// one without a length (read until the server closes), is an error:
    /// the client reads a body by its length, so it can check it as it
    /// arrives and keep the connection.
    pub fn body_bytes(&self) -> Result<usize, Failure> {
        if self.chunked {
            return Err(malformed(
                "the answer is chunked (Transfer-Encoding: chunked); the load client reads bodies by their Content-Length".to_string(),
            ));
        }
        self.content_length.ok_or_else(|| {
            malformed("the answer has no Content-Length (bodies are read by their length; chunked answers are not read)".to_string())
        })
    }
}

/// A failure of the answer's framing (counted as an I/O error).
fn malformed(message: String) -> Failure {
    (ErrorKind::Io, message)
}

/// The Content-Length, if the head has one; several fields must agree.
fn content_length(headers: &[httparse::Header]) -> Result<Option<usize>, Failure> {
    let mut length = None;
    for header in headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("content-length"))
    {
        let text = String::from_utf8_lossy(header.value);
        let digits = text.trim();
        let value = Some(digits)
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<usize>().ok())
            .ok_or_else(|| {
                malformed(format!(
                    "the answer's Content-Length {digits:?} is not a length"
                ))
            })?;
        if length.is_some_and(|l| l != value) {
            return Err(malformed(
                "the answer has two different Content-Lengths".to_string(),
            ));
        }
        length = Some(value);
    }
    Ok(length)
}

/// The comma-separated tokens of every field named `name`, trimmed and
/// lowercased, in order.
fn tokens(headers: &[httparse::Header], name: &str) -> Vec<String> {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case(name))
        .flat_map(|h| {
            String::from_utf8_lossy(h.value)
                .split(',')
                .map(|t| t.trim().to_ascii_lowercase())
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The first line of what was received, quoted and cut to 60 characters,
/// for an error message.
fn first_line(received: &[u8]) -> String {
    let line = received.split(|&b| b == b'\n').next().unwrap_or_default();
    let line: String = String::from_utf8_lossy(line)
        .trim_end_matches('\r')
        .chars()
        .take(60)
        .collect();
    format!("{line:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &[u8] =
        b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello";
    const HEAD_BYTES: usize = PAGE.len() - 5;

    fn message(result: Result<Option<ResponseHead>, Failure>) -> String {
        match result {
            Err((kind, message)) => {
                assert_eq!(kind, ErrorKind::Io);
                message
            }
            Ok(head) => panic!("parsed: {head:?}"),
        }
    }

    #[test]
    fn a_head_split_over_several_reads_is_read_once_it_is_whole() {
        // Every split of the head into two reads, and one byte per read.
        for split in 0..HEAD_BYTES {
            assert_eq!(ResponseHead::parse(&PAGE[..split]), Ok(None), "{split}");
        }
        let head = ResponseHead::parse(PAGE).unwrap().unwrap();
        assert_eq!(
            head,
            ResponseHead {
                status: 200,
                content_length: Some(5),
                chunked: false,
                keep_alive: true,
                head_bytes: HEAD_BYTES,
            }
        );
        assert_eq!(&PAGE[head.head_bytes..], b"hello");
        assert_eq!(head.body_bytes(), Ok(5));
    }

    #[test]
    fn a_head_with_bare_line_feeds_is_read() {
        let answer = b"HTTP/1.1 200 OK\nContent-Length: 3\nConnection: close\n\nabc";
        let head = ResponseHead::parse(answer).unwrap().unwrap();
        assert_eq!(head.status, 200);
        assert_eq!(head.body_bytes(), Ok(3));
        assert!(!head.keep_alive);
        assert_eq!(&answer[head.head_bytes..], b"abc");
    }

    #[test]
    fn a_malformed_head_is_an_error_that_quotes_it() {
        let bad_status = message(ResponseHead::parse(b"HTTP/1.1 2x0 OK\r\n\r\n"));
        assert!(
            bad_status.starts_with("malformed answer head (")
                && bad_status.ends_with("\"HTTP/1.1 2x0 OK\""),
            "{bad_status}"
        );
        let not_http = message(ResponseHead::parse(b"SSH-2.0-OpenSSH_9.2\r\n"));
        assert!(
            not_http.contains("malformed answer head") && not_http.contains("SSH-2.0"),
            "{not_http}"
        );
        let bad_field = message(ResponseHead::parse(
            b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
        ));
        assert!(bad_field.contains("malformed answer head"), "{bad_field}");
        let bad_length = message(ResponseHead::parse(
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        ));
        assert!(
            bad_length.contains("\"-1\" is not a length"),
            "{bad_length}"
        );
        let two_lengths = message(ResponseHead::parse(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        ));
        assert!(two_lengths.contains("two different"), "{two_lengths}");
    }

    #[test]
    fn a_head_over_the_size_limit_is_an_error() {
        let mut answer = b"HTTP/1.1 200 OK\r\n".to_vec();
        while answer.len() <= MAX_RESPONSE_HEAD_BYTES {
            answer.extend_from_slice(b"X-Padding: ");
            answer.extend_from_slice(&[b'x'; 4000]);
            answer.extend_from_slice(b"\r\n");
        }
        // Still coming, and already too long.
        assert!(message(ResponseHead::parse(&answer)).contains("over 64 KiB"));
        // Whole, and too long.
        answer.extend_from_slice(b"\r\n");
        assert!(message(ResponseHead::parse(&answer)).contains("over 64 KiB"));
        // Too many fields, however short.
        let many = format!(
            "HTTP/1.1 200 OK\r\n{}\r\n",
            "A: b\r\n".repeat(MAX_HEADER_FIELDS + 1)
        );
        assert!(message(ResponseHead::parse(many.as_bytes())).contains("over 64 header fields"));
    }

    #[test]
    fn the_framing_and_the_connection_are_read_from_the_fields() {
        let parse = |text: &str| ResponseHead::parse(text.as_bytes()).unwrap().unwrap();
        let chunked = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n");
        assert!(chunked.chunked && chunked.keep_alive);
        assert!(chunked.body_bytes().unwrap_err().1.contains("chunked"));
        let unframed = parse("HTTP/1.1 404 Not Found\r\n\r\n");
        assert_eq!((unframed.status, unframed.content_length), (404, None));
        assert!(unframed
            .body_bytes()
            .unwrap_err()
            .1
            .contains("no Content-Length"));
        assert!(!parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").keep_alive);
        assert!(parse("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
        assert!(!parse("HTTP/1.1 200 OK\r\nConnection: upgrade, Close\r\n\r\n").keep_alive);
    }
}
