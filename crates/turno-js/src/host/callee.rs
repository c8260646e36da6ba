//! Naming the callee of a failed call, as V8 does.
//!
//! boa throws `TypeError: not a callable function` (or `not a
//! constructor`) at the position of a call's `(` without naming what was
//! called. Node and Chromium say `o.foo is not a function` and point at
//! `foo`. This file reads the callee back from the program's source text
//! at boa's position and prints it the way V8's call printer does
//! (`o['a']` as `o.a`, spaces dropped), with the column V8 reports. A leaf:
//! it imports nothing from the host. The same for the name of a
//! `ReferenceError`, whose position boa does not track.

/// What a call's failure says: the callee (`o.a.b`) and the 1-based
/// column V8 points at.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Callee {
    /// The message, e.g. `o.a.b is not a function`.
    pub(super) message: String,
    /// The 1-based column on the same line as boa's position.
    pub(super) column: u32,
}

/// One piece of a member chain, read right to left.
enum Part {
    /// `.name` or `?.name`, with the name's byte offset.
    Name {
        name: String,
        optional: bool,
        at: usize,
    },
    /// `[expr]` or `?.[expr]`.
    Key { expr: String, optional: bool },
    /// `(args)` or `?.(args)`: V8 prints a call in the chain as `(...)`.
    Call { optional: bool },
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The callee of the call whose `(` boa reports at `line`:`column`
/// (1-based, columns in characters), for a call (`constructor` false) or
/// a `new` (`constructor` true). `None` when the text there is no call.
pub(super) fn describe(source: &str, line: u32, column: u32, constructor: bool) -> Option<Callee> {
    let chars: Vec<char> = source.chars().collect();
    // Character offset of the reported position.
    let mut pos = 0usize;
    let mut l = 1u32;
    while l < line {
        let nl = chars[pos..].iter().position(|&c| c == '\n')?;
        pos += nl + 1;
        l += 1;
    }
    let line_start = pos;
    pos += column.checked_sub(1)? as usize;
    let mut paren = pos;
    if constructor {
        // boa reports a `new` at the `new` keyword: the callee follows it.
        if chars.get(pos..pos + 3)? != ['n', 'e', 'w'] {
            return None;
        }
        let mut i = pos + 3;
        while chars.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
        let mut depth = 0i32;
        while let Some(&c) = chars.get(i) {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                '(' | ';' | ',' | ')' | '\n' if depth == 0 => break,
                _ => {}
            }
            i += 1;
        }
        paren = i;
    } else if chars.get(pos) != Some(&'(') {
        return None;
    }
    let (text, last_name) = chain_before(&chars, paren)?;
    let col_of = |offset: usize| -> Option<u32> {
        // The column counts from the start of the reported line.
        let start = chars[..=offset]
            .iter()
            .rposition(|&c| c == '\n')
            .map(|i| i + 1)
            .unwrap_or(0);
        (start == line_start).then(|| (offset - start + 1) as u32)
    };
    if constructor {
        return Some(Callee {
            message: format!("{text} is not a constructor"),
            column,
        });
    }
    let column = match last_name {
        Some(at) => col_of(at).unwrap_or(column),
        None => column,
    };
    Some(Callee {
        message: format!("{text} is not a function"),
        column,
    })
}

/// Reads the member chain that ends just before `end` (skipping spaces):
/// its printed form and, when it ends in a name, that name's offset.
fn chain_before(chars: &[char], end: usize) -> Option<(String, Option<usize>)> {
    let skip_ws = |mut i: usize| {
        while i > 0 && chars[i - 1].is_whitespace() {
            i -= 1;
        }
        i
    };
    let mut parts = Vec::new();
    let mut i = skip_ws(end);
    loop {
        if i == 0 {
            return None;
        }
        let c = chars[i - 1];
        let (part_start, part) = if c == ')' {
            let mut depth = 0;
            let mut j = i;
            loop {
                if j == 0 {
                    return None;
                }
                j -= 1;
                match chars[j] {
                    ')' => depth += 1,
                    '(' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
            (j, Some(Part::Call { optional: false }))
        } else if c == ']' {
            let mut depth = 0;
            let mut j = i;
            loop {
                if j == 0 {
                    return None;
                }
                j -= 1;
                match chars[j] {
                    ']' => depth += 1,
                    '[' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let expr: String = chars[j + 1..i - 1].iter().collect();
            (
                j,
                Some(Part::Key {
                    expr: expr.trim().to_string(),
                    optional: false,
                }),
            )
        } else if is_ident(c) {
            let mut j = i;
            while j > 0 && is_ident(chars[j - 1]) {
                j -= 1;
            }
            let name: String = chars[j..i].iter().collect();
            if name.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                return None;
            }
            (
                j,
                Some(Part::Name {
                    name,
                    optional: false,
                    at: j,
                }),
            )
        } else {
            return None;
        };
        let mut part = part?;
        // What joins this part to the one before: `.`, `?.`, or nothing.
        let k = skip_ws(part_start);
        let dot = k > 0 && chars[k - 1] == '.';
        let optional = dot && k > 1 && chars[k - 2] == '?';
        let (Part::Key { optional: o, .. }
        | Part::Name { optional: o, .. }
        | Part::Call { optional: o }) = &mut part;
        *o = optional;
        match (&part, dot) {
            (Part::Name { name, .. }, false) => {
                if matches!(
                    name.as_str(),
                    "new"
                        | "return"
                        | "typeof"
                        | "if"
                        | "while"
                        | "for"
                        | "switch"
                        | "catch"
                        | "with"
                        | "await"
                        | "yield"
                        | "void"
                        | "delete"
                        | "in"
                        | "of"
                        | "case"
                        | "do"
                        | "else"
                        | "throw"
                ) {
                    return None;
                }
                parts.push(part);
                break;
            }
            (Part::Key { .. } | Part::Call { .. }, false) => {
                // `a[k]` and `a(x)` continue with `a`; a bare `[..]` is an
                // array, a bare `(..)` a parenthesized expression.
                let prev = skip_ws(part_start);
                if prev == 0 || !(is_ident(chars[prev - 1]) || matches!(chars[prev - 1], ']' | ')'))
                {
                    return None;
                }
                parts.push(part);
                i = prev;
            }
            (_, true) => {
                parts.push(part);
                i = skip_ws(if optional { k - 2 } else { k - 1 });
            }
        }
    }
    parts.reverse();
    let mut text = String::new();
    let mut last_name = None;
    for (n, p) in parts.iter().enumerate() {
        match p {
            Part::Name { name, optional, at } => {
                if n > 0 {
                    text.push_str(if *optional { "?." } else { "." });
                }
                text.push_str(name);
                last_name = Some(*at);
            }
            Part::Key { expr, optional } => {
                let quoted = expr.len() >= 2
                    && (expr.starts_with('\'') && expr.ends_with('\'')
                        || expr.starts_with('"') && expr.ends_with('"'));
                // The quotes are ASCII, so the slice is on char boundaries.
                let inner = if quoted { &expr[1..expr.len() - 1] } else { "" };
                if !inner.is_empty() && inner.chars().all(is_ident) {
                    text.push_str(if *optional { "?." } else { "." });
                    text.push_str(inner);
                } else {
                    if *optional {
                        text.push_str("?.");
                    }
                    text.push('[');
                    text.push_str(expr);
                    text.push(']');
                }
                last_name = None;
            }
            Part::Call { optional } => {
                if *optional {
                    text.push_str("?.");
                }
                text.push_str("(...)");
                last_name = None;
            }
        }
    }
    // V8 points at the name of a named call, at the `(` of a keyed one.
    Some((text, last_name))
}

/// Where `name` of a `ReferenceError: name is not defined` is, for the
/// 1-based `(line, column)` V8 reports: boa's frame for it holds the last
/// position the engine recorded (the function's start, or the previous
/// call), which lies before the reference in straight-line code, so the
/// first whole-word use of `name` at or after it (else the first in the
/// source); V8 points at the use, or at the start of its statement when the
/// use is the statement's first step (`new Name()`, `return Name`, `if
/// (Name)`). Strings and comments are not told apart from code.
pub(super) fn find_name(source: &str, line: u32, column: u32, name: &str) -> Option<(u32, u32)> {
    if name.is_empty() || !name.chars().all(is_ident) {
        return None;
    }
    let chars: Vec<char> = source.chars().collect();
    let target: Vec<char> = name.chars().collect();
    let mut uses = Vec::new();
    let (mut l, mut c) = (1u32, 1u32);
    let mut i = 0;
    while i < chars.len() {
        let whole = chars[i..].starts_with(&target)
            && (i == 0 || !is_ident(chars[i - 1]) && chars[i - 1] != '.')
            && chars.get(i + target.len()).is_none_or(|&n| !is_ident(n));
        if whole {
            uses.push((i, l, c));
        }
        if chars[i] == '\n' {
            l += 1;
            c = 1;
        } else {
            c += 1;
        }
        i += 1;
    }
    let after = uses
        .iter()
        .find(|&&(_, ul, uc)| (ul, uc) >= (line, column))
        .or(uses.first())?;
    let (at, ul, uc) = *after;
    // When loading the name is the first thing its statement does (`new
    // Name()`, `return Name`, `if (Name)`), V8 reports the statement's
    // position instead: walk back over such prefixes to a statement
    // boundary.
    let mut j = at;
    let mut first = at;
    loop {
        while j > 0 && chars[j - 1].is_whitespace() {
            j -= 1;
        }
        if j == 0 || matches!(chars[j - 1], ';' | '{' | '}') {
            break;
        }
        if matches!(chars[j - 1], '(' | '!' | '-' | '+' | '~') {
            j -= 1;
            first = j;
            continue;
        }
        let mut k = j;
        while k > 0 && is_ident(chars[k - 1]) {
            k -= 1;
        }
        let word: String = chars[k..j].iter().collect();
        let prefix = [
            "new", "return", "throw", "await", "void", "if", "while", "switch", "else", "do",
        ];
        if k < j && prefix.contains(&word.as_str()) {
            j = k;
            first = k;
            continue;
        }
        // Anything else comes first: the name's own position.
        first = at;
        break;
    }
    if first == at {
        return Some((ul, uc));
    }
    let line_of = |p: usize| chars[..p].iter().filter(|&&c| c == '\n').count() as u32 + 1;
    let col_of = |p: usize| {
        let start = chars[..p]
            .iter()
            .rposition(|&c| c == '\n')
            .map_or(0, |n| n + 1);
        (p - start + 1) as u32
    };
    Some((line_of(first), col_of(first)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(src: &str, line: u32) -> Option<(String, u32)> {
        let l = src.lines().nth(line as usize - 1).unwrap();
        let col = l[..l.rfind('(').unwrap()].chars().count() + 1;
        describe(src, line, col as u32, false).map(|c| (c.message, c.column))
    }

    #[test]
    fn names_the_callee_as_v8_prints_it() {
        assert_eq!(
            call("o.a.b();", 1),
            Some(("o.a.b is not a function".into(), 5))
        );
        assert_eq!(call("x();", 1), Some(("x is not a function".into(), 1)));
        assert_eq!(
            call("o[k]();", 1),
            Some(("o[k] is not a function".into(), 5))
        );
        assert_eq!(
            call("o['a'][\"c\"](1);", 1).unwrap().0,
            "o.a.c is not a function"
        );
        assert_eq!(
            call("o.a?.b();", 1),
            Some(("o.a?.b is not a function".into(), 6))
        );
        assert_eq!(
            call("  o . a  ( );", 1),
            Some(("o.a is not a function".into(), 7))
        );
        assert_eq!(
            call("let x = 1;\nwindow.postMessage('x', '*');", 2)
                .unwrap()
                .0,
            "window.postMessage is not a function"
        );
    }

    #[test]
    fn a_call_in_the_chain_prints_as_dots() {
        assert_eq!(
            call("c.get(1, (x) => x).m();", 1),
            Some(("c.get(...).m is not a function".into(), 20))
        );
        // The final call of `c.f()()`: V8 points at its `(`.
        assert_eq!(
            call("c.f()();", 1),
            Some(("c.f(...) is not a function".into(), 6))
        );
        assert_eq!(call("if (x) (0, f)();", 1), None);
    }

    #[test]
    fn a_chain_across_lines_points_at_the_name() {
        let src = "o.a\n  .b();";
        assert_eq!(
            describe(src, 2, 5, false),
            Some(Callee {
                message: "o.a.b is not a function".into(),
                column: 4
            })
        );
    }

    #[test]
    fn new_names_the_constructor() {
        let c = describe("const v = new o.a();", 1, 11, true).unwrap();
        assert_eq!(c.message, "o.a is not a constructor");
        assert_eq!(c.column, 11);
    }

    #[test]
    fn an_undefined_name_is_found_after_the_stale_position() {
        let src = "console.log(1);\nnew MutationObserver(() => {});\nMutationObserver;";
        assert_eq!(find_name(src, 1, 12, "MutationObserver"), Some((2, 1)));
        assert_eq!(find_name(src, 2, 30, "MutationObserver"), Some((3, 1)));
        assert_eq!(find_name(src, 9, 1, "MutationObserver"), Some((2, 1)));
        assert_eq!(find_name("a.fetch; fetch()", 0, 0, "fetch"), Some((1, 10)));
        let g = |body: &str| find_name(body, 1, 1, "Foo").unwrap().1;
        // Node 20's carets for the same lines.
        assert_eq!(g("const a = 1 + Foo;"), 15);
        assert_eq!(g("console.log(Foo);"), 13);
        assert_eq!(g("  let v = [1, Foo];"), 15);
        assert_eq!(g("x = { a: Foo.b };"), 10);
        assert_eq!(g("if (Foo) {}"), 1);
        assert_eq!(g("  return new Foo();"), 3);
        assert_eq!(find_name("x", 1, 1, "fetch"), None);
    }

    #[test]
    fn non_ascii_keys_and_names_are_read_whole() {
        assert_eq!(call("o[é]();", 1).unwrap().0, "o[é] is not a function");
        assert_eq!(call("o['é'](1);", 1).unwrap().0, "o.é is not a function");
        assert_eq!(
            call("été.ça();", 1),
            Some(("été.ça is not a function".into(), 5))
        );
        assert_eq!(find_name("x = 'é' + Ω;", 1, 1, "Ω"), Some((1, 11)));
    }

    #[test]
    fn anything_else_is_none() {
        assert_eq!(call("(0, o.q)();", 1), None);
        assert_eq!(describe("abc", 1, 2, false), None);
        assert_eq!(describe("abc", 9, 2, false), None);
        assert_eq!(describe("f()", 1, 0, false), None);
    }
}
