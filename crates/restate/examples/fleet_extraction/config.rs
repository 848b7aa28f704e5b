//! The example's options, where its servers are, and its typed errors.

use std::fmt;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

/// How to start every server the example needs.
const HOW_TO_START: &str =
    "start them with `source .ci/services.sh && oa_services_start` (from the repository root)";

/// Why the example stopped.
#[derive(Debug)]
pub enum FleetError {
    /// A server the fleet needs is not configured.
    NotConfigured {
        /// What is missing.
        server: &'static str,
        /// The variables that name it.
        variables: &'static str,
    },
    /// A configured server does not answer.
    Unreachable {
        /// Which server.
        server: &'static str,
        /// Where it was looked for.
        at: String,
        /// What failed.
        reason: String,
    },
    /// A worker process did not start or could not be stopped.
    Worker {
        /// The worker's name (`w0`, ...).
        name: String,
        /// What failed.
        reason: String,
    },
    /// A bad command-line argument.
    Usage(String),
    /// The run itself failed.
    Run(String),
}

impl FleetError {
    /// The error's category (what `main` prints in brackets).
    pub fn category(&self) -> &'static str {
        match self {
            FleetError::NotConfigured { .. } => "fleet_server_not_configured",
            FleetError::Unreachable { .. } => "fleet_server_unreachable",
            FleetError::Worker { .. } => "fleet_worker_failed",
            FleetError::Usage(_) => "fleet_usage",
            FleetError::Run(_) => "fleet_run_failed",
        }
    }
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetError::NotConfigured { server, variables } => write!(
                f,
                "{server} is not configured (set {variables}); {HOW_TO_START}"
            ),
            FleetError::Unreachable { server, at, reason } => {
                write!(f, "{server} at {at} does not answer ({reason}); {HOW_TO_START}")
            }
            FleetError::Worker { name, reason } => write!(f, "worker {name}: {reason}"),
            FleetError::Usage(message) => write!(
                f,
                "{message}\nusage: fleet_extraction [--workers N] [--items N] [--concurrency N] [--chunk K] [--latency-ms MS] [--kill]"
            ),
            FleetError::Run(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for FleetError {}

/// The command line.
#[derive(Debug, Clone)]
pub struct Args {
    /// Worker processes.
    pub workers: usize,
    /// Chunks in the document (fan-out instances).
    pub items: usize,
    /// The fan-out's concurrency bound.
    pub concurrency: usize,
    /// Consecutive instances per Restate job.
    pub chunk: NonZeroUsize,
    /// How late the embedded LLM answers.
    pub latency: Duration,
    /// SIGKILL one worker halfway.
    pub kill: bool,
}

impl Args {
    /// Parses the arguments after the program name.
    pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, FleetError> {
        let mut parsed = Args {
            workers: 3,
            items: 48,
            concurrency: 12,
            chunk: NonZeroUsize::MIN,
            latency: Duration::from_millis(100),
            kill: false,
        };
        while let Some(flag) = args.next() {
            let mut number = |name: &str| -> Result<usize, FleetError> {
                let value = args
                    .next()
                    .ok_or_else(|| FleetError::Usage(format!("{name} needs a value")))?;
                value
                    .parse::<usize>()
                    .map_err(|_| FleetError::Usage(format!("{name} {value}: not a number")))
            };
            match flag.as_str() {
                "--workers" => parsed.workers = number("--workers")?,
                "--items" => parsed.items = number("--items")?,
                "--concurrency" => parsed.concurrency = number("--concurrency")?,
                "--chunk" => {
                    parsed.chunk = NonZeroUsize::new(number("--chunk")?)
                        .ok_or_else(|| FleetError::Usage("--chunk must be at least 1".into()))?;
                }
                "--latency-ms" => {
                    parsed.latency = Duration::from_millis(number("--latency-ms")? as u64);
                }
                "--kill" => parsed.kill = true,
                other => return Err(FleetError::Usage(format!("unknown argument {other}"))),
            }
        }
        if parsed.workers == 0 || parsed.items == 0 || parsed.concurrency == 0 {
            return Err(FleetError::Usage(
                "--workers, --items and --concurrency must be at least 1".into(),
            ));
        }
        if parsed.kill && parsed.workers < 2 {
            return Err(FleetError::Usage(
                "--kill needs at least 2 workers (one keeps running)".into(),
            ));
        }
        Ok(parsed)
    }
}

/// What a worker process is started with (environment variables, read back by
/// [`WorkerArgs::from_env`]).
#[derive(Debug, Clone)]
pub struct WorkerArgs {
    /// The Restate ingress (the dispatcher sends instances there).
    pub ingress: String,
    /// The fan-out's concurrency bound.
    pub concurrency: usize,
    /// Consecutive instances per Restate job.
    pub chunk: NonZeroUsize,
}

/// The servers the fleet runs on.
#[derive(Debug, Clone)]
pub struct Servers {
    /// The Restate admin API.
    pub admin: String,
    /// The Restate ingress.
    pub ingress: String,
    /// PostgreSQL.
    pub postgres: String,
    /// This run's schema (created by the first connection).
    pub schema: String,
    /// The haproxy executable.
    pub haproxy: PathBuf,
}

/// The first of `names` that is set and not empty.
fn var(names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty()))
}

/// The haproxy executable: `HAPROXY` / `OPENARMATURE_TEST_HAPROXY`, else on the PATH or
/// in `/usr/sbin`.
fn haproxy() -> Option<PathBuf> {
    if let Some(path) = var(&["HAPROXY", "OPENARMATURE_TEST_HAPROXY"]) {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join("haproxy"))
        .find(|candidate| candidate.is_file())
}

/// GETs `url`; an error unless it answers 2xx.
async fn health(server: &'static str, url: String) -> Result<(), FleetError> {
    let unreachable = |reason: String| FleetError::Unreachable {
        server,
        at: url.clone(),
        reason,
    };
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .no_proxy()
        .build()
        .map_err(|e| unreachable(e.to_string()))?;
    let response = http
        .get(&url)
        .send()
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(unreachable(format!("HTTP {}", response.status().as_u16())))
    }
}

impl Servers {
    /// Finds every server and checks that it answers.
    pub async fn from_env() -> Result<Servers, FleetError> {
        let admin = var(&["RESTATE_ADMIN_URL", "OPENARMATURE_TEST_RESTATE_ADMIN_URL"]).ok_or(
            FleetError::NotConfigured {
                server: "the Restate server (admin API)",
                variables: "RESTATE_ADMIN_URL or OPENARMATURE_TEST_RESTATE_ADMIN_URL",
            },
        )?;
        let ingress = var(&[
            "RESTATE_INGRESS_URL",
            "OPENARMATURE_TEST_RESTATE_INGRESS_URL",
        ])
        .ok_or(FleetError::NotConfigured {
            server: "the Restate server (ingress)",
            variables: "RESTATE_INGRESS_URL or OPENARMATURE_TEST_RESTATE_INGRESS_URL",
        })?;
        let postgres = var(&["DATABASE_URL", "OPENARMATURE_TEST_POSTGRES_URL"]).ok_or(
            FleetError::NotConfigured {
                server: "PostgreSQL",
                variables: "DATABASE_URL or OPENARMATURE_TEST_POSTGRES_URL",
            },
        )?;
        let haproxy = haproxy().ok_or(FleetError::NotConfigured {
            server: "haproxy (the load balancer in front of the workers)",
            variables: "HAPROXY, or install it: apt-get install haproxy",
        })?;
        let (admin, ingress) = (
            admin.trim_end_matches('/').to_owned(),
            ingress.trim_end_matches('/').to_owned(),
        );
        health("the Restate admin API", format!("{admin}/health")).await?;
        health("the Restate ingress", format!("{ingress}/restate/health")).await?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() % 1_000_000_000_000);
        let schema = format!("oa_fleet_{}_{nanos}", std::process::id());
        // Connecting creates and migrates the schema the workers share.
        openarmature_postgres::PgBackend::connect(
            openarmature_postgres::PgConfig::new(&postgres).schema(&schema),
        )
        .await
        .map_err(|e| FleetError::Unreachable {
            server: "PostgreSQL",
            at: "DATABASE_URL / OPENARMATURE_TEST_POSTGRES_URL".to_owned(),
            reason: e.to_string(),
        })?;
        Ok(Servers {
            admin,
            ingress,
            postgres,
            schema,
            haproxy,
        })
    }
}
