//! The canonical reducers over Rust collections (used by [`crate::state!`]).
//!
//! Rust's types already rule out most shape errors the spec assigns to
//! `reducer_error` (a non-list update to `append` does not type-check).

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

use super::ReducerFailure;

/// Two updates to an extending field (a list or a map) as one: `a` then `b`.
pub fn combine<C, I>(mut a: C, b: C) -> C
where
    C: Extend<I> + IntoIterator<Item = I>,
{
    a.extend(b);
    a
}

/// `last_write_wins`: the update replaces the prior value.
pub fn last_write_wins<T>(_prior: &T, update: T) -> Result<T, ReducerFailure> {
    Ok(update)
}

/// `append`: prior followed by the update's items.
pub fn append<T: Clone>(prior: &[T], update: Vec<T>) -> Result<Vec<T>, ReducerFailure> {
    let mut out = Vec::with_capacity(prior.len() + update.len());
    out.extend_from_slice(prior);
    out.extend(update);
    Ok(out)
}

/// `merge`: shallow map merge, later writes win.
pub fn merge<M, K, V>(prior: &M, update: M) -> Result<M, ReducerFailure>
where
    M: Clone + Extend<(K, V)> + IntoIterator<Item = (K, V)>,
{
    let mut out = prior.clone();
    out.extend(update);
    Ok(out)
}

/// `concat_flatten`: prior followed by the one-level flattening of the update.
pub fn concat_flatten<T: Clone>(
    prior: &[T],
    update: Vec<Vec<T>>,
) -> Result<Vec<T>, ReducerFailure> {
    let mut out = prior.to_vec();
    for chunk in update {
        out.extend(chunk);
    }
    Ok(out)
}

/// `merge_all`: folds each mapping of the update into prior with `merge`.
pub fn merge_all<M, K, V>(prior: &M, update: Vec<M>) -> Result<M, ReducerFailure>
where
    M: Clone + Extend<(K, V)> + IntoIterator<Item = (K, V)>,
{
    let mut out = prior.clone();
    for m in update {
        out.extend(m);
    }
    Ok(out)
}

/// `bounded_append(max_len)`: append, then drop from the front down to `max_len`.
/// An empty update returns prior unchanged, even when prior exceeds the bound.
pub fn bounded_append<T: Clone>(
    prior: &[T],
    update: Vec<T>,
    max_len: usize,
) -> Result<Vec<T>, ReducerFailure> {
    if update.is_empty() {
        return Ok(prior.to_vec());
    }
    let mut out = append(prior, update)?;
    if out.len() > max_len {
        out.drain(..out.len() - max_len);
    }
    Ok(out)
}

/// `dedupe_append(key)`: append the update's items whose key is not yet present
/// (in prior or earlier in the update); first occurrence wins.
pub fn dedupe_append<T: Clone, K: Hash + Eq>(
    prior: &[T],
    update: Vec<T>,
    key: impl Fn(&T) -> K,
) -> Result<Vec<T>, ReducerFailure> {
    let mut seen: HashSet<K> = prior.iter().map(&key).collect();
    let mut out = prior.to_vec();
    for item in update {
        if seen.insert(key(&item)) {
            out.push(item);
        }
    }
    Ok(out)
}

/// `dedupe_append()` without a key: the item itself is the key.
pub fn dedupe_append_items<T: Clone + Hash + Eq>(
    prior: &[T],
    update: Vec<T>,
) -> Result<Vec<T>, ReducerFailure> {
    dedupe_append(prior, update, T::clone)
}

/// `merge_by_key(key)`: update items replace the prior item with the same key in
/// place (the last one, when prior repeats a key); novel keys append in update order.
pub fn merge_by_key<T: Clone, K: Hash + Eq>(
    prior: &[T],
    update: Vec<T>,
    key: impl Fn(&T) -> K,
) -> Result<Vec<T>, ReducerFailure> {
    let mut out = prior.to_vec();
    let mut index: HashMap<K, usize> = HashMap::with_capacity(out.len());
    for (i, item) in out.iter().enumerate() {
        index.insert(key(item), i);
    }
    for item in update {
        let k = key(&item);
        match index.get(&k) {
            Some(&i) => out[i] = item,
            None => {
                index.insert(k, out.len());
                out.push(item);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn bounded_append_keeps_last_items_and_noop_on_empty() {
        assert_eq!(
            bounded_append(&[1, 2], vec![3, 4, 5], 2).unwrap(),
            vec![4, 5]
        );
        assert_eq!(
            bounded_append(&[1, 2, 3], vec![], 2).unwrap(),
            vec![1, 2, 3]
        );
    }

    #[test]
    fn merge_by_key_replaces_last_duplicate_in_place() {
        let prior = vec![(1, "a"), (1, "b"), (2, "c")];
        let out = merge_by_key(&prior, vec![(1, "B"), (2, "x"), (2, "C"), (3, "d")], |r| {
            r.0
        })
        .unwrap();
        assert_eq!(out, vec![(1, "a"), (1, "B"), (2, "C"), (3, "d")]);
    }

    #[test]
    fn dedupe_and_merge_all_and_concat() {
        assert_eq!(
            dedupe_append_items(&["s"], vec!["s", "a", "b", "a"]).unwrap(),
            vec!["s", "a", "b"]
        );
        let prior: BTreeMap<&str, i32> = [("k", 1)].into();
        let out = merge_all(&prior, vec![[("a", 1)].into(), [("k", 2), ("a", 3)].into()]).unwrap();
        assert_eq!(out, [("a", 3), ("k", 2)].into());
        assert_eq!(
            concat_flatten(&[1], vec![vec![2, 3], vec![], vec![4]]).unwrap(),
            vec![1, 2, 3, 4]
        );
    }
}
