//! Generating, writing and loading one corpus version: the tasks, the public reference PNGs
//! and the private gold files (`<id>.dxf` drawings, `<id>.FCStd` parts).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::task::{
    ArtifactKind, BUDGETS_2D, BUDGETS_3D, CONTRACT_VERSION, CorpusVersion, DrawingType, Level,
    Split, TASKS_FILE, Task, TaskId, TaskList,
};
use crate::dxf_io::{read_dxf, write_dxf};
use crate::error::CadError;
use crate::generate::{Drafting, TASKS_PER_LEVEL, generate_all};
use crate::generate3d::{PartTask, generate_part};
use crate::model::Model;
use crate::part_task::{build_part, render_views_png};
use crate::render::render_png;

/// Corpus v2's (and v3's) 2D tasks: how many of each level's v1 variants (L1..L4) it keeps,
/// first ones first.
const V2_DRAWINGS_PER_LEVEL: [usize; 4] = [5, 5, 5, 6];
/// Corpus v2's (and v3's) 3D tasks.
const V2_PARTS: u64 = 29;
/// Gold parts built at once when writing a corpus.
const BUILD_JOBS: usize = 2;

/// A generated 2D task with its gold drawing (in memory only).
#[derive(Clone, Debug, PartialEq)]
pub struct GeneratedTask {
    /// The public task.
    pub task: Task,
    /// The gold drawing.
    pub gold: Model,
}

/// A generated 3D task with what its gold is built from (in memory only).
#[derive(Clone, Debug, PartialEq)]
pub struct GeneratedPart {
    /// The public task.
    pub task: Task,
    /// The part, its views and its sheet.
    pub part: PartTask,
}

/// A task's gold, as the scorer and the oracle take it.
#[derive(Clone, Debug, PartialEq)]
pub enum Gold {
    /// A 2D task's gold drawing.
    Drawing(Model),
    /// A 3D task's gold `.FCStd` file (read only by the sandboxed judge).
    Part(PathBuf),
}

/// Every seventh task of each kind, starting with the fourth, is a dev task.
fn split_of(index_in_kind: usize) -> Split {
    if index_in_kind % 7 == 3 {
        Split::Dev
    } else {
        Split::Eval
    }
}

fn reference_path(id: &TaskId) -> String {
    format!("references/{id}.png")
}

/// The 2D tasks of the default corpus version.
pub fn generate_corpus() -> Vec<GeneratedTask> {
    generate_corpus_version(CorpusVersion::default()).0
}

/// Generates one corpus version in memory, deterministically: its 2D tasks, then its 3D ones
/// (ids continue after the 2D tasks).
pub fn generate_corpus_version(version: CorpusVersion) -> (Vec<GeneratedTask>, Vec<GeneratedPart>) {
    let (drawings, profile_2d) = match version {
        CorpusVersion::V1 => (generate_all(Drafting::Off), None),
        CorpusVersion::V2 | CorpusVersion::V3 => (
            generate_all(if version == CorpusVersion::V2 {
                Drafting::Off
            } else {
                Drafting::On
            })
            .into_iter()
            .enumerate()
            .filter(|(idx, _)| idx % TASKS_PER_LEVEL < V2_DRAWINGS_PER_LEVEL[idx / TASKS_PER_LEVEL])
            .map(|(_, generated)| generated)
            .collect(),
            Some("librecad".to_owned()),
        ),
    };
    let drawings: Vec<GeneratedTask> = drawings
        .into_iter()
        .enumerate()
        .map(|(idx, generated)| {
            let id = TaskId::from_number(idx + 1);
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
                    split: split_of(idx),
                    profile: profile_2d.clone(),
                },
                gold: generated.gold,
            }
        })
        .collect();
    let n_parts = match version {
        CorpusVersion::V1 => 0,
        CorpusVersion::V2 | CorpusVersion::V3 => V2_PARTS,
    };
    let first_number = drawings.len() + 1;
    let parts = (0..n_parts)
        .zip(0usize..)
        .map(|(index, idx)| {
            let id = TaskId::from_number(first_number + idx);
            let part = generate_part(index);
            GeneratedPart {
                task: Task {
                    reference_image: reference_path(&id),
                    prompt: part.prompt.replace("{reference}", &reference_path(&id)),
                    id,
                    drawing_type: DrawingType::ThreeD,
                    // The families of generate_part, by index: plate, bracket, flange.
                    level: match index % 3 {
                        0 => Level::L2,
                        1 => Level::L3,
                        _ => Level::L4,
                    },
                    units: "mm".to_owned(),
                    budgets: BUDGETS_3D,
                    split: split_of(idx),
                    profile: Some("freecad".to_owned()),
                },
                part,
            }
        })
        .collect();
    (drawings, parts)
}

fn create_dir(path: &Path) -> Result<(), CadError> {
    std::fs::create_dir_all(path).map_err(|source| CadError::Io {
        op: "create directory",
        path: path.to_owned(),
        source,
    })
}

/// Creates the gold directory (and missing parents) owner-only, 0700: gold is scorer-private.
/// An existing directory keeps its mode.
fn create_private_dir(path: &Path) -> Result<(), CadError> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|source| CadError::Io {
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

/// Writes the default corpus version; see [`write_corpus_version`].
pub fn write_corpus(public_dir: &Path, gold_dir: &Path) -> Result<Vec<Task>, CadError> {
    write_corpus_version(CorpusVersion::default(), public_dir, gold_dir)
}

/// Writes `tasks.json` and `references/<id>.png` under `public_dir` and each task's gold
/// (`<id>.dxf`, or `<id>.FCStd` built by sandboxed headless FreeCAD) under `gold_dir`.
/// Returns the public tasks.
pub fn write_corpus_version(
    version: CorpusVersion,
    public_dir: &Path,
    gold_dir: &Path,
) -> Result<Vec<Task>, CadError> {
    let (drawings, parts) = generate_corpus_version(version);
    create_dir(&public_dir.join("references"))?;
    create_private_dir(gold_dir)?;
    let mut tasks = Vec::with_capacity(drawings.len() + parts.len());
    for item in drawings {
        let png = render_png(&item.gold)?;
        write_file(&public_dir.join(&item.task.reference_image), &png)?;
        write_dxf(&item.gold, &gold_file(gold_dir, &item.task))?;
        tasks.push(item.task);
    }
    write_parts(&parts, public_dir, gold_dir)?;
    tasks.extend(parts.into_iter().map(|item| item.task));
    let list = TaskList {
        corpus_version: version.as_str().to_owned(),
        contract_version: CONTRACT_VERSION.to_owned(),
        tasks,
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

/// Builds every part's gold and reference, [`BUILD_JOBS`] at a time (each build is its own
/// sandboxed freecadcmd; every file depends only on its task, so the order does not matter).
fn write_parts(
    parts: &[GeneratedPart],
    public_dir: &Path,
    gold_dir: &Path,
) -> Result<(), CadError> {
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..BUILD_JOBS)
            .map(|_| {
                scope.spawn(|| {
                    loop {
                        let Some(item) = parts.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            return Ok(());
                        };
                        write_part(item, public_dir, gold_dir)?;
                    }
                })
            })
            .collect();
        workers.into_iter().try_for_each(|worker| {
            worker
                .join()
                .unwrap_or_else(|_| Err(CadError::Judge("a gold build thread panicked".into())))
        })
    })
}

fn write_part(item: &GeneratedPart, public_dir: &Path, gold_dir: &Path) -> Result<(), CadError> {
    let gold = gold_file(gold_dir, &item.task);
    let built = build_part(
        &item.part.spec,
        Some(&item.part.sheet),
        &item.part.views,
        &gold,
    )?;
    let png = render_views_png(&built.views, &item.part.sheet.notes)?;
    write_file(&public_dir.join(&item.task.reference_image), &png)
}

/// Loads the whole `public_dir/tasks.json` (versions and tasks).
pub fn load_task_list(public_dir: &Path) -> Result<TaskList, CadError> {
    let path = public_dir.join(TASKS_FILE);
    let bytes = std::fs::read(&path).map_err(|source| CadError::Io {
        op: "read",
        path: path.clone(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| CadError::Json {
        op: "decode",
        path,
        source,
    })
}

/// Loads the public task list from `public_dir/tasks.json`.
pub fn load_tasks(public_dir: &Path) -> Result<Vec<Task>, CadError> {
    Ok(load_task_list(public_dir)?.tasks)
}

/// The gold DXF path of 2D task `id` inside `gold_dir`.
pub fn gold_path(gold_dir: &Path, id: &TaskId) -> PathBuf {
    gold_dir.join(format!("{id}.dxf"))
}

/// The gold file of `task` inside `gold_dir`: `<id>.dxf` or `<id>.FCStd`.
pub fn gold_file(gold_dir: &Path, task: &Task) -> PathBuf {
    gold_dir.join(format!("{}.{}", task.id, task.artifact_kind().extension()))
}

/// Loads the gold model of 2D task `id` from `gold_dir/<id>.dxf`.
pub fn load_gold(gold_dir: &Path, id: &TaskId) -> Result<Model, CadError> {
    Ok(read_dxf(&gold_path(gold_dir, id))?.model)
}

/// Loads `task`'s gold: the drawing of a 2D task, the checked-present file of a 3D one.
pub fn load_task_gold(gold_dir: &Path, task: &Task) -> Result<Gold, CadError> {
    match task.artifact_kind() {
        ArtifactKind::Dxf => load_gold(gold_dir, &task.id).map(Gold::Drawing),
        ArtifactKind::Fcstd => {
            let path = gold_file(gold_dir, task);
            match std::fs::metadata(&path) {
                Ok(meta) if meta.is_file() => Ok(Gold::Part(path)),
                Ok(_) => Err(CadError::Io {
                    op: "read",
                    path,
                    source: std::io::Error::other("the gold is not a regular file"),
                }),
                Err(source) => Err(CadError::Io {
                    op: "read",
                    path,
                    source,
                }),
            }
        }
    }
}
