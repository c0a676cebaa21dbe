//! The README and docs/ as a user reads them: every `tlslab` command in a
//! fenced code block parses with the real command line, every command of
//! the tool has an example, relative links lead to files that exist, the
//! README stays short, and every picture in docs/ is drawn by
//! `scripts/docs-pictures.sh`. (`scripts/check-docs.sh` runs the commands.)
//!
//! What counts as a command: in a `sh` block, every line (joined across a
//! trailing `\`) whose words start with `tlslab` or `cargo run --release --`,
//! after `$ `, `time` and `NAME=value` assignments; in any other block (a
//! run's output), only such lines that start with `$ `. A `#` after a
//! space starts a comment; `&&`, `||`, `;` and `|` separate commands, and
//! redirections are dropped.

use std::path::{Path, PathBuf};

use clap::Parser;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown file under docs/, sorted.
fn documents() -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    let mut found = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut found);
    found.sort();
    found
}

/// A command found in a document: where, and its words as the shell
/// would pass them (the first being `tlslab`).
#[derive(Debug)]
struct DocCommand {
    place: String,
    words: Vec<String>,
}

/// Splits a shell line into words, keeping quoted text together; `&&`,
/// `||`, `;` and `|` come out as words of their own, and a `#` that starts
/// a word ends the line.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                for quoted in chars.by_ref() {
                    if quoted == c {
                        break;
                    }
                    word.push(quoted);
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            '#' if !in_word => break,
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '&' | '|' | ';' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                let mut operator = c.to_string();
                if chars.peek() == Some(&c) {
                    operator.push(chars.next().unwrap());
                }
                words.push(operator);
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The tlslab commands on one (joined) line of a code block.
fn commands_on(line: &str) -> Vec<Vec<String>> {
    let words = shell_words(line);
    let mut commands = Vec::new();
    for segment in words.split(|w| matches!(w.as_str(), "&&" | "||" | ";" | "|" | "&")) {
        let mut rest: Vec<String> = segment
            .iter()
            .skip_while(|w| *w == "time" || is_assignment(w))
            .cloned()
            .collect();
        if rest.starts_with(&["cargo", "run", "--release", "--"].map(String::from)) {
            rest.splice(0..4, ["tlslab".to_string()]);
        }
        if rest.first().map(String::as_str) != Some("tlslab") {
            continue;
        }
        // Redirections: `> FILE`, `2> FILE`, `>FILE`.
        let mut command = Vec::new();
        let mut words = rest.into_iter();
        while let Some(word) = words.next() {
            if matches!(word.as_str(), ">" | ">>" | "<" | "2>" | "2>>") {
                words.next();
            } else if !word.starts_with('>') && !word.starts_with("2>") {
                command.push(word);
            }
        }
        commands.push(command);
    }
    commands
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        }
        None => false,
    }
}

/// Every tlslab command in the fenced code blocks of one document.
fn commands_in(path: &Path) -> Vec<DocCommand> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.strip_prefix(root()).unwrap().display().to_string();
    let mut found = Vec::new();
    let mut block: Option<String> = None;
    let mut pending = String::new();
    let mut pending_line = 0;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            block = match block {
                None => Some(info.trim().to_string()),
                Some(_) => None,
            };
            pending.clear();
            continue;
        }
        let Some(info) = &block else { continue };
        if pending.is_empty() {
            pending_line = index + 1;
            let shell = info == "sh" || info == "bash" || info == "console";
            let start = trimmed.strip_prefix("$ ");
            match (shell, start) {
                (_, Some(command)) => pending.push_str(command),
                (true, None) => pending.push_str(trimmed),
                (false, None) => continue,
            }
        } else {
            pending.push(' ');
            pending.push_str(trimmed);
        }
        if let Some(joined) = pending.strip_suffix('\\') {
            pending = joined.trim_end().to_string();
            continue;
        }
        for words in commands_on(&pending) {
            found.push(DocCommand {
                place: format!("{name}:{pending_line}"),
                words,
            });
        }
        pending.clear();
    }
    found
}

fn all_commands() -> Vec<DocCommand> {
    documents()
        .iter()
        .flat_map(|doc| commands_in(doc))
        .collect()
}

#[test]
fn the_command_finder_reads_blocks_as_a_user_would() {
    assert_eq!(
        commands_on("COLUMNS=100 tlslab report --run 1,2 # a comment"),
        vec![vec!["tlslab", "report", "--run", "1,2"]]
    );
    assert_eq!(
        commands_on("tlslab merge all.sqlite s-*.sqlite && tlslab report --db all.sqlite"),
        vec![
            vec!["tlslab", "merge", "all.sqlite", "s-*.sqlite"],
            vec!["tlslab", "report", "--db", "all.sqlite"]
        ]
    );
    assert_eq!(
        commands_on("tlslab completions zsh > ~/.zfunc/_tlslab"),
        vec![vec!["tlslab", "completions", "zsh"]]
    );
    assert_eq!(
        commands_on("cargo run --release -- handshake --preset kex-matrix"),
        vec![vec!["tlslab", "handshake", "--preset", "kex-matrix"]]
    );
    assert_eq!(
        commands_on("tlslab man | man -l -"),
        vec![vec!["tlslab", "man"]]
    );
    assert!(commands_on("sqlite3 db.sqlite \"SELECT 1\"").is_empty());
    assert_eq!(
        commands_on("tlslab tunnel --digest 'sha1' --x \"a b\""),
        vec![vec!["tlslab", "tunnel", "--digest", "sha1", "--x", "a b"]]
    );
}

#[test]
fn every_command_in_the_readme_and_docs_parses() {
    let commands = all_commands();
    assert!(
        commands.len() >= 60,
        "only {} commands found in README.md and docs/",
        commands.len()
    );
    let readme_has = |words: &[&str]| {
        commands
            .iter()
            .any(|c| c.place.starts_with("README.md") && c.words == words)
    };
    assert!(readme_has(&[
        "tlslab",
        "handshake",
        "--preset",
        "kex-matrix"
    ]));
    let failures: Vec<String> = commands
        .iter()
        .filter_map(|command| {
            tlslab::cli::Cli::try_parse_from(&command.words)
                .err()
                .map(|error| {
                    format!(
                        "{}: {}\n{}",
                        command.place,
                        command.words.join(" "),
                        error.render()
                    )
                })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} documented commands do not parse:\n\n{}",
        failures.len(),
        commands.len(),
        failures.join("\n")
    );
}

#[test]
fn every_tlslab_command_has_an_example_in_the_docs() {
    use clap::CommandFactory;
    let commands = all_commands();
    let missing: Vec<String> = tlslab::cli::Cli::command()
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(|sub| sub.get_name().to_string())
        .filter(|name| name != "help")
        .filter(|name| !commands.iter().any(|c| c.words.get(1) == Some(name)))
        .collect();
    assert!(missing.is_empty(), "no example of: {missing:?}");
}

#[test]
fn the_readme_stays_short_and_keeps_its_two_commands() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 350, "README.md has {lines} lines (at most 350)");
    for needle in [
        "cargo run --release -- handshake --preset kex-matrix",
        "\ncargo test\n",
        "LICENSE-APACHE",
        "LICENSE-MIT",
    ] {
        assert!(readme.contains(needle), "README.md lacks {needle:?}");
    }
    for license in ["LICENSE-APACHE", "LICENSE-MIT"] {
        assert!(root().join(license).is_file(), "{license}");
    }
}

#[test]
fn relative_links_in_the_docs_lead_to_files_that_exist() {
    let mut broken = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let dir = doc.parent().unwrap();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            rest = &rest[end..];
            if target.contains("://") || target.starts_with('#') || target.starts_with("mailto:") {
                continue;
            }
            let file = target.split('#').next().unwrap();
            if !dir.join(file).exists() {
                broken.push(format!(
                    "{}: {target}",
                    doc.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
}

#[test]
fn every_picture_in_docs_is_drawn_by_the_pictures_script_and_shown() {
    let script = std::fs::read_to_string(root().join("scripts/docs-pictures.sh")).unwrap();
    let charts = std::fs::read_to_string(root().join("docs/charts.md")).unwrap();
    let mut pictures = 0;
    for entry in std::fs::read_dir(root().join("docs")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".png") {
            continue;
        }
        pictures += 1;
        let stem = name.trim_end_matches(".png");
        assert!(
            script.contains(stem),
            "docs/{name} is not drawn by scripts/docs-pictures.sh"
        );
        assert!(
            charts.contains(&format!("({name})")),
            "docs/charts.md does not show docs/{name}"
        );
    }
    assert!(pictures >= 8, "{pictures} pictures in docs/");
}
