//! One child process: spawn the test binary as `crash::child`, read its phase lines,
//! SIGKILL it when its trigger fires, and tell where the kill landed from the last
//! lines it managed to print (stdout is line-buffered, so every line printed before
//! the kill is still in the pipe).

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

/// Where a kill landed, from the phase lines the child printed before it died.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Landed {
    /// Inside a top-level node (`outline`, `summarize`), no save running.
    MidNode,
    /// Inside the fan-out (`extract_all` entered, not exited), no save running.
    MidFanOut,
    /// Between `save-begin` and `save-end`: the checkpoint write was in flight.
    MidSave,
    /// Outside every node and save (start-up, between two steps).
    Between,
}

impl Landed {
    /// The figure's label.
    pub fn label(self) -> &'static str {
        match self {
            Landed::MidNode => "mid-node",
            Landed::MidFanOut => "mid-fan-out",
            Landed::MidSave => "mid-save",
            Landed::Between => "between steps",
        }
    }

    fn of(lines: &[String]) -> Landed {
        let mut open: Vec<&str> = Vec::new();
        let mut saves = 0i32;
        for line in lines {
            let Some(phase) = line.strip_prefix("PHASE ") else {
                continue;
            };
            match phase {
                "save-begin" => saves += 1,
                _ if phase.starts_with("save-end") => saves -= 1,
                _ => {
                    if let Some(path) = phase.strip_prefix("enter ") {
                        open.push(path);
                    } else if let Some(path) = phase.strip_prefix("exit ") {
                        if let Some(i) = open.iter().position(|p| *p == path) {
                            open.remove(i);
                        }
                    }
                }
            }
        }
        if saves > 0 {
            Landed::MidSave
        } else if open.contains(&"extract_all") {
            Landed::MidFanOut
        } else if open.is_empty() {
            Landed::Between
        } else {
            Landed::MidNode
        }
    }
}

/// When to kill a child: `delay` after the `nth` line starting with `prefix`.
#[derive(Debug, Clone)]
pub struct Trigger {
    /// The line prefix counted.
    pub prefix: &'static str,
    /// Which occurrence fires (1-based).
    pub nth: usize,
    /// How long after it the SIGKILL is sent.
    pub delay: Delay,
}

/// The delay between the trigger line and the SIGKILL.
#[derive(Debug, Clone, Copy)]
pub enum Delay {
    /// A fixed delay.
    Fixed(Duration),
    /// This fraction of the mean save time the child reported so far (`save-end <µs>`
    /// lines, this process's and earlier ones'): about half such kills land before the
    /// write returns, half after.
    OfSave(f64),
}

/// How one child ended.
pub struct Exit {
    /// Killed, and where it landed; `None` when it ran to its end.
    pub killed: Option<Landed>,
    /// Its `CRASH final <json>` line's JSON, when it completed.
    pub final_state: Option<serde_json::Value>,
    /// Whether it resumed a record (`CRASH resume`) or started fresh.
    pub resumed: bool,
    /// Everything it printed (stdout, then stderr).
    pub output: String,
}

/// The last line that fires a kill whatever the trigger: `summarize` is the last node,
/// so a child that reaches it is killed there (its save would end the run).
const LAST_NODE: &str = "PHASE enter summarize";

/// The mean save time the children reported (`PHASE save-end <µs>`).
#[derive(Debug, Default)]
pub struct SaveTimes {
    total_us: u64,
    count: u64,
}

impl SaveTimes {
    fn add(&mut self, line: &str) {
        if let Some(us) = line
            .strip_prefix("PHASE save-end ")
            .and_then(|v| v.parse::<u64>().ok())
        {
            self.total_us += us;
            self.count += 1;
        }
    }

    /// The mean so far (1 ms before any save was seen).
    pub fn mean(&self) -> Duration {
        match self.count {
            0 => Duration::from_millis(1),
            n => Duration::from_micros(self.total_us / n),
        }
    }
}

/// Runs one child with `env`; kills it per `trigger` (none: let it finish).
pub fn run_child(env: &[(&str, String)], trigger: Option<&Trigger>, saves: &mut SaveTimes) -> Exit {
    let mut child = crate::rerun("crash::child")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let mut stderr = child.stderr.take().expect("stderr");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut lines = Vec::new();
    let (mut seen, mut fired) = (0, false);
    for line in stdout.lines() {
        let line = line.expect("child stdout");
        if let (Some(t), false) = (trigger, fired) {
            let hit = line.starts_with(t.prefix) && {
                seen += 1;
                seen == t.nth
            };
            let last = line == LAST_NODE;
            if hit || last {
                let delay = match (hit, t.delay) {
                    (false, _) => Duration::from_millis(1),
                    (true, Delay::Fixed(d)) => d,
                    (true, Delay::OfSave(f)) => saves.mean().mul_f64(f),
                };
                std::thread::sleep(delay);
                let _ = child.kill(); // SIGKILL
                fired = true;
            }
        }
        saves.add(&line);
        lines.push(line);
    }
    let status = child.wait().expect("wait for the child");
    let stderr = errors.join().unwrap_or_default();
    let resumed = lines.iter().any(|l| l.starts_with("CRASH resume"));
    let stdout = lines.join("\n");
    let output = format!("{stdout}\n{stderr}");
    if status.signal() == Some(9) {
        return Exit {
            killed: Some(Landed::of(&lines)),
            final_state: None,
            resumed,
            output,
        };
    }
    assert!(
        status.success(),
        "child failed ({status}):\n{stdout}\n{stderr}"
    );
    let final_state = lines
        .iter()
        .find_map(|l| l.strip_prefix("CRASH final "))
        .map(|json| serde_json::from_str(json).expect("final state JSON"));
    assert!(
        final_state.is_some(),
        "child printed no final state:\n{stdout}\n{stderr}"
    );
    Exit {
        killed: None,
        final_state,
        resumed,
        output,
    }
}
