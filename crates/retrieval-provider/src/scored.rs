//! Spec: retrieval-provider §6 (`ScoredDocument`: `index`, `relevance_score`, and
//! the `document` echo rule) as the rerank mappings read their result lists.
//!
//! The echo rule: a string is surfaced verbatim (`""` included); an object with a
//! string `text` surfaces that text; any other object (an image echo) and an absent
//! or `null` echo surface `None`; a number, boolean or array is a malformed response.

use serde_json::Value;

use crate::error::RetrievalError;
use crate::rerank::ScoredDocument;
use crate::wire;

/// Where a mapping's result entries keep their score and their document echo.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResultShape {
    /// The score key (`relevance_score`, TEI's `score`).
    pub(crate) score: &'static str,
    /// The echo key (`document`, TEI's `text`), when the wire can echo.
    pub(crate) echo: Option<&'static str>,
}

/// The result entries of `list`, as listed (indices as the provider sent them).
///
/// # Errors
/// `provider_invalid_response` when `list` is not a list, or an entry has no valid
/// index, no numeric score, or a malformed echo.
pub(crate) fn parse(
    list: Option<&Value>,
    shape: ResultShape,
) -> Result<Vec<ScoredDocument>, RetrievalError> {
    let list = list
        .and_then(Value::as_array)
        .ok_or_else(|| RetrievalError::invalid_response("the response has no result list"))?;
    list.iter()
        .enumerate()
        .map(|(pos, r)| {
            let bad = |why: &str| RetrievalError::invalid_response(format!("results[{pos}] {why}"));
            let index = wire::index(r.get("index")).ok_or_else(|| bad("has no valid index"))?;
            let score = r
                .get(shape.score)
                .filter(|s| s.is_number())
                .and_then(Value::as_f64)
                .ok_or_else(|| bad(&format!("has no numeric {}", shape.score)))?;
            let document = match shape.echo {
                Some(key) => echo(r.get(key)).map_err(|why| bad(&why))?,
                None => None,
            };
            Ok(ScoredDocument::new(index, score).with_document(document))
        })
        .collect()
}

/// One `document` echo by the §6 rule.
fn echo(v: Option<&Value>) -> Result<Option<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Object(o)) => Ok(o.get("text").and_then(Value::as_str).map(str::to_owned)),
        Some(other) => Err(format!("echoes a document that is not text: {other}")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    const JINA: ResultShape = ResultShape {
        score: "relevance_score",
        echo: Some("document"),
    };

    #[test]
    fn results_need_an_index_and_a_numeric_score() {
        let ok = json!([{"index": 1, "relevance_score": 0.5}]);
        assert_eq!(
            parse(Some(&ok), JINA).unwrap(),
            vec![ScoredDocument::new(1, 0.5)]
        );
        for bad in [
            json!({}),
            json!([{"relevance_score": 0.5}]),
            json!([{"index": 0, "relevance_score": "0.5"}]),
        ] {
            assert!(parse(Some(&bad), JINA).is_err(), "{bad}");
        }
    }

    #[test]
    fn echoes_follow_the_section_6_shape_rule() {
        let docs = |list: Value| {
            parse(Some(&list), JINA).map(|r| r.into_iter().map(|d| d.document).collect::<Vec<_>>())
        };
        let list = json!([
            {"index": 0, "relevance_score": 0.1, "document": "s"},
            {"index": 1, "relevance_score": 0.1, "document": {"text": "t"}},
            {"index": 2, "relevance_score": 0.1, "document": {"image": "i"}},
            {"index": 3, "relevance_score": 0.1, "document": ""},
            {"index": 4, "relevance_score": 0.1, "document": null},
            {"index": 5, "relevance_score": 0.1},
        ]);
        assert_eq!(
            docs(list).unwrap(),
            vec![
                Some("s".to_owned()),
                Some("t".to_owned()),
                None,
                Some(String::new()),
                None,
                None
            ]
        );
        for bad in [json!(123), json!(true), json!(["x"])] {
            let list = json!([{"index": 0, "relevance_score": 0.1, "document": bad}]);
            assert!(docs(list).is_err());
        }
    }
}
