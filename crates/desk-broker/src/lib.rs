//! desk-broker.
