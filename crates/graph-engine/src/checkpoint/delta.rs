//! Spec: pipeline-utilities §10.3.1 (full snapshots), §10.11 — helpers for backends
//! that store a record's growing parts in rows of their own, so a save writes only
//! what changed since the previous save of the invocation.
//!
//! A record's `completed_positions` only grow during a run ([`PositionsWrite`]), and a
//! fan-out's instances change one at a time ([`split_instances`]): a backend keeps the
//! record row without them, one row per position and one per (fan-out key, instance
//! index), and reassembles the full snapshot on load ([`join_instances`]). The record a
//! caller loads is the record it saved.

use std::collections::HashMap;

use super::Positions;
use super::{CheckpointRecord, InstanceProgress, Instances, InstancesVersion, NodePosition};

/// How a backend brings its stored positions of an invocation up to a record's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PositionsWrite {
    /// Delete the stored positions first (they are not a prefix of the record's).
    pub replace: bool,
    /// Append the record's positions from this index on
    /// ([`Positions::tail`]`(from)`).
    pub from: usize,
}

impl PositionsWrite {
    /// The write for `positions` when the backend stores `stored`: how many positions
    /// and the newest of them (`None` when it stores none). The stored ones are kept
    /// when the record's position at the same place equals the newest stored one.
    /// Walks only the positions added since.
    pub fn plan(positions: &Positions, stored: Option<(usize, &NodePosition)>) -> Self {
        let Some((count, newest)) = stored.filter(|(count, _)| *count > 0) else {
            return PositionsWrite {
                replace: false,
                from: 0,
            };
        };
        let kept = positions.len() >= count && positions.tail(count - 1).first() == Some(&newest);
        if kept {
            PositionsWrite {
                replace: false,
                from: count,
            }
        } else {
            PositionsWrite {
                replace: true,
                from: 0,
            }
        }
    }
}

/// A record's fan-out instances, taken out of it by [`split_instances`] and keyed by
/// [`super::FanOutProgress::storage_key`].
#[derive(Debug, Default)]
pub struct SplitInstances {
    entries: Vec<(String, Instances)>,
}

/// The rows a backend writes for one fan-out of a saved record.
#[derive(Debug)]
#[non_exhaustive]
pub struct FanOutWrite<'a> {
    /// The fan-out's storage key.
    pub key: &'a str,
    /// The version to store with the key once written.
    pub version: InstancesVersion,
    /// Delete the key's stored instance rows first (the stored version is unknown);
    /// `instances` then holds every instance that is not `not_started`.
    pub replace: bool,
    /// The instances to upsert, by index.
    pub instances: Vec<(usize, &'a InstanceProgress)>,
}

/// Takes every fan-out entry's instances out of `record`, leaving each entry with no
/// instances (its `instance_count` stays), so the rest encodes in O(fan-outs).
pub fn split_instances(record: &mut CheckpointRecord) -> SplitInstances {
    let entries = record
        .fan_out_progress
        .iter_mut()
        .map(|e| (e.storage_key(), std::mem::take(&mut e.instances)))
        .collect();
    SplitInstances { entries }
}

impl SplitInstances {
    /// The storage keys of the record's fan-outs.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    /// What to write given the versions the backend stores per key: only the instances
    /// changed since a known version, every started instance otherwise.
    pub fn writes(&self, stored: &HashMap<String, InstancesVersion>) -> Vec<FanOutWrite<'_>> {
        self.entries
            .iter()
            .map(|(key, instances)| {
                let changed = stored.get(key).and_then(|v| instances.changed_since(*v));
                let (replace, rows) = match changed {
                    Some(indices) => (
                        false,
                        indices
                            .into_iter()
                            .filter_map(|i| Some((i, instances.get(i)?)))
                            .collect(),
                    ),
                    None => (
                        true,
                        instances
                            .iter()
                            .enumerate()
                            .filter(|(_, p)| **p != InstanceProgress::default())
                            .collect(),
                    ),
                };
                FanOutWrite {
                    key,
                    version: instances.version(),
                    replace,
                    instances: rows,
                }
            })
            .collect()
    }

    /// The stored keys the record no longer holds (fan-outs that ended): their rows
    /// are deleted.
    pub fn removed<'s>(&self, stored: &'s HashMap<String, InstancesVersion>) -> Vec<&'s str> {
        stored
            .keys()
            .filter(|k| !self.entries.iter().any(|(key, _)| key == *k))
            .map(String::as_str)
            .collect()
    }
}

/// Puts stored instance rows back into a loaded record: every fan-out entry whose key
/// is in `stored` gets `instance_count` instances, `not_started` but for the stored
/// rows. Entries whose key is absent keep the instances their JSON held (rows written
/// before the backend stored instances separately).
///
/// # Errors
/// A description when a stored row's index is not below the entry's `instance_count`.
pub fn join_instances(
    record: &mut CheckpointRecord,
    mut stored: HashMap<String, Vec<(usize, InstanceProgress)>>,
) -> Result<(), String> {
    for entry in &mut record.fan_out_progress {
        let Some(rows) = stored.remove(&entry.storage_key()) else {
            continue;
        };
        let mut all = vec![InstanceProgress::default(); entry.instance_count];
        for (index, progress) in rows {
            let count = all.len();
            let slot = all.get_mut(index).ok_or_else(|| {
                format!(
                    "fan-out `{}`: stored instance {index} is out of range ({count} instances)",
                    entry.fan_out_node_name
                )
            })?;
            *slot = progress;
        }
        entry.instances = Instances::from(all);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::checkpoint::{FanOutProgress, InstanceState};

    fn record(width: usize) -> CheckpointRecord {
        CheckpointRecord::new("inv", "c", json!({}), Vec::new(), "1")
            .with_fan_out_progress(vec![FanOutProgress::new(vec![], "fan", vec![], width)])
    }

    fn done() -> InstanceProgress {
        InstanceProgress {
            state: InstanceState::Completed,
            result: json!(1),
            ..InstanceProgress::default()
        }
    }

    #[test]
    fn a_known_version_writes_only_the_changes_and_rows_join_back() {
        let mut live = record(100);
        live.fan_out_progress[0].instances.set(4, done());
        let mut first = live.clone();
        let split = split_instances(&mut first);
        assert!(first.fan_out_progress[0].instances.is_empty());
        let mut stored = HashMap::new();
        let w = split.writes(&stored);
        assert!(w[0].replace);
        assert_eq!(w[0].instances.iter().map(|r| r.0).collect::<Vec<_>>(), [4]);
        stored.insert(w[0].key.to_owned(), w[0].version);
        let mut rows = vec![(4, done())];

        live.fan_out_progress[0].instances.set(9, done());
        let mut second = live.clone();
        let split = split_instances(&mut second);
        let w = split.writes(&stored);
        assert!(!w[0].replace);
        assert_eq!(w[0].instances.iter().map(|r| r.0).collect::<Vec<_>>(), [9]);
        rows.push((9, done()));
        assert!(split.removed(&stored).is_empty());

        let key = split.keys().next().unwrap().to_owned();
        join_instances(&mut second, HashMap::from([(key.clone(), rows)])).unwrap();
        assert_eq!(second, live);
        let bad = join_instances(&mut first, HashMap::from([(key, vec![(100, done())])]));
        assert!(bad.unwrap_err().contains("out of range"));
        let ended = split_instances(&mut record(0).with_fan_out_progress(vec![]));
        assert_eq!(ended.removed(&stored).len(), 1);
    }

    #[test]
    fn positions_append_after_a_matching_prefix_else_replace() {
        let at = |s| NodePosition::new(vec![], format!("n{s}"), s, 0, None);
        let p: Positions = (0..5).map(at).collect();
        let plan = |count, newest: NodePosition| PositionsWrite::plan(&p, Some((count, &newest)));
        let fresh = PositionsWrite::plan(&p, None);
        assert_eq!(
            fresh,
            PositionsWrite {
                replace: false,
                from: 0
            }
        );
        assert_eq!(
            plan(3, at(2)),
            PositionsWrite {
                replace: false,
                from: 3
            }
        );
        assert_eq!(
            plan(3, at(7)),
            PositionsWrite {
                replace: true,
                from: 0
            }
        );
        assert_eq!(
            plan(6, at(5)),
            PositionsWrite {
                replace: true,
                from: 0
            }
        );
    }
}
