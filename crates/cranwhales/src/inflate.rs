//! Streaming gunzip for ingest: Intel's ISA-L when the build found it, else flate2 (zlib-rs).
//!
//! Inflating is the largest single cost of an ingest and sits on the reading thread, which is
//! the pipeline's bottleneck. On the 10M-row bench day (154 MB gzip, 836 MB of text) zlib-rs
//! took ~1.75 s of CPU, ISA-L's `igzip -d` 1.3 s (libdeflate, which needs the whole file in
//! memory, 1.3 s). ISA-L streams, so memory stays bounded. It is linked from Debian's
//! libisal-dev through a ten-line C shim (`native/isal_inflate.c`); `build.rs` falls back to
//! flate2 when the library is missing, so the crate builds anywhere.

use std::io::{self, BufReader, Read};

/// A reader of the decompressed bytes of a (possibly multi-member) gzip stream.
pub enum Gunzip<R: Read> {
    /// ISA-L (built only when `build.rs` found libisal-dev).
    #[cfg(isal)]
    Isal(isal::Decoder<R>),
    /// flate2 with zlib-rs: the portable fallback.
    Zlib(Box<flate2::bufread::MultiGzDecoder<BufReader<R>>>),
}

/// Input is read in blocks this large.
const IN_BUF: usize = 256 * 1024;

impl<R: Read> Gunzip<R> {
    /// The fastest decoder this build has.
    pub fn new(inner: R) -> Self {
        #[cfg(isal)]
        return Gunzip::Isal(isal::Decoder::new(inner).expect("memory for ISA-L's inflate state"));
        #[cfg(not(isal))]
        Self::zlib(inner)
    }

    /// flate2's decoder, whatever the build (tests compare the two).
    pub fn zlib(inner: R) -> Self {
        Gunzip::Zlib(Box::new(flate2::bufread::MultiGzDecoder::new(
            BufReader::with_capacity(IN_BUF, inner),
        )))
    }

    /// Which decoder this is, for logs and the benchmark.
    pub fn name(&self) -> &'static str {
        match self {
            #[cfg(isal)]
            Gunzip::Isal(_) => "isa-l",
            Gunzip::Zlib(_) => "zlib-rs",
        }
    }
}

impl<R: Read> Read for Gunzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            #[cfg(isal)]
            Gunzip::Isal(d) => d.read(buf),
            Gunzip::Zlib(d) => d.read(buf),
        }
    }
}

#[cfg(isal)]
pub mod isal {
    //! The ISA-L decoder behind [`super::Gunzip`].

    use std::ffi::{c_int, c_void};
    use std::io::{self, Read};
    use std::ptr::NonNull;

    extern "C" {
        fn cw_isal_new() -> *mut c_void;
        fn cw_isal_free(s: *mut c_void);
        fn cw_isal_reset(s: *mut c_void);
        fn cw_isal_inflate(
            s: *mut c_void,
            input: *const u8,
            in_len: *mut u32,
            out: *mut u8,
            out_len: *mut u32,
            done: *mut c_int,
        ) -> c_int;
    }

    /// Streams one or more gzip members from `inner`, verifying each member's CRC-32 and length.
    pub struct Decoder<R> {
        inner: R,
        state: NonNull<c_void>,
        input: Box<[u8]>,
        pos: usize,
        len: usize,
        eof: bool,
        /// The current member ended (and checked out); more input means another member.
        member_done: bool,
    }

    // SAFETY: the state is plain memory owned by this value alone; ISA-L keeps no thread state.
    unsafe impl<R: Send> Send for Decoder<R> {}

    impl<R: Read> Decoder<R> {
        /// `None` only if the state could not be allocated.
        pub fn new(inner: R) -> Option<Self> {
            // SAFETY: returns a fresh, initialised state or null.
            let state = NonNull::new(unsafe { cw_isal_new() })?;
            Some(Decoder {
                inner,
                state,
                input: vec![0; super::IN_BUF].into_boxed_slice(),
                pos: 0,
                len: 0,
                eof: false,
                member_done: false,
            })
        }

        /// Reads more input once the buffer is used up; false at end of file.
        fn fill(&mut self) -> io::Result<bool> {
            if self.pos < self.len {
                return Ok(true);
            }
            if self.eof {
                return Ok(false);
            }
            loop {
                match self.inner.read(&mut self.input) {
                    Ok(0) => {
                        self.eof = true;
                        return Ok(false);
                    }
                    Ok(n) => {
                        (self.pos, self.len) = (0, n);
                        return Ok(true);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }

    impl<R: Read> Read for Decoder<R> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if buf.is_empty() {
                return Ok(0);
            }
            let out_cap = buf.len().min(u32::MAX as usize) as u32;
            loop {
                let more = self.fill()?;
                if self.member_done {
                    if !more {
                        return Ok(0);
                    }
                    // SAFETY: `state` is live and ours.
                    unsafe { cw_isal_reset(self.state.as_ptr()) };
                    self.member_done = false;
                }
                let mut in_len = (self.len - self.pos) as u32;
                let mut out_len = out_cap;
                let mut done: c_int = 0;
                // SAFETY: the pointers and lengths describe live buffers ISA-L only reads
                // (`input[pos..len]`) or writes (`buf[..out_cap]`) for this call.
                let code = unsafe {
                    cw_isal_inflate(
                        self.state.as_ptr(),
                        self.input[self.pos..].as_ptr(),
                        &mut in_len,
                        buf.as_mut_ptr(),
                        &mut out_len,
                        &mut done,
                    )
                };
                self.pos += in_len as usize;
                if code < 0 {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, describe(code)));
                }
                self.member_done = done != 0;
                if out_len > 0 {
                    return Ok(out_len as usize);
                }
                if !more && !self.member_done {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "gzip stream ends early",
                    ));
                }
            }
        }
    }

    impl<R> Drop for Decoder<R> {
        fn drop(&mut self) {
            // SAFETY: allocated by `cw_isal_new`, freed once.
            unsafe { cw_isal_free(self.state.as_ptr()) }
        }
    }

    /// ISA-L's inflate error codes (igzip_lib.h), in words.
    fn describe(code: c_int) -> &'static str {
        match code {
            -1 => "invalid deflate block",
            -2 => "invalid deflate symbol",
            -3 => "invalid back-reference distance",
            -4 => "invalid gzip header",
            -5 => "unsupported compression method",
            -6 => "checksum mismatch (CRC-32 or length)",
            _ => "invalid data",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(parts: &[&[u8]]) -> Vec<u8> {
        // One gzip member per part: a multi-member file like `cat a.gz b.gz`.
        let mut all = Vec::new();
        for p in parts {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(p).unwrap();
            all.extend(e.finish().unwrap());
        }
        all
    }

    /// Everything `Gunzip` yields, read `chunk` bytes at a time, and the error that stopped it.
    fn gunzip_partial(data: &[u8], chunk: usize) -> (Vec<u8>, Option<io::Error>) {
        let mut r = Gunzip::new(data);
        let (mut out, mut buf) = (Vec::new(), vec![0; chunk]);
        loop {
            match r.read(&mut buf) {
                Ok(0) => return (out, None),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    fn gunzip(data: &[u8], chunk: usize) -> io::Result<Vec<u8>> {
        match gunzip_partial(data, chunk) {
            (out, None) => Ok(out),
            (_, Some(e)) => Err(e),
        }
    }

    fn real_day() -> Vec<u8> {
        let p = match std::env::var_os("CRANWHALES_TEST_DATA") {
            Some(root) => std::path::PathBuf::from(root).join("cranlogs"),
            None => concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/cranlogs").into(),
        };
        let mut files: Vec<_> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "gz"))
            .collect();
        files.sort();
        std::fs::read(&files[files.len() / 2]).unwrap()
    }

    #[test]
    fn matches_flate2_on_a_real_day_in_small_and_large_reads() {
        let data = real_day();
        let mut want = Vec::new();
        Gunzip::zlib(&data[..]).read_to_end(&mut want).unwrap();
        assert!(want.len() > 1_000_000);
        for chunk in [4093, 512 * 1024] {
            assert!(gunzip(&data, chunk).unwrap() == want, "chunk {chunk}");
        }
        // A byte at a time through a cut file: all it yields is right, then it says "truncated".
        let (got, err) = gunzip_partial(&data[..40_000], 1);
        assert_eq!(err.unwrap().kind(), io::ErrorKind::UnexpectedEof);
        assert!(
            got.len() > 40_000 && want.starts_with(&got),
            "{}",
            got.len()
        );
    }

    #[test]
    fn reads_every_member_of_a_multi_member_file() {
        let data = gz(&[b"a,b\n1,2\n", b"", b"3,4\n"]);
        assert_eq!(gunzip(&data, 3).unwrap(), b"a,b\n1,2\n3,4\n");
    }

    #[test]
    fn truncation_corruption_and_trailing_garbage_are_errors() {
        let data = gz(&[&b"x,y,z\n".repeat(10_000)]);
        let cut = gunzip(&data[..data.len() - 5], 1 << 16).unwrap_err();
        assert_eq!(cut.kind(), io::ErrorKind::UnexpectedEof, "{cut}");
        let mut bad_crc = data.clone();
        let n = bad_crc.len();
        bad_crc[n - 6] ^= 1;
        assert_eq!(
            gunzip(&bad_crc, 1 << 16).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        let mut garbage = data.clone();
        garbage.extend_from_slice(b"not gzip");
        assert!(gunzip(&garbage, 1 << 16).is_err());
    }

    #[test]
    fn builds_with_isa_l_where_the_library_is_installed() {
        let installed = std::path::Path::new("/usr/include/isa-l/igzip_lib.h").exists()
            && option_env!("CRANWHALES_NO_ISAL").is_none();
        assert_eq!(
            cfg!(isal),
            installed,
            "build.rs should find ISA-L exactly when it is installed"
        );
        assert_eq!(Gunzip::new(&b""[..]).name() == "isa-l", installed);
    }
}
