//! Spec: pipeline-utilities §10.11 `instances` — a fan-out's per-instance progress,
//! shared between successive records of a run.
//!
//! A run saves after every finished instance, and every record carries the whole
//! fan-out's progress (§10.3.1: full snapshots). With a plain vector each save would
//! copy all `n` entries, making a fan-out quadratic. Here the entries sit in
//! `√n`-sized chunks behind shared pointers: cloning is O(1), changing one entry copies
//! one chunk of pointers (O(√n)) when a record still shares it, and a record keeps the
//! progress it was saved with however the run continues.
//!
//! Every change is also appended to a change log (indices only), so a backend that
//! stores one row per instance asks [`Instances::changed_since`] which instances
//! changed since the version it stored, and writes only those. The log is restarted
//! (a new version lineage) once it holds twice as many changes as there are instances,
//! so its memory stays O(n); a backend then rewrites the fan-out once (amortized O(1)
//! per change).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::InstanceProgress;

type Chunk = Arc<Vec<Arc<InstanceProgress>>>;

struct Change {
    /// This link's version id (random, so logs of different processes never match).
    id: u64,
    index: usize,
    prev: Option<Arc<Change>>,
}

/// Which state of an [`Instances`] a backend stored: the id of the newest change it
/// wrote (or of the lineage's origin) and how many changes that was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct InstancesVersion {
    /// The newest change's id (the lineage's origin id when `seq` is 0).
    pub id: u64,
    /// Changes in the lineage up to and including that one.
    pub seq: u64,
}

impl InstancesVersion {
    /// A version from its stored parts.
    pub fn new(id: u64, seq: u64) -> Self {
        InstancesVersion { id, seq }
    }
}

/// The per-instance progress of one fan-out (§10.11 `instances`), in index order. Reads
/// like a slice (`len`, `get`, `iter`, `[i]`); `get_mut` / `[i] = …` / `set` record the
/// change for incremental backends.
#[derive(Clone)]
pub struct Instances {
    chunks: Arc<Vec<Chunk>>,
    chunk: usize,
    len: usize,
    origin: u64,
    log: Option<Arc<Change>>,
    seq: u64,
}

impl Default for Instances {
    fn default() -> Self {
        Instances::from(Vec::new())
    }
}

impl Instances {
    /// `count` instances, every one `not_started`.
    pub fn new(count: usize) -> Self {
        Instances::from(vec![InstanceProgress::default(); count])
    }

    /// How many instances there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Instance `index`'s progress.
    pub fn get(&self, index: usize) -> Option<&InstanceProgress> {
        let chunk = self.chunks.get(index / self.chunk)?;
        chunk.get(index % self.chunk).map(|p| &**p)
    }

    /// Instance 0's progress, if any.
    pub fn first(&self) -> Option<&InstanceProgress> {
        self.get(0)
    }

    /// Instance `index`'s progress, to change in place (recorded as changed).
    pub fn get_mut(&mut self, index: usize) -> Option<&mut InstanceProgress> {
        if index >= self.len {
            return None;
        }
        self.log_change(index);
        let chunks = Arc::make_mut(&mut self.chunks);
        let chunk = Arc::make_mut(chunks.get_mut(index / self.chunk)?);
        chunk.get_mut(index % self.chunk).map(Arc::make_mut)
    }

    /// Replaces instance `index`'s progress; `false` (nothing changed) when out of range.
    pub fn set(&mut self, index: usize, progress: InstanceProgress) -> bool {
        match self.get_mut(index) {
            Some(slot) => {
                *slot = progress;
                true
            }
            None => false,
        }
    }

    /// The instances in index order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            instances: self,
            next: 0,
        }
    }

    /// The instances as a vector.
    pub fn to_vec(&self) -> Vec<InstanceProgress> {
        self.iter().cloned().collect()
    }

    /// The version this value is at (what a backend records after storing it).
    pub fn version(&self) -> InstancesVersion {
        let id = self.log.as_deref().map_or(self.origin, |c| c.id);
        InstancesVersion::new(id, self.seq)
    }

    /// The indices (ascending, each once) changed since `stored`, or `None` when
    /// `stored` is not a version of this value's history (another run's, a restarted
    /// log, or a value decoded from storage): then the backend rewrites every instance.
    /// Walks only the changes made since `stored`.
    pub fn changed_since(&self, stored: InstancesVersion) -> Option<Vec<usize>> {
        let newer = self.seq.checked_sub(stored.seq)?;
        let mut cur = self.log.as_deref();
        let mut out = Vec::new();
        for _ in 0..newer {
            let link = cur?;
            out.push(link.index);
            cur = link.prev.as_deref();
        }
        let at = cur.map_or(self.origin, |c| c.id);
        if at != stored.id {
            return None;
        }
        out.sort_unstable();
        out.dedup();
        Some(out)
    }

    fn log_change(&mut self, index: usize) {
        let limit = u64::try_from(self.len.max(32).saturating_mul(2)).unwrap_or(u64::MAX);
        if self.seq >= limit {
            self.unlink();
            self.origin = rand::random();
            self.seq = 0;
        }
        let prev = self.log.take();
        self.log = Some(Arc::new(Change {
            id: rand::random(),
            index,
            prev,
        }));
        self.seq += 1;
    }

    /// Drops the log iteratively (a long log must not recurse once per link).
    fn unlink(&mut self) {
        let mut cur = self.log.take();
        while let Some(link) = cur {
            match Arc::try_unwrap(link) {
                Ok(mut owned) => cur = owned.prev.take(),
                Err(_) => break,
            }
        }
    }
}

impl Drop for Instances {
    fn drop(&mut self) {
        self.unlink();
    }
}

/// Iterator over [`Instances`], in index order.
#[derive(Debug)]
pub struct Iter<'a> {
    instances: &'a Instances,
    next: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a InstanceProgress;
    fn next(&mut self) -> Option<Self::Item> {
        let item = self.instances.get(self.next)?;
        self.next += 1;
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.instances.len.saturating_sub(self.next);
        (left, Some(left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Instances {
    type Item = &'a InstanceProgress;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl From<Vec<InstanceProgress>> for Instances {
    fn from(all: Vec<InstanceProgress>) -> Self {
        let len = all.len();
        let chunk = len.isqrt().max(1);
        let mut chunks = Vec::with_capacity(len.div_ceil(chunk));
        let mut items = all.into_iter().map(Arc::new).peekable();
        while items.peek().is_some() {
            chunks.push(Arc::new(items.by_ref().take(chunk).collect()));
        }
        Instances {
            chunks: Arc::new(chunks),
            chunk,
            len,
            origin: rand::random(),
            log: None,
            seq: 0,
        }
    }
}

impl FromIterator<InstanceProgress> for Instances {
    fn from_iter<I: IntoIterator<Item = InstanceProgress>>(iter: I) -> Self {
        Instances::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl std::ops::Index<usize> for Instances {
    type Output = InstanceProgress;
    /// # Panics
    /// When `index` is out of range, like a slice.
    #[allow(clippy::panic)]
    fn index(&self, index: usize) -> &InstanceProgress {
        match self.get(index) {
            Some(p) => p,
            None => panic!("instance {index} out of range ({} instances)", self.len),
        }
    }
}

impl std::ops::IndexMut<usize> for Instances {
    /// # Panics
    /// When `index` is out of range, like a slice.
    #[allow(clippy::panic)]
    fn index_mut(&mut self, index: usize) -> &mut InstanceProgress {
        let len = self.len;
        match self.get_mut(index) {
            Some(p) => p,
            None => panic!("instance {index} out of range ({len} instances)"),
        }
    }
}

impl PartialEq for Instances {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl fmt::Debug for Instances {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Instances {
    fn serialize<Z: Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Instances {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<InstanceProgress>::deserialize(deserializer).map(Instances::from)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::checkpoint::InstanceState;

    fn done(v: i64) -> InstanceProgress {
        InstanceProgress {
            state: InstanceState::Completed,
            result: json!(v),
            ..InstanceProgress::default()
        }
    }

    #[test]
    fn clones_keep_their_snapshot_and_changes_are_tracked() {
        let mut live = Instances::new(10);
        let saved = live.clone();
        let v0 = live.version();
        assert_eq!(live.changed_since(v0), Some(vec![]));
        assert!(live.set(3, done(3)));
        live[7].state = InstanceState::InFlight;
        live[3].result = json!(33);
        assert!(!live.set(10, done(0)));
        assert_eq!(saved[3], InstanceProgress::default());
        assert_eq!(
            (live[3].result.clone(), live[7].state),
            (json!(33), InstanceState::InFlight)
        );
        assert_eq!(live.changed_since(v0), Some(vec![3, 7]));
        let v1 = live.version();
        live.set(1, done(1));
        assert_eq!(live.changed_since(v1), Some(vec![1]));
        // A version from another lineage (or a decoded copy) is unknown.
        let decoded: Instances =
            serde_json::from_value(serde_json::to_value(&live).unwrap()).unwrap();
        assert_eq!(decoded, live);
        assert_eq!(decoded.changed_since(v1), None);
        assert_eq!(
            live.changed_since(InstancesVersion::new(v1.id ^ 1, v1.seq)),
            None
        );
        assert_ne!(saved, live);
        assert_eq!(live.iter().len(), 10);
    }

    #[test]
    fn the_log_restarts_so_it_stays_bounded() {
        let mut live = Instances::new(4);
        let v0 = live.version();
        for round in 0..65 {
            live.set(round % 4, done(i64::try_from(round).unwrap()));
        }
        assert!(live.seq <= 64);
        assert_eq!(live.changed_since(v0), None);
        let v = live.version();
        live.set(2, done(-1));
        assert_eq!(live.changed_since(v), Some(vec![2]));
    }

    #[test]
    fn odd_widths_chunk_and_index() {
        for n in [0usize, 1, 2, 5, 17, 1000] {
            let all: Instances = (0..n).map(|i| done(i64::try_from(i).unwrap())).collect();
            assert_eq!(all.len(), n);
            let got: Vec<i64> = all.iter().map(|p| p.result.as_i64().unwrap()).collect();
            assert_eq!(
                got,
                (0..n)
                    .map(|i| i64::try_from(i).unwrap())
                    .collect::<Vec<_>>()
            );
            assert!(all.get(n).is_none());
        }
    }
}
