//! Reading callgrind's profile: a counted child writes one "part" per dump
//! (`--combine-dumps=yes`), each labelled by the client request that
//! triggered it and holding the instructions executed since the dump
//! before, per function. This module turns the file into [`Part`]s: the
//! label, the total, and each function's own (exclusive) count.
//!
//! The format (callgrind's documentation, "Callgrind Format
//! Specification"): `ob=`, `fl=`, `fn=` lines name the object, file and
//! function the following cost lines belong to, with names compressed to
//! `(id)` after their first use in the file; a cost line is a position
//! (line numbers here, or nothing with `--dump-line=no`) followed by the
//! counts of the events (`Ir` only); a `calls=` line says the next cost
//! line is the inclusive cost of a call (to `cfn=`), which belongs to the
//! callee, not to the function's own count.

use std::collections::HashMap;

/// One function's own instructions in one part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionCount {
    /// The function's name, demangled.
    pub function: String,
    /// The source file it was compiled from ("???" without debug information).
    pub file: String,
    /// The object it is in (the executable or a shared library's path).
    pub object: String,
    pub instructions: u64,
}

/// One dump of the profile.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Part {
    /// The label of the client request that wrote it (`CALLGRIND_DUMP_STATS_AT`).
    pub label: String,
    /// Every instruction counted in the part.
    pub total: u64,
    /// Each function's own instructions (empty unless asked for).
    pub functions: Vec<FunctionCount>,
}

/// Reads every part of a profile (callgrind's `--combine-dumps=yes`
/// output, each dump after a `part:` line). With `functions`, each part
/// carries its functions' own counts (slower; for the breakdown); without,
/// only the totals. A part cut short (the child killed while writing it)
/// is dropped.
pub fn parse(text: &str, functions: bool) -> Vec<Part> {
    let mut reader = Reader::default();
    for line in text.lines() {
        reader.line(line, functions);
    }
    reader.finish_part();
    reader.parts
}

/// The state of reading a profile line by line.
#[derive(Default)]
struct Reader {
    parts: Vec<Part>,
    /// The part being read and whether its `totals:` line was seen.
    current: Option<(Part, bool)>,
    names: Names,
    /// The current part's functions' own counts, by (object, file, function).
    own: HashMap<(String, String, String), u64>,
    object: String,
    /// The file of the next function (`fl=`).
    file: String,
    function: String,
    /// The next cost line is a call's inclusive cost (after `calls=`).
    call_cost_next: bool,
}

impl Reader {
    fn line(&mut self, line: &str, functions: bool) {
        if line.starts_with("part:") {
            self.finish_part();
            self.current = Some((Part::default(), false));
            self.call_cost_next = false;
            return;
        }
        let Some((part, totals_seen)) = self.current.as_mut() else {
            return;
        };
        if let Some(trigger) = line.strip_prefix("desc: Trigger:") {
            let trigger = trigger.trim();
            part.label = trigger
                .strip_prefix("Client Request:")
                .unwrap_or(trigger)
                .trim()
                .to_string();
        } else if let Some(total) = line.strip_prefix("totals:") {
            part.total = total.trim().parse().unwrap_or(0);
            *totals_seen = true;
        } else if functions {
            self.cost_line(line);
        }
    }

    /// A line of the body: a name, a call, or a cost.
    fn cost_line(&mut self, line: &str) {
        if let Some(name) = line.strip_prefix("ob=") {
            self.object = self.names.objects.resolve(name);
        } else if let Some(name) = line.strip_prefix("fn=") {
            self.function = self.names.functions.resolve(name);
        } else if let Some(name) = line.strip_prefix("fl=") {
            self.file = self.names.files.resolve(name);
        } else if let Some(name) = line.strip_prefix("cob=") {
            self.names.objects.resolve(name);
        } else if let Some(name) = line.strip_prefix("cfn=") {
            self.names.functions.resolve(name);
        } else if let Some(name) = ["fi=", "fe=", "cfi=", "cfl="]
            .iter()
            .find_map(|prefix| line.strip_prefix(prefix))
        {
            self.names.files.resolve(name);
        } else if line.starts_with("calls=") {
            self.call_cost_next = true;
        } else if line
            .as_bytes()
            .first()
            .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'*'))
        {
            if std::mem::take(&mut self.call_cost_next) {
                return;
            }
            // The count is the last field, after the position.
            let count: u64 = line
                .split_ascii_whitespace()
                .last()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            *self
                .own
                .entry((
                    self.object.clone(),
                    self.file.clone(),
                    self.function.clone(),
                ))
                .or_default() += count;
        }
    }

    /// Keeps the part being read if it was written to its end.
    fn finish_part(&mut self) {
        let own = std::mem::take(&mut self.own);
        let Some((mut part, true)) = self.current.take() else {
            return;
        };
        part.functions = own
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|((object, file, function), instructions)| FunctionCount {
                function,
                file,
                object,
                instructions,
            })
            .collect();
        part.functions.sort_by(|a, b| {
            b.instructions
                .cmp(&a.instructions)
                .then_with(|| a.function.cmp(&b.function))
        });
        self.parts.push(part);
    }
}

/// Compressed names: `(12) name` defines id 12, `(12)` uses it.
#[derive(Default)]
struct Names {
    objects: Table,
    files: Table,
    functions: Table,
}

#[derive(Default)]
struct Table(HashMap<String, String>);

impl Table {
    fn resolve(&mut self, text: &str) -> String {
        let text = text.trim();
        let Some(rest) = text.strip_prefix('(') else {
            return text.to_string();
        };
        let Some((id, name)) = rest.split_once(')') else {
            return text.to_string();
        };
        let name = name.trim();
        if name.is_empty() {
            self.0.get(id).cloned().unwrap_or_default()
        } else {
            self.0.insert(id.to_string(), name.to_string());
            name.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two dumps as callgrind writes them with `--combine-dumps=yes
    /// --dump-line=no`: names compressed after their first use, a call's
    /// inclusive cost after `calls=`.
    const PROFILE: &str = "# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  ./tlslab counted-child
part: 1

desc: I1 cache:
desc: Trigger: Client Request: tlslab side client

positions:
events: Ir
summary: 1500

ob=(1) /work/tlslab
fl=(1) ???
fn=(1) ossl_statem_connect
0 100
cfn=(2) bn_mul_mont
calls=3 0
0 900
fn=(2)
0 900
ob=(2) /usr/lib/x86_64-linux-gnu/libc.so.6
fl=(2) ???
fn=(3) __memcpy_avx_unaligned
0 500

totals: 1500
part: 2

desc: I1 cache:
desc: Trigger: Client Request: tlslab side server

positions:
events: Ir
summary: 700

ob=(1)
fl=(1)
fn=(2)
0 650
fn=(1)
0 50

totals: 700
";

    #[test]
    fn parts_have_their_labels_totals_and_own_counts() {
        let parts = parse(PROFILE, true);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].label, "tlslab side client");
        assert_eq!(parts[0].total, 1500);
        let own = |part: &Part, name: &str| {
            part.functions
                .iter()
                .find(|f| f.function == name)
                .map(|f| (f.instructions, f.object.clone()))
        };
        // The call's 900 belong to bn_mul_mont, not to its caller.
        assert_eq!(
            own(&parts[0], "ossl_statem_connect"),
            Some((100, "/work/tlslab".to_string()))
        );
        assert_eq!(own(&parts[0], "bn_mul_mont").unwrap().0, 900);
        assert_eq!(
            own(&parts[0], "__memcpy_avx_unaligned").unwrap().1,
            "/usr/lib/x86_64-linux-gnu/libc.so.6"
        );
        let sum: u64 = parts[0].functions.iter().map(|f| f.instructions).sum();
        assert_eq!(sum, parts[0].total);
        assert_eq!(parts[1].label, "tlslab side server");
        assert_eq!(own(&parts[1], "bn_mul_mont").unwrap().0, 650);
        assert_eq!(own(&parts[1], "ossl_statem_connect").unwrap().0, 50);
    }

    #[test]
    fn totals_alone_skip_the_functions_and_a_cut_part_is_dropped() {
        let cut = &PROFILE[..PROFILE.rfind("totals: 700").unwrap()];
        let parts = parse(cut, false);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].total, 1500);
        assert!(parts[0].functions.is_empty());
    }
}
