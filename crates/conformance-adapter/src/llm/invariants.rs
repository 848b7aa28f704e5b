//! Spec: conformance-adapter §5.9 — the llm-provider invariant registry.
//!
//! Every name a fixture uses maps to a check over the call's outcome (the result,
//! the per-attempt signal, the requests the mock received, the recorded backoff
//! sleeps, the reask builder's outputs). An unknown name fails the case
//! (`fixture_directive_unknown`), and so does any value other than `true`.
//!
//! Names that speak of spans (`n_attempts_emit_n_llm_spans`, ...) are checked on the
//! exported `openarmature.llm.complete` spans (register L3).

use openarmature_llm::{RetryReason, RuntimeConfig};
use serde_json::Value;

use super::{AttemptInfo, CallRun, CallSpec};
use crate::failure::{ensure, Check, Failure};
use crate::matchers::json_eq;
use crate::table::{lookup, names, Table};
use crate::yaml::Y;

type CheckFn = fn(&Ctx<'_>) -> Check;

/// What a check sees.
struct Ctx<'a> {
    run: &'a CallRun,
    spec: &'a CallSpec<'a>,
    expected_spans: Option<usize>,
}

impl Ctx<'_> {
    fn attempts(&self) -> &[AttemptInfo] {
        &self.run.attempts
    }

    fn ok(&self) -> Check {
        match &self.run.result {
            Ok(_) => Ok(()),
            Err(e) => Err(format!("the call raised {}: {e}", e.category().as_str()).into()),
        }
    }

    fn raised(&self, category: &str) -> Check {
        match &self.run.result {
            Err(e) if e.category().as_str() == category => Ok(()),
            Err(e) => Err(format!("raised {} instead of {category}", e.category().as_str()).into()),
            Ok(_) => Err(format!("expected {category}, the call succeeded").into()),
        }
    }

    fn no_request(&self) -> Check {
        if self.run.requests.is_empty() {
            Ok(())
        } else {
            Err(format!("{} request(s) were sent", self.run.requests.len()).into())
        }
    }

    fn last_body(&self) -> Check<&Value> {
        Ok(self
            .run
            .bodies()
            .last()
            .copied()
            .ok_or_else(|| "no request was sent".to_owned())?)
    }

    fn extras(&self, key: &str) -> Option<&Value> {
        self.run.caller_config.extras.get(key)
    }

    fn served_usage(&self) -> Option<&Value> {
        self.run
            .requests
            .last()
            .and_then(|r| r.served.as_ref())
            .and_then(|b| b.get("usage"))
    }
}

fn all<T>(items: &[T], pred: impl Fn(&T) -> bool) -> bool {
    items.iter().all(pred)
}

/// The sampling fields a config puts on the wire (OpenAI names).
fn wire_sampling(config: &RuntimeConfig) -> serde_json::Map<String, Value> {
    let mut params = config.declared_params();
    if let Some(stop) = params.remove("stop_sequences") {
        params.insert("stop".into(), stop);
    }
    params
}

fn sampling_matches(body: &Value, config: &RuntimeConfig) -> Check {
    for (key, want) in wire_sampling(config) {
        let got = body.get(&key).unwrap_or(&Value::Null);
        if !json_eq(got, &want) {
            return Err(format!("wire {key} is {got}, the attempt's config says {want}").into());
        }
    }
    Ok(())
}

fn effective_config(ctx: &Ctx<'_>, attempt: usize) -> RuntimeConfig {
    let base = &ctx.run.caller_config;
    let schedule = ctx
        .run
        .retry
        .as_ref()
        .map(|r| r.schedule.as_slice())
        .unwrap_or_default();
    if attempt == 0 || schedule.is_empty() {
        return base.clone();
    }
    let entry = schedule.get(attempt - 1).or_else(|| schedule.last());
    entry.map_or_else(|| base.clone(), |o| base.overlay(o))
}

fn messages_of(body: &Value) -> Vec<Value> {
    body.get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

// ---- the checks ------------------------------------------------------------------

fn n_attempts_emit_n_llm_spans(ctx: &Ctx<'_>) -> Check {
    let n = ctx.run.spans.len();
    ensure(
        n == ctx.run.requests.len() && n == ctx.attempts().len(),
        || {
            format!(
                "{n} LLM spans for {} requests and {} attempts",
                ctx.run.requests.len(),
                ctx.attempts().len()
            )
        },
    )?;
    // Each span renders its attempt as the provider reported it.
    for (span, attempt) in ctx.run.spans.iter().zip(ctx.attempts()) {
        let finish = span
            .attributes
            .get("openarmature.llm.finish_reason")
            .and_then(Value::as_str);
        ensure(
            span.attempt_index == Some(i64::from(attempt.index))
                && finish == attempt.finish_reason.as_deref(),
            || format!("span {span:?} does not render attempt {attempt:?}"),
        )?;
    }
    match ctx.expected_spans {
        Some(spans) => ensure(spans == n, || {
            format!("{n} attempts, {spans} spans expected")
        }),
        None => Ok(()),
    }
}

fn attempt_indices_distinct(ctx: &Ctx<'_>) -> Check {
    let indices: Vec<Option<i64>> = ctx.run.spans.iter().map(|s| s.attempt_index).collect();
    let ok = !indices.is_empty()
        && indices
            .iter()
            .enumerate()
            .all(|(i, a)| a.is_some_and(|x| usize::try_from(x).is_ok_and(|x| x == i)));
    ensure(ok, || {
        format!("span attempt indices are not 0..n: {indices:?}")
    })
}

fn success_after_transient(ctx: &Ctx<'_>) -> Check {
    ctx.ok()?;
    let failed = &ctx.attempts()[..ctx.attempts().len().saturating_sub(1)];
    ensure(!failed.is_empty(), || "no retry happened".into())?;
    ensure(
        all(failed, |a| {
            a.category.as_deref().is_some_and(|c| {
                [
                    "provider_unavailable",
                    "provider_rate_limit",
                    "provider_model_not_loaded",
                ]
                .contains(&c)
            })
        }),
        || format!("not every failed attempt was transient: {failed:?}"),
    )
}

fn exhaustion_propagates_final_error(ctx: &Ctx<'_>) -> Check {
    let error = ctx.run.error().ok_or("the call succeeded")?;
    let max = ctx.run.retry.as_ref().map_or(1, |r| r.max_attempts);
    let last = ctx.attempts().last().ok_or("no attempt")?;
    ensure(ctx.attempts().len() == max as usize, || {
        format!("{} attempts, budget {max}", ctx.attempts().len())
    })?;
    ensure(
        last.category.as_deref() == Some(error.category().as_str())
            && last.message == error.to_string(),
        || format!("the raised error ({error}) is not the last attempt's ({last:?})"),
    )
}

fn every_attempt_failed(ctx: &Ctx<'_>) -> Check {
    let spans = &ctx.run.spans;
    ensure(
        !spans.is_empty()
            && spans.len() == ctx.attempts().len()
            && all(spans, |s| {
                s.error.is_some()
                    && s.attributes
                        .get("openarmature.error.category")
                        .and_then(Value::as_str)
                        == s.error.as_deref()
            }),
        || format!("not every attempt span carries its error category: {spans:?}"),
    )
}

fn exactly_one_attempt_span(ctx: &Ctx<'_>) -> Check {
    exactly_one_attempt(ctx)?;
    ensure(ctx.run.spans.len() == 1, || {
        format!("{} LLM spans", ctx.run.spans.len())
    })
}

fn exactly_one_attempt(ctx: &Ctx<'_>) -> Check {
    ensure(
        ctx.attempts().len() == 1 && ctx.run.requests.len() == 1,
        || {
            format!(
                "{} attempts, {} requests",
                ctx.attempts().len(),
                ctx.run.requests.len()
            )
        },
    )
}

fn non_transient_first_occurrence(ctx: &Ctx<'_>) -> Check {
    let error = ctx.run.error().ok_or("the call succeeded")?;
    ensure(!error.is_transient(), || {
        format!("{} is transient", error.category())
    })?;
    exactly_one_attempt(ctx)
}

fn no_backoff_sleep(ctx: &Ctx<'_>) -> Check {
    ensure(ctx.run.sleeps.is_empty(), || {
        format!("slept {:?}", ctx.run.sleeps)
    })
}

fn base_attempt_uses_caller_config(ctx: &Ctx<'_>) -> Check {
    let first = ctx
        .run
        .bodies()
        .first()
        .copied()
        .ok_or("no request was sent")?;
    sampling_matches(first, &ctx.run.caller_config)
}

fn override_applies_to_retries_only(ctx: &Ctx<'_>) -> Check {
    for (i, body) in ctx.run.bodies().iter().enumerate() {
        sampling_matches(body, &effective_config(ctx, i))
            .map_err(|m| m.context(format!("attempt {i}: ")))?;
    }
    Ok(())
}

fn caller_config_unmutated(ctx: &Ctx<'_>) -> Check {
    ensure(ctx.run.caller_config == ctx.run.caller_config_after, || {
        "the caller's config changed".into()
    })
}

fn caller_messages_unmutated(ctx: &Ctx<'_>) -> Check {
    ensure(
        ctx.run.caller_messages.is_some()
            && ctx.run.caller_messages == ctx.run.caller_messages_after,
        || "the caller's messages changed".into(),
    )
}

fn reask_makes_soi_retryable(ctx: &Ctx<'_>) -> Check {
    let found = ctx.attempts().windows(2).any(|w| {
        w[0].category.as_deref() == Some("structured_output_invalid")
            && w[1].reason == Some(RetryReason::Reask)
    });
    ensure(found, || {
        format!(
            "no structured_output_invalid was reasked: {:?}",
            ctx.attempts()
        )
    })
}

/// For each reask attempt: the pair appended last, checked against the previous
/// attempt's output and the builder's corresponding output.
fn reask_pairs(ctx: &Ctx<'_>, check_user: bool) -> Check {
    let bodies = ctx.run.bodies();
    let mut correction = ctx.run.corrections.iter();
    let mut seen = 0;
    for (i, attempt) in ctx.attempts().iter().enumerate() {
        if attempt.reason != Some(RetryReason::Reask) {
            continue;
        }
        seen += 1;
        let previous = i
            .checked_sub(1)
            .and_then(|p| ctx.attempts().get(p))
            .ok_or("reask on attempt 0")?;
        let messages = messages_of(bodies.get(i).ok_or("missing request")?);
        let n = messages.len();
        let (Some(assistant), Some(user)) = (
            n.checked_sub(2).and_then(|k| messages.get(k)),
            messages.last(),
        ) else {
            return Err(format!("attempt {i}: fewer than two messages").into());
        };
        let output = previous
            .output_content
            .as_deref()
            .ok_or("the reasked attempt carried no output")?;
        ensure(
            assistant.get("role") == Some(&Value::from("assistant"))
                && assistant.get("content") == Some(&Value::from(output)),
            || {
                format!("attempt {i}: appended assistant message {assistant} is not the output {output:?}")
            },
        )?;
        if check_user {
            let built = correction
                .next()
                .ok_or("the builder produced fewer corrections than reasks")?;
            ensure(
                user.get("role") == Some(&Value::from("user"))
                    && user.get("content") == Some(&Value::from(built.as_str())),
                || {
                    format!(
                        "attempt {i}: appended user message {user} is not the builder's {built:?}"
                    )
                },
            )?;
        }
    }
    ensure(seen > 0, || "no reask attempt".into())
}

fn appended_assistant_exact(ctx: &Ctx<'_>) -> Check {
    reask_pairs(ctx, false)
}

fn appended_user_exact(ctx: &Ctx<'_>) -> Check {
    reask_pairs(ctx, true)?;
    ensure(
        ctx.run.corrections.len()
            == ctx
                .attempts()
                .iter()
                .filter(|a| a.reason == Some(RetryReason::Reask))
                .count(),
        || "the builder ran more often than reasks happened (e.g. on the terminal attempt)".into(),
    )
}

fn reask_exhausts_budget(ctx: &Ctx<'_>) -> Check {
    ctx.raised("structured_output_invalid")?;
    let max = ctx.run.retry.as_ref().map_or(1, |r| r.max_attempts) as usize;
    ensure(ctx.attempts().len() == max, || {
        format!("{} attempts, budget {max}", ctx.attempts().len())
    })?;
    ensure(
        all(ctx.attempts(), |a| {
            a.category.as_deref() == Some("structured_output_invalid")
        }),
        || format!("{:?}", ctx.attempts()),
    )?;
    ensure(ctx.run.corrections.len() == max - 1, || {
        format!(
            "the builder ran {} times for {max} attempts",
            ctx.run.corrections.len()
        )
    })
}

fn final_soi_propagates(ctx: &Ctx<'_>) -> Check {
    ctx.raised("structured_output_invalid")?;
    let error = ctx
        .run
        .error()
        .and_then(|e| e.structured_output())
        .ok_or("no surface")?;
    let last = ctx.attempts().last().ok_or("no attempt")?;
    ensure(
        last.output_content.as_deref() == Some(error.output_content.as_str()),
        || "the raised error is not the last attempt's".into(),
    )
}

fn soi_not_retried_without_reask(ctx: &Ctx<'_>) -> Check {
    ctx.raised("structured_output_invalid")?;
    ensure(!ctx.run.retry.as_ref().is_some_and(|r| r.reask), || {
        "a reask builder was set".into()
    })?;
    exactly_one_attempt(ctx)
}

fn second_mock_never_consumed(ctx: &Ctx<'_>) -> Check {
    ensure(ctx.run.consumed == 1 && ctx.run.scripted >= 2, || {
        format!(
            "{} of {} scripted responses consumed",
            ctx.run.consumed, ctx.run.scripted
        )
    })
}

fn override_and_reask_compose(ctx: &Ctx<'_>) -> Check {
    let bodies = ctx.run.bodies();
    let mut any = false;
    for (i, a) in ctx.attempts().iter().enumerate() {
        if a.reason != Some(RetryReason::Reask) {
            continue;
        }
        any = true;
        let body = bodies.get(i).ok_or("missing request")?;
        sampling_matches(body, &effective_config(ctx, i))
            .map_err(|m| m.context(format!("attempt {i}: ")))?;
        let prev = bodies.get(i - 1).ok_or("missing request")?;
        ensure(
            messages_of(body).len() == messages_of(prev).len() + 2,
            || format!("attempt {i} did not append a pair"),
        )?;
    }
    ensure(any, || "no reask attempt".into())
}

fn transcript_accumulates(ctx: &Ctx<'_>) -> Check {
    let bodies = ctx.run.bodies();
    let mut reasks = 0;
    for (i, a) in ctx.attempts().iter().enumerate() {
        if a.reason != Some(RetryReason::Reask) {
            continue;
        }
        reasks += 1;
        let now = messages_of(bodies.get(i).ok_or("missing request")?);
        let prev = messages_of(bodies.get(i - 1).ok_or("missing request")?);
        ensure(
            now.len() == prev.len() + 2 && now.starts_with(&prev),
            || {
                format!(
                    "attempt {i}'s transcript does not extend attempt {}'s by one pair",
                    i - 1
                )
            },
        )?;
    }
    ensure(reasks >= 2, || {
        format!("{reasks} reask(s): accumulation needs at least two")
    })
}

fn transient_carries_transcript(ctx: &Ctx<'_>) -> Check {
    let bodies = ctx.run.bodies();
    let mut any = false;
    for (i, a) in ctx.attempts().iter().enumerate() {
        if a.reason != Some(RetryReason::Transient) {
            continue;
        }
        any = true;
        let now = messages_of(bodies.get(i).ok_or("missing request")?);
        let prev = messages_of(bodies.get(i - 1).ok_or("missing request")?);
        ensure(now == prev, || {
            format!("transient attempt {i} changed the transcript")
        })?;
        let first = bodies.first().map_or(0, |b| messages_of(b).len());
        ensure(now.len() > first, || {
            format!("transient attempt {i} carries no reask pair")
        })?;
    }
    ensure(any, || "no transient retry".into())
}

fn reasons_discriminate(ctx: &Ctx<'_>) -> Check {
    let reasons: Vec<_> = ctx.attempts().iter().map(|a| a.reason).collect();
    ensure(
        reasons.first() == Some(&None)
            && reasons.contains(&Some(RetryReason::Reask))
            && reasons.contains(&Some(RetryReason::Transient)),
        || format!("retry reasons {reasons:?}"),
    )
}

fn raw_usage_verbatim(ctx: &Ctx<'_>) -> Check {
    let response = ctx.run.response().ok_or("no response")?;
    let served = ctx.served_usage().ok_or("the mock served no usage")?;
    let raw = response.raw.get("usage").ok_or("raw has no usage")?;
    ensure(raw == served, || {
        format!("raw.usage {raw} differs from the wire {served}")
    })
}

fn rejected_pre_send(ctx: &Ctx<'_>) -> Check {
    ctx.raised("provider_invalid_request")?;
    ctx.no_request()
}

fn extras_rides_untouched(ctx: &Ctx<'_>, key: &str) -> Check {
    ctx.ok()?;
    let want = ctx.extras(key).ok_or("the call has no such extra")?;
    let got = ctx.last_body()?.get(key).ok_or("not on the wire")?;
    ensure(got == want, || format!("wire {key} {got} != extras {want}"))
}

fn no_request_with(ctx: &Ctx<'_>, key: &str, want: fn(&Ctx<'_>) -> Option<Value>) -> Check {
    let want = want(ctx);
    for body in ctx.run.bodies() {
        ensure(body.get(key) == want.as_ref(), || {
            format!("a request carried {key} {:?}", body.get(key))
        })?;
    }
    Ok(())
}

fn declared_temperature(ctx: &Ctx<'_>) -> Option<Value> {
    ctx.run
        .caller_config
        .declared_params()
        .get("temperature")
        .cloned()
}

fn wire_temperature_declared_once(ctx: &Ctx<'_>) -> Check {
    ctx.ok()?;
    let want = declared_temperature(ctx).ok_or("no declared temperature")?;
    let body = ctx.last_body()?;
    ensure(
        body.get("temperature").is_some_and(|t| json_eq(t, &want)),
        || format!("wire temperature {:?}", body.get("temperature")),
    )?;
    let raw = ctx
        .run
        .requests
        .last()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .unwrap_or_default();
    ensure(raw.matches("\"temperature\"").count() == 1, || {
        "temperature appears more than once".into()
    })
}

fn declared_stop(ctx: &Ctx<'_>) -> Vec<Value> {
    ctx.run
        .caller_config
        .stop_sequences
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(Value::from)
        .collect()
}

/// The realized stop list under the mapping's key (`stop`, `stop_sequences`,
/// `stopSequences`), at the body root or under §8.3's `generationConfig`.
fn wire_stop(ctx: &Ctx<'_>) -> Check<Vec<Value>> {
    ctx.ok()?;
    let mapping = ctx.run.mapping;
    let key = mapping.stop_key();
    Ok(mapping
        .stop_holder(ctx.last_body()?)
        .and_then(|h| h.get(key))
        .and_then(Value::as_array)
        .cloned()
        .ok_or_else(|| format!("no {key} list on the wire"))?)
}

/// The caller's extras value for the mapping's stop key.
fn extras_stop<'a>(ctx: &'a Ctx<'_>) -> Option<&'a Value> {
    ctx.extras(ctx.run.mapping.stop_key())
}

fn stop_merged_union(ctx: &Ctx<'_>) -> Check {
    let mut want = declared_stop(ctx);
    let extra: Vec<Value> = match extras_stop(ctx) {
        // Only §8.1 coerces a scalar string; the other stop fields are array-only.
        Some(Value::String(s)) if ctx.run.mapping.coerces_scalar_stop() => {
            vec![Value::from(s.as_str())]
        }
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    for v in extra {
        if !want.contains(&v) {
            want.push(v);
        }
    }
    let got = wire_stop(ctx)?;
    ensure(got == want, || format!("wire stop {got:?}, union {want:?}"))
}

fn stop_declared_first(ctx: &Ctx<'_>) -> Check {
    let got = wire_stop(ctx)?;
    let declared = declared_stop(ctx);
    ensure(got.starts_with(&declared), || {
        format!("wire stop {got:?} does not start with {declared:?}")
    })
}

fn stop_single(ctx: &Ctx<'_>) -> Check {
    let got = wire_stop(ctx)?;
    ensure(got.len() == 1, || format!("wire stop {got:?}"))
}

fn stop_scalar_coerced(ctx: &Ctx<'_>) -> Check {
    let Some(Value::String(s)) = extras_stop(ctx) else {
        return Err("the extras stop is not a string".into());
    };
    let got = wire_stop(ctx)?;
    ensure(got.contains(&Value::from(s.as_str())), || {
        format!("wire stop {got:?} lacks {s:?}")
    })
}

fn stop_declared_only(ctx: &Ctx<'_>) -> Check {
    let got = wire_stop(ctx)?;
    let declared = declared_stop(ctx);
    ensure(got == declared, || {
        format!("wire stop {got:?}, declared {declared:?}")
    })
}

fn malformed_not_salvaged(ctx: &Ctx<'_>) -> Check {
    let got = wire_stop(ctx)?;
    let declared = declared_stop(ctx);
    let extras: Vec<&Value> = match extras_stop(ctx) {
        Some(Value::Array(a)) => a.iter().collect(),
        _ => Vec::new(),
    };
    ensure(
        extras
            .iter()
            .all(|v| declared.contains(v) || !got.contains(v)),
        || format!("wire stop {got:?} salvaged part of {extras:?}"),
    )
}

/// An array-only stop field: the wire value is a list, and a string extras value
/// was not coerced into it.
fn stop_not_coerced(ctx: &Ctx<'_>) -> Check {
    let got = wire_stop(ctx)?;
    match extras_stop(ctx) {
        Some(s @ Value::String(_)) => ensure(!got.contains(s), || {
            format!("wire {got:?} took the string extras {s}")
        }),
        _ => Ok(()),
    }
}

fn no_error(ctx: &Ctx<'_>) -> Check {
    ctx.ok()
}

fn no_request_issued(ctx: &Ctx<'_>) -> Check {
    ctx.no_request()
}

fn no_stream_key_on_wire(ctx: &Ctx<'_>) -> Check {
    ctx.ok()?;
    ensure(ctx.last_body()?.get("stream").is_none(), || {
        "stream is on the wire".into()
    })
}

fn stream_not_smuggled(ctx: &Ctx<'_>) -> Check {
    no_request_with(ctx, "stream", |_| None)
}

fn bound_model_kept(ctx: &Ctx<'_>) -> Check {
    no_request_with(ctx, "model", |ctx| {
        Some(Value::from(ctx.run.bound_model.as_str()))
    })
}

fn declared_temperature_kept(ctx: &Ctx<'_>) -> Check {
    no_request_with(ctx, "temperature", declared_temperature)
}

fn response_format_rides(ctx: &Ctx<'_>) -> Check {
    extras_rides_untouched(ctx, "response_format")
}

fn stream_options_rides(ctx: &Ctx<'_>) -> Check {
    extras_rides_untouched(ctx, "stream_options")
}

/// The llm-provider `invariants` this module checks (the streaming ones are
/// [`super::stream_checks::TABLE`]).
const TABLE: &Table<CheckFn> = &[
    ("n_attempts_emit_n_llm_spans", n_attempts_emit_n_llm_spans),
    (
        "attempt_index_attribute_distinct_per_span",
        attempt_indices_distinct,
    ),
    (
        "call_returns_successful_response_after_transient_retry",
        success_after_transient,
    ),
    (
        "exhaustion_propagates_final_error",
        exhaustion_propagates_final_error,
    ),
    (
        "every_attempt_span_carries_error_category",
        every_attempt_failed,
    ),
    (
        "non_transient_exits_retry_loop_on_first_occurrence",
        non_transient_first_occurrence,
    ),
    (
        "exactly_one_attempt_span_for_non_transient",
        exactly_one_attempt_span,
    ),
    ("exactly_one_attempt_issued", exactly_one_attempt),
    ("no_backoff_sleep_invoked", no_backoff_sleep),
    (
        "base_attempt_uses_caller_config",
        base_attempt_uses_caller_config,
    ),
    (
        "per_attempt_override_applies_to_retries_only",
        override_applies_to_retries_only,
    ),
    ("caller_config_unmutated", caller_config_unmutated),
    ("caller_messages_unmutated", caller_messages_unmutated),
    (
        "reask_makes_structured_output_invalid_retryable",
        reask_makes_soi_retryable,
    ),
    (
        "appended_assistant_message_is_exactly_model_output",
        appended_assistant_exact,
    ),
    (
        "appended_user_correction_is_exactly_builder_output",
        appended_user_exact,
    ),
    ("reask_exhausts_max_attempts_budget", reask_exhausts_budget),
    (
        "final_structured_output_invalid_propagates",
        final_soi_propagates,
    ),
    (
        "structured_output_invalid_not_retried_without_reask",
        soi_not_retried_without_reask,
    ),
    (
        "second_mock_response_never_consumed",
        second_mock_never_consumed,
    ),
    (
        "override_and_reask_compose_on_reask_retries",
        override_and_reask_compose,
    ),
    (
        "reask_transcript_accumulates_across_retries",
        transcript_accumulates,
    ),
    (
        "transient_retry_carries_accumulated_reask_transcript",
        transient_carries_transcript,
    ),
    (
        "retry_reason_discriminates_reask_vs_transient_in_one_loop",
        reasons_discriminate,
    ),
    (
        "raw_usage_prompt_tokens_verbatim_malformed",
        raw_usage_verbatim,
    ),
    (
        "raw_usage_input_tokens_verbatim_malformed",
        raw_usage_verbatim,
    ),
    (
        "raw_usage_all_counters_verbatim_malformed",
        raw_usage_verbatim,
    ),
    (
        "conditionally_managed_response_format_conflict_rejected_pre_send",
        rejected_pre_send,
    ),
    (
        "extras_response_format_neither_dropped_nor_forwarded",
        rejected_pre_send,
    ),
    (
        "managed_structural_model_conflict_rejected_pre_send",
        rejected_pre_send,
    ),
    (
        "extras_model_neither_dropped_nor_forwarded",
        rejected_pre_send,
    ),
    (
        "declared_scalar_temperature_conflict_rejected_pre_send",
        rejected_pre_send,
    ),
    (
        "extras_temperature_neither_dropped_nor_forwarded",
        rejected_pre_send,
    ),
    (
        "unary_call_conflicting_stream_rejected_pre_send",
        rejected_pre_send,
    ),
    (
        "atomic_mapping_extras_stream_conflict_rejected_pre_send",
        rejected_pre_send,
    ),
    ("stream_always_managed_on_unary_side", rejected_pre_send),
    ("extras_stream_not_smuggled_to_wire", stream_not_smuggled),
    ("no_request_issued", no_request_issued),
    (
        "no_schema_response_format_unmanaged_rides_untouched",
        response_format_rides,
    ),
    (
        "extras_response_format_on_wire_when_unmanaged",
        response_format_rides,
    ),
    ("bound_model_not_silently_overridden", bound_model_kept),
    (
        "declared_temperature_not_silently_overridden",
        declared_temperature_kept,
    ),
    (
        "matching_extras_temperature_no_op",
        wire_temperature_declared_once,
    ),
    (
        "wire_temperature_is_declared_value_once",
        wire_temperature_declared_once,
    ),
    ("wire_stop_is_merged_union", stop_merged_union),
    ("wire_stop_sequences_is_merged_union", stop_merged_union),
    (
        "wire_stopSequences_merged_under_generationConfig",
        stop_merged_union,
    ),
    ("declared_stop_first_in_merge_order", stop_declared_first),
    ("declared_first_in_merge_order", stop_declared_first),
    ("matching_stop_collapses_to_single_element", stop_single),
    (
        "matching_stop_sequences_collapses_to_single_element",
        stop_single,
    ),
    (
        "matching_stopSequences_collapses_to_single_element",
        stop_single,
    ),
    ("no_scalar_string_coercion_on_anthropic", stop_not_coerced),
    (
        "scalar_string_extras_stop_coerced_to_list",
        stop_scalar_coerced,
    ),
    (
        "malformed_extras_stop_treated_as_absent",
        stop_declared_only,
    ),
    ("wire_stop_is_declared_value_only", stop_declared_only),
    ("malformed_list_not_salvaged", malformed_not_salvaged),
    ("no_error_raised_on_malformed_extras", no_error),
    ("matching_extras_stream_no_op", no_stream_key_on_wire),
    ("matching_extras_stream_false_no_op", no_stream_key_on_wire),
    ("wire_carries_no_stream_key", no_stream_key_on_wire),
    (
        "non_streaming_stream_options_unmanaged_rides_untouched",
        stream_options_rides,
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// A name's check: over the whole call context, or a streaming check over the run.
#[derive(Clone, Copy)]
enum Found {
    Call(CheckFn),
    Stream(super::stream_checks::CheckFn),
}

impl Found {
    fn of(name: &str) -> Option<Found> {
        lookup(TABLE, name)
            .map(Found::Call)
            .or_else(|| lookup(super::stream_checks::TABLE, name).map(Found::Stream))
    }

    fn run(self, ctx: &Ctx<'_>) -> Check {
        match self {
            Found::Call(f) => f(ctx),
            Found::Stream(f) => f(ctx.run),
        }
    }
}

/// Runs every invariant of an `invariants` block.
pub(crate) fn check(block: &Y<'_>, spec: &CallSpec<'_>, run: &CallRun) -> Check {
    let expected_spans = spec
        .get("expected")
        .and_then(|e| e.get("llm_spans"))
        .and_then(|s| s.seq().ok())
        .map(|s| s.len());
    let ctx = Ctx {
        run,
        spec,
        expected_spans,
    };
    let _ = ctx.spec;
    for (name, value) in block.entries()? {
        let check = Found::of(&name).ok_or_else(|| {
            Failure::unsupported(format!(
                "fixture_directive_unknown: {}: invariant `{name}` has no check in the llm-provider registry",
                block.file.display()
            ))
        })?;
        if value.bool().ok() != Some(true) {
            return Err(format!("invariant `{name}`: only `true` is supported").into());
        }
        check
            .run(&ctx)
            .map_err(|m| m.context(format!("invariant `{name}`: ")))?;
    }
    Ok(())
}
