//! A job's `tls_config` as a rustls client configuration: its CA
//! certificates (only them, as Prometheus' pool holds only them) or the
//! system's, a client certificate, `server_name`, `insecure_skip_verify`,
//! `min_version`/`max_version`.
//!
//! rustls speaks TLS 1.2 and 1.3: a `min_version` below 1.2 allows both
//! (Go's client default is 1.2 too), a `max_version` below 1.2 cannot be
//! honoured and the client is not built. `server_name` is the name the
//! server's certificate is checked against; unlike Go, the TLS SNI
//! extension still names the target's host (rustls sends none for an IP
//! address).

use std::sync::Arc;

use ferrite_config::http_client::{SecretSource, TlsConfig, TlsVersion};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::read_secret_file;

/// The CA, certificate and key texts a configuration was built from
/// (files are read again before each request; a change rebuilds it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct TlsMaterial {
    ca: Option<String>,
    cert: Option<String>,
    key: Option<String>,
}

/// Reads the CA, certificate and key, as Prometheus' messages name them.
pub(crate) fn read_material(cfg: &TlsConfig) -> Result<TlsMaterial, String> {
    let read = |source: Option<SecretSource<'_>>, use_what: &str, read_what: &str| match source {
        None => Ok(None),
        Some(SecretSource::Inline(text)) => Ok(Some(text.to_string())),
        Some(SecretSource::File(f)) => read_secret_file(f)
            .map(Some)
            .map_err(|e| format!("unable to read {read_what}: {e}")),
        Some(SecretSource::Ref(_)) => Err(format!(
            "unable to use {use_what}: cannot use secret ref without manager"
        )),
    };
    Ok(TlsMaterial {
        ca: read(cfg.ca_source(), "CA cert", "CA cert")?,
        cert: read(cfg.cert_source(), "client cert", "specified client cert")?,
        key: read(cfg.key_source(), "client key", "specified client key")?,
    })
}

/// Whether any of the material comes from a file (and may change).
pub(crate) fn has_files(cfg: &TlsConfig) -> bool {
    [cfg.ca_source(), cfg.cert_source(), cfg.key_source()]
        .iter()
        .any(|s| matches!(s, Some(SecretSource::File(_))))
}

fn description(source: Option<SecretSource<'_>>) -> String {
    match source {
        Some(SecretSource::File(f)) => format!("file {f}"),
        Some(SecretSource::Ref(r)) => format!("ref {r}"),
        _ => "inline".to_string(),
    }
}

/// The rustls configuration for `cfg` with `material`; `alpn` as the
/// protocols offered (`h2` only when HTTP/2 is enabled).
pub(crate) fn client_config(
    cfg: &TlsConfig,
    material: &TlsMaterial,
    http2: bool,
) -> Result<rustls::ClientConfig, String> {
    if let (Some(min), Some(max)) = (cfg.min_version, cfg.max_version) {
        if max < min {
            return Err("tls_config.max_version must be greater than or equal to tls_config.min_version if both are specified".to_string());
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let min = cfg.min_version.unwrap_or(TlsVersion::Tls12);
    let max = cfg.max_version.unwrap_or(TlsVersion::Tls13);
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = [
        (TlsVersion::Tls12, &rustls::version::TLS12),
        (TlsVersion::Tls13, &rustls::version::TLS13),
    ]
    .into_iter()
    .filter(|(v, _)| (min..=max).contains(v))
    .map(|(_, p)| p)
    .collect();
    if versions.is_empty() {
        return Err(format!(
            "tls_config.max_version {}: TLS versions below 1.2 are not supported",
            max.name()
        ));
    }
    let verifier: Arc<dyn ServerCertVerifier> = if cfg.insecure_skip_verify {
        Arc::new(AcceptAnyCertificate(provider.clone()))
    } else {
        let roots = roots(material, cfg)?;
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| format!("unable to use the CA certificates: {e}"))?;
        if cfg.server_name.is_empty() {
            webpki
        } else {
            Arc::new(NamedVerifier {
                inner: webpki,
                name: cfg.server_name.clone(),
            })
        }
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match (&material.cert, &material.key) {
        (Some(cert), Some(key)) => {
            let fail = |reason: String| {
                format!(
                    "unable to use specified client cert ({}) & key ({}): {reason}",
                    description(cfg.cert_source()),
                    description(cfg.key_source())
                )
            };
            let certs: Vec<CertificateDer<'static>> =
                CertificateDer::pem_slice_iter(cert.as_bytes())
                    .collect::<Result<_, _>>()
                    .map_err(|e| fail(format!("tls: {e}")))?;
            if certs.is_empty() {
                return Err(fail(
                    "tls: failed to find any PEM data in certificate input".to_string(),
                ));
            }
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes())
                .map_err(|_| fail("tls: failed to find any PEM data in key input".to_string()))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| fail(format!("tls: {e}")))?
        }
        _ => builder.with_no_client_auth(),
    };
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(config)
}

/// The given CA certificates, else the system's.
fn roots(material: &TlsMaterial, cfg: &TlsConfig) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    match &material.ca {
        Some(ca) => {
            let certs = CertificateDer::pem_slice_iter(ca.as_bytes()).filter_map(Result::ok);
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!(
                    "unable to use specified CA cert {}",
                    description(cfg.ca_source())
                ));
            }
        }
        None => {
            let system = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(system.certs);
        }
    }
    Ok(roots)
}

/// Checks the server's certificate against `tls_config.server_name`
/// rather than the target's host.
#[derive(Debug)]
struct NamedVerifier {
    inner: Arc<WebPkiServerVerifier>,
    name: String,
}

impl ServerCertVerifier for NamedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let name = ServerName::try_from(self.name.as_str()).map_err(|_| {
            rustls::Error::General(format!("invalid tls_config.server_name {:?}", self.name))
        })?;
        self.inner
            .verify_server_cert(end_entity, intermediates, &name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `insecure_skip_verify`: any certificate is accepted (the handshake's
/// signatures are still checked).
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
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
