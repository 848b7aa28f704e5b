//! The example agent's three tools: two that answer at once, one that asks a person
//! before it acts.

use std::sync::{Arc, Mutex, PoisonError};

use openarmature_agent::{Tool, ToolError};
use serde::Deserialize;
use serde_json::json;

/// `get_weather`'s arguments.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Weather {
    /// The city.
    pub city: String,
}

/// `convert_currency`'s arguments.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Convert {
    /// How much.
    pub amount: f64,
    /// The ISO code converted from (USD, EUR, GBP, JPY).
    pub from: String,
    /// The ISO code converted to.
    pub to: String,
}

/// `send_email`'s arguments.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Email {
    /// The recipient's address.
    pub to: String,
    /// The subject line.
    pub subject: String,
    /// The text.
    pub body: String,
}

/// Emails "sent" (the example has no mail server): recipient, subject, text.
pub type Outbox = Arc<Mutex<Vec<(String, String, String)>>>;

fn usd_per(code: &str) -> Option<f64> {
    Some(match code {
        "USD" => 1.0,
        "EUR" => 1.08,
        "GBP" => 1.27,
        "JPY" => 0.0067,
        _ => return None,
    })
}

/// The tools; `outbox` collects what `send_email` sends once approved.
pub fn all(outbox: Outbox) -> Vec<Tool> {
    let weather = Tool::from_fn(
        "get_weather",
        "The current weather in a city",
        |args: Weather, _ctx| async move {
            // A deterministic stand-in forecast.
            let n: u32 = args.city.bytes().map(u32::from).sum();
            let sky = ["sunny", "cloudy", "rainy", "windy"][(n % 4) as usize];
            Ok::<_, ToolError>(json!({"city": args.city, "sky": sky, "celsius": 10 + n % 15}))
        },
    );
    let convert = Tool::from_fn(
        "convert_currency",
        "Converts an amount between USD, EUR, GBP and JPY",
        |args: Convert, _ctx| async move {
            let (Some(from), Some(to)) = (usd_per(&args.from), usd_per(&args.to)) else {
                return Err(ToolError::failed(format!(
                    "unknown currency in {} → {} (known: USD, EUR, GBP, JPY)",
                    args.from, args.to
                )));
            };
            let value = (args.amount * from / to * 100.0).round() / 100.0;
            Ok(json!({"amount": args.amount, "from": args.from, "to": args.to, "value": value}))
        },
    );
    let email = Tool::from_fn(
        "send_email",
        "Sends an email (a person approves each one first)",
        move |args: Email, _ctx| {
            let outbox = Arc::clone(&outbox);
            async move {
                outbox.lock().unwrap_or_else(PoisonError::into_inner).push((
                    args.to.clone(),
                    args.subject.clone(),
                    args.body,
                ));
                Ok::<_, ToolError>(json!({"sent_to": args.to, "subject": args.subject}))
            }
        },
    )
    .needs_approval();
    vec![weather, convert, email]
}
