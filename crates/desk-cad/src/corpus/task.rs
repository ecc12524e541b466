//! The corpus's types: task ids, corpus versions, drawing types, levels, splits, budgets,
//! artifact kinds, a task and `tasks.json`'s list, with the version and file-name constants.

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::error::CadError;

/// Version of the default generated corpus; bump when generation changes.
pub const CORPUS_VERSION: &str = CorpusVersion::V3.as_str();
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

/// A corpus version, reproducible by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CorpusVersion {
    /// 28 2D tasks, dev 4 (`deskbroker-cad-corpus-v1`).
    V1,
    /// 50 tasks, 21 2D + 29 3D, dev 7 (`deskbroker-cad-corpus-v2`).
    V2,
    /// v2 with the drafting categories in its L3 and L4 drawings
    /// (`deskbroker-cad-corpus-v3`).
    #[default]
    V3,
}

impl CorpusVersion {
    /// Every version, oldest first.
    pub const ALL: [CorpusVersion; 3] = [CorpusVersion::V1, CorpusVersion::V2, CorpusVersion::V3];

    /// The version's full name, as written in `tasks.json` and every result.
    pub const fn as_str(self) -> &'static str {
        match self {
            CorpusVersion::V1 => "deskbroker-cad-corpus-v1",
            CorpusVersion::V2 => "deskbroker-cad-corpus-v2",
            CorpusVersion::V3 => "deskbroker-cad-corpus-v3",
        }
    }

    /// Parses a full name or its short form (`v1`, `v2`, `v3`).
    pub fn parse(name: &str) -> Result<Self, CadError> {
        Self::ALL
            .into_iter()
            .find(|version| {
                version.as_str() == name || version.as_str().ends_with(&format!("-{name}"))
            })
            .ok_or_else(|| CadError::UnknownCorpusVersion(name.to_owned()))
    }
}

impl fmt::Display for CorpusVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether the task is a 2D drawing or a 3D model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DrawingType {
    /// A 2D drawing.
    #[serde(rename = "2d")]
    TwoD,
    /// A 3D model: a true solid and its `Layout1` sheet, in FreeCAD.
    #[serde(rename = "3d")]
    ThreeD,
}

/// Difficulty level. 2D tasks: as each variant says. 3D tasks (corpus v2): L2 a plate
/// (holes, pocket, finished corners), L3 an L-bracket (holes in two directions, a rounded
/// bend), L4 a revolved flange (bore, bolt circle, often a section view).
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

/// Budgets of every 3D task: the contract's 1,800 s from handoff.
pub const BUDGETS_3D: Budgets = Budgets {
    max_actions: 5000,
    wall_time_s: 1800,
};

/// The file kind a task's artifact (and its gold) is, by drawing type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArtifactKind {
    /// A DXF drawing, scored by [`crate::score`].
    Dxf,
    /// A FreeCAD document, scored by [`crate::score3d::score_fcstd`].
    Fcstd,
}

impl ArtifactKind {
    /// The file extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            ArtifactKind::Dxf => "dxf",
            ArtifactKind::Fcstd => "FCStd",
        }
    }
}

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
    /// The app profile the task is played in (`librecad`, `freecad`); absent in corpus v1,
    /// whose tasks all run in the broker's default profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

impl Task {
    /// What the task's artifact and gold are.
    pub fn artifact_kind(&self) -> ArtifactKind {
        match self.drawing_type {
            DrawingType::TwoD => ArtifactKind::Dxf,
            DrawingType::ThreeD => ArtifactKind::Fcstd,
        }
    }

    /// The file name a rollout keeps the retrieved artifact under: `attempt.<ext>`.
    pub fn attempt_file_name(&self) -> String {
        format!("attempt.{}", self.artifact_kind().extension())
    }
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
