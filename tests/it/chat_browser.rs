//! The `chat_server` example end to end in a real headless browser (see
//! [`crate::browser`]). The page sends a
//! message, shows the agent's tool call, a person clicks Approve, and the final reply
//! appears — the suspended turn resumed through the REST callback route.

use std::time::Duration;

use fantoccini::Locator;
use openarmature_harness_http::{serve, Shutdown};

#[path = "../../examples/chat_server/app.rs"]
#[allow(dead_code)]
mod chat_app;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_approves_a_tool_call_in_the_browser() {
    let Some(browser) = crate::browser::start("chat_browser").await else {
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

    let c = browser.client.clone();
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

    browser.close().await;
    shutdown.trigger();
    server.await.unwrap().unwrap();
}
