//! The `chat_server` example end to end in a real headless browser: Debian's
//! chromium driven through chromedriver (WebDriver) with fantoccini. The page sends a
//! message, shows the agent's tool call, a person clicks Approve, and the final reply
//! appears — the suspended turn resumed through the REST callback route.
//!
//! Needs `chromedriver` and `chromium` on PATH (`apt-get install chromium
//! chromium-driver`; `.ci/services.sh` installs them). Without them the test says so
//! and passes, unless OPENARMATURE_REQUIRE_SERVICES=1 (CI), where it fails.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{ClientBuilder, Locator};
use openarmature_harness_http::{serve, Shutdown};

#[path = "../../examples/chat_server/app.rs"]
#[allow(dead_code)]
mod chat_app;

/// Kills chromedriver (and the browser it started) when the test ends.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_approves_a_tool_call_in_the_browser() {
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
            "skipped: chat_browser needs chromium and chromedriver (apt-get install chromium \
             chromium-driver), then: cargo test --test it chat_browser"
        );
        return;
    };

    // The example's server, in this process, on a free port.
    let outbox = chat_app::tools::Outbox::default();
    let shutdown = Shutdown::new();
    let provider = chat_app::embedded_provider().await.expect("embedded model");
    let router = chat_app::router(provider, outbox.clone(), shutdown.clone()).expect("router");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(serve(listener, router, shutdown.clone()));

    let port = free_port();
    let _driver = Driver(
        Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts"),
    );
    let profile = std::env::temp_dir().join(format!("oa-chrome-{port}"));
    let caps = serde_json::json!({
        "goog:chromeOptions": {
            "binary": which(browser),
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                format!("--user-data-dir={}", profile.display())],
        }
    });
    let caps: serde_json::Map<String, serde_json::Value> = caps.as_object().unwrap().clone();
    let webdriver = format!("http://127.0.0.1:{port}");
    let mut client = None;
    for _ in 0..100 {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(caps.clone())
            .connect(&webdriver)
            .await
        {
            Ok(c) => {
                client = Some(c);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let c = client.expect("a WebDriver session");
    let wait = Duration::from_secs(20);

    c.goto(&base).await.unwrap();
    let input = c
        .wait()
        .at_most(wait)
        .for_element(Locator::Id("input"))
        .await
        .unwrap();
    input
        .send_keys("Please email bob@example.com about lunch")
        .await
        .unwrap();
    c.find(Locator::Id("send"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();

    let call = c
        .wait()
        .at_most(wait)
        .for_element(Locator::XPath(
            "//div[contains(@class,'tool-call') and contains(., 'send_email')]",
        ))
        .await
        .unwrap();
    assert!(call.text().await.unwrap().contains("bob@example.com"));
    assert!(outbox.lock().unwrap().is_empty(), "sent before approval");
    let approve = c
        .wait()
        .at_most(wait)
        .for_element(Locator::Id("approve"))
        .await
        .unwrap();
    approve.click().await.unwrap();
    let reply = c
        .wait()
        .at_most(wait)
        .for_element(Locator::XPath(
            "//div[contains(@class,'assistant') and contains(., 'is sent')]",
        ))
        .await
        .unwrap();
    assert!(reply.text().await.unwrap().contains("bob@example.com"));
    assert_eq!(outbox.lock().unwrap().len(), 1, "sent exactly once");
    // The tool result is on the page too.
    c.find(Locator::Css("div.tool")).await.unwrap();

    c.close().await.unwrap();
    shutdown.trigger();
    server.await.unwrap().unwrap();
    let _ = std::fs::remove_dir_all(profile);
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
