//! The rules of how fast calls may go: token buckets, the adaptive rate, token
//! estimates and budgets, one budget shared by several pacers, and the retry policy.

pub mod adaptive;
pub mod bucket;
pub mod budget;
pub mod estimate;
pub mod provider;
pub mod quota;
pub mod retry;
