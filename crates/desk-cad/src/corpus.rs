//! The public task corpus: task types, `tasks.json`, reference PNGs and private gold DXFs.
//!
//! Invariant: public data (`tasks.json`, `references/<id>.png`) never names or embeds a gold
//! path; gold DXFs live only under the separate gold directory as `<id>.dxf`. Generation is a
//! pure function of [`CORPUS_VERSION`]'s seed, so writing the corpus twice gives identical bytes.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::dxf_io::{read_dxf, write_dxf};
use crate::error::CadError;
use crate::generate::generate_all;
use crate::model::Model;
use crate::render::render_png;

/// Version of the generated corpus; bump when generation changes.
pub const CORPUS_VERSION: &str = "deskbroker-cad-corpus-v1";
/// Version of the benchmark contract these tasks follow.
pub const CONTRACT_VERSION: &str = "deskbroker-bench-contract-v1";
/// File name of the public task list inside the public directory.
pub const TASKS_FILE: &str = "tasks.json";

/// An opaque task id, `task-NNN`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TaskId(
    // Invariant: matches `task-` followed by three or more ASCII digits.
    String,
);

impl TaskId {
    /// The id for 1-based task number `number`.
    pub fn from_number(number: usize) -> Self {
        Self(format!("task-{number:03}"))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TaskId {
    type Error = CadError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        let digits = value.strip_prefix("task-").unwrap_or("");
        if digits.len() >= 3 && digits.bytes().all(|b| b.is_ascii_digit()) {
            Ok(Self(value))
        } else {
            Err(CadError::InvalidTaskId(value))
        }
    }
}

impl From<TaskId> for String {
    fn from(id: TaskId) -> Self {
        id.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether the task is a 2D drawing or (later) a 3D model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DrawingType {
    /// A 2D drawing.
    #[serde(rename = "2d")]
    TwoD,
    /// A 3D model; no tasks of this type exist yet.
    #[serde(rename = "3d")]
    ThreeD,
}

/// Difficulty level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Lines and rectangles.
    L1,
    /// Adds circles and arcs.
    L2,
    /// Adds linear and radial dimensions.
    L3,
    /// Adds text and named layers.
    L4,
}

/// Corpus split.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// Development tasks (about one in seven).
    Dev,
    /// Evaluation tasks.
    Eval,
}

/// Per-task budgets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budgets {
    /// Maximum number of sub-actions.
    pub max_actions: u32,
    /// Wall-time budget in seconds.
    pub wall_time_s: u32,
}

/// Budgets of every 2D task.
pub const BUDGETS_2D: Budgets = Budgets {
    max_actions: 5000,
    wall_time_s: 900,
};

/// One public task. Holds no gold path or gold content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Opaque id.
    pub id: TaskId,
    /// Task-specific problem statement.
    pub prompt: String,
    /// Reference image path relative to the public directory.
    pub reference_image: String,
    /// 2D or 3D.
    pub drawing_type: DrawingType,
    /// Difficulty level.
    pub level: Level,
    /// Drawing units, always `mm`.
    pub units: String,
    /// Budgets.
    pub budgets: Budgets,
    /// Corpus split.
    pub split: Split,
}

/// The `tasks.json` document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskList {
    /// [`CORPUS_VERSION`] at generation time.
    pub corpus_version: String,
    /// [`CONTRACT_VERSION`] at generation time.
    pub contract_version: String,
    /// Tasks in id order.
    pub tasks: Vec<Task>,
}

/// A generated task with its gold model (in memory only).
#[derive(Clone, Debug, PartialEq)]
pub struct GeneratedTask {
    /// The public task.
    pub task: Task,
    /// The gold drawing.
    pub gold: Model,
}

/// Generates the whole corpus in memory, deterministically.
pub fn generate_corpus() -> Vec<GeneratedTask> {
    generate_all()
        .into_iter()
        .enumerate()
        .map(|(task_idx, generated)| {
            let id = TaskId::from_number(task_idx + 1);
            // Every seventh task, starting with the fourth, is a dev task.
            let split = if task_idx % 7 == 3 {
                Split::Dev
            } else {
                Split::Eval
            };
            let prompt = generated
                .prompt
                .replace("{reference}", &reference_path(&id));
            GeneratedTask {
                task: Task {
                    reference_image: reference_path(&id),
                    id,
                    prompt,
                    drawing_type: DrawingType::TwoD,
                    level: generated.level,
                    units: "mm".to_owned(),
                    budgets: BUDGETS_2D,
                    split,
                },
                gold: generated.gold,
            }
        })
        .collect()
}

fn reference_path(id: &TaskId) -> String {
    format!("references/{id}.png")
}

fn create_dir(path: &Path) -> Result<(), CadError> {
    std::fs::create_dir_all(path).map_err(|source| CadError::Io {
        op: "create directory",
        path: path.to_owned(),
        source,
    })
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CadError> {
    std::fs::write(path, bytes).map_err(|source| CadError::Io {
        op: "write",
        path: path.to_owned(),
        source,
    })
}

/// Writes `tasks.json` and `references/<id>.png` under `public_dir` and `<id>.dxf` under
/// `gold_dir`. Returns the public tasks.
pub fn write_corpus(public_dir: &Path, gold_dir: &Path) -> Result<Vec<Task>, CadError> {
    let generated = generate_corpus();
    create_dir(&public_dir.join("references"))?;
    create_dir(gold_dir)?;
    for item in &generated {
        let png = render_png(&item.gold)?;
        write_file(&public_dir.join(&item.task.reference_image), &png)?;
        write_dxf(&item.gold, &gold_path(gold_dir, &item.task.id))?;
    }
    let list = TaskList {
        corpus_version: CORPUS_VERSION.to_owned(),
        contract_version: CONTRACT_VERSION.to_owned(),
        tasks: generated.into_iter().map(|item| item.task).collect(),
    };
    let tasks_path = public_dir.join(TASKS_FILE);
    let mut json = serde_json::to_vec_pretty(&list).map_err(|source| CadError::Json {
        op: "encode",
        path: tasks_path.clone(),
        source,
    })?;
    json.push(b'\n');
    write_file(&tasks_path, &json)?;
    Ok(list.tasks)
}

/// Loads the public task list from `public_dir/tasks.json`.
pub fn load_tasks(public_dir: &Path) -> Result<Vec<Task>, CadError> {
    let path = public_dir.join(TASKS_FILE);
    let bytes = std::fs::read(&path).map_err(|source| CadError::Io {
        op: "read",
        path: path.clone(),
        source,
    })?;
    let list: TaskList = serde_json::from_slice(&bytes).map_err(|source| CadError::Json {
        op: "decode",
        path,
        source,
    })?;
    Ok(list.tasks)
}

/// The gold DXF path of task `id` inside `gold_dir`.
pub fn gold_path(gold_dir: &Path, id: &TaskId) -> PathBuf {
    gold_dir.join(format!("{id}.dxf"))
}

/// Loads the gold model of task `id` from `gold_dir/<id>.dxf`.
pub fn load_gold(gold_dir: &Path, id: &TaskId) -> Result<Model, CadError> {
    Ok(read_dxf(&gold_path(gold_dir, id))?.model)
}
