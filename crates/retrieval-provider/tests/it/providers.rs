//! The OpenAI-compatible embedding and Cohere rerank mappings against a 127.0.0.1
//! mock: wire bodies, normalization, chunking, invariants and error categories.

use openarmature_retrieval::{
    CohereRerank, EmbeddingConfig, EmbeddingProvider, EmbeddingRequest, OpenAiEmbeddings,
    RerankProvider, RerankRequest, RetrievalCategory,
};
use serde_json::json;

use crate::mock::Mock;

fn embedder(mock: &Mock, chunk: usize) -> OpenAiEmbeddings {
    mock.keyed(OpenAiEmbeddings::builder("text-embedding-test"), "k")
        .chunk_size(chunk)
        .build()
        .unwrap()
}

fn reranker(mock: &Mock) -> CohereRerank {
    let builder = mock.keyed(CohereRerank::builder("rerank-test"), "k");
    builder.build().unwrap()
}

#[tokio::test]
async fn embed_normalizes_the_openai_response() {
    let body = json!({
        "object": "list", "model": "text-embedding-test-v2", "id": "emb-1",
        "data": [
            {"object": "embedding", "index": 1, "embedding": [0.4, 0.5]},
            {"object": "embedding", "index": 0, "embedding": [0.1, 0.2]},
        ],
        "usage": {"prompt_tokens": 6, "total_tokens": 6},
    });
    let mock = Mock::start(vec![(200, body.clone())]).await;
    let request = EmbeddingRequest::new(["a", "b"]).config(EmbeddingConfig::new().dimensions(2));
    let r = embedder(&mock, 2048).embed(&request).await.unwrap();
    assert_eq!(r.vectors, vec![vec![0.1, 0.2], vec![0.4, 0.5]]);
    assert_eq!(r.dimensions, 2);
    assert_eq!(r.model, "text-embedding-test-v2");
    assert_eq!(r.response_id.as_deref(), Some("emb-1"));
    assert_eq!(r.usage.map(|u| u.input_tokens), Some(6));
    assert_eq!(r.raw, body);
    let requests = mock.requests();
    assert_eq!(requests[0].0, "/v1/embeddings");
    assert_eq!(
        requests[0].1,
        json!({"model": "text-embedding-test", "input": ["a", "b"], "dimensions": 2})
    );
}

#[tokio::test]
async fn over_cap_inputs_are_chunked_and_stitched() {
    let chunk = |id: &str, v: f64, n: usize, tokens: u64| {
        let data: Vec<_> = (0..n)
            .map(|i| json!({"index": i, "embedding": [v + i as f64]}))
            .collect();
        json!({"id": id, "model": "m", "data": data, "usage": {"prompt_tokens": tokens}})
    };
    let mock = Mock::start(vec![
        (200, chunk("first", 1.0, 2, 3)),
        (200, chunk("second", 10.0, 1, 4)),
    ])
    .await;
    let r = embedder(&mock, 2)
        .embed(&EmbeddingRequest::new(["a", "b", "c"]))
        .await
        .unwrap();
    assert_eq!(r.vectors, vec![vec![1.0], vec![2.0], vec![10.0]]);
    assert_eq!(r.usage.map(|u| u.input_tokens), Some(7));
    assert_eq!(r.response_id.as_deref(), Some("first"));
    assert_eq!(r.raw.as_array().map(Vec::len), Some(2));
    let inputs: Vec<_> = mock
        .requests()
        .into_iter()
        .map(|(_, b)| b["input"].clone())
        .collect();
    assert_eq!(inputs, vec![json!(["a", "b"]), json!(["c"])]);
}

#[tokio::test]
async fn malformed_ancillary_figures_are_not_reported() {
    let body = json!({
        "id": "", "data": [{"index": 0, "embedding": [0.1]}],
        "usage": {"prompt_tokens": "6"},
    });
    let mock = Mock::start(vec![(200, body)]).await;
    let r = embedder(&mock, 2048)
        .embed(&EmbeddingRequest::new(["a"]))
        .await
        .unwrap();
    assert_eq!(r.usage, None);
    assert_eq!(r.response_id, None);
    assert_eq!(r.model, "text-embedding-test");
}

#[tokio::test]
async fn payload_defects_and_http_errors_have_their_categories() {
    let mock = Mock::start(vec![
        (200, json!({"data": [{"index": 0, "embedding": [0.1]}]})),
        (
            503,
            json!({"error": {"message": "down", "type": "server_error"}}),
        ),
        (429, json!({"error": {"message": "slow"}})),
        (401, json!({})),
    ])
    .await;
    let p = embedder(&mock, 2048);
    let two = EmbeddingRequest::new(["a", "b"]);
    let one = EmbeddingRequest::new(["a"]);
    let count = p.embed(&two).await.unwrap_err();
    assert_eq!(count.category(), RetrievalCategory::InvalidResponse);
    let down = p.embed(&one).await.unwrap_err();
    assert_eq!(down.category(), RetrievalCategory::Unavailable);
    assert_eq!(
        (down.message(), down.error_type()),
        ("down", Some("server_error"))
    );
    assert_eq!(
        p.embed(&one).await.unwrap_err().category(),
        RetrievalCategory::RateLimit
    );
    assert_eq!(
        p.embed(&one).await.unwrap_err().category(),
        RetrievalCategory::Authentication
    );
    // Pre-send validation never reaches the server.
    let empty = p
        .embed(&EmbeddingRequest::new(Vec::<String>::new()))
        .await
        .unwrap_err();
    assert_eq!(empty.category(), RetrievalCategory::InvalidRequest);
    assert_eq!(mock.requests().len(), 4);
}

#[tokio::test]
async fn rerank_sorts_validates_and_reports_usage() {
    let mock = Mock::start(vec![
        (
            200,
            json!({
                "id": "rr-1",
                "results": [
                    {"index": 0, "relevance_score": 0.3},
                    {"index": 2, "relevance_score": 0.9},
                ],
                "meta": {"billed_units": {"search_units": 1}},
            }),
        ),
        (
            200,
            json!({"results": [{"index": 5, "relevance_score": 0.3}]}),
        ),
        (
            200,
            json!({"results": [
                {"index": 0, "relevance_score": 0.3},
                {"index": 1, "relevance_score": 0.2},
            ]}),
        ),
    ])
    .await;
    let p = reranker(&mock);
    let request = RerankRequest::new("capital", ["berlin", "madrid", "paris"]).top_k(2);
    let r = p.rerank(&request).await.unwrap();
    assert_eq!(
        r.results.iter().map(|d| d.index).collect::<Vec<_>>(),
        [2, 0]
    );
    assert!(r.results.iter().all(|d| d.document.is_none()));
    assert_eq!(r.response_id.as_deref(), Some("rr-1"));
    assert_eq!(r.model, "rerank-test");
    let usage = r.usage.unwrap();
    assert_eq!((usage.search_units, usage.input_tokens), (Some(1), None));
    assert_eq!(
        mock.requests()[0],
        (
            "/v2/rerank".to_owned(),
            json!({"model": "rerank-test", "query": "capital",
                   "documents": ["berlin", "madrid", "paris"], "top_n": 2})
        )
    );
    let out_of_range = p.rerank(&request).await.unwrap_err();
    assert_eq!(out_of_range.category(), RetrievalCategory::InvalidResponse);
    let too_many = RerankRequest::new("q", ["a", "b"]).top_k(1);
    assert_eq!(
        p.rerank(&too_many).await.unwrap_err().category(),
        RetrievalCategory::InvalidResponse
    );
    let empty = p.rerank(&RerankRequest::new("", ["a"])).await.unwrap_err();
    assert_eq!(empty.category(), RetrievalCategory::InvalidRequest);
}
