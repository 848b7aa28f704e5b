//! The `resilient_extraction` example's run report in a real headless browser (see
//! [`crate::browser`]): the example's pipeline runs `--short` against its embedded
//! fault-injecting server with a `RunReport` attached, the report is written as an
//! HTML file, chromium opens it, and the rows read back from the page match the
//! run's events, counted here by a second observer.
//!
//! Set `OA_REPORT_SCREENSHOT=/path/shot.png` to also save a screenshot of the page.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fantoccini::Locator;
use openarmature::graph::{observer_fn, InvokeOptions, ObserverEvent, Phase, Registration};
use openarmature::llm::{OpenAiProvider, Transport};
use openarmature::observability::report::RunReport;

use crate::extraction::{pipeline, server};

/// What the run's events say, counted independently of the report.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counted {
    node_attempts: usize,
    llm_attempts: usize,
    /// Wire attempts with a retry reason, per reason.
    retried: BTreeMap<String, usize>,
    /// Node paths (`extract_all[4]/extract`) a failure-isolation event named.
    degraded: Vec<String>,
}

fn path(namespace: &[String], chain: &[Option<usize>]) -> String {
    namespace
        .iter()
        .enumerate()
        .map(|(i, n)| match chain.get(i).copied().flatten() {
            Some(k) => format!("{n}[{k}]"),
            None => n.clone(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn counter() -> (Arc<Mutex<Counted>>, Registration) {
    let counted: Arc<Mutex<Counted>> = Arc::default();
    let sink = Arc::clone(&counted);
    let observer = observer_fn(move |event: Arc<ObserverEvent>| {
        let sink = Arc::clone(&sink);
        async move {
            let mut c = sink.lock().unwrap();
            match &*event {
                ObserverEvent::Node(e) if e.phase == Phase::Started => c.node_attempts += 1,
                ObserverEvent::LlmAttempt(e) => {
                    c.llm_attempts += 1;
                    if let Some(reason) = e.retry_reason {
                        *c.retried.entry(reason.as_str().to_owned()).or_default() += 1;
                    }
                }
                ObserverEvent::FailureIsolation(e) => c
                    .degraded
                    .push(path(&e.lineage.namespace, &e.lineage.fan_out_index_chain)),
                _ => {}
            }
            Ok(())
        }
    });
    (counted, Registration::new("count", observer))
}

/// One row of the page, as the browser reads it.
#[derive(Debug)]
struct PageRow {
    kind: String,
    node: String,
    reason: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_report_reads_back_in_the_browser() {
    let Some(browser) = crate::browser::start("report_browser").await else {
        return;
    };

    // The example's pipeline, --short, against its embedded server.
    let embedded = server::start().await.unwrap();
    let provider = OpenAiProvider::builder(embedded.base_url.as_str(), server::MODEL)
        .transport(
            Transport::default()
                .no_proxy()
                .timeout(Duration::from_secs(10)),
        )
        .build()
        .unwrap();
    let graph = pipeline::build(
        Arc::new(provider),
        pipeline::Tuning::new(true),
        Arc::default(),
    )
    .unwrap();
    let report = RunReport::new();
    let (counted, count) = counter();
    let options = InvokeOptions::default()
        .observer(report.registration())
        .observer(count);
    let input = pipeline::Doc {
        text: pipeline::document(true),
        ..pipeline::Doc::default()
    };
    graph.invoke_with(input, options).await.unwrap();
    graph.drain(Some(Duration::from_secs(5))).await;
    let file = std::env::temp_dir().join(format!("oa-run-report-{}.html", std::process::id()));
    report
        .write_html(&file, "resilient_extraction --short")
        .unwrap();

    let c = browser.client.clone();
    c.goto(&format!("file://{}", file.display())).await.unwrap();
    let mut rows = Vec::new();
    for element in c
        .find_all(Locator::Css("#rows > [data-kind]"))
        .await
        .unwrap()
    {
        let attr = |name: &'static str| {
            let element = element.clone();
            async move { element.attr(name).await.unwrap().unwrap_or_default() }
        };
        rows.push(PageRow {
            kind: attr("data-kind").await,
            node: attr("data-node").await,
            reason: attr("data-reason").await,
        });
    }
    let counted = std::mem::take(&mut *counted.lock().unwrap());
    let of = |kind: &str| rows.iter().filter(|r| r.kind == kind).count();
    assert_eq!(of("node"), counted.node_attempts, "{counted:?}");
    assert_eq!(of("llm"), counted.llm_attempts, "{counted:?}");
    let mut retried: BTreeMap<String, usize> = BTreeMap::new();
    for r in rows
        .iter()
        .filter(|r| r.kind == "llm" && !r.reason.is_empty())
    {
        *retried.entry(r.reason.clone()).or_default() += 1;
    }
    assert_eq!(retried, counted.retried);
    let degraded: Vec<&str> = rows
        .iter()
        .filter(|r| r.kind == "degraded")
        .map(|r| r.node.as_str())
        .collect();
    assert_eq!(degraded, counted.degraded);
    // The embedded server's faults, as the page shows them: chunk 4 degrades,
    // chunk 3 is re-asked, chunk 2's 429 is waited out under its Retry-After, and
    // every retried wire attempt follows a wait.
    assert_eq!(degraded, ["extract_all[4]/extract"]);
    assert!(retried.get("reask").is_some_and(|n| *n >= 1), "{retried:?}");
    assert!(rows.iter().any(|r| r.kind == "wait"
        && r.reason == "retry-after"
        && r.node == "extract_all[2]/extract"));
    let llm_waits = rows
        .iter()
        .filter(|r| r.kind == "wait" && r.reason != "node-retry")
        .count();
    assert_eq!(llm_waits, retried.values().sum::<usize>());

    // The totals and the bars are on the page, drawn.
    let summary = c.find(Locator::Id("summary")).await.unwrap();
    assert_eq!(
        summary.attr("data-degraded").await.unwrap().as_deref(),
        Some("1")
    );
    let bar = c
        .find(Locator::Css(
            "#rows > [data-kind=\"node\"][data-node=\"extract_all\"] .bar",
        ))
        .await
        .unwrap();
    let (_, _, width, height) = bar.rectangle().await.unwrap();
    assert!(
        width > 100.0 && height > 5.0,
        "the fan-out's bar spans most of the run: {width}x{height}"
    );
    assert!(c
        .find(Locator::Css("body"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .contains("Where the tokens went"));

    if let Some(shot) = std::env::var_os("OA_REPORT_SCREENSHOT") {
        c.set_window_size(1400, 1700).await.unwrap();
        std::fs::write(shot, c.screenshot().await.unwrap()).unwrap();
    }
    browser.close().await;
    let _ = std::fs::remove_file(file);
}
