//! The `resilient_extraction` pipeline (the workspace's main example) on a fleet of
//! local worker processes behind Restate.
//!
//! ```sh
//! source .ci/services.sh && oa_services_start      # Restate, PostgreSQL, haproxy
//! cargo run -p openarmature-restate --example fleet_extraction
//! cargo run -p openarmature-restate --example fleet_extraction -- --kill --items 96 --chunk 4
//! ```
//!
//! One command: it checks the Restate server (admin API and ingress), PostgreSQL and
//! haproxy it is pointed at, starts the fault-injecting OpenAI-compatible server of the
//! main example in this process (every answer `--latency-ms` late), starts `--workers`
//! worker processes (this program re-run) behind one haproxy (HTTP/2 cleartext to each
//! worker), registers the balancer as the Restate deployment, and submits one
//! invocation: a document of `--items` chunks. Each worker serves the pipeline as the
//! Restate workflow; the fan-out sends its instances (one per chunk, or `--chunk` k
//! consecutive chunks per job) to whichever worker Restate picks; graph state is in
//! PostgreSQL (a fresh schema per run). `--kill` SIGKILLs one worker once half the
//! chunks were asked, and restarts it a second later. At the end it prints the result
//! of every chunk in order and the counts: chunks, LLM requests, and answers re-sent
//! (a good answer the pipeline asked for again: what a lost worker costs).
//!
//! Where the servers are: `RESTATE_ADMIN_URL`, `RESTATE_INGRESS_URL`, `DATABASE_URL`
//! and `HAPROXY` (the executable; else `haproxy` on the PATH or `/usr/sbin/haproxy`),
//! or the `OPENARMATURE_TEST_*` variables `.ci/services.sh` exports. A missing or
//! unreachable server ends the run with a typed error naming it and how to start it.

// Shared with the main example (each program uses part of them).
#[path = "../../../../examples/resilient_extraction/http.rs"]
#[allow(dead_code)]
mod http;
#[path = "../../../../examples/resilient_extraction/pipeline.rs"]
#[allow(dead_code)]
mod pipeline;
#[path = "../../../../examples/resilient_extraction/server.rs"]
#[allow(dead_code)]
mod server;

// The fleet tests' balancer (haproxy in front of the workers).
#[path = "../../tests/it/balancer.rs"]
mod balancer;
mod config;
mod fleet;

use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use openarmature_restate::{RestateClient, Step};
use serde_json::{json, Value};

use crate::config::{Args, FleetError, Servers};
use crate::fleet::Fleet;

fn main() -> ExitCode {
    let result = if std::env::var_os(fleet::WORKER_VAR).is_some() {
        fleet::worker_main()
    } else {
        Args::parse(std::env::args().skip(1)).and_then(|args| {
            tokio::runtime::Runtime::new()
                .map_err(|e| FleetError::Run(format!("no runtime: {e}")))?
                .block_on(drive(args))
        })
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.category());
            ExitCode::FAILURE
        }
    }
}

/// The document: `items` paragraphs, cycling through the main example's.
fn document(items: usize) -> String {
    let full = pipeline::document(false);
    let paragraphs: Vec<&str> = full.split("\n\n").collect();
    (0..items)
        .map(|i| paragraphs[i % paragraphs.len()])
        .collect::<Vec<_>>()
        .join("\n\n")
}

async fn drive(args: Args) -> Result<(), FleetError> {
    let servers = Servers::from_env().await?;
    let llm = server::start_slow(server::Faults::Demo, args.latency)
        .await
        .map_err(|e| FleetError::Run(format!("the embedded LLM server did not start: {e}")))?;
    println!(
        "servers: Restate admin {} / ingress {}, PostgreSQL schema {}, haproxy {}; LLM: embedded fault-injecting server at {} ({} ms per answer)",
        servers.admin,
        servers.ingress,
        servers.schema,
        servers.haproxy.display(),
        llm.base_url,
        args.latency.as_millis()
    );
    let mut fleet = Fleet::start(&servers, &args, &llm.base_url).await?;
    println!(
        "fleet: {} workers behind haproxy at {} (registered with Restate); fan-out concurrency {}, {} per Restate job",
        args.workers,
        fleet.balancer_url(),
        args.concurrency,
        if args.chunk.get() == 1 {
            "one chunk".to_owned()
        } else {
            format!("{} chunks", args.chunk)
        }
    );

    let client = RestateClient::new(&servers.ingress);
    let key = format!("fleet-extraction-{}", servers.schema);
    let started = Instant::now();
    client
        .submit(&key, &json!({ "text": document(args.items) }))
        .await
        .map_err(|e| FleetError::Run(format!("submit: {e}")))?;
    println!("submitted invocation {key}: {} chunks", args.items);

    if args.kill {
        let half = u64::try_from(args.items / 2).unwrap_or(u64::MAX);
        while llm.tally.requests.load(Ordering::Relaxed) < half {
            if started.elapsed() > Duration::from_secs(120) {
                return Err(FleetError::Run(
                    "the fan-out never got halfway (no worker answering?)".into(),
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let victim = args.workers - 1;
        fleet.kill(victim).await?;
        println!(
            "killed worker w{victim} (SIGKILL) after {} LLM requests; restarting it in 1 s",
            llm.tally.requests.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
        fleet.restart(victim).await?;
    }

    let step = client
        .attach(&key)
        .await
        .map_err(|e| FleetError::Run(format!("attach: {e}")))?;
    let elapsed = started.elapsed();
    let Step::CompletionResponse { state, .. } = step else {
        return Err(FleetError::Run(format!(
            "the invocation did not complete: {step:?}"
        )));
    };
    report(&state, &llm.tally, args.items, elapsed);
    fleet.stop();
    Ok(())
}

/// Prints every chunk's result in order, the summary and the counts.
fn report(state: &Value, tally: &server::Tally, items: usize, elapsed: Duration) {
    let results = state["results"].as_array().map_or(&[][..], Vec::as_slice);
    for (i, result) in results.iter().enumerate() {
        if result["degraded"] == true {
            println!("  chunk {i:>3}: degraded (the provider kept failing)");
        } else {
            println!(
                "  chunk {i:>3}: {:<9} {:<18} {}",
                result["severity"].as_str().unwrap_or("?"),
                result["topic"].as_str().unwrap_or("?"),
                result["entities"]
                    .as_array()
                    .map(|e| e
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", "))
                    .unwrap_or_default()
            );
        }
    }
    println!("summary: {}", state["summary"].as_str().unwrap_or(""));
    let resent: u32 = tally
        .answered
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .values()
        .map(|n| n.saturating_sub(1))
        .sum();
    println!(
        "counts: {} of {items} chunks in order, {} LLM requests, {resent} good answers re-sent; {:.2} s",
        results.len(),
        tally.requests.load(Ordering::Relaxed),
        elapsed.as_secs_f64()
    );
}

/// The pipeline as a worker serves it (`Arc` so the per-chunk subgraph is shared).
fn durable(
    llm_url: &str,
    args: &config::WorkerArgs,
    checkpointer: Arc<dyn openarmature::graph::checkpoint::Checkpointer>,
) -> Result<openarmature_restate::Worker, FleetError> {
    use openarmature::llm::{OpenAiProvider, Transport};
    let provider = OpenAiProvider::builder(llm_url, server::MODEL)
        .transport(
            Transport::default()
                .no_proxy()
                .timeout(Duration::from_secs(30)),
        )
        .build()
        .map_err(|e| FleetError::Run(format!("provider: {e}")))?;
    let mut tuning = pipeline::Tuning::new(true);
    tuning.concurrency = args.concurrency;
    let waits = Arc::new(pipeline::Waits::default());
    let per_chunk = pipeline::per_chunk(Arc::new(provider), tuning, waits)
        .map_err(|e| FleetError::Run(format!("compile: {e}")))?;
    let dispatcher =
        openarmature_restate::RestateDispatcher::new(&args.ingress).chunk_size(args.chunk);
    let graph = pipeline::build_over(
        per_chunk.clone(),
        tuning,
        Some(pipeline::Durable {
            dispatcher: Arc::new(dispatcher),
            checkpointer,
        }),
    )
    .map_err(|e| FleetError::Run(format!("compile: {e}")))?;
    let harness = openarmature::harness::Harness::stateless(graph, |payload: &Value| {
        Ok(pipeline::Doc {
            text: payload["text"].as_str().unwrap_or_default().to_owned(),
            ..pipeline::Doc::default()
        })
    });
    openarmature_restate::Worker::new(harness)
        .map(|w| w.fan_out("extract_all", per_chunk))
        .map_err(|e| FleetError::Run(format!("worker: {e}")))
}
