//! Escaping text for the formats warpt writes.

/// A CSV field: quoted (quotes doubled) when it holds a comma, quote or line break.
pub fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Text inside a Markdown table cell: pipes escaped, line breaks (which
/// would end the row) turned into spaces.
pub fn markdown(s: &str) -> String {
    s.replace('|', "\\|").replace(['\r', '\n'], " ")
}

/// Text and attribute values in XML and HTML.
pub fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_each_format_needs() {
        assert_eq!(csv("plain"), "plain");
        assert_eq!(csv("a,\"b\""), "\"a,\"\"b\"\"\"");
        assert_eq!(markdown("a|b"), "a\\|b");
        assert_eq!(
            xml("<a href='x'>&\"</a>"),
            "&lt;a href=&apos;x&apos;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }
}
