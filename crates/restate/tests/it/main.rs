//! openarmature-restate against a real Restate server: worker processes (this binary
//! re-run with `OA_RESTATE_WORKER`) behind haproxy (HTTP/2 cleartext to each), graph
//! state in PostgreSQL, a mock LLM in this process counting requests per item.
//! Needs OPENARMATURE_TEST_POSTGRES_URL, OPENARMATURE_TEST_RESTATE_ADMIN_URL,
//! OPENARMATURE_TEST_RESTATE_INGRESS_URL and OPENARMATURE_TEST_HAPROXY
//! (`source .ci/services.sh && oa_services_start` sets them); skipped without them
//! unless OPENARMATURE_REQUIRE_SERVICES=1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod balancer;
mod bench;
mod chunking;
mod cluster;
mod graphs;
mod kill;
mod local;
mod mock;
mod signal;

use std::process::ExitCode;
use std::time::Duration;

use libtest_mimic::{Arguments, Failed, Trial};
use openarmature_testkit::services::{url, Service};

/// Everything a fleet test needs.
pub struct Servers {
    pub postgres: String,
    pub admin: String,
    pub ingress: String,
    pub haproxy: String,
}

fn servers(test: &str) -> Option<Servers> {
    Some(Servers {
        postgres: url(Service::Postgres, test)?,
        admin: url(Service::RestateAdmin, test)?,
        ingress: url(Service::RestateIngress, test)?,
        haproxy: url(Service::Haproxy, test)?,
    })
}

fn fleet_test<F, Fut>(name: &'static str, body: F) -> Trial
where
    F: FnOnce(Servers) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    Trial::test(name, move || {
        let Some(servers) = servers(name) else {
            return Ok(());
        };
        runtime().block_on(async move {
            tokio::time::timeout(Duration::from_secs(180), body(servers))
                .await
                .map_err(|_| Failed::from("timed out after 180 s"))
        })
    })
}

/// A trial needing no server: `body` on a fresh runtime.
fn local_test(
    name: &'static str,
    body: impl std::future::Future<Output = ()> + Send + 'static,
) -> Trial {
    Trial::test(name, move || {
        runtime().block_on(body);
        Ok(())
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn main() -> ExitCode {
    if std::env::var("OA_RESTATE_WORKER").is_ok() {
        cluster::worker_main();
        return ExitCode::SUCCESS;
    }
    let mut args = Arguments::from_args();
    // The fleets share one Restate server and one service name: one at a time.
    args.test_threads = Some(1);
    let trials = vec![
        local_test(
            "a_graph_without_checkpointer_is_refused",
            local::without_checkpointer(),
        ),
        local_test(
            "an_unreachable_ingress_is_restate_unavailable",
            local::unreachable_ingress(),
        ),
        local_test(
            "consecutive_instances_travel_as_one_chunk_job",
            chunking::consecutive_instances_travel_as_one_job(),
        ),
        local_test(
            "a_chunk_never_exceeds_the_concurrency_bound",
            chunking::a_chunk_never_exceeds_the_concurrency_bound(),
        ),
        local_test(
            "chunk_size_one_sends_every_instance_alone",
            chunking::chunk_size_one_sends_every_instance_alone(),
        ),
        local_test(
            "an_instance_a_chunk_answer_lacks_is_sent_alone",
            chunking::an_instance_the_answer_lacks_is_sent_alone(),
        ),
        local_test(
            "a_resumed_chunked_run_sends_only_unrecorded_instances",
            chunking::a_resumed_run_sends_only_unrecorded_instances_in_partial_chunks(),
        ),
        fleet_test(
            "a_killed_worker_resumes_the_fan_out_without_repaying_llm_calls",
            kill::in_process,
        ),
        fleet_test(
            "a_killed_parent_resumes_a_dispatched_fan_out_attaching_to_its_instances",
            kill::dispatched,
        ),
        fleet_test(
            "a_killed_parent_resumes_a_chunked_fan_out_rerunning_only_unjournaled_instances",
            kill::chunked,
        ),
        fleet_test(
            "a_killed_chunk_worker_reruns_only_the_chunk_instances_not_journaled",
            kill::chunk_worker,
        ),
        fleet_test(
            "a_suspended_run_resumes_on_another_worker",
            signal::resumes_elsewhere,
        ),
        fleet_test("fleet_throughput", bench::fleet_throughput).with_ignored_flag(true),
    ];
    libtest_mimic::run(&args, trials).exit_code()
}
