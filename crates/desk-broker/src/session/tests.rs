//! Unit tests of the session state machine without SQLite: every transition, the stored form,
//! and random operation sequences checked against the invariants.

use desk_contract::ErrorCode;
use desk_contract::api::SessionState;
use proptest::prelude::*;

use super::{Failure, Lifecycle, Phase, StoredLifecycle};
use crate::error::BrokerError;
use crate::ids::sid;

fn failure(code: ErrorCode) -> Failure {
    Failure::new(code, "why")
}

fn ready() -> Lifecycle {
    Lifecycle::leased().reset_done().unwrap()
}

#[test]
fn a_lease_resets_then_runs_actions_in_order() {
    let leased = Lifecycle::leased();
    assert_eq!(leased.state(), SessionState::Leased);
    assert!(matches!(
        leased.accept(0),
        Err(BrokerError::InvalidState { .. })
    ));
    let ready = leased.reset_done().unwrap();
    let (running, index) = ready.accept(0).unwrap();
    assert_eq!(index, 0);
    assert_eq!(running.phase(), &Phase::Running { action_index: 0 });
    assert_eq!(running.next_action_index(), 1);
    assert!(matches!(
        running.accept(1),
        Err(BrokerError::InvalidState { .. })
    ));
    let ready = running.complete(false).unwrap();
    assert!(matches!(
        ready.accept(0),
        Err(BrokerError::SequenceConflict(_))
    ));
    let (running, index) = ready.accept(1).unwrap();
    assert_eq!(index, 1);
    let done = running.complete(true).unwrap();
    assert_eq!(done.state(), SessionState::Done);
    assert_eq!(done.next_action_index(), 2);
    assert!(done.check_observe("checkpoint").is_ok());
    assert!(done.reset_done().is_err());
}

#[test]
fn withdrawing_gives_the_index_back() {
    let (running, _) = ready().accept(0).unwrap();
    let ready = running.withdraw().unwrap();
    assert_eq!(ready.phase(), &Phase::Ready);
    assert_eq!(ready.next_action_index(), 0);
    assert!(ready.withdraw().is_err(), "nothing in flight");
    assert!(ready.complete(false).is_err(), "nothing in flight");
}

#[test]
fn a_failed_reset_stays_leased_with_its_reason_and_a_good_reset_clears_it() {
    let failed = Lifecycle::leased()
        .reset_failed(failure(ErrorCode::AppNotMaximized))
        .unwrap();
    assert_eq!(failed.state(), SessionState::Leased);
    assert_eq!(
        failed.last_error().map(|failure| failure.code),
        Some(ErrorCode::AppNotMaximized)
    );
    let ready = failed.reset_done().unwrap();
    assert_eq!(ready.last_error(), None);
    assert!(
        ready
            .reset_failed(failure(ErrorCode::DesktopFailed))
            .is_err()
    );
}

#[test]
fn errors_refuse_with_their_code_and_release_keeps_the_failure() {
    let (running, _) = ready().accept(0).unwrap();
    let error = running.fail(failure(ErrorCode::InputOutcomeUnknown));
    let refusal = error.refuse("execute_action").to_string();
    assert_eq!(
        refusal,
        "execute_action is not allowed: the session is in error (input_outcome_unknown: why)"
    );
    let released = error.release(true).unwrap();
    assert_eq!(released.state(), SessionState::Released);
    assert!(released.expired());
    assert_eq!(
        released.last_error().map(|failure| failure.code),
        Some(ErrorCode::InputOutcomeUnknown)
    );
    assert_eq!(released.release(false), None, "release is idempotent");
    assert_eq!(released.fail(failure(ErrorCode::Internal)), released);
}

#[test]
fn a_lost_desktop_fails_only_sessions_that_need_it() {
    let lost = failure(ErrorCode::DesktopFailed);
    assert_eq!(
        ready().desktop_lost(lost.clone()).state(),
        SessionState::Error
    );
    let (running, _) = ready().accept(0).unwrap();
    assert_eq!(
        running.desktop_lost(lost.clone()).state(),
        SessionState::Error
    );
    let leased = Lifecycle::leased();
    assert_eq!(leased.desktop_lost(lost.clone()), leased);
    let done = ready().accept(0).unwrap().0.complete(true).unwrap();
    assert_eq!(done.desktop_lost(lost), done);
}

#[test]
fn liveness_refuses_expired_and_released_sessions() {
    let live = ready();
    assert!(live.check_live(&sid("s"), 10, 5, "status").is_ok());
    assert!(matches!(
        live.check_live(&sid("s"), 4, 5, "status"),
        Err(BrokerError::LeaseExpired(_))
    ));
    let released = live.release(false).unwrap();
    assert!(matches!(
        released.check_live(&sid("s"), 4, 5, "status"),
        Err(BrokerError::InvalidState { .. })
    ));
    let reaped = ready().release(true).unwrap();
    assert!(matches!(
        reaped.check_live(&sid("s"), 10, 5, "status"),
        Err(BrokerError::LeaseExpired(_))
    ));
}

#[test]
fn the_stored_form_round_trips() {
    let (running, _) = ready().accept(0).unwrap();
    let samples = [
        Lifecycle::leased(),
        Lifecycle::leased()
            .reset_failed(failure(ErrorCode::DesktopFailed))
            .unwrap(),
        ready(),
        running.clone(),
        running.complete(true).unwrap(),
        running.fail(failure(ErrorCode::Internal)),
        running
            .fail(failure(ErrorCode::InputOutcomeUnknown))
            .release(true)
            .unwrap(),
        ready().release(false).unwrap(),
    ];
    for lifecycle in samples {
        assert_eq!(Lifecycle::from_stored(lifecycle.to_stored()), lifecycle);
    }
    let unknown_code = Lifecycle::from_stored(StoredLifecycle {
        state: SessionState::Error,
        expired: false,
        error_code: Some("no_such_code".into()),
        error_message: None,
        next_action_index: 3,
    });
    assert_eq!(
        unknown_code.last_error().map(|failure| failure.code),
        Some(ErrorCode::Internal)
    );
}

/// One operation a broker may attempt on a session.
#[derive(Debug, Clone)]
enum Op {
    ResetOk,
    ResetFails,
    Accept(u64),
    /// The backend sent the input and the action completed (`done` or not).
    Complete(bool),
    /// The backend refused before sending anything.
    Withdraw,
    /// Input may have been sent, outcome unknown.
    InDoubt,
    Fail,
    DesktopLost,
    Release(bool),
    /// A broker restart with the journal's pending action turned `unknown`.
    RecoverPending,
    /// The watchdog or the kill switch.
    Kill,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::ResetOk),
        Just(Op::ResetFails),
        (0u64..6).prop_map(Op::Accept),
        (0u64..6).prop_map(Op::Accept),
        (0u64..6).prop_map(Op::Accept),
        any::<bool>().prop_map(Op::Complete),
        Just(Op::Withdraw),
        Just(Op::InDoubt),
        Just(Op::Fail),
        Just(Op::DesktopLost),
        any::<bool>().prop_map(Op::Release),
        Just(Op::RecoverPending),
        Just(Op::Kill),
    ]
}

/// What the model remembers: the indices whose input may have reached the desktop.
#[derive(Default)]
struct Model {
    sent: Vec<u64>,
    in_flight: Option<u64>,
    failed: bool,
    released: bool,
    killed: bool,
}

fn step(lifecycle: &Lifecycle, op: &Op, model: &mut Model) -> Lifecycle {
    let before = lifecycle.clone();
    let next = match op {
        Op::ResetOk => lifecycle.reset_done().ok(),
        Op::ResetFails => lifecycle
            .reset_failed(failure(ErrorCode::DesktopFailed))
            .ok(),
        Op::Accept(expected) => match lifecycle.accept(*expected) {
            Ok((next, index)) => {
                assert_eq!(index, *expected);
                assert!(
                    !model.failed && !model.released && !model.killed,
                    "accepted after the end"
                );
                assert!(
                    !model.sent.contains(&index),
                    "index {index} handed out twice"
                );
                model.in_flight = Some(index);
                Some(next)
            }
            Err(_) => None,
        },
        Op::Complete(done) => lifecycle.complete(*done).ok(),
        Op::Withdraw => lifecycle.withdraw().ok().inspect(|_| {
            model.in_flight = None;
        }),
        Op::InDoubt => Some(lifecycle.fail(failure(ErrorCode::InputOutcomeUnknown))),
        Op::Fail => Some(lifecycle.fail(failure(ErrorCode::Internal))),
        Op::DesktopLost => Some(lifecycle.desktop_lost(failure(ErrorCode::DesktopFailed))),
        Op::Release(expired) => lifecycle.release(*expired),
        Op::Kill => lifecycle.kill("limit reached"),
        Op::RecoverPending => match lifecycle.phase() {
            Phase::Running { .. } => Some(lifecycle.fail(failure(ErrorCode::InputOutcomeUnknown))),
            _ => None,
        },
    };
    let Some(next) = next else {
        return before;
    };
    if model.released || model.killed {
        assert_eq!(next, before, "{op:?} changed an ended session");
    }
    // Leaving `running` other than by withdrawal: the input may have reached the desktop.
    if !matches!(next.phase(), Phase::Running { .. }) {
        model.sent.extend(model.in_flight.take());
    }
    match next.phase() {
        Phase::Error(_) => model.failed = true,
        Phase::Released { .. } => model.released = true,
        Phase::Killed(_) => model.killed = true,
        _ => {}
    }
    next
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// After every step: the next index counts exactly the actions whose input may have been
    /// sent (plus the one in flight), no index is sent twice, an error or a release is final,
    /// and the stored form round-trips.
    #[test]
    fn random_operation_sequences_keep_the_invariants(ops in prop::collection::vec(op(), 1..60)) {
        let mut lifecycle = Lifecycle::leased();
        let mut model = Model::default();
        for op in &ops {
            lifecycle = step(&lifecycle, op, &mut model);
            let mut sorted = model.sent.clone();
            sorted.dedup();
            prop_assert_eq!(sorted.len(), model.sent.len(), "an index was sent twice");
            prop_assert!(model.sent.windows(2).all(|pair| pair[0] < pair[1]));
            let counted = u64::try_from(model.sent.len()).unwrap()
                + u64::from(model.in_flight.is_some());
            prop_assert_eq!(lifecycle.next_action_index(), counted);
            if model.killed {
                prop_assert_eq!(lifecycle.state(), SessionState::Killed);
            } else if model.released {
                prop_assert_eq!(lifecycle.state(), SessionState::Released);
            } else if model.failed {
                prop_assert_eq!(lifecycle.state(), SessionState::Error);
            }
            prop_assert_eq!(
                matches!(lifecycle.phase(), Phase::Running { .. }),
                model.in_flight.is_some()
            );
            prop_assert_eq!(&Lifecycle::from_stored(lifecycle.to_stored()), &lifecycle);
        }
    }
}

#[test]
fn kill_ends_every_live_phase_for_good() {
    let (running, _) = ready().accept(0).unwrap();
    for live in [
        Lifecycle::leased(),
        ready(),
        running.clone(),
        running.complete(true).unwrap(),
        running.fail(failure(ErrorCode::Internal)),
    ] {
        let killed = live.kill("operator: runaway").unwrap();
        assert_eq!(killed.state(), SessionState::Killed);
        assert_eq!(killed.next_action_index(), live.next_action_index());
        assert_eq!(
            killed.last_error().map(|failure| failure.code),
            Some(ErrorCode::SessionKilled)
        );
        assert!(matches!(
            killed.check_live(&sid("s"), u64::MAX, 0, "reset"),
            Err(BrokerError::SessionKilled { ref reason, .. }) if reason == "operator: runaway"
        ));
        assert_eq!(killed.kill("again"), None, "a second kill changes nothing");
        assert_eq!(killed.release(false), None);
        assert_eq!(killed.fail(failure(ErrorCode::Internal)), killed);
        assert!(killed.accept(killed.next_action_index()).is_err());
        assert_eq!(Lifecycle::from_stored(killed.to_stored()), killed);
    }
    assert_eq!(ready().release(false).unwrap().kill("late"), None);
}
