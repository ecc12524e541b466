//! Test support: a broker with `FakeDesktop` on a temp socket, a scripted agent, a task.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Duration;

use desk_broker::{BackendRequest, Broker, BrokerConfig, FaultHook};
use desk_cad::corpus::BUDGETS_2D;
use desk_cad::{DrawingType, Entity, Geometry, Level, Model, Point, Split, Task, TaskId};
use desk_client::Client;
use desk_contract::DisplaySize;
use desk_desktop::fake::{FakeHandle, FakeSave};
use desk_desktop::{AppProfile, BackendError, DesktopBackend, FakeDesktop, ProfileSet};
use desk_harness::{
    Agent, AgentError, AgentInfo, BoxFuture, ModelSaid, Observation, RolloutOptions, RolloutRecord,
    TaskBrief, TokenUsage, Turn, TurnOutcome, run_rollout,
};
use desk_server::serve_unix;
use serde_json::{Value, json};
use tokio::sync::oneshot;

const PROFILE: &str = r#"
name = "fake"
command = ["fake-app", "{attempt}"]
save_keys = ["ctrl", "s"]
save_timeout_ms = 500
[attempt]
filename = "attempt.txt"
template = "initial\n"
[window]
maximize = true
"#;

/// The fake display size.
pub(crate) const DISPLAY: DisplaySize = DisplaySize {
    width: 320,
    height: 200,
};

/// A broker with fake desktops, served on a temp Unix socket.
pub(crate) struct Served {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) fake: FakeHandle,
    socket: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), desk_broker::BrokerError>>,
}

impl Served {
    pub(crate) async fn start() -> Served {
        let dir = tempfile::tempdir().unwrap();
        let mut profiles = ProfileSet::default();
        profiles.insert(AppProfile::from_toml("fake", PROFILE).unwrap());
        let mut config = BrokerConfig::new(dir.path().join("state"), profiles);
        config.display = DISPLAY;
        config.default_profile = "fake".to_string();
        config.fault = FaultHook::None;
        let fake = FakeHandle::default();
        fake.set_save(FakeSave::AttemptFromArgv);
        let handle = fake.clone();
        let broker = Broker::open(config, move |request: &BackendRequest| {
            let desktop: Box<dyn DesktopBackend> =
                Box::new(FakeDesktop::with_handle(request.display, handle.clone()));
            Ok::<_, BackendError>(desktop)
        })
        .unwrap();
        let socket = dir.path().join("broker.sock");
        let (stop, stopped) = oneshot::channel::<()>();
        let server_socket = socket.clone();
        let task = tokio::spawn(async move {
            serve_unix(&server_socket, broker, async {
                let _ = stopped.await;
            })
            .await
        });
        for _ in 0..200 {
            if socket.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Served {
            dir,
            fake,
            socket,
            stop: Some(stop),
            task,
        }
    }

    pub(crate) fn client(&self) -> Client {
        Client::new(&self.socket)
    }

    pub(crate) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.await.unwrap().unwrap();
    }
}

/// An agent answering scripted outcomes and recording what it observed.
pub(crate) struct Scripted {
    pub(crate) outcomes: VecDeque<TurnOutcome>,
    pub(crate) observations: Vec<Observation>,
    pub(crate) brief: Option<TaskBrief>,
    /// How long each turn "thinks" before answering.
    pub(crate) delay: Duration,
    /// What each turn "writes" beside its answer.
    pub(crate) said: ModelSaid,
}

impl Scripted {
    pub(crate) fn new(outcomes: Vec<TurnOutcome>) -> Scripted {
        Scripted {
            outcomes: outcomes.into(),
            observations: Vec::new(),
            brief: None,
            delay: Duration::ZERO,
            said: ModelSaid::default(),
        }
    }
}

impl Agent for Scripted {
    fn info(&self) -> AgentInfo {
        AgentInfo {
            agent: "scripted".into(),
            model: Some("test-model".into()),
        }
    }

    fn start<'a>(&'a mut self, brief: &'a TaskBrief) -> BoxFuture<'a, Result<(), AgentError>> {
        self.brief = Some(brief.clone());
        Box::pin(async { Ok(()) })
    }

    fn turn<'a>(
        &'a mut self,
        observation: &'a Observation,
    ) -> BoxFuture<'a, Result<Turn, AgentError>> {
        self.observations.push(observation.clone());
        let outcome = self
            .outcomes
            .pop_front()
            .unwrap_or(TurnOutcome::NoToolCall {
                text: "script finished".into(),
            });
        let delay = self.delay;
        let said = self.said.clone();
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            Ok(Turn {
                outcome,
                usage: TokenUsage {
                    input_tokens: 10,
                    output_tokens: 2,
                    reasoning_tokens: 0,
                },
                acknowledged_safety_checks: Vec::new(),
                said,
            })
        })
    }
}

pub(crate) fn batch(call_id: &str, actions: Vec<Value>) -> TurnOutcome {
    TurnOutcome::Actions {
        call_id: call_id.into(),
        actions,
    }
}

pub(crate) fn click(x: i64, y: i64) -> Value {
    json!({"type": "click", "x": x, "y": y, "intent": format!("click {x},{y}")})
}

pub(crate) fn done() -> Value {
    json!({"type": "done", "intent": "finished"})
}

/// A 2D task with the real budgets.
pub(crate) fn task() -> Task {
    Task {
        id: TaskId::from_number(901),
        prompt: "Draw nothing.".into(),
        reference_image: "references/task-901.png".into(),
        drawing_type: DrawingType::TwoD,
        level: Level::L1,
        units: "mm".into(),
        budgets: BUDGETS_2D,
        split: Split::Dev,
        profile: None,
    }
}

pub(crate) fn options(served: &Served, rollout_id: &str) -> RolloutOptions {
    RolloutOptions {
        rollout_id: rollout_id.into(),
        attempt_id: rollout_id.into(),
        dir: served.dir.path().join("runs").join(rollout_id),
        broker_version: "0.0.0-test".into(),
        versions: desk_harness::SoftwareVersions::default(),
        profile: None,
        corpus_version: desk_cad::CORPUS_VERSION.to_owned(),
        max_actions: None,
        wall_time: Some(Duration::from_secs(60)),
        require_sandbox: false,
    }
}

/// Runs one rollout of [`task`] with `agent` on `served`.
pub(crate) async fn rollout(
    served: &Served,
    agent: &mut dyn Agent,
    options: &RolloutOptions,
) -> RolloutRecord {
    let reference = desk_cad::render_png(&reference_model()).unwrap();
    run_rollout(
        &served.client(),
        &task(),
        &reference,
        &desk_cad::Gold::Drawing(Model::default()),
        agent,
        options,
    )
    .await
    .unwrap()
}

/// A one-line drawing, for reference images.
pub(crate) fn reference_model() -> Model {
    Model {
        entities: vec![Entity::new(Geometry::Line {
            a: Point::new(0.0, 0.0),
            b: Point::new(100.0, 50.0),
        })],
    }
}
