//! The Cohere `/v2/embed` mapping (§8.4) against a 127.0.0.1 mock: the wire body and
//! bearer header, `embeddings.float` in input order, the 96-input chunk-and-stitch,
//! malformed ancillary figures, and pre-send rejection.

use crate::mock::Mock;
use openarmature_retrieval::{
    CohereEmbeddings, EmbeddingConfig, EmbeddingProvider, EmbeddingRequest, RetrievalCategory,
};
use serde_json::{json, Value};

fn embedder(mock: &Mock) -> CohereEmbeddings {
    let builder = mock.keyed(
        CohereEmbeddings::builder("cohere-embed-test"),
        "test-cohere-key",
    );
    builder.build().unwrap()
}

fn answer(id: Value, floats: Vec<Vec<f64>>, tokens: Value) -> Value {
    json!({"id": id, "embeddings": {"float": floats}, "meta": {"billed_units": {"input_tokens": tokens}}})
}

#[tokio::test]
async fn embed_wire_round_trip_uses_the_bound_model_and_the_float_vectors() {
    let body = answer(
        json!("emb-1"),
        vec![vec![0.1, 0.2], vec![0.3, 0.4]],
        json!(6),
    );
    let mock = Mock::start(vec![(200, body.clone())]).await;
    let r = embedder(&mock)
        .embed(&EmbeddingRequest::new(["alpha", "beta"]))
        .await
        .unwrap();
    assert_eq!(r.vectors, vec![vec![0.1, 0.2], vec![0.3, 0.4]]);
    assert_eq!(r.model, "cohere-embed-test");
    assert_eq!(r.response_id.as_deref(), Some("emb-1"));
    assert_eq!(r.usage.map(|u| u.input_tokens), Some(6));
    assert_eq!(r.raw, body);
    let requests = mock.requests();
    assert_eq!(requests[0].0, "/v2/embed");
    assert_eq!(
        requests[0].1,
        json!({"model": "cohere-embed-test", "input_type": "search_document",
               "texts": ["alpha", "beta"], "embedding_types": ["float"], "truncate": "NONE"})
    );
    assert_eq!(
        mock.authorizations(),
        vec![Some("Bearer test-cohere-key".to_owned())]
    );
}

#[tokio::test]
async fn over_96_inputs_are_chunked_and_a_malformed_chunk_figure_nulls_usage() {
    let inputs: Vec<String> = (0..100).map(|i| format!("doc-{i:03}")).collect();
    let vectors = |range: std::ops::Range<usize>| -> Vec<Vec<f64>> {
        range.map(|i| vec![i as f64, 0.5]).collect()
    };
    let mock = Mock::start(vec![
        (200, answer(json!("a"), vectors(0..96), json!(480))),
        (200, answer(json!("b"), vectors(96..100), json!(20))),
        (200, answer(json!(7), vectors(0..96), json!(480))),
        (200, answer(json!("d"), vectors(96..100), json!("abc"))),
    ])
    .await;
    let request = EmbeddingRequest::new(inputs.clone());
    let summed = embedder(&mock).embed(&request).await.unwrap();
    assert_eq!(summed.vectors, vectors(0..100));
    assert_eq!(summed.usage.map(|u| u.input_tokens), Some(500));
    assert_eq!(summed.response_id.as_deref(), Some("a"));
    assert_eq!(summed.raw.as_array().map(Vec::len), Some(2));
    let malformed = embedder(&mock).embed(&request).await.unwrap();
    assert_eq!(
        malformed.usage, None,
        "a malformed chunk figure is not summed"
    );
    assert_eq!(malformed.response_id, None, "no fall-through to a later id");
    let sizes: Vec<usize> = mock
        .requests()
        .iter()
        .map(|(_, b)| b["texts"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, [96, 4, 96, 4]);
}

#[tokio::test]
async fn unrecognized_input_types_and_conflicting_truncate_never_reach_the_wire() {
    let mock = Mock::start(Vec::new()).await;
    for config in [
        EmbeddingConfig::new().input_type("summarization"),
        EmbeddingConfig::new().extra("truncate", json!("END")),
    ] {
        let error = embedder(&mock)
            .embed(&EmbeddingRequest::new(["alpha"]).config(config))
            .await
            .unwrap_err();
        assert_eq!(error.category(), RetrievalCategory::InvalidRequest);
    }
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn a_response_without_float_vectors_is_invalid() {
    let mock = Mock::start(vec![(
        200,
        json!({"id": "x", "embeddings": {"int8": [[1]]}}),
    )])
    .await;
    let error = embedder(&mock)
        .embed(&EmbeddingRequest::new(["alpha"]))
        .await
        .unwrap_err();
    assert_eq!(error.category(), RetrievalCategory::InvalidResponse);
}
