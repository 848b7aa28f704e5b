//! LLM-call overhead (issue 8 item 5): a `complete()` call through the
//! OpenAI-compatible provider vs a bare reqwest POST of the same JSON body, against a
//! keep-alive HTTP/1.1 server on 127.0.0.1 that answers every request with one fixed
//! chat-completions body (`common`).
//!
//! Variants, each at concurrency 1 and 64 (64 concurrent calls per iteration, joined),
//! on a multi-thread tokio runtime (the server runs on its own thread):
//! - `bare`: reqwest (the provider's client settings) POSTs the provider's request
//!   body, serialized per call from a `serde_json::Value`, and parses the answer as a
//!   `serde_json::Value`;
//! - `provider`: `complete()` without retry;
//! - `provider_retry`: `complete()` with call-level retry (3 attempts, zero backoff;
//!   nothing fails);
//! - `provider_flaky` (concurrency 1 only): the same retrying call against a server
//!   that answers `503`, `503`, then `200`: three requests per call, two zero-backoff
//!   retries (issue 19: the retries must not wait for a timer tick);
//! - `node_observed`: the calls issued from inside one graph node with a no-op
//!   observer attached (typed LLM attempt and completion events built and delivered);
//!   one graph invocation and one drain per iteration.
//!
//! Throughput is per call. Sequential criterion runs on a shared machine drift; for
//! ratios, `cargo run --release -p openarmature-llm --example call_overhead_paired`
//! interleaves the variants and reports paired ratios.

#![allow(clippy::expect_used, missing_docs)]

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use common::{client_runtime, run_node, Fixture};

fn call_overhead(c: &mut Criterion) {
    let rt = client_runtime();
    let fx = Fixture::new(&rt);
    let mut group = c.benchmark_group("llm_call");
    for n in [1usize, 64] {
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::new("bare", n), |b| {
            b.iter(|| rt.block_on(fx.bare(n)))
        });
        group.bench_function(BenchmarkId::new("provider", n), |b| {
            b.iter(|| rt.block_on(fx.complete(n, false)))
        });
        group.bench_function(BenchmarkId::new("provider_retry", n), |b| {
            b.iter(|| rt.block_on(fx.complete(n, true)))
        });
        if n == 1 {
            group.bench_function(BenchmarkId::new("provider_flaky", n), |b| {
                b.iter(|| rt.block_on(fx.flaky()))
            });
        }
        let graph = fx.graph(n, true);
        group.bench_function(BenchmarkId::new("node_observed", n), |b| {
            b.iter(|| rt.block_on(run_node(&graph)))
        });
    }
    group.finish();
}

criterion_group!(benches, call_overhead);
criterion_main!(benches);
