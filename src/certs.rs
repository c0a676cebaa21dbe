//! In-process certificate chains for every key type: root -> intermediates ->
//! leaf, one leaf for the server and one for the client, all with the same key
//! type. Chains are generated with OpenSSL once, cached on disk, and never
//! generated inside a measurement. Private keys are written 0600 in 0700
//! folders, and a cache written before that rule has its modes fixed when
//! it is read.

use std::collections::HashMap;
use std::ffi::CString;
use std::fs;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use foreign_types::ForeignType;
use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::x509::extension::{
    BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName,
};
use openssl::x509::{X509Builder, X509NameBuilder, X509};

use crate::scenario::{CertKind, Named};

/// The DNS name in every leaf certificate; clients verify it.
pub const SERVER_NAME: &str = "tlslab.test";

/// A leaf certificate with the intermediates that lead to the root.
#[derive(Debug, Clone)]
pub struct CertChain {
    /// DER certificates from the leaf up to, not including, the root.
    pub chain_der: Vec<Vec<u8>>,
    /// The leaf's private key, PKCS#8 DER.
    pub key_pkcs8_der: Vec<u8>,
}

/// Everything a handshake needs: the trusted root and both leaves.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub kind: CertKind,
    /// Certificates from root to leaf inclusive.
    pub depth: u8,
    pub root_der: Vec<u8>,
    pub server: CertChain,
    pub client: CertChain,
}

/// Chains cached on disk and in memory.
#[derive(Debug)]
pub struct CertCache {
    dir: PathBuf,
    loaded: Mutex<HashMap<(CertKind, u8), Arc<Credentials>>>,
}

impl CertCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            loaded: Mutex::new(HashMap::new()),
        }
    }

    /// Where the chains are kept.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// The default cache directory: the user's cache directory, `tlslab/certs`.
    pub fn default_dir() -> PathBuf {
        dirs::cache_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("tlslab")
            .join("certs")
    }

    /// The credentials for a key type and chain depth, generated on first use.
    pub fn get(&self, kind: CertKind, depth: u8) -> Result<Arc<Credentials>> {
        // Held throughout, so threads never generate the same chain twice.
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = loaded.get(&(kind, depth)) {
            return Ok(Arc::clone(found));
        }
        let folder = self.folder(kind, depth);
        let credentials = match load(&folder, kind, depth) {
            Ok(credentials) => {
                restrict_modes(&folder);
                credentials
            }
            Err(_) => {
                generate_into(&folder, kind, depth)
                    .with_context(|| format!("generating a {} certificate chain", kind.id()))?;
                load(&folder, kind, depth)?
            }
        };
        let credentials = Arc::new(credentials);
        loaded.insert((kind, depth), Arc::clone(&credentials));
        Ok(credentials)
    }
}

impl CertCache {
    /// The folder of one chain.
    fn folder(&self, kind: CertKind, depth: u8) -> PathBuf {
        self.dir.join(format!("{}_depth{}", kind.id(), depth))
    }

    /// The PEM file of the root that signed the chain of a key type and
    /// depth (what a client passes to `curl --cacert`), the chain generated
    /// on first use.
    pub fn root_pem(&self, kind: CertKind, depth: u8) -> Result<PathBuf> {
        self.get(kind, depth)?;
        Ok(self.folder(kind, depth).join("root.pem"))
    }
}

impl CertCache {
    /// A PEM file with the roots of the chains of `kinds` at `depth` (each
    /// key type has its own root), for a client of a server that offers
    /// all of them: the one root's file for one kind, else a bundle written
    /// beside the chains.
    pub fn root_bundle(&self, kinds: &[CertKind], depth: u8) -> Result<PathBuf> {
        if let [kind] = kinds {
            return self.root_pem(*kind, depth);
        }
        let mut pem = Vec::new();
        for kind in kinds {
            pem.extend(fs::read(self.root_pem(*kind, depth)?)?);
        }
        let names: Vec<&str> = kinds.iter().map(|k| k.id()).collect();
        let path = self
            .dir
            .join(format!("roots_{}_depth{depth}.pem", names.join("+")));
        if fs::read(&path).ok().as_ref() != Some(&pem) {
            let staging = self.dir.join(format!(".roots.{}", std::process::id()));
            fs::write(&staging, &pem)
                .and_then(|()| fs::rename(&staging, &path))
                .with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(path)
    }
}

/// The mode of a chain's folder: only its owner may list or enter it.
const FOLDER_MODE: u32 = 0o700;
/// The mode of a private key file: only its owner may read it.
const KEY_MODE: u32 = 0o600;

/// Gives a chain's folder and its private keys their modes, if they have
/// others (a cache written by an older tlslab: 0755 and 0644). Best effort:
/// a cache the user does not own is read as it is.
fn restrict_modes(folder: &Path) {
    let restrict = |path: &Path, mode: u32| {
        if let Ok(metadata) = fs::metadata(path) {
            if metadata.permissions().mode() & 0o777 != mode {
                let _ = fs::set_permissions(path, fs::Permissions::from_mode(mode));
            }
        }
    };
    restrict(folder, FOLDER_MODE);
    for key in ["server.key", "client.key"] {
        restrict(&folder.join(key), KEY_MODE);
    }
}

/// Writes a private key readable by its owner only: created with that
/// mode, never readable by others even for a moment.
fn write_key(path: &Path, pem: &[u8]) -> Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(KEY_MODE)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    std::io::Write::write_all(&mut file, pem).with_context(|| format!("writing {}", path.display()))
}

fn load(folder: &Path, kind: CertKind, depth: u8) -> Result<Credentials> {
    let read_certs = |name: &str| -> Result<Vec<Vec<u8>>> {
        let pem = fs::read(folder.join(name))?;
        X509::stack_from_pem(&pem)?
            .iter()
            .map(|cert| cert.to_der().map_err(Into::into))
            .collect()
    };
    let read_key = |name: &str| -> Result<Vec<u8>> {
        let pem = fs::read(folder.join(name))?;
        Ok(PKey::private_key_from_pem(&pem)?.private_key_to_pkcs8()?)
    };
    let root = read_certs("root.pem")?;
    let server = read_certs("server.pem")?;
    let client = read_certs("client.pem")?;
    if root.len() != 1 || server.len() != usize::from(depth) - 1 || client.len() != server.len() {
        bail!("cached chain in {} is incomplete", folder.display());
    }
    Ok(Credentials {
        kind,
        depth,
        root_der: root.into_iter().next().unwrap_or_default(),
        server: CertChain {
            chain_der: server,
            key_pkcs8_der: read_key("server.key")?,
        },
        client: CertChain {
            chain_der: client,
            key_pkcs8_der: read_key("client.key")?,
        },
    })
}

/// Generates a fresh chain and writes it to `folder` (atomically: a partly
/// written chain is never seen as cached).
fn generate_into(folder: &Path, kind: CertKind, depth: u8) -> Result<()> {
    if depth < 2 {
        bail!("a chain needs at least a root and a leaf (depth 2), got {depth}");
    }
    let parent = folder
        .parent()
        .context("certificate folder has no parent")?;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(FOLDER_MODE)
        .create(parent)
        .with_context(|| format!("creating certificate cache {}", parent.display()))?;
    let staging = parent.join(format!(
        ".{}.{}",
        folder
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("chain"),
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&staging);
    fs::DirBuilder::new()
        .mode(FOLDER_MODE)
        .create(&staging)
        .with_context(|| format!("creating {}", staging.display()))?;

    let root_key = generate_key(kind)?;
    let root = build_cert(
        kind,
        &format!("tlslab root CA ({})", kind.id()),
        &root_key,
        None,
        Role::Ca,
    )?;
    let mut issuers: Vec<(X509, PKey<Private>)> = vec![(root.clone(), root_key)];
    for level in 1..=(depth - 2) {
        let key = generate_key(kind)?;
        let (issuer_cert, issuer_key) = issuers.last().expect("root is present");
        let name = format!("tlslab intermediate {level} ({})", kind.id());
        let cert = build_cert(kind, &name, &key, Some((issuer_cert, issuer_key)), Role::Ca)?;
        issuers.push((cert, key));
    }
    let intermediates: Vec<&X509> = issuers[1..].iter().rev().map(|(cert, _)| cert).collect();
    let (issuer_cert, issuer_key) = issuers.last().expect("root is present");

    for (role, file) in [(Role::Server, "server"), (Role::Client, "client")] {
        let key = generate_key(kind)?;
        let leaf = build_cert(
            kind,
            SERVER_NAME,
            &key,
            Some((issuer_cert, issuer_key)),
            role,
        )?;
        let mut pem = leaf.to_pem()?;
        for cert in &intermediates {
            pem.extend(cert.to_pem()?);
        }
        fs::write(staging.join(format!("{file}.pem")), pem)?;
        write_key(
            &staging.join(format!("{file}.key")),
            &key.private_key_to_pem_pkcs8()?,
        )?;
    }
    fs::write(staging.join("root.pem"), root.to_pem()?)?;
    if load(folder, kind, depth).is_ok() {
        // Another process finished the same chain first: keep its chain.
        let _ = fs::remove_dir_all(&staging);
        return Ok(());
    }
    let _ = fs::remove_dir_all(folder);
    if let Err(error) = fs::rename(&staging, folder) {
        let _ = fs::remove_dir_all(&staging);
        if load(folder, kind, depth).is_err() {
            return Err(error)
                .with_context(|| format!("moving the new chain into {}", folder.display()));
        }
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Ca,
    Server,
    Client,
}

/// Generates a private key of the given type.
pub fn generate_key(kind: CertKind) -> Result<PKey<Private>> {
    let ec = |nid: Nid| -> Result<PKey<Private>> {
        let group = EcGroup::from_curve_name(nid)?;
        Ok(PKey::from_ec_key(EcKey::generate(&group)?)?)
    };
    Ok(match kind {
        CertKind::Rsa2048 => PKey::from_rsa(Rsa::generate(2048)?)?,
        CertKind::Rsa3072 => PKey::from_rsa(Rsa::generate(3072)?)?,
        CertKind::Rsa4096 => PKey::from_rsa(Rsa::generate(4096)?)?,
        CertKind::EcdsaP256 => ec(Nid::X9_62_PRIME256V1)?,
        CertKind::EcdsaP384 => ec(Nid::SECP384R1)?,
        CertKind::EcdsaP521 => ec(Nid::SECP521R1)?,
        CertKind::Ed25519 => PKey::generate_ed25519()?,
        CertKind::Ed448 => PKey::generate_ed448()?,
        CertKind::MlDsa44 => generate_key_by_name("ML-DSA-44")?,
        CertKind::MlDsa65 => generate_key_by_name("ML-DSA-65")?,
        CertKind::MlDsa87 => generate_key_by_name("ML-DSA-87")?,
    })
}

/// True if and only if this OpenSSL can generate (and so sign with) keys of this type.
pub fn openssl_supports_key(kind: CertKind) -> bool {
    let name = match kind {
        CertKind::MlDsa44 => "ML-DSA-44",
        CertKind::MlDsa65 => "ML-DSA-65",
        CertKind::MlDsa87 => "ML-DSA-87",
        _ => return true,
    };
    let Ok(name) = CString::new(name) else {
        return false;
    };
    // SAFETY: a NULL library context and property query select the defaults;
    // the context is freed right away.
    unsafe {
        let ctx = openssl_sys::EVP_PKEY_CTX_new_from_name(
            std::ptr::null_mut(),
            name.as_ptr(),
            std::ptr::null(),
        );
        if ctx.is_null() {
            openssl_sys::ERR_clear_error();
            return false;
        }
        openssl_sys::EVP_PKEY_CTX_free(ctx);
        true
    }
}

/// Generates a key through OpenSSL's provider interface, by algorithm name.
fn generate_key_by_name(name: &str) -> Result<PKey<Private>> {
    let c_name = CString::new(name)?;
    // SAFETY: every pointer is checked; the context is freed on every path and
    // ownership of the generated key passes to `PKey`.
    unsafe {
        let ctx = openssl_sys::EVP_PKEY_CTX_new_from_name(
            std::ptr::null_mut(),
            c_name.as_ptr(),
            std::ptr::null(),
        );
        if ctx.is_null() {
            return Err(anyhow!(
                "this OpenSSL has no {name} keys: {}",
                openssl::error::ErrorStack::get()
            ));
        }
        let mut key: *mut openssl_sys::EVP_PKEY = std::ptr::null_mut();
        let ok = openssl_sys::EVP_PKEY_keygen_init(ctx) > 0
            && openssl_sys::EVP_PKEY_generate(ctx, &mut key) > 0
            && !key.is_null();
        openssl_sys::EVP_PKEY_CTX_free(ctx);
        if !ok {
            return Err(anyhow!(
                "generating an {name} key failed: {}",
                openssl::error::ErrorStack::get()
            ));
        }
        Ok(PKey::from_ptr(key))
    }
}

/// The digest a certificate signature uses with this key type (`null` for
/// algorithms that hash internally).
fn signing_digest(kind: CertKind) -> MessageDigest {
    match kind {
        CertKind::Rsa2048 | CertKind::Rsa3072 | CertKind::Rsa4096 | CertKind::EcdsaP256 => {
            MessageDigest::sha256()
        }
        CertKind::EcdsaP384 => MessageDigest::sha384(),
        CertKind::EcdsaP521 => MessageDigest::sha512(),
        _ => MessageDigest::null(),
    }
}

fn build_cert(
    kind: CertKind,
    common_name: &str,
    key: &PKey<Private>,
    issuer: Option<(&X509, &PKey<Private>)>,
    role: Role,
) -> Result<X509> {
    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_nid(Nid::ORGANIZATIONNAME, "tlslab")?;
    name.append_entry_by_nid(Nid::COMMONNAME, common_name)?;
    let name = name.build();

    let mut builder = X509Builder::new()?;
    builder.set_version(2)?;
    let mut serial = BigNum::new()?;
    serial.rand(127, MsbOption::MAYBE_ZERO, false)?;
    let serial = serial.to_asn1_integer()?;
    builder.set_serial_number(&serial)?;
    builder.set_subject_name(&name)?;
    match issuer {
        Some((issuer_cert, _)) => builder.set_issuer_name(issuer_cert.subject_name())?,
        None => builder.set_issuer_name(&name)?,
    }
    // `time_t` is 32 bits on 32-bit ARM (armv7 glibc): the cast serves both.
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as libc::time_t;
    let not_before = Asn1Time::from_unix(now - 3600)?;
    let not_after = Asn1Time::days_from_now(3650)?;
    builder.set_not_before(&not_before)?;
    builder.set_not_after(&not_after)?;
    builder.set_pubkey(key)?;

    match role {
        Role::Ca => {
            builder.append_extension(BasicConstraints::new().critical().ca().build()?)?;
            builder.append_extension(
                KeyUsage::new()
                    .critical()
                    .key_cert_sign()
                    .crl_sign()
                    .build()?,
            )?;
        }
        Role::Server | Role::Client => {
            builder.append_extension(BasicConstraints::new().critical().build()?)?;
            let mut usage = KeyUsage::new();
            usage.critical().digital_signature();
            if kind.family() == crate::scenario::SignatureFamily::Rsa {
                // RSA key transport encrypts the premaster secret to this key.
                usage.key_encipherment();
            }
            builder.append_extension(usage.build()?)?;
            let mut extended = ExtendedKeyUsage::new();
            if role == Role::Server {
                extended.server_auth();
            } else {
                extended.client_auth();
            }
            builder.append_extension(extended.build()?)?;
            let san = SubjectAlternativeName::new()
                .dns(SERVER_NAME)
                .build(&builder.x509v3_context(issuer.map(|(cert, _)| cert.as_ref()), None))?;
            builder.append_extension(san)?;
        }
    }
    let signing_key = issuer.map(|(_, key)| key).unwrap_or(key);
    builder.sign(signing_key, signing_digest(kind))?;
    Ok(builder.build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use openssl::stack::Stack;
    use openssl::x509::store::X509StoreBuilder;
    use openssl::x509::X509StoreContext;

    fn verify_with_openssl(credentials: &Credentials) -> bool {
        let root = X509::from_der(&credentials.root_der).unwrap();
        let mut store = X509StoreBuilder::new().unwrap();
        store.add_cert(root).unwrap();
        let store = store.build();
        let leaf = X509::from_der(&credentials.server.chain_der[0]).unwrap();
        let mut untrusted = Stack::new().unwrap();
        for der in &credentials.server.chain_der[1..] {
            untrusted.push(X509::from_der(der).unwrap()).unwrap();
        }
        let mut context = X509StoreContext::new().unwrap();
        context
            .init(&store, &leaf, &untrusted, |c| c.verify_cert())
            .unwrap()
    }

    #[test]
    fn chains_verify_and_are_cached() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CertCache::new(dir.path());
        let credentials = cache.get(CertKind::EcdsaP256, 4).unwrap();
        assert_eq!(credentials.server.chain_der.len(), 3);
        assert!(verify_with_openssl(&credentials));

        // A second cache over the same folder loads the same chain from disk.
        let again = CertCache::new(dir.path())
            .get(CertKind::EcdsaP256, 4)
            .unwrap();
        assert_eq!(again.root_der, credentials.root_der);
    }

    fn mode_of(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn private_keys_are_written_0600_in_0700_folders() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CertCache::new(dir.path().join("certs"));
        cache.get(CertKind::EcdsaP256, 2).unwrap();
        let folder = cache.folder(CertKind::EcdsaP256, 2);
        assert_eq!(mode_of(&dir.path().join("certs")), 0o700);
        assert_eq!(mode_of(&folder), 0o700);
        assert_eq!(mode_of(&folder.join("server.key")), 0o600);
        assert_eq!(mode_of(&folder.join("client.key")), 0o600);
    }

    #[test]
    fn an_old_cache_readable_by_others_gets_its_modes_fixed() {
        let dir = tempfile::tempdir().unwrap();
        CertCache::new(dir.path())
            .get(CertKind::Ed25519, 2)
            .unwrap();
        let folder = dir.path().join("ed25519_depth2");
        let open = |path: &Path, mode| {
            fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap()
        };
        open(&folder, 0o755);
        open(&folder.join("server.key"), 0o644);
        open(&folder.join("client.key"), 0o644);
        // A new process reads the old cache.
        CertCache::new(dir.path())
            .get(CertKind::Ed25519, 2)
            .unwrap();
        assert_eq!(mode_of(&folder), 0o700);
        assert_eq!(mode_of(&folder.join("server.key")), 0o600);
        assert_eq!(mode_of(&folder.join("client.key")), 0o600);
        // Certificates are public.
        assert_eq!(mode_of(&folder.join("root.pem")) & 0o044, 0o044);
    }

    #[test]
    fn a_foreign_root_does_not_verify() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CertCache::new(dir.path());
        let mut credentials = (*cache.get(CertKind::Ed25519, 3).unwrap()).clone();
        let other = cache.get(CertKind::Ed25519, 2).unwrap();
        credentials.root_der = other.root_der.clone();
        assert!(!verify_with_openssl(&credentials));
    }
}
