//! A small element tree over quick-xml, with the byte position of every
//! element, so the loader can name the line and column of what it rejects.
//!
//! The tree keeps what SCXML needs and nothing more: element local names
//! (SCXML documents put everything in one namespace; prefixes are dropped),
//! attributes in document order, text with entities resolved, CDATA as text,
//! and for each element the byte span of its inner markup, because inline
//! `<content>` and `<data>` keep their children as written.

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use crate::error::{LoadError, Position};

/// One element of the tree.
#[derive(Debug, Clone)]
pub(crate) struct Element {
    /// Local name (no prefix).
    pub name: String,
    /// Attributes by local name, in document order.
    pub attrs: Vec<(String, String)>,
    /// Child nodes in document order.
    pub children: Vec<Node>,
    /// Where the start tag begins.
    pub pos: Position,
    /// Byte range of the markup between the start and end tags (empty for `<x/>`).
    pub inner: std::ops::Range<usize>,
}

/// A child node.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Element(Element),
    Text(String),
}

impl Element {
    /// The value of attribute `name`, if present.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Child elements in document order.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|n| match n {
            Node::Element(e) => Some(e),
            Node::Text(_) => None,
        })
    }

    /// The concatenated text children (not descendants).
    pub fn text(&self) -> String {
        let mut s = String::new();
        for n in &self.children {
            if let Node::Text(t) = n {
                s.push_str(t);
            }
        }
        s
    }
}

/// Maps byte offsets to 1-based line and column (columns count characters).
pub(crate) struct Lines<'a> {
    src: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub fn new(src: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(src.match_indices('\n').map(|(i, _)| i + 1));
        Lines { src, starts }
    }

    pub fn position(&self, offset: usize) -> Position {
        let offset = offset.min(self.src.len());
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let column = self
            .src
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count())
            + 1;
        Position {
            line: line as u32 + 1,
            column: column as u32,
        }
    }
}

/// Elements may nest this deep; deeper documents are rejected (the loader
/// and the algorithm recurse over the tree).
pub(crate) const MAX_DEPTH: usize = 200;

/// Parses `src` into its root element.
pub(crate) fn parse(src: &str) -> Result<Element, LoadError> {
    let lines = Lines::new(src);
    let mut reader = Reader::from_str(src);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    loop {
        let start = reader.buffer_position() as usize;
        let event = match reader.read_event() {
            Ok(e) => e,
            Err(e) => {
                return Err(LoadError::xml(
                    lines.position(reader.error_position() as usize),
                    e.to_string(),
                ))
            }
        };
        let end = reader.buffer_position() as usize;
        match event {
            Event::Start(tag) => {
                let mut el = element(&tag, lines.position(start))?;
                el.inner = end..end;
                if root.is_some() && stack.is_empty() {
                    return Err(LoadError::xml(
                        lines.position(start),
                        "content after the root element",
                    ));
                }
                if stack.len() >= MAX_DEPTH {
                    return Err(LoadError::xml(
                        lines.position(start),
                        format!("elements nest deeper than {MAX_DEPTH}"),
                    ));
                }
                stack.push(el);
            }
            Event::Empty(tag) => {
                let mut el = element(&tag, lines.position(start))?;
                el.inner = end..end;
                push(&mut stack, &mut root, el, lines.position(start))?;
            }
            Event::End(_) => {
                let mut el = stack.pop().ok_or_else(|| {
                    LoadError::xml(lines.position(start), "end tag without a start tag")
                })?;
                el.inner.end = start;
                let pos = el.pos;
                push(&mut stack, &mut root, el, pos)?;
            }
            Event::Text(t) => {
                let text = t.xml10_content();
                text_node(&mut stack, &text, lines.position(start))?;
            }
            Event::CData(t) => {
                let text = t.xml10_content();
                text_node(&mut stack, &text, lines.position(start))?;
            }
            Event::GeneralRef(r) => {
                let pos = lines.position(start);
                let c = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    Ok(None) => match &*r {
                        "lt" => "<".into(),
                        "gt" => ">".into(),
                        "amp" => "&".into(),
                        "apos" => "'".into(),
                        "quot" => "\"".into(),
                        other => {
                            return Err(LoadError::xml(
                                pos,
                                format!("unknown entity reference &{other};"),
                            ))
                        }
                    },
                    Err(e) => return Err(LoadError::xml(pos, e.to_string())),
                };
                text_node(&mut stack, &c, pos)?;
            }
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
            Event::Eof => break,
        }
    }
    if let Some(open) = stack.last() {
        return Err(LoadError::xml(
            lines.position(src.len()),
            format!("element <{}> is not closed", open.name),
        ));
    }
    root.ok_or_else(|| LoadError::xml(lines.position(src.len()), "no root element"))
}

fn push(
    stack: &mut [Element],
    root: &mut Option<Element>,
    el: Element,
    pos: Position,
) -> Result<(), LoadError> {
    match stack.last_mut() {
        Some(parent) => parent.children.push(Node::Element(el)),
        None if root.is_none() => *root = Some(el),
        None => return Err(LoadError::xml(pos, "more than one root element")),
    }
    Ok(())
}

fn text_node(stack: &mut [Element], text: &str, pos: Position) -> Result<(), LoadError> {
    match stack.last_mut() {
        Some(parent) => {
            if let Some(Node::Text(prev)) = parent.children.last_mut() {
                prev.push_str(text);
            } else {
                parent.children.push(Node::Text(text.to_owned()));
            }
            Ok(())
        }
        None if text.trim().is_empty() => Ok(()),
        None => Err(LoadError::xml(pos, "text outside the root element")),
    }
}

fn element(tag: &BytesStart<'_>, pos: Position) -> Result<Element, LoadError> {
    let name = tag.local_name().as_ref().to_owned();
    let mut attrs = Vec::new();
    for a in tag.attributes() {
        let a = a.map_err(|e| LoadError::xml(pos, e.to_string()))?;
        let key = a.key;
        // Namespace declarations are not attributes of the model.
        if key.as_ref() == "xmlns" || key.as_ref().starts_with("xmlns:") {
            continue;
        }
        let value = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|e| LoadError::xml(pos, format!("attribute value: {e}")))?;
        let k = key.local_name().as_ref().to_owned();
        if attrs.iter().any(|(n, _)| *n == k) {
            return Err(LoadError::xml(pos, format!("duplicate attribute {k}")));
        }
        attrs.push((k, value.into_owned()));
    }
    Ok(Element {
        name,
        attrs,
        children: Vec::new(),
        pos,
        inner: 0..0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_spans() {
        let src = "<a x='1'>\n  <b>t&amp;u</b><c/></a>";
        let root = parse(src).unwrap();
        assert_eq!(root.name, "a");
        assert_eq!(root.attr("x"), Some("1"));
        let b = root.elements().next().unwrap();
        assert_eq!((b.pos.line, b.pos.column), (2, 3));
        assert_eq!(b.text(), "t&u");
        assert_eq!(&src[root.inner.clone()], "\n  <b>t&amp;u</b><c/>");
    }

    #[test]
    fn errors_have_positions() {
        let e = parse("<a>\n<b></a>").unwrap_err();
        assert_eq!(e.position().unwrap().line, 2);
        assert!(parse("<a></a><b/>").is_err());
        assert!(parse("<a>").is_err());
        assert!(parse("").is_err());
        assert!(parse("<a>&foo;</a>").is_err());
        let deep = "<a>".repeat(MAX_DEPTH + 1) + &"</a>".repeat(MAX_DEPTH + 1);
        assert!(parse(&deep).unwrap_err().to_string().contains("deeper"));
    }
}
