//! `tlslab completions SHELL` and `tlslab man`: every shell gets a script
//! and the manual page is roff; both name every command, so a command added
//! to `cli/` cannot be missing from them.

use clap::CommandFactory;

use crate::util::tlslab;

/// The names of tlslab's commands, from the clap definitions.
fn commands() -> Vec<String> {
    // The hidden internal command (`counted-child`) has no page.
    let names: Vec<String> = tlslab::cli::Cli::command()
        .get_subcommands()
        .filter(|command| !command.is_hide_set())
        .map(|command| command.get_name().to_string())
        .collect();
    for known in ["handshake", "bulk", "tunnel", "merge", "completions", "man"] {
        assert!(names.iter().any(|name| name == known), "{known}: {names:?}");
    }
    names
}

#[test]
fn every_shell_gets_a_completion_script_naming_every_command() {
    let commands = commands();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let run = tlslab(&["completions", shell]);
        run.expect_code(0);
        let script = run.stdout();
        for command in &commands {
            assert!(
                script.contains(command.as_str()),
                "the {shell} script does not name {command}"
            );
        }
        // Options of the commands are completed too.
        assert!(script.contains("max-total-time"), "{shell}");
    }
    // The bash script is valid bash.
    let run = tlslab(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tlslab.bash");
    std::fs::write(&path, run.stdout()).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );

    let run = tlslab(&["completions", "tcsh"]);
    run.expect_code(2);
    assert!(run.stderr().contains("bash"), "{}", run.stderr());
}

#[test]
fn the_man_page_is_roff_naming_every_command_and_each_command_has_its_page() {
    let run = tlslab(&["man"]);
    run.expect_code(0);
    let page = run.stdout();
    assert!(page.contains(".TH tlslab 1"), "{page}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH SUBCOMMANDS"] {
        assert!(page.contains(section), "{section}:\n{page}");
    }
    for command in commands().iter().filter(|name| *name != "help") {
        // roff escapes the hyphen.
        let reference = format!("tlslab\\-{}(1)", command.replace('-', "\\-"));
        assert!(page.contains(&reference), "{reference}:\n{page}");
    }

    let run = tlslab(&["man", "handshake"]);
    run.expect_code(0);
    let page = run.stdout();
    assert!(page.contains(".TH tlslab-handshake 1"), "{page}");
    assert!(page.contains("\\-\\-max\\-total\\-time"), "{page}");
    assert!(page.contains(tlslab::TOOL_VERSION), "{page}");

    let run = tlslab(&["man", "nope"]);
    run.expect_code(2);
    assert!(
        run.stderr().contains("the commands: handshake, bulk"),
        "{}",
        run.stderr()
    );
}
