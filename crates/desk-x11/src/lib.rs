//! desk-x11.
