//! [`Delivering`]: an action's or a program's answer on its way through the ledger's
//! `delivered`, its screenshot holding raw PNG bytes (`png`, no base64: desk-server writes
//! base64 only for a caller that wants JSON).
//!
//! The journal row caches the answer without the image when the frame file was stored (a
//! replay reads the file back). When the frame file failed, the row must keep the image itself,
//! as base64: the ledger names that failure in the answer (`observation_failures`) before the
//! row is written (the row carries the name), so the base64 is made exactly there, and only
//! when some observation failed.

use desk_contract::api::Screenshot;

use crate::frames::CarriesShot;
use crate::ledger::Answer;

/// `T` while the ledger records it; see the module doc.
#[derive(Clone, serde::Serialize)]
#[serde(transparent)]
pub(crate) struct Delivering<T>(pub(crate) T);

impl<T: CarriesShot> CarriesShot for Delivering<T> {
    fn screenshot(&self) -> Option<&Screenshot> {
        self.0.screenshot()
    }
    fn screenshot_mut(&mut self) -> Option<&mut Screenshot> {
        self.0.screenshot_mut()
    }
}

impl<T: Answer> Answer for Delivering<T> {
    fn observation_failures(&mut self) -> &mut Vec<String> {
        if let Some(shot) = self.0.screenshot_mut()
            && shot.png_base64.is_empty()
            && let Some(png) = &shot.png
        {
            shot.png_base64 = desk_contract::b64::encode(&png.0);
        }
        self.0.observation_failures()
    }
    fn set_replayed(&mut self) {
        self.0.set_replayed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer as the ledger sees one: failures and a screenshot.
    #[derive(Clone, serde::Serialize)]
    struct Fake {
        failures: Vec<String>,
        shot: Screenshot,
    }

    impl CarriesShot for Fake {
        fn screenshot(&self) -> Option<&Screenshot> {
            Some(&self.shot)
        }
        fn screenshot_mut(&mut self) -> Option<&mut Screenshot> {
            Some(&mut self.shot)
        }
    }

    impl Answer for Fake {
        fn observation_failures(&mut self) -> &mut Vec<String> {
            &mut self.failures
        }
        fn set_replayed(&mut self) {}
    }

    #[test]
    fn a_named_failure_keeps_the_image_in_the_row() {
        let mut shot: Screenshot = serde_json::from_value(serde_json::json!({
            "png_base64": "", "width": 1, "height": 1, "sequence": 1,
            "timestamp_ms": 0, "app_maximized": true, "sha256": "ab",
        }))
        .expect("a screenshot");
        shot.png = Some(b"png bytes".as_slice().into());
        let mut delivering = Delivering(Fake {
            failures: Vec::new(),
            shot,
        });
        // Nothing failed: the row's JSON has no image (the frame file has it), and is the
        // answer's own JSON.
        let row = serde_json::to_value(&delivering).expect("serializes");
        assert_eq!(row["shot"]["png_base64"], "");
        assert_eq!(
            row,
            serde_json::to_value(&delivering.0).expect("serializes")
        );
        // A failure named: the row carries the base64 of the bytes.
        delivering
            .observation_failures()
            .push("frame_store".to_string());
        let row = serde_json::to_value(&delivering).expect("serializes");
        assert_eq!(
            row["shot"]["png_base64"],
            desk_contract::b64::encode(b"png bytes")
        );
        assert_eq!(row["failures"][0], "frame_store");
    }
}
