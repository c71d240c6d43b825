//! Dispatch priority: which items and batches go first.

use core::cmp::Ordering;

/// Dispatch priority: higher goes first. Always finite (validated at the boundary).
#[derive(Copy, Clone, Debug, PartialEq)]
pub(in crate::engine) struct Priority(f64);

impl Priority {
    /// A priority from a finite number; -0 is folded into 0 so equal priorities compare equal.
    pub(in crate::engine) fn new(value: f64) -> Priority {
        Priority(value + 0.0)
    }
}

impl Eq for Priority {}

impl PartialOrd for Priority {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Priority {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_order_and_fold_negative_zero() {
        assert_eq!(Priority::new(-0.0), Priority::new(0.0));
        assert!(Priority::new(2.0) > Priority::new(1.5));
    }
}
