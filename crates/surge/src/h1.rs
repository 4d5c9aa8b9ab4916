//! `surge bench`'s HTTP/1.1 hot path: one keep-alive connection that writes a pre-serialized
//! request, parses the response head with httparse from a reused buffer and counts the body
//! (Content-Length, chunked or until close) without keeping it. Hand-written because hyper's client
//! cost ~16 us CPU per request against nginx on one core where wrk needs ~12.4 us
//! (bench/surge.sh); with this path surge measured 6.6-6.8 us vs wrk's 7.1 us in the same runs.
//! hyper still serves `--http2`.

use crate::net::Stream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Receive buffer size; response heads must fit in `MAX_HEAD`.
const BUF: usize = 16 * 1024;
const MAX_HEAD: usize = 256 * 1024;
const MAX_HEADERS: usize = 64;

/// Why an exchange failed. The text is the error kind `bench` counts, so it holds no variable data.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Error {
    /// The server closed the connection before sending any byte of the response.
    #[error("connection closed")]
    Closed,
    /// The server closed the connection after part of the response.
    #[error("connection closed mid-response")]
    Incomplete,
    /// The bytes received are not an HTTP/1.x response.
    #[error("invalid response: {0}")]
    Invalid(&'static str),
    /// The socket failed (reset, refused, ...): its kind only, so errors compare equal in tests.
    #[error("io: {0:?}")]
    Io(std::io::ErrorKind),
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e.kind())
    }
}

/// What `bench` records of one response.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Response {
    /// Status code, so bench can count non-2xx answers.
    pub status: u16,
    /// Body bytes after de-chunking.
    pub body_bytes: u64,
    /// Whether the connection may carry another request.
    pub keep_alive: bool,
}

/// One client connection. Bytes past the end of a response stay buffered for the next one.
pub struct Conn {
    /// Plain or TLS; it quick-ACKs before a read that follows one that got data (`net`).
    io: Stream,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
}

/// How the body's end is found.
enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

impl Conn {
    /// A client on a connection `net` opened (TCP_NODELAY: requests are single small writes).
    pub fn new(io: Stream) -> Conn {
        Conn {
            io,
            buf: vec![0; BUF],
            pos: 0,
            len: 0,
        }
    }

    /// Sends `request` (a complete serialized request) and reads its whole response. `head` says the
    /// request was a HEAD (no body follows whatever the headers say).
    pub async fn exchange(&mut self, request: &[u8], head: bool) -> Result<Response, Error> {
        self.io.write_all(request).await?;
        // TLS: the record leaves now (a no-op for plain TCP).
        self.io.flush().await?;
        // A response that spans reads (httpuv: head, then body) must not wait for our delayed
        // ACK; one that arrives in one read (nginx) costs no extra syscall.
        self.io.settle();
        let mut got_any = self.len > self.pos;
        loop {
            let (status, framing, keep_alive, used) = match self.parse_head(head)? {
                Some(h) => h,
                None => {
                    if self.fill().await? == 0 {
                        return Err(if got_any {
                            Error::Incomplete
                        } else {
                            Error::Closed
                        });
                    }
                    got_any = true;
                    continue;
                }
            };
            self.pos += used;
            // Interim 1xx responses (100 Continue, 103 Early Hints) precede the real one.
            if (100..200).contains(&status) {
                if status == 101 {
                    return Err(Error::Invalid("unexpected 101 Switching Protocols"));
                }
                continue;
            }
            let body_bytes = match framing {
                Framing::Length(n) => self.skip(n).await?,
                Framing::Chunked => self.dechunk().await?,
                Framing::UntilClose => self.drain().await?,
            };
            let keep_alive = keep_alive && !matches!(framing, Framing::UntilClose);
            return Ok(Response {
                status,
                body_bytes,
                keep_alive,
            });
        }
    }

    /// Parses a response head from the buffer: `None` when more bytes are needed; otherwise status,
    /// body framing, keep-alive and the head's length.
    fn parse_head(&mut self, head: bool) -> Result<Option<(u16, Framing, bool, usize)>, Error> {
        // Uninitialised header slots: zeroing 64 of them cost more than parsing nginx's head.
        let mut headers = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut []);
        let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut resp,
            &self.buf[self.pos..self.len],
            &mut headers,
        );
        let used = match parsed {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => {
                return Err(Error::Invalid("more than 64 header lines"))
            }
            Err(httparse::Error::Status) => return Err(Error::Invalid("bad status line")),
            Err(httparse::Error::Version) => return Err(Error::Invalid("not HTTP/1.x")),
            Err(_) => return Err(Error::Invalid("malformed header")),
        };
        let status = resp.code.unwrap_or(0);
        let mut keep_alive = resp.version == Some(1);
        let mut length: Option<u64> = None;
        let mut chunked = false;
        let mut other_coding = false;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let n = parse_length(h.value).ok_or(Error::Invalid("bad Content-Length"))?;
                if length.is_some_and(|m| m != n) {
                    return Err(Error::Invalid("conflicting Content-Length"));
                }
                length = Some(n);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                // The last coding decides: chunked last means chunked framing.
                let last = h.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
                chunked = last.trim_ascii().eq_ignore_ascii_case(b"chunked");
                other_coding = !chunked;
            } else if h.name.eq_ignore_ascii_case("connection") {
                for t in h.value.split(|&b| b == b',') {
                    let t = t.trim_ascii();
                    if t.eq_ignore_ascii_case(b"close") {
                        keep_alive = false;
                    } else if t.eq_ignore_ascii_case(b"keep-alive") && resp.version == Some(0) {
                        keep_alive = true;
                    }
                }
            }
        }
        // RFC 9112 6.3: no body for HEAD, 1xx, 204 and 304; Transfer-Encoding beats Content-Length.
        let framing = if head || (100..200).contains(&status) || status == 204 || status == 304 {
            Framing::Length(0)
        } else if chunked {
            Framing::Chunked
        } else if other_coding {
            Framing::UntilClose
        } else if let Some(n) = length {
            Framing::Length(n)
        } else {
            Framing::UntilClose
        };
        Ok(Some((status, framing, keep_alive, used)))
    }

    /// Reads more bytes after the buffered ones (making room first); 0 at end of stream.
    async fn fill(&mut self) -> Result<usize, Error> {
        if self.pos == self.len {
            self.pos = 0;
            self.len = 0;
        } else if self.len == self.buf.len() {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.len, 0);
                self.len -= self.pos;
                self.pos = 0;
            } else if self.buf.len() < MAX_HEAD {
                self.buf.resize(self.buf.len() * 2, 0);
            } else {
                return Err(Error::Invalid("head larger than 256 KiB"));
            }
        }
        let n = self.io.read(&mut self.buf[self.len..]).await?;
        self.len += n;
        Ok(n)
    }

    /// Takes up to `n` buffered bytes, returning how many.
    fn take(&mut self, n: u64) -> usize {
        let k = (self.len - self.pos).min(usize::try_from(n).unwrap_or(usize::MAX));
        self.pos += k;
        k
    }

    /// Consumes an `n`-byte body.
    async fn skip(&mut self, n: u64) -> Result<u64, Error> {
        let mut left = n - self.take(n) as u64;
        while left > 0 {
            if self.fill().await? == 0 {
                return Err(Error::Incomplete);
            }
            left -= self.take(left) as u64;
        }
        Ok(n)
    }

    /// Consumes a body delimited by the end of the stream.
    async fn drain(&mut self) -> Result<u64, Error> {
        let mut n = self.take(u64::MAX) as u64;
        loop {
            let k = self.fill().await?;
            if k == 0 {
                return Ok(n);
            }
            n += self.take(u64::MAX) as u64;
        }
    }

    /// Consumes a chunked body, returning its decoded length.
    async fn dechunk(&mut self) -> Result<u64, Error> {
        let mut d = Dechunk::default();
        loop {
            let (used, done) = d.feed(&self.buf[self.pos..self.len])?;
            self.pos += used;
            if done {
                return Ok(d.data);
            }
            if self.fill().await? == 0 {
                return Err(Error::Incomplete);
            }
        }
    }
}

fn parse_length(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// Incremental chunked transfer-coding decoder (RFC 9112 7.1): counts data bytes, skips chunk
/// extensions and trailers.
#[derive(Default)]
struct Dechunk {
    state: State,
    size: u64,
    digits: u8,
    /// Data bytes seen so far.
    data: u64,
}

#[derive(Default, Clone, Copy, PartialEq, Debug)]
enum State {
    #[default]
    Size,
    Ext,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    /// Start of a trailer line (an empty one ends the body).
    TrailerStart,
    Trailer,
    TrailerLf {
        last: bool,
    },
    Done,
}

impl Dechunk {
    /// Feeds bytes; returns how many were consumed and whether the body ended (bytes after the end
    /// are left unconsumed).
    fn feed(&mut self, bytes: &[u8]) -> Result<(usize, bool), Error> {
        let mut i = 0;
        while i < bytes.len() {
            if self.state == State::Done {
                break;
            }
            if self.state == State::Data {
                let k = (bytes.len() - i).min(usize::try_from(self.size).unwrap_or(usize::MAX));
                i += k;
                self.size -= k as u64;
                self.data += k as u64;
                if self.size == 0 {
                    self.state = State::DataCr;
                }
                continue;
            }
            let b = bytes[i];
            i += 1;
            self.state = match (self.state, b) {
                (State::Size, b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F') => {
                    if self.digits == 15 {
                        return Err(Error::Invalid("chunk size too large"));
                    }
                    self.digits += 1;
                    self.size = self.size * 16 + (b as char).to_digit(16).unwrap_or(0) as u64;
                    State::Size
                }
                (State::Size, b';' | b' ' | b'\t') if self.digits > 0 => State::Ext,
                (State::Size, b'\r') if self.digits > 0 => State::SizeLf,
                (State::Size, _) => return Err(Error::Invalid("bad chunk size")),
                (State::Ext, b'\r') => State::SizeLf,
                (State::Ext, b'\n') => return Err(Error::Invalid("bad chunk extension")),
                (State::Ext, _) => State::Ext,
                (State::SizeLf, b'\n') => {
                    self.digits = 0;
                    if self.size == 0 {
                        State::TrailerStart
                    } else {
                        State::Data
                    }
                }
                (State::DataCr, b'\r') => State::DataLf,
                (State::DataLf, b'\n') => State::Size,
                (State::SizeLf | State::DataCr | State::DataLf, _) => {
                    return Err(Error::Invalid("chunk not followed by CRLF"))
                }
                (State::TrailerStart, b'\r') => State::TrailerLf { last: true },
                (State::Trailer, b'\r') => State::TrailerLf { last: false },
                (State::TrailerStart | State::Trailer, b'\n') => {
                    return Err(Error::Invalid("bad trailer"))
                }
                (State::TrailerStart | State::Trailer, _) => State::Trailer,
                (State::TrailerLf { last }, b'\n') => {
                    if last {
                        State::Done
                    } else {
                        State::TrailerStart
                    }
                }
                (State::TrailerLf { .. }, _) => return Err(Error::Invalid("bad trailer")),
                (State::Data | State::Done, _) => unreachable!("handled above"),
            };
        }
        Ok((i, self.state == State::Done))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(body: &[u8], piece: usize) -> Result<(u64, usize), Error> {
        let mut d = Dechunk::default();
        let mut at = 0;
        for p in body.chunks(piece) {
            let (used, done) = d.feed(p)?;
            at += used;
            if done {
                return Ok((d.data, at));
            }
            assert_eq!(used, p.len());
        }
        Err(Error::Incomplete)
    }

    #[test]
    fn chunked_bodies_split_anywhere() {
        let body =
            b"5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        for piece in 1..body.len() {
            assert_eq!(decode_in_pieces(body, piece), Ok((31, body.len() - 4)));
        }
    }

    #[test]
    fn chunked_errors() {
        assert_eq!(
            decode_in_pieces(b"zz\r\n", 4),
            Err(Error::Invalid("bad chunk size"))
        );
        assert_eq!(
            decode_in_pieces(b"2\r\nabc\r\n", 9),
            Err(Error::Invalid("chunk not followed by CRLF"))
        );
        assert_eq!(
            decode_in_pieces(b"10000000000000000\r\n", 30),
            Err(Error::Invalid("chunk size too large"))
        );
    }

    #[test]
    fn content_length_values() {
        assert_eq!(parse_length(b" 1400 "), Some(1400));
        assert_eq!(parse_length(b"-1"), None);
        assert_eq!(parse_length(b""), None);
        assert_eq!(parse_length(b"99999999999999999999"), None);
    }
}
