//! The Jina embedding and rerank mappings (§8.2) against a 127.0.0.1 mock: wire
//! bodies and the bearer header, `input_type` → `task`, document echo shapes,
//! managed truncation flags and error categories.

use openarmature_retrieval::{
    EmbeddingConfig, EmbeddingProvider, EmbeddingRequest, JinaEmbeddings, JinaRerank, RerankConfig,
    RerankProvider, RerankRequest, RetrievalCategory,
};
use serde_json::json;

use crate::mock::Mock;

fn embedder(mock: &Mock) -> JinaEmbeddings {
    let builder = mock.keyed(JinaEmbeddings::builder("jina-embed-test"), "test-jina-key");
    builder.build().unwrap()
}

fn reranker(mock: &Mock) -> JinaRerank {
    let builder = mock.keyed(JinaRerank::builder("jina-rerank-test"), "test-jina-key");
    builder.build().unwrap()
}

fn answer(results: serde_json::Value) -> serde_json::Value {
    json!({"model": "jina-rerank-test", "usage": {"total_tokens": 57}, "results": results})
}

#[tokio::test]
async fn rerank_wire_round_trip() {
    let body = answer(json!([
        {"index": 0, "relevance_score": 0.42},
        {"index": 1, "relevance_score": 0.91},
        {"index": 2, "relevance_score": 0.08},
    ]));
    let mock = Mock::start(vec![(200, body.clone())]).await;
    let request = RerankRequest::new("capital?", ["berlin", "paris", "madrid"]);
    let r = reranker(&mock).rerank(&request).await.unwrap();
    assert_eq!(
        r.results.iter().map(|d| d.index).collect::<Vec<_>>(),
        [1, 0, 2]
    );
    let usage = r.usage.unwrap();
    assert_eq!((usage.search_units, usage.input_tokens), (None, Some(57)));
    assert_eq!(
        (r.model.as_str(), r.response_id, r.raw),
        ("jina-rerank-test", None, body)
    );
    assert_eq!(
        mock.requests(),
        vec![(
            "/v1/rerank".to_owned(),
            json!({"model": "jina-rerank-test", "query": "capital?",
                   "documents": ["berlin", "paris", "madrid"],
                   "return_documents": false, "truncation": false})
        )]
    );
    assert_eq!(
        mock.authorizations(),
        [Some("Bearer test-jina-key".to_owned())]
    );
}

#[tokio::test]
async fn rerank_document_echoes_follow_the_shape_rule() {
    let mock = Mock::start(vec![
        (
            200,
            answer(json!([
                {"index": 0, "relevance_score": 0.42, "document": "berlin string"},
                {"index": 1, "relevance_score": 0.91, "document": {"text": "paris text"}},
                {"index": 2, "relevance_score": 0.08, "document": {"image": "https://x/m.jpg"}},
                {"index": 3, "relevance_score": 0.55},
                {"index": 4, "relevance_score": 0.30, "document": ""},
            ])),
        ),
        (
            200,
            answer(json!([{"index": 0, "relevance_score": 0.42, "document": 123}])),
        ),
    ])
    .await;
    let p = reranker(&mock);
    let echo = RerankConfig::new().return_documents(true);
    let request = RerankRequest::new("q", ["a", "b", "c", "d", "e"])
        .top_k(5)
        .config(echo.clone());
    let r = p.rerank(&request).await.unwrap();
    let ranked: Vec<_> = r
        .results
        .iter()
        .map(|d| (d.index, d.document.as_deref()))
        .collect();
    assert_eq!(
        ranked,
        [
            (1, Some("paris text")),
            (3, None),
            (0, Some("berlin string")),
            (4, Some("")),
            (2, None)
        ]
    );
    assert_eq!(mock.requests()[0].1["return_documents"], true);
    assert_eq!(mock.requests()[0].1["top_n"], 5);
    let scalar = p
        .rerank(&RerankRequest::new("q", ["a"]).config(echo))
        .await
        .unwrap_err();
    assert_eq!(scalar.category(), RetrievalCategory::InvalidResponse);
}

#[tokio::test]
async fn rerank_truncation_is_managed_and_errors_have_categories() {
    let mock = Mock::start(vec![
        (422, json!({"detail": "Input validation failed."})),
        (
            429,
            json!({"detail": "Rate limit exceeded.", "code": "RATE_TOKEN_LIMIT_EXCEEDED"}),
        ),
        (400, json!({"detail": "malformed"})),
        (404, json!({"detail": "no such model"})),
    ])
    .await;
    let p = reranker(&mock);
    let flip =
        RerankRequest::new("q", ["a"]).config(RerankConfig::new().extra("truncation", json!(true)));
    assert_eq!(
        p.rerank(&flip).await.unwrap_err().category(),
        RetrievalCategory::InvalidRequest
    );
    assert!(mock.requests().is_empty(), "rejected before sending");
    let request = RerankRequest::new("q", ["a"]);
    let over_length = p.rerank(&request).await.unwrap_err();
    assert_eq!(
        (over_length.category(), over_length.message()),
        (
            RetrievalCategory::InvalidRequest,
            "Input validation failed."
        )
    );
    let limited = p.rerank(&request).await.unwrap_err();
    assert_eq!(limited.category(), RetrievalCategory::RateLimit);
    assert_eq!(limited.error_type(), Some("RATE_TOKEN_LIMIT_EXCEEDED"));
    assert_eq!(
        p.rerank(&request).await.unwrap_err().category(),
        RetrievalCategory::InvalidRequest
    );
    assert_eq!(
        p.ready().await.unwrap_err().category(),
        RetrievalCategory::InvalidModel
    );
}

#[tokio::test]
async fn embed_maps_input_type_to_task_and_reads_total_tokens() {
    let reply = |v: f64, tokens: u64| {
        json!({"model": "jina-embed-test-v3", "usage": {"total_tokens": tokens},
               "data": [{"index": 0, "embedding": [v, 0.5]}]})
    };
    let mock = Mock::start(vec![
        (200, reply(0.1, 8)),
        (200, reply(0.2, 9)),
        (200, reply(0.3, 2)),
        (429, json!({"detail": "Rate limit exceeded."})),
    ])
    .await;
    let p = embedder(&mock);
    let with = |config: EmbeddingConfig| EmbeddingRequest::new(["x"]).config(config);
    let r = p
        .embed(&with(EmbeddingConfig::new().input_type("query")))
        .await
        .unwrap();
    assert_eq!(r.vectors, vec![vec![0.1, 0.5]]);
    assert_eq!(r.usage.map(|u| u.input_tokens), Some(8));
    assert_eq!(r.model, "jina-embed-test-v3");
    p.embed(&with(
        EmbeddingConfig::new().input_type("document").dimensions(2),
    ))
    .await
    .unwrap();
    p.embed(&with(
        EmbeddingConfig::new().extra("task", json!("text-matching")),
    ))
    .await
    .unwrap();
    let unknown = p
        .embed(&with(EmbeddingConfig::new().input_type("clustering")))
        .await
        .unwrap_err();
    assert_eq!(unknown.category(), RetrievalCategory::InvalidRequest);
    let clash = EmbeddingConfig::new()
        .input_type("query")
        .extra("task", json!("text-matching"));
    assert_eq!(
        p.embed(&with(clash)).await.unwrap_err().category(),
        RetrievalCategory::InvalidRequest
    );
    assert_eq!(
        p.embed(&with(EmbeddingConfig::new()))
            .await
            .unwrap_err()
            .category(),
        RetrievalCategory::RateLimit
    );
    let requests = mock.requests();
    assert_eq!(requests[0].0, "/v1/embeddings");
    let bodies: Vec<_> = requests.into_iter().map(|(_, b)| b).collect();
    assert_eq!(
        bodies,
        vec![
            json!({"model": "jina-embed-test", "input": ["x"], "task": "retrieval.query", "truncate": false}),
            json!({"model": "jina-embed-test", "input": ["x"], "task": "retrieval.passage",
                   "dimensions": 2, "truncate": false}),
            json!({"model": "jina-embed-test", "input": ["x"], "truncate": false, "task": "text-matching"}),
            json!({"model": "jina-embed-test", "input": ["x"], "truncate": false}),
        ]
    );
    assert!(mock
        .authorizations()
        .iter()
        .all(|a| a.as_deref() == Some("Bearer test-jina-key")));
}
