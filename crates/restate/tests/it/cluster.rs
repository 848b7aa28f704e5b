//! The fleet under test: worker processes (this test binary re-run with
//! `OA_RESTATE_WORKER`), haproxy in front of them speaking HTTP/2 cleartext to each,
//! and the deployment registered with the Restate server through the balancer.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// What every worker of a fleet is started with.
#[derive(Clone)]
pub struct Fleet {
    /// `batch` (in-process fan-out), `dispatched` (each instance a Restate job, or
    /// `chunk` consecutive instances per job) or `approval`.
    pub graph: &'static str,
    /// The fan-out's concurrency bound.
    pub concurrency: usize,
    /// Instances per Restate job (`dispatched`).
    pub chunk: usize,
    pub ingress: String,
    pub pg_url: String,
    pub pg_schema: String,
    pub mock_url: String,
}

pub struct Cluster {
    fleet: Fleet,
    ports: Vec<u16>,
    workers: Vec<Option<Child>>,
    haproxy: Child,
    dir: std::path::PathBuf,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Cluster {
    /// Starts `n` workers and haproxy, and registers the balancer's URL with the
    /// admin API.
    pub async fn start(fleet: Fleet, n: usize, haproxy: &str, admin: &str) -> Cluster {
        let ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let mut workers = Vec::new();
        for (i, port) in ports.iter().enumerate() {
            workers.push(Some(spawn(&fleet, i, *port).await));
        }
        let lb_port = free_port();
        let dir = std::env::temp_dir().join(openarmature_testkit::services::unique_name("oa_lb"));
        std::fs::create_dir_all(&dir).unwrap();
        let haproxy = crate::balancer::start(std::path::Path::new(haproxy), &dir, lb_port, &ports)
            .await
            .expect("haproxy starts and listens");
        let lb_url = format!("http://127.0.0.1:{lb_port}");
        openarmature_restate::register_deployment(admin, &lb_url)
            .await
            .expect("deployment registers through the balancer");
        Cluster {
            fleet,
            ports,
            workers,
            haproxy,
            dir,
        }
    }

    /// The index of worker `name` (`w0`, `w1`, ...).
    pub fn index(name: &str) -> usize {
        name.trim_start_matches('w').parse().unwrap()
    }

    /// SIGKILLs worker `i` and waits until it is gone.
    pub async fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.workers[i].take() {
            child.start_kill().unwrap();
            child.wait().await.unwrap();
        }
    }

    /// Starts worker `i` again on its port.
    pub async fn restart(&mut self, i: usize) {
        self.workers[i] = Some(spawn(&self.fleet, i, self.ports[i]).await);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in self.workers.iter_mut().flatten() {
            let _ = child.start_kill();
        }
        let _ = self.haproxy.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn spawn(fleet: &Fleet, i: usize, port: u16) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("OA_RESTATE_WORKER", format!("w{i}"))
        .env("OA_GRAPH", fleet.graph)
        .env("OA_PG_URL", &fleet.pg_url)
        .env("OA_PG_SCHEMA", &fleet.pg_schema)
        .env("OA_MOCK_URL", &fleet.mock_url)
        .env("OA_INGRESS_URL", &fleet.ingress)
        .env("OA_CONCURRENCY", fleet.concurrency.to_string())
        .env("OA_CHUNK", fleet.chunk.to_string())
        .env("OA_PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("worker ready in time")
        .unwrap()
        .expect("worker output");
    assert_eq!(line, "ready", "worker w{i}");
    // Keep draining its stdout so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

/// The child process: serves the fleet's graph on `OA_PORT` until killed.
pub fn worker_main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let get = |k: &str| std::env::var(k).unwrap();
    rt.block_on(async {
        let backend = openarmature_postgres::PgBackend::connect(
            openarmature_postgres::PgConfig::new(get("OA_PG_URL")).schema(get("OA_PG_SCHEMA")),
        )
        .await
        .unwrap();
        let store: std::sync::Arc<dyn openarmature_graph::checkpoint::Checkpointer> =
            std::sync::Arc::new(backend.checkpointer());
        let mock = get("OA_MOCK_URL");
        let worker = match get("OA_GRAPH").as_str() {
            "batch" => openarmature_restate::Worker::new(super::graphs::batch(store, &mock, None)),
            "dispatched" => {
                let chunk = get("OA_CHUNK").parse().unwrap();
                let dispatcher =
                    openarmature_restate::RestateDispatcher::new(get("OA_INGRESS_URL"))
                        .chunk_size(chunk);
                openarmature_restate::Worker::new(super::graphs::batch(
                    store,
                    &mock,
                    Some(dispatcher),
                ))
                .map(|w| w.fan_out("fan", super::graphs::classify(&mock)))
            }
            _ => openarmature_restate::Worker::new(super::graphs::approval(store)),
        }
        .unwrap();
        let listener =
            tokio::net::TcpListener::bind(("127.0.0.1", get("OA_PORT").parse::<u16>().unwrap()))
                .await
                .unwrap();
        println!("ready");
        worker.serve(listener).await;
    });
}
