//! Spec: graph-engine §2 *State*, *Reducer* — typed state for Rust users.
//!
//! [`crate::state!`] declares a struct whose fields name their reducers, plus its
//! partial-update type, and implements [`crate::State`] for it.

/// Declares a typed state struct, its partial-update type (named after `=>`) and the
/// [`State`](crate::State) implementation.
///
/// Each field may name its reducer after `=>` (default `last_write_wins`):
/// `append`, `merge`, `concat_flatten`, `merge_all`, `bounded_append(max_len)`,
/// `dedupe_append`, `dedupe_append(|item| key)`, `merge_by_key(|item| key)`, or
/// `custom(fn(&T, U) -> Result<T, ReducerFailure>)`. One reducer per field is
/// enforced by the syntax itself (so `conflicting_reducers` cannot arise), and
/// `bounded_append(0)` fails compilation with `reducer_configuration_invalid`.
///
/// The update type has one `Option` field per state field, plus a builder method
/// per field. `concat_flatten` and `merge_all` fields take a `Vec` of the field
/// type as their update, as the spec defines them.
///
/// The struct derives `Clone`, `Debug`, `serde::Serialize` and
/// `serde::Deserialize`; add other derives (e.g. `Default`, `PartialEq`) with
/// attributes. Field types must be `Clone + Serialize + DeserializeOwned`.
///
/// # Examples
/// ```
/// use openarmature_graph::{state, State};
///
/// state! {
///     /// A chat transcript.
///     #[derive(Default, PartialEq)]
///     pub struct Chat => ChatUpdate {
///         /// The last speaker.
///         pub speaker: String,
///         /// Every message, in order.
///         pub messages: Vec<String> => append,
///         /// The last three topics.
///         pub recent: Vec<String> => bounded_append(3),
///     }
/// }
///
/// let chat = Chat::default();
/// let next = chat
///     .merge(ChatUpdate::default().speaker("ann".into()).messages(vec!["hi".into()]))
///     .unwrap();
/// assert_eq!(next.messages, vec!["hi".to_string()]);
/// assert_eq!(next.reducer_name("recent").as_deref(), Some("bounded_append"));
/// ```
#[macro_export]
macro_rules! state {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident => $update:ident {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $field:ident : $fty:ty $(=> $red:ident $( ( $($rarg:tt)* ) )? )?
            ),* $(,)?
        }
    ) => {
        $crate::__oa_state_impl! {
            meta: [$(#[$meta])*],
            vis: $vis,
            name: $name,
            update: $update,
            fields: [$( [ [$(#[$fmeta])*] $fvis $field : $fty ; $( $red $( ( $($rarg)* ) )? )? ] )*]
        }
    };
}

/// Implementation details of [`state!`]; not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __oa_state_impl {
    (
        meta: [$($meta:tt)*],
        vis: $vis:vis,
        name: $name:ident,
        update: $update:ident,
        fields: [$( [ [$($fmeta:tt)*] $fvis:vis $field:ident : $fty:ty ; $($red:tt)* ] )*]
    ) => {
        $($meta)*
        #[derive(Clone, Debug, $crate::__private::serde::Serialize, $crate::__private::serde::Deserialize)]
        #[serde(crate = "openarmature_graph::__private::serde")]
        $vis struct $name {
            $( $($fmeta)* $fvis $field : $fty, )*
        }

        #[doc = concat!("A partial update to [`", stringify!($name), "`]: `Some` fields are merged through their reducers.")]
        #[derive(Clone, Debug, Default)]
        $vis struct $update {
            $(
                #[doc = concat!("Update for `", stringify!($field), "`.")]
                pub $field : ::core::option::Option<$crate::__oa_update_ty!($fty; $($red)*)>,
            )*
        }

        impl $update {
            $(
                #[doc = concat!("Sets the update for `", stringify!($field), "`.")]
                #[must_use]
                pub fn $field(mut self, value: $crate::__oa_update_ty!($fty; $($red)*)) -> Self {
                    self.$field = ::core::option::Option::Some(value);
                    self
                }
            )*
        }

        impl $crate::State for $name {
            type Update = $update;

            fn merge(&self, update: $update) -> ::core::result::Result<Self, $crate::MergeError> {
                #[allow(unused_mut)]
                let mut next = self.clone();
                $(
                    if let ::core::option::Option::Some(value) = update.$field {
                        next.$field = $crate::__oa_apply!(&self.$field, value; $($red)*).map_err(|e| $crate::MergeError {
                            field: stringify!($field).to_owned(),
                            reducer: $crate::__oa_reducer_name!($($red)*).to_owned(),
                            source: ::std::boxed::Box::new(e),
                        })?;
                    }
                )*
                ::core::result::Result::Ok(next)
            }

            fn update_json(update: &$update) -> $crate::__private::serde_json::Value {
                #[allow(unused_mut)]
                let mut map = $crate::__private::serde_json::Map::new();
                $(
                    if let ::core::option::Option::Some(value) = &update.$field {
                        map.insert(
                            stringify!($field).to_owned(),
                            $crate::__private::serde_json::to_value(value)
                                .unwrap_or($crate::__private::serde_json::Value::Null),
                        );
                    }
                )*
                $crate::__private::serde_json::Value::Object(map)
            }

            #[allow(unused_variables)]
            fn update_field_json(
                update: &$update,
                field: &str,
            ) -> ::core::option::Option<$crate::__private::serde_json::Value> {
                match field {
                    $(
                        stringify!($field) => update.$field.as_ref().map(|value| {
                            $crate::__private::serde_json::to_value(value)
                                .unwrap_or($crate::__private::serde_json::Value::Null)
                        }),
                    )*
                    _ => ::core::option::Option::None,
                }
            }

            fn to_json(&self) -> $crate::__private::serde_json::Value {
                $crate::__private::serde_json::to_value(self).unwrap_or($crate::__private::serde_json::Value::Null)
            }

            fn check_schema(&self) -> ::core::result::Result<(), $crate::CompileError> {
                $( $crate::__oa_check!(stringify!($field); $($red)*)?; )*
                ::core::result::Result::Ok(())
            }

            fn field_names(&self) -> ::std::vec::Vec<::std::string::String> {
                ::std::vec![$( stringify!($field).to_owned() ),*]
            }

            fn reducer_name(&self, field: &str) -> ::core::option::Option<::std::string::String> {
                match field {
                    $( stringify!($field) => ::core::option::Option::Some($crate::__oa_reducer_name!($($red)*).to_owned()), )*
                    _ => ::core::option::Option::None,
                }
            }

            fn field_json(&self, field: &str) -> ::core::option::Option<$crate::__private::serde_json::Value> {
                match field {
                    $( stringify!($field) => $crate::__private::serde_json::to_value(&self.$field).ok(), )*
                    _ => ::core::option::Option::None,
                }
            }

            fn with_field_json(
                &self,
                field: &str,
                value: $crate::__private::serde_json::Value,
            ) -> ::core::result::Result<Self, $crate::StateValidationError> {
                #[allow(unused_mut)]
                let mut next = self.clone();
                match field {
                    $( stringify!($field) => {
                        next.$field = $crate::__private::serde_json::from_value(value)
                            .map_err(|e| $crate::StateValidationError::field(field, e.to_string()))?;
                    } )*
                    _ => return ::core::result::Result::Err($crate::StateValidationError::field(field, "not declared in the state")),
                }
                ::core::result::Result::Ok(next)
            }

            fn update_from_json(
                &self,
                fields: ::std::vec::Vec<(::std::string::String, $crate::__private::serde_json::Value)>,
            ) -> ::core::result::Result<$update, $crate::StateValidationError> {
                #[allow(unused_mut)]
                let mut update = <$update as ::core::default::Default>::default();
                for (field, value) in fields {
                    match field.as_str() {
                        $( stringify!($field) => {
                            let value = $crate::__private::serde_json::from_value(value)
                                .map_err(|e| $crate::StateValidationError::field(field.as_str(), e.to_string()))?;
                            // A repeated field combines like two sequential merges.
                            update.$field = ::core::option::Option::Some(match update.$field.take() {
                                ::core::option::Option::Some(prior) => $crate::__oa_combine!(prior, value; $($red)*),
                                ::core::option::Option::None => value,
                            });
                        } )*
                        _ => return ::core::result::Result::Err($crate::StateValidationError::field(field, "not declared in the state")),
                    }
                }
                ::core::result::Result::Ok(update)
            }
        }
    };
}

/// The update type of a field given its reducer.
#[doc(hidden)]
#[macro_export]
macro_rules! __oa_update_ty {
    ($fty:ty; concat_flatten) => { ::std::vec::Vec<$fty> };
    ($fty:ty; merge_all) => { ::std::vec::Vec<$fty> };
    ($fty:ty; $($rest:tt)*) => { $fty };
}

/// Applies a field's reducer.
#[doc(hidden)]
#[macro_export]
macro_rules! __oa_apply {
    ($prior:expr, $value:expr; ) => {
        $crate::reducers::typed::last_write_wins($prior, $value)
    };
    ($prior:expr, $value:expr; last_write_wins) => {
        $crate::reducers::typed::last_write_wins($prior, $value)
    };
    ($prior:expr, $value:expr; append) => {
        $crate::reducers::typed::append($prior, $value)
    };
    ($prior:expr, $value:expr; merge) => {
        $crate::reducers::typed::merge($prior, $value)
    };
    ($prior:expr, $value:expr; concat_flatten) => {
        $crate::reducers::typed::concat_flatten($prior, $value)
    };
    ($prior:expr, $value:expr; merge_all) => {
        $crate::reducers::typed::merge_all($prior, $value)
    };
    ($prior:expr, $value:expr; bounded_append($n:expr)) => {
        $crate::reducers::typed::bounded_append($prior, $value, ($n) as usize)
    };
    ($prior:expr, $value:expr; dedupe_append) => {
        $crate::reducers::typed::dedupe_append_items($prior, $value)
    };
    ($prior:expr, $value:expr; dedupe_append($key:expr)) => {
        $crate::reducers::typed::dedupe_append($prior, $value, $key)
    };
    ($prior:expr, $value:expr; merge_by_key($key:expr)) => {
        $crate::reducers::typed::merge_by_key($prior, $value, $key)
    };
    ($prior:expr, $value:expr; custom($f:expr)) => {
        ($f)($prior, $value)
    };
}

/// The spec name of a field's reducer.
#[doc(hidden)]
#[macro_export]
macro_rules! __oa_reducer_name {
    () => {
        "last_write_wins"
    };
    ($red:ident $($rest:tt)*) => {
        stringify!($red)
    };
}

/// Compile-time reducer configuration checks.
#[doc(hidden)]
#[macro_export]
macro_rules! __oa_check {
    ($field:expr; bounded_append($n:expr)) => {
        $crate::reducers::check_bounded_max_len(($n) as i64)
            .map(|_| ())
            .map_err(|e| match e {
                $crate::CompileError::ReducerConfigurationInvalid { message, .. } => {
                    $crate::CompileError::ReducerConfigurationInvalid {
                        field: $field.to_owned(),
                        message,
                    }
                }
                other => other,
            })
    };
    ($field:expr; $($rest:tt)*) => {
        ::core::result::Result::<(), $crate::CompileError>::Ok(())
    };
}

/// Combines two updates to one field into one equivalent to merging them in order:
/// extending reducers concatenate, `merge` unions (later keys win), replacing
/// reducers keep the later value.
#[doc(hidden)]
#[macro_export]
macro_rules! __oa_combine {
    ($a:expr, $b:expr; ) => {
        $b
    };
    ($a:expr, $b:expr; last_write_wins) => {
        $b
    };
    ($a:expr, $b:expr; custom($($rest:tt)*)) => {
        $b
    };
    ($a:expr, $b:expr; $($rest:tt)*) => {
        $crate::reducers::typed::combine($a, $b)
    };
}
