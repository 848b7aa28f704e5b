//! `--soak SECONDS`: the pipeline at full rate against the fault-injecting server
//! ([`Faults::Soak`]) for a fixed time, checking what a long-running service needs:
//!
//! - every invocation finishes: each chunk extracted or degraded, none failed;
//! - memory is flat after warm-up: the resident set size (Linux `/proc/self/status`
//!   `VmRSS`) is sampled every second and the least-squares slope of the samples
//!   after the warm-up must stay under [`SoakConfig::max_slope_kb_s`]
//!   ([`LONG_RUN_BOUND_KB_S`] for a run of 30 s or more);
//! - nothing is left running: when the last invocation returned and the graph and
//!   provider are dropped, the client runtime has no alive task
//!   (`RuntimeMetrics::num_alive_tasks`; the server runs on a runtime of its own).
//!
//! The run keeps [`SoakConfig::concurrency`] invocations in flight; a counting
//! observer receives every event, so the per-invocation delivery workers are in the
//! loop too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openarmature::graph::{observer_fn, InvokeOptions, ObserverEvent, Registration};
use openarmature::llm::{OpenAiProvider, Transport};
use serde_json::Value;

use super::pipeline::{self, Doc, Tuning, Waits};
use super::server::{self, Faults, SOAK_FAULTS};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How long and how hard to soak, and the memory bound.
#[derive(Debug, Clone, Copy)]
pub struct SoakConfig {
    /// Total run time (invocations in flight at the end still finish).
    pub duration: Duration,
    /// The first part of the run left out of the slope (allocator and pool warm-up).
    pub warmup: Duration,
    /// How often the RSS is sampled.
    pub sample_every: Duration,
    /// Invocations kept in flight.
    pub concurrency: usize,
    /// The largest RSS slope after warm-up accepted, in KB/s.
    pub max_slope_kb_s: f64,
    /// The fault sequence's seed.
    pub seed: u64,
}

/// The slope bound of a run of 30 s or more, KB/s. Measured on the debug build
/// (~40 invocations/s, 32 in flight): after a quarter of a minute the RSS still
/// creeps up by ~30 KB/s for a while (allocator arenas reaching their high-water
/// mark), then stays flat (+0.6 KB/s over 150 s); a leak of 1.5 KB per invocation
/// exceeds the bound.
pub const LONG_RUN_BOUND_KB_S: f64 = 64.0;

/// The slope bound of a shorter run, KB/s: its samples are still inside the
/// allocator's warm-up, so it only catches gross leaks (~25 KB per invocation).
pub const SHORT_RUN_BOUND_KB_S: f64 = 1024.0;

impl SoakConfig {
    /// A run of `seconds`, 32 invocations in flight. From 30 s on: a quarter of it
    /// warm-up, one sample a second, [`LONG_RUN_BOUND_KB_S`]; shorter: a third (at
    /// most 1 s) warm-up, four samples a second, [`SHORT_RUN_BOUND_KB_S`].
    pub fn new(seconds: f64) -> SoakConfig {
        let duration = Duration::from_secs_f64(seconds.clamp(1.0, 86_400.0));
        let long = duration >= Duration::from_secs(30);
        SoakConfig {
            duration,
            warmup: if long {
                duration / 4
            } else {
                (duration / 3).min(Duration::from_secs(1))
            },
            sample_every: Duration::from_millis(if long { 1000 } else { 250 }),
            concurrency: 32,
            max_slope_kb_s: if long {
                LONG_RUN_BOUND_KB_S
            } else {
                SHORT_RUN_BOUND_KB_S
            },
            seed: 0x50a4,
        }
    }
}

/// What a soak run measured.
#[derive(Debug, Default)]
pub struct SoakReport {
    /// Invocations that returned `Ok` with every chunk extracted or degraded.
    pub finished: u64,
    /// Invocations that failed or returned a chunk that is neither (must be 0).
    pub failed: u64,
    /// Chunks extracted.
    pub extracted: u64,
    /// Chunks degraded by failure isolation.
    pub degraded: u64,
    /// Chat completions the server answered (or refused to).
    pub requests: u64,
    /// Faults injected, per [`SOAK_FAULTS`] entry.
    pub injected: Vec<u64>,
    /// Observer events delivered.
    pub events: u64,
    /// `(seconds since start, RSS in KB)`, one per [`SoakConfig::sample_every`].
    pub samples: Vec<(f64, u64)>,
    /// The least-squares RSS slope after warm-up, KB/s (`None` without `/proc`).
    pub slope_kb_s: Option<f64>,
    /// Tasks alive on the client runtime once everything was dropped.
    pub tasks_left: usize,
    /// The first failure, if any.
    pub first_failure: Option<String>,
    /// Wall time.
    pub elapsed: Duration,
}

impl SoakReport {
    /// Whether every check passed under `config`.
    pub fn passed(&self, config: &SoakConfig) -> bool {
        self.failed == 0
            && self.finished > 0
            && self.tasks_left == 0
            && self.slope_kb_s.is_none_or(|s| s <= config.max_slope_kb_s)
    }

    /// The report's text.
    pub fn render(&self, config: &SoakConfig) -> String {
        let secs = self.elapsed.as_secs_f64();
        let faults: Vec<String> = SOAK_FAULTS
            .iter()
            .zip(&self.injected)
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        let rss = |i: Option<&(f64, u64)>| i.map_or(0.0, |(_, kb)| *kb as f64 / 1024.0);
        let memory = match self.slope_kb_s {
            Some(slope) => format!(
                "RSS {:.1} MB after warm-up ({:.0} s), {:.1} MB at the end; slope {slope:+.1} KB/s (bound {:.0} KB/s)",
                rss(self.samples.iter().find(|(t, _)| *t >= config.warmup.as_secs_f64())),
                config.warmup.as_secs_f64(),
                rss(self.samples.last()),
                config.max_slope_kb_s
            ),
            None => "RSS not measured (no /proc/self/status)".to_owned(),
        };
        let every = (self.samples.len() / 12).max(1);
        let trace: Vec<String> = self
            .samples
            .iter()
            .step_by(every)
            .map(|(t, kb)| format!("{t:.1}s {:.1}", *kb as f64 / 1024.0))
            .collect();
        format!(
            "Soak: {secs:.1} s, {} invocations in flight: {} finished ({:.1}/s), {} failed; \
             chunks {} extracted, {} degraded; {} requests ({:.0}/s), faults injected: {}; \
             {} observer events\n  {memory}\n  RSS (MB): {}\n  tasks alive at the end: {}",
            config.concurrency,
            self.finished,
            self.finished as f64 / secs,
            self.failed,
            self.extracted,
            self.degraded,
            self.requests,
            self.requests as f64 / secs,
            faults.join(", "),
            self.events,
            trace.join(", "),
            self.tasks_left,
        )
    }
}

/// The resident set size in KB (`None` off Linux).
fn rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The least-squares slope of `points`.
fn slope(points: &[(f64, u64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let mean_t = points.iter().map(|(t, _)| t).sum::<f64>() / n;
    let mean_y = points.iter().map(|(_, y)| *y as f64).sum::<f64>() / n;
    let (num, den) = points.iter().fold((0.0, 0.0), |(num, den), (t, y)| {
        (
            num + (t - mean_t) * (*y as f64 - mean_y),
            den + (t - mean_t).powi(2),
        )
    });
    (den > 0.0).then(|| num / den)
}

/// Whether one chunk result is an extraction or a degraded marker.
fn chunk_outcome(result: &Value) -> Option<bool> {
    if result["degraded"] == true {
        return Some(false);
    }
    let extracted = result["topic"].is_string() && result["entities"].is_array();
    extracted.then_some(true)
}

#[derive(Default)]
struct Counts {
    finished: AtomicU64,
    failed: AtomicU64,
    extracted: AtomicU64,
    degraded: AtomicU64,
    events: Arc<AtomicU64>,
    first_failure: std::sync::Mutex<Option<String>>,
}

impl Counts {
    fn fail(&self, why: String) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        let mut first = self
            .first_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        first.get_or_insert(why);
    }
}

/// Runs the soak. Builds its own runtimes (call it outside of one): the server's on a
/// thread of its own, the client's with two workers.
///
/// # Errors
/// When the server cannot start or the graph does not compile.
pub fn run(config: SoakConfig) -> Result<SoakReport, BoxError> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => return drop(tx.send(Err(e))),
        };
        rt.block_on(async move {
            let started = server::start_with(Faults::Soak { seed: config.seed }).await;
            let _ = tx.send(started);
            // Serve until the process ends.
            std::future::pending::<()>().await;
        });
    });
    let server = rx.recv()??;
    let client = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut report = client.block_on(drive(config, &server.base_url))?;
    report.requests = server.tally.requests.load(Ordering::Relaxed);
    report.injected = server
        .tally
        .injected
        .iter()
        .map(|n| n.load(Ordering::Relaxed))
        .collect();
    Ok(report)
}

async fn drive(config: SoakConfig, base_url: &str) -> Result<SoakReport, BoxError> {
    let started = Instant::now();
    let deadline = started + config.duration;
    let provider = OpenAiProvider::builder(base_url, server::MODEL)
        .transport(
            Transport::default()
                .no_proxy()
                .timeout(Duration::from_secs(1)),
        )
        .build()?;
    let graph = Arc::new(pipeline::build(
        Arc::new(provider),
        Tuning::new(true),
        Arc::new(Waits::default()),
    )?);
    let counts = Arc::new(Counts::default());
    let text = pipeline::document(true);
    let chunks = text.split("\n\n").count();

    let sampler = tokio::spawn(async move {
        let mut samples = Vec::new();
        let mut tick = tokio::time::interval(config.sample_every);
        while Instant::now() < deadline {
            tick.tick().await;
            if let Some(kb) = rss_kb() {
                samples.push((started.elapsed().as_secs_f64(), kb));
            }
        }
        samples
    });
    let workers: Vec<_> = (0..config.concurrency)
        .map(|_| {
            let (graph, counts, text) = (Arc::clone(&graph), Arc::clone(&counts), text.clone());
            tokio::spawn(async move {
                while Instant::now() < deadline {
                    let events = Arc::clone(&counts.events);
                    let counter = observer_fn(move |_: Arc<ObserverEvent>| {
                        events.fetch_add(1, Ordering::Relaxed);
                        async { Ok(()) }
                    });
                    let options =
                        InvokeOptions::default().observer(Registration::new("count", counter));
                    let input = Doc {
                        text: text.clone(),
                        ..Doc::default()
                    };
                    match graph.invoke_with(input, options).await {
                        Ok(done) => {
                            let outcomes: Vec<Option<bool>> =
                                done.state.results.iter().map(chunk_outcome).collect();
                            if outcomes.len() != chunks || outcomes.contains(&None) {
                                counts
                                    .fail(format!("unexpected results: {:?}", done.state.results));
                                continue;
                            }
                            let extracted = outcomes.iter().filter(|o| **o == Some(true)).count();
                            counts.finished.fetch_add(1, Ordering::Relaxed);
                            counts
                                .extracted
                                .fetch_add(extracted as u64, Ordering::Relaxed);
                            counts
                                .degraded
                                .fetch_add((chunks - extracted) as u64, Ordering::Relaxed);
                        }
                        Err(e) => counts.fail(format!("{}: {e}", e.category().as_str())),
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await?;
    }
    let samples = sampler.await?;
    graph.drain(Some(Duration::from_secs(5))).await;
    drop(graph);

    // Everything is dropped: wait (bounded) for the tasks that close connections.
    let metrics = tokio::runtime::Handle::current().metrics();
    let settle = Instant::now();
    while metrics.num_alive_tasks() > 0 && settle.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let after_warmup: Vec<(f64, u64)> = samples
        .iter()
        .copied()
        .filter(|(t, _)| *t >= config.warmup.as_secs_f64())
        .collect();
    let first_failure = counts
        .first_failure
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    Ok(SoakReport {
        finished: counts.finished.load(Ordering::Relaxed),
        failed: counts.failed.load(Ordering::Relaxed),
        extracted: counts.extracted.load(Ordering::Relaxed),
        degraded: counts.degraded.load(Ordering::Relaxed),
        events: counts.events.load(Ordering::Relaxed),
        slope_kb_s: slope(&after_warmup),
        samples,
        tasks_left: metrics.num_alive_tasks(),
        first_failure,
        elapsed: started.elapsed(),
        ..SoakReport::default()
    })
}
