//! Lease tokens: minted at lease (only their SHA-256 is stored) and checked for a session
//! route by desk-server's auth layer through [`Broker::authorize_session`].
//!
//! A missing, malformed or wrong token and an unknown session id all get the same 401
//! `unauthorized` (no existence oracle); the hashes are compared in constant time. With a valid
//! token a killed session answers `session_killed` (its tombstone is read first), and an
//! expired lease admits only status and release (410 `lease_expired`).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use desk_contract::api::{LeaseToken, SessionState};
use subtle::ConstantTimeEq;

use crate::broker::{Broker, Inner};
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::store::SessionRow;
use crate::util::{now_ms, sha256_hex};

fn wrong_token() -> BrokerError {
    BrokerError::Unauthorized("missing or invalid lease token for this session".to_string())
}

/// Whether `token` hashes to one of `stored` (hex SHA-256), in constant time per hash.
pub(crate) fn token_matches(token: Option<&str>, stored: &[String]) -> bool {
    let Some(token) = token else {
        return false;
    };
    let presented = sha256_hex(token.as_bytes());
    let mut matched = subtle::Choice::from(0);
    for hash in stored {
        matched |= presented.as_bytes().ct_eq(hash.as_bytes());
    }
    bool::from(matched)
}

/// With a valid token, whether the session's lease still admits the request.
pub(crate) fn check_session_state(
    session: &SessionRow,
    keeps_after_end: bool,
    now_ms: u64,
) -> Result<(), BrokerError> {
    if keeps_after_end {
        return Ok(());
    }
    // The same rule as `check_live`: a lease released because it expired, or an unreleased one
    // past its expiry. A session released in time has no desktop left; its handlers answer
    // `invalid_state`.
    if session.expired()
        || (session.state() != SessionState::Released && session.expires_at_ms < now_ms)
    {
        return Err(BrokerError::LeaseExpired(session.id.to_string()));
    }
    Ok(())
}

impl Inner {
    /// Mints a lease token for `session_id` and stores its hash before returning it.
    pub(crate) fn mint_lease_token(
        &self,
        session_id: &SessionId,
    ) -> Result<LeaseToken, BrokerError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|error| {
            BrokerError::Internal(format!("failed to draw a lease token: {error}"))
        })?;
        let token = URL_SAFE_NO_PAD.encode(bytes);
        self.store
            .insert_lease_token(session_id, &sha256_hex(token.as_bytes()), now_ms())?;
        Ok(LeaseToken::new(token))
    }

    fn authorize_session(
        &self,
        session_id: &SessionId,
        token: Option<&str>,
        keeps_after_end: bool,
    ) -> Result<(), BrokerError> {
        let stored = self.store.lease_token_hashes(session_id)?;
        if !token_matches(token, &stored) {
            return Err(wrong_token());
        }
        // A killed session's token authorizes nothing: its tombstone is read first, so the
        // refusal holds from the moment a kill begins, whatever the broker's own state.
        if let Some(tombstone) = crate::kill::read_tombstone(&self.config.layout(), session_id) {
            return Err(BrokerError::SessionKilled {
                session_id: session_id.to_string(),
                reason: tombstone.reason,
            });
        }
        let session = self.store.session(session_id)?.ok_or_else(wrong_token)?;
        if let Some(failure) = session.lifecycle.last_error()
            && session.state() == SessionState::Killed
        {
            return Err(BrokerError::SessionKilled {
                session_id: session_id.to_string(),
                reason: failure.message.clone(),
            });
        }
        check_session_state(&session, keeps_after_end, now_ms())
    }
}

impl Broker {
    /// Who may connect and which keys verify credentials: what desk-server's auth layer
    /// enforces before every handler.
    pub fn auth_config(&self) -> &crate::config::AuthConfig {
        &self.inner.config.auth
    }

    /// Whether `token` (a presented lease token, `None` when there is none) authorizes a
    /// request on `session_id`; `keeps_after_end` for status and release, which stay usable
    /// after the lease ended. Two store reads on a blocking thread, never behind a session's
    /// queue or lock (no blocking thread waits for those, see `admission.rs`), and not through
    /// `Broker::run`: authorizing changes nothing, so it wakes no status long-poll.
    pub async fn authorize_session(
        &self,
        session_id: SessionId,
        token: Option<String>,
        keeps_after_end: bool,
    ) -> Result<(), BrokerError> {
        let inner = std::sync::Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            inner.authorize_session(&session_id, token.as_deref(), keeps_after_end)
        })
        .await
        .map_err(|error| BrokerError::Internal(format!("authorization panicked: {error}")))?
    }
}

#[cfg(test)]
mod tests;
