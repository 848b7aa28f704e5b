//! Spec: retrieval-provider §8.3 (decoding `data[].embedding` by its wire shape) and
//! §8.2 (Jina's `/v1/embeddings` answers in the same `data` shape).
//!
//! A number array is the vector verbatim; a base64 string is little-endian float32
//! values; any other shape is `provider_invalid_response`. Entries are put in input
//! order by `index` when every entry carries a distinct one, else kept as listed.

use serde_json::Value;

use crate::error::RetrievalError;

/// The vectors of one response's `data`, in input order.
///
/// # Errors
/// `provider_invalid_response` for a missing `data` list or an undecodable entry.
pub(crate) fn decode_data(raw: &Value) -> Result<Vec<Vec<f64>>, RetrievalError> {
    let data = raw
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| RetrievalError::invalid_response("the response has no `data` list"))?;
    let mut entries = Vec::with_capacity(data.len());
    for (pos, item) in data.iter().enumerate() {
        let vector = decode_embedding(item.get("embedding"))
            .map_err(|why| RetrievalError::invalid_response(format!("data[{pos}]: {why}")))?;
        entries.push((crate::wire::index(item.get("index")), vector));
    }
    let mut indices: Vec<usize> = entries.iter().filter_map(|(i, _)| *i).collect();
    indices.sort_unstable();
    let keyed = indices.len() == entries.len() && indices.iter().copied().eq(0..entries.len());
    if keyed {
        entries.sort_by_key(|(i, _)| *i);
    }
    Ok(entries.into_iter().map(|(_, v)| v).collect())
}

/// A bare vector array (TEI `/embed`: `[[float, ..], ..]`), in the order listed.
///
/// # Errors
/// `provider_invalid_response` when `raw` is not a list of number lists.
pub(crate) fn decode_bare(raw: &Value) -> Result<Vec<Vec<f64>>, RetrievalError> {
    let list = raw
        .as_array()
        .ok_or_else(|| RetrievalError::invalid_response("the response is not a vector list"))?;
    list.iter()
        .enumerate()
        .map(|(pos, v)| {
            let vector = match v {
                Value::Array(_) => decode_embedding(Some(v)),
                other => Err(format!("not a number array: {other}")),
            };
            vector.map_err(|why| RetrievalError::invalid_response(format!("[{pos}]: {why}")))
        })
        .collect()
}

/// One `embedding` by its wire shape.
fn decode_embedding(v: Option<&Value>) -> Result<Vec<f64>, String> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .map(|x| x.as_f64().filter(|_| x.is_number()))
            .collect::<Option<Vec<f64>>>()
            .ok_or_else(|| "the embedding array holds a non-number".to_owned()),
        Some(Value::String(text)) => {
            let bytes = crate::base64::decode(text).ok_or("the embedding is not valid base64")?;
            if bytes.len() % 4 != 0 {
                return Err(format!(
                    "the base64 embedding decodes to {} bytes, not a whole number of float32s",
                    bytes.len()
                ));
            }
            Ok(bytes
                .chunks_exact(4)
                .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect())
        }
        Some(other) => Err(format!(
            "the embedding is neither a number array nor base64: {other}"
        )),
        None => Err("the entry has no embedding".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn data_is_decoded_by_shape_and_ordered_by_index() {
        // 1.0f32 and 2.0f32, little-endian: 0000803f 00000040.
        let raw = json!({"data": [
            {"index": 1, "embedding": "AACAPwAAAEA="},
            {"index": 0, "embedding": [0.5, 0.25]},
        ]});
        assert_eq!(
            decode_data(&raw).unwrap(),
            vec![vec![0.5, 0.25], vec![1.0, 2.0]]
        );
        for bad in [
            json!(null),
            json!(3),
            json!(["x"]),
            json!("@@@"),
            json!("AAA="),
        ] {
            let raw = json!({"data": [{"index": 0, "embedding": bad}]});
            assert!(decode_data(&raw).is_err(), "{bad}");
        }
    }

    #[test]
    fn bare_vector_lists_keep_their_order_and_reject_other_shapes() {
        let raw = json!([[0.1, 0.2], [0.3, 0.4]]);
        assert_eq!(
            decode_bare(&raw).unwrap(),
            vec![vec![0.1, 0.2], vec![0.3, 0.4]]
        );
        for bad in [json!({"data": []}), json!(["AAAA"]), json!([[0.1, "x"]])] {
            assert!(decode_bare(&bad).is_err(), "{bad}");
        }
    }
}
