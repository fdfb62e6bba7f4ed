//! Secrets kept out of what warpt records and prints.
//!
//! A store's PostgreSQL password can arrive in three shapes: a URL's user
//! info (`postgres://user:PASSWORD@host/db`), a URL's query
//! (`?password=PASSWORD`) or a key=value connection string
//! (`host=h password='PASSWORD'`). Each is masked the way the most generous
//! reader would find it: PostgreSQL clients disagree on where the user info
//! of `postgres://u:p@ss@h` ends (tokio-postgres takes the first `@`, others
//! the last), so everything from the first `:` to the last `@` goes.

/// What a masked secret is replaced with.
pub const MASK: &str = "***";

/// `url` with its password replaced by `***`: what a manifest, a message or
/// a log may show of a database URL. Text that is no URL comes back
/// unchanged.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let start = scheme_end + 3;
    let mut out = url[..start].to_string();
    let rest = &url[start..];
    // User info: up to the last `@` anywhere (a reader that stops at the
    // first one sees a shorter password, inside this span all the same).
    let rest = match rest.rfind('@') {
        Some(at) => match rest[..at].find(':') {
            Some(colon) => {
                out.push_str(&rest[..=colon]);
                out.push_str(MASK);
                &rest[at..]
            }
            None => rest,
        },
        None => rest,
    };
    out.push_str(&mask_query_password(rest));
    out
}

/// `text` (a command-line argument, an environment value, a message) with
/// the password of every PostgreSQL URL in it, and of a key=value
/// connection string, masked.
pub fn redact_secrets(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let url_at = ["postgres://", "postgresql://"]
        .iter()
        .filter_map(|s| lower.find(s))
        .min();
    if let Some(at) = url_at {
        // The URL runs to the end of the text: a password may hold any
        // character a shell lets through, spaces included.
        return format!("{}{}", &text[..at], redact_url(&text[at..]));
    }
    let fields = conninfo_fields(text);
    if fields.iter().any(|f| f.key == "password") {
        return redact_conninfo(text, &fields);
    }
    text.to_string()
}

/// Every argument of a command line through [`redact_secrets`]: what a
/// manifest records of how warpt was started.
pub fn redact_command_line(args: &[String]) -> Vec<String> {
    args.iter().map(|a| redact_secrets(a)).collect()
}

/// The value of every `password=` field of a URL's query masked.
fn mask_query_password(s: &str) -> String {
    let Some(q) = s.find('?') else {
        return s.to_string();
    };
    let mut out = s[..=q].to_string();
    let fields: Vec<String> = s[q + 1..]
        .split('&')
        .map(|field| match field.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}={MASK}"),
            _ => field.to_string(),
        })
        .collect();
    out.push_str(&fields.join("&"));
    out
}

/// One `key = value` of a connection string: where its value starts and
/// ends in the text.
struct Field {
    key: String,
    value: std::ops::Range<usize>,
}

/// The fields of a key=value connection string as libpq and tokio-postgres
/// read them: `key = value`, a value quoted with `'...'` (backslash
/// escapes) or running to the next space (backslash escapes too). Stops at
/// the first thing that is not such a field.
fn conninfo_fields(text: &str) -> Vec<Field> {
    let bytes = text.as_bytes();
    let mut fields = Vec::new();
    let mut i = 0;
    let skip_space = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_space(i);
        if i >= bytes.len() {
            return fields;
        }
        let key_start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        if i == key_start {
            return fields;
        }
        let key = text[key_start..i].to_ascii_lowercase();
        i = skip_space(i);
        if bytes.get(i) != Some(&b'=') {
            return fields;
        }
        i = skip_space(i + 1);
        let start = i;
        if bytes.get(i) == Some(&b'\'') {
            i += 1;
            while i < bytes.len() && bytes[i] != b'\'' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            // The closing quote (or the end, when it is missing).
            i = (i + 1).min(bytes.len());
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i = i.min(bytes.len());
        }
        fields.push(Field {
            key,
            value: start..i,
        });
    }
}

/// A connection string with its password values masked. Anything after the
/// part that parses is masked too: it cannot be told from a password
/// written with a quote left open.
fn redact_conninfo(text: &str, fields: &[Field]) -> String {
    let mut out = String::new();
    let mut at = 0;
    for f in fields {
        if f.key == "password" {
            out.push_str(&text[at..f.value.start]);
            out.push_str(MASK);
            at = f.value.end;
        }
    }
    let parsed_to = fields.last().map_or(0, |f| f.value.end);
    out.push_str(&text[at..parsed_to.max(at)]);
    if parsed_to < text.len() && !text[parsed_to..].trim().is_empty() {
        out.push(' ');
        out.push_str(MASK);
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

    #[test]
    fn a_password_with_slashes_or_at_signs_is_masked_whole() {
        assert_eq!(
            redact_url("postgres://u:pa/ss@h/db"),
            "postgres://u:***@h/db"
        );
        assert_eq!(
            redact_url("postgres://u:p@ss@h/db"),
            "postgres://u:***@h/db"
        );
        assert_eq!(
            redact_url("postgres://u:p%40ss%2F@h/db"),
            "postgres://u:***@h/db"
        );
        assert_eq!(
            redact_url("postgres://u:pw@h/db?PASSWORD=x"),
            "postgres://u:***@h/db?PASSWORD=***"
        );
    }

    #[test]
    fn command_lines_and_connection_strings() {
        let line: Vec<String> = [
            "warpt",
            "--store=postgres://u:s3cret@h/db",
            "--store",
            "postgresql://u:s3/cret@h/db",
            "host=h password='s3 cret' dbname=x",
            "plain",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let out = redact_command_line(&line);
        assert_eq!(out[1], "--store=postgres://u:***@h/db");
        assert_eq!(out[3], "postgresql://u:***@h/db");
        assert_eq!(out[4], "host=h password=*** dbname=x");
        assert_eq!(out[5], "plain");
        assert!(!out.join(" ").contains("cret"));
        assert_eq!(
            redact_secrets("password = 'unterminated \\' quote"),
            "password = ***"
        );
        assert_eq!(redact_secrets("a=b c=d"), "a=b c=d");
    }
}
