//! Task-scoped ambient values, keyed by type: a crate binds a value for the duration
//! of a future ([`scope`]) and code running inside it reads the value ([`get`]),
//! without threading it through every call. This is the binding mechanism behind
//! prompt-management §12: `openarmature-prompt` binds the
//! [`PromptContext`](openarmature_core::vocab::prompt::PromptContext) of a rendered
//! prompt and the provider crates read it where a call is made. The engine knows
//! nothing about the values it carries.
//!
//! Bindings nest: an inner binding of a type shadows an outer one until its future
//! ends; bindings of other types are kept. The binding follows the future, not the
//! thread: a task spawned with `tokio::spawn` starts with nothing bound (bind the
//! value again inside it to carry it over).
//!
//! # Examples
//! ```
//! use openarmature_graph::ambient;
//!
//! #[derive(Debug, Clone, Default, PartialEq)]
//! struct Tenant(&'static str);
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! assert!(ambient::get::<Tenant>().is_none());
//! let seen = ambient::scope(Tenant("acme"), async {
//!     let outer = ambient::get_or_default::<Tenant>();
//!     let inner = ambient::scope(Tenant("beta"), async { ambient::get_or_default::<Tenant>() }).await;
//!     (outer, inner, ambient::get_or_default::<Tenant>())
//! })
//! .await;
//! assert_eq!(seen, (Tenant("acme"), Tenant("beta"), Tenant("acme")));
//! assert_eq!(ambient::get_or_default::<Tenant>(), Tenant::default());
//! # });
//! ```

use std::future::Future;
use std::sync::Arc;

use openarmature_core::Extensions;

tokio::task_local! {
    /// What is bound in the current task: never mutated once bound (a nested
    /// binding binds a fork).
    static AMBIENT: Extensions;
}

/// Runs `fut` with `value` bound as the ambient value of type `T` (shadowing an outer
/// binding of `T` until `fut` ends; bindings of other types are kept).
pub async fn scope<T: Send + Sync + 'static, F: Future>(value: T, fut: F) -> F::Output {
    let bound = AMBIENT.try_with(Extensions::fork).unwrap_or_default();
    bound.insert(value);
    AMBIENT.scope(bound, fut).await
}

/// The ambient value of type `T` bound in the current task, if any.
pub fn get<T: Send + Sync + 'static>() -> Option<Arc<T>> {
    AMBIENT.try_with(Extensions::get::<T>).ok().flatten()
}

/// A copy of the ambient value of type `T`, or `T::default()` when none is bound.
pub fn get_or_default<T: Clone + Default + Send + Sync + 'static>() -> T {
    get::<T>().map(|value| T::clone(&value)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn spawned_tasks_start_unbound() {
        scope(7_u32, async {
            assert_eq!(get_or_default::<u32>(), 7);
            let bare = tokio::spawn(async { get::<u32>().is_none() }).await;
            assert_eq!(bare.ok(), Some(true));
            let carried = tokio::spawn(scope(get_or_default::<u32>(), async {
                get_or_default::<u32>()
            }))
            .await;
            assert_eq!(carried.ok(), Some(7));
        })
        .await;
    }

    #[tokio::test]
    async fn other_types_survive_a_nested_binding() {
        scope(1_u8, async {
            scope("s", async {
                assert_eq!(get_or_default::<u8>(), 1);
                assert_eq!(get_or_default::<&str>(), "s");
            })
            .await;
            assert!(get::<&str>().is_none());
        })
        .await;
    }
}
