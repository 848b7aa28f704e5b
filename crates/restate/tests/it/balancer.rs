//! haproxy in front of local workers: one HTTP/2 cleartext frontend (what the Restate
//! server pushes invocations to), every worker an HTTP/2 server with a fast health
//! check, a lost worker's requests redispatched. Shared by the fleet tests
//! (`cluster.rs`) and the `fleet_extraction` example.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

/// haproxy's configuration: the frontend on 127.0.0.1:`port`, the workers on
/// 127.0.0.1:`workers[i]` (named `w{i}`).
pub fn config(port: u16, workers: &[u16]) -> String {
    let mut config = format!(
        "global\n    maxconn 2000\n\
         defaults\n    mode http\n    timeout connect 1s\n    timeout client 10m\n    timeout server 10m\n    retries 3\n    option redispatch 1\n\
         frontend restate_in\n    bind 127.0.0.1:{port} proto h2\n    default_backend workers\n\
         backend workers\n    balance roundrobin\n"
    );
    for (i, p) in workers.iter().enumerate() {
        config.push_str(&format!(
            "    server w{i} 127.0.0.1:{p} proto h2 check inter 200ms fall 1 rise 1\n"
        ));
    }
    config
}

/// Writes the configuration into `dir`, starts `haproxy` on it (killed when the child
/// is dropped) and waits until the frontend listens and one health-check round passed.
///
/// # Errors
/// haproxy could not be started, or did not listen within 10 s.
pub async fn start(
    haproxy: &Path,
    dir: &Path,
    port: u16,
    workers: &[u16],
) -> std::io::Result<Child> {
    let cfg = dir.join("haproxy.cfg");
    std::fs::write(&cfg, config(port, workers))?;
    let child = Command::new(haproxy)
        .arg("-db")
        .arg("-f")
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if Instant::now() > deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "haproxy did not listen within 10 s",
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // One health-check round, so every worker is up in haproxy's view.
    tokio::time::sleep(Duration::from_millis(300)).await;
    Ok(child)
}
