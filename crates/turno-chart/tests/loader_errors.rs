//! The JSON loader fails early, naming the problem and its JSON path.

use serde_json::Value;
use turno_chart::{load_json, stdlib, LoadError, Problem};

fn problem(json: &str) -> (String, Problem) {
    match load_json::<Value>(json, &stdlib::implementations()) {
        Err(LoadError::Invalid(e)) => (e.path, e.problem),
        Err(other) => panic!("expected an invalid machine, got {other}"),
        Ok(_) => panic!("expected an error for {json}"),
    }
}

#[test]
fn unknown_action_guard_delay_and_actor() {
    let (p, e) = problem(r#"{"initial":"a","states":{"a":{"entry":["inc","nope"]}}}"#);
    assert_eq!(p, "$.states.a.entry[1]");
    assert_eq!(
        e,
        Problem::UnknownImplementation {
            kind: "action",
            name: "nope".into()
        }
    );

    let (p, e) =
        problem(r#"{"initial":"a","states":{"a":{"on":{"E":{"target":"a","guard":"isOk"}}}}}"#);
    assert_eq!(p, "$.states.a.on.E[0].guard");
    assert_eq!(
        e,
        Problem::UnknownImplementation {
            kind: "guard",
            name: "isOk".into()
        }
    );

    let (p, e) = problem(
        r#"{"initial":"a","states":{"a":{"on":{"E":[{"target":"a"},{"guard":{"type":"and","guards":["pass",{"type":"who"}]}}]}}}}"#,
    );
    assert_eq!(p, "$.states.a.on.E[1].guard.guards[1]");
    assert_eq!(
        e,
        Problem::UnknownImplementation {
            kind: "guard",
            name: "who".into()
        }
    );

    let (p, e) = problem(r#"{"initial":"a","states":{"a":{"after":{"soon":"a"}}}}"#);
    assert_eq!(p, "$.states.a.after.soon");
    assert_eq!(
        e,
        Problem::UnknownImplementation {
            kind: "delay",
            name: "soon".into()
        }
    );

    let (p, e) = problem(r#"{"initial":"a","states":{"a":{"invoke":{"src":"fetchUser"}}}}"#);
    assert_eq!(p, "$.states.a.invoke.src");
    assert_eq!(
        e,
        Problem::UnknownImplementation {
            kind: "actor",
            name: "fetchUser".into()
        }
    );
}

#[test]
fn bad_targets() {
    let (p, e) = problem(r#"{"initial":"a","states":{"a":{"on":{"E":"b"}}}}"#);
    assert_eq!(p, "$.states.a.on.E[0].target");
    assert!(
        matches!(e, Problem::BadTarget { ref target, .. } if target == "b"),
        "{e}"
    );

    let (p, e) =
        problem(r##"{"initial":"a","states":{"a":{"on":{"E":{"target":["a","#ghost"]}}}}}"##);
    assert_eq!(p, "$.states.a.on.E[0].target[1]");
    assert!(
        matches!(e, Problem::BadTarget { ref target, .. } if target == "#ghost"),
        "{e}"
    );

    let (p, e) = problem(r#"{"initial":"a","on":{"E":"a"},"states":{"a":{}}}"#);
    assert_eq!(p, "$.on.E[0].target");
    assert!(e.to_string().contains("did you mean \".a\""), "{e}");

    let (p, _) = problem(r#"{"initial":"a","states":{"a":{"on":{"E":".nochild"}}}}"#);
    assert_eq!(p, "$.states.a.on.E[0].target");
}

#[test]
fn duplicate_ids() {
    let (p, e) = problem(r#"{"initial":"a","states":{"a":{"id":"x"},"b":{"id":"x"}}}"#);
    assert_eq!(p, "$.states.b");
    assert_eq!(
        e,
        Problem::DuplicateId {
            id: "x".into(),
            first: "$.states.a".into()
        }
    );
    // An explicit id that collides with a generated one.
    let (p, _) = problem(r#"{"id":"m","initial":"a","states":{"a":{},"b":{"id":"m.a"}}}"#);
    assert_eq!(p, "$.states.b");
}

#[test]
fn invalid_initial() {
    let (p, e) = problem(r#"{"initial":"nope","states":{"a":{}}}"#);
    assert_eq!(p, "$.initial");
    assert!(matches!(e, Problem::InvalidInitial { ref initial, .. } if initial == "nope"));
    let (p, e) = problem(r#"{"states":{"a":{}}}"#);
    assert_eq!(p, "$");
    assert!(matches!(e, Problem::InvalidInitial { .. }));
    let (p, _) = problem(r#"{"initial":"a","states":{"a":{"initial":"x"}}}"#);
    assert_eq!(p, "$.states.a.initial");
}

#[test]
fn history_with_children() {
    let (p, e) = problem(
        r#"{"initial":"a","states":{"a":{"initial":"h","states":{"h":{"type":"history","initial":"x","states":{"x":{}}}}}}}"#,
    );
    assert_eq!(p, "$.states.a.states.h");
    assert_eq!(e, Problem::HistoryWithChildren);
}

#[test]
fn unknown_keys() {
    let (p, e) = problem(r#"{"initial":"a","states":{"a":{"onEntry":"inc"}}}"#);
    assert_eq!(p, "$.states.a.onEntry");
    assert_eq!(e, Problem::UnknownKey("onEntry".into()));
    let (p, _) =
        problem(r#"{"initial":"a","states":{"a":{"on":{"E":{"target":"a","cond":"pass"}}}}}"#);
    assert_eq!(p, "$.states.a.on.E[0].cond");
    let (p, _) = problem(r#"{"initial":"a","predictableActionArguments":true,"states":{"a":{}}}"#);
    assert_eq!(p, "$.predictableActionArguments");
    let (p, _) = problem(
        r#"{"initial":"a","states":{"a":{"invoke":{"src":"echo","onDone":"a","data":1}}}}"#,
    );
    assert_eq!(p, "$.states.a.invoke.data");
}

#[test]
fn wrong_types_and_syntax() {
    let (p, e) = problem(r#"{"initial":"a","states":{"a":{"on":{"E":5}}}}"#);
    assert_eq!(p, "$.states.a.on.E[0]");
    assert!(matches!(e, Problem::WrongType(_)));
    assert!(matches!(
        load_json::<Value>("{\"initial\": ", &stdlib::implementations()),
        Err(LoadError::Syntax(_))
    ));
    assert!(matches!(
        load_json::<Value>(r#"{"initial":"a","initial":"b","states":{"a":{}}}"#, &stdlib::implementations()),
        Err(LoadError::Syntax(s)) if s.contains("duplicate key")
    ));
    assert!(matches!(
        load_json::<Value>("[]", &stdlib::implementations()),
        Err(LoadError::Invalid(_))
    ));
}

#[test]
fn a_conditional_action_lists_branches_are_checked_at_load() {
    let (p, e) = problem(
        r#"{"initial":"a","states":{"a":{"entry":{"type":"choose","params":{"branches":[
            {"guard":"pass","actions":["inc"]},{"guard":{"type":"maybe"},"actions":[]}]}}}}}"#,
    );
    assert_eq!(p, "$.states.a.entry.params.branches[1].guard");
    assert_eq!(
        e,
        Problem::UnknownImplementation {
            kind: "guard",
            name: "maybe".into()
        }
    );

    let (p, e) = problem(
        r#"{"initial":"a","states":{"a":{"on":{"E":{"actions":[{"type":"choose","params":{"branches":[
            {"actions":["inc",{"type":"shout"}]}]}}]}}}}}"#,
    );
    assert_eq!(
        p,
        "$.states.a.on.E[0].actions[0].params.branches[0].actions[1]"
    );
    assert_eq!(
        e,
        Problem::UnknownImplementation {
            kind: "action",
            name: "shout".into()
        }
    );

    let (p, e) = problem(
        r#"{"initial":"a","states":{"a":{"entry":{"type":"choose","params":{"branches":[
            {"actions":["inc"]},{"guard":"pass","actions":["inc"]}]}}}}}"#,
    );
    assert_eq!(p, "$.states.a.entry.params.branches[0].guard");
    assert!(matches!(e, Problem::Invalid(m) if m.contains("only the last branch")));

    let (p, e) = problem(
        r##"{"initial":"a","states":{"a":{"entry":{"type":"choose","params":{"branches":[
            {"guard":{"type":"not","guard":{"type":"stateIn","state":"#x"}},"actions":["inc"]}]}}}}}"##,
    );
    assert_eq!(p, "$.states.a.entry.params.branches[0].guard");
    assert!(matches!(e, Problem::Invalid(m) if m.contains("stateIn")));

    let (p, e) = problem(r#"{"initial":"a","states":{"a":{"entry":"choose"}}}"#);
    assert_eq!(p, "$.states.a.entry.params");
    assert!(matches!(e, Problem::Invalid(m) if m.contains("branches")));

    let (p, _) = problem(
        r#"{"initial":"a","states":{"a":{"entry":{"type":"choose","params":{"branches":{"actions":[]}}}}}}"#,
    );
    assert_eq!(p, "$.states.a.entry.params.branches");
}

#[test]
fn spawn_child_names_a_registered_actor() {
    let (p, e) = problem(
        r#"{"initial":"a","states":{"a":{"entry":{"type":"spawnChild","params":{"src":"ghost","id":"g"}}}}}"#,
    );
    assert_eq!(p, "$.states.a.entry.params.src");
    assert_eq!(
        e,
        Problem::UnknownImplementation {
            kind: "actor",
            name: "ghost".into()
        }
    );
    let (p, _) = problem(
        r#"{"initial":"a","states":{"a":{"on":{"GO":{"actions":[{"type":"spawnChild","params":{"id":"g"}}]}}}}}"#,
    );
    assert_eq!(p, "$.states.a.on.GO[0].actions[0].params.src");
    assert!(load_json::<Value>(
        r#"{"initial":"a","states":{"a":{"entry":{"type":"spawnChild","params":{"src":"echo"}}}}}"#,
        &stdlib::implementations()
    )
    .is_ok());
}
