//! Helpers shared by the integration tests.
