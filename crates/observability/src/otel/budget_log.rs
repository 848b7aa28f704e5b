//! Spec: observability §5.5.15 / §7 — the WARNING log record of an exceeded token
//! budget (SHOULD): one per call, from the terminal LLM event, naming the prompt, in the
//! calling node's span context. Emitted only when a logger is configured.

use openarmature_core::vocab::llm::{LlmRequestSummary, LlmResponseSummary};
use openarmature_graph::CallSite;
use opentelemetry::logs::Severity;
use opentelemetry::KeyValue;

use super::keys::Key;
use super::logs::LogLine;
use super::state::{cross_cutting, PendingLog};
use crate::attributes as attr;

/// The warning for a call whose reported usage crossed its prompt's declared budget,
/// or `None` (no budget, nothing evaluable, or within budget).
pub(crate) fn budget_warning(
    site: &CallSite,
    request: &LlmRequestSummary,
    response: Option<&LlmResponseSummary>,
    user: &[KeyValue],
) -> Option<PendingLog> {
    let budget = request.token_budget()?;
    let crossed: Vec<String> = budget
        .bounds(&response?.usage)
        .into_iter()
        .filter(|b| b.exceeded())
        .map(|b| format!("{} {} > {}", b.kind.as_str(), b.actual, b.max))
        .collect();
    if crossed.is_empty() {
        return None;
    }
    let mut attributes = cross_cutting(site.correlation_id.as_deref().unwrap_or_default(), user);
    if let Some(p) = request.active_prompt() {
        attributes.push(KeyValue::new(attr::PROMPT_NAME, p.name.clone()));
        attributes.push(KeyValue::new(attr::PROMPT_VERSION, p.version.clone()));
        attributes.push(KeyValue::new(attr::PROMPT_LABEL, p.label.clone()));
    }
    Some(PendingLog {
        unit: Key::of_lineage(&site.lineage),
        attempt: site.lineage.attempt_index,
        record: LogLine {
            time: std::time::SystemTime::now(),
            severity: Severity::Warn,
            body: format!("token budget exceeded: {}", crossed.join(", ")),
            attributes,
        },
    })
}
