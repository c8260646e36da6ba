//! Naming a failed call's callee where a `catch` first sees the error.
//!
//! boa creates the `TypeError` of a call of something that is no function
//! with the message `not a callable function` (`not a constructor`), and
//! offers the host no hook where an error object is made or caught. The
//! prelude rewrites the message the way V8 words it when the error is
//! shown, but code that reads `e.message` in a `catch` reads it first. So
//! the program's own script runs with a call of the prelude's
//! `__turnoCatch` at the start of every `catch` block, which names the
//! callee before the block's code runs (a `catch` whose parameter is a
//! pattern, `catch ({ message })`, binds a plain name and destructures it
//! after the call).
//!
//! The calls are text inserted into the source; positions that boa reports
//! for the rewritten script are mapped back to the program's own text
//! ([`original_position`]) wherever the host shows one (stack strings,
//! the trace's JavaScript stack), so the rewrite is invisible there. A
//! leaf: it imports nothing from the host.
//!
//! The scanner knows comments, strings, template literals (with nested
//! `${}`) and regular expression literals (told from division by the token
//! before the `/`, as most tools do). A head it cannot read as
//! `catch (name) {` or a one-line `catch (pattern) {` is left as it is.

use std::cell::RefCell;

/// The prelude's function a rewritten `catch` calls with the error.
pub(super) const HOOK: &str = "__turnoCatch";
/// The name a rewritten pattern `catch` binds the error to.
const BINDING: &str = "__turnoError";

/// One change of the text on one line: at 1-based column `at` of the
/// rewritten line, `new_len` characters stand where the original had
/// `old_len`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Edit {
    line: u32,
    at: u32,
    new_len: u32,
    old_len: u32,
}

/// A rewritten script and how its positions map back.
#[derive(Debug)]
pub(super) struct Rewrite {
    /// The script with the calls inserted.
    pub(super) source: String,
    edits: Vec<Edit>,
}

thread_local! {
    /// The main script's file name and the edits of its rewrite.
    static EDITS: RefCell<(String, Vec<Edit>)> = const { RefCell::new((String::new(), Vec::new())) };
}

/// Makes `rewrite` (or nothing, when `None`) the main script's rewrite,
/// whose positions [`original_position`] maps for `file`.
pub(super) fn install(file: &str, rewrite: Option<&Rewrite>) {
    EDITS.with(|e| {
        *e.borrow_mut() = (
            file.to_string(),
            rewrite.map(|r| r.edits.clone()).unwrap_or_default(),
        )
    });
}

/// The position in the program's own text of `line`:`column` (1-based,
/// columns in characters) of the script boa ran from `file`.
pub(super) fn original_position(file: &str, line: u32, column: u32) -> (u32, u32) {
    EDITS.with(|e| {
        let e = e.borrow();
        if e.0 != file || e.1.is_empty() {
            return (line, column);
        }
        let mut col = i64::from(column);
        for ed in e.1.iter().filter(|ed| ed.line == line) {
            let (at, new_len, old_len) = (
                i64::from(ed.at),
                i64::from(ed.new_len),
                i64::from(ed.old_len),
            );
            if i64::from(column) >= at + new_len {
                col += old_len - new_len;
            } else if i64::from(column) >= at {
                // Inside inserted text: the place it was inserted at.
                col = at + (col - i64::from(column));
            }
        }
        (line, col.max(1) as u32)
    })
}

/// Every `FILE:LINE:COLUMN` of `file` in `text` (a stack string) with the
/// position mapped back to the program's own text.
pub(super) fn map_text(file: &str, text: &str) -> String {
    let has_edits = EDITS.with(|e| {
        let e = e.borrow();
        e.0 == file && !e.1.is_empty()
    });
    if !has_edits || file.is_empty() {
        return text.to_string();
    }
    let needle = format!("{file}:");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(&needle) {
        let after = &rest[i + needle.len()..];
        out.push_str(&rest[..i + needle.len()]);
        let line_digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        let tail = &after[line_digits.len()..];
        let col_digits: String = tail
            .strip_prefix(':')
            .map(|t| t.chars().take_while(char::is_ascii_digit).collect())
            .unwrap_or_default();
        match (line_digits.parse::<u32>(), col_digits.parse::<u32>()) {
            (Ok(l), Ok(c)) => {
                let (l, c) = original_position(file, l, c);
                out.push_str(&format!("{l}:{c}"));
                rest = &tail[1 + col_digits.len()..];
            }
            _ => rest = after,
        }
    }
    out.push_str(rest);
    out
}

/// What came before a `/`, to tell a regular expression from division.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prev {
    /// Nothing, or punctuation after which an expression starts.
    Operator,
    /// A value: a name, a number, a literal, `)` or `]` or `}`.
    Value,
    /// A `.` (a `catch` after it is a property, not a clause).
    Dot,
}

/// Keywords after which a `/` starts a regular expression.
const BEFORE_EXPRESSION: [&str; 14] = [
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
];

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '$'
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$' || c == '\u{200c}' || c == '\u{200d}'
}

/// The source with a `__turnoCatch` call at the start of each `catch`
/// block, or `None` when it has no `catch` to rewrite.
pub(super) fn rewrite(src: &str) -> Option<Rewrite> {
    let chars: Vec<char> = src.chars().collect();
    let mut s = Scanner {
        chars: &chars,
        i: 0,
        line: 1,
        out: String::with_capacity(src.len() + 64),
        out_col: 1,
        edits: Vec::new(),
    };
    let mut prev = Prev::Operator;
    // Brace depth, and the depths at which a template's `${` opened.
    let mut depth = 0u32;
    let mut templates: Vec<u32> = Vec::new();
    while let Some(c) = s.peek(0) {
        match c {
            '/' if s.peek(1) == Some('/') => {
                while s.peek(0).is_some_and(|c| c != '\n') {
                    s.copy();
                }
            }
            '/' if s.peek(1) == Some('*') => {
                s.copy();
                s.copy();
                while s.peek(0).is_some() && !(s.peek(0) == Some('*') && s.peek(1) == Some('/')) {
                    s.copy();
                }
                s.copy();
                s.copy();
            }
            '\'' | '"' => {
                s.copy();
                while let Some(d) = s.peek(0) {
                    s.copy();
                    if d == '\\' {
                        s.copy();
                    } else if d == c || d == '\n' {
                        break;
                    }
                }
                prev = Prev::Value;
            }
            '`' => {
                s.copy();
                if s.template() {
                    depth += 1;
                    templates.push(depth);
                    prev = Prev::Operator;
                } else {
                    prev = Prev::Value;
                }
            }
            '}' if templates.last() == Some(&depth) => {
                templates.pop();
                depth -= 1;
                s.copy();
                if s.template() {
                    depth += 1;
                    templates.push(depth);
                    prev = Prev::Operator;
                } else {
                    prev = Prev::Value;
                }
            }
            '/' if prev == Prev::Operator => {
                s.copy();
                let mut class = false;
                while let Some(d) = s.peek(0) {
                    if d == '\n' {
                        break;
                    }
                    s.copy();
                    match d {
                        '\\' => s.copy(),
                        '[' => class = true,
                        ']' => class = false,
                        '/' if !class => break,
                        _ => {}
                    }
                }
                while s.peek(0).is_some_and(is_ident) {
                    s.copy();
                }
                prev = Prev::Value;
            }
            c if is_ident_start(c) => {
                let start = s.i;
                while s.peek(0).is_some_and(is_ident) {
                    s.i += 1;
                }
                let word: String = chars[start..s.i].iter().collect();
                s.i = start;
                if word == "catch" && prev != Prev::Dot {
                    s.catch_head();
                } else {
                    for _ in 0..word.chars().count() {
                        s.copy();
                    }
                }
                prev = if BEFORE_EXPRESSION.contains(&word.as_str()) {
                    Prev::Operator
                } else {
                    Prev::Value
                };
            }
            c if c.is_ascii_digit() => {
                while s.peek(0).is_some_and(|d| is_ident(d) || d == '.') {
                    s.copy();
                }
                prev = Prev::Value;
            }
            c if c.is_whitespace() => s.copy(),
            _ => {
                if c == '{' {
                    depth += 1;
                } else if c == '}' {
                    depth = depth.saturating_sub(1);
                }
                s.copy();
                prev = match c {
                    ')' | ']' | '}' => Prev::Value,
                    '.' => Prev::Dot,
                    _ => Prev::Operator,
                };
            }
        }
    }
    if s.edits.is_empty() {
        return None;
    }
    Some(Rewrite {
        source: s.out,
        edits: s.edits,
    })
}

struct Scanner<'a> {
    chars: &'a [char],
    i: usize,
    line: u32,
    out: String,
    /// The 1-based column of the next character written, on the
    /// rewritten line.
    out_col: u32,
    edits: Vec<Edit>,
}

impl Scanner<'_> {
    fn peek(&self, k: usize) -> Option<char> {
        self.chars.get(self.i + k).copied()
    }

    /// Copies one character (nothing at the end).
    fn copy(&mut self) {
        let Some(c) = self.peek(0) else { return };
        self.i += 1;
        self.out.push(c);
        if c == '\n' {
            self.line += 1;
            self.out_col = 1;
        } else {
            self.out_col += 1;
        }
    }

    fn write(&mut self, text: &str) {
        self.out.push_str(text);
        self.out_col += text.chars().count() as u32;
    }

    /// After a template's opening backtick or a `${}`'s closing brace:
    /// copies its text up to the closing backtick (false) or the next `${`
    /// (true).
    fn template(&mut self) -> bool {
        while let Some(d) = self.peek(0) {
            match d {
                '\\' => {
                    self.copy();
                    self.copy();
                }
                '`' => {
                    self.copy();
                    return false;
                }
                '$' if self.peek(1) == Some('{') => {
                    self.copy();
                    self.copy();
                    return true;
                }
                _ => self.copy(),
            }
        }
        false
    }

    /// The offset after whitespace from `k` on (no comments: a head with a
    /// comment inside is left alone).
    fn skip_ws(&self, mut k: usize) -> usize {
        while self.chars.get(k).is_some_and(|c| c.is_whitespace()) {
            k += 1;
        }
        k
    }

    /// At `catch`: copies the clause's head, inserting the hook's call
    /// after its `{` when the head is `catch (name) {` or a one-line
    /// `catch (pattern) {`.
    fn catch_head(&mut self) {
        let open = self.skip_ws(self.i + 5);
        let plain = || {
            if self.chars.get(open) != Some(&'(') {
                return None;
            }
            let start = self.skip_ws(open + 1);
            let mut end = start;
            while self.chars.get(end).is_some_and(|&c| is_ident(c)) {
                end += 1;
            }
            let first = self.chars.get(start).copied()?;
            if end == start || !is_ident_start(first) {
                return None;
            }
            let close = self.skip_ws(end);
            if self.chars.get(close) != Some(&')') {
                return None;
            }
            let brace = self.skip_ws(close + 1);
            (self.chars.get(brace) == Some(&'{')).then_some((start, end, brace))
        };
        if let Some((start, end, brace)) = plain() {
            let name: String = self.chars[start..end].iter().collect();
            while self.i <= brace {
                self.copy();
            }
            let call = format!("{HOOK}({name});");
            self.edits.push(Edit {
                line: self.line,
                at: self.out_col,
                new_len: call.chars().count() as u32,
                old_len: 0,
            });
            self.write(&call);
            return;
        }
        // `catch (pattern) {` on one line: the pattern's brackets balance
        // before the `)`.
        if self.chars.get(open) == Some(&'(') {
            let first = self.skip_ws(open + 1);
            if matches!(self.chars.get(first), Some('{' | '[')) {
                let mut k = first;
                let mut level = 0i32;
                while let Some(&c) = self.chars.get(k) {
                    match c {
                        '{' | '[' | '(' => level += 1,
                        '}' | ']' | ')' => level -= 1,
                        '\n' | '\'' | '"' | '`' | '/' => return self.copy_word(),
                        _ => {}
                    }
                    k += 1;
                    if level == 0 {
                        break;
                    }
                }
                let pattern_end = k;
                let close = self.skip_ws(pattern_end);
                let brace = self.skip_ws(close + 1);
                if level == 0
                    && self.chars.get(close) == Some(&')')
                    && self.chars.get(brace) == Some(&'{')
                    && !self.chars[self.i..=brace].contains(&'\n')
                {
                    let pattern: String = self.chars[first..pattern_end].iter().collect();
                    while self.i < first {
                        self.copy();
                    }
                    let (line, at) = (self.line, self.out_col);
                    self.write(BINDING);
                    self.i = pattern_end;
                    self.edits.push(Edit {
                        line,
                        at,
                        new_len: BINDING.len() as u32,
                        old_len: pattern.chars().count() as u32,
                    });
                    while self.i <= brace {
                        self.copy();
                    }
                    let decl = format!("let {pattern} = {HOOK}({BINDING});");
                    self.edits.push(Edit {
                        line: self.line,
                        at: self.out_col,
                        new_len: decl.chars().count() as u32,
                        old_len: 0,
                    });
                    self.write(&decl);
                    return;
                }
            }
        }
        self.copy_word();
    }

    fn copy_word(&mut self) {
        for _ in 0..5 {
            self.copy();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(src: &str) -> String {
        rewrite(src)
            .map(|r| r.source)
            .unwrap_or_else(|| src.to_string())
    }

    #[test]
    fn a_catch_block_starts_with_the_hook() {
        assert_eq!(
            rewritten("try { f(); } catch (e) { g(e.message); }"),
            "try { f(); } catch (e) {__turnoCatch(e); g(e.message); }"
        );
        assert_eq!(
            rewritten("try {\n  f();\n} catch(err)\n{\n}"),
            "try {\n  f();\n} catch(err)\n{__turnoCatch(err);\n}"
        );
    }

    #[test]
    fn a_pattern_binds_a_name_first() {
        assert_eq!(
            rewritten("try {} catch ({ message }) { use(message); }"),
            "try {} catch (__turnoError) {let { message } = __turnoCatch(__turnoError); use(message); }"
        );
    }

    #[test]
    fn what_is_no_catch_clause_is_left_alone() {
        for src in [
            "p.catch (e) ;",
            "p.catch(function (e) { return e; });",
            "const s = 'try {} catch (e) {}';",
            "const t = `catch (e) { ${x} }`;",
            "// catch (e) {\n",
            "/* catch (e) { */",
            "const r = /catch (e) {/;",
            "try {} catch {}",
            "try {} catch /* why */ (e) {}",
        ] {
            assert_eq!(rewritten(src), src, "{src}");
        }
    }

    #[test]
    fn a_template_expression_is_code() {
        assert_eq!(
            rewritten("const t = `${(() => { try { f(); } catch (e) { return 1; } })()}`;"),
            "const t = `${(() => { try { f(); } catch (e) {__turnoCatch(e); return 1; } })()}`;"
        );
    }

    #[test]
    fn division_is_not_a_regular_expression() {
        assert_eq!(
            rewritten("const x = a / b; try {} catch (e) { y = c / 2; }"),
            "const x = a / b; try {} catch (e) {__turnoCatch(e); y = c / 2; }"
        );
    }

    #[test]
    fn positions_map_back_to_the_programs_text() {
        let src = "try { f(); } catch (e) { gx(); } hx();\ntry {} catch ({ m }) { kx(); }";
        let r = rewrite(src).unwrap();
        install("p.js", Some(&r));
        let line1 = r.source.lines().next().unwrap();
        // `gx(` and `hx(` in the rewritten line, back to the original.
        let col = |line: &str, what: &str| line.find(what).unwrap() as u32 + 1;
        assert_eq!(
            original_position("p.js", 1, col(line1, "gx(")),
            (1, col(src, "gx("))
        );
        assert_eq!(
            original_position("p.js", 1, col(line1, "hx(")),
            (1, col(src, "hx("))
        );
        let line2 = r.source.lines().nth(1).unwrap();
        let src2 = src.lines().nth(1).unwrap();
        assert_eq!(
            original_position("p.js", 2, col(line2, "kx(")),
            (2, col(src2, "kx("))
        );
        // Before any edit, and in another file: unchanged.
        assert_eq!(original_position("p.js", 1, 7), (1, 7));
        assert_eq!(original_position("q.js", 1, 40), (1, 40));
        let stack = format!("    at g (p.js:1:{})", col(line1, "gx("));
        assert_eq!(
            map_text("p.js", &stack),
            format!("    at g (p.js:1:{})", col(src, "gx("))
        );
        install("p.js", None);
    }
}
