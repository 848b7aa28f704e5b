//! The real-server test switches. A test that needs PostgreSQL, Redis or Restate asks for its
//! URL here: set, it runs against it; unset, it prints why it is skipped and passes —
//! unless `OPENARMATURE_REQUIRE_SERVICES=1` (CI), where a missing server fails it.
//! `.ci/services.sh` starts both servers and sets the variables.

/// A server the real-server tests need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// PostgreSQL (`OPENARMATURE_TEST_POSTGRES_URL`).
    Postgres,
    /// Redis (`OPENARMATURE_TEST_REDIS_URL`).
    Redis,
    /// The Restate server's admin API (`OPENARMATURE_TEST_RESTATE_ADMIN_URL`).
    RestateAdmin,
    /// The Restate server's ingress (`OPENARMATURE_TEST_RESTATE_INGRESS_URL`).
    RestateIngress,
    /// The haproxy executable the Restate fleet tests balance through
    /// (`OPENARMATURE_TEST_HAPROXY`, a path).
    Haproxy,
}

impl Service {
    /// The environment variable holding the server's URL.
    pub fn variable(self) -> &'static str {
        match self {
            Service::Postgres => "OPENARMATURE_TEST_POSTGRES_URL",
            Service::Redis => "OPENARMATURE_TEST_REDIS_URL",
            Service::RestateAdmin => "OPENARMATURE_TEST_RESTATE_ADMIN_URL",
            Service::RestateIngress => "OPENARMATURE_TEST_RESTATE_INGRESS_URL",
            Service::Haproxy => "OPENARMATURE_TEST_HAPROXY",
        }
    }
}

/// The variable that turns a skip into a failure.
pub const REQUIRE_SERVICES: &str = "OPENARMATURE_REQUIRE_SERVICES";

/// Whether missing servers fail tests (`OPENARMATURE_REQUIRE_SERVICES=1`).
pub fn required() -> bool {
    std::env::var(REQUIRE_SERVICES).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// The URL of `service`, or `None` after printing the skip notice for `test`.
///
/// # Panics
/// When the variable is unset and [`required`] is true.
pub fn url(service: Service, test: &str) -> Option<String> {
    match std::env::var(service.variable()) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if required() => panic!(
            "{test}: {} is not set but {REQUIRE_SERVICES}=1: start the servers (source .ci/services.sh && oa_services_start)",
            service.variable()
        ),
        _ => {
            // Straight to the stream, past libtest's capture, so `cargo test` shows it.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "skipped {test}: set {} (see .ci/services.sh)",
                service.variable()
            );
            None
        }
    }
}

/// A name unique to this process and call, usable as a PostgreSQL schema, a file
/// name or a Redis key prefix: `[a-z0-9_]`, starting with `tag`.
pub fn unique_name(tag: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() % 1_000_000_000_000);
    format!(
        "{tag}_{}_{nanos}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
