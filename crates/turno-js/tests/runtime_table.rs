//! `docs/js-runtime.md` is true: every row of its table of supported APIs
//! is evaluated in both models and must exist exactly where the table says
//! "yes" (a member `a.b` exists when `a` has a property `b`, even one whose
//! value is `undefined`), and what the page says stays unsupported fails with the clear
//! error it names.

use std::path::Path;

use turno_js::{run, Cost, Model, RunOptions};

fn opts(model: Model) -> RunOptions {
    RunOptions {
        cost: Cost::ZERO,
        ..RunOptions::new(model)
    }
}

/// The table's rows: (expression, in node, in html).
fn rows() -> Vec<(String, bool, bool)> {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/js-runtime.md");
    let text = std::fs::read_to_string(&page).unwrap();
    let start = text
        .find("| API | node | html |")
        .expect("the table's header");
    let mut rows = Vec::new();
    for line in text[start..].lines().skip(2) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let expr = cells[1].trim_matches('`').to_string();
        let yes = |c: &str| match c {
            "yes" => true,
            "no" => false,
            other => panic!("{line}: cell {other:?} is neither yes nor no"),
        };
        rows.push((expr, yes(cells[2]), yes(cells[3])));
    }
    assert!(rows.len() > 30, "the table has {} rows", rows.len());
    rows
}

#[test]
fn every_row_of_the_table_holds_in_both_models() {
    let rows = rows();
    let list = serde_json::to_string(&rows.iter().map(|r| &r.0).collect::<Vec<_>>()).unwrap();
    let src = format!(
        "for (const e of {list}) {{\n\
           let has;\n\
           const member = /^(.*)\\.([A-Za-z_$][\\w$]*)$/.exec(e);\n\
           try {{\n\
             has = member ? member[2] in Object((0, eval)('(' + member[1] + ')'))\n\
                          : typeof (0, eval)('(' + e + ')') !== 'undefined';\n\
           }} catch (_) {{ has = false; }}\n\
           console.log(has ? 'yes' : 'no');\n\
         }}"
    );
    let mut wrong = Vec::new();
    for (model, col) in [(Model::Node, 1), (Model::Html, 2)] {
        let r = run(&src, "table.js", &opts(model)).unwrap();
        let got = r.stdout_lines();
        assert_eq!(got.len(), rows.len(), "{model:?}: {}", r.stderr);
        for (row, g) in rows.iter().zip(got) {
            let want = if col == 1 { row.1 } else { row.2 };
            if (g == "yes") != want {
                wrong.push(format!(
                    "{model:?}: `{}` is {g}, the table says {want}",
                    row.0
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/js-runtime.md is wrong:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn what_stays_unsupported_fails_with_a_clear_error() {
    let cases = [
        (
            Model::Node,
            "require('net').connect(80);",
            "Error: Cannot find module 'net'",
        ),
        (
            Model::Node,
            "require('worker_threads');",
            "Error: Cannot find module 'worker_threads'",
        ),
        (
            Model::Html,
            "new IntersectionObserver(() => {});",
            "ReferenceError: IntersectionObserver is not defined",
        ),
        (
            Model::Node,
            "scheduler.postTask(() => {});",
            "ReferenceError: scheduler is not defined",
        ),
        (
            Model::Html,
            "fetch('x');",
            "ReferenceError: fetch is not defined",
        ),
        (
            Model::Html,
            "localStorage.getItem('x');",
            "ReferenceError: localStorage is not defined",
        ),
        (
            Model::Node,
            "new MessageChannel();",
            "ReferenceError: MessageChannel is not defined",
        ),
        (
            Model::Node,
            "const fs = require('fs');\nfs.readFileSync('u.js');",
            "TypeError: fs.readFileSync is not a function",
        ),
        (
            Model::Node,
            "const timers = require('timers');\ntimers.setImmediate.unref();",
            "TypeError: timers.setImmediate.unref is not a function",
        ),
    ];
    for (model, src, message) in cases {
        let r = run(src, "u.js", &opts(model)).unwrap();
        assert_eq!(r.exit_code, 1, "{src}");
        let u = r
            .uncaught
            .first()
            .unwrap_or_else(|| panic!("{src}: nothing uncaught"));
        assert_eq!(u.message, message, "{src}");
        assert_eq!(u.file.as_deref(), Some("u.js"), "{src}: {u:?}");
        assert!(u.line.is_some() && u.column.is_some(), "{src}: {u:?}");
    }
}
