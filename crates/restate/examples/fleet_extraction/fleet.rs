//! The local fleet: worker processes (this program re-run with [`WORKER_VAR`] set),
//! haproxy in front of them (HTTP/2 cleartext to each), the balancer registered with
//! the Restate admin API as the deployment.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::config::{Args, FleetError, Servers, WorkerArgs};

/// Set (to the worker's name) in a worker process's environment.
pub const WORKER_VAR: &str = "OA_FLEET_WORKER";

/// The running fleet; dropping it stops every process it started.
pub struct Fleet {
    env: Vec<(&'static str, String)>,
    ports: Vec<u16>,
    workers: Vec<Option<Child>>,
    haproxy: Option<Child>,
    balancer: String,
    dir: PathBuf,
}

/// A port on 127.0.0.1 nobody listens on (now).
fn free_port() -> Result<u16, FleetError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| FleetError::Run(format!("no free port: {e}")))
}

impl Fleet {
    /// Starts `args.workers` workers and haproxy, and registers the balancer.
    pub async fn start(servers: &Servers, args: &Args, llm_url: &str) -> Result<Fleet, FleetError> {
        let env = vec![
            ("OA_FLEET_PG_URL", servers.postgres.clone()),
            ("OA_FLEET_PG_SCHEMA", servers.schema.clone()),
            ("OA_FLEET_LLM_URL", llm_url.to_owned()),
            ("OA_FLEET_INGRESS", servers.ingress.clone()),
            ("OA_FLEET_CONCURRENCY", args.concurrency.to_string()),
            ("OA_FLEET_CHUNK", args.chunk.to_string()),
        ];
        let ports = (0..args.workers)
            .map(|_| free_port())
            .collect::<Result<Vec<_>, _>>()?;
        let dir = std::env::temp_dir().join(format!("oa_fleet_{}", servers.schema));
        std::fs::create_dir_all(&dir)
            .map_err(|e| FleetError::Run(format!("{}: {e}", dir.display())))?;
        let lb_port = free_port()?;
        let mut fleet = Fleet {
            env,
            ports,
            workers: Vec::new(),
            haproxy: None,
            balancer: format!("http://127.0.0.1:{lb_port}"),
            dir,
        };
        for i in 0..args.workers {
            let child = fleet.spawn(i).await?;
            fleet.workers.push(Some(child));
        }
        let haproxy = crate::balancer::start(&servers.haproxy, &fleet.dir, lb_port, &fleet.ports)
            .await
            .map_err(|e| FleetError::Unreachable {
                server: "haproxy",
                at: servers.haproxy.display().to_string(),
                reason: e.to_string(),
            })?;
        fleet.haproxy = Some(haproxy);
        openarmature_restate::register_deployment(&servers.admin, &fleet.balancer)
            .await
            .map_err(|e| FleetError::Run(format!("registering the deployment: {e}")))?;
        Ok(fleet)
    }

    /// The balancer's URL (the registered deployment).
    pub fn balancer_url(&self) -> &str {
        &self.balancer
    }

    /// Starts worker `i` on its port and waits until it serves.
    async fn spawn(&self, i: usize) -> Result<Child, FleetError> {
        let name = format!("w{i}");
        let failed = |reason: String| FleetError::Worker {
            name: name.clone(),
            reason,
        };
        let exe = std::env::current_exe().map_err(|e| failed(e.to_string()))?;
        let mut child = Command::new(exe)
            .env(WORKER_VAR, &name)
            .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())))
            .env("OA_FLEET_PORT", self.ports[i].to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| failed(e.to_string()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| failed("no stdout".into()))?;
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .map_err(|_| failed("not ready within 30 s".into()))?
            .map_err(|e| failed(e.to_string()))?;
        if line.as_deref() != Some("ready") {
            return Err(failed(format!("exited before serving ({line:?})")));
        }
        // Keep draining its stdout so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(child)
    }

    /// SIGKILLs worker `i` and waits until it is gone.
    pub async fn kill(&mut self, i: usize) -> Result<(), FleetError> {
        if let Some(mut child) = self.workers.get_mut(i).and_then(Option::take) {
            let failed = |e: std::io::Error| FleetError::Worker {
                name: format!("w{i}"),
                reason: e.to_string(),
            };
            child.start_kill().map_err(failed)?;
            child.wait().await.map_err(failed)?;
        }
        Ok(())
    }

    /// Starts worker `i` again on its port.
    pub async fn restart(&mut self, i: usize) -> Result<(), FleetError> {
        let child = self.spawn(i).await?;
        self.workers[i] = Some(child);
        Ok(())
    }

    /// Stops every process.
    pub fn stop(&mut self) {
        for child in self.workers.iter_mut().flatten() {
            let _ = child.start_kill();
        }
        if let Some(haproxy) = self.haproxy.as_mut() {
            let _ = haproxy.start_kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A worker process: serves the pipeline on `OA_FLEET_PORT` until killed.
pub fn worker_main() -> Result<(), FleetError> {
    let get = |k: &str| {
        std::env::var(k).map_err(|_| FleetError::Usage(format!("worker started without {k}")))
    };
    let args = WorkerArgs {
        ingress: get("OA_FLEET_INGRESS")?,
        concurrency: get("OA_FLEET_CONCURRENCY")?.parse().unwrap_or(12),
        chunk: get("OA_FLEET_CHUNK")?.parse().unwrap_or(NonZeroUsize::MIN),
    };
    let port: u16 = get("OA_FLEET_PORT")?
        .parse()
        .map_err(|_| FleetError::Usage("OA_FLEET_PORT is not a port".into()))?;
    let (pg_url, schema, llm_url) = (
        get("OA_FLEET_PG_URL")?,
        get("OA_FLEET_PG_SCHEMA")?,
        get("OA_FLEET_LLM_URL")?,
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| FleetError::Run(format!("no runtime: {e}")))?;
    rt.block_on(async move {
        let backend = openarmature_postgres::PgBackend::connect(
            openarmature_postgres::PgConfig::new(pg_url).schema(schema),
        )
        .await
        .map_err(|e| FleetError::Run(format!("PostgreSQL: {e}")))?;
        let worker = crate::durable(&llm_url, &args, Arc::new(backend.checkpointer()))?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| FleetError::Run(format!("127.0.0.1:{port}: {e}")))?;
        println!("ready");
        worker.serve(listener).await;
        Ok(())
    })
}
