//! Rollouts against a served broker with `FakeDesktop`: what reaches the desktop, what the agent
//! sees, and how each rollout ends.

use desk_contract::InputAction;
use desk_desktop::fake::FakeFailure;
use desk_harness::{
    DeliveryStatus, ReplayAgent, RolloutStatus, TurnOutcome, TurnRecord, request_id,
};
use serde_json::json;

use crate::support::{Scripted, Served, batch, click, done, options, rollout};

/// Clicks that reached the fake (the checkpoint's controller save is a key, not counted).
fn n_clicks(served: &Served) -> usize {
    served
        .fake
        .inputs()
        .iter()
        .filter(|input| matches!(input, InputAction::Click { .. }))
        .count()
}

fn request_ids(record: &desk_harness::RolloutRecord) -> Vec<(String, u64)> {
    record
        .trace
        .iter()
        .flat_map(|turn| turn.items.iter())
        .map(|item| (item.request_id.clone(), item.action_index))
        .collect()
}

#[tokio::test]
async fn refused_batches_send_nothing_and_say_why() {
    let served = Served::start().await;
    let mut agent = Scripted::new(vec![
        batch("c1", vec![click(1, 1), click(5000, 1)]),
        batch("c2", vec![done(), click(1, 1)]),
        batch("c3", vec![]),
        TurnOutcome::Malformed {
            call_id: Some("c4".into()),
            error: "arguments are not JSON".into(),
        },
        batch("c5", vec![json!({"type": "teleport", "intent": "?"})]),
    ]);
    let record = rollout(&served, &mut agent, &options(&served, "refuse")).await;
    assert_eq!(n_clicks(&served), 0, "a refused batch executes nothing");
    assert_eq!(record.status, RolloutStatus::NoToolCall);
    assert_eq!(record.actions_used, 0);
    assert_eq!(record.n_rejected_batches, 5);
    assert_eq!(agent.observations.len(), 6);
    let reasons: Vec<String> = agent.observations[1..]
        .iter()
        .map(|observation| {
            let delivery = observation.delivery.as_ref().unwrap();
            assert_eq!(delivery.status, DeliveryStatus::Rejected);
            assert_eq!(delivery.n_executed, 0);
            delivery.message.clone()
        })
        .collect();
    assert!(reasons[0].contains("item 1"), "{}", reasons[0]);
    assert!(reasons[1].contains("final item"), "{}", reasons[1]);
    assert!(reasons[2].contains("empty"), "{}", reasons[2]);
    assert!(reasons[3].contains("malformed tool call"), "{}", reasons[3]);
    assert!(reasons[4].contains("not an action"), "{}", reasons[4]);
    assert!(record.trace.iter().all(|turn| turn.items.is_empty()));
    assert_eq!(record.tokens.input_tokens, 60);
    // The session was released, and the record is on disk.
    let dir = served.dir.path().join("runs/refuse");
    assert!(dir.join("rollout.json").exists());
    assert!(dir.join("events.json").exists());
    served.stop().await;
}

#[tokio::test]
async fn batches_run_open_loop_and_deliver_one_aggregate() {
    let served = Served::start().await;
    let mut agent = Scripted::new(vec![
        batch("c1", vec![click(1, 1), click(2, 2), click(3, 3)]),
        batch("c2", vec![click(4, 4), done()]),
    ]);
    let record = rollout(&served, &mut agent, &options(&served, "open")).await;
    assert_eq!(
        record.status,
        RolloutStatus::Done,
        "{:?}",
        record.status_detail
    );
    assert_eq!(record.actions_used, 5);
    assert_eq!(n_clicks(&served), 4);
    // Two observations: the handoff and one after the first batch; none between items.
    assert_eq!(agent.observations.len(), 2);
    let second = &agent.observations[1];
    let delivery = second.delivery.as_ref().unwrap();
    assert_eq!(delivery.status, DeliveryStatus::InputInjected);
    assert_eq!(delivery.n_executed, 3);
    assert_eq!(
        delivery.batch_start_sha256,
        agent.observations[0].screenshot.sha256
    );
    assert_eq!(delivery.final_sha256, second.screenshot.sha256);
    assert_eq!(
        delivery.screen_changed,
        delivery.batch_start_sha256 != delivery.final_sha256
    );
    assert_eq!(second.remaining_actions, 5000 - 3);
    // Every intermediate frame is in the trace and on disk, with increasing sequences.
    let dir = served.dir.path().join("runs/open");
    let mut last_sequence = 0;
    for item in record.trace.iter().flat_map(|turn| turn.items.iter()) {
        let sequence = item.frame_sequence.unwrap();
        assert!(sequence > last_sequence);
        last_sequence = sequence;
        assert!(dir.join(item.frame.as_ref().unwrap()).exists());
        assert!(item.receipt.is_some());
    }
    assert_eq!(
        second.screenshot.sequence,
        record.trace[0].items[2].frame_sequence.unwrap(),
        "the agent sees only the final frame of the batch"
    );
    let brief = agent.brief.as_ref().unwrap();
    assert_eq!(brief.display, crate::support::DISPLAY);
    assert_eq!(brief.wall_time_s, 60);
    assert!(record.artifact.is_some());
    served.stop().await;
}

#[tokio::test]
async fn the_action_budget_is_exact() {
    let served = Served::start().await;
    let mut agent = Scripted::new(vec![
        batch(
            "c1",
            vec![click(1, 1), click(2, 2), click(3, 3), click(4, 4)],
        ),
        batch("c2", vec![click(1, 1), click(2, 2)]),
        batch("c3", vec![click(1, 1), click(2, 2)]),
        batch("c4", vec![click(3, 3)]),
    ]);
    let mut options = options(&served, "budget");
    options.max_actions = Some(3);
    let record = rollout(&served, &mut agent, &options).await;
    assert_eq!(record.budgets.max_actions, 3);
    assert_eq!(record.budgets.declared_max_actions, 5000);
    assert_eq!(record.status, RolloutStatus::ActionBudgetExhausted);
    assert_eq!(record.actions_used, 3);
    assert_eq!(n_clicks(&served), 3);
    let message = &agent.observations[1].delivery.as_ref().unwrap().message;
    assert!(message.contains("only 3 remain"), "{message}");
    let message = &agent.observations[3].delivery.as_ref().unwrap().message;
    assert!(message.contains("only 1 remain"), "{message}");
    served.stop().await;
}

#[tokio::test]
async fn a_late_failure_fails_closed_without_resending() {
    let served = Served::start().await;
    // The second execute of the session fails before input.
    served.fake.fail_execute(2, FakeFailure::BeforeInput);
    let mut agent = Scripted::new(vec![
        batch("c1", vec![click(1, 1), click(2, 2), click(3, 3)]),
        batch("c2", vec![click(9, 9)]),
    ]);
    let record = rollout(&served, &mut agent, &options(&served, "closed")).await;
    assert_eq!(record.status, RolloutStatus::FailedClosed);
    let detail = record.status_detail.clone().unwrap();
    assert!(detail.contains("not re-sent"), "{detail}");
    assert_eq!(
        agent.observations.len(),
        1,
        "no observation after the failure"
    );
    assert_eq!(n_clicks(&served), 1, "{:?}", served.fake.inputs());
    let items = &record.trace[0].items;
    assert_eq!(items.len(), 2);
    assert!(items[0].receipt.is_some());
    assert!(items[1].error.is_some());
    assert!(record.trace[0].delivery.is_none());
    // The session was released all the same.
    let session = record.session_id.clone().unwrap();
    let status = served.client().status(&session).await;
    assert!(status.is_err() || status.unwrap().state == desk_contract::api::SessionState::Released);
    served.stop().await;
}

#[tokio::test]
async fn request_ids_are_deterministic_and_replay_repeats_them() {
    let script = || {
        vec![
            batch("c1", vec![click(1, 1), click(2, 2)]),
            batch("c2", vec![click(1, 1), click(5000, 5000)]),
            batch("c3", vec![click(3, 3), done()]),
        ]
    };
    let first_broker = Served::start().await;
    let mut agent = Scripted::new(script());
    let first = rollout(&first_broker, &mut agent, &options(&first_broker, "det")).await;
    let expected = vec![
        (request_id("det", 1, 0), 0),
        (request_id("det", 1, 1), 1),
        (request_id("det", 3, 0), 2),
        (request_id("det", 3, 1), 3),
    ];
    assert_eq!(request_ids(&first), expected);
    assert_eq!(expected[0].0, "det-t1-i0");
    assert_eq!(first.status, RolloutStatus::Done);

    // The same script on a fresh broker gives the same ids.
    let second_broker = Served::start().await;
    let mut again = Scripted::new(script());
    let second = rollout(&second_broker, &mut again, &options(&second_broker, "det")).await;
    assert_eq!(request_ids(&second), expected);

    // Replaying the recorded rollout.json repeats every turn, refusal included.
    let path = first_broker.dir.path().join("runs/det/rollout.json");
    let mut replay = ReplayAgent::from_file(&path).unwrap();
    let third_broker = Served::start().await;
    let replayed = rollout(&third_broker, &mut replay, &options(&third_broker, "det")).await;
    assert_eq!(request_ids(&replayed), expected);
    assert_eq!(replayed.n_rejected_batches, 1);
    assert_eq!(replayed.agent.agent, "replay");
    assert_eq!(third_broker.fake.inputs(), first_broker.fake.inputs());
    assert!(matches!(
        replayed.trace[1].outcome,
        TurnRecord::Actions { ref call_id, .. } if call_id == "c2"
    ));
    for served in [first_broker, second_broker, third_broker] {
        served.stop().await;
    }
}

#[tokio::test]
async fn the_wall_time_budget_ends_the_rollout() {
    let served = Served::start().await;
    let mut agent = Scripted::new(vec![batch("c1", vec![click(1, 1)])]);
    agent.delay = std::time::Duration::from_millis(600);
    let mut options = options(&served, "slow");
    options.wall_time = Some(std::time::Duration::from_millis(300));
    let record = rollout(&served, &mut agent, &options).await;
    assert_eq!(record.status, RolloutStatus::WallTimeExhausted);
    assert_eq!(n_clicks(&served), 0, "the late answer is not executed");
    served.stop().await;
}

#[tokio::test]
async fn a_rollout_that_requires_a_sandbox_refuses_a_desktop_without_one() {
    let served = Served::start().await;
    let mut agent = Scripted::new(vec![batch("c1", vec![click(1, 1)])]);
    let mut options = options(&served, "unsandboxed");
    options.require_sandbox = true;
    let record = rollout(&served, &mut agent, &options).await;
    assert!(record.infra_error, "{record:?}");
    let detail = record.status_detail.clone().unwrap_or_default();
    assert!(detail.contains("sandbox unverified"), "{detail}");
    assert!(
        agent.observations.is_empty(),
        "the agent never saw the desktop"
    );
    assert_eq!(n_clicks(&served), 0);
    assert!(record.workspace.is_none(), "the fake has no workspace");
    served.stop().await;
}
