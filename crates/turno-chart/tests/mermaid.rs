//! `turno chart mermaid`'s drawing of an XState JSON machine: compound and
//! parallel states, history, initial and final markers, guards and delays
//! on the labels.

use turno_chart::{load_json, mermaid::to_mermaid, stdlib};

#[test]
fn compound_parallel_history_markers_and_labels() {
    let imp = stdlib::implementations();
    let m = load_json(
        r##"{"id": "m", "initial": "idle", "states": {
          "idle": {"on": {"START": {"target": "work", "guard": "pass"}}},
          "work": {"type": "parallel", "states": {
            "a": {"initial": "a1", "states": {
              "a1": {"after": {"250": "a2"}}, "a2": {},
              "hist": {"type": "history", "history": "deep"}}},
            "b": {"initial": "b1", "states": {"b1": {"on": {"STOP": "#m.done"}}}}}},
          "done": {"type": "final"}}}"##,
        &imp,
    )
    .unwrap();
    let d = to_mermaid(&m);
    assert!(d.starts_with("stateDiagram-v2\n"), "{d}");
    for want in [
        "[*] --> m_idle",
        "m_idle --> m_work : START [pass]",
        "state \"work\" as m_work {",
        "--",
        "[*] --> m_work_a_a1",
        "m_work_a_a1 --> m_work_a_a2 : after 250ms",
        "state \"H*\" as m_work_a_hist",
        "m_work_b_b1 --> m_done : STOP",
        "m_done --> [*]",
    ] {
        assert!(d.contains(want), "missing {want:?} in:\n{d}");
    }
}
