//! The fake app's save: on a `ctrl+s` chord, a line appended to the attempt file or an
//! explicit path, or the fixture DXF written over the attempt file.

use std::path::PathBuf;

use desk_contract::{InputAction, Key, Modifier};

use super::FakeDesktop;
use super::handle::FakeSave;
use crate::error::BackendError;

impl FakeDesktop {
    /// Saves as the app would when `action` is the `ctrl+s` chord; anything else saves nothing.
    pub(super) fn save_on_chord(&mut self, action: &InputAction) -> Result<(), BackendError> {
        if is_save_chord(action) {
            self.simulate_save()?;
        }
        Ok(())
    }

    fn simulate_save(&mut self) -> Result<(), BackendError> {
        let save = self.handle.lock().save.clone();
        let save_fixture = save == FakeSave::FixtureDxf;
        let target = match save {
            FakeSave::Disabled => return Ok(()),
            FakeSave::Path(path) => path,
            FakeSave::AttemptFromArgv | FakeSave::FixtureDxf => {
                match self.launch.as_ref().and_then(|launch| launch.argv.last()) {
                    Some(last) => PathBuf::from(last),
                    None => return Ok(()),
                }
            }
        };
        let n_saves = {
            let mut script = self.handle.lock();
            script.n_saves += 1;
            script.n_saves
        };
        let contents = if save_fixture {
            crate::fake_dxf::fixture_dxf(self.handle.n_inputs()).into_bytes()
        } else {
            let mut contents = std::fs::read(&target).unwrap_or_default();
            contents.extend_from_slice(format!("saved by fake desktop {n_saves}\n").as_bytes());
            contents
        };
        std::fs::write(&target, contents).map_err(|error| {
            BackendError::OutcomeUnknown(format!(
                "fake save to {} failed: {error}",
                target.display()
            ))
        })
    }
}

fn is_save_chord(action: &InputAction) -> bool {
    matches!(action, InputAction::Key { keys }
        if keys.as_slice() == [Key::Modifier(Modifier::Ctrl), Key::Char('s')])
}
