//! Real-stack tests for issue 3 (evidence).
