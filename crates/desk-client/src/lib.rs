//! desk-client.
