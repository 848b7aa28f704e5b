//! The workspace's scripted mock server (`openarmature_testkit`) on 127.0.0.1:
//! answers each request with the next scripted `(status, JSON body)` and records
//! every request's path, JSON body and `Authorization` header.

use openarmature_retrieval::ProviderBuilder;
use openarmature_testkit::{MockServer, Reply};
use serde_json::Value;

/// A running mock.
pub struct Mock {
    pub origin: String,
    server: MockServer,
}

impl Mock {
    /// Starts serving `replies` in order.
    pub async fn start(replies: Vec<(u16, Value)>) -> Mock {
        let replies = replies.into_iter().map(|(s, v)| Reply::json(s, v));
        let server = MockServer::scripted(replies).await.unwrap();
        Mock {
            origin: server.origin(),
            server,
        }
    }

    /// `builder` pointed at this mock with the API key `key`.
    pub fn keyed<P>(&self, builder: ProviderBuilder<P>, key: &str) -> ProviderBuilder<P> {
        builder.api_key(key).base_url(&self.origin)
    }

    /// Every request so far: `(path, JSON body)`.
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.server
            .requests()
            .into_iter()
            .map(|r| (r.path.clone(), r.json().unwrap_or(Value::Null)))
            .collect()
    }

    /// Every request's `Authorization` header so far, in arrival order.
    #[allow(dead_code)]
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.server
            .requests()
            .iter()
            .map(|r| r.header("authorization").map(str::to_owned))
            .collect()
    }
}
