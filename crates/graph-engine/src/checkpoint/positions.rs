//! Spec: pipeline-utilities §10.2 `completed_positions` — an append-only sequence shared
//! between successive records.
//!
//! Every save carries the whole sequence (§10.3.1: full snapshots), so a plain vector
//! would be copied at every save, making a long run quadratic. This list shares its
//! prefix: appending and cloning are O(1), and a record keeps the positions it was saved
//! with however the run continues. Reading walks the list (O(n)).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::NodePosition;

struct Link {
    position: NodePosition,
    prev: Option<Arc<Link>>,
}

/// The completed node attempts of a record, in completion order.
#[derive(Clone, Default)]
pub struct Positions {
    last: Option<Arc<Link>>,
    len: usize,
}

impl Positions {
    /// An empty sequence.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a position (O(1); clones made before are unaffected).
    pub fn push(&mut self, position: NodePosition) {
        let prev = self.last.take();
        self.last = Some(Arc::new(Link { position, prev }));
        self.len += 1;
    }

    /// How many positions there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most recent position.
    pub fn last(&self) -> Option<&NodePosition> {
        self.last.as_deref().map(|l| &l.position)
    }

    /// The position at `index` (0 = first completed), if any.
    pub fn get(&self, index: usize) -> Option<&NodePosition> {
        let back = self.len.checked_sub(index + 1)?;
        self.newest_first().nth(back)
    }

    /// The positions in completion order.
    pub fn iter(&self) -> std::vec::IntoIter<&NodePosition> {
        let mut out: Vec<&NodePosition> = self.newest_first().collect();
        out.reverse();
        out.into_iter()
    }

    /// The positions from `index` on (0 = first completed), in completion order.
    ///
    /// Walks only the `len - index` newest links, so a store that persisted the first
    /// `index` positions with an earlier record appends the rest in O(new).
    pub fn tail(&self, index: usize) -> Vec<&NodePosition> {
        let mut out: Vec<&NodePosition> = self
            .newest_first()
            .take(self.len.saturating_sub(index))
            .collect();
        out.reverse();
        out
    }

    /// The positions as a vector, in completion order.
    pub fn to_vec(&self) -> Vec<NodePosition> {
        self.iter().cloned().collect()
    }

    fn newest_first(&self) -> impl Iterator<Item = &NodePosition> {
        let mut cur = self.last.as_deref();
        std::iter::from_fn(move || {
            let link = cur?;
            cur = link.prev.as_deref();
            Some(&link.position)
        })
    }
}

impl Drop for Positions {
    /// Unlinks iteratively, so a very long run does not recurse once per position.
    fn drop(&mut self) {
        let mut cur = self.last.take();
        while let Some(link) = cur {
            match Arc::try_unwrap(link) {
                Ok(mut owned) => cur = owned.prev.take(),
                Err(_) => break,
            }
        }
    }
}

impl From<Vec<NodePosition>> for Positions {
    fn from(positions: Vec<NodePosition>) -> Self {
        let mut out = Positions::new();
        for p in positions {
            out.push(p);
        }
        out
    }
}

impl FromIterator<NodePosition> for Positions {
    fn from_iter<I: IntoIterator<Item = NodePosition>>(iter: I) -> Self {
        let mut out = Positions::new();
        for p in iter {
            out.push(p);
        }
        out
    }
}

impl<'a> IntoIterator for &'a Positions {
    type Item = &'a NodePosition;
    type IntoIter = std::vec::IntoIter<&'a NodePosition>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl std::ops::Index<usize> for Positions {
    type Output = NodePosition;
    /// # Panics
    /// When `index` is out of range, like a slice.
    #[allow(clippy::panic)]
    fn index(&self, index: usize) -> &NodePosition {
        match self.get(index) {
            Some(p) => p,
            None => panic!("position {index} out of range ({} positions)", self.len),
        }
    }
}

impl PartialEq for Positions {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl fmt::Debug for Positions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Positions {
    fn serialize<Z: Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Positions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<NodePosition>::deserialize(deserializer).map(Positions::from)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn at(step: u64) -> NodePosition {
        NodePosition::new(Vec::new(), format!("n{step}"), step, 0, None)
    }

    #[test]
    fn appends_share_a_prefix_and_read_in_order() {
        let mut p = Positions::new();
        p.push(at(0));
        p.push(at(1));
        let snapshot = p.clone();
        p.push(at(2));
        assert_eq!(snapshot.len(), 2);
        assert_eq!(p.iter().map(|x| x.step).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!((p[0].step, p.get(2).unwrap().step, p.get(3)), (0, 2, None));
        assert_eq!(p.last().unwrap().step, 2);
        let tail: Vec<u64> = p.tail(1).iter().map(|x| x.step).collect();
        assert_eq!((tail, p.tail(3).len(), p.tail(9).len()), (vec![1, 2], 0, 0));
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json[1]["node_name"], "n1");
        let back: Positions = serde_json::from_value(json).unwrap();
        assert_eq!(back, p);
        assert_ne!(back, snapshot);
    }

    #[test]
    fn a_long_list_drops_without_deep_recursion() {
        let p: Positions = (0..300_000).map(at).collect();
        assert_eq!(p.len(), 300_000);
        drop(p);
    }
}
