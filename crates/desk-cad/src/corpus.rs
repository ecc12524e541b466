//! The public task corpus: task types, `tasks.json`, reference PNGs and private gold files.
//!
//! Invariant: public data (`tasks.json`, `references/<id>.png`) never names or embeds a gold
//! path; gold files live only under the separate gold directory: `<id>.dxf` for a 2D task,
//! `<id>.FCStd` for a 3D one. Generation is a pure function of the [`CorpusVersion`], so
//! writing the corpus twice gives identical public bytes (and identical 2D gold; a 3D gold is
//! a FreeCAD document, which FreeCAD stamps).
//!
//! Versions ([`CorpusVersion`]): `v1`, 28 2D tasks (dev 4); `v2`, the benchmark contract's
//! shape: 50 tasks, `task-001`..`task-021` 2D (the first five variants of levels L1-L3 and six
//! of L4 from v1's generator) and `task-022`..`task-050` 3D (the seeded parts of
//! [`crate::generate3d`], in FreeCAD, budget 1,800 s), dev 7 (3 2D + 4 3D), eval 43 (18 + 25);
//! and `v3` (the default), v2 with the drafting categories added to its L3 and L4 drawings
//! (leaders, angular dimensions, centre and hidden linetypes, hatched sections, multi-line
//! notes); its 3D tasks are v2's.

mod files;
mod task;

pub use task::*;

pub use files::{
    GeneratedPart, GeneratedTask, Gold, generate_corpus, generate_corpus_version, gold_file,
    gold_path, load_gold, load_task_gold, load_task_list, load_tasks, write_corpus,
    write_corpus_version,
};
