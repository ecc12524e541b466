//! Held input: the keys and buttons checked at every boundary (after each action, after a
//! failed one, at `release_held`, when the client goes away) and released when down.

use desk_contract::Button;

use super::Worker;
use crate::error::WinError;
use crate::plan::PlannedStep;
use crate::platform::{Platform, Step};

/// Keys and buttons checked (and released) at every boundary: name, virtual key, release step.
const HELD_CHECKS: &[(&str, u16)] = &[
    ("shift", 0x10),
    ("ctrl", 0x11),
    ("alt", 0x12),
    ("lwin", 0x5B),
    ("rwin", 0x5C),
    ("mouse_left", 0x01),
    ("mouse_right", 0x02),
    ("mouse_middle", 0x04),
];

impl<P: Platform> Worker<P> {
    /// Sends the release of everything `sent` left down, then whatever the key state shows.
    pub(super) fn release_after_failure(&mut self, sent: &[PlannedStep]) -> Vec<String> {
        let mut down: Vec<Step> = Vec::new();
        for planned in sent {
            match planned.step {
                Step::Key {
                    vk,
                    extended,
                    down: true,
                } => down.push(Step::Key {
                    vk,
                    extended,
                    down: false,
                }),
                Step::Button { button, down: true } => down.push(Step::Button {
                    button,
                    down: false,
                }),
                Step::Unicode { unit, down: true } => {
                    down.push(Step::Unicode { unit, down: false })
                }
                Step::Key {
                    vk, down: false, ..
                } => {
                    down.retain(|step| !matches!(step, Step::Key { vk: held, .. } if *held == vk));
                }
                Step::Button {
                    button,
                    down: false,
                } => down.retain(
                    |step| !matches!(step, Step::Button { button: held, .. } if *held == button),
                ),
                Step::Unicode { unit, down: false } => down.retain(
                    |step| !matches!(step, Step::Unicode { unit: held, .. } if *held == unit),
                ),
                _ => {}
            }
        }
        for release in down.iter().rev() {
            let _ = self.platform.send(release);
        }
        self.release_held().unwrap_or_default()
    }

    /// Releases every key and button the key state shows down; returns their names.
    pub fn release_held(&mut self) -> Result<Vec<String>, WinError> {
        let mut released = Vec::new();
        for (name, vk) in HELD_CHECKS {
            if self.platform.key_down(*vk)? {
                let step = match *vk {
                    0x01 => Step::Button {
                        button: Button::Left,
                        down: false,
                    },
                    0x02 => Step::Button {
                        button: Button::Right,
                        down: false,
                    },
                    0x04 => Step::Button {
                        button: Button::Middle,
                        down: false,
                    },
                    vk => Step::Key {
                        vk,
                        extended: matches!(vk, 0x5B | 0x5C),
                        down: false,
                    },
                };
                self.platform.send(&step)?;
                released.push((*name).to_string());
            }
        }
        Ok(released)
    }

    pub(super) fn held(&mut self) -> Result<Vec<String>, WinError> {
        let mut held = Vec::new();
        for (name, vk) in HELD_CHECKS {
            if self.platform.key_down(*vk)? {
                held.push((*name).to_string());
            }
        }
        Ok(held)
    }
}
