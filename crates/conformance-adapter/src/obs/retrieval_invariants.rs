//! Spec: conformance-adapter §5.9 — the named invariants of the embedding / rerank
//! fixtures (observability 074–083, 089, 099–109, 137–143, 150, 151, 154; §5.5.8 /
//! §5.5.9 / §5.5.13 / §5.5.14 / §8.4.5 / §8.4.7 / §11), each checked against the
//! typed retrieval events, the exported spans, the Langfuse observations, the metric
//! points or the case's own directives. Names shared with other suites are claimed
//! only by runs that made a retrieval call.

use openarmature_observability::attributes as a;
use openarmature_observability::langfuse::{Level, Observation, ObservationType};
use opentelemetry_sdk::trace::SpanData;
use serde_json::Value;

use super::spans::attr;
use super::Run;

use super::invariants::truthy;
use crate::failure::{ensure, Check};
use crate::table::{lookup, names, Table};

type Verdict = Check;

/// Which retrieval protocol the run exercised.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Embed,
    Rerank,
}

impl Kind {
    fn success(self) -> &'static str {
        match self {
            Kind::Embed => "EmbeddingEvent",
            Kind::Rerank => "RerankEvent",
        }
    }
    fn failure(self) -> &'static str {
        match self {
            Kind::Embed => "EmbeddingFailedEvent",
            Kind::Rerank => "RerankFailedEvent",
        }
    }
    fn span(self) -> &'static str {
        match self {
            Kind::Embed => a::EMBEDDING_SPAN,
            Kind::Rerank => a::RERANK_SPAN,
        }
    }
    fn observation(self) -> ObservationType {
        match self {
            Kind::Embed => ObservationType::Embedding,
            Kind::Rerank => ObservationType::Retriever,
        }
    }
    fn operation(self) -> &'static str {
        match self {
            Kind::Embed => a::OPERATION_EMBEDDINGS,
            Kind::Rerank => a::OPERATION_RERANK,
        }
    }
    fn directive(self) -> &'static str {
        match self {
            Kind::Embed => "calls_embed",
            Kind::Rerank => "calls_rerank",
        }
    }
}

fn records(run: &Run<'_>) -> Vec<Value> {
    run.events
        .iter()
        .filter_map(|e| super::retrieval_records::record(e, Value::Null))
        .collect()
}

fn kind(run: &Run<'_>) -> Option<Kind> {
    let types: Vec<String> = records(run)
        .iter()
        .filter_map(|r| {
            r.get("event_type")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    if types.iter().any(|t| t.starts_with("Embedding")) {
        Some(Kind::Embed)
    } else if types.iter().any(|t| t.starts_with("Rerank")) {
        Some(Kind::Rerank)
    } else {
        None
    }
}

fn of_type(run: &Run<'_>, t: &str) -> Vec<Value> {
    records(run)
        .into_iter()
        .filter(|r| r.get("event_type").and_then(Value::as_str) == Some(t))
        .collect()
}

fn counts(run: &Run<'_>, k: Kind, success: usize, failure: usize) -> Verdict {
    let (s, f) = (
        of_type(run, k.success()).len(),
        of_type(run, k.failure()).len(),
    );
    ensure((s, f) == (success, failure), || {
        format!(
            "expected {success} {} / {failure} {}, saw {s} / {f}",
            k.success(),
            k.failure()
        )
    })
}

/// The case's directive blocks of kind `k`, in node order.
fn directives(run: &Run<'_>, k: Kind) -> Vec<Value> {
    run.case
        .get("nodes")
        .and_then(|n| n.entries().ok())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(_, node)| node.get(k.directive()).and_then(|c| c.json().ok()))
        .collect()
}

/// Every event's `field`, compared with each directive's `want(directive)`, in order.
fn each_event_matches(
    run: &Run<'_>,
    k: Kind,
    field: &str,
    want: impl Fn(&Value) -> Value,
) -> Verdict {
    let events: Vec<Value> = records(run);
    let events: Vec<&Value> = events
        .iter()
        .filter(|r| {
            let t = r.get("event_type").and_then(Value::as_str);
            t == Some(k.success()) || t == Some(k.failure())
        })
        .collect();
    let wanted: Vec<Value> = directives(run, k).iter().map(want).collect();
    ensure(!events.is_empty() && events.len() == wanted.len(), || {
        format!("{} events for {} directives", events.len(), wanted.len())
    })?;
    for (e, w) in events.iter().zip(&wanted) {
        let got = e.get(field).cloned().unwrap_or(Value::Null);
        ensure(&got == w, || format!("{field}: event {got}, expected {w}"))?;
    }
    Ok(())
}

fn config_params(k: Kind) -> impl Fn(&Value) -> Value {
    move |d| {
        let mut m = serde_json::Map::new();
        let declared: &[&str] = match k {
            Kind::Embed => &["dimensions", "input_type"],
            Kind::Rerank => &["return_documents"],
        };
        if let Some(Value::Object(c)) = d.get("config") {
            for (key, v) in c {
                if declared.contains(&key.as_str()) {
                    m.insert(key.clone(), v.clone());
                }
            }
        }
        Value::Object(m)
    }
}

/// Checks the success events' response side against the 2xx mock bodies, by order.
fn fields_match_response(run: &Run<'_>, k: Kind) -> Verdict {
    let key = match k {
        Kind::Embed => "mock_embedding",
        Kind::Rerank => "mock_rerank",
    };
    let bodies: Vec<Value> = run
        .case
        .get(key)
        .and_then(|l| l.json().ok())
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.get("status").and_then(Value::as_u64).unwrap_or(200) < 300)
        .filter_map(|e| e.get("body").cloned())
        .collect();
    let events = of_type(run, k.success());
    ensure(!events.is_empty() && events.len() <= bodies.len(), || {
        format!(
            "{} success events, {} 2xx bodies",
            events.len(),
            bodies.len()
        )
    })?;
    for (e, b) in events.iter().zip(&bodies) {
        let same = |field: &str, want: Option<&Value>| {
            let got = e.get(field).cloned().unwrap_or(Value::Null);
            let want = want.cloned().unwrap_or(Value::Null);
            ensure(got == want, || format!("{field}: event {got}, body {want}"))
        };
        same("response_id", b.get("id"))?;
        same("response_model", b.get("model"))?;
        match k {
            Kind::Embed => {
                let tokens = b.get("usage").and_then(|u| u.get("prompt_tokens"));
                let usage = e.get("usage").and_then(|u| u.get("input_tokens"));
                ensure(usage == tokens, || {
                    format!("usage {usage:?}, body {tokens:?}")
                })?;
                let data = b.get("data").and_then(Value::as_array).map_or(0, Vec::len);
                ensure(e.get("input_count") == Some(&Value::from(data)), || {
                    format!("input_count for {data} vectors")
                })?;
            }
            Kind::Rerank => {
                let billed = b.get("meta").and_then(|m| m.get("billed_units"));
                let units = billed.and_then(|u| u.get("search_units"));
                let got = e.get("usage").and_then(|u| u.get("search_units"));
                ensure(got.filter(|v| !v.is_null()) == units, || {
                    format!("search_units {got:?}, body {units:?}")
                })?;
                let n = b
                    .get("results")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                ensure(e.get("result_count") == Some(&Value::from(n)), || {
                    format!("result_count for {n} results")
                })?;
            }
        }
    }
    Ok(())
}

fn identity_populated(run: &Run<'_>) -> Verdict {
    let all = records(run);
    ensure(!all.is_empty(), || "no retrieval events".into())?;
    for r in &all {
        for f in ["invocation_id", "node_name", "call_id", "provider", "model"] {
            let ok = r
                .get(f)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty());
            ensure(ok, || format!("{f} missing on {r}"))?;
        }
        let ns = r
            .get("namespace")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        ensure(
            ns > 0 && r.get("attempt_index").is_some_and(Value::is_u64),
            || format!("namespace / attempt_index missing on {r}"),
        )?;
    }
    Ok(())
}

fn propagated(run: &Run<'_>, k: Kind) -> Verdict {
    let raised: Vec<String> = run.failures.iter().flatten().flatten().cloned().collect();
    let events = of_type(run, k.failure());
    ensure(!raised.is_empty() && events.len() == raised.len(), || {
        format!("raised {raised:?}; {} failure events", events.len())
    })?;
    for (e, c) in events.iter().zip(&raised) {
        ensure(
            e.get("error_category") == Some(&Value::from(c.as_str())),
            || format!("event {e} for raised {c}"),
        )?;
    }
    Ok(())
}

fn call_ids(run: &Run<'_>, distinct: bool) -> Verdict {
    let ids: Vec<String> = records(run)
        .iter()
        .filter_map(|r| r.get("call_id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    ensure(!ids.is_empty() && ids.len() == records(run).len(), || {
        "a retrieval event without call_id".into()
    })?;
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    ensure(
        !distinct || (sorted.len() == ids.len() && ids.len() > 1),
        || format!("call ids not distinct: {ids:?}"),
    )
}

fn active_prompt(run: &Run<'_>) -> Verdict {
    let all = records(run);
    ensure(!all.is_empty(), || "no retrieval events".into())?;
    let prompts = run
        .case
        .get("prompt_backend")
        .and_then(|b| b.get("prompts"))
        .and_then(|p| p.json().ok())
        .unwrap_or(Value::Null);
    for r in &all {
        let p = r.get("active_prompt").cloned().unwrap_or(Value::Null);
        let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
        let declared = prompts.get(name).ok_or(format!("active_prompt {p}"))?;
        for f in ["version", "label", "template_hash"] {
            ensure(p.get(f) == declared.get(f), || {
                format!("active_prompt.{f}: {p}")
            })?;
        }
        let rendered = p.get("rendered_hash").and_then(Value::as_str);
        ensure(rendered.is_some_and(|h| !h.is_empty()), || {
            format!("rendered_hash missing: {p}")
        })?;
    }
    Ok(())
}

fn spans<'f>(run: &Run<'f>, k: Kind) -> Check<Vec<&'f SpanData>> {
    let spans: Vec<&SpanData> = run
        .forest
        .spans
        .iter()
        .filter(|s| s.name == k.span())
        .collect();
    ensure(!spans.is_empty(), || format!("no `{}` span", k.span()))?;
    Ok(spans)
}

fn span_attrs(run: &Run<'_>, k: Kind, keys: &[&str], present: bool) -> Verdict {
    for s in spans(run, k)? {
        for key in keys {
            ensure(attr(s, key).is_some() == present, || {
                format!("`{key}` present = {}, expected {present}", !present)
            })?;
        }
    }
    Ok(())
}

fn observations(run: &Run<'_>, k: Kind) -> Check<Vec<Observation>> {
    let traces = run.langfuse.as_deref().ok_or("no Langfuse observer")?;
    let all: Vec<Observation> = traces
        .iter()
        .flat_map(|t| t.all_observations())
        .cloned()
        .collect();
    let generations = all
        .iter()
        .filter(|o| o.kind == ObservationType::Generation)
        .count();
    let mine: Vec<Observation> = all
        .into_iter()
        .filter(|o| o.kind == k.observation())
        .collect();
    ensure(!mine.is_empty() && generations == 0, || {
        format!(
            "{} {} observations, {generations} generations",
            mine.len(),
            k.observation().as_str()
        )
    })?;
    Ok(mine)
}

fn each_observation(
    run: &Run<'_>,
    k: Kind,
    what: &str,
    ok: impl Fn(&Observation) -> bool,
) -> Verdict {
    for o in observations(run, k)? {
        ensure(ok(&o), || format!("{what}: {o:?}"))?;
    }
    Ok(())
}

fn failure_category(run: &Run<'_>, k: Kind) -> Option<String> {
    of_type(run, k.failure()).first().and_then(|e| {
        e.get("error_category")
            .and_then(Value::as_str)
            .map(str::to_owned)
    })
}

fn raises(run: &Run<'_>, k: Kind, field: &str) -> Option<Value> {
    let key = match k {
        Kind::Embed => "mock_embedding",
        Kind::Rerank => "mock_rerank",
    };
    let list = run.case.get(key)?.json().ok()?;
    list.as_array()?
        .iter()
        .find_map(|e| e.get("raises")?.get(field).cloned())
}

fn meta_is(o: &Observation, key: &str, want: Option<&Value>) -> bool {
    match want {
        Some(w) => o.metadata.get(key) == Some(w),
        None => o
            .metadata
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty()),
    }
}

fn metric_points<'r>(
    run: &'r Run<'_>,
    k: Kind,
    instrument: &str,
) -> Vec<&'r super::metrics::Point> {
    run.metrics
        .iter()
        .filter(|p| p.instrument == instrument && p.dim(a::METRIC_OPERATION) == Some(k.operation()))
        .collect()
}

fn tokens(run: &Run<'_>, k: Kind, want_input: bool) -> Verdict {
    let points = metric_points(run, k, a::METRIC_TOKEN_USAGE);
    let all_tokens = run
        .metrics
        .iter()
        .filter(|p| p.instrument == a::METRIC_TOKEN_USAGE)
        .count();
    if want_input {
        let input_only = points
            .iter()
            .all(|p| p.dim(a::METRIC_TOKEN_TYPE) == Some("input"));
        ensure(!points.is_empty() && input_only, || {
            format!("token points {}", points.len())
        })
    } else {
        ensure(all_tokens == 0, || {
            format!("{all_tokens} token.usage points")
        })
    }
}

fn duration(run: &Run<'_>, k: Kind, errored: bool) -> Verdict {
    let points = metric_points(run, k, a::METRIC_OPERATION_DURATION);
    ensure(!points.is_empty(), || "no duration point".into())?;
    let category = failure_category(run, k);
    for p in points {
        let got = p.dim(a::ERROR_TYPE);
        ensure(got == category.as_deref().filter(|_| errored), || {
            format!("error.type {got:?}")
        })?;
    }
    Ok(())
}

fn inner_vector_length(run: &Run<'_>, k: Kind) -> Verdict {
    of_type(run, k.success()).iter().try_for_each(|e| {
        let inner = e
            .get("output_vectors")
            .and_then(|v| v.get(0))
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        ensure(e.get("dimensions") == Some(&Value::from(inner)), || {
            format!(
                "dimensions {:?} for inner length {inner}",
                e.get("dimensions")
            )
        })
    })
}

fn result_count(run: &Run<'_>, k: Kind) -> Verdict {
    of_type(run, k.success()).iter().try_for_each(|e| {
        let n = e
            .get("output_results")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        ensure(e.get("result_count") == Some(&Value::from(n)), || {
            format!("result_count for {n} results")
        })
    })
}

/// The directive's `field` list's length.
fn list_len(d: &Value, field: &str) -> Value {
    Value::from(d.get(field).and_then(Value::as_array).map_or(0, Vec::len))
}

/// The directive's `field`, or null.
fn field_or_null(d: &Value, field: &str) -> Value {
    d.get(field).cloned().unwrap_or(Value::Null)
}

fn span_named(run: &Run<'_>, k: Kind) -> Verdict {
    spans(run, k).and_then(|_| {
        ensure(run.llm_spans().is_empty(), || {
            "an LLM span was emitted".into()
        })
    })
}

fn no_operation_name(run: &Run<'_>, k: Kind) -> Verdict {
    let any = run
        .forest
        .spans
        .iter()
        .any(|s| attr(s, "gen_ai.operation.name").is_some());
    spans(run, k).and_then(|_| ensure(!any, || "gen_ai.operation.name emitted".into()))
}

const GENAI_SUBSET: &[&str] = &[
    a::GEN_AI_SYSTEM,
    a::GEN_AI_REQUEST_MODEL,
    a::GEN_AI_RESPONSE_MODEL,
];

fn no_output_on_failure(run: &Run<'_>, k: Kind) -> Verdict {
    each_observation(run, k, "no output", |o| {
        o.output.is_none() && o.level == Level::Error
    })
}

fn error_level_with_category(run: &Run<'_>, k: Kind) -> Verdict {
    let category = failure_category(run, k);
    each_observation(run, k, "ERROR with the category as status", |o| {
        o.level == Level::Error && category.is_some() && o.status_message == category
    })
}

/// The retrieval invariants (each value must be `true`), checked for the protocol
/// the run exercised.
const TABLE: &Table<fn(&Run<'_>, Kind) -> Verdict> = &[
    ("exactly_one_embedding_event_observed", |run, k| {
        counts(run, k, 1, 0)
    }),
    ("exactly_one_rerank_event_observed", |run, k| {
        counts(run, k, 1, 0)
    }),
    ("exactly_one_rerank_event", |run, k| counts(run, k, 1, 0)),
    ("success_emits_one_event_zero_failures", |run, k| {
        counts(run, k, 1, 0)
    }),
    ("zero_rerank_failed_events", |run, k| counts(run, k, 1, 0)),
    ("exactly_one_embedding_failed_event_observed", |run, k| {
        counts(run, k, 0, 1)
    }),
    ("exactly_one_rerank_failed_event_observed", |run, k| {
        counts(run, k, 0, 1)
    }),
    ("exactly_one_rerank_failed_event", |run, k| {
        counts(run, k, 0, 1)
    }),
    ("zero_embedding_events_on_failed_call", |run, k| {
        counts(run, k, 0, 1)
    }),
    ("failure_emits_one_event_zero_successes", |run, k| {
        counts(run, k, 0, 1)
    }),
    ("zero_rerank_success_events_observed", |run, k| {
        counts(run, k, 0, 1)
    }),
    ("zero_rerank_success_events", |run, k| counts(run, k, 0, 1)),
    ("call_ids_distinct_across_embedding_events", |run, _| {
        call_ids(run, true)
    }),
    ("call_ids_distinct_across_rerank_events", |run, _| {
        call_ids(run, true)
    }),
    ("all_call_ids_non_null", |run, _| call_ids(run, false)),
    (
        "event_typed_fields_match_provider_response",
        fields_match_response,
    ),
    ("identity_scoping_fields_populated", |run, _| {
        identity_populated(run)
    }),
    ("exception_propagates_alongside_typed_event", propagated),
    ("exception_propagates_out_of_rerank_call", propagated),
    ("input_strings_match_input_list_verbatim", |run, k| {
        each_event_matches(run, k, "input_strings", |d| field_or_null(d, "input"))
    }),
    ("input_count_matches_input_list_length", |run, k| {
        each_event_matches(run, k, "input_count", |d| list_len(d, "input"))
    }),
    (
        "dimensions_matches_inner_vector_length",
        inner_vector_length,
    ),
    (
        "request_params_populated_with_caller_supplied_fields",
        |run, k| each_event_matches(run, k, "request_params", config_params(k)),
    ),
    (
        "request_params_empty_when_caller_supplied_none",
        |run, k| each_event_matches(run, k, "request_params", config_params(k)),
    ),
    ("query_carried_verbatim", |run, k| {
        each_event_matches(run, k, "query", |d| field_or_null(d, "query"))
    }),
    ("documents_carried_verbatim", |run, k| {
        each_event_matches(run, k, "documents", |d| field_or_null(d, "documents"))
    }),
    ("document_count_matches_input", |run, k| {
        each_event_matches(run, k, "document_count", |d| list_len(d, "documents"))
    }),
    ("top_k_matches_caller_supplied_value", |run, k| {
        each_event_matches(run, k, "top_k", |d| field_or_null(d, "top_k"))
    }),
    ("top_k_null_when_caller_passed_none", |run, k| {
        each_event_matches(run, k, "top_k", |d| field_or_null(d, "top_k"))
    }),
    ("result_count_matches_response", result_count),
    (
        "active_prompt_snapshot_matches_prompt_management_section_12_identity_attrs",
        |run, _| active_prompt(run),
    ),
    (
        "embedding_span_name_is_openarmature_embedding_complete",
        span_named,
    ),
    (
        "rerank_span_name_is_openarmature_rerank_complete",
        span_named,
    ),
    ("stable_genai_semconv_subset_emitted", |run, k| {
        span_attrs(run, k, GENAI_SUBSET, true)
    }),
    ("core_genai_semconv_subset_emitted", |run, k| {
        span_attrs(run, k, GENAI_SUBSET, true)
    }),
    (
        "operation_name_attribute_not_emitted_in_v1",
        no_operation_name,
    ),
    (
        "usage_input_tokens_attribute_omitted_when_no_usage_record",
        |run, k| span_attrs(run, k, &[a::GEN_AI_USAGE_INPUT_TOKENS], false),
    ),
    (
        "input_tokens_omitted_when_provider_reports_none",
        |run, k| span_attrs(run, k, &[a::GEN_AI_USAGE_INPUT_TOKENS], false),
    ),
    ("input_tokens_emitted_when_provider_reports_it", |run, k| {
        span_attrs(run, k, &[a::GEN_AI_USAGE_INPUT_TOKENS], true)
    }),
    ("search_units_emitted_when_provider_reports_it", |run, k| {
        span_attrs(run, k, &[a::RERANK_SEARCH_UNITS], true)
    }),
    (
        "search_units_omitted_when_provider_reports_none",
        |run, k| span_attrs(run, k, &[a::RERANK_SEARCH_UNITS], false),
    ),
    (
        "rerank_usage_attributes_omitted_when_no_usage_record",
        |run, k| {
            span_attrs(
                run,
                k,
                &[a::RERANK_SEARCH_UNITS, a::GEN_AI_USAGE_INPUT_TOKENS],
                false,
            )
        },
    ),
    ("observation_type_is_embedding_not_generation", |run, k| {
        observations(run, k).map(|_| ())
    }),
    ("observation_type_is_retriever_not_generation", |run, k| {
        observations(run, k).map(|_| ())
    }),
    (
        "renders_as_embedding_observation_not_generation",
        |run, k| observations(run, k).map(|_| ()),
    ),
    (
        "renders_as_retriever_observation_not_generation",
        |run, k| observations(run, k).map(|_| ()),
    ),
    (
        "input_and_output_suppressed_under_default_privacy_posture",
        |run, k| {
            each_observation(run, k, "input / output suppressed", |o| {
                o.input.is_none() && o.output.is_none()
            })
        },
    ),
    (
        "input_and_output_populated_when_payload_flag_disabled",
        |run, k| {
            each_observation(run, k, "input / output populated", |o| {
                o.input.is_some() && o.output.is_some()
            })
        },
    ),
    (
        "request_side_input_populated_when_payload_flag_disabled",
        |run, k| each_observation(run, k, "input populated", |o| o.input.is_some()),
    ),
    (
        "usage_details_input_omitted_when_no_usage_record",
        |run, k| {
            each_observation(run, k, "no usageDetails.input", |o| {
                o.usage_details
                    .as_ref()
                    .is_some_and(|d| !d.contains_key("input"))
            })
        },
    ),
    ("usage_details_empty_when_no_usage_record", |run, k| {
        each_observation(run, k, "empty usageDetails", |o| {
            o.usage_details
                .as_ref()
                .is_some_and(serde_json::Map::is_empty)
        })
    }),
    (
        "failure_observation_carries_no_output",
        no_output_on_failure,
    ),
    ("no_output_even_with_payload_flag_off", no_output_on_failure),
    (
        "embedding_failure_renders_error_level",
        error_level_with_category,
    ),
    (
        "rerank_failure_renders_error_level",
        error_level_with_category,
    ),
    (
        "error_category_is_status_message",
        error_level_with_category,
    ),
    (
        "error_level_and_status_message_unchanged_by_payload_flag",
        error_level_with_category,
    ),
    (
        "error_category_still_from_status",
        error_level_with_category,
    ),
    ("error_type_and_message_in_metadata", |run, k| {
        each_observation(run, k, "error metadata", |o| {
            meta_is(o, "error_type", None) && meta_is(o, "error_message", None)
        })
    }),
    ("error_type_asserted_literally_from_raises", |run, k| {
        let want = raises(run, k, "error_type");
        each_observation(run, k, "literal error_type", |o| {
            want.is_some() && meta_is(o, "error_type", want.as_ref())
        })
    }),
    ("error_message_asserted_literally_from_raises", |run, k| {
        let want = raises(run, k, "message");
        each_observation(run, k, "literal error_message", |o| {
            want.is_some() && meta_is(o, "error_message", want.as_ref())
        })
    }),
    ("embedding_records_input_token_only", |run, k| {
        tokens(run, k, true)
    }),
    ("no_output_token_observation_for_embedding", |run, k| {
        tokens(run, k, true)
    }),
    ("rerank_records_input_token_when_reported", |run, k| {
        tokens(run, k, true)
    }),
    ("no_token_usage_observation_when_usage_absent", |run, k| {
        tokens(run, k, false)
    }),
    (
        "no_token_usage_observation_when_search_units_only",
        |run, k| tokens(run, k, false),
    ),
    ("no_token_usage_observation_on_failure", |run, k| {
        tokens(run, k, false)
    }),
    ("duration_recorded_when_usage_absent", |run, k| {
        duration(run, k, false)
    }),
    ("duration_recorded_for_rerank", |run, k| {
        duration(run, k, false)
    }),
    ("rerank_operation_dimension_is_rerank", |run, k| {
        duration(run, k, false)
    }),
    (
        "errored_embedding_records_duration_with_error_type",
        |run, k| duration(run, k, true),
    ),
    (
        "errored_rerank_records_duration_with_error_type",
        |run, k| duration(run, k, true),
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// The verdict of a retrieval invariant; `None` for a name this module does not own
/// (or a run without retrieval events).
pub(crate) fn check(name: &str, v: &Value, run: &Run<'_>) -> Option<Verdict> {
    let k = kind(run)?;
    let verdict = lookup(TABLE, name)?;
    Some(truthy(v).and(verdict(run, k)))
}
