//! The TEI embedding and rerank mappings (§8.1) against a 127.0.0.1 mock: wire
//! bodies, bare-array normalization, chunk-and-stitch, fail-loud truncation and
//! error categories.

use openarmature_retrieval::{
    EmbeddingConfig, EmbeddingProvider, EmbeddingRequest, RerankConfig, RerankProvider,
    RerankRequest, RetrievalCategory, TeiEmbeddings, TeiRerank,
};
use serde_json::{json, Value};

use crate::mock::Mock;

fn embedder(mock: &Mock, chunk: usize) -> TeiEmbeddings {
    TeiEmbeddings::builder("tei-embed-test")
        .base_url(&mock.origin)
        .chunk_size(chunk)
        .prompt_name("query", "query")
        .prompt_name("document", "passage")
        .build()
        .unwrap()
}

fn reranker(mock: &Mock, chunk: usize) -> TeiRerank {
    TeiRerank::builder("tei-rerank-test")
        .base_url(&mock.origin)
        .chunk_size(chunk)
        .build()
        .unwrap()
}

fn bodies(mock: &Mock) -> Vec<Value> {
    mock.requests().into_iter().map(|(_, b)| b).collect()
}

#[tokio::test]
async fn embed_sends_prompt_name_and_keeps_the_bare_array_as_raw() {
    let answer = json!([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]);
    let mock = Mock::start(vec![(200, answer.clone()), (200, json!([[0.7, 0.8]]))]).await;
    let p = embedder(&mock, 32);
    let query =
        EmbeddingRequest::new(["a", "b"]).config(EmbeddingConfig::new().input_type("query"));
    let r = p.embed(&query).await.unwrap();
    assert_eq!(r.vectors, vec![vec![0.1, 0.2, 0.3], vec![0.4, 0.5, 0.6]]);
    assert_eq!((r.dimensions, r.usage, r.response_id), (3, None, None));
    assert_eq!(r.model, "tei-embed-test");
    assert_eq!(r.raw, answer);
    let plain = EmbeddingRequest::new(["c"]).config(EmbeddingConfig::new().dimensions(2));
    p.embed(&plain).await.unwrap();
    let requests = mock.requests();
    assert_eq!(requests[0].0, "/embed");
    assert_eq!(
        bodies(&mock),
        vec![
            json!({"inputs": ["a", "b"], "prompt_name": "query"}),
            json!({"inputs": ["c"], "dimensions": 2}),
        ]
    );
}

#[tokio::test]
async fn embed_over_the_chunk_size_is_chunked_and_stitched() {
    let mock = Mock::start(vec![
        (200, json!([[0.0, 0.5], [0.1, 0.5]])),
        (200, json!([[0.2, 0.5], [0.3, 0.5]])),
        (200, json!([[0.4, 0.5]])),
    ])
    .await;
    let r = embedder(&mock, 2)
        .embed(&EmbeddingRequest::new(["e0", "e1", "e2", "e3", "e4"]))
        .await
        .unwrap();
    let firsts: Vec<f64> = r.vectors.iter().map(|v| v[0]).collect();
    assert_eq!(firsts, [0.0, 0.1, 0.2, 0.3, 0.4]);
    assert_eq!(r.usage, None);
    assert_eq!(r.raw.as_array().map(Vec::len), Some(3));
    assert_eq!(r.raw[2], json!([[0.4, 0.5]]));
    assert_eq!(
        bodies(&mock),
        vec![
            json!({"inputs": ["e0", "e1"]}),
            json!({"inputs": ["e2", "e3"]}),
            json!({"inputs": ["e4"]}),
        ]
    );
}

#[tokio::test]
async fn embed_truncate_extras_are_managed_and_errors_have_categories() {
    let mock = Mock::start(vec![
        (200, json!([[0.1]])),
        (200, json!([[0.1], [0.2, 0.3]])),
        (
            503,
            json!({"error": "overloaded", "error_type": "Overloaded"}),
        ),
    ])
    .await;
    let p = embedder(&mock, 32);
    let flip =
        EmbeddingRequest::new(["a"]).config(EmbeddingConfig::new().extra("truncate", json!(true)));
    let e = p.embed(&flip).await.unwrap_err();
    assert_eq!(e.category(), RetrievalCategory::InvalidRequest);
    assert!(
        mock.requests().is_empty(),
        "a conflicting truncate is rejected pre-send"
    );
    let same =
        EmbeddingRequest::new(["a"]).config(EmbeddingConfig::new().extra("truncate", json!(false)));
    p.embed(&same).await.unwrap();
    assert_eq!(bodies(&mock), vec![json!({"inputs": ["a"]})]);
    let ragged = p
        .embed(&EmbeddingRequest::new(["a", "b"]))
        .await
        .unwrap_err();
    assert_eq!(ragged.category(), RetrievalCategory::InvalidResponse);
    let down = p.embed(&EmbeddingRequest::new(["a"])).await.unwrap_err();
    assert_eq!(down.category(), RetrievalCategory::Unavailable);
    assert_eq!(
        (down.message(), down.error_type()),
        ("overloaded", Some("Overloaded"))
    );
}

#[tokio::test]
async fn rerank_within_one_batch_sorts_and_echoes_text() {
    let answer = json!([
        {"index": 0, "score": 0.42, "text": "berlin"},
        {"index": 1, "score": 0.91, "text": "paris"},
        {"index": 2, "score": 0.08, "text": "madrid"},
    ]);
    let mock = Mock::start(vec![(200, answer.clone())]).await;
    let request = RerankRequest::new("capital?", ["berlin", "paris", "madrid"])
        .config(RerankConfig::new().return_documents(true));
    let r = reranker(&mock, 32).rerank(&request).await.unwrap();
    let ranked: Vec<_> = r
        .results
        .iter()
        .map(|d| (d.index, d.document.clone().unwrap()))
        .collect();
    assert_eq!(
        ranked,
        [
            (1, "paris".into()),
            (0, "berlin".into()),
            (2, "madrid".into())
        ]
    );
    assert_eq!((r.usage, r.response_id, r.raw), (None, None, answer));
    assert_eq!(
        mock.requests(),
        vec![(
            "/rerank".to_owned(),
            json!({"query": "capital?", "texts": ["berlin", "paris", "madrid"],
                   "truncate": false, "return_text": true})
        )]
    );
}

#[tokio::test]
async fn rerank_over_the_chunk_size_rebases_sorts_globally_then_applies_top_k() {
    let chunks = vec![
        json!([{"index": 2, "score": 0.10}, {"index": 0, "score": 0.20},
               {"index": 3, "score": 0.55}, {"index": 1, "score": 0.95}]),
        json!([{"index": 3, "score": 0.05}, {"index": 1, "score": 0.30},
               {"index": 0, "score": 0.80}, {"index": 2, "score": 0.88}]),
        json!([{"index": 0, "score": 0.65}]),
    ];
    let mock = Mock::start(chunks.iter().cloned().map(|c| (200, c)).collect()).await;
    let docs: Vec<String> = (0..9).map(|i| format!("doc {i}")).collect();
    let request = RerankRequest::new("fastest?", docs.clone()).top_k(4);
    let r = reranker(&mock, 4).rerank(&request).await.unwrap();
    let ranked: Vec<_> = r
        .results
        .iter()
        .map(|d| (d.index, d.relevance_score))
        .collect();
    assert_eq!(ranked, [(1, 0.95), (6, 0.88), (4, 0.80), (8, 0.65)]);
    assert!(r.results.iter().all(|d| d.document.is_none()));
    assert_eq!(
        r.raw,
        Value::Array(chunks),
        "raw keeps the chunk-relative answers"
    );
    let texts: Vec<Value> = bodies(&mock).iter().map(|b| b["texts"].clone()).collect();
    assert_eq!(
        texts,
        vec![json!(docs[0..4]), json!(docs[4..8]), json!(docs[8..9])]
    );
    assert!(bodies(&mock)
        .iter()
        .all(|b| b["query"] == "fastest?" && b["truncate"] == false));
}

#[tokio::test]
async fn rerank_fails_loud_on_over_length_and_bad_chunk_indices() {
    let validation = |n: u32| json!({"error": format!("must have less than 512 tokens. Given: {n}"), "error_type": "Validation"});
    let mock = Mock::start(vec![
        (413, validation(904)),
        (422, validation(771)),
        (
            200,
            json!([{"index": 0, "score": 0.5}, {"index": 2, "score": 0.4}]),
        ),
    ])
    .await;
    let p = reranker(&mock, 2);
    let long = RerankRequest::new("q", ["a very long document"]);
    for _ in 0..2 {
        let e = p.rerank(&long).await.unwrap_err();
        assert_eq!(e.category(), RetrievalCategory::InvalidRequest);
        assert_eq!(e.error_type(), Some("Validation"));
    }
    assert!(bodies(&mock).iter().all(|b| b["truncate"] == false));
    // Index 2 is outside its 2-document chunk even though 2 < 3 documents overall.
    let outside = p
        .rerank(&RerankRequest::new("q", ["a", "b", "c"]))
        .await
        .unwrap_err();
    assert_eq!(outside.category(), RetrievalCategory::InvalidResponse);
    let flip =
        RerankRequest::new("q", ["a"]).config(RerankConfig::new().extra("truncate", json!(true)));
    assert_eq!(
        p.rerank(&flip).await.unwrap_err().category(),
        RetrievalCategory::InvalidRequest
    );
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn ready_reads_info() {
    let mock = Mock::start(vec![(200, json!({"model_id": "m"})), (503, json!({}))]).await;
    let p = reranker(&mock, 32);
    p.ready().await.unwrap();
    assert_eq!(
        p.ready().await.unwrap_err().category(),
        RetrievalCategory::Unavailable
    );
    assert_eq!(mock.requests()[0].0, "/info");
}
