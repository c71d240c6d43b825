//! How an item ends: its translation or an error with a stable code.

use core::fmt;

/// Identifies a `translate` call between `handle_translate` and its `Output::Settled`.
pub type Ticket = u64;

/// The stable error codes of the public contract.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The pacer was used before the module was initialised (binding layer only).
    NotInitialized,
    /// An option had a wrong name, type or value.
    InvalidOptions,
    /// An item had a missing or wrong field.
    InvalidInput,
    /// The provider failed for good.
    ProviderError,
    /// The provider did not answer in time, on every try.
    Timeout,
    /// The model kept returning the wrong number of segments.
    CountMismatch,
    /// The item's signal was aborted.
    Aborted,
    /// The pacer was disposed.
    Disposed,
    /// `maxQueued` provider items are held already (an addition to the contract).
    QueueFull,
}

impl ErrorCode {
    /// The code as JS sees it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NotInitialized => "not_initialized",
            ErrorCode::InvalidOptions => "invalid_options",
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::ProviderError => "provider_error",
            ErrorCode::Timeout => "timeout",
            ErrorCode::CountMismatch => "count_mismatch",
            ErrorCode::Aborted => "aborted",
            ErrorCode::Disposed => "disposed",
            ErrorCode::QueueFull => "queue_full",
        }
    }
}

/// An error for one item (or for a whole call to the engine, for options).
#[derive(Clone, Debug, PartialEq)]
pub struct PacerFailure<C> {
    /// Stable code.
    pub code: ErrorCode,
    /// What happened, naming the field or the provider's status.
    pub message: String,
    /// HTTP status, when a provider error carried one.
    pub status: Option<u16>,
    /// The provider's original error.
    pub cause: Option<C>,
    /// For a spent daily quota: how long from now until its reset, when known.
    pub retry_in: Option<crate::time::Duration>,
    /// For `invalid_options`: the option it is about.
    pub option: Option<String>,
}

impl<C> PacerFailure<C> {
    /// An error without status or cause.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        PacerFailure {
            code,
            message: message.into(),
            status: None,
            cause: None,
            retry_in: None,
            option: None,
        }
    }

    /// An `invalid_options` error about `option`.
    pub fn invalid_option(option: impl Into<String>, message: impl Into<String>) -> Self {
        PacerFailure {
            option: Some(option.into()),
            ..PacerFailure::new(ErrorCode::InvalidOptions, message)
        }
    }
}

impl<C> fmt::Display for PacerFailure<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

/// An item that has ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Settled<C> {
    /// The `translate` call it answers.
    pub ticket: Ticket,
    /// The translation, or why there is none.
    pub result: Result<String, PacerFailure<C>>,
}
