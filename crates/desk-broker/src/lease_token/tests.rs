//! The lease-token decisions alone: hashes matched, and a lease's end by state and expiry.

use desk_contract::api::SessionState;

use super::{check_session_state, token_matches};
use crate::error::BrokerError;
use crate::store::SessionRow;
use crate::util::sha256_hex;

const NOW: u64 = 1_800_000_000_000;

fn code(result: Result<(), BrokerError>) -> Option<&'static str> {
    result.err().map(|error| error.code().as_str())
}

#[test]
fn lease_tokens_match_only_their_hashes() {
    let stored = vec![sha256_hex(b"first"), sha256_hex(b"second")];
    assert!(token_matches(Some("first"), &stored));
    assert!(token_matches(Some("second"), &stored));
    assert!(!token_matches(Some("third"), &stored));
    assert!(
        !token_matches(Some(&stored[0]), &stored),
        "the hash is not the token"
    );
    assert!(!token_matches(None, &stored));
    assert!(!token_matches(Some("first"), &[]));
}

fn session(state: SessionState, expires_at_ms: u64, expired: bool) -> SessionRow {
    SessionRow {
        id: crate::ids::sid("s_1"),
        task_id: "t".into(),
        attempt_id: "a".into(),
        profile: "p".into(),
        lifecycle: crate::session::Lifecycle::from_stored(crate::session::StoredLifecycle {
            state,
            expired,
            error_code: None,
            error_message: None,
            next_action_index: 0,
        }),
        created_at_ms: 0,
        expires_at_ms,
        last_sequence: 0,
        reset_request_id: None,
        reset_response: None,
        reset_sha: None,
        attempt_path: None,
        handoff_ms: None,
        last_frame_ms: None,
        checkpoint_sha: None,
        checkpoint_size: None,
        checkpoint_method: None,
        session_dir: String::new(),
    }
}

#[test]
fn expired_leases_admit_only_status_and_release() {
    let live = session(SessionState::Ready, NOW + 1, false);
    let lapsed = session(SessionState::Ready, NOW - 1, false);
    let reaped = session(SessionState::Released, NOW - 1, true);
    let released = session(SessionState::Released, NOW - 1, false);
    assert_eq!(code(check_session_state(&live, false, NOW)), None);
    assert_eq!(
        code(check_session_state(&lapsed, false, NOW)),
        Some("lease_expired")
    );
    assert_eq!(
        code(check_session_state(&reaped, false, NOW)),
        Some("lease_expired")
    );
    assert_eq!(code(check_session_state(&lapsed, true, NOW)), None);
    assert_eq!(code(check_session_state(&reaped, true, NOW)), None);
    // Released in time: the handlers answer `invalid_state` (no desktop is left).
    assert_eq!(code(check_session_state(&released, false, NOW)), None);
}
