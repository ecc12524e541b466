//! Per-operation counts and latency histograms, rendered as Prometheus text (issue 3).
