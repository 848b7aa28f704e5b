//! Spec: conformance-adapter §5.9 — the named invariants of the observability §11 /
//! §5.5.15 metric fixtures (088–091, 125–131, 145–147), checked against the captured
//! metric points, the implicit recorder's typed LLM events and the LLM spans.
//!
//! Every absence predicate first requires the situation it is about to exist (an LLM
//! call, a failure, a declared budget, a null counter, an LLM span), so none passes
//! vacuously. Expected budget observations are derived here from the events'
//! declared budget and usage, independently of the observer.

use openarmature_core::vocab::llm::{LlmAttemptOutcome, LlmResponseSummary, LlmUsage};
use openarmature_core::vocab::prompt::TokenBudget;
use openarmature_graph::ObserverEvent;
use openarmature_observability::attributes as a;
use serde_json::Value;

use super::metrics::{close, Point};
use super::spans::attr;
use super::Run;

use super::invariants::truthy;
use crate::failure::{ensure, Check};
use crate::table::{lookup, names, Table};

/// A call's terminal event, reduced to what the budget signal reads.
struct Terminal {
    budget: Option<TokenBudget>,
    usage: Option<LlmUsage>,
}

fn terminals(run: &Run<'_>) -> Vec<Terminal> {
    run.events
        .iter()
        .filter_map(|e| match &**e {
            ObserverEvent::LlmCompletion(c) => Some(Terminal {
                budget: c.request.token_budget(),
                usage: Some(c.response.usage),
            }),
            ObserverEvent::LlmFailed(f) => Some(Terminal {
                budget: f.request.token_budget(),
                usage: f.response.as_ref().map(|r| r.usage),
            }),
            _ => None,
        })
        .collect()
}

/// Every wire attempt's response (`None` for an attempt that received none).
fn attempts<'r>(run: &'r Run<'_>) -> Vec<Option<&'r LlmResponseSummary>> {
    run.events
        .iter()
        .filter_map(|e| match &**e {
            ObserverEvent::LlmAttempt(at) => Some(match &at.outcome {
                LlmAttemptOutcome::Completed(r) => Some(&**r),
                LlmAttemptOutcome::Failed { response, .. } => response.as_ref(),
                _ => None,
            }),
            _ => None,
        })
        .collect()
}

/// The error categories of the failed attempts.
fn failed_attempt_categories(run: &Run<'_>) -> Vec<String> {
    run.events
        .iter()
        .filter_map(|e| match &**e {
            ObserverEvent::LlmAttempt(at) => match &at.outcome {
                LlmAttemptOutcome::Failed { failure, .. } => Some(failure.error_category.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn of<'p>(run: &'p Run<'_>, instrument: &str) -> Vec<&'p Point> {
    run.metrics
        .iter()
        .filter(|p| p.instrument == instrument)
        .collect()
}

fn count(points: &[&Point]) -> u64 {
    points.iter().map(|p| p.count).sum()
}

fn tokens<'p>(run: &'p Run<'_>, kind: &str) -> Vec<&'p Point> {
    of(run, a::METRIC_TOKEN_USAGE)
        .into_iter()
        .filter(|p| p.dim(a::METRIC_TOKEN_TYPE) == Some(kind))
        .collect()
}

fn budget_points<'p>(run: &'p Run<'_>, kind: Option<&str>) -> Vec<&'p Point> {
    run.metrics
        .iter()
        .filter(|p| {
            (p.instrument == a::METRIC_TOKEN_BUDGET_UTILIZATION
                || p.instrument == a::METRIC_TOKEN_BUDGET_EXCEEDED)
                && kind.is_none_or(|k| p.dim(a::METRIC_TOKEN_BUDGET_KIND) == Some(k))
        })
        .collect()
}

/// §5.5.15 evaluation of one bound, computed here: `(actual, max)` when declared and
/// its counter reported.
fn bound(t: &Terminal, kind: &str) -> Option<(u64, u64)> {
    let (budget, usage) = (t.budget?, t.usage?);
    match kind {
        "input" => budget
            .input_max_tokens
            .zip(usage.prompt_tokens)
            .map(|(m, a)| (a, m)),
        _ => {
            let total = usage.total_tokens.or_else(|| {
                usage
                    .prompt_tokens
                    .zip(usage.completion_tokens)
                    .map(|(p, c)| p + c)
            });
            budget.total_max_tokens.zip(total).map(|(m, a)| (a, m))
        }
    }
}

/// The budget points of `kind` hold exactly the expected ratios and breach count.
fn budget_kind_matches(run: &Run<'_>, kind: &str) -> Check<usize> {
    let bounds: Vec<(u64, u64)> = terminals(run)
        .iter()
        .filter_map(|t| bound(t, kind))
        .collect();
    let ratios: Vec<f64> = bounds
        .iter()
        .filter(|(_, m)| *m > 0)
        .map(|(a, m)| *a as f64 / *m as f64)
        .collect();
    let breaches = bounds.iter().filter(|(a, m)| a > m).count() as f64;
    let by_kind = |inst| -> Vec<&Point> {
        of(run, inst)
            .into_iter()
            .filter(|p| p.dim(a::METRIC_TOKEN_BUDGET_KIND) == Some(kind))
            .collect()
    };
    let util = by_kind(a::METRIC_TOKEN_BUDGET_UTILIZATION);
    let util_sum: f64 = util.iter().map(|p| p.value).sum();
    ensure(
        count(&util) == ratios.len() as u64 && close(util_sum, ratios.iter().sum()),
        || format!("`{kind}` utilization {util:?}, expected ratios {ratios:?}"),
    )?;
    let exceeded = by_kind(a::METRIC_TOKEN_BUDGET_EXCEEDED);
    let got: f64 = exceeded.iter().map(|p| p.value).sum();
    ensure(close(got, breaches), || {
        format!("`{kind}` exceeded count {got}, expected {breaches}")
    })?;
    Ok(bounds.len())
}

fn llm_spans_lack(run: &Run<'_>, keys: &[&str]) -> Check {
    let spans = run.llm_spans();
    ensure(!spans.is_empty(), || "no LLM span".into())?;
    for s in spans {
        for k in keys {
            if let Some(v) = attr(s, k) {
                return Err(format!("LLM span carries `{k}` ({v})").into());
            }
        }
    }
    Ok(())
}

fn some_null_prompt(run: &Run<'_>) -> Check {
    ensure(
        attempts(run)
            .iter()
            .any(|r| r.is_some_and(|r| r.usage.prompt_tokens.is_none())),
        || "no response with a null prompt_tokens".into(),
    )
}

fn no_input_tokens(run: &Run<'_>) -> Check {
    some_null_prompt(run)?;
    let want = attempts(run)
        .iter()
        .filter(|r| r.is_some_and(|r| r.usage.prompt_tokens.is_some()))
        .count() as u64;
    let got = count(&tokens(run, "input"));
    ensure(got == want, || {
        format!("{got} input observations, expected {want}")
    })
}

fn input_bound_skipped(run: &Run<'_>) -> Check {
    let ts = terminals(run);
    ensure(
        ts.iter().any(|t| {
            t.budget.is_some_and(|b| b.input_max_tokens.is_some())
                && t.usage.is_some_and(|u| u.prompt_tokens.is_none())
        }),
        || "no call with an input bound and a null prompt_tokens".into(),
    )?;
    budget_kind_matches(run, "input").map(|_| ())
}

fn exceeded_signal_absent(run: &Run<'_>) -> Check {
    ensure(terminals(run).iter().any(|t| t.budget.is_some()), || {
        "no budget declared".into()
    })?;
    llm_spans_lack(run, &[a::LLM_TOKEN_BUDGET_EXCEEDED])
}

fn span_omits_input(run: &Run<'_>) -> Check {
    some_null_prompt(run)?;
    llm_spans_lack(
        run,
        &[a::GEN_AI_USAGE_INPUT_TOKENS, a::LLM_USAGE_PROMPT_TOKENS],
    )
}

fn two_token_observations(run: &Run<'_>) -> Check {
    let (i, o) = (count(&tokens(run, "input")), count(&tokens(run, "output")));
    let all = count(&of(run, a::METRIC_TOKEN_USAGE));
    ensure((i, o, all) == (1, 1, 2), || {
        format!("{i} input, {o} output, {all} token observations in all")
    })
}

fn one_duration_per_attempt(run: &Run<'_>) -> Check {
    let n = attempts(run).len();
    let got = count(&of(run, a::METRIC_OPERATION_DURATION));
    ensure(n > 0 && got == n as u64, || {
        format!("{got} duration observations for {n} provider calls")
    })
}

fn duration_error_types(run: &Run<'_>) -> Check {
    let mut want = failed_attempt_categories(run);
    let mut got: Vec<String> = Vec::new();
    for p in of(run, a::METRIC_OPERATION_DURATION) {
        if let Some(c) = p.dim(a::ERROR_TYPE) {
            got.extend(std::iter::repeat_n(c.to_owned(), p.count as usize));
        }
    }
    want.sort();
    got.sort();
    ensure(!want.is_empty() && want == got, || {
        format!("error.type on durations {got:?}, failed attempts {want:?}")
    })
}

fn no_tokens_on_failure(run: &Run<'_>) -> Check {
    let at = attempts(run);
    ensure(!at.is_empty() && at.iter().all(Option::is_none), || {
        "not every attempt failed without a response".into()
    })?;
    let n = count(&of(run, a::METRIC_TOKEN_USAGE));
    ensure(n == 0, || format!("{n} token observations"))
}

fn nothing_recorded(run: &Run<'_>) -> Check {
    ensure(!attempts(run).is_empty(), || "no LLM call was made".into())?;
    ensure(run.metrics.is_empty(), || {
        format!("{} points recorded", run.metrics.len())
    })
}

fn tokens_on_structured_failure(run: &Run<'_>) -> Check {
    let usage = run.events.iter().find_map(|e| match &**e {
        ObserverEvent::LlmFailed(f) if f.failure.error_category == "structured_output_invalid" => {
            f.response.as_ref().map(|r| r.usage)
        }
        _ => None,
    });
    let u = usage.ok_or("no structured_output_invalid failure with usage")?;
    for (kind, want) in [("input", u.prompt_tokens), ("output", u.completion_tokens)] {
        let pts = tokens(run, kind);
        let got: f64 = pts.iter().map(|p| p.value).sum();
        let ok = match want {
            Some(w) => count(&pts) == 1 && close(got, w as f64),
            None => pts.is_empty(),
        };
        ensure(ok, || format!("`{kind}` tokens {pts:?}, expected {want:?}"))?;
    }
    Ok(())
}

fn under_budget(run: &Run<'_>) -> Check {
    let ts = terminals(run);
    let bounds: Vec<(u64, u64)> = ["input", "total"]
        .iter()
        .flat_map(|k| ts.iter().filter_map(|t| bound(t, k)))
        .collect();
    ensure(
        !bounds.is_empty() && bounds.iter().all(|(a, m)| a <= m),
        || format!("bounds {bounds:?} are not all evaluated and under budget"),
    )?;
    budget_kind_matches(run, "input")?;
    budget_kind_matches(run, "total")?;
    let n = of(run, a::METRIC_TOKEN_BUDGET_EXCEEDED).len();
    ensure(n == 0, || format!("{n} exceeded points"))
}

fn no_budget(run: &Run<'_>) -> Check {
    let ts = terminals(run);
    ensure(
        !ts.is_empty() && ts.iter().all(|t| t.budget.is_none()),
        || "a call carried a token budget (or no call ended)".into(),
    )?;
    let n = budget_points(run, None).len();
    ensure(n == 0, || format!("{n} budget points"))
}

fn budget_without_usage(run: &Run<'_>, span_too: bool) -> Check {
    let ts = terminals(run);
    ensure(
        ts.iter().any(|t| t.budget.is_some()) && ts.iter().all(|t| t.usage.is_none()),
        || "no budgeted call ended without usage (or one had usage)".into(),
    )?;
    let n = budget_points(run, None).len();
    ensure(n == 0, || format!("{n} budget points"))?;
    if span_too {
        llm_spans_lack(run, &[a::LLM_TOKEN_BUDGET_EXCEEDED])?;
    }
    Ok(())
}

fn output_tokens(run: &Run<'_>) -> Check {
    let want: Vec<u64> = attempts(run)
        .iter()
        .filter_map(|r| r.and_then(|r| r.usage.completion_tokens))
        .collect();
    let pts = tokens(run, "output");
    let got: f64 = pts.iter().map(|p| p.value).sum();
    ensure(
        !want.is_empty()
            && count(&pts) == want.len() as u64
            && close(got, want.iter().sum::<u64>() as f64),
        || format!("output tokens {pts:?}, expected {want:?}"),
    )
}

fn total_bound_evaluated(run: &Run<'_>) -> Check {
    let n = budget_kind_matches(run, "total")?;
    ensure(n > 0, || "no evaluable total bound".into())
}

fn null_prompt_everywhere(run: &Run<'_>) -> Check {
    span_omits_input(run)?;
    no_input_tokens(run)?;
    input_bound_skipped(run)?;
    exceeded_signal_absent(run)
}

/// The observability `invariants` this module checks (each value must be `true`).
const TABLE: &Table<fn(&Run<'_>) -> Check> = &[
    (
        "two_token_usage_observations_input_and_output",
        two_token_observations,
    ),
    (
        "one_duration_observation_per_call",
        one_duration_per_attempt,
    ),
    ("duration_value_not_asserted", |run| {
        ensure(!of(run, a::METRIC_OPERATION_DURATION).is_empty(), || {
            "no duration observation".into()
        })
    }),
    (
        "errored_call_records_duration_with_error_type",
        duration_error_types,
    ),
    (
        "duration_records_error_type_on_failure",
        duration_error_types,
    ),
    (
        "no_token_usage_observation_on_failure",
        no_tokens_on_failure,
    ),
    (
        "no_measurements_recorded_when_metrics_off",
        nothing_recorded,
    ),
    (
        "token_usage_recorded_on_structured_output_failure",
        tokens_on_structured_failure,
    ),
    (
        "no_token_budget_exceeded_observation_when_under_budget",
        under_budget,
    ),
    ("utilization_records_under_budget", under_budget),
    (
        "no_token_budget_instrument_observations_when_no_budget",
        no_budget,
    ),
    ("token_budget_null_on_completion_event", no_budget),
    (
        "no_token_budget_instrument_observations_without_usage",
        |run| budget_without_usage(run, false),
    ),
    (
        "token_budget_populated_but_not_evaluated_without_usage",
        |run| budget_without_usage(run, true),
    ),
    (
        "no_input_token_usage_observation_when_prompt_tokens_null",
        no_input_tokens,
    ),
    ("no_input_token_usage_observation", no_input_tokens),
    (
        "output_token_usage_observation_recorded_when_completion_sound",
        output_tokens,
    ),
    ("input_bound_not_evaluated_when_prompt_tokens_null", {
        input_bound_skipped
    }),
    (
        "no_input_kind_budget_observation_when_prompt_tokens_null",
        { input_bound_skipped },
    ),
    (
        "no_token_budget_instrument_observation_for_unevaluable_input_bound",
        { input_bound_skipped },
    ),
    (
        "total_bound_evaluated_when_total_tokens_sound",
        total_bound_evaluated,
    ),
    (
        "exceeded_span_signal_absent_not_false_when_only_bound_unevaluable",
        exceeded_signal_absent,
    ),
    (
        "exceeded_span_signal_absent_not_false",
        exceeded_signal_absent,
    ),
    ("span_omits_both_input_usage_attributes", span_omits_input),
    (
        "null_prompt_tokens_reaches_no_span_histogram_or_budget_surface",
        null_prompt_everywhere,
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// The metric invariant `name` (its value must be `true`), or `None` when it is not
/// one of these.
pub(crate) fn check(name: &str, v: &Value, run: &Run<'_>) -> Option<Check> {
    let check = lookup(TABLE, name)?;
    Some(truthy(v).and_then(|()| check(run)))
}
