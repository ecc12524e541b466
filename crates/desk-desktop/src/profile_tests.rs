//! Unit tests of app profiles: FreeCAD's prepared document and home, templates, read-only
//! paths, and limits over the defaults.

use super::*;
use crate::sandbox::SandboxPolicy;

#[test]
fn freecad_profile_prepares_a_zipped_document_and_its_locked_down_home() {
    let set = ProfileSet::builtin().unwrap();
    let profile = set.get("freecad").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prepared = profile
        .prepare(dir.path(), SandboxPolicy::default_for_this_process(), &[])
        .unwrap();
    let bytes = std::fs::read(&prepared.attempt_path).unwrap();
    assert!(
        bytes.starts_with(b"PK\x03\x04"),
        "an FCStd is a zip archive"
    );
    assert!(
        bytes.windows(12).any(|w| w == b"Document.xml"),
        "the archive holds Document.xml"
    );
    let home = dir.path().join("workspace/home");
    let config = std::fs::read_to_string(home.join(".config/FreeCAD/user.cfg")).unwrap();
    for pinned in [
        r#"<FCBool Name="ShowSplasher" Value="0"/>"#,
        r#"<FCInt Name="UserSchema" Value="0"/>"#,
        r#"<FCText Name="AutoloadModule">PartDesignWorkbench</FCText>"#,
        r#"<FCBool Name="AutoSaveEnabled" Value="0"/>"#,
    ] {
        assert!(config.contains(pinned), "user.cfg lacks {pinned}");
    }
    let lockdown =
        std::fs::read_to_string(home.join(".local/share/FreeCAD/Mod/DeskLockdown/InitGui.py"))
            .unwrap();
    for blocked in [
        "Std_DlgMacroExecute",
        "Std_AddonMgr",
        "Python console",
        "Report view",
    ] {
        assert!(lockdown.contains(blocked), "the lockdown misses {blocked}");
    }
    assert_eq!(prepared.save_keys, ["ctrl", "s"]);
    assert!(
        prepared
            .launch
            .env
            .iter()
            .any(|(k, v)| k == "QTWEBENGINE_DISABLE_SANDBOX" && v == "1")
    );
    assert_eq!(
        prepared.launch.window.ready_title_contains.as_deref(),
        Some("FreeCAD - attempt.FCStd")
    );
}

#[test]
fn a_binary_template_is_exclusive_with_a_text_one_and_must_be_base64() {
    let base = "name = \"x\"\ncommand = [\"true\"]\n[window]\n[attempt]\nfilename = \"a.bin\"\n";
    let both = format!("{base}template = \"t\"\ntemplate_base64 = \"AAEC\"\n");
    assert!(matches!(
        AppProfile::from_toml("x", &both),
        Err(ProfileError::Invalid { .. })
    ));
    let garbage = format!("{base}template_base64 = \"not base64!\"\n");
    assert!(matches!(
        AppProfile::from_toml("x", &garbage),
        Err(ProfileError::Invalid { .. })
    ));
    let good = format!("{base}template_base64 = \"\"\"\nAAEC\n/w==\n\"\"\"\n");
    let profile = AppProfile::from_toml("x", &good).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prepared = profile
        .prepare(dir.path(), SandboxPolicy::default_for_this_process(), &[])
        .unwrap();
    assert_eq!(
        std::fs::read(prepared.attempt_path).unwrap(),
        [0u8, 1, 2, 255]
    );
}

#[test]
fn read_only_paths_must_be_absolute_plain_and_not_the_root() {
    let profile = |binds: &str| {
        AppProfile::from_toml(
            "t",
            &format!(
                "name = \"t\"\ncommand = [\"x\"]\nread_only = [{binds}]\n[attempt]\n\
                 filename = \"a.txt\"\n[window]\nclass = \"c\"\n"
            ),
        )
    };
    let accepted = profile("\"/opt/app\", \"/srv/inputs/task-1\"").unwrap();
    assert_eq!(
        accepted.read_only,
        [
            PathBuf::from("/opt/app"),
            PathBuf::from("/srv/inputs/task-1")
        ]
    );
    for bad in ["\"/\"", "\"opt/app\"", "\"/opt/../root\"", "\"\""] {
        let error = profile(bad).expect_err(bad).to_string();
        assert!(
            error.contains("read_only paths must be absolute"),
            "{bad}: {error}"
        );
    }
}

#[test]
fn limits_come_from_the_profile_over_the_defaults_and_bad_values_are_refused() {
    use crate::sandbox::cgroup::Limits;
    let builtin = ProfileSet::builtin().unwrap();
    assert_eq!(
        builtin.get("librecad").unwrap().limits(),
        Limits {
            memory_bytes: 1 << 30,
            ..Limits::default()
        }
    );
    assert_eq!(builtin.get("generic").unwrap().limits(), Limits::default());
    assert_eq!(Limits::for_profile("librecad").memory_bytes, 1 << 30);
    assert_eq!(Limits::for_profile("no-such-profile"), Limits::default());
    let base = "name = \"x\"\ncommand = [\"x\"]\n[attempt]\nfilename = \"a.txt\"\n\
                template = \"\"\n[window]\n";
    let with = |table: &str| AppProfile::from_toml("x", &format!("{base}[limits]\n{table}"));
    let profile = with("memory_mib = 300\npids = 200\ncpu_percent = 50\n").unwrap();
    assert_eq!(
        profile.limits(),
        Limits {
            memory_bytes: 300 << 20,
            pids: 200,
            cpu_percent: 50
        }
    );
    for bad in [
        "memory_mib = 0",
        "memory_mib = 63",
        "memory_mib = 65537",
        "pids = 1",
        "pids = 100000",
        "cpu_percent = 0",
        "cpu_percent = 7000",
    ] {
        let error = with(bad).unwrap_err();
        assert!(
            matches!(&error, ProfileError::Invalid { message, .. } if message.contains("limits.")),
            "{bad}: {error}"
        );
    }
    for malformed in ["memory_mib = -5", "memory_mib = \"1G\"", "swap_mib = 10"] {
        let error = with(malformed).unwrap_err();
        assert!(
            matches!(error, ProfileError::Parse { .. }),
            "{malformed}: {error}"
        );
    }
}

/// The AutoCAD profile (not a built-in: a file loaded with `--profiles DIR`) as shipped.
const AUTOCAD: &str = include_str!("../profiles/autocad.toml");

#[test]
fn the_autocad_profile_loads_and_a_reset_needs_the_operators_dwg_template() {
    let profile = AppProfile::from_toml("autocad.toml", AUTOCAD).unwrap();
    assert_eq!(profile.name, "autocad");
    assert!(profile.command[0].ends_with(r"\AutoCAD 2019\acad.exe"));
    assert_eq!(profile.save_keys, ["ctrl", "s"]);
    assert_eq!(profile.attempt.filename, "attempt.dwg");
    assert_eq!(profile.attempt.format, ArtifactFormat::Dwg);
    assert_eq!(profile.window.class.as_deref(), Some("AfxMDIFrame140u"));
    assert_eq!(
        profile.window.title_prefix.as_deref(),
        Some("Autodesk AutoCAD 2019")
    );
    assert!(profile.overlays.is_empty() && profile.window.prohibited.is_empty());
    // Loaded from a directory beside the built-ins, it joins them under its own name.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("autocad.toml"), AUTOCAD).unwrap();
    let mut set = ProfileSet::builtin().unwrap();
    set.load_dir(dir.path()).unwrap();
    assert!(set.names().contains(&"autocad".to_string()));

    // As shipped it has no template: a reset refuses and writes no attempt file.
    let session = tempfile::tempdir().unwrap();
    let policy = SandboxPolicy::default_for_this_process();
    let writable = [std::path::PathBuf::from("attempt")];
    match profile.prepare(session.path(), policy, &writable) {
        Err(ProfileError::Invalid { message, .. }) => {
            assert!(message.contains("AC1032"), "{message}")
        }
        other => panic!("expected invalid, got {other:?}"),
    }
    assert!(
        !session
            .path()
            .join("workspace/attempt/attempt.dwg")
            .exists()
    );

    // With a template that opens with AC1032, the reset writes exactly those bytes.
    let drawing = b"AC1032\0\0\0\0\0\x1f\x00constructed, not an AutoCAD drawing";
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(drawing);
    let filled = AUTOCAD.replace(
        "# template_base64 = \"\"\"...\"\"\"",
        &format!("template_base64 = \"{encoded}\""),
    );
    let profile = AppProfile::from_toml("autocad.toml", &filled).unwrap();
    let prepared = profile.prepare(session.path(), policy, &writable).unwrap();
    assert_eq!(std::fs::read(&prepared.attempt_path).unwrap(), drawing);
    assert_eq!(
        prepared.launch.window.ready_title_contains.as_deref(),
        Some("attempt.dwg")
    );
    assert_eq!(
        prepared.launch.window.class.as_deref(),
        Some("AfxMDIFrame140u")
    );

    // A template of another kind is refused the same way.
    let wrong = AUTOCAD.replace(
        "# template_base64 = \"\"\"...\"\"\"",
        "template_base64 = \"QUMxMDI3\"",
    );
    let profile = AppProfile::from_toml("autocad.toml", &wrong).unwrap();
    assert!(matches!(
        profile.prepare(session.path(), policy, &writable),
        Err(ProfileError::Invalid { .. })
    ));
}

#[test]
fn a_profiles_sandbox_table_is_checked_and_names_its_app() {
    let profile = |table: &str| {
        AppProfile::from_toml(
            "t",
            &format!(
                "name = \"t\"\ncommand = [\"librecad\", \"{{attempt}}\"]\n{table}\n\
                 [attempt]\nfilename = \"a.dxf\"\n[window]\n"
            ),
        )
    };
    for bad in [
        "[sandbox]\nview = \"broad\"\npaths = [\"/usr/share/x\"]",
        "[sandbox]\nview = \"allowlist\"\npaths = [\"usr/share\"]",
        "[sandbox]\nview = \"allowlist\"\npaths = [\"/usr/../etc\"]",
        "[sandbox]\nview = \"allowlist\"\nlibraries = [\"/lib/libc.so.6\"]",
        "[sandbox]\nview = \"allowlist\"\nprograms = [\"bin/sh\"]",
        "[sandbox]\nview = \"everything\"",
        "[sandbox]\nview = \"allowlist\"\nshell = true",
    ] {
        assert!(profile(bad).is_err(), "{bad}");
    }
    let good =
        profile("[sandbox]\nview = \"allowlist\"\npaths = [\"/usr/share/librecad\"]").unwrap();
    let crate::sandbox::FsView::Allowlist(spec) = good.fs_view() else {
        panic!("an allowlist");
    };
    assert_eq!(spec.programs, vec!["librecad".to_string()]);
    assert_eq!(
        profile("").unwrap().fs_view(),
        crate::sandbox::FsView::Broad
    );
}
