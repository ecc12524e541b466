//! `sh` in an allowlisted sandbox: not a shell. Xvfb compiles its keymap by running
//! `/bin/sh -c '"/usr/bin/xkbcomp" ...'` (the X server's `Popen`), so the allowlisted view
//! links `/usr/bin/sh` to this program, which runs exactly that: a `-c` command whose first
//! word is [`XKBCOMP`], split on blanks and double quotes, executed directly. Anything else is
//! refused with status 2, so nothing in the sandbox gets a shell through this name.

use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

/// The one program this stand-in runs (Xvfb's compiled-in keymap compiler).
const XKBCOMP: &str = "/usr/bin/xkbcomp";

/// Runs `sh -c COMMAND` when COMMAND is an xkbcomp invocation; refuses anything else.
pub(crate) fn run(args: &[String]) -> ExitCode {
    let words = match args {
        [flag, command] if flag == "-c" => split(command),
        _ => None,
    };
    match words {
        Some(words) if words.first().map(String::as_str) == Some(XKBCOMP) => {
            let error = Command::new(XKBCOMP).args(&words[1..]).exec();
            eprintln!("sh (deskbroker-worker): cannot run {XKBCOMP}: {error}");
            ExitCode::from(127)
        }
        _ => {
            eprintln!(
                "sh (deskbroker-worker): refusing {args:?}: this sandbox has no shell; only the \
                 X server's keymap compiler ({XKBCOMP}) is run"
            );
            ExitCode::from(2)
        }
    }
}

/// Splits `command` into words on blanks, with double-quoted runs kept whole (no escapes, no
/// expansions). `None` for an unterminated quote or any shell metacharacter outside quotes.
fn split(command: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    for c in command.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            ' ' | '\t' if !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            ';' | '&' | '|' | '<' | '>' | '`' | '$' | '\\' | '\n' | '(' | ')' | '\'' if !quoted => {
                return None;
            }
            '$' | '`' | '\\' => return None,
            other => {
                word.push(other);
                in_word = true;
            }
        }
    }
    if quoted {
        return None;
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xvfbs_command_splits_and_anything_shell_like_does_not() {
        let xvfb = r#""/usr/bin/xkbcomp" -w 1 "-R/usr/share/X11/xkb" -xkm "-" -em1 "The XKEYBOARD keymap compiler (xkbcomp) reports:" -emp "> " -eml "Errors from xkbcomp are not fatal to the X server" "/tmp/server-0.xkm""#;
        let words = split(xvfb).unwrap();
        assert_eq!(words[0], XKBCOMP);
        assert_eq!(words[6], "-em1");
        assert_eq!(words[9], "> ");
        assert_eq!(words.last().unwrap(), "/tmp/server-0.xkm");
        for bad in [
            "/usr/bin/xkbcomp; sh",
            "/usr/bin/xkbcomp $(id)",
            "/usr/bin/xkbcomp `id`",
            "/usr/bin/xkbcomp > /tmp/x",
            "\"/usr/bin/xkbcomp",
            "/usr/bin/xkbcomp \"$HOME\"",
        ] {
            assert_eq!(split(bad), None, "{bad}");
        }
    }
}
