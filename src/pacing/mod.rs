//! The rules of how fast calls may go: token buckets, the adaptive rate, token
//! estimates and budgets, one budget shared by several pacers, the retry policy, and
//! the batch size a provider has shown it can answer, and how long a call may take.

pub mod adaptive;
pub mod batch_limit;
pub mod bucket;
pub mod budget;
pub mod call_timeout;
pub mod estimate;
pub mod length_ratio;
pub mod output_bound;
pub mod provider;
pub mod provider_limits;
pub mod quota;
pub mod quota_share;
pub mod retry;
