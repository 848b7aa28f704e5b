//! A chunked extraction pipeline surviving a flaky LLM provider.
//!
//! ```sh
//! cargo run --example resilient_extraction              # embedded fault-injecting server
//! cargo run --example resilient_extraction -- --short   # fewer chunks, shorter backoffs (CI)
//! cargo run --example resilient_extraction -- --otlp    # also export the spans over OTLP
//! cargo run --example resilient_extraction -- --short --report run.html  # + an HTML waterfall
//! ```
//!
//! The document is split into chunks; a fan-out runs one `extract` node per chunk;
//! each makes one structured-output LLM call; `summarize` aggregates. Resilience is
//! layered:
//!
//! - **call level** (`openarmature-llm`): each `complete()` call retries transient
//!   errors with exponential backoff that honours `Retry-After`, and re-asks when
//!   the reply fails the JSON Schema (the bad reply and a correction are appended);
//! - **node level** (`openarmature-pipeline`, the three-piece pattern):
//!   `FailureIsolationMiddleware` (outer) → `RetryMiddleware` (inner) → the node, so
//!   a chunk whose calls keep failing is re-run once, then degraded instead of
//!   failing the run.
//!
//! By default the program starts an OpenAI-compatible server on 127.0.0.1 (an
//! ephemeral port) that injects faults deterministically (see `server.rs`). With
//! `OPENAI_BASE_URL` and `OPENAI_MODEL` set (and `OPENAI_API_KEY` if the server
//! needs one) it runs against that server instead — OpenAI, vLLM, Ollama, any
//! OpenAI-compatible endpoint — and prints the same report.
//!
//! The report is built from the events an observer collected during the run (node
//! events, typed LLM events, failure-isolation events): nothing in it is canned.
//!
//! On a terminal, the fan-out's progress (chunks done / degraded / in flight) is drawn
//! live from the same events (`ProgressObserver`); with standard output redirected
//! (a CI log) nothing is drawn and the output is the report alone.
//!
//! Options: `--short` (or `RESILIENT_EXTRACTION_SHORT=1`), `--otlp` (or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` set; the other `OTEL_EXPORTER_OTLP_*` variables
//! apply), `--embedded` (ignore `OPENAI_*`), `--report PATH` (write the run as one
//! self-contained HTML waterfall, `RunReport`: node attempts, LLM wire attempts with
//! their retry reasons, backoff and Retry-After waits, degraded chunks, tokens),
//! `--soak SECONDS` (the soak of `soak.rs`: the pipeline at full rate against a
//! fault-injecting server, memory and tasks checked; `cargo xtask soak` runs it).

mod http;
mod pipeline;
mod report;
mod server;
mod soak;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openarmature::graph::{InvokeOptions, Registration};
use openarmature::llm::resilience::UsageAggregator;
use openarmature::llm::{OpenAiBuilder, OpenAiProvider, Provider, Transport};
use openarmature::observability::export::OtlpExport;
use openarmature::observability::progress::ProgressObserver;
use openarmature::observability::report::RunReport;
use openarmature::observability::OtelObserver;

use crate::pipeline::{Doc, Tuning, Waits};
use crate::report::Collector;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

struct Args {
    short: bool,
    otlp: bool,
    embedded: bool,
    report: Option<PathBuf>,
    soak: Option<f64>,
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

fn parse_args() -> Result<Args, BoxError> {
    let mut args = Args {
        short: env_flag("RESILIENT_EXTRACTION_SHORT"),
        otlp: std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").is_ok_and(|v| !v.is_empty()),
        embedded: false,
        report: None,
        soak: None,
    };
    let mut argv = std::env::args().skip(1);
    while let Some(arg) = argv.next() {
        match arg.as_str() {
            "--short" => args.short = true,
            "--otlp" => args.otlp = true,
            "--embedded" => args.embedded = true,
            "--report" => match argv.next() {
                Some(path) if !path.starts_with("--") => args.report = Some(path.into()),
                _ => return Err("--report needs a file path, e.g. --report run.html".into()),
            },
            "--soak" => {
                let seconds = argv.next().and_then(|v| v.parse::<f64>().ok());
                match seconds {
                    Some(s) if s > 0.0 => args.soak = Some(s),
                    _ => return Err("--soak takes a positive number of seconds".into()),
                }
            }
            "-h" | "--help" => {
                println!(
                    "usage: resilient_extraction [--short] [--otlp] [--embedded] [--report PATH] [--soak SECONDS]"
                );
                std::process::exit(0);
            }
            other => match other.strip_prefix("--report=") {
                Some(path) if !path.is_empty() => args.report = Some(path.into()),
                _ => return Err(format!("unknown argument `{other}` (try --help)").into()),
            },
        }
    }
    Ok(args)
}

/// The real server named by `OPENAI_*`, if `OPENAI_BASE_URL` is set: the builder
/// `OpenAiProvider::from_env` configures (`OPENAI_MODEL` required, `OPENAI_API_KEY`
/// if set).
fn real_server() -> Result<Option<(String, OpenAiBuilder)>, BoxError> {
    match std::env::var("OPENAI_BASE_URL") {
        Ok(base_url) if !base_url.trim().is_empty() => {
            Ok(Some((base_url, OpenAiProvider::from_env()?)))
        }
        _ => Ok(None),
    }
}

fn main() -> Result<(), BoxError> {
    let args = parse_args()?;
    if let Some(seconds) = args.soak {
        let config = soak::SoakConfig::new(seconds);
        let report = soak::run(config)?;
        println!("{}", report.render(&config));
        if let Some(why) = &report.first_failure {
            println!("  first failure: {why}");
        }
        if !report.passed(&config) {
            return Err("the soak failed (see the report above)".into());
        }
        println!("Checks: every invocation finished or degraded, memory flat, no task left.");
        return Ok(());
    }
    tokio::runtime::Runtime::new()?.block_on(demo(args))
}

async fn demo(args: Args) -> Result<(), BoxError> {
    let real = if args.embedded { None } else { real_server()? };
    let embedded = real.is_none();

    let provider = match real {
        Some((base_url, builder)) => {
            let provider = builder
                .transport(Transport::default().timeout(Duration::from_secs(120)))
                .build()?;
            println!(
                "provider: {base_url} (model {}), from OPENAI_BASE_URL / OPENAI_MODEL",
                provider.model()
            );
            provider
        }
        None => {
            let server = server::start().await?;
            println!(
                "provider: embedded OpenAI-compatible server at {} (model {}), injecting faults",
                server.base_url,
                server::MODEL
            );
            OpenAiProvider::builder(server.base_url.as_str(), server::MODEL)
                .transport(
                    Transport::default()
                        .no_proxy()
                        .timeout(Duration::from_secs(10)),
                )
                .build()?
        }
    };
    if let Err(e) = provider.ready().await {
        println!(
            "warning: ready() failed ({}: {e}); running anyway",
            e.category()
        );
    }

    let tuning = Tuning::new(args.short);
    let waits = Arc::new(Waits::default());
    let graph = pipeline::build(Arc::new(provider), tuning, Arc::clone(&waits))?;
    let text = pipeline::document(args.short);
    println!(
        "document: {} chunks{}; call-level retry {} attempts (+reask, Retry-After honoured), node-level retry {} attempts, failure isolation outermost",
        text.split("\n\n").count(),
        if args.short { " (--short)" } else { "" },
        tuning.call_attempts,
        tuning.node_attempts,
    );

    let collector = Collector::default();
    let usage = UsageAggregator::new();
    let mut options = InvokeOptions::default()
        .observer(collector.registration())
        .observer(Registration::new("usage", usage.clone()));
    // Live progress on a terminal only: a redirected run's output stays the report.
    let progress = std::io::stdout()
        .is_terminal()
        .then(|| ProgressObserver::stdout().item_node("extract"));
    if let Some(progress) = &progress {
        options = options.observer(progress.registration());
    }
    let run_report = args.report.as_ref().map(|_| RunReport::new());
    if let Some(run_report) = &run_report {
        options = options.observer(run_report.registration());
    }
    let input = Doc {
        text,
        ..Doc::default()
    };
    let started = Instant::now();
    let done = if args.otlp {
        let export = OtlpExport::from_env().service_name("resilient_extraction");
        let tracer_provider = export.tracer_provider()?;
        let otel = OtelObserver::builder(&tracer_provider).build();
        let done = otel.invoke(&graph, input, options).await;
        graph.drain(Some(Duration::from_secs(5))).await;
        // Shutting the provider down flushes the batch exporter (export errors are
        // reported by the OpenTelemetry SDK, not here).
        let endpoint = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT")
            .unwrap_or_else(|_| "the OTLP default, http://localhost:4318".into());
        match tracer_provider.shutdown() {
            Ok(()) => println!("otlp: spans flushed to {endpoint}"),
            Err(e) => println!("otlp: flushing spans to {endpoint} failed: {e}"),
        }
        done?.state
    } else {
        let done = graph.invoke_with(input, options).await?;
        done.state
    };
    let elapsed = started.elapsed();
    // Observers run off the hot path: drain before reading what they collected.
    graph.drain(Some(Duration::from_secs(5))).await;
    if let Some(progress) = &progress {
        progress.finish();
    }

    let (text, tally) = report::render(&collector, &waits, &usage.report());
    println!("\n{text}");
    println!("Results (final state, chunk order)");
    print!("{}", report::results(&done.results));
    println!("\nSummary: {}", done.summary);
    println!("Run time: {:.2} s", elapsed.as_secs_f64());
    if let (Some(path), Some(run_report)) = (&args.report, &run_report) {
        run_report.write_html(path, "resilient_extraction: a run")?;
        let s = run_report.waterfall().summary;
        println!(
            "Report: wrote {} ({} node attempts, {} LLM wire attempts of which {} retried, {} degraded)",
            path.display(),
            s.node_attempts,
            s.llm_attempts,
            s.llm_retries,
            s.degraded
        );
    }

    if embedded {
        let checks = [
            ("retried call", tally.retried_calls),
            ("reask", tally.reasks),
            ("honoured Retry-After", tally.retry_after_honoured),
            ("degraded node", tally.degraded),
        ];
        let missing: Vec<&str> = checks
            .iter()
            .filter(|(_, n)| *n == 0)
            .map(|(name, _)| *name)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "the embedded run should show each fault; missing: {}",
                missing.join(", ")
            )
            .into());
        }
        println!("Checks: every injected fault was seen in the events (retried call, reask, Retry-After, degraded node).");
    }
    Ok(())
}
