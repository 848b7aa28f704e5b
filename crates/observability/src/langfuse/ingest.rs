//! Spec: observability §8.9 *Client ownership* mode (b) — a client built from
//! credentials that sends traces to the Langfuse public ingestion API
//! (`POST {host}/api/public/ingestion`, HTTP basic auth with the public / secret key).

use std::sync::{Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::body::ingestion_events;
use super::client::{LangfuseClient, LangfuseError};
use super::model::LangfuseTrace;

/// Langfuse credentials: the host and the project's key pair.
#[derive(Clone, PartialEq, Eq)]
pub struct LangfuseCredentials {
    /// Base URL, e.g. `https://cloud.langfuse.com`.
    pub host: String,
    /// The project's public key (the basic-auth user).
    pub public_key: String,
    /// The project's secret key (the basic-auth password).
    pub secret_key: String,
}

impl std::fmt::Debug for LangfuseCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LangfuseCredentials")
            .field("host", &self.host)
            .field("public_key", &self.public_key)
            .finish_non_exhaustive()
    }
}

impl LangfuseCredentials {
    /// Credentials from their parts.
    pub fn new(
        host: impl Into<String>,
        public_key: impl Into<String>,
        secret_key: impl Into<String>,
    ) -> Self {
        LangfuseCredentials {
            host: host.into(),
            public_key: public_key.into(),
            secret_key: secret_key.into(),
        }
    }

    /// Credentials from `LANGFUSE_PUBLIC_KEY`, `LANGFUSE_SECRET_KEY` and
    /// `LANGFUSE_HOST` (default `https://cloud.langfuse.com`); `None` without keys.
    pub fn from_env() -> Option<Self> {
        let public_key = std::env::var("LANGFUSE_PUBLIC_KEY").ok()?;
        let secret_key = std::env::var("LANGFUSE_SECRET_KEY").ok()?;
        let host = std::env::var("LANGFUSE_HOST")
            .unwrap_or_else(|_| "https://cloud.langfuse.com".to_owned());
        Some(LangfuseCredentials::new(host, public_key, secret_key))
    }
}

/// Sends recorded traces to the Langfuse ingestion API in one batch per
/// [`LangfuseClient::flush`] (reqwest over rustls). A batch that fails to send is
/// kept and retried on the next flush.
pub struct IngestionClient {
    http: reqwest::Client,
    endpoint: reqwest::Url,
    credentials: LangfuseCredentials,
    pending: Mutex<Vec<Value>>,
}

impl std::fmt::Debug for IngestionClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IngestionClient")
            .field("endpoint", &self.endpoint.as_str())
            .finish_non_exhaustive()
    }
}

impl IngestionClient {
    /// A client for `credentials`.
    ///
    /// # Errors
    /// [`LangfuseError::InvalidHost`] when the host is not an http(s) URL, and
    /// [`LangfuseError::Transport`] when the HTTP client cannot be built.
    pub fn new(credentials: LangfuseCredentials) -> Result<Self, LangfuseError> {
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| LangfuseError::Transport(e.to_string()))?;
        IngestionClient::with_http_client(credentials, http)
    }

    /// A client for `credentials` sending through the caller's `reqwest::Client`
    /// (its proxy, TLS roots, timeouts and default headers; the basic-auth header is
    /// set per request).
    ///
    /// # Errors
    /// [`LangfuseError::InvalidHost`] when the host is not an http(s) URL.
    pub fn with_http_client(
        credentials: LangfuseCredentials,
        http: reqwest::Client,
    ) -> Result<Self, LangfuseError> {
        let invalid = || LangfuseError::InvalidHost(credentials.host.clone());
        let base = reqwest::Url::parse(&credentials.host).map_err(|_| invalid())?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(invalid());
        }
        let endpoint = base.join("/api/public/ingestion").map_err(|_| invalid())?;
        Ok(IngestionClient {
            http,
            endpoint,
            credentials,
            pending: Mutex::new(Vec::new()),
        })
    }

    /// How many ingestion events wait for the next flush.
    pub fn pending_events(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Value>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn send(&self) -> Result<(), LangfuseError> {
        let batch = std::mem::take(&mut *self.lock());
        if batch.is_empty() {
            return Ok(());
        }
        let result = self.post(&batch).await;
        if result.is_err() {
            let mut pending = self.lock();
            let later = std::mem::replace(&mut *pending, batch);
            pending.extend(later);
        }
        result
    }

    async fn post(&self, batch: &[Value]) -> Result<(), LangfuseError> {
        let response = self
            .http
            .post(self.endpoint.clone())
            .basic_auth(
                &self.credentials.public_key,
                Some(&self.credentials.secret_key),
            )
            .json(&json!({ "batch": batch }))
            .send()
            .await
            .map_err(|e| LangfuseError::Transport(e.to_string()))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let body = response.text().await.unwrap_or_default();
        Err(LangfuseError::Status {
            status: status.as_u16(),
            body,
        })
    }
}

impl LangfuseClient for IngestionClient {
    fn record(&self, trace: &LangfuseTrace) {
        let events = ingestion_events(trace);
        self.lock().extend(events);
    }

    fn flush(&self) -> BoxFuture<'_, Result<(), LangfuseError>> {
        Box::pin(self.send())
    }
}
