//! The provider call the engine asks the driver to make, and what the driver reports back.

use std::rc::Rc;

use crate::time::Duration;

/// Identifies a provider call between `poll_call` and `handle_response`.
pub type CallId = u64;

/// The compatibility fields of a call's items, shared by all calls of the group.
#[derive(Debug, PartialEq, Eq)]
pub struct CompatInfo {
    /// The provider; a 429 pauses every call to it.
    pub provider_id: String,
    /// Source language.
    pub source_lang: String,
    /// Target language.
    pub target_lang: String,
    /// Context for the provider.
    pub context: String,
    /// Whether the provider is an LLM.
    pub llm: bool,
}

/// A provider call to start now.
#[derive(Debug)]
pub struct Call {
    /// Pass back to `handle_response`.
    pub id: CallId,
    /// The texts, in order.
    pub texts: Vec<String>,
    /// The texts joined with `separator` (the only text for a single request).
    pub text: String,
    /// The line placed between texts; it occurs in none of them.
    pub separator: String,
    /// Whether this call carries more than one text.
    pub is_batch: bool,
    /// The items' shared fields.
    pub compat: Rc<CompatInfo>,
    /// 0 for the first try of these texts, then 1, 2, ...
    pub attempt: u32,
    /// The call is abandoned (and cancelled) after this long, if set.
    pub timeout: Option<Duration>,
}

/// A provider's successful answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// One string: the translation, or the batch's translations joined by the separator.
    Text(String),
    /// One translation per text.
    Texts(Vec<String>),
}

/// What went wrong with a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The provider threw or rejected (network error, HTTP error ...).
    Error,
    /// The provider answered with something that is not a reply (wrong type).
    BadReply,
    /// No answer within `timeoutMs`.
    Timeout,
}

/// A failed provider call. `C` is the driver's original error value (kept as `cause`).
#[derive(Clone, Debug, PartialEq)]
pub struct Failure<C> {
    /// Kind of failure.
    pub kind: FailureKind,
    /// HTTP status, when the error carried one.
    pub status: Option<u16>,
    /// The provider's Retry-After, when given.
    pub retry_after: Option<Duration>,
    /// A description for the final error message.
    pub message: String,
    /// The original error.
    pub cause: Option<C>,
}

impl<C> Failure<C> {
    /// A thrown or rejected error.
    pub fn error(status: Option<u16>, retry_after: Option<Duration>, message: &str) -> Self {
        Failure {
            kind: FailureKind::Error,
            status,
            retry_after,
            message: message.to_owned(),
            cause: None,
        }
    }

    /// An answer of the wrong type, described by `what`.
    pub fn bad_reply(what: &str) -> Self {
        Failure {
            kind: FailureKind::BadReply,
            status: None,
            retry_after: None,
            message: format!("provider returned {what}, not a string or an array of strings"),
            cause: None,
        }
    }

    /// Attaches the original error.
    pub fn with_cause(mut self, cause: C) -> Self {
        self.cause = Some(cause);
        self
    }
}
