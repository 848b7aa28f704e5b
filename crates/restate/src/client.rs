//! Talking to Restate from outside a worker: submit an invocation, attach to its
//! result, deliver a signal (by the workflow key, or by signal id through a
//! [`SignalCoordinator`]), and register a worker deployment with the admin API.

use std::time::Duration;

use openarmature_graph::{CompiledGraph, State};
use openarmature_harness::{PausedStoreCoordinator, SignalCoordinator};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::error::RestateError;
use crate::step::Step;
use crate::workflow::{Awaiting, SERVICE_NAME};

/// What [`RestateClient::submit`] learned.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Submitted {
    /// Restate's id of the workflow's `run` invocation.
    pub restate_id: String,
    /// The key was already submitted (the re-send was deduplicated: the running or
    /// finished invocation is the one the caller gets).
    pub previously_accepted: bool,
}

/// A client of one Restate ingress (and optionally its admin API).
#[derive(Debug, Clone)]
pub struct RestateClient {
    ingress: String,
    http: reqwest::Client,
}

impl RestateClient {
    /// A client of the ingress at `ingress_url` (e.g. `http://127.0.0.1:8080`).
    pub fn new(ingress_url: impl Into<String>) -> RestateClient {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .unwrap_or_default();
        RestateClient::with_client(ingress_url, http)
    }

    /// Like [`RestateClient::new`], with the caller's HTTP client.
    pub fn with_client(ingress_url: impl Into<String>, http: reqwest::Client) -> RestateClient {
        RestateClient {
            ingress: ingress_url.into().trim_end_matches('/').to_owned(),
            http,
        }
    }

    /// Starts the durable invocation `invocation_id` with `payload` (the harness's
    /// transmission payload) and returns without waiting. Submitting the same id
    /// again does not start a second run.
    ///
    /// # Errors
    /// [`RestateError`]: the ingress is unreachable or refused the request.
    pub async fn submit(
        &self,
        invocation_id: &str,
        payload: &Value,
    ) -> Result<Submitted, RestateError> {
        let url = format!(
            "{}/{SERVICE_NAME}/{}/run/send",
            self.ingress,
            segment(invocation_id)
        );
        let answer = self
            .send("submit", Method::POST, url.clone(), Some(payload))
            .await?;
        let restate_id = answer
            .get("invocationId")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed("submit", &url, "no invocationId"))?
            .to_owned();
        let previously_accepted =
            answer.get("status").and_then(Value::as_str) == Some("PreviouslyAccepted");
        Ok(Submitted {
            restate_id,
            previously_accepted,
        })
    }

    /// Waits for the invocation's final step (a completion or an error; a suspended
    /// run is waited through until its signal arrives and it ends).
    ///
    /// # Errors
    /// [`RestateError`]: the ingress is unreachable, or the invocation is unknown.
    pub async fn attach(&self, invocation_id: &str) -> Result<Step, RestateError> {
        let url = format!(
            "{}/restate/workflow/{SERVICE_NAME}/{}/attach",
            self.ingress,
            segment(invocation_id)
        );
        let answer = self.send("attach", Method::GET, url.clone(), None).await?;
        serde_json::from_value(answer).map_err(|e| malformed("attach", &url, &e.to_string()))
    }

    /// The signal the invocation awaits, `None` when it awaits none (running, done,
    /// or never suspended).
    ///
    /// # Errors
    /// [`RestateError`]: the ingress is unreachable or refused the request.
    pub async fn status(&self, invocation_id: &str) -> Result<Option<Awaiting>, RestateError> {
        let url = format!(
            "{}/{SERVICE_NAME}/{}/status",
            self.ingress,
            segment(invocation_id)
        );
        let answer = self.send("status", Method::POST, url.clone(), None).await?;
        serde_json::from_value(answer).map_err(|e| malformed("status", &url, &e.to_string()))
    }

    /// Delivers `payload` (an object of state fields) to the suspended invocation
    /// `invocation_id`; Restate resumes it on whichever worker it picks.
    ///
    /// # Errors
    /// [`RestateError::Rejected`] (409) when it awaits no signal; otherwise the
    /// transport's failure.
    pub async fn signal(
        &self,
        invocation_id: &str,
        payload: &Value,
    ) -> Result<Awaiting, RestateError> {
        let url = format!(
            "{}/{SERVICE_NAME}/{}/signal",
            self.ingress,
            segment(invocation_id)
        );
        let answer = self
            .send("signal", Method::POST, url.clone(), Some(payload))
            .await?;
        serde_json::from_value(answer).map_err(|e| malformed("signal", &url, &e.to_string()))
    }

    /// Delivers `payload` to whichever invocation awaits `signal_id`, as `coordinator`
    /// resolves it ([`signal_coordinator`] resolves to the invocation id the workflow
    /// is keyed by).
    ///
    /// # Errors
    /// [`RestateError::NoPausedInvocation`] / [`RestateError::Resolve`]
    /// (`harness_signal_correlation_failed`), or [`RestateClient::signal`]'s errors.
    pub async fn signal_id(
        &self,
        coordinator: &dyn SignalCoordinator,
        signal_id: &str,
        payload: &Value,
    ) -> Result<Awaiting, RestateError> {
        let key = coordinator
            .resolve(signal_id)
            .await
            .map_err(|source| RestateError::Resolve {
                signal_id: signal_id.to_owned(),
                source,
            })?
            .ok_or_else(|| RestateError::NoPausedInvocation {
                signal_id: signal_id.to_owned(),
            })?;
        self.signal(&key, payload).await
    }

    /// One request to the ingress path `path` (e.g. `Service/handler`), with an
    /// idempotency key when given: Restate runs the handler once per key and answers a
    /// repeated call with the first one's result (attaching while it still runs).
    pub(crate) async fn call(
        &self,
        operation: &'static str,
        method: Method,
        path: &str,
        body: Option<&Value>,
        idempotency_key: Option<&str>,
    ) -> Result<Value, RestateError> {
        let url = format!("{}/{path}", self.ingress);
        send(&self.http, operation, method, url, body, idempotency_key).await
    }

    async fn send(
        &self,
        operation: &'static str,
        method: Method,
        url: String,
        body: Option<&Value>,
    ) -> Result<Value, RestateError> {
        send(&self.http, operation, method, url, body, None).await
    }
}

/// The signal coordinator of a Restate deployment: a suspended run's subscription is
/// its paused record (in the graph's Checkpointer, shared by every worker) plus the
/// durable promise its workflow waits on, so `subscribe` has nothing to add; `resolve`
/// maps a signal id to the *workflow key* of the invocation awaiting it (the paused
/// record's correlation id), which [`RestateClient::signal`] delivers to. For the
/// client side (what [`RestateClient::signal_id`] takes); a worker's harness keeps its
/// default coordinator.
pub fn signal_coordinator<S: State>(graph: CompiledGraph<S>) -> PausedStoreCoordinator<S> {
    PausedStoreCoordinator::by_correlation(graph)
}

/// Registers (or re-registers, `force`) the worker deployment at `worker_url` with
/// the Restate admin API at `admin_url` (e.g. `http://127.0.0.1:9070`); returns the
/// admin API's answer (the deployment id and its services).
///
/// # Errors
/// [`RestateError`]: the admin API is unreachable, or could not discover the worker.
pub async fn register_deployment(admin_url: &str, worker_url: &str) -> Result<Value, RestateError> {
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap_or_default();
    let url = format!("{}/deployments", admin_url.trim_end_matches('/'));
    let body = json!({"uri": worker_url, "force": true});
    send(&http, "register", Method::POST, url, Some(&body), None).await
}

async fn send(
    http: &reqwest::Client,
    operation: &'static str,
    method: Method,
    url: String,
    body: Option<&Value>,
    idempotency_key: Option<&str>,
) -> Result<Value, RestateError> {
    let unavailable = |message: String| RestateError::Unavailable {
        operation,
        url: url.clone(),
        message,
    };
    let mut request = http.request(method, &url);
    if let Some(body) = body {
        request = request.json(body);
    }
    if let Some(key) = idempotency_key {
        request = request.header("idempotency-key", key);
    }
    let response = request
        .send()
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    if status.is_server_error() {
        return Err(unavailable(format!("HTTP {}: {text}", status.as_u16())));
    }
    if !status.is_success() {
        return Err(RestateError::Rejected {
            operation,
            url,
            status: status.as_u16(),
            body: text,
        });
    }
    if text.trim().is_empty() || status == StatusCode::NO_CONTENT {
        return Ok(Value::Null);
    }
    serde_json::from_str(&text).map_err(|e| malformed(operation, &url, &e.to_string()))
}

fn malformed(operation: &'static str, url: &str, reason: &str) -> RestateError {
    RestateError::Malformed {
        operation,
        url: url.to_owned(),
        reason: reason.to_owned(),
    }
}

/// `id` as one URL path segment (percent-encoding what is not unreserved).
fn segment(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::segment;

    #[test]
    fn ids_become_one_path_segment() {
        assert_eq!(segment("run-1_a.b~"), "run-1_a.b~");
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
    }
}
