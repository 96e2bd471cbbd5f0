//! Hive-style partition directory names (`key=value`): Spark's escaping of the characters
//! a path cannot hold (`ExternalCatalogUtils.escapePathName`) and its reverse. Shared by the
//! file listing (reading) and the catalog (writing).

/// Spark's marker for a NULL (or empty) partition value in a directory name.
pub const DEFAULT_PARTITION_NAME: &str = "__HIVE_DEFAULT_PARTITION__";

fn needs_escape(c: char) -> bool {
    matches!(
        c,
        '\u{01}'
            ..='\u{1F}'
                | '"'
                | '#'
                | '%'
                | '\''
                | '*'
                | '/'
                | ':'
                | '='
                | '?'
                | '\\'
                | '\u{7F}'
                | '{'
                | '['
                | ']'
                | '^'
    )
}

/// A partition value as it appears in a directory name (Spark's `escapePathName`).
pub fn escape_path_name(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if needs_escape(c) {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Reverses [`escape_path_name`].
pub fn unescape_path_name(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips_and_bad_escapes_stay() {
        assert_eq!(escape_path_name("a/b=c%"), "a%2Fb%3Dc%25");
        assert_eq!(unescape_path_name("a%2Fb%3Dc%25"), "a/b=c%");
        assert_eq!(unescape_path_name("a%3Db"), "a=b");
        assert_eq!(unescape_path_name("100%"), "100%");
        assert_eq!(unescape_path_name("x%2"), "x%2");
    }
}
