//! Statechart diagrams as SVG: states nested in their parents, the regions
//! of a parallel state side by side, every transition a labelled arrow
//! (`GO [guard] / action`, `after 100ms`, `always`, `done`), history states
//! drawn as a circled `H` or `H*`, final states with a double border, each
//! initial state pointed at by an arrow from a dot.
//!
//! The layout is the Eclipse Layout Kernel's layered algorithm with
//! hierarchy handling (arrows that cross state borders are routed with the
//! rest), run as elkjs (vendored in `assets/elkjs`, unchanged) on QuickJS
//! (the `rquickjs` crate): the same layout in the CLI, the inspector and
//! the wizard, and no browser needed to make one. QuickJS rather than the
//! workspace's boa: boa takes half a minute to load elkjs's 1.6 MB of
//! generated code and then fails inside it, QuickJS loads it in about a
//! second and lays a chart out in a fraction of one. Loading still costs
//! that second, so one engine thread holds elkjs for the process and lays
//! out one graph at a time; callers keep the [`Layout`] of a chart and draw
//! it again for each configuration ([`Layout::svg`]), which costs no
//! layout.
//!
//! The SVG marks what a page re-marks as the chart moves: every state is a
//! `<g class="state KIND" data-state="ID">`, every transition one `<g
//! class="transition" data-transition="INDEX" data-source="ID"
//! data-targets="ID ID">` (one path per target) in the order of
//! [`Diagram::transitions`]; [`Highlight`] adds `active` and
//! `taken` to those classes and colours them with presentation attributes
//! (so a page's CSS may restyle them, and the file looks right alone).
//!
//! ```no_run
//! use turno_chart::{load_json, stdlib, svg};
//! let m = load_json(r#"{"id": "m", "initial": "a", "states": {
//!   "a": {"on": {"GO": "b"}}, "b": {"type": "final"}}}"#,
//!   &stdlib::implementations()).unwrap();
//! let d = svg::Diagram::from_machine(&m);
//! let layout = svg::layout(&d).unwrap();
//! let picture = layout.svg(&svg::Highlight::default());
//! assert_eq!(picture.matches("data-transition=").count(), 1);
//! ```

use std::collections::BTreeSet;
use std::fmt::Write;
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use serde_json::{json, Value};

use crate::machine::{Machine, StateKind};

/// The vendored elkjs.
const ELK: &str = include_str!("../assets/elkjs/elk.bundled.js");

/// Most states (and transitions) a diagram may have: a layout grows worse
/// than linearly, and a bigger chart is no picture anyone reads.
pub const MAX_ELEMENTS: usize = 2000;

/// What kind of state a [`Node`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// No children.
    Atomic,
    /// One child active at a time.
    Compound,
    /// All children (its regions) active at once: drawn side by side.
    Parallel,
    /// Entering it completes its parent: a double border.
    Final,
    /// A history pseudo-state: a circled `H` (`H*` when deep).
    History {
        /// Deep or shallow.
        deep: bool,
    },
}

/// One state of a [`Diagram`].
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The state's id (what `data-state` and [`Highlight::active`] name).
    pub id: String,
    /// The text drawn on it.
    pub label: String,
    /// Its parent's index in [`Diagram::states`] (an earlier one); `None`
    /// for the outermost states.
    pub parent: Option<usize>,
    /// What it is.
    pub kind: NodeKind,
    /// Its initial child's index (an arrow from a dot points at it).
    pub initial: Option<usize>,
}

/// One transition of a [`Diagram`]: an arrow from its source to each
/// target, a loop on the source when it has none.
#[derive(Clone, Debug, PartialEq)]
pub struct Arrow {
    /// The source state's index.
    pub source: usize,
    /// The target states' indices.
    pub targets: Vec<usize>,
    /// The text on the arrow.
    pub label: String,
}

/// A chart to draw: its states (parents before children) and transitions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Diagram {
    /// The states; a parent comes before its children.
    pub states: Vec<Node>,
    /// The transitions, in the order their `data-transition` indices name.
    pub transitions: Vec<Arrow>,
    /// Indices of the outermost states' initial state, if any.
    pub initial: Option<usize>,
}

/// Why a diagram could not be drawn.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SvgError {
    /// The diagram's own data is inconsistent.
    #[error("diagram: {0}")]
    Invalid(String),
    /// The layout engine failed (or could not start).
    #[error("layout: {0}")]
    Layout(String),
}

/// What to mark on a drawing: the active configuration and the transition
/// just taken.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Highlight {
    /// Active state ids.
    pub active: BTreeSet<String>,
    /// The index (in [`Diagram::transitions`]) of the transition just taken.
    pub taken: Option<usize>,
}

impl Diagram {
    /// The diagram of a machine: its root drawn as the outer box (named
    /// after the machine), every transition of [`Machine::transitions`] in
    /// that order, labelled as the Mermaid export labels it.
    pub fn from_machine<C>(m: &Machine<C>) -> Diagram {
        let states = m
            .states()
            .iter()
            .map(|s| Node {
                id: s.id.to_string(),
                label: if s.parent.is_none() {
                    m.id().to_string()
                } else {
                    s.key.to_string()
                },
                parent: s.parent.map(usize::from),
                kind: match s.kind {
                    StateKind::Atomic => NodeKind::Atomic,
                    StateKind::Compound => NodeKind::Compound,
                    StateKind::Parallel => NodeKind::Parallel,
                    StateKind::Final => NodeKind::Final,
                    StateKind::History { deep } => NodeKind::History { deep },
                },
                initial: s.initial.map(usize::from),
            })
            .collect();
        let transitions = m
            .transitions()
            .iter()
            .map(|t| Arrow {
                source: usize::from(t.source),
                targets: t.targets.iter().map(|&x| usize::from(x)).collect(),
                label: crate::mermaid::transition_label(m, t),
            })
            .collect();
        Diagram {
            states,
            transitions,
            initial: None,
        }
    }

    /// The index of the transition that matches a recorded one (its source
    /// and targets by id, and its label when several match): how a trace's
    /// `chart_transition` is found on the drawing.
    pub fn find_transition(
        &self,
        source: &str,
        targets: &[String],
        event: Option<&str>,
    ) -> Option<usize> {
        let ids = |t: &Arrow| -> bool {
            self.states.get(t.source).is_some_and(|s| s.id == source)
                && t.targets.len() == targets.len()
                && t.targets
                    .iter()
                    .zip(targets)
                    .all(|(&i, id)| self.states.get(i).is_some_and(|s| s.id == *id))
        };
        let mut found = self.transitions.iter().enumerate().filter(|(_, t)| ids(t));
        let first = found.next()?;
        let rest: Vec<_> = found.collect();
        if rest.is_empty() {
            return Some(first.0);
        }
        let label = match event {
            Some(e) => e.to_string(),
            None => "always".to_string(),
        };
        std::iter::once(first)
            .chain(rest)
            .find(|(_, t)| t.label == label || t.label.starts_with(&format!("{label} ")))
            .map(|(i, _)| i)
            .or(Some(first.0))
    }

    fn check(&self) -> Result<(), SvgError> {
        let n = self.states.len();
        if n + self.transitions.len() > MAX_ELEMENTS {
            return Err(SvgError::Invalid(format!(
                "{n} states and {} transitions: more than {MAX_ELEMENTS} in all",
                self.transitions.len()
            )));
        }
        for (i, s) in self.states.iter().enumerate() {
            if let Some(p) = s.parent {
                if p >= i {
                    return Err(SvgError::Invalid(format!(
                        "state {i} ({:?}): parent {p} does not come before it",
                        s.id
                    )));
                }
            }
            if let Some(c) = s.initial {
                if self.states.get(c).and_then(|c| c.parent) != Some(i) {
                    return Err(SvgError::Invalid(format!(
                        "state {i} ({:?}): initial {c} is not its child",
                        s.id
                    )));
                }
            }
        }
        if let Some(c) = self.initial {
            if self.states.get(c).is_none_or(|c| c.parent.is_some()) {
                return Err(SvgError::Invalid(format!(
                    "initial {c} is not an outermost state"
                )));
            }
        }
        for (i, t) in self.transitions.iter().enumerate() {
            if let Some(bad) = std::iter::once(t.source)
                .chain(t.targets.iter().copied())
                .find(|&x| x >= n)
            {
                return Err(SvgError::Invalid(format!(
                    "transition {i}: state {bad} does not exist ({n} states)"
                )));
            }
        }
        Ok(())
    }

    fn children(&self, p: Option<usize>) -> impl Iterator<Item = usize> + '_ {
        self.states
            .iter()
            .enumerate()
            .filter(move |(_, s)| s.parent == p)
            .map(|(i, _)| i)
    }
}

/// Font size of state names and arrow labels, in SVG units.
const FONT: f64 = 12.0;
/// The width a character is given (sans-serif at [`FONT`], generously).
const CHAR_W: f64 = 7.0;

fn text_width(s: &str) -> f64 {
    s.chars().count() as f64 * CHAR_W
}

/// A polyline: its points in order.
type Line = Vec<(f64, f64)>;

/// A transition as laid out: one polyline per target, its label's box.
type Routed = (Vec<Line>, Option<[f64; 4]>);

/// A laid-out chart, drawn again for any [`Highlight`] at no layout cost.
#[derive(Clone, Debug)]
pub struct Layout {
    diagram: Diagram,
    width: f64,
    height: f64,
    /// Each state's box: x, y, width, height (absolute).
    boxes: Vec<[f64; 4]>,
    /// Each transition's polylines (one per target) and its label's box.
    arrows: Vec<Routed>,
    /// The initial dots: the dot's centre and the polyline to the state.
    initials: Vec<((f64, f64), Line)>,
}

/// Lays `d` out (on the engine thread; the first call loads elkjs).
pub fn layout(d: &Diagram) -> Result<Layout, SvgError> {
    d.check()?;
    let graph = elk_graph(d);
    let out = run_elk(graph.to_string())?;
    let v: Value = serde_json::from_str(&out).map_err(|e| SvgError::Layout(e.to_string()))?;
    read_layout(d, &v)
}

fn node_size(n: &Node) -> (f64, f64) {
    match n.kind {
        NodeKind::History { .. } => (28.0, 28.0),
        _ => (text_width(&n.label).max(24.0) + 24.0, 32.0),
    }
}

fn elk_graph(d: &Diagram) -> Value {
    fn node(d: &Diagram, i: usize) -> Value {
        let n = &d.states[i];
        let kids: Vec<usize> = d.children(Some(i)).collect();
        if kids.is_empty() {
            let (w, h) = node_size(n);
            return json!({"id": format!("n{i}"), "width": w, "height": h});
        }
        let mut children: Vec<Value> = kids.iter().map(|&c| node(d, c)).collect();
        if n.initial.is_some() {
            children.push(json!({"id": format!("i{i}"), "width": 10, "height": 10}));
        }
        let min_w = text_width(&n.label) + 24.0;
        json!({
            "id": format!("n{i}"),
            "children": children,
            "layoutOptions": {
                "elk.padding": "[top=30,left=12,bottom=12,right=12]",
                "elk.nodeSize.constraints": "MINIMUM_SIZE",
                "elk.nodeSize.minimum": format!("({min_w}, 40)"),
                "elk.direction": if n.kind == NodeKind::Parallel { "RIGHT" } else { "DOWN" },
            },
        })
    }
    let mut children: Vec<Value> = d.children(None).map(|i| node(d, i)).collect();
    if d.initial.is_some() {
        children.push(json!({"id": "i", "width": 10, "height": 10}));
    }
    let mut edges = Vec::new();
    for (i, n) in d.states.iter().enumerate() {
        if let Some(c) = n.initial {
            edges.push(json!({"id": format!("j{i}"), "sources": [format!("i{i}")], "targets": [format!("n{c}")]}));
        }
    }
    if let Some(c) = d.initial {
        edges.push(json!({"id": "j", "sources": ["i"], "targets": [format!("n{c}")]}));
    }
    for (i, t) in d.transitions.iter().enumerate() {
        let targets: Vec<usize> = if t.targets.is_empty() {
            vec![t.source]
        } else {
            t.targets.clone()
        };
        for (k, &target) in targets.iter().enumerate() {
            let mut e = json!({
                "id": format!("t{i}_{k}"),
                "sources": [format!("n{}", t.source)],
                "targets": [format!("n{target}")],
            });
            if k == 0 && !t.label.is_empty() {
                e["labels"] = json!([{
                    "text": t.label,
                    "width": text_width(&t.label),
                    "height": FONT + 2.0,
                }]);
            }
            edges.push(e);
        }
    }
    json!({
        "id": "root",
        "layoutOptions": {
            "elk.algorithm": "layered",
            "elk.hierarchyHandling": "INCLUDE_CHILDREN",
            "elk.direction": "DOWN",
            "elk.edgeRouting": "POLYLINE",
            "elk.layered.spacing.nodeNodeBetweenLayers": "36",
            "elk.spacing.nodeNode": "24",
            "elk.spacing.edgeLabel": "4",
            "elk.padding": "[top=8,left=8,bottom=8,right=8]",
        },
        "children": children,
        "edges": edges,
    })
}

fn num(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(0.0)
}

fn read_layout(d: &Diagram, v: &Value) -> Result<Layout, SvgError> {
    use std::collections::HashMap;
    // Absolute positions: ELK gives each node's relative to its parent,
    // each edge's relative to its container.
    let mut origin: HashMap<String, (f64, f64)> = HashMap::new();
    let mut boxes = vec![[0.0; 4]; d.states.len()];
    let mut edges: Vec<(Value, (f64, f64))> = Vec::new();
    fn walk(
        v: &Value,
        at: (f64, f64),
        origin: &mut HashMap<String, (f64, f64)>,
        boxes: &mut [[f64; 4]],
        edges: &mut Vec<(Value, (f64, f64))>,
        dots: &mut HashMap<String, [f64; 4]>,
    ) {
        let id = v.get("id").and_then(Value::as_str).unwrap_or("");
        let me = (at.0 + num(v, "x"), at.1 + num(v, "y"));
        origin.insert(id.to_string(), me);
        let b = [me.0, me.1, num(v, "width"), num(v, "height")];
        if let Some(i) = id.strip_prefix('n').and_then(|i| i.parse::<usize>().ok()) {
            if let Some(slot) = boxes.get_mut(i) {
                *slot = b;
            }
        } else if id.starts_with('i') {
            dots.insert(id.to_string(), b);
        }
        for e in v
            .get("edges")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            edges.push((e.clone(), (0.0, 0.0)));
        }
        for c in v
            .get("children")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            walk(c, me, origin, boxes, edges, dots);
        }
    }
    let mut dots = HashMap::new();
    walk(
        v,
        (0.0, 0.0),
        &mut origin,
        &mut boxes,
        &mut edges,
        &mut dots,
    );
    let mut arrows = vec![(Vec::new(), None); d.transitions.len()];
    let mut initials = Vec::new();
    for (e, _) in &edges {
        let id = e.get("id").and_then(Value::as_str).unwrap_or("");
        let container = e.get("container").and_then(Value::as_str).unwrap_or("root");
        let o = origin.get(container).copied().unwrap_or((0.0, 0.0));
        let pt = |p: &Value| (o.0 + num(p, "x"), o.1 + num(p, "y"));
        let mut line = Vec::new();
        for s in e
            .get("sections")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(p) = s.get("startPoint") {
                line.push(pt(p));
            }
            for b in s
                .get("bendPoints")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                line.push(pt(b));
            }
            if let Some(p) = s.get("endPoint") {
                line.push(pt(p));
            }
        }
        if line.len() < 2 {
            return Err(SvgError::Layout(format!("edge {id} was not routed")));
        }
        if let Some(rest) = id.strip_prefix('t') {
            let (i, _) = rest.split_once('_').unwrap_or((rest, ""));
            let i: usize = i
                .parse()
                .map_err(|_| SvgError::Layout(format!("unknown edge {id}")))?;
            let Some(slot) = arrows.get_mut(i) else {
                return Err(SvgError::Layout(format!("unknown edge {id}")));
            };
            slot.0.push(line);
            if let Some(l) = e.get("labels").and_then(|l| l.get(0)) {
                slot.1 = Some([
                    o.0 + num(l, "x"),
                    o.1 + num(l, "y"),
                    num(l, "width"),
                    num(l, "height"),
                ]);
            }
        } else if let Some(rest) = id.strip_prefix('j') {
            let dot = dots.get(&format!("i{rest}")).copied().unwrap_or([0.0; 4]);
            initials.push(((dot[0] + dot[2] / 2.0, dot[1] + dot[3] / 2.0), line));
        }
    }
    Ok(Layout {
        diagram: d.clone(),
        width: num(v, "width"),
        height: num(v, "height"),
        boxes,
        arrows,
        initials,
    })
}

/// Escapes text for SVG content and attribute values.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

fn points(line: &[(f64, f64)]) -> String {
    let mut s = String::new();
    for (i, (x, y)) in line.iter().enumerate() {
        let _ = write!(s, "{}{x:.1},{y:.1}", if i == 0 { "M" } else { " L" });
    }
    s
}

/// Colours: an idle state, an active one, an arrow, the arrow just taken.
const IDLE_FILL: &str = "#ffffff";
const ACTIVE_FILL: &str = "#dbeafe";
const ACTIVE_STROKE: &str = "#1d4ed8";
const LINE: &str = "#55555c";
const TAKEN: &str = "#b45309";

impl Layout {
    /// The diagram laid out.
    pub fn diagram(&self) -> &Diagram {
        &self.diagram
    }

    /// The drawing's width and height.
    pub fn size(&self) -> (f64, f64) {
        (self.width, self.height)
    }

    /// The drawing, `hl`'s states and transition marked.
    pub fn svg(&self, hl: &Highlight) -> String {
        let d = &self.diagram;
        let mut o = String::new();
        let _ = write!(
            o,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="statechart" role="img" aria-label="statechart" viewBox="0 0 {w:.0} {h:.0}" width="{w:.0}" height="{h:.0}" font-family="sans-serif" font-size="{FONT}">"#,
            w = self.width.ceil(),
            h = self.height.ceil()
        );
        for (id, color) in [("sc-arrow", LINE), ("sc-arrow-taken", TAKEN)] {
            let _ = write!(
                o,
                r#"<defs><marker id="{id}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{color}"/></marker></defs>"#
            );
        }
        // Parents first, so children are drawn over them.
        for (i, n) in d.states.iter().enumerate() {
            let [x, y, w, h] = self.boxes[i];
            let on = hl.active.contains(&n.id);
            let (kind, compound) = match n.kind {
                NodeKind::Atomic => ("atomic", false),
                NodeKind::Compound => ("compound", true),
                NodeKind::Parallel => ("parallel", true),
                NodeKind::Final => ("final", false),
                NodeKind::History { .. } => ("history", false),
            };
            let compound = compound || d.children(Some(i)).next().is_some();
            let (fill, stroke, sw) = if on {
                (ACTIVE_FILL, ACTIVE_STROKE, 2.0)
            } else {
                (IDLE_FILL, LINE, 1.0)
            };
            let fill = match (compound, on) {
                (true, false) => "#fafafa",
                (true, true) => "#f3f8ff",
                _ => fill,
            };
            let _ = write!(
                o,
                r#"<g class="state {kind}{}" data-state="{}">"#,
                if on { " active" } else { "" },
                esc(&n.id)
            );
            let _ = write!(o, "<title>{}</title>", esc(&n.id));
            match n.kind {
                NodeKind::History { deep } => {
                    let _ = write!(
                        o,
                        r#"<circle cx="{:.1}" cy="{:.1}" r="{:.1}" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                        x + w / 2.0,
                        y + h / 2.0,
                        w.min(h) / 2.0,
                        x + w / 2.0,
                        y + h / 2.0 + 4.0,
                        if deep { "H*" } else { "H" }
                    );
                }
                _ => {
                    let dash = if n.kind == NodeKind::Parallel {
                        r#" stroke-dasharray="5 3""#
                    } else {
                        ""
                    };
                    let _ = write!(
                        o,
                        r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" rx="8" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"{dash}/>"#
                    );
                    if n.kind == NodeKind::Final {
                        let _ = write!(
                            o,
                            r#"<rect class="final-mark" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="6" fill="none" stroke="{stroke}" stroke-width="{sw}"/>"#,
                            x + 3.0,
                            y + 3.0,
                            (w - 6.0).max(0.0),
                            (h - 6.0).max(0.0)
                        );
                    }
                    let ty = if compound {
                        y + 18.0
                    } else {
                        y + h / 2.0 + 4.0
                    };
                    let tx = if compound { x + 10.0 } else { x + w / 2.0 };
                    let anchor = if compound { "start" } else { "middle" };
                    let weight = if compound {
                        r#" font-weight="bold""#
                    } else {
                        ""
                    };
                    let _ = write!(
                        o,
                        r#"<text x="{tx:.1}" y="{ty:.1}" text-anchor="{anchor}"{weight}>{}</text>"#,
                        esc(&n.label)
                    );
                }
            }
            o.push_str("</g>");
        }
        for (dot, line) in &self.initials {
            let _ = write!(
                o,
                r#"<g class="initial"><circle cx="{:.1}" cy="{:.1}" r="5" fill="{LINE}"/><path d="{}" fill="none" stroke="{LINE}" marker-end="url(#sc-arrow)"/></g>"#,
                dot.0,
                dot.1,
                points(line)
            );
        }
        for (i, (lines, label)) in self.arrows.iter().enumerate() {
            let taken = hl.taken == Some(i);
            let (color, marker, sw) = if taken {
                (TAKEN, "sc-arrow-taken", 2.5)
            } else {
                (LINE, "sc-arrow", 1.2)
            };
            let t = &d.transitions[i];
            let _ = write!(
                o,
                r#"<g class="transition{}" data-transition="{i}" data-source="{}" data-targets="{}">"#,
                if taken { " taken" } else { "" },
                esc(&d.states[t.source].id),
                esc(&t
                    .targets
                    .iter()
                    .map(|&x| d.states[x].id.as_str())
                    .collect::<Vec<_>>()
                    .join(" "))
            );
            let _ = write!(o, "<title>{}</title>", esc(&t.label));
            for line in lines {
                let _ = write!(
                    o,
                    r#"<path d="{}" fill="none" stroke="{color}" stroke-width="{sw}" marker-end="url(#{marker})"/>"#,
                    points(line)
                );
            }
            if let Some([x, y, _, h]) = label {
                let _ = write!(
                    o,
                    r#"<text x="{x:.1}" y="{:.1}" fill="{color}">{}</text>"#,
                    y + h - 3.0,
                    esc(&t.label)
                );
            }
            o.push_str("</g>");
        }
        o.push_str("</svg>");
        o
    }
}

/// The engine thread's stack.
const ELK_STACK: usize = 64 << 20;

/// One layout request to the engine thread.
type Job = (String, mpsc::Sender<Result<String, String>>);

/// The engine thread's queue (started on first use).
fn engine() -> Result<mpsc::Sender<Job>, SvgError> {
    static ENGINE: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let tx = ENGINE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("turno-chart-elk".into())
            // elkjs's generated code recurses deeply: far past a default
            // thread's stack.
            .stack_size(ELK_STACK)
            .spawn(move || {
                let mut elk = Elk::load();
                for (graph, reply) in rx {
                    let out = match &mut elk {
                        Ok(e) => e.layout(&graph),
                        Err(e) => Err(e.clone()),
                    };
                    let _ = reply.send(out);
                }
            });
        // Without a thread the receiver is dropped: every send then fails,
        // and that failure is the caller's error.
        drop(spawned);
        Mutex::new(tx)
    });
    tx.lock()
        .map(|t| t.clone())
        .map_err(|_| SvgError::Layout("the layout engine's queue is poisoned".into()))
}

fn run_elk(graph: String) -> Result<String, SvgError> {
    let (reply, answer) = mpsc::channel();
    engine()?
        .send((graph, reply))
        .map_err(|_| SvgError::Layout("the layout engine did not start".into()))?;
    answer
        .recv()
        .map_err(|_| SvgError::Layout("the layout engine stopped".into()))?
        .map_err(SvgError::Layout)
}

/// elkjs loaded in a QuickJS context. elkjs hands work to its "worker"
/// with `setTimeout`; here that queues the callback, and [`Elk::layout`]
/// runs the queue and the promise jobs until the answer is in.
struct Elk {
    rt: rquickjs::Runtime,
    ctx: rquickjs::Context,
}

/// The engine's memory ceiling: a layout of [`MAX_ELEMENTS`] fits well
/// within it, and a runaway one stops with an error instead of taking the
/// machine.
const ELK_MEMORY: usize = 1 << 30;

impl Elk {
    fn load() -> Result<Elk, String> {
        let rt = rquickjs::Runtime::new().map_err(|e| e.to_string())?;
        rt.set_memory_limit(ELK_MEMORY);
        rt.set_max_stack_size(ELK_STACK / 2);
        let ctx = rquickjs::Context::full(&rt).map_err(|e| e.to_string())?;
        ctx.with(|ctx| -> Result<(), String> {
            let run = |src: &str| {
                ctx.eval::<(), _>(src)
                    .map_err(|e| format!("{e}: {:?}", ctx.catch()))
            };
            // elkjs finds its globals (Map, Math...) on `global`, warns on
            // `console`, and registers itself on `module.exports`.
            run("var global = globalThis; var console = {log: function () {}, warn: function () {}, error: function () {}};\
                 var module = {exports: {}}; var exports = module.exports; var __queue = [];\
                 function setTimeout(f) { __queue.push(f); return __queue.length; }")?;
            run(ELK)?;
            run("var __elk = new module.exports(); var __out = null, __err = null;\
                 function __start(g) { __out = null; __err = null;\
                   __elk.layout(JSON.parse(g)).then(function (r) { __out = JSON.stringify(r); },\
                     function (e) { __err = String(e && e.message || e); }); }\
                 function __pump() { while (__queue.length) __queue.shift()();\
                   return __out !== null || __err !== null; }")
        })?;
        Ok(Elk { rt, ctx })
    }

    fn layout(&mut self, graph: &str) -> Result<String, String> {
        use rquickjs::Function;
        self.ctx.with(|ctx| -> Result<(), String> {
            let start: Function = ctx.globals().get("__start").map_err(|e| e.to_string())?;
            start
                .call::<_, ()>((graph,))
                .map_err(|e| format!("{e}: {:?}", ctx.catch()))
        })?;
        // Each round runs the queued callbacks and the promise jobs they
        // made; a layout takes a handful.
        for _ in 0..10_000 {
            self.jobs()?;
            let done = self.ctx.with(|ctx| -> Result<bool, String> {
                let pump: Function = ctx.globals().get("__pump").map_err(|e| e.to_string())?;
                pump.call::<_, bool>(())
                    .map_err(|e| format!("{e}: {:?}", ctx.catch()))
            })?;
            self.jobs()?;
            if done {
                return self.ctx.with(|ctx| {
                    let g = ctx.globals();
                    match g
                        .get::<_, Option<String>>("__err")
                        .map_err(|e| e.to_string())?
                    {
                        Some(err) => Err(err),
                        None => g
                            .get::<_, Option<String>>("__out")
                            .map_err(|e| e.to_string())?
                            .ok_or_else(|| "elkjs gave no layout".to_string()),
                    }
                });
            }
        }
        Err("elkjs gave no answer".into())
    }

    fn jobs(&self) -> Result<(), String> {
        while self.rt.is_job_pending() {
            self.rt
                .execute_pending_job()
                .map_err(|_| "a promise job of elkjs failed".to_string())?;
        }
        Ok(())
    }
}
