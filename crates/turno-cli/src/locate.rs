//! Where a JSON path (`$.states.a.on.GO[0].target`, as turno-chart's
//! loader names the place of a problem) lies in the text of a JSON file:
//! the line and column an error message points at.

/// The 1-based line and column (in characters) where the value at `path`
/// starts in `text`, if `text` is JSON and holds it; else where its
/// nearest enclosing value starts (the loader names the normalized form:
/// `GO[0].target` for a transition written as `"GO": "target"`). A key
/// with dots in it (`on.mouse.click`) matches when the rest of the path
/// leads somewhere.
pub fn locate(text: &str, path: &str) -> Option<(usize, usize)> {
    let mut rest = path.strip_prefix('$')?;
    let b = text.as_bytes();
    loop {
        if let Some(at) = descend(b, ws(b, 0), rest) {
            return Some(line_col(text, at));
        }
        // Up to the nearest enclosing value, but not to the whole document.
        let cut = rest.rfind(['.', '[']).filter(|&c| c > 0)?;
        rest = &rest[..cut];
    }
}

/// Prefixes a message with `file:line:column` when its JSON path is found
/// in `text`, else with `file`.
pub fn in_file(file: &str, text: &str, path: &str, message: impl std::fmt::Display) -> String {
    match locate(text, path) {
        Some((line, col)) => format!("{file}:{line}:{col}: {message}"),
        None => format!("{file}: {message}"),
    }
}

fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// A string starting at `i` (its quote): its text (escapes kept as written,
/// enough to compare keys) and where it ends.
fn string(b: &[u8], i: usize) -> Option<(&str, usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return Some((std::str::from_utf8(&b[i + 1..j]).ok()?, j + 1)),
            _ => j += 1,
        }
    }
    None
}

/// Where the value starting at `i` ends.
fn skip(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string(b, i).map(|(_, e)| e),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string(b, j)?.1;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') && !b[j].is_ascii_whitespace()
            {
                j += 1;
            }
            Some(j)
        }
    }
}

fn descend(b: &[u8], i: usize, rest: &str) -> Option<usize> {
    if rest.is_empty() {
        return Some(i);
    }
    if let Some(r) = rest.strip_prefix('[') {
        let close = r.find(']')?;
        let n: usize = r[..close].parse().ok()?;
        let after = &r[close + 1..];
        if b.get(i) != Some(&b'[') {
            return None;
        }
        let mut j = ws(b, i + 1);
        for _ in 0..n {
            j = ws(b, skip(b, j)?);
            if b.get(j) != Some(&b',') {
                return None;
            }
            j = ws(b, j + 1);
        }
        return descend(b, j, after);
    }
    let r = rest.strip_prefix('.')?;
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut j = ws(b, i + 1);
    while b.get(j) == Some(&b'"') {
        let (key, e) = string(b, j)?;
        let colon = ws(b, e);
        if b.get(colon) != Some(&b':') {
            return None;
        }
        let v = ws(b, colon + 1);
        if let Some(tail) = r.strip_prefix(key) {
            if tail.is_empty() || tail.starts_with('.') || tail.starts_with('[') {
                if let Some(found) = descend(b, v, tail) {
                    return Some(found);
                }
            }
        }
        j = ws(b, skip(b, v)?);
        if b.get(j) == Some(&b',') {
            j = ws(b, j + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_lead_to_the_line_and_column_of_their_value() {
        let text = "{\"initial\": \"a\",\n \"states\": {\n  \"a\": {\"on\": {\"GO\": [{\"target\": \"zz\"}]}}}}";
        assert_eq!(locate(text, "$.states.a.on.GO[0].target"), Some((3, 34)));
        assert_eq!(locate(text, "$.states"), Some((2, 12)));
        assert_eq!(locate(text, "$"), Some((1, 1)));
        assert_eq!(locate(text, "$.states.a.on.GO[0].guard"), Some((3, 23)));
        assert_eq!(locate(text, "$.states.b"), Some((2, 12)));
        assert_eq!(locate("[1]", "$.a"), None);
        let dotted = "{\"on\": {\"mouse.click\": \"b\", \"x\": [1, {\"y\": 2}]}}";
        assert_eq!(locate(dotted, "$.on.mouse.click"), Some((1, 24)));
        assert_eq!(locate(dotted, "$.on.x[1].y"), Some((1, 44)));
        assert_eq!(
            in_file("m.json", text, "$.states", "bad"),
            "m.json:2:12: bad"
        );
        assert_eq!(in_file("m.json", "[1]", "$.a", "bad"), "m.json: bad");
    }
}
