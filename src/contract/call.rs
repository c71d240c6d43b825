//! The provider call the engine asks the driver to make, and what the driver reports back.

use std::rc::Rc;

use crate::hash::FoldHasher;
use crate::settle::Ticket;
use crate::text::utf16_len;
use crate::time::Duration;

/// Identifies a provider call between its `Output::Call` and `handle_response`.
pub type CallId = u64;

/// The compatibility fields of a call's items, shared by all calls of the group.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// Whom the items belong to; never sent to the provider.
    pub scope: String,
    /// For items moved to a fallback provider (`fallbackProviders`): their own
    /// `providerId` (`provider_id` is the fallback's).
    pub fallback_from: Option<String>,
    /// For a call served by a member of a pool (`pools`): the pool's id (`provider_id`
    /// is the member's).
    pub pool_id: Option<String>,
}

/// A provider call to start now.
#[derive(Debug)]
pub struct Call {
    /// Pass back to `handle_response`.
    pub id: CallId,
    /// The texts, in order.
    pub texts: Vec<String>,
    /// For each text, the ticket of the first item that waits for it (0: none), when the
    /// driver asked for them (`Engine::want_call_items`); empty otherwise.
    pub items: Vec<Ticket>,
    /// What the model is sent: the texts laid out as `layout` says (the only text for a
    /// single request).
    pub text: String,
    /// One id per text, unique within the call: "1", "2", ... (shared between calls of
    /// the same size).
    pub ids: Rc<[String]>,
    /// How the texts are laid out in `text`.
    pub layout: Layout,
    /// For a batch, the paragraph that tells a model how to answer in its layout, ready
    /// to append to a system prompt; empty for a single text (shared between calls of
    /// the same layout).
    pub instructions: Rc<str>,
    /// Whether this call carries more than one text.
    pub is_batch: bool,
    /// The items' shared fields.
    pub compat: Rc<CompatInfo>,
    /// 0 for the first try of these texts, then 1, 2, ...
    pub attempt: u32,
    /// The call is abandoned (and cancelled) after this long without a whole reply or a
    /// stream's first value, if set (`timeoutMs` plus `timeoutPerCharacterMs` per
    /// character of its texts).
    pub timeout: Option<Duration>,
    /// The most output tokens a faithful answer needs (`request.maxOutputTokens`).
    pub max_output_tokens: u32,
    /// The longest reply read, in UTF-16 code units: a longer one is cut there and read
    /// as truncated.
    pub reply_cap: u32,
    /// For a call of `pacer.run`, its ticket: the driver calls that run's function instead
    /// of the provider, and the call has no texts. Any reply is its success (the value
    /// stays with the driver); a failure is read as a provider's.
    pub run: Option<Ticket>,
}

impl Call {
    /// The separator of the older layout; empty in the markers layout.
    pub fn separator(&self) -> &str {
        match &self.layout {
            Layout::Separator(separator) => separator,
            Layout::Single | Layout::Markers(_) | Layout::Array => "",
        }
    }

    /// Where each text lies in `text`, as `[start, end)` offsets in UTF-16 code units (the
    /// units of JS strings), flattened: the driver hands the provider `texts` sliced out
    /// of the one `text` string instead of converting every text again.
    pub fn text_spans(&self) -> Vec<u32> {
        let mut spans = Vec::with_capacity(2 * self.texts.len());
        let mut at: u64 = 0;
        for (i, text) in self.texts.iter().enumerate() {
            let (open, close, between) = match &self.layout {
                Layout::Single => (0, 0, 0),
                Layout::Array => (0, 0, 1),
                Layout::Separator(separator) => (0, 0, utf16_len(separator)),
                Layout::Markers(pairs) => pairs
                    .get(i)
                    .map_or((0, 0, 1), |(o, c)| (utf16_len(o), utf16_len(c), 1)),
            };
            if i > 0 {
                at += between;
            }
            at += open;
            let end = at + utf16_len(text);
            spans.push(at as u32);
            spans.push(end as u32);
            at = end + close;
        }
        spans
    }

    /// The `[open, close]` markers of a batch in the markers layout; empty otherwise.
    pub fn markers(&self) -> &[(String, String)] {
        match &self.layout {
            Layout::Markers(pairs) => pairs,
            Layout::Single | Layout::Separator(_) | Layout::Array => &[],
        }
    }
}

/// How a call's texts are laid out for the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One text in the markers format: sent as it is.
    Single,
    /// Each text between its own `[open, close]` markers, one pair per text.
    /// The pairs are shared by the calls of one tag and size.
    Markers(Rc<[(String, String)]>),
    /// The texts joined with this separator line, which occurs in none of them.
    Separator(String),
    /// An array batch of `llm: false` items (`batch: "array"`): the texts travel as they
    /// are (`text` joins them with "\n" for logging); the reply is read by position.
    Array,
}

/// A provider's successful answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// One string: the translation, or the batch's translations joined by the separator.
    Text(String),
    /// One translation per text.
    Texts(Vec<String>),
    /// Translations keyed by the call's ids (structured outputs).
    Keyed(Vec<(String, String)>),
    /// An array of this many elements, not all strings: a count mismatch for an array
    /// batch, a reply of the wrong type for any other call. Its elements are never read.
    Mixed(usize),
}

impl Report {
    /// What a reply cut at its length cap reports: it is truncated.
    pub fn cut() -> Self {
        Report {
            truncated: true,
            ..Report::default()
        }
    }
}

impl Reply {
    /// Cuts the reply to at most `cap` bytes of text (on a character boundary; entries
    /// past the cap are dropped); whether it was longer.
    pub fn cut_to(&mut self, cap: usize) -> bool {
        let mut room = cap;
        let mut cut = |text: &mut String| -> bool {
            if text.len() <= room {
                room -= text.len();
                return false;
            }
            let mut end = room;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            room = 0;
            true
        };
        match self {
            Reply::Text(text) => cut(text),
            // Every entry is cut (not `any`: the ones past the cap are emptied too).
            Reply::Texts(texts) => texts.iter_mut().map(&mut cut).fold(false, |a, b| a | b),
            Reply::Keyed(pairs) => pairs
                .iter_mut()
                .map(|(_, t)| cut(t))
                .fold(false, |a, b| a | b),
            Reply::Mixed(_) => false,
        }
    }

    /// [`Reply::fingerprint`] of `Reply::Text(text)`, without making one.
    pub fn text_fingerprint(text: &str) -> u64 {
        use core::hash::Hasher;
        let mut hasher = FoldHasher::default();
        hasher.write_usize(text.len());
        hasher.write(text.as_bytes());
        hasher.write_u8(1);
        hasher.finish()
    }

    /// A digest of the reply, to tell a reply that repeats the last one (a model at
    /// temperature 0 answers the same prompt the same way). A multiply-fold, not SipHash:
    /// every batch reply is digested, and a collision only ends a batch's retries early
    /// (its items go one by one), so nobody gains by crafting one.
    pub fn fingerprint(&self) -> u64 {
        use core::hash::Hasher;
        if let Reply::Text(text) = self {
            return Reply::text_fingerprint(text);
        }
        let mut hasher = FoldHasher::default();
        let mut field = |text: &str| {
            hasher.write_usize(text.len());
            hasher.write(text.as_bytes());
        };
        match self {
            Reply::Text(text) => field(text),
            Reply::Texts(texts) => texts.iter().for_each(|t| field(t)),
            Reply::Keyed(pairs) => pairs.iter().for_each(|(k, t)| {
                field(k);
                field(t);
            }),
            Reply::Mixed(len) => hasher.write_usize(*len),
        }
        let kind = match self {
            Reply::Text(_) => 1,
            Reply::Texts(_) => 2,
            Reply::Keyed(_) => 3,
            Reply::Mixed(_) => 4,
        };
        hasher.write_u8(kind);
        hasher.finish()
    }
}

/// What a provider reported beside its answer: the tokens the call used and what is
/// left of its quota.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Tokens used, as the API reported them.
    pub usage: Option<Usage>,
    /// What the API said of its quota.
    pub limits: ReportedLimits,
    /// The reply stopped at its token limit (or was cut at the length cap).
    pub truncated: bool,
}

/// Tokens a call used.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: f64,
    /// Completion tokens.
    pub output_tokens: f64,
}

/// A provider's own account of its quota (any subset).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct ReportedLimits {
    /// Requests left in the current window.
    pub requests_remaining: Option<f64>,
    /// Until the request window resets.
    pub requests_reset: Option<Duration>,
    /// Tokens left in the current window.
    pub tokens_remaining: Option<f64>,
    /// Until the token window resets.
    pub tokens_reset: Option<Duration>,
    /// The whole request window (`x-ratelimit-limit-requests`).
    pub requests_limit: Option<f64>,
    /// The whole token window (`x-ratelimit-limit-tokens`).
    pub tokens_limit: Option<f64>,
}

impl ReportedLimits {
    /// Whether nothing was reported.
    pub fn is_empty(&self) -> bool {
        *self == ReportedLimits::default()
    }
}

/// Which quota an error says is spent.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Quota {
    /// A per-minute limit (what a 429 means by default).
    Rate,
    /// A per-day limit: nothing succeeds until its reset.
    Daily,
    /// Out of credit or at a spending cap: nothing succeeds until the user acts.
    Billing,
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
    /// What the error said of the provider's quota (boxed: most failures say nothing,
    /// and a failure travels in every `Result` of a reply).
    pub limits: Box<ReportedLimits>,
    /// Which quota is spent, when the error said so.
    pub quota: Option<Quota>,
    /// `Some(false)`: the provider knows the same request will fail again (a
    /// content-policy refusal, an invalid request): it is never retried.
    pub retryable: Option<bool>,
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
            limits: Box::default(),
            quota: None,
            retryable: None,
        }
    }

    /// An answer of the wrong type, described by `what`.
    pub fn bad_reply(what: &str) -> Self {
        Failure {
            kind: FailureKind::BadReply,
            status: None,
            retry_after: None,
            message: format!(
                "provider returned {what}, not a string, an array of strings or an object of strings"
            ),
            cause: None,
            limits: Box::default(),
            quota: None,
            retryable: None,
        }
    }

    /// Attaches the original error.
    pub fn with_cause(mut self, cause: C) -> Self {
        self.cause = Some(cause);
        self
    }
}
