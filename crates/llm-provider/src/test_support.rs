//! Helpers the crate's unit tests share (compiled only for `cargo test`).

use reqwest::header::HeaderMap;

use crate::error::LlmError;

/// A wire mapping's error mapper: status, headers, body → the §7 error.
pub(crate) type ErrorMapper = fn(u16, &HeaderMap, &[u8]) -> LlmError;

/// Asserts a status table written one case a line, `<status> <category> <rest>`:
/// `map` gives the body `body(status, rest)` the category (written without the
/// `provider_` prefix). Blank lines are skipped; a failing case is named.
pub(crate) fn assert_status_table(
    map: ErrorMapper,
    body: impl Fn(u16, &str) -> String,
    table: &str,
) {
    for line in table.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let mut parts = line.splitn(3, ' ');
        let status: u16 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        let category = parts.next().unwrap_or_default();
        let bytes = body(status, parts.next().unwrap_or_default());
        assert_eq!(
            map(status, &HeaderMap::new(), bytes.as_bytes())
                .category()
                .as_str(),
            format!("provider_{category}"),
            "{line}"
        );
    }
}

/// `rest` split at its first `": "` into a vendor error kind and a message.
pub(crate) fn kind_and_message(rest: &str) -> (&str, &str) {
    rest.split_once(": ").unwrap_or((rest, ""))
}
