//! Spec: observability §8.4.1 *`trace.id` derivation* — the Langfuse trace id of an
//! invocation id.

use sha2::{Digest, Sha256};

/// The Langfuse `trace.id` of `invocation_id`: a UUID's 32 lowercase hex digits
/// (dashes stripped), otherwise the first 16 bytes of `SHA-256(invocation_id)` as 32
/// lowercase hex (Langfuse's own `create_trace_id(seed)`).
///
/// # Examples
/// ```
/// use openarmature_observability::langfuse::trace_id_for;
/// assert_eq!(
///     trace_id_for("550e8400-e29b-41d4-a716-446655440000"),
///     "550e8400e29b41d4a716446655440000"
/// );
/// assert_eq!(trace_id_for("run_abc123"), "29b50a6c08dabfeaeb1696301f4fabe1");
/// ```
pub fn trace_id_for(invocation_id: &str) -> String {
    match uuid::Uuid::try_parse(invocation_id) {
        Ok(u) => u.simple().to_string(),
        Err(_) => {
            let digest = Sha256::digest(invocation_id.as_bytes());
            hex(&digest[..16])
        }
    }
}

/// Whether `invocation_id` is a UUID (so its trace id is its hex form and the raw id
/// need not be written to `trace.metadata.invocation_id`).
pub fn is_uuid(invocation_id: &str) -> bool {
    uuid::Uuid::try_parse(invocation_id).is_ok()
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_ids_map_to_their_hex_form() {
        let id = "550E8400-E29B-41D4-A716-446655440000";
        assert_eq!(trace_id_for(id), "550e8400e29b41d4a716446655440000");
        assert!(is_uuid(id));
    }

    #[test]
    fn other_ids_hash_to_32_hex_digits() {
        let id = trace_id_for("run_abc123");
        assert_eq!(id, "29b50a6c08dabfeaeb1696301f4fabe1");
        assert!(!is_uuid("run_abc123"));
        assert_ne!(trace_id_for("run_abc124"), id);
    }
}
