//! The built-in default policy (`default_policy.yaml`): a disposable, logged-out workspace with
//! no network, no clipboard, the attempt directory as the only writable directory, and the
//! profiles the broker serves. What `deskbroker serve` signs and enforces without `--policy`.

use crate::document::Policy;
use crate::error::PolicyError;

const TEMPLATE: &str = include_str!("default_policy.yaml");

/// The default policy allowing `profiles`; a profile name the lint refuses makes it fail.
pub fn default_policy<S: AsRef<str>>(profiles: &[S]) -> Result<Policy, PolicyError> {
    // JSON strings are YAML double-quoted scalars: no name can change the document's shape.
    let names: Vec<String> = profiles
        .iter()
        .map(|name| serde_json::Value::String(name.as_ref().to_string()).to_string())
        .collect();
    Policy::from_yaml(&TEMPLATE.replace("{profiles}", &names.join(", ")))
}
