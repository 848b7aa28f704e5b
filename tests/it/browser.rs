//! A headless browser for the browser tests: Debian's chromium driven through
//! chromedriver (WebDriver) with fantoccini.
//!
//! Needs `chromedriver` and `chromium` on PATH (`apt-get install chromium
//! chromium-driver`; `.ci/services.sh` installs them). Without them a test says so
//! and passes, unless OPENARMATURE_REQUIRE_SERVICES=1 (CI), where it fails.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder};

/// A WebDriver session; chromedriver (and the browser it started) is killed and the
/// profile removed when it drops.
pub struct Browser {
    /// The session.
    pub client: Client,
    driver: Child,
    profile: PathBuf,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

impl Browser {
    /// Ends the session (then drop kills chromedriver).
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

fn found(binary: &str) -> bool {
    Command::new(binary)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The absolute path of `binary` (chromedriver wants one).
fn which(binary: &str) -> String {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join(binary))
                .find(|p| p.is_file())
        })
        .map_or_else(|| binary.to_owned(), |p| p.display().to_string())
}

/// A headless chromium session, or `None` (after printing how to run `test`) when
/// chromium or chromedriver is missing; panics instead under
/// OPENARMATURE_REQUIRE_SERVICES=1.
pub async fn start(test: &str) -> Option<Browser> {
    let browser = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| found(b));
    let (true, Some(browser)) = (found("chromedriver"), browser) else {
        let required = std::env::var("OPENARMATURE_REQUIRE_SERVICES").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "chromedriver / chromium missing and OPENARMATURE_REQUIRE_SERVICES=1"
        );
        eprintln!(
            "skipped: {test} needs chromium and chromedriver (apt-get install chromium \
             chromium-driver), then: cargo test --test it {test}"
        );
        return None;
    };
    let port = free_port();
    let driver = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let profile = std::env::temp_dir().join(format!("oa-chrome-{port}"));
    let caps = serde_json::json!({
        "goog:chromeOptions": {
            "binary": which(browser),
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                "--window-size=1400,1000",
                format!("--user-data-dir={}", profile.display())],
        }
    });
    let caps: serde_json::Map<String, serde_json::Value> = caps.as_object().unwrap().clone();
    let webdriver = format!("http://127.0.0.1:{port}");
    let mut browser = None;
    let mut driver = Some(driver);
    for _ in 0..100 {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(caps.clone())
            .connect(&webdriver)
            .await
        {
            Ok(client) => {
                browser = Some(Browser {
                    client,
                    driver: driver.take().expect("one driver"),
                    profile: profile.clone(),
                });
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    if let Some(mut driver) = driver {
        let _ = driver.kill();
        let _ = driver.wait();
    }
    Some(browser.expect("a WebDriver session"))
}
