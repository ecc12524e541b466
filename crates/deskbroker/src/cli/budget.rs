//! `serve --memory-budget-mib`: a number of MiB, or `auto` (this process's cgroup memory
//! limit less what the broker itself keeps).

use std::path::Path;

/// What the broker keeps for itself under `auto`: the broker, its watchdog, SQLite and the
/// page cache of the journals.
pub(crate) const BROKER_RESERVE_MIB: u64 = 512;

/// The value of `--memory-budget-mib`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemoryBudget {
    /// This many MiB.
    Mib(u64),
    /// From the cgroup's limit.
    Auto,
}

/// Parses `auto` or a number of MiB from 64 to 16 TiB.
pub(crate) fn parse(text: &str) -> Result<MemoryBudget, String> {
    if text == "auto" {
        return Ok(MemoryBudget::Auto);
    }
    let mib: u64 = text
        .parse()
        .map_err(|_| format!("expected a number of MiB or `auto`, got {text:?}"))?;
    if !(64..=(16 << 20)).contains(&mib) {
        return Err(format!("{mib} MiB is outside 64..=16777216"));
    }
    Ok(MemoryBudget::Mib(mib))
}

impl MemoryBudget {
    /// The budget in MiB; `None` for `auto` without a cgroup limit. An `auto` limit at or
    /// below the broker's reserve is an error: no desktop would ever fit.
    pub(crate) fn resolve(self) -> anyhow::Result<Option<u64>> {
        match self {
            MemoryBudget::Mib(mib) => Ok(Some(mib)),
            MemoryBudget::Auto => {
                let Some(limit) = cgroup_limit_mib(Path::new("/")) else {
                    return Ok(None);
                };
                anyhow::ensure!(
                    limit > BROKER_RESERVE_MIB,
                    "--memory-budget-mib auto: the cgroup's limit of {limit} MiB leaves \
                     nothing beyond the broker's {BROKER_RESERVE_MIB} MiB"
                );
                Ok(Some(limit - BROKER_RESERVE_MIB))
            }
        }
    }
}

/// The memory limit, in MiB, of this process's cgroup below `root` (`/` but in tests): v2's
/// `memory.max`, else v1's `memory.limit_in_bytes`; `None` when unlimited or unreadable.
pub(crate) fn cgroup_limit_mib(root: &Path) -> Option<u64> {
    let membership = std::fs::read_to_string(root.join("proc/self/cgroup")).ok()?;
    let base = root.join("sys/fs/cgroup");
    for line in membership.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let relative = path.trim_start_matches('/');
        let file = match controllers {
            "" => base.join(relative).join("memory.max"),
            list if list.split(',').any(|name| name == "memory") => base
                .join("memory")
                .join(relative)
                .join("memory.limit_in_bytes"),
            _ => continue,
        };
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        // v1 writes "unlimited" as a huge page-rounded number.
        return match text.trim().parse::<u64>() {
            Ok(bytes) if bytes < (1 << 60) => Some(bytes >> 20),
            _ => None,
        };
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn parses_numbers_and_auto_and_refuses_the_rest() {
        assert_eq!(parse("4096"), Ok(MemoryBudget::Mib(4096)));
        assert_eq!(parse("auto"), Ok(MemoryBudget::Auto));
        for bad in ["", "4G", "-1", "63", "auto ", "99999999999"] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    fn fake_root(cgroup: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("proc/self")).unwrap();
        std::fs::write(root.path().join("proc/self/cgroup"), cgroup).unwrap();
        for (path, text) in files {
            let path = root.path().join("sys/fs/cgroup").join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        root
    }

    #[test]
    fn reads_v2_and_v1_limits_and_unlimited() {
        let v2 = fake_root(
            "0::/pod/broker\n",
            &[("pod/broker/memory.max", "4294967296\n")],
        );
        assert_eq!(cgroup_limit_mib(v2.path()), Some(4096));
        let v2_max = fake_root("0::/\n", &[("memory.max", "max\n")]);
        assert_eq!(cgroup_limit_mib(v2_max.path()), None);
        let v1 = fake_root(
            "5:cpu:/\n4:memory:/docker/abc\n",
            &[("memory/docker/abc/memory.limit_in_bytes", "2147483648\n")],
        );
        assert_eq!(cgroup_limit_mib(v1.path()), Some(2048));
        let v1_unlimited = fake_root(
            "4:memory:/\n",
            &[("memory/memory.limit_in_bytes", "9223372036854771712\n")],
        );
        assert_eq!(cgroup_limit_mib(v1_unlimited.path()), None);
        let none = fake_root("0::/\n", &[]);
        assert_eq!(cgroup_limit_mib(none.path()), None);
    }
}
