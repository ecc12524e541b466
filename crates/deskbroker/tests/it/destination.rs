//! The destination check (issue 13, control-session PRG-26): seat input only onto the app. This
//! test is a second X client on the session's display, as another program there would be: it
//! maps an override-redirect window over part of the probe window, then takes the keyboard focus.
//! A click, a drag, a move and a scroll onto that window, and keys while it holds the focus, are refused
//! with `destination_not_app` and reach nothing (the probe logs no such event; no action index is
//! used; each counts as a refused action); a program stops at its refused step with the steps
//! before it submitted; the same input beside the window, or with the focus given back, works.

use desk_client::{Client, ClientError};
use desk_contract::ErrorCode;
use desk_contract::control::ProgramRequest;
use serde_json::{Value, json};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{ConnectionExt as _, CreateWindowAux, InputFocus, WindowClass};
use x11rb::{COPY_DEPTH_FROM_PARENT, CURRENT_TIME};

use crate::escape_gui::open_display;
use crate::probe::{ProbeSession, act, of_type, probe_events, typed_text, wait_for_events};
use crate::support::xvfb_available;

fn refused_off_app(result: Result<impl std::fmt::Debug, ClientError>, what: &str) {
    match result {
        Err(ClientError::Api(body)) => assert_eq!(
            body.code,
            ErrorCode::DestinationNotApp,
            "{what}: {}",
            body.message
        ),
        other => panic!("{what} must be refused with destination_not_app: {other:?}"),
    }
}

/// Sends each `(request_id, action, what)` at action index `index`: each must be refused.
async fn refused_all<const N: usize>(
    client: &Client,
    session: &str,
    index: u64,
    cases: [(&str, Value, &str); N],
) {
    for (request_id, action, what) in cases {
        refused_off_app(act(client, session, request_id, index, action).await, what);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn seat_input_onto_another_window_or_focus_is_refused_and_sends_nothing() {
    if !xvfb_available() {
        return;
    }
    let probe = ProbeSession::start("destination").await;
    let conn = open_display(&probe.broker.session_dir(&probe.session));
    let root = conn.setup().roots[0].root;
    let app_focus = conn.get_input_focus().unwrap().reply().unwrap().focus;

    // Another client's window on top of the probe window, at (100, 100) 200×150.
    let foreign = conn.generate_id().unwrap();
    conn.create_window(
        COPY_DEPTH_FROM_PARENT,
        foreign,
        root,
        100,
        100,
        200,
        150,
        0,
        WindowClass::INPUT_OUTPUT,
        0,
        &CreateWindowAux::new()
            .override_redirect(1)
            .background_pixel(0x00ff_0000),
    )
    .unwrap();
    conn.map_window(foreign).unwrap();
    conn.get_input_focus().unwrap().reply().unwrap();
    let logged = probe_events(&probe.log).len();

    let click = |x: u32, y: u32| json!({"type": "click", "x": x, "y": y, "intent": "click"});
    let drag = json!({"type": "drag", "path": [{"x": 500, "y": 400}, {"x": 150, "y": 150}],
                      "duration_ms": 50, "intent": "drag into it"});
    let hover = json!({"type": "move", "x": 120, "y": 120, "intent": "hover"});
    let pointer = [
        (
            "on-foreign",
            click(150, 150),
            "a click on the foreign window",
        ),
        ("drag-in", drag, "a drag that ends on the foreign window"),
        ("hover", hover, "a move onto the foreign window"),
    ];
    refused_all(&probe.client, &probe.session, 0, pointer).await;
    // The same click beside it reaches the app.
    act(&probe.client, &probe.session, "beside", 0, click(500, 400))
        .await
        .expect("a click beside the foreign window reaches the app");

    // A scroll goes where the pointer is: put there by the other client, it is refused.
    conn.warp_pointer(x11rb::NONE, root, 0, 0, 0, 0, 150, 150)
        .unwrap();
    conn.get_input_focus().unwrap().reply().unwrap();
    let scroll = json!({"type": "scroll", "dy": 3, "intent": "scroll"});
    let scroll = [(
        "scroll",
        scroll,
        "a scroll with the pointer on the foreign window",
    )];
    refused_all(&probe.client, &probe.session, 1, scroll).await;

    // The foreign window takes the keyboard focus: keys and text would go to it.
    conn.set_input_focus(InputFocus::PARENT, foreign, CURRENT_TIME)
        .unwrap();
    conn.get_input_focus().unwrap().reply().unwrap();
    let keyboard = [
        (
            "keys",
            json!({"type": "key", "keys": ["a"], "intent": "key"}),
            "a key with the focus on the foreign window",
        ),
        (
            "text",
            json!({"type": "type", "text": "q", "intent": "text"}),
            "text with the focus on the foreign window",
        ),
    ];
    refused_all(&probe.client, &probe.session, 1, keyboard).await;
    // A program: its move runs (a click would give the app the focus back: the window manager
    // focuses on click), its text is refused there, and nothing after it runs.
    let program: ProgramRequest = serde_json::from_value(json!({
        "request_id": "program", "expected_action_index": 1,
        "steps": [
            {"type": "move", "x": 520, "y": 420, "intent": "move"},
            {"type": "type", "text": "z", "intent": "text"},
            {"type": "click", "x": 540, "y": 440, "intent": "never"}
        ]
    }))
    .unwrap();
    let ran = probe
        .client
        .program(&probe.session, &program)
        .await
        .unwrap();
    assert_eq!(ran.receipt.submitted, 1, "{:?}", ran.receipt);
    let failing = ran
        .receipt
        .failing_step
        .as_ref()
        .expect("the text step fails");
    assert_eq!(failing.step_index, 1);
    assert_eq!(failing.code, ErrorCode::DestinationNotApp, "{failing:?}");

    // Focus back on the app, the foreign window gone: keys reach the app.
    conn.set_input_focus(InputFocus::PARENT, app_focus, CURRENT_TIME)
        .unwrap();
    conn.destroy_window(foreign).unwrap();
    conn.get_input_focus().unwrap().reply().unwrap();
    act(
        &probe.client,
        &probe.session,
        "keys-back",
        2,
        json!({"type": "key", "keys": ["b"], "intent": "key"}),
    )
    .await
    .expect("a key with the focus on the app");
    act(&probe.client, &probe.session, "on-app", 3, click(150, 150))
        .await
        .expect("the point the foreign window covered is the app's again");

    let events = wait_for_events(&probe.log, logged + 1);
    let events = &events[logged..];
    let presses: Vec<(i64, i64)> = of_type(events, "button_press")
        .iter()
        .map(|event| {
            (
                event["root_x"].as_i64().unwrap(),
                event["root_y"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        presses,
        vec![(500, 400), (150, 150)],
        "only the clicks on the app reached it"
    );
    assert_eq!(
        typed_text(events),
        "b",
        "only the key sent with the app focused"
    );
    let status = probe.client.status(&probe.session).await.unwrap();
    assert_eq!(status.next_action_index, 4);
    let refused = std::fs::read_to_string(
        probe
            .broker
            .session_dir(&probe.session)
            .join("refused_actions"),
    )
    .unwrap_or_default();
    assert_eq!(
        refused.trim(),
        "7",
        "each refusal counts as a refused action"
    );
    probe.client.release(&probe.session).await.unwrap();
}
