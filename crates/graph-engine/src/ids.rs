//! Spec: graph-engine §3 (invocation ids) and observability §3 (correlation ids) —
//! the UUIDv4 the engine mints when the caller supplies none.

/// A fresh UUIDv4 as text, from the thread-local CSPRNG (no `getrandom` system call
/// per invocation, which `Uuid::new_v4` makes).
pub(crate) fn mint_uuid() -> String {
    uuid::Builder::from_random_bytes(rand::random())
        .into_uuid()
        .to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn minted_ids_are_distinct_v4_uuids() {
        let a = uuid::Uuid::parse_str(&mint_uuid()).unwrap();
        let b = uuid::Uuid::parse_str(&mint_uuid()).unwrap();
        assert_eq!(a.get_version_num(), 4);
        assert_eq!(a.get_variant(), uuid::Variant::RFC4122);
        assert_ne!(a, b);
    }
}
