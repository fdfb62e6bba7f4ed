//! Secrets kept out of what warpt records and prints.

/// `url` with its password (`user:PASSWORD@`, or `password=` in the query)
/// replaced by `***`: what a manifest, a message or a log may show of a
/// database URL. Text that is no URL comes back unchanged.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let mut out = url.to_string();
    if let Some(at) = authority.rfind('@')
        && let Some(colon) = authority[..at].find(':')
    {
        let start = scheme_end + 3 + colon + 1;
        let end = scheme_end + 3 + at;
        out.replace_range(start..end, "***");
    }
    // A password given as a query parameter.
    if let Some(q) = out.find("password=") {
        let end = out[q..].find('&').map_or(out.len(), |e| q + e);
        out.replace_range(q + "password=".len()..end, "***");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked_and_the_rest_kept() {
        assert_eq!(
            redact_url("postgres://warpt:s3cr:et@db.example:5432/h?sslmode=disable"),
            "postgres://warpt:***@db.example:5432/h?sslmode=disable"
        );
        assert_eq!(redact_url("postgres://warpt@db/h"), "postgres://warpt@db/h");
        assert_eq!(
            redact_url("postgres://db/h?user=u&password=pw&x=1"),
            "postgres://db/h?user=u&password=***&x=1"
        );
        assert_eq!(redact_url("/home/u/results.db"), "/home/u/results.db");
    }
}
