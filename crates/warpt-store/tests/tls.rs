//! The store on PostgreSQL over TLS, against the test server scripts/test
//! starts with a certificate from a CA of its own: `verify-full` with that
//! CA connects encrypted (the server says so), a CA that signed nothing is
//! refused before any query, and `disable` stays plain.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use warpt_store::db::PgConn;
use warpt_store::testing::TestStore;
use warpt_store::{Location, Store};

/// Whether the connection the store opens at `location` is encrypted, as
/// the server sees it.
fn encrypted(location: &Location) -> Result<bool, String> {
    Store::open(location).map_err(|e| e.to_string())?;
    let Location::Postgres(url) = location else {
        unreachable!("a PostgreSQL location")
    };
    let conn = PgConn::connect(url).map_err(|e| e.to_string())?;
    let row = conn
        .inner()
        .client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .map_err(|e| e.to_string())?;
    Ok(row.get::<_, bool>(0))
}

#[test]
fn verify_full_connects_encrypted_and_a_foreign_ca_is_refused() {
    let (Some(pg), Ok(ca), Ok(other)) = (
        TestStore::postgres(),
        std::env::var("WARPT_TEST_POSTGRES_CA"),
        std::env::var("WARPT_TEST_POSTGRES_OTHER_CA"),
    ) else {
        eprintln!("no TLS test server: scripts/test starts one (WARPT_TEST_POSTGRES_CA)");
        return;
    };
    let url = pg.arg().into_string().unwrap();
    let with = |q: &str| Location::Postgres(format!("{url}?{q}"));

    for host_url in [url.clone(), url.replacen("127.0.0.1", "localhost", 1)] {
        let at = |q: &str| Location::Postgres(format!("{host_url}?{q}"));
        assert_eq!(
            encrypted(&at(&format!("sslmode=verify-full&sslrootcert={ca}"))),
            Ok(true),
            "{host_url}"
        );
    }
    assert_eq!(
        encrypted(&with(&format!("sslmode=verify-ca&sslrootcert={ca}"))),
        Ok(true)
    );
    // The default (prefer) and require encrypt without checking.
    assert_eq!(encrypted(&Location::Postgres(url.clone())), Ok(true));
    assert_eq!(encrypted(&with("sslmode=require")), Ok(true));
    assert_eq!(encrypted(&with("sslmode=disable")), Ok(false));

    // A CA that did not sign the server's certificate: no connection.
    for mode in ["verify-full", "verify-ca", "require"] {
        let e = encrypted(&with(&format!("sslmode={mode}&sslrootcert={other}"))).unwrap_err();
        assert!(e.to_lowercase().contains("certificate"), "{mode}: {e}");
    }
    let e = encrypted(&with("sslmode=verify-full&sslrootcert=/nonexistent/ca.pem")).unwrap_err();
    assert!(e.contains("/nonexistent/ca.pem"), "{e}");
}
