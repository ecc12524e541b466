//! The crate's one error type.

/// Why an accessibility request failed. Every variant except [`A11yError::OutcomeUnknown`]
/// means nothing was sent to the app.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum A11yError {
    /// The session has no reachable accessibility bus.
    #[error("accessibility unavailable: {0}")]
    Unavailable(String),
    /// The app is not (or not yet) registered on the accessibility bus.
    #[error("{0}")]
    AppNotRegistered(String),
    /// A D-Bus call failed before any action was sent.
    #[error("accessibility bus error: {0}")]
    Bus(String),
    /// The observation id is not the current observation.
    #[error("observation {0} is not the current accessibility observation")]
    StaleObservation(String),
    /// The node index is not in the observation.
    #[error("node {node} is not in observation {observation_id} ({count} nodes)")]
    NoSuchNode {
        /// The observation.
        observation_id: String,
        /// The index asked for.
        node: u32,
        /// How many nodes it has.
        count: usize,
    },
    /// The element's top-level window is neither the bound window nor one of its popups.
    #[error("{0}")]
    ForeignWindow(String),
    /// The element cannot take this action (disabled, no action, not editable, several
    /// selections, gone).
    #[error("{0}")]
    NotActionable(String),
    /// The provider did not answer the checks before input in time: nothing was sent.
    #[error("the accessibility provider is busy: {0}")]
    ProviderBusy(String),
    /// The action reached the provider and then failed or timed out: it may have happened.
    #[error("the outcome of the accessibility action is unknown: {0}")]
    OutcomeUnknown(String),
}

impl A11yError {
    pub(crate) fn bus(error: impl std::fmt::Display) -> A11yError {
        A11yError::Bus(error.to_string())
    }

    /// Whether the connection should be opened again next time.
    pub(crate) fn drops_connection(&self) -> bool {
        matches!(self, A11yError::Bus(_) | A11yError::Unavailable(_))
    }
}
