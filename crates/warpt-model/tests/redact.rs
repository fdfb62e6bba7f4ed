//! Store passwords never reach a recorded command line, an environment
//! value or a message: generated URLs and connection strings, with
//! passwords made of every character a URL or a shell lets through, in
//! each place a user can put them.
//!
//! Fixed seed; `CASES` cases per shape.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use warpt_model::{redact_command_line, redact_secrets, redact_url};

const CASES: u32 = 2000;

fn config() -> Config {
    Config {
        cases: CASES,
        rng_seed: RngSeed::Fixed(0x7365_6372),
        failure_persistence: None,
        ..Config::default()
    }
}

/// A password: a marker no user, host or database name below contains,
/// then any of the characters that make URL parsing hard.
fn password() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9:/@?&=#%+ '\\\\~!$*.,;-]{0,16}".prop_map(|tail| format!("Zq9{tail}"))
}

/// The percent-encoded form of `s` (every byte outside unreserved).
fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn name() -> impl Strategy<Value = String> {
    "[a-y_][a-y0-9_.-]{0,8}"
}

/// Whether `out` shows any part of the password long enough to matter:
/// the whole, the marker, or its percent-encoded form.
fn leaks(out: &str, pw: &str) -> bool {
    out.contains("Zq9") || out.contains(pw) || out.contains(&percent(pw))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn url_user_info(user in name(), pw in password(), host in name(), db in name(),
                     scheme in prop::sample::select(vec!["postgres", "postgresql"]),
                     encoded in any::<bool>(), query in "(\\?sslmode=require)?") {
        let pw_text = if encoded { percent(&pw) } else { pw.clone() };
        let url = format!("{scheme}://{user}:{pw_text}@{host}:5432/{db}{query}");
        let out = redact_url(&url);
        prop_assert!(!leaks(&out, &pw), "{url} -> {out}");
        prop_assert!(out.starts_with(&format!("{scheme}://{user}:***@")), "{url} -> {out}");
        for arg in [url.clone(), format!("--store={url}")] {
            let out = redact_command_line(std::slice::from_ref(&arg)).join(" ");
            prop_assert!(!leaks(&out, &pw), "{arg} -> {out}");
        }
        let out = redact_secrets(&url);
        prop_assert!(!leaks(&out, &pw), "{url} -> {out}");
    }

    #[test]
    fn url_query(user in name(), pw in "[a-zA-Z0-9%+~.-]{0,16}", host in name(), db in name()) {
        let pw = format!("Zq9{pw}");
        let url = format!("postgres://{host}/{db}?user={user}&password={pw}&sslmode=prefer");
        let out = redact_secrets(&url);
        prop_assert!(!leaks(&out, &pw), "{url} -> {out}");
        prop_assert!(out.ends_with("&sslmode=prefer"), "{url} -> {out}");
    }

    #[test]
    fn connection_strings(user in name(), pw in password(), host in name(),
                          spaces in "[ ]{0,2}", quoted in any::<bool>()) {
        let value = if quoted {
            format!("'{}'", pw.replace('\\', "\\\\").replace('\'', "\\'"))
        } else {
            pw.replace('\\', "\\\\").replace(' ', "\\ ").replace('\'', "\\'")
        };
        let text = format!("host={host} user={user} password{spaces}={spaces}{value} dbname=x");
        let out = redact_secrets(&text);
        prop_assert!(!leaks(&out, &pw), "{text} -> {out}");
        prop_assert!(out.starts_with(&format!("host={host} user={user} password")), "{text} -> {out}");
    }
}
