//! `outer[2]/inner`: a node's namespace with its fan-out instance indices, the one
//! label [`crate::progress`] and [`crate::report`] both key and show nodes by.

/// The first `depth` namespace segments joined with `/`, each segment that is a
/// fan-out boundary above the last followed by its instance index (`chain[i]` is the
/// boundary under `namespace[i]`). `depth = namespace.len()` labels the node itself.
pub(crate) fn node_path(namespace: &[String], chain: &[Option<usize>], depth: usize) -> String {
    let mut out = String::new();
    for (i, name) in namespace.iter().take(depth).enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(name);
        if i + 1 < depth {
            if let Some(k) = chain.get(i).copied().flatten() {
                out.push('[');
                out.push_str(&k.to_string());
                out.push(']');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::node_path;

    #[test]
    fn indices_mark_the_fan_out_boundaries_above_the_last_segment() {
        let ns = ["outer".to_owned(), "inner".to_owned(), "leaf".to_owned()];
        let chain = [Some(2), Some(0)];
        assert_eq!(node_path(&ns, &chain, 3), "outer[2]/inner[0]/leaf");
        assert_eq!(node_path(&ns, &chain, 2), "outer[2]/inner");
        assert_eq!(node_path(&ns, &[None, Some(1)], 3), "outer/inner[1]/leaf");
        assert_eq!(node_path(&ns[..1], &[], 1), "outer");
    }
}
