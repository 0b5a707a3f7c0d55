//! Queues (queue_t, qband): see the queue module work in progress.
