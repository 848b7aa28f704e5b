//! A small scoped thread pool: `par_map` keeps input order and turns panics into errors.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

/// Runs `f`, turning a panic into its message.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| panic_message(payload.as_ref()))
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_owned()
    }
}

/// Maps `items` with `workers` threads pulling from a shared index. Results
/// come back in input order, one per item; a panic in `f` becomes `Err` with
/// the panic message.
pub fn par_map<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<Result<R, String>> {
    let next = AtomicUsize::new(0);
    let workers = workers.clamp(1, items.len().max(1));
    let indexed: Vec<(usize, Result<R, String>)> = thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        done.push((i, guarded(|| f(item))));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut slots: Vec<Option<Result<R, String>>> = items.iter().map(|_| None).collect();
    for (i, result) in indexed {
        if let Some(slot) = slots.get_mut(i) {
            *slot = Some(result);
        }
    }
    slots
        .into_iter()
        .map(|slot| slot.unwrap_or_else(|| Err("internal error: a worker thread died".to_owned())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::panic)] // a deliberate panic, caught
    fn par_map_keeps_order() {
        let items: Vec<usize> = (0..100).collect();
        let doubled: Vec<Result<usize, String>> = items.iter().map(|x| Ok(x * 2)).collect();
        assert_eq!(par_map(&items, 4, |x| x * 2), doubled);
        assert!(par_map(&[] as &[usize], 4, |x| *x).is_empty());
        let caught = par_map(&[1usize], 2, |_| -> usize { std::panic::panic_any("boom") });
        assert_eq!(caught, [Err("boom".to_owned())]);
    }

    #[test]
    #[allow(clippy::panic)] // a deliberate panic, caught
    fn guarded_catches_panics() {
        let caught = guarded(|| -> usize { std::panic::panic_any("boom") });
        assert_eq!(caught, Err("boom".to_owned()));
    }
}
