//! TLS for every connection surge opens to a target: the `--ca-cert`, `--insecure` and `--resolve`
//! flags shared by replay, bench and record, the one rustls client config a run builds from them
//! (ring provider; roots from the platform's store plus `--ca-cert`), and certificate errors turned
//! into one line that names the reason (expired, unknown issuer, name mismatch, self-signed) and
//! the way out (`--ca-cert`, `--insecure`).
//!
//! Why one config per run: building it parses every platform root (~150 certificates, some
//! milliseconds); per connection that would dominate a 10,000-user run's start.

use super::SetupError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// The TLS and address flags of every command that talks to a target (flattened into each one's
/// clap arguments so the three spell them alike).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TlsArgs {
    /// Also trust this CA certificate (PEM file; repeatable) for https:// and wss:// targets, on
    /// top of the platform's trust store
    #[arg(long = "ca-cert", value_name = "FILE")]
    pub ca_certs: Vec<PathBuf>,
    /// Do not verify the target's certificate (a warning says so; summary.json records it)
    #[arg(long)]
    pub insecure: bool,
    /// Connect to ADDR for HOST:PORT, keeping HOST for SNI, certificate checks and the Host
    /// header (curl's form; repeatable)
    #[arg(long = "resolve", value_name = "HOST:PORT:ADDR")]
    pub resolve: Vec<String>,
}

/// Which application protocol the TLS handshake offers (ALPN).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Alpn {
    /// HTTP/1.1 (replay, record, bench without --http2; WebSocket upgrades need it).
    Http1,
    /// HTTP/2 (`bench --http2`).
    H2,
}

/// One `--resolve HOST:PORT:ADDR`.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolve {
    /// Lower-cased host name as written in URLs.
    pub host: String,
    /// Port it applies to.
    pub port: u16,
    /// Address connected to instead.
    pub addr: IpAddr,
}

/// Parses curl's `HOST:PORT:ADDR` (ADDR may be a bracketed IPv6 address).
pub fn parse_resolve(s: &str) -> Result<Resolve, SetupError> {
    let bad = |why| SetupError::Resolve {
        text: s.to_string(),
        why,
    };
    let (host, rest) = s.split_once(':').ok_or_else(|| bad("no port"))?;
    let (port, addr) = rest.split_once(':').ok_or_else(|| bad("no address"))?;
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let port: u16 = port.parse().map_err(|_| bad("bad port"))?;
    let addr = addr.trim_start_matches('[').trim_end_matches(']');
    let addr: IpAddr = addr.parse().map_err(|_| bad("ADDR is not an IP address"))?;
    Ok(Resolve {
        host: host.to_ascii_lowercase(),
        port,
        addr,
    })
}

impl TlsArgs {
    /// The `--resolve` entries, parsed.
    pub fn resolves(&self) -> Result<Vec<Resolve>, SetupError> {
        self.resolve.iter().map(|s| parse_resolve(s)).collect()
    }

    /// The run's one client config: platform roots + `--ca-cert`s (or no verification with
    /// `--insecure`), offering `alpn`. Errors name the file or the store.
    pub fn client_config(&self, alpn: Alpn) -> Result<Arc<ClientConfig>, SetupError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(SetupError::Tls)?;
        let mut config = if self.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
                .with_no_client_auth()
        } else {
            builder
                .with_root_certificates(self.roots()?)
                .with_no_client_auth()
        };
        config.alpn_protocols = match alpn {
            Alpn::Http1 => vec![b"http/1.1".to_vec()],
            Alpn::H2 => vec![b"h2".to_vec()],
        };
        Ok(Arc::new(config))
    }

    /// The platform's roots (unreadable ones skipped, as curl does) and every `--ca-cert`.
    fn roots(&self) -> Result<RootCertStore, SetupError> {
        let mut roots = RootCertStore::empty();
        let native = rustls_native_certs::load_native_certs();
        let _ = roots.add_parsable_certificates(native.certs);
        for path in &self.ca_certs {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect::<Result<_, _>>())
                .map_err(|err| SetupError::CaCertPem {
                    path: path.clone(),
                    err,
                })?;
            if certs.is_empty() {
                return Err(SetupError::CaCertEmpty(path.clone()));
            }
            for c in certs {
                roots.add(c).map_err(|err| SetupError::CaCertBad {
                    path: path.clone(),
                    err,
                })?;
            }
        }
        if roots.is_empty() {
            return Err(SetupError::NoRoots);
        }
        Ok(roots)
    }
}

/// The SNI / certificate name for a URL host (a DNS name or an IP address).
pub fn server_name(host: &str) -> Result<ServerName<'static>, SetupError> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(h.to_string()).map_err(|_| SetupError::ServerName(host.to_string()))
}

/// Why a TLS handshake failed, in a few words people search for: "certificate expired",
/// "unknown issuer", "name mismatch", or rustls's own text for anything else.
pub fn reason(e: &std::io::Error, host: &str) -> String {
    let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) else {
        return match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                "the server closed the connection during the handshake (not TLS?)".into()
            }
            _ => e.to_string(),
        };
    };
    match tls {
        rustls::Error::InvalidCertificate(c) => certificate_reason(c, host),
        rustls::Error::InvalidMessage(_) => {
            format!("{tls} (is the target speaking TLS on this port?)")
        }
        other => other.to_string(),
    }
}

fn certificate_reason(c: &CertificateError, host: &str) -> String {
    let date = |t: &UnixTime| {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(t.as_secs());
        humantime::format_rfc3339_seconds(at).to_string()
    };
    match c {
        CertificateError::Expired => "certificate expired".into(),
        CertificateError::ExpiredContext { not_after, .. } => {
            format!("certificate expired (not valid after {})", date(not_after))
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "certificate not valid yet".into()
        }
        CertificateError::UnknownIssuer => "certificate from an unknown issuer (not signed by a trusted CA, or self-signed; trust its CA, or the self-signed certificate itself, with --ca-cert FILE, or skip the check with --insecure)".into(),
        CertificateError::NotValidForName => format!("certificate name mismatch (not valid for {host})"),
        CertificateError::NotValidForNameContext { presented, .. } => {
            // rustls writes names as `DnsName("x")`: keep the x.
            let names: Vec<&str> = (presented.iter())
                .map(|p| p.split('"').nth(1).unwrap_or(p))
                .collect();
            format!(
                "certificate name mismatch (not valid for {host}; it names {})",
                names.join(", ")
            )
        }
        CertificateError::BadSignature => "certificate has a bad signature".into(),
        CertificateError::Revoked => "certificate revoked".into(),
        CertificateError::Other(other) => webpki_reason(&other.to_string()),
        other => format!("bad certificate: {other:?}; {WAY_OUT}"),
    }
}

/// The way out of a certificate problem rustls names only by webpki's error (`Other`).
const WAY_OUT: &str =
    "trust the CA that signed the server's certificate with --ca-cert FILE, or skip the check with --insecure";

/// webpki's errors rustls passes on as they are (their `Debug` name), in a sentence: a
/// self-signed certificate made as a CA (`openssl req -x509` marks it `CA:TRUE`) comes as
/// `CaUsedAsEndEntity`, trusted with `--ca-cert` or not.
fn webpki_reason(name: &str) -> String {
    match name {
        "CaUsedAsEndEntity" => "self-signed CA certificate used as the server's own (CA:TRUE, as `openssl req -x509` makes it by default; a CA's certificate cannot be a server's): serve one signed by a CA you trust with --ca-cert FILE, or a self-signed one made with `-addext basicConstraints=critical,CA:FALSE` trusted the same way, or skip the check with --insecure".into(),
        "EndEntityUsedAsCa" => {
            format!("the chain uses a server's certificate as a CA (CA:FALSE); {WAY_OUT}")
        }
        other => format!("bad certificate ({other}); {WAY_OUT}"),
    }
}

/// `--insecure`: accepts any certificate but still checks the handshake's signatures, so the
/// connection is encrypted to whoever answered.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_forms() {
        let r = parse_resolve("App.Example:443:127.0.0.1").unwrap();
        assert_eq!((r.host.as_str(), r.port), ("app.example", 443));
        assert_eq!(r.addr, "127.0.0.1".parse::<IpAddr>().unwrap());
        let r = parse_resolve("h:8443:[::1]").unwrap();
        assert_eq!(r.addr, "::1".parse::<IpAddr>().unwrap());
        for bad in ["h", "h:1", "h:x:127.0.0.1", ":1:127.0.0.1", "h:1:nothost"] {
            let e = parse_resolve(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--resolve {bad}: ")), "{e}");
        }
    }

    #[test]
    fn missing_ca_file_names_it() {
        let a = TlsArgs {
            ca_certs: vec!["/nonexistent/ca.pem".into()],
            ..Default::default()
        };
        let e = a.client_config(Alpn::Http1).unwrap_err().to_string();
        assert!(e.starts_with("--ca-cert /nonexistent/ca.pem: "), "{e}");
    }
}
