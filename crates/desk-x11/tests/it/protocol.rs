//! The JSONL loop driven through `serve` over in-memory pipes.

use desk_contract::worker::{WorkerFailureKind, WorkerReply, WorkerResponse, WorkerValue};
use desk_x11::{X11Session, serve};

#[test]
fn serve_answers_each_line_once_and_stops_on_shutdown() {
    let Some(xvfb) = desk_test_support::Xvfb::start(640, 480) else {
        return;
    };
    let mut session = X11Session::connect(Some(xvfb.display())).unwrap();
    let input = [
        r#"{"id":1,"op":{"type":"hello"}}"#,
        "this is not json",
        r#"{"id":2,"op":{"type":"capture"}}"#,
        r#"{"id":3,"op":{"type":"execute","action":{"type":"click","at":{"x":640,"y":1},"button":"left","modifiers":[]},"settle":{"quiet_after_change_ms":250,"quiet_without_change_ms":400,"max_ms":2000}}}"#,
        r#"{"id":4,"op":{"type":"facts"}}"#,
        r#"{"id":5,"op":{"type":"release_held"}}"#,
        r#"{"id":6,"op":{"type":"shutdown"}}"#,
        r#"{"id":7,"op":{"type":"hello"}}"#,
    ]
    .join("\n");
    let mut output = Vec::new();
    serve(input.as_bytes(), &mut output, &mut session).unwrap();
    // Each line may be followed by its frame's PNG, as many bytes as `attachment_len` says.
    let mut responses: Vec<WorkerResponse> = Vec::new();
    let mut rest = output.as_slice();
    while let Some(end) = rest.iter().position(|&byte| byte == b'\n') {
        let mut response: WorkerResponse = serde_json::from_slice(&rest[..end]).unwrap();
        let attachment_end = end + 1 + response.attachment_len as usize;
        response
            .attach_png(rest[end + 1..attachment_end].to_vec())
            .unwrap();
        responses.push(response);
        rest = &rest[attachment_end..];
    }
    assert!(rest.is_empty());
    let ids: Vec<u64> = responses.iter().map(|response| response.id).collect();
    assert_eq!(ids, [1, 0, 2, 3, 4, 5, 6]);
    match &responses[0].reply {
        WorkerReply::Ok(WorkerValue::Hello(hello)) => {
            assert_eq!(
                hello.protocol_version,
                desk_contract::worker::WORKER_PROTOCOL_VERSION
            );
            assert_eq!((hello.display.width, hello.display.height), (640, 480));
        }
        other => panic!("unexpected hello reply {other:?}"),
    }
    assert!(
        matches!(&responses[1].reply, WorkerReply::Error(failure) if failure.kind == WorkerFailureKind::InvalidRequest)
    );
    assert!(
        matches!(&responses[2].reply, WorkerReply::Ok(WorkerValue::Frame(frame)) if frame.width == 640 && frame.png.starts_with(b"\x89PNG"))
    );
    assert!(
        matches!(&responses[3].reply, WorkerReply::Error(failure) if failure.kind == WorkerFailureKind::InvalidRequest)
    );
    assert!(
        matches!(&responses[4].reply, WorkerReply::Ok(WorkerValue::Facts(facts)) if facts.held.is_empty())
    );
    assert!(
        matches!(&responses[5].reply, WorkerReply::Ok(WorkerValue::Released { released }) if released.is_empty())
    );
    assert!(matches!(
        &responses[6].reply,
        WorkerReply::Ok(WorkerValue::Bye)
    ));
}
