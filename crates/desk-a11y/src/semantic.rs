//! Semantic actions on a retained node: checks before input (current observation, node,
//! owning window, enabled, action or editable text), then exactly one provider call. A check
//! that the provider does not answer in time is `ProviderBusy` (nothing sent); a failure or a
//! timeout after the call was sent is `OutcomeUnknown`. No coordinate fallback.

use std::time::Duration;

use atspi::proxy::application::ApplicationProxy;
use atspi::proxy::editable_text::EditableTextProxy;
use atspi::proxy::text::TextProxy;
use atspi::{CoordType, Interface, State};
use desk_contract::a11y::AxWindow;
use zbus::Connection;
use zbus::proxy::CacheProperties;

use crate::access::{Accessibility, BoundWindow, classify};
use crate::observe::{Retained, accessible, action, component, rect};
use crate::{A11yError, TextMode};

/// The checks before input must finish within this.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);
/// The provider call itself.
const INPUT_TIMEOUT: Duration = Duration::from_secs(5);

/// What a check found about the target.
struct Target {
    bus_name: String,
    path: String,
}

impl Accessibility {
    /// The retained node after the checks that need no bus.
    pub(crate) fn retained(
        &self,
        observation_id: &str,
        node: u32,
    ) -> Result<(Retained, u32), A11yError> {
        let current = self
            .current
            .as_ref()
            .filter(|current| current.id == observation_id)
            .ok_or_else(|| A11yError::StaleObservation(observation_id.to_string()))?;
        let retained =
            current
                .nodes
                .get(node as usize)
                .cloned()
                .ok_or_else(|| A11yError::NoSuchNode {
                    observation_id: observation_id.to_string(),
                    node,
                    count: current.nodes.len(),
                })?;
        let toplevel = retained.toplevel.ok_or_else(|| {
            A11yError::NotActionable("node 0 is the application itself".to_string())
        })?;
        Ok((retained, toplevel))
    }

    fn toplevel_names(&self, toplevel: u32) -> Option<(Retained, String)> {
        let current = self.current.as_ref()?;
        Some((
            current.nodes.get(toplevel as usize)?.clone(),
            current.roles.get(toplevel as usize)?.clone(),
        ))
    }

    /// Runs the checks, then `input` once; maps timeouts as described in the module.
    fn perform<F>(
        &mut self,
        observation_id: &str,
        node: u32,
        bound: BoundWindow,
        needs: Interface,
        input: F,
    ) -> Result<(), A11yError>
    where
        F: AsyncFnOnce(&Connection, &Target) -> zbus::Result<bool>,
    {
        let (retained, toplevel) = self.retained(observation_id, node)?;
        let (top, top_role) = self
            .toplevel_names(toplevel)
            .ok_or_else(|| A11yError::StaleObservation(observation_id.to_string()))?;
        let connection = self.connect()?;
        let connection = connection.connection().clone();
        let target = Target {
            bus_name: retained.bus_name,
            path: retained.path,
        };
        self.runtime.block_on(async {
            let checks = check(&connection, &target, &top, &top_role, bound, needs);
            match tokio::time::timeout(CHECK_TIMEOUT, checks).await {
                Ok(result) => result?,
                Err(_) => {
                    return Err(A11yError::ProviderBusy(format!(
                        "no answer to the checks within {} s; nothing was sent",
                        CHECK_TIMEOUT.as_secs()
                    )));
                }
            }
            match tokio::time::timeout(INPUT_TIMEOUT, input(&connection, &target)).await {
                Ok(Ok(true)) => Ok(()),
                Ok(Ok(false)) => Err(A11yError::OutcomeUnknown(
                    "the provider reported failure".to_string(),
                )),
                Ok(Err(error)) => Err(A11yError::OutcomeUnknown(error.to_string())),
                Err(_) => Err(A11yError::OutcomeUnknown(format!(
                    "no answer within {} s",
                    INPUT_TIMEOUT.as_secs()
                ))),
            }
        })
    }

    /// Performs the node's default action (action 0) once.
    pub fn press(
        &mut self,
        observation_id: &str,
        node: u32,
        bound: BoundWindow,
    ) -> Result<(), A11yError> {
        self.perform(
            observation_id,
            node,
            bound,
            Interface::Action,
            async |connection, target| {
                action(connection, &target.bus_name, &target.path)
                    .await?
                    .do_action(0)
                    .await
            },
        )
    }

    /// Sets (`Set`: the whole contents) or inserts (`Insert`: over the one selection, or at
    /// the caret) `text` in an editable node.
    pub fn set_text(
        &mut self,
        observation_id: &str,
        node: u32,
        bound: BoundWindow,
        text: &str,
        mode: TextMode,
    ) -> Result<(), A11yError> {
        // Refused before input: several selected ranges (AX-17).
        if mode == TextMode::Insert {
            let (retained, _) = self.retained(observation_id, node)?;
            let connection = self.connect()?;
            let connection = connection.connection().clone();
            let read = self.runtime.block_on(async {
                let reads = async {
                    let text = text_proxy(&connection, &retained.bus_name, &retained.path).await?;
                    let count = text.get_n_selections().await?;
                    let caret = text.caret_offset().await?;
                    let first = if count == 1 {
                        Some(text.get_selection(0).await?)
                    } else {
                        None
                    };
                    let toolkit = application(&connection, &retained.bus_name)
                        .await?
                        .toolkit_name()
                        .await?;
                    Ok::<_, zbus::Error>((count, caret, first, toolkit))
                };
                tokio::time::timeout(CHECK_TIMEOUT, reads).await
            });
            let (count, caret, first, toolkit) = match read {
                Ok(result) => result.map_err(|error| {
                    A11yError::NotActionable(format!("the node's text is unreadable: {error}"))
                })?,
                Err(_) => {
                    return Err(A11yError::ProviderBusy(format!(
                        "no answer about the node's selection within {} s; nothing was sent",
                        CHECK_TIMEOUT.as_secs()
                    )));
                }
            };
            if count > 1 {
                return Err(A11yError::NotActionable(format!(
                    "the node has {count} selected ranges; insertion needs at most one"
                )));
            }
            // InsertText's length: Qt's bridge cuts the string to that many UTF-16 units (and
            // pads a longer one); ATK's takes UTF-8 bytes.
            let units = if toolkit.starts_with("Qt") {
                text.encode_utf16().count()
            } else {
                text.len()
            };
            let length = i32::try_from(units).map_err(|_| {
                A11yError::NotActionable(format!("a text of {units} units is too long"))
            })?;
            let text = text.to_string();
            return self.perform(
                observation_id,
                node,
                bound,
                Interface::EditableText,
                async move |connection, target| {
                    let edit = editable(connection, &target.bus_name, &target.path).await?;
                    let at = match first {
                        Some((start, end)) if start != end => {
                            if !edit.delete_text(start.min(end), start.max(end)).await? {
                                return Ok(false);
                            }
                            start.min(end)
                        }
                        _ => caret,
                    };
                    edit.insert_text(at, &text, length).await
                },
            );
        }
        let text = text.to_string();
        self.perform(
            observation_id,
            node,
            bound,
            Interface::EditableText,
            async move |connection, target| {
                editable(connection, &target.bus_name, &target.path)
                    .await?
                    .set_text_contents(&text)
                    .await
            },
        )
    }
}

async fn application<'a>(
    connection: &'a Connection,
    bus_name: &str,
) -> zbus::Result<ApplicationProxy<'a>> {
    ApplicationProxy::builder(connection)
        .destination(bus_name.to_string())?
        .path("/org/a11y/atspi/accessible/root")?
        .cache_properties(CacheProperties::No)
        .build()
        .await
}

async fn text_proxy<'a>(
    connection: &'a Connection,
    bus_name: &str,
    path: &str,
) -> zbus::Result<TextProxy<'a>> {
    TextProxy::builder(connection)
        .destination(bus_name.to_string())?
        .path(path.to_string())?
        .cache_properties(CacheProperties::No)
        .build()
        .await
}

async fn editable<'a>(
    connection: &'a Connection,
    bus_name: &str,
    path: &str,
) -> zbus::Result<EditableTextProxy<'a>> {
    EditableTextProxy::builder(connection)
        .destination(bus_name.to_string())?
        .path(path.to_string())?
        .cache_properties(CacheProperties::No)
        .build()
        .await
}

/// The checks before input, read live: the owning top-level window is the bound window (a
/// frame with the bound window's rectangle) or a popup; the node is enabled and has `needs`.
async fn check(
    connection: &Connection,
    target: &Target,
    top: &Retained,
    top_role: &str,
    bound: BoundWindow,
    needs: Interface,
) -> Result<(), A11yError> {
    let gone = |error: zbus::Error| A11yError::NotActionable(format!("the node is gone: {error}"));
    // The owning window, read live: a popup by role, the bound window by its rectangle now.
    let extents = if top_role == "frame" {
        let top_component = component(connection, &top.bus_name, &top.path)
            .await
            .map_err(gone)?;
        rect(
            top_component
                .get_extents(CoordType::Screen)
                .await
                .map_err(gone)?,
        )
    } else {
        None
    };
    if classify(top_role, extents, Some(bound)) == AxWindow::Other {
        return Err(A11yError::ForeignWindow(format!(
            "the node's window ({top_role} at {extents:?}) is not the app's bound window ({:?}) \
             or one of its popups",
            bound.rect
        )));
    }
    let proxy = accessible(connection, &target.bus_name, &target.path)
        .await
        .map_err(gone)?;
    let (states, interfaces) =
        tokio::try_join!(proxy.get_state(), proxy.get_interfaces()).map_err(gone)?;
    if !states.contains(State::Enabled) {
        return Err(A11yError::NotActionable("the node is disabled".to_string()));
    }
    if !interfaces.contains(needs) {
        return Err(A11yError::NotActionable(format!(
            "the node does not implement {needs:?}"
        )));
    }
    if needs == Interface::Action {
        let count = action(connection, &target.bus_name, &target.path)
            .await
            .map_err(gone)?
            .n_actions()
            .await
            .map_err(gone)?;
        if count < 1 {
            return Err(A11yError::NotActionable(
                "the node has no action".to_string(),
            ));
        }
    }
    if needs == Interface::EditableText && !states.contains(State::Editable) {
        return Err(A11yError::NotActionable(
            "the node is read-only".to_string(),
        ));
    }
    Ok(())
}
