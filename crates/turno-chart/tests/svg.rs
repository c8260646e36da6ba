//! The SVG diagrams: every state and transition drawn, nested states
//! inside their parents, parallel regions side by side, the marks.

use std::collections::BTreeSet;

use turno_chart::svg::{layout, Arrow, Diagram, Highlight, Node, NodeKind, SvgError};
use turno_chart::{load_json, stdlib};

const MACHINE: &str = r#"{"id": "m", "initial": "idle", "states": {
  "idle": {"on": {"GO": {"target": "busy", "guard": "pass"}}},
  "busy": {"type": "parallel", "states": {
    "left": {"initial": "a", "states": {"a": {"after": {"100": "b"}}, "b": {}, "hist": {"type": "history", "history": "deep"}}},
    "right": {"initial": "c", "states": {"c": {"always": "d"}, "d": {"type": "final"}}}},
    "on": {"STOP": "done", "PING": {}}},
  "done": {"type": "final"}}}"#;

fn attr_values<'a>(svg: &'a str, attr: &str) -> Vec<&'a str> {
    let key = format!("{attr}=\"");
    svg.match_indices(&key)
        .map(|(i, _)| {
            let rest = &svg[i + key.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect()
}

/// The box (x, y, w, h) of a state's first rect or circle.
fn state_box(svg: &str, id: &str) -> [f64; 4] {
    let at = svg.find(&format!("data-state=\"{id}\"")).unwrap();
    let rest = &svg[at..];
    let num = |k: &str| -> f64 {
        let key = format!(" {k}=\"");
        let i = rest.find(&key).unwrap() + key.len();
        rest[i..i + rest[i..].find('"').unwrap()].parse().unwrap()
    };
    if rest[..rest.find("/>").unwrap()].contains("<circle") {
        let r = num("r");
        [num("cx") - r, num("cy") - r, 2.0 * r, 2.0 * r]
    } else {
        [num("x"), num("y"), num("width"), num("height")]
    }
}

fn inside(inner: [f64; 4], outer: [f64; 4]) -> bool {
    inner[0] >= outer[0]
        && inner[1] >= outer[1]
        && inner[0] + inner[2] <= outer[0] + outer[2] + 0.01
        && inner[1] + inner[3] <= outer[1] + outer[3] + 0.01
}

#[test]
fn every_transition_is_an_arrow_and_every_state_a_box() {
    let m = load_json(MACHINE, &stdlib::implementations()).unwrap();
    let d = Diagram::from_machine(&m);
    let l = layout(&d).unwrap();
    let svg = l.svg(&Highlight::default());
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    let transitions = attr_values(&svg, "data-transition");
    let want: Vec<String> = (0..m.transitions().len()).map(|i| i.to_string()).collect();
    assert_eq!(transitions, want);
    let states: BTreeSet<&str> = attr_values(&svg, "data-state").into_iter().collect();
    let want: BTreeSet<&str> = m.states().iter().map(|s| &*s.id).collect();
    assert_eq!(states, want);
    // Labels: the event and guard, the delay, always, the targetless loop.
    for label in [
        ">GO [pass]<",
        ">after 100ms<",
        ">always<",
        ">STOP<",
        ">PING<",
    ] {
        assert!(svg.contains(label), "{label} missing");
    }
    // Each arrow has as many paths as targets (one for a targetless loop).
    for (i, t) in m.transitions().iter().enumerate() {
        let at = svg.find(&format!("data-transition=\"{i}\"")).unwrap();
        let g = &svg[at..at + svg[at..].find("</g>").unwrap()];
        assert_eq!(g.matches("<path").count(), t.targets.len().max(1), "{g}");
    }
    // History and final states are marked.
    assert!(svg.contains(">H*<"));
    assert_eq!(svg.matches("class=\"final-mark\"").count(), 2);
    // Initial dots: one per compound state with an initial child.
    assert_eq!(svg.matches("class=\"initial\"").count(), 3);
}

#[test]
fn children_lie_inside_parents_and_regions_side_by_side() {
    let m = load_json(MACHINE, &stdlib::implementations()).unwrap();
    let svg = layout(&Diagram::from_machine(&m))
        .unwrap()
        .svg(&Highlight::default());
    let b = |id: &str| state_box(&svg, id);
    for (child, parent) in [
        ("m.busy.left", "m.busy"),
        ("m.busy.right", "m.busy"),
        ("m.busy.left.a", "m.busy.left"),
        ("m.busy.left.hist", "m.busy.left"),
        ("m.busy.right.d", "m.busy.right"),
        ("m.idle", "m"),
    ] {
        assert!(inside(b(child), b(parent)), "{child} not inside {parent}");
    }
    let (l, r) = (b("m.busy.left"), b("m.busy.right"));
    assert!(
        l[0] + l[2] <= r[0] || r[0] + r[2] <= l[0],
        "regions overlap horizontally: {l:?} {r:?}"
    );
    let (i, d) = (b("m.idle"), b("m.done"));
    assert!(i[1] + i[3] <= d[1] || d[1] + d[3] <= i[1]);
}

#[test]
fn the_active_configuration_and_the_transition_taken_are_marked() {
    let m = load_json(MACHINE, &stdlib::implementations()).unwrap();
    let d = Diagram::from_machine(&m);
    let l = layout(&d).unwrap();
    let go = d
        .find_transition("m.idle", &["m.busy".to_string()], Some("GO"))
        .unwrap();
    let hl = Highlight {
        active: ["m", "m.busy", "m.busy.left", "m.busy.left.a"]
            .into_iter()
            .map(String::from)
            .collect(),
        taken: Some(go),
    };
    let svg = l.svg(&hl);
    let active: BTreeSet<&str> = svg
        .match_indices("class=\"state ")
        .filter_map(|(i, _)| {
            let g = &svg[i..i + svg[i..].find('>').unwrap()];
            g.contains(" active\"")
                .then(|| attr_values(g, "data-state")[0])
        })
        .collect();
    assert_eq!(active, hl.active.iter().map(String::as_str).collect());
    let taken = attr_values(&svg, "data-transition")
        .into_iter()
        .zip(svg.match_indices("class=\"transition"))
        .filter(|(_, (i, _))| svg[*i..].starts_with("class=\"transition taken\""))
        .map(|(t, _)| t)
        .collect::<Vec<_>>();
    assert_eq!(taken, vec![go.to_string().as_str()]);
    // The same layout draws another configuration without a new layout.
    let plain = l.svg(&Highlight::default());
    assert!(!plain.contains(" active\"") && !plain.contains("transition taken"));
}

#[test]
fn a_broken_diagram_is_an_error_naming_the_problem() {
    let node = |id: &str, parent| Node {
        id: id.into(),
        label: id.into(),
        parent,
        kind: NodeKind::Atomic,
        initial: None,
    };
    let d = Diagram {
        states: vec![node("a", None), node("b", None)],
        transitions: vec![Arrow {
            source: 0,
            targets: vec![7],
            label: "GO".into(),
        }],
        initial: None,
    };
    let e = layout(&d).unwrap_err();
    assert!(
        matches!(&e, SvgError::Invalid(m) if m.contains("transition 0") && m.contains("state 7")),
        "{e}"
    );
    let d = Diagram {
        states: vec![node("a", Some(1)), node("b", None)],
        ..Diagram::default()
    };
    let e = layout(&d).unwrap_err();
    assert!(e.to_string().contains("parent 1"), "{e}");
    // Text that is markup stays text.
    let d = Diagram {
        states: vec![node("<script>", None)],
        transitions: vec![Arrow {
            source: 0,
            targets: vec![],
            label: "a&b".into(),
        }],
        initial: Some(0),
    };
    let svg = layout(&d).unwrap().svg(&Highlight::default());
    assert!(!svg.contains("<script>") && svg.contains("&lt;script&gt;") && svg.contains("a&amp;b"));
}
