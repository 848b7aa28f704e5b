//! Renders a [`Waterfall`] as one self-contained HTML page: inline CSS, no script,
//! no external asset. Every row is an element with `data-*` attributes (kind, node,
//! attempts, reason, status, times, tokens) so tools can read the page back.

use std::fmt::Write as _;
use std::time::Duration;

use super::model::{Row, RowKind, Waterfall, WAIT_RETRY_AFTER};

/// `850 ms`, `1.25 s`, `0.40 ms`.
pub(super) fn duration(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.2} ms", d.as_secs_f64() * 1000.0)
    } else if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}

/// Escapes text for an HTML text node or a double-quoted attribute.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

const STYLE: &str = r#"
:root { --fg:#1d2330; --muted:#667085; --line:#e4e7ec; --node:#5b7fd1; --node-bad:#c8453b;
  --llm:#3f9e6a; --llm-bad:#e0892f; --wait:#9aa3b2; --ra:#8e5bd1; --deg:#c8453b; }
* { box-sizing:border-box; }
body { font:13px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif; color:var(--fg); margin:24px; }
h1 { font-size:20px; margin:0 0 4px; } h2 { font-size:15px; margin:28px 0 8px; }
.sub { color:var(--muted); margin:0 0 16px; }
.cards { display:flex; flex-wrap:wrap; gap:10px; }
.card { border:1px solid var(--line); border-radius:8px; padding:8px 12px; min-width:120px; }
.card b { display:block; font-size:18px; } .card span { color:var(--muted); font-size:12px; }
.legend { display:flex; flex-wrap:wrap; gap:14px; margin:14px 0 6px; color:var(--muted); font-size:12px; }
.legend i { display:inline-block; width:18px; height:10px; border-radius:2px; margin-right:5px; vertical-align:middle; }
.wf { border:1px solid var(--line); border-radius:8px; overflow:hidden; }
.row { display:grid; grid-template-columns:minmax(220px,26%) 1fr 110px minmax(220px,28%);
  align-items:center; border-top:1px solid var(--line); min-height:22px; }
.row:first-child { border-top:none; }
.row.kind-node { background:#fafbfc; }
.row > span { padding:2px 8px; white-space:nowrap; overflow:hidden; text-overflow:ellipsis; }
.label { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:12px; }
.label small { color:var(--muted); }
.track { position:relative; height:22px; padding:0 !important;
  background-image:repeating-linear-gradient(90deg,transparent 0,transparent calc(10% - 1px),var(--line) calc(10% - 1px),var(--line) 10%); }
.bar { position:absolute; top:5px; height:12px; min-width:2px; border-radius:2px; }
.kind-node .bar { background:var(--node); } .kind-node.failed .bar { background:var(--node-bad); }
.kind-llm .bar { background:var(--llm); top:6px; height:10px; } .kind-llm.failed .bar { background:var(--llm-bad); }
.kind-wait .bar { top:8px; height:6px; background:repeating-linear-gradient(45deg,var(--wait) 0 3px,transparent 3px 6px); border:1px solid var(--wait); }
.kind-wait.reason-retry-after .bar { background:repeating-linear-gradient(45deg,var(--ra) 0 3px,transparent 3px 6px); border-color:var(--ra); }
.kind-degraded .bar { width:12px !important; min-width:12px; height:12px; top:5px; margin-left:-6px; background:var(--deg); transform:rotate(45deg); border-radius:1px; }
.tok { position:relative; font-variant-numeric:tabular-nums; text-align:right; color:var(--muted); }
.tok i { position:absolute; left:8px; top:8px; height:6px; background:#f2c14e; border-radius:2px; }
.info { color:var(--muted); }
.info b { color:var(--fg); font-weight:600; }
.failed .info b, .kind-degraded .info b { color:var(--deg); }
.axis { display:grid; grid-template-columns:minmax(220px,26%) 1fr 110px minmax(220px,28%); color:var(--muted); font-size:11px; }
.axis .ticks { position:relative; height:16px; }
.axis .ticks span { position:absolute; transform:translateX(-50%); white-space:nowrap; }
.axis .ticks span:first-child { transform:none; } .axis .ticks span:last-child { transform:translateX(-100%); }
.legend i.diamond { width:9px; height:9px; transform:rotate(45deg); margin:0 8px 0 4px; }
table { border-collapse:collapse; } td, th { padding:3px 12px 3px 0; text-align:left; }
th { color:var(--muted); font-weight:500; } td.n { text-align:right; font-variant-numeric:tabular-nums; }
"#;

fn card(out: &mut String, value: &str, what: &str) {
    let _ = write!(
        out,
        "<div class=\"card\"><b>{}</b><span>{}</span></div>",
        esc(value),
        esc(what)
    );
}

fn legend(out: &mut String) {
    out.push_str("<div class=\"legend\">");
    for (class, color, what) in [
        ("", "var(--node)", "node attempt"),
        ("", "var(--node-bad)", "failed node attempt"),
        ("", "var(--llm)", "LLM wire attempt"),
        ("", "var(--llm-bad)", "failed wire attempt"),
        ("", "var(--wait)", "backoff wait"),
        ("", "var(--ra)", "Retry-After wait"),
        ("diamond", "var(--deg)", "degraded (failure isolation)"),
        ("", "#f2c14e", "tokens billed"),
    ] {
        let _ = write!(
            out,
            "<span><i class=\"{class}\" style=\"background:{color}\"></i>{}</span>",
            esc(what)
        );
    }
    out.push_str("</div>");
}

fn pct(part: Duration, whole: Duration) -> f64 {
    if whole.is_zero() {
        0.0
    } else {
        (part.as_secs_f64() / whole.as_secs_f64() * 100.0).clamp(0.0, 100.0)
    }
}

fn axis(out: &mut String, total: Duration) {
    out.push_str("<div class=\"axis\"><span></span><span class=\"ticks\">");
    // A label every 20 % (the track's grid lines are every 10 %).
    for i in 0..=5u32 {
        let at = total.mul_f64(f64::from(i) / 5.0);
        let text = if i == 0 { "0".to_owned() } else { duration(at) };
        let _ = write!(
            out,
            "<span style=\"left:{}%\">{}</span>",
            i * 20,
            esc(&text)
        );
    }
    out.push_str("</span><span></span><span></span></div>");
}

fn what(row: &Row) -> String {
    match row.kind {
        RowKind::Node => format!("node attempt {}", row.attempt),
        RowKind::Llm => match &row.reason {
            Some(reason) => format!("LLM attempt {} ({reason})", row.attempt),
            None => format!("LLM attempt {}", row.attempt),
        },
        RowKind::Wait => format!("wait: {}", row.reason.as_deref().unwrap_or("")),
        RowKind::Degraded => "degraded".to_owned(),
    }
}

fn row(out: &mut String, row: &Row, total: Duration, max_tokens: u64) {
    let failed = match row.kind {
        RowKind::Node | RowKind::Llm => row.status != "ok" && row.status != "running",
        _ => false,
    };
    let reason = row.reason.as_deref().unwrap_or("");
    let mut class = format!("row kind-{}", row.kind.as_str());
    if failed {
        class.push_str(" failed");
    }
    if row.kind == RowKind::Wait && reason == WAIT_RETRY_AFTER {
        class.push_str(" reason-retry-after");
    }
    let tokens = row.tokens.map(|t| t.to_string()).unwrap_or_default();
    let title = format!(
        "{} · {} · {} at {} for {}{}",
        row.node,
        what(row),
        row.status,
        duration(row.start),
        duration(row.duration),
        if row.detail.is_empty() {
            String::new()
        } else {
            format!(" · {}", row.detail)
        }
    );
    let _ = write!(
        out,
        "<div class=\"{class}\" data-kind=\"{}\" data-node=\"{}\" data-node-attempt=\"{}\" \
         data-attempt=\"{}\" data-reason=\"{}\" data-status=\"{}\" data-start-ms=\"{}\" \
         data-duration-ms=\"{}\" data-tokens=\"{}\" data-call=\"{}\" title=\"{}\">",
        row.kind.as_str(),
        esc(&row.node),
        row.node_attempt,
        row.attempt,
        esc(reason),
        esc(&row.status),
        ms(row.start),
        ms(row.duration),
        tokens,
        esc(row.call_id.as_deref().unwrap_or("")),
        esc(&title),
    );
    let indent = row.depth * 14;
    let name = if row.kind == RowKind::Node {
        esc(&row.node)
    } else {
        format!("<small>{}</small>", esc(&what(row)))
    };
    let _ = write!(
        out,
        "<span class=\"label\" style=\"padding-left:{}px\">{name}{}</span>",
        indent + 8,
        if row.kind == RowKind::Node {
            format!(" <small>#{}</small>", row.attempt)
        } else {
            String::new()
        }
    );
    let _ = write!(
        out,
        "<span class=\"track\"><span class=\"bar\" style=\"left:{:.3}%;width:{:.3}%\"></span></span>",
        pct(row.start, total),
        pct(row.duration, total),
    );
    let bar = match row.tokens {
        Some(t) if max_tokens > 0 => format!(
            "<i style=\"width:{:.1}px\"></i>",
            t as f64 / max_tokens as f64 * 50.0
        ),
        _ => String::new(),
    };
    let _ = write!(out, "<span class=\"tok\">{bar}{}</span>", esc(&tokens));
    let shown = match row.kind {
        RowKind::Wait => "wait",
        _ => row.status.as_str(),
    };
    // A degradation is a moment: no duration.
    let took = match row.kind {
        RowKind::Degraded => String::new(),
        _ => duration(row.duration),
    };
    let _ = write!(
        out,
        "<span class=\"info\"><b>{}</b> {}{}</span></div>",
        esc(shown),
        esc(&took),
        if row.detail.is_empty() {
            String::new()
        } else {
            format!(" · {}", esc(&row.detail))
        }
    );
}

/// The page for `waterfall`, titled `title`.
pub(super) fn render(waterfall: &Waterfall, title: &str) -> String {
    let s = &waterfall.summary;
    let total = s.duration;
    let mut out = String::with_capacity(4096 + waterfall.rows.len() * 600);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>",
        esc(title)
    );
    let _ = write!(
        out,
        "<h1>{}</h1><p class=\"sub\">A waterfall of the run, built from its observer events: \
         node attempts, LLM wire attempts with their retry reasons, the waits between them, \
         degraded nodes.</p>",
        esc(title)
    );
    let _ = write!(out, "<div class=\"cards\" id=\"summary\" data-node-attempts=\"{}\" data-llm-calls=\"{}\" data-llm-attempts=\"{}\" data-llm-retries=\"{}\" data-reasks=\"{}\" data-retry-after-waits=\"{}\" data-degraded=\"{}\" data-tokens-billed=\"{}\" data-tokens-final=\"{}\" data-duration-ms=\"{}\">",
        s.node_attempts, s.llm_calls, s.llm_attempts, s.llm_retries, s.reasks, s.retry_after_waits,
        s.degraded, s.tokens_billed, s.tokens_final, ms(s.duration));
    card(&mut out, &duration(s.duration), "run time");
    card(&mut out, &s.node_attempts.to_string(), "node attempts");
    card(
        &mut out,
        &format!("{} / {}", s.llm_calls, s.llm_attempts),
        "LLM calls / wire attempts",
    );
    card(
        &mut out,
        &format!("{} ({} reask)", s.llm_retries, s.reasks),
        "retried wire attempts",
    );
    card(
        &mut out,
        &format!(
            "{} ({} Retry-After)",
            duration(s.waited),
            s.retry_after_waits
        ),
        "spent waiting",
    );
    card(&mut out, &s.degraded.to_string(), "degraded");
    card(
        &mut out,
        &format!("{} / {}", s.tokens_billed, s.tokens_final),
        "tokens billed / in final replies",
    );
    out.push_str("</div>");
    legend(&mut out);
    axis(&mut out, total);
    let max_tokens = waterfall
        .rows
        .iter()
        .filter_map(|r| r.tokens)
        .max()
        .unwrap_or(0);
    out.push_str("<div class=\"wf\" id=\"rows\">");
    for r in &waterfall.rows {
        row(&mut out, r, total, max_tokens);
    }
    out.push_str("</div>");
    out.push_str(
        "<h2>Where the tokens went</h2><table id=\"tokens\"><tr><th>node</th>\
         <th>wire attempts</th><th>billed</th><th>in final replies</th></tr>",
    );
    for t in &waterfall.tokens {
        let _ = write!(
            out,
            "<tr data-node=\"{}\" data-billed=\"{}\" data-final=\"{}\"><td class=\"label\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&t.node),
            t.billed,
            t.final_tokens,
            esc(&t.node),
            t.llm_attempts,
            t.billed,
            t.final_tokens
        );
    }
    out.push_str("</table></body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_attributes_are_escaped() {
        assert_eq!(esc("<b a=\"1\">&'"), "&lt;b a=&quot;1&quot;&gt;&amp;&#39;");
    }

    #[test]
    fn durations_read_at_their_scale() {
        assert_eq!(duration(Duration::from_micros(400)), "0.40 ms");
        assert_eq!(duration(Duration::from_millis(850)), "850 ms");
        assert_eq!(duration(Duration::from_millis(1250)), "1.25 s");
    }
}
