//! Crash tests (issue 20): the checkpointed pipeline of `pipeline.rs`, run by child
//! processes (this test binary re-run as `crash::child`) that the test SIGKILLs twenty
//! times — mid-node, mid-fan-out, mid-save — each time resuming in a fresh process from
//! the latest record until one completes. Once with the SQLite checkpointer, once with
//! the PostgreSQL one.
//!
//! After every process the test checks the database (SQLite `PRAGMA integrity_check`;
//! every row decodes and agrees with its summary columns), and that the process sent no
//! LLM request the database already recorded complete (the mock server lives here, in
//! the parent, and counts requests per key and process). At the end: the final state
//! equals an uninterrupted run's, and the fan-in holds every item exactly once, in
//! order.
//!
//! Kill points come from a seeded RNG (`OPENARMATURE_CRASH_SEED` to replay; the seed is
//! printed): the kind of kill for each process is drawn from what is still left to do,
//! then the occurrence of the phase line that fires it and the delay after it.

mod backend;
mod driver;
mod inspect;
mod mock;
mod pipeline;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openarmature::graph::checkpoint::{CheckpointFilter, Checkpointer};
use openarmature::graph::{InvokeOptions, State};
use openarmature::llm::{OpenAiProvider, Transport};
use openarmature_testkit::services::{unique_name, url, Service};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use backend::Backend;
use driver::{run_child, Delay, Landed, SaveTimes, Trigger};
use pipeline::{item_key, ITEMS};

const KILLS: usize = 20;
const BACKEND: &str = "OA_CRASH_BACKEND";
const TARGET: &str = "OA_CRASH_TARGET";
const SCHEMA: &str = "OA_CRASH_SCHEMA";
const MOCK: &str = "OA_CRASH_MOCK";
const CORRELATION: &str = "OA_CRASH_CORRELATION";
const GENERATION: &str = "OA_CRASH_GENERATION";

/// The child side: resume the job's latest record (or start it), print the final state.
/// A no-op in the parent.
#[test]
fn child() {
    let (Ok(backend), Ok(target), Ok(mock), Ok(correlation)) = (
        std::env::var(BACKEND),
        std::env::var(TARGET),
        std::env::var(MOCK),
        std::env::var(CORRELATION),
    ) else {
        return;
    };
    let backend = match backend.as_str() {
        "sqlite" => Backend::Sqlite(target.into()),
        _ => Backend::Postgres {
            url: target,
            schema: std::env::var(SCHEMA).expect("schema"),
        },
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // libtest has printed `test crash::child ... ` without a newline: end that line.
    println!();
    rt.block_on(async {
        let store = backend.open().await;
        // The process's number, as its API key: the mock counts requests by it.
        let generation = std::env::var(GENERATION).unwrap_or_default();
        let provider = OpenAiProvider::builder(mock.as_str(), "crash-mock")
            .api_key(format!("gen-{generation}"))
            .transport(
                Transport::default()
                    .no_proxy()
                    .timeout(Duration::from_secs(10)),
            )
            .build()
            .expect("provider");
        let graph = pipeline::build(
            Arc::new(provider),
            Arc::new(pipeline::Traced(Arc::clone(&store))),
        )
        .expect("graph");
        let filter = CheckpointFilter::new().correlation_id(&correlation);
        let latest = store
            .list(Some(&filter))
            .await
            .expect("list")
            .into_iter()
            .max_by_key(|s| s.last_saved_at);
        let options = match latest {
            Some(s) => {
                println!("CRASH resume {}", s.invocation_id);
                InvokeOptions::default().resume_invocation(s.invocation_id)
            }
            None => {
                println!("CRASH fresh");
                InvokeOptions::default().correlation_id(&correlation)
            }
        };
        let done = graph
            .invoke_with(pipeline::input(), options)
            .await
            .expect("the run completes");
        println!("CRASH final {}", State::to_json(&done.state));
    });
}

/// What kill number `kill` (0-based) aims at: the first two at `outline` (the node or
/// its save), the next fifteen inside the fan-out (while instances wait for their
/// answers, or during one of its saves), the rest at `summarize` — or at the first of
/// these parts the store does not mark `done` yet, when that is a later one. A trigger
/// whose line never comes falls through to the kill at `summarize` the driver always
/// makes. Until a kill has landed mid-fan-out (outside a save), fan-out kills aim at
/// the first instances, which start together before any save (`early`).
fn aim(rng: &mut StdRng, kill: usize, done: &BTreeSet<String>, early: bool) -> Trigger {
    let left = if !done.contains("outline") {
        0
    } else if (0..ITEMS).any(|i| !done.contains(&item_key(i))) {
        2
    } else {
        17
    };
    let save = |rng: &mut StdRng, nth: std::ops::RangeInclusive<usize>| Trigger {
        prefix: "PHASE save-begin",
        nth: rng.random_range(nth),
        delay: Delay::OfSave(rng.random_range(0.0..2.0)),
    };
    let node = |rng: &mut StdRng, prefix: &'static str| Trigger {
        prefix,
        nth: 1,
        delay: Delay::Fixed(Duration::from_micros(rng.random_range(500..=2500))),
    };
    match kill.max(left) {
        0..2 if rng.random_bool(0.5) => node(rng, "PHASE enter outline"),
        0..2 => save(rng, 1..=1),
        2..17 if !early && rng.random_range(0..3) == 0 => save(rng, 2..=8),
        // While instances wait for their answers (the mock takes 3-20 ms): the first
        // four start together, before any save; later ones overlap other instances'
        // saves.
        2..17 => Trigger {
            prefix: "PHASE enter extract_all/extract#",
            nth: if early || rng.random_bool(0.5) {
                rng.random_range(1..=4)
            } else {
                rng.random_range(5..=8)
            },
            delay: Delay::Fixed(Duration::from_micros(rng.random_range(0..=2000))),
        },
        _ => node(rng, "PHASE enter summarize"),
    }
}

/// The figures of one backend's run.
struct Figures {
    kills: BTreeMap<Landed, usize>,
    processes: u32,
    requests: usize,
    resent: usize,
    saved: usize,
    uninterrupted: usize,
    /// Kills after which the server still ran the dead client's statement.
    lingered: usize,
}

fn seed() -> u64 {
    std::env::var("OPENARMATURE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        })
}

/// The whole scenario on one backend; `fresh` makes an empty store of the same kind.
fn survive_kills(name: &str, fresh: impl Fn(&str) -> Backend) {
    let seed = seed();
    println!("{name}: seed {seed} (OPENARMATURE_CRASH_SEED={seed} replays the schedule)");
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mock = rt.block_on(mock::LlmMock::start(seed));
    let mut rng = StdRng::seed_from_u64(seed);
    let env = |backend: &Backend, correlation: &str, generation: u32| {
        let mut env = backend.env();
        env.push((MOCK, mock.base_url()));
        env.push((CORRELATION, correlation.to_owned()));
        env.push((GENERATION, generation.to_string()));
        env
    };

    // The reference: one uninterrupted process on an empty store.
    let reference = fresh("reference");
    let mut saves = SaveTimes::default();
    let baseline = run_child(&env(&reference, "reference", 0), None, &mut saves);
    let expected = baseline.final_state.expect("reference state");
    let uninterrupted = mock.requests_of(0).len();
    assert_eq!(
        uninterrupted,
        ITEMS + 2,
        "one call per item, outline and summarize"
    );

    let backend = fresh("crash");
    let mut figures = Figures {
        kills: BTreeMap::new(),
        processes: 0,
        requests: 0,
        resent: 0,
        saved: 0,
        uninterrupted,
        lingered: 0,
    };
    let mut done: BTreeSet<String> = BTreeSet::new();
    // What the store marked complete before each process started (index: generation).
    let mut done_before: Vec<BTreeSet<String>> = vec![BTreeSet::new()];
    let mut rows = 0;
    let final_state = loop {
        figures.processes += 1;
        let generation = figures.processes;
        assert!(generation <= 60, "the job never completed");
        let killed_so_far: usize = figures.kills.values().sum();
        let trigger = (killed_so_far < KILLS).then(|| {
            aim(
                &mut rng,
                killed_so_far,
                &done,
                !figures.kills.contains_key(&Landed::MidFanOut),
            )
        });
        let exit = run_child(
            &env(&backend, "crash", generation),
            trigger.as_ref(),
            &mut saves,
        );
        assert_eq!(
            exit.resumed,
            rows > 0,
            "process {generation} resumes iff a record exists:\n{}",
            exit.output
        );
        done_before.push(done.clone());
        let (snapshot, lingered) = rt.block_on(backend.inspect("crash"));
        figures.lingered += usize::from(lingered);
        assert!(
            snapshot.done.is_superset(&done),
            "process {generation} lost completed work: {:?}",
            done.difference(&snapshot.done).collect::<Vec<_>>()
        );
        println!(
            "  process {generation}: trigger {trigger:?} -> {:?}; sent {} ({} distinct keys done before, {} after)",
            exit.killed,
            mock.requests_of(generation).len(),
            done.len(),
            snapshot.done.len()
        );
        done = snapshot.done;
        rows = snapshot.rows;
        match exit.killed {
            Some(landed) => *figures.kills.entry(landed).or_default() += 1,
            None => {
                let latest = snapshot.latest.expect("a completed run left a record");
                assert_eq!(latest.state, exit.final_state.clone().unwrap_or_default());
                break exit.final_state.expect("final state");
            }
        }
    };

    // Every child is gone, so every request it sent has been logged (one sent just
    // before a kill may have been read while the next child ran).
    let mut sent: BTreeSet<String> = BTreeSet::new();
    for (generation, done) in done_before.iter().enumerate().skip(1) {
        let generation = u32::try_from(generation).expect("few processes");
        let asked = mock.requests_of(generation);
        let again: Vec<&String> = asked.iter().filter(|k| done.contains(*k)).collect();
        assert!(
            again.is_empty(),
            "process {generation} re-sent calls the store had recorded complete: {again:?}"
        );
        let distinct: BTreeSet<&String> = asked.iter().collect();
        assert_eq!(
            distinct.len(),
            asked.len(),
            "process {generation} sent a key twice: {asked:?}"
        );
        figures.requests += asked.len();
        figures.resent += asked.iter().filter(|k| sent.contains(*k)).count();
        if generation > 1 {
            figures.saved += done.len();
        }
        sent.extend(asked);
    }
    assert!(
        mock.requests_of(u32::MAX).is_empty(),
        "requests without a process number"
    );
    assert_eq!(sent.len(), ITEMS + 2, "every call was made");

    assert_eq!(
        final_state, expected,
        "the final state differs from an uninterrupted run's"
    );
    let results = final_state["results"].as_array().expect("results");
    let keys: Vec<&str> = results.iter().filter_map(|r| r["key"].as_str()).collect();
    let want: Vec<String> = (0..ITEMS).map(item_key).collect();
    assert_eq!(keys, want, "the fan-in holds every item once, in order");
    assert_eq!(final_state["errors"], Value::Array(Vec::new()));
    let kills: usize = figures.kills.values().sum();
    assert_eq!(kills, KILLS, "{KILLS} kills before the run completed");
    for kind in [Landed::MidNode, Landed::MidFanOut, Landed::MidSave] {
        assert!(
            figures.kills.contains_key(&kind),
            "no kill landed {} (seed {seed}): {:?}",
            kind.label(),
            figures.kills
        );
    }
    let landed: Vec<String> = figures
        .kills
        .iter()
        .map(|(k, n)| format!("{} {n}", k.label()))
        .collect();
    println!(
        "{name}: {kills} kills ({}), {} resumes, {} processes; LLM requests {} (uninterrupted run {}, \
         {} re-sent after a kill caught them in flight); {} requests saved vs. restarting from \
         scratch; mean save {} µs; {} kills left the server running the dead client's \
         statement; {:.1} s",
        landed.join(", "),
        figures.processes - 1,
        figures.processes,
        figures.requests,
        figures.uninterrupted,
        figures.resent,
        figures.saved,
        saves.mean().as_micros(),
        figures.lingered,
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn sqlite_pipeline_survives_twenty_kills() {
    let dir = std::env::temp_dir().join(unique_name("oa_crash"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    survive_kills("sqlite", |tag| {
        Backend::Sqlite(dir.join(format!("{tag}.db")))
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn postgres_pipeline_survives_twenty_kills() {
    let Some(url) = url(Service::Postgres, "postgres_pipeline_survives_twenty_kills") else {
        return;
    };
    let base = unique_name("oa_crash");
    survive_kills("postgres", |tag| Backend::Postgres {
        url: url.clone(),
        schema: format!("{base}_{tag}"),
    });
}
