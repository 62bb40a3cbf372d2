//! An Alertmanager's queue of alerts waiting to be sent: bounded, the
//! oldest alerts dropped to make room for new ones, taken in batches, as
//! Prometheus' send loop keeps it.

use std::collections::VecDeque;

use crate::alert::Alert;

/// A bounded queue of alerts.
#[derive(Debug)]
pub struct Queue {
    alerts: VecDeque<Alert>,
    capacity: usize,
}

impl Queue {
    /// An empty queue holding at most `capacity` alerts.
    pub fn new(capacity: usize) -> Self {
        Queue {
            alerts: VecDeque::new(),
            capacity,
        }
    }

    /// Adds `alerts` at the end; returns how many alerts were dropped to
    /// stay within the capacity (the oldest: of `alerts` itself first when
    /// it alone is longer than the capacity, then of those queued).
    pub fn push(&mut self, alerts: Vec<Alert>) -> usize {
        let mut dropped = 0;
        let mut alerts = alerts;
        if alerts.len() > self.capacity {
            let excess = alerts.len() - self.capacity;
            alerts.drain(..excess);
            dropped += excess;
        }
        let total = self.alerts.len() + alerts.len();
        if total > self.capacity {
            let excess = total - self.capacity;
            self.alerts.drain(..excess);
            dropped += excess;
        }
        self.alerts.extend(alerts);
        dropped
    }

    /// Takes up to `max` alerts from the front.
    pub fn batch(&mut self, max: usize) -> Vec<Alert> {
        let n = self.alerts.len().min(max.max(1));
        self.alerts.drain(..n).collect()
    }

    /// Takes everything.
    pub fn take_all(&mut self) -> Vec<Alert> {
        self.alerts.drain(..).collect()
    }

    /// How many alerts wait.
    pub fn len(&self) -> usize {
        self.alerts.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.alerts.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_model::Labels;

    fn alerts(names: std::ops::Range<usize>) -> Vec<Alert> {
        names
            .map(|i| Alert {
                labels: Labels::from_pairs(&[("alertname", i.to_string())]),
                annotations: Labels::empty(),
                starts_at: None,
                ends_at: None,
                generator_url: String::new(),
            })
            .collect()
    }

    fn names(alerts: &[Alert]) -> Vec<String> {
        alerts.iter().map(|a| a.name().to_string()).collect()
    }

    #[test]
    fn overflow_drops_the_oldest() {
        let mut q = Queue::new(5);
        assert_eq!(q.push(alerts(0..3)), 0);
        assert_eq!(q.push(alerts(3..7)), 2);
        assert_eq!(q.len(), 5);
        assert_eq!(names(&q.take_all()), ["2", "3", "4", "5", "6"]);
        // A push longer than the capacity keeps its newest alerts.
        assert_eq!(q.push(alerts(10..18)), 3);
        assert_eq!(names(&q.take_all()), ["13", "14", "15", "16", "17"]);
    }

    #[test]
    fn batches_in_order() {
        let mut q = Queue::new(100);
        q.push(alerts(0..7));
        assert_eq!(names(&q.batch(3)), ["0", "1", "2"]);
        assert_eq!(names(&q.batch(3)), ["3", "4", "5"]);
        assert_eq!(names(&q.batch(3)), ["6"]);
        assert!(q.batch(3).is_empty());
        assert!(q.is_empty());
    }
}
