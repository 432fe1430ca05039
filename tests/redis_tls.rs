//! TLS to Redis (feature `redis-tls`): a `redis-server` of the test's own with a TLS port and
//! a certificate the test makes with `openssl`, reached by a `rediss://` URL. The root it
//! trusts comes from `SSL_CERT_FILE`, as a managed Redis's CA would (or the system's roots).
//! A binary of its own: the variable is the process's.
#![cfg(feature = "redis-tls")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::redis_server::{free_port, RedisServer};
use common::replays::runtime;
use limiter::{Limit, Policy, RedisStore, Store};

fn openssl(dir: &Path, args: &[&str]) {
    let status = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl makes the test's certificates (apt-get install -y openssl)");
    assert!(status.success(), "openssl {args:?}");
}

/// A CA of the test's own and a server certificate it signed for 127.0.0.1, in a fresh
/// directory.
fn certificates() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("limiter-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    openssl(
        &dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "1",
            "-subj",
            "/CN=limiter test CA",
        ],
    );
    openssl(
        &dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
    );
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    openssl(
        &dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "1",
            "-extfile",
            "ext.cnf",
        ],
    );
    dir
}

#[::std::prelude::v1::test]
fn a_rediss_url_counts_over_tls_and_an_untrusted_certificate_is_refused() {
    let dir = certificates();
    let tls_port = free_port();
    let file = |name: &str| dir.join(name).to_string_lossy().into_owned();
    // The plain port stays open for the test's own commands; the store uses the TLS one.
    let server = RedisServer::start_on(
        free_port(),
        vec![
            "--tls-port".into(),
            tls_port.to_string(),
            "--tls-cert-file".into(),
            file("server.pem"),
            "--tls-key-file".into(),
            file("server.key"),
            "--tls-ca-cert-file".into(),
            file("ca.pem"),
            "--tls-auth-clients".into(),
            "no".into(),
        ],
    );
    let rt = runtime();
    let url = format!("rediss://127.0.0.1:{tls_port}");

    // The system's roots do not hold the test's CA: the handshake fails, and says why.
    std::env::remove_var("SSL_CERT_FILE");
    let untrusted = rt.block_on(RedisStore::connect(&url));
    let error = untrusted.expect_err("a certificate no root vouches for is refused");
    println!("untrusted: {error}");

    // Trusting the CA, the store counts over TLS, exactly.
    std::env::set_var("SSL_CERT_FILE", file("ca.pem"));
    let store = rt.block_on(RedisStore::connect(&url)).unwrap();
    let limit = Limit::new("tls", Policy::new(3, Duration::from_secs(60)).unwrap());
    let allowed: Vec<bool> = (0..4)
        .map(|_| {
            rt.block_on(store.check(&limit, b"client", Duration::ZERO))
                .unwrap()
                .allowed()
        })
        .collect();
    assert_eq!(allowed, [true, true, true, false]);
    // On that server: its key is there, read over the plain port.
    let name = store.key_name(&limit, b"client");
    assert_eq!(server.integer(&["EXISTS", &name]), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
