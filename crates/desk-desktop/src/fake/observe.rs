//! What the fake shows of its app besides pixels: its top-level windows (the main window,
//! plus the dialogs a test opens through the [`super::FakeHandle`]) and, when a test turns it
//! on, a small accessibility tree walked within the caller's limits as the worker walks AT-SPI:
//! breadth first, `nodes[i].index == i`, nothing deeper than `max_depth`, at most `max_nodes`,
//! and `truncated` whenever an object was left out.

use desk_contract::a11y::{AxLimits, AxNode, AxTree, AxWindow};
use desk_contract::desktop::{AppWindowInfo, WindowRect, WindowRole};

/// One object of the fake app's tree before the walk: role, name, actions, editable, children.
struct Object {
    role: &'static str,
    name: &'static str,
    actions: &'static [&'static str],
    editable: bool,
    bounds: WindowRect,
    children: Vec<Object>,
}

fn leaf(role: &'static str, name: &'static str, bounds: WindowRect) -> Object {
    let (actions, editable): (&'static [&'static str], bool) = match role {
        "push button" => (&["click"], false),
        "text" => (&[], true),
        _ => (&[], false),
    };
    Object {
        role,
        name,
        actions,
        editable,
        bounds,
        children: Vec::new(),
    }
}

fn rect(x: i32, y: i32, width: u32, height: u32) -> WindowRect {
    WindowRect {
        x,
        y,
        width,
        height,
    }
}

/// The fake app: an application holding its main frame (the whole display), which holds a
/// toolbar with two buttons and a text entry: 6 objects on 4 levels.
fn app(display: WindowRect) -> Object {
    let toolbar = Object {
        children: vec![
            leaf("push button", "Open", rect(0, 0, 60, 24)),
            leaf("push button", "Save", rect(60, 0, 60, 24)),
        ],
        ..leaf("tool bar", "", rect(0, 0, display.width, 24))
    };
    let frame = Object {
        children: vec![toolbar, leaf("text", "Name", rect(10, 40, 200, 24))],
        ..leaf("frame", "fake app", display)
    };
    Object {
        children: vec![frame],
        ..leaf("application", "fakeapp", display)
    }
}

/// Walks the fake app's tree within `limits`; `id` names the observation.
pub(super) fn accessibility(display: WindowRect, limits: AxLimits, id: String) -> AxTree {
    let root = app(display);
    let mut nodes: Vec<AxNode> = Vec::new();
    let mut truncated = false;
    // Breadth first: (object, parent index, depth).
    let mut queue: std::collections::VecDeque<(&Object, Option<u32>, u32)> =
        std::collections::VecDeque::from([(&root, None, 0)]);
    while let Some((object, parent, depth)) = queue.pop_front() {
        if nodes.len() >= usize::try_from(limits.max_nodes).unwrap_or(usize::MAX) {
            truncated = true;
            break;
        }
        let index = u32::try_from(nodes.len()).unwrap_or(u32::MAX);
        let window = match depth {
            0 => AxWindow::None,
            _ => AxWindow::Bound,
        };
        nodes.push(AxNode {
            index,
            parent,
            depth,
            role: object.role.to_string(),
            name: object.name.to_string(),
            states: vec!["enabled".to_string(), "showing".to_string()],
            bounds: (depth > 0).then_some(object.bounds),
            actions: object.actions.iter().map(|a| (*a).to_string()).collect(),
            editable: object.editable,
            child_count: u32::try_from(object.children.len()).unwrap_or(u32::MAX),
            window,
        });
        if object.children.is_empty() {
            continue;
        }
        if depth + 1 > limits.max_depth {
            truncated = true;
            continue;
        }
        queue.extend(
            object
                .children
                .iter()
                .map(|child| (child, Some(index), depth + 1)),
        );
    }
    AxTree {
        observation_id: id,
        nodes,
        truncated,
        elapsed_ms: 0,
    }
}

/// The app's top-level windows: its main window covering the display, then the open dialogs
/// (centred, 300x200, as titled).
pub(super) fn windows(
    main_id: u32,
    display: WindowRect,
    dialogs: &[(u32, String)],
) -> Vec<AppWindowInfo> {
    let mut windows = vec![AppWindowInfo {
        window_id: main_id,
        title: "fake app".to_string(),
        role: WindowRole::Main,
        bounds: display,
        on_screen: true,
    }];
    let centre = |size: u32, of: u32| i32::try_from(of.saturating_sub(size) / 2).unwrap_or(0);
    windows.extend(dialogs.iter().map(|(id, title)| AppWindowInfo {
        window_id: *id,
        title: title.clone(),
        role: WindowRole::Dialog,
        bounds: rect(
            centre(300, display.width),
            centre(200, display.height),
            300,
            200,
        ),
        on_screen: true,
    }));
    windows
}
