//! desk-test-support.
