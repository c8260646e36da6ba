//! From the element tree to a [`Document`]: validation with positions, ids
//! resolved, `src` files read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{LoadError, Position};
use crate::model::*;
use crate::xml::{self, Element, Node};

/// Loads a document from text. `base` is the directory that relative `src`
/// attributes (scripts, data, invoked documents) are resolved against.
///
/// ```
/// let doc = turno_scxml::load_str(
///     r#"<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" initial="a">
///          <state id="a"><transition event="go" target="b"/></state>
///          <final id="b"/>
///        </scxml>"#,
///     None,
/// ).unwrap();
/// assert_eq!(doc.states[1].id, "a");
///
/// let err = turno_scxml::load_str("<scxml>\n  <state id='a'><transition target='nowhere'/></state></scxml>", None)
///     .unwrap_err();
/// assert_eq!(err.position().unwrap().line, 2);
/// ```
pub fn load_str(src: &str, base: Option<&Path>) -> Result<Document, LoadError> {
    let root = xml::parse(src)?;
    Builder::new(src, base).document(&root)
}

/// Loads a document from a file; relative `src` attributes are resolved
/// against the file's directory.
pub fn load_file(path: &Path) -> Result<Document, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|e| LoadError::Io {
        position: None,
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let base = path.parent().map(Path::to_path_buf);
    load_str(&text, base.as_deref())
}

/// Resolves a `src` URI (`file:name`, or a plain path) against `base`.
pub(crate) fn resolve_src(src: &str, base: Option<&Path>) -> Result<PathBuf, String> {
    let path = src
        .strip_prefix("file://")
        .or_else(|| src.strip_prefix("file:"));
    let path = match path {
        Some(p) => p,
        None if src.contains("://") => return Err(format!("unsupported URI scheme in {src:?}")),
        None => src,
    };
    let p = Path::new(path);
    Ok(match base {
        Some(b) if p.is_relative() => b.join(p),
        _ => p.to_path_buf(),
    })
}

/// Reads a `src` file.
pub(crate) fn read_src(src: &str, base: Option<&Path>) -> Result<String, String> {
    let path = resolve_src(src, base)?;
    // Only regular files: a device such as /dev/zero would never end.
    let meta =
        std::fs::metadata(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

struct Builder<'a> {
    src: &'a str,
    base: Option<PathBuf>,
    states: Vec<State>,
    transitions: Vec<Transition>,
    /// Target ids to resolve once every state is known: (transition, ids, position).
    pending: Vec<(TransitionId, Vec<String>, Position)>,
    generated: usize,
}

const SCXML_ATTRS: &[&str] = &[
    "version",
    "initial",
    "name",
    "datamodel",
    "binding",
    "exmode",
];

impl<'a> Builder<'a> {
    fn new(src: &'a str, base: Option<&Path>) -> Self {
        Builder {
            src,
            base: base.map(Path::to_path_buf),
            states: Vec::new(),
            transitions: Vec::new(),
            pending: Vec::new(),
            generated: 0,
        }
    }

    fn document(mut self, root: &Element) -> Result<Document, LoadError> {
        if root.name != "scxml" {
            return Err(LoadError::invalid(
                root.pos,
                format!("the root element must be <scxml>, not <{}>", root.name),
            ));
        }
        check_attrs(root, SCXML_ATTRS)?;
        let datamodel = match root.attr("datamodel").unwrap_or("null") {
            "null" => DataModelKind::Null,
            "ecmascript" => DataModelKind::Ecmascript,
            other => {
                return Err(LoadError::invalid(
                    root.pos,
                    format!("unsupported datamodel {other:?} (supported: null, ecmascript)"),
                ))
            }
        };
        let binding = match root.attr("binding").unwrap_or("early") {
            "early" => Binding::Early,
            "late" => Binding::Late,
            other => {
                return Err(LoadError::invalid(
                    root.pos,
                    format!("binding must be early or late, not {other:?}"),
                ))
            }
        };
        let mut script = None;
        self.state(root, None, StateKind::Scxml)?;
        for el in root.elements() {
            if el.name == "script" {
                if script.is_some() {
                    return Err(LoadError::invalid(
                        el.pos,
                        "more than one top-level <script>",
                    ));
                }
                script = Some(self.script(el)?);
            }
        }
        self.resolve()?;
        Ok(Document {
            name: root.attr("name").map(str::to_owned),
            datamodel,
            binding,
            states: self.states,
            transitions: self.transitions,
            script,
            base: self.base,
        })
    }

    fn resolve(&mut self) -> Result<(), LoadError> {
        let mut ids = HashMap::new();
        for (i, s) in self.states.iter().enumerate() {
            if ids.insert(s.id.clone(), i).is_some() {
                return Err(LoadError::invalid(
                    s.pos,
                    format!("duplicate state id {:?}", s.id),
                ));
            }
        }
        for (t, names, pos) in std::mem::take(&mut self.pending) {
            let mut targets = Vec::new();
            for n in names {
                let s = *ids.get(&n).ok_or_else(|| {
                    LoadError::invalid(pos, format!("transition target {n:?} is not a state"))
                })?;
                if s == ROOT {
                    return Err(LoadError::invalid(
                        pos,
                        "a transition cannot target <scxml>",
                    ));
                }
                targets.push(s);
            }
            self.transitions[t].targets = targets;
        }
        // A history's default leads into its parent, to real states (a
        // history pointing at a history could loop forever).
        for s in 0..self.states.len() {
            if let (Some(t), Some(parent)) = (self.states[s].history_default, self.states[s].parent)
            {
                for &target in &self.transitions[t].targets {
                    if matches!(self.states[target].kind, StateKind::History(_))
                        || !is_descendant(&self.states, target, parent)
                    {
                        return Err(LoadError::invalid(
                            self.states[s].pos,
                            format!(
                                "the default of history {:?} must be a state inside {:?}",
                                self.states[s].id, self.states[parent].id
                            ),
                        ));
                    }
                }
            }
        }
        // Initial transitions must lead into the state they belong to.
        for s in 0..self.states.len() {
            if let Some(t) = self.states[s].initial {
                for &target in &self.transitions[t].targets {
                    if !is_descendant(&self.states, target, s) {
                        return Err(LoadError::invalid(
                            self.states[s].pos,
                            format!(
                                "initial state {:?} is not a descendant of {:?}",
                                self.states[target].id, self.states[s].id
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn new_transition(
        &mut self,
        t: Transition,
        targets: Vec<String>,
        pos: Position,
    ) -> TransitionId {
        let id = self.transitions.len();
        self.transitions.push(t);
        if !targets.is_empty() {
            self.pending.push((id, targets, pos));
        }
        id
    }

    fn state(
        &mut self,
        el: &Element,
        parent: Option<StateId>,
        kind: StateKind,
    ) -> Result<StateId, LoadError> {
        let me = self.states.len();
        let id = match el.attr("id") {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => {
                self.generated += 1;
                format!("__state_{}", self.generated)
            }
        };
        self.states.push(State {
            id,
            kind,
            parent,
            children: Vec::new(),
            history: Vec::new(),
            initial: None,
            history_default: None,
            transitions: Vec::new(),
            onentry: Vec::new(),
            onexit: Vec::new(),
            invokes: Vec::new(),
            data: Vec::new(),
            donedata: None,
            pos: el.pos,
        });
        let allowed: &[&str] = match kind {
            StateKind::Scxml => SCXML_ATTRS,
            StateKind::State => &["id", "initial"],
            StateKind::Parallel | StateKind::Final => &["id"],
            StateKind::History(_) => &["id", "type"],
        };
        check_attrs(el, allowed)?;
        let mut initial_el = None;
        for child in el.elements() {
            match (kind, child.name.as_str()) {
                (StateKind::History(_), "transition") => {
                    if self.states[me].history_default.is_some() {
                        return Err(LoadError::invalid(
                            child.pos,
                            "a <history> has exactly one <transition>",
                        ));
                    }
                    let t = self.transition(child, me)?;
                    self.states[me].history_default = Some(t);
                }
                (StateKind::History(_), other) => {
                    return Err(LoadError::invalid(
                        child.pos,
                        format!("<{other}> is not allowed in <history>"),
                    ))
                }
                (StateKind::Scxml | StateKind::State | StateKind::Parallel, "state") => {
                    let c = self.state(child, Some(me), StateKind::State)?;
                    self.states[me].children.push(c);
                }
                (StateKind::Scxml | StateKind::State | StateKind::Parallel, "parallel") => {
                    let c = self.state(child, Some(me), StateKind::Parallel)?;
                    self.states[me].children.push(c);
                }
                (StateKind::Scxml | StateKind::State, "final") => {
                    let c = self.state(child, Some(me), StateKind::Final)?;
                    self.states[me].children.push(c);
                }
                (StateKind::State | StateKind::Parallel, "history") => {
                    let h = match child.attr("type").unwrap_or("shallow") {
                        "shallow" => HistoryKind::Shallow,
                        "deep" => HistoryKind::Deep,
                        other => {
                            return Err(LoadError::invalid(
                                child.pos,
                                format!("history type must be shallow or deep, not {other:?}"),
                            ))
                        }
                    };
                    let c = self.state(child, Some(me), StateKind::History(h))?;
                    if self.states[c].history_default.is_none() {
                        return Err(LoadError::invalid(
                            child.pos,
                            "a <history> needs a default <transition>",
                        ));
                    }
                    self.states[me].history.push(c);
                }
                (StateKind::State, "initial") => {
                    if initial_el.is_some() || el.attr("initial").is_some() {
                        return Err(LoadError::invalid(
                            child.pos,
                            "a state has one initial: the attribute or one <initial> element",
                        ));
                    }
                    initial_el = Some(child);
                }
                (StateKind::State | StateKind::Parallel, "transition") => {
                    let t = self.transition(child, me)?;
                    self.states[me].transitions.push(t);
                }
                (StateKind::State | StateKind::Parallel | StateKind::Final, "onentry") => {
                    check_attrs(child, &[])?;
                    let b = self.block(child)?;
                    self.states[me].onentry.push(b);
                }
                (StateKind::State | StateKind::Parallel | StateKind::Final, "onexit") => {
                    check_attrs(child, &[])?;
                    let b = self.block(child)?;
                    self.states[me].onexit.push(b);
                }
                (StateKind::State | StateKind::Parallel, "invoke") => {
                    let inv = self.invoke(child)?;
                    self.states[me].invokes.push(inv);
                }
                (_, "datamodel") => {
                    check_attrs(child, &[])?;
                    for d in child.elements() {
                        if d.name != "data" {
                            return Err(LoadError::invalid(
                                d.pos,
                                format!("<{}> is not allowed in <datamodel>", d.name),
                            ));
                        }
                        let data = self.data(d)?;
                        self.states[me].data.push(data);
                    }
                }
                (StateKind::Final, "donedata") => {
                    check_attrs(child, &[])?;
                    self.states[me].donedata = Some(self.donedata(child)?);
                }
                (StateKind::Scxml, "script") => {} // handled by `document`
                (_, other) => {
                    return Err(LoadError::invalid(
                        child.pos,
                        format!("<{other}> is not allowed in <{}>", el.name),
                    ))
                }
            }
        }
        // The default initial transition of a compound state or the document.
        if matches!(kind, StateKind::Scxml | StateKind::State)
            && !self.states[me].children.is_empty()
        {
            let t = if let Some(init) = initial_el {
                check_attrs(init, &["id"])?;
                let mut ts = init.elements();
                let (Some(tel), None) = (ts.next(), ts.next()) else {
                    return Err(LoadError::invalid(
                        init.pos,
                        "<initial> holds exactly one <transition>",
                    ));
                };
                if tel.name != "transition"
                    || tel.attr("event").is_some()
                    || tel.attr("cond").is_some()
                {
                    return Err(LoadError::invalid(
                        tel.pos,
                        "<initial> holds one <transition> without event or cond",
                    ));
                }
                let t = self.transition(tel, me)?;
                if self.transitions[t].targets.is_empty()
                    && !self.pending.iter().any(|(p, _, _)| *p == t)
                {
                    return Err(LoadError::invalid(
                        tel.pos,
                        "the initial transition needs a target",
                    ));
                }
                t
            } else {
                let targets = match el.attr("initial") {
                    Some(list) => split_ids(list),
                    None => vec![self.states[self.states[me].children[0]].id.clone()],
                };
                if targets.is_empty() {
                    return Err(LoadError::invalid(el.pos, "empty initial attribute"));
                }
                self.new_transition(
                    Transition {
                        source: me,
                        events: Vec::new(),
                        cond: None,
                        targets: Vec::new(),
                        internal: false,
                        content: Vec::new(),
                    },
                    targets,
                    el.pos,
                )
            };
            self.states[me].initial = Some(t);
        } else if el.attr("initial").is_some() || initial_el.is_some() {
            return Err(LoadError::invalid(
                el.pos,
                "an initial state is given but the state has no child states",
            ));
        }
        Ok(me)
    }

    fn transition(&mut self, el: &Element, source: StateId) -> Result<TransitionId, LoadError> {
        check_attrs(el, &["event", "cond", "target", "type"])?;
        let events = el.attr("event").map(split_ids).unwrap_or_default();
        if el.attr("event").is_some() && events.is_empty() {
            return Err(LoadError::invalid(el.pos, "empty event attribute"));
        }
        let internal = match el.attr("type").unwrap_or("external") {
            "external" => false,
            "internal" => true,
            other => {
                return Err(LoadError::invalid(
                    el.pos,
                    format!("transition type must be internal or external, not {other:?}"),
                ))
            }
        };
        let targets = el.attr("target").map(split_ids).unwrap_or_default();
        let content = self.block(el)?;
        Ok(self.new_transition(
            Transition {
                source,
                events,
                cond: el.attr("cond").map(str::to_owned),
                targets: Vec::new(),
                internal,
                content,
            },
            targets,
            el.pos,
        ))
    }

    fn block(&mut self, el: &Element) -> Result<Block, LoadError> {
        el.elements().map(|c| self.exec(c)).collect()
    }

    fn exec(&mut self, el: &Element) -> Result<Exec, LoadError> {
        Ok(match el.name.as_str() {
            "raise" => {
                check_attrs(el, &["event"])?;
                no_children(el)?;
                Exec::Raise {
                    event: required(el, "event")?.to_owned(),
                }
            }
            "log" => {
                check_attrs(el, &["label", "expr"])?;
                no_children(el)?;
                Exec::Log {
                    label: el.attr("label").map(str::to_owned),
                    expr: el.attr("expr").map(str::to_owned),
                }
            }
            "assign" => {
                check_attrs(el, &["location", "expr"])?;
                let location = required(el, "location")?.to_owned();
                let value = match el.attr("expr") {
                    Some(e) => {
                        if el.children.iter().any(|n| !is_blank(n)) {
                            return Err(LoadError::invalid(
                                el.pos,
                                "<assign> has either expr or content, not both",
                            ));
                        }
                        AssignValue::Expr(e.to_owned())
                    }
                    None => AssignValue::Content(self.inline(el)),
                };
                Exec::Assign { location, value }
            }
            "if" => {
                check_attrs(el, &["cond"])?;
                let mut branches = vec![(Some(required(el, "cond")?.to_owned()), Vec::new())];
                let mut seen_else = false;
                for c in el.elements() {
                    match c.name.as_str() {
                        "elseif" => {
                            check_attrs(c, &["cond"])?;
                            if seen_else {
                                return Err(LoadError::invalid(c.pos, "<elseif> after <else>"));
                            }
                            branches.push((Some(required(c, "cond")?.to_owned()), Vec::new()));
                        }
                        "else" => {
                            check_attrs(c, &[])?;
                            if seen_else {
                                return Err(LoadError::invalid(c.pos, "a second <else>"));
                            }
                            seen_else = true;
                            branches.push((None, Vec::new()));
                        }
                        _ => {
                            let e = self.exec(c)?;
                            if let Some(last) = branches.last_mut() {
                                last.1.push(e);
                            }
                        }
                    }
                }
                Exec::If(branches)
            }
            "foreach" => {
                check_attrs(el, &["array", "item", "index"])?;
                Exec::Foreach {
                    array: required(el, "array")?.to_owned(),
                    item: required(el, "item")?.to_owned(),
                    index: el.attr("index").map(str::to_owned),
                    body: self.block(el)?,
                }
            }
            "script" => Exec::Script(self.script(el)?),
            "cancel" => {
                check_attrs(el, &["sendid", "sendidexpr"])?;
                no_children(el)?;
                Exec::Cancel {
                    sendid: value_or_expr(el, "sendid", "sendidexpr")?.ok_or_else(|| {
                        LoadError::invalid(el.pos, "<cancel> needs sendid or sendidexpr")
                    })?,
                }
            }
            "send" => Exec::Send(Box::new(self.send(el)?)),
            other => {
                return Err(LoadError::invalid(
                    el.pos,
                    format!("<{other}> is not executable content"),
                ))
            }
        })
    }

    fn send(&mut self, el: &Element) -> Result<Send, LoadError> {
        check_attrs(
            el,
            &[
                "event",
                "eventexpr",
                "target",
                "targetexpr",
                "type",
                "typeexpr",
                "id",
                "idlocation",
                "delay",
                "delayexpr",
                "namelist",
            ],
        )?;
        if el.attr("id").is_some() && el.attr("idlocation").is_some() {
            return Err(LoadError::invalid(
                el.pos,
                "<send> has either id or idlocation",
            ));
        }
        let (params, content) = self.params_and_content(el)?;
        let namelist = el.attr("namelist").map(split_ids).unwrap_or_default();
        let event = value_or_expr(el, "event", "eventexpr")?;
        if content.is_some() && (!params.is_empty() || !namelist.is_empty()) {
            return Err(LoadError::invalid(
                el.pos,
                "<send> with <content> cannot also have <param> or namelist",
            ));
        }
        let delay = value_or_expr(el, "delay", "delayexpr")?;
        if let Some(ValueOrExpr::Value(d)) = &delay {
            if parse_delay(d).is_none() {
                return Err(LoadError::invalid(el.pos, format!("bad delay {d:?}")));
            }
        }
        Ok(Send {
            event,
            target: value_or_expr(el, "target", "targetexpr")?,
            type_: value_or_expr(el, "type", "typeexpr")?,
            id: el.attr("id").map(str::to_owned),
            idlocation: el.attr("idlocation").map(str::to_owned),
            delay,
            namelist,
            params,
            content,
        })
    }

    fn params_and_content(
        &mut self,
        el: &Element,
    ) -> Result<(Vec<Param>, Option<Content>), LoadError> {
        let mut params = Vec::new();
        let mut content = None;
        for c in el.elements() {
            match c.name.as_str() {
                "param" => params.push(param(c)?),
                "content" => {
                    if content.is_some() {
                        return Err(LoadError::invalid(c.pos, "a second <content>"));
                    }
                    content = Some(self.content(c)?);
                }
                other => {
                    return Err(LoadError::invalid(
                        c.pos,
                        format!("<{other}> is not allowed in <{}>", el.name),
                    ))
                }
            }
        }
        Ok((params, content))
    }

    fn content(&mut self, el: &Element) -> Result<Content, LoadError> {
        check_attrs(el, &["expr"])?;
        match el.attr("expr") {
            Some(e) => {
                if el.children.iter().any(|n| !is_blank(n)) {
                    return Err(LoadError::invalid(
                        el.pos,
                        "<content> has either expr or children, not both",
                    ));
                }
                Ok(Content::Expr(e.to_owned()))
            }
            None => Ok(Content::Inline(self.inline(el))),
        }
    }

    /// Children as written: the resolved text when there is no markup, the
    /// raw markup otherwise.
    fn inline(&self, el: &Element) -> String {
        if el.elements().next().is_none() {
            el.text()
        } else {
            self.src[el.inner.clone()].to_owned()
        }
    }

    fn donedata(&mut self, el: &Element) -> Result<DoneData, LoadError> {
        let (params, content) = self.params_and_content(el)?;
        match content {
            Some(c) if params.is_empty() => Ok(DoneData::Content(c)),
            Some(_) => Err(LoadError::invalid(
                el.pos,
                "<donedata> has either <content> or <param>s",
            )),
            None => Ok(DoneData::Params(params)),
        }
    }

    fn data(&mut self, el: &Element) -> Result<Data, LoadError> {
        check_attrs(el, &["id", "expr", "src"])?;
        let id = required(el, "id")?.to_owned();
        let has_content = el.children.iter().any(|n| !is_blank(n));
        let sources =
            el.attr("expr").is_some() as u8 + el.attr("src").is_some() as u8 + has_content as u8;
        if sources > 1 {
            return Err(LoadError::invalid(
                el.pos,
                "<data> has at most one of expr, src and content",
            ));
        }
        let init = if let Some(e) = el.attr("expr") {
            DataInit::Expr(e.to_owned())
        } else if let Some(src) = el.attr("src") {
            let text = read_src(src, self.base.as_deref()).map_err(|message| LoadError::Io {
                position: Some(el.pos),
                path: src.to_owned(),
                message,
            })?;
            DataInit::Text(text)
        } else if has_content {
            DataInit::Text(self.inline(el))
        } else {
            DataInit::None
        };
        Ok(Data {
            id,
            init,
            pos: el.pos,
        })
    }

    fn script(&mut self, el: &Element) -> Result<Script, LoadError> {
        check_attrs(el, &["src"])?;
        let source = match el.attr("src") {
            Some(src) => {
                if el.children.iter().any(|n| !is_blank(n)) {
                    return Err(LoadError::invalid(
                        el.pos,
                        "<script> has either src or content, not both",
                    ));
                }
                read_src(src, self.base.as_deref()).map_err(|message| LoadError::Io {
                    position: Some(el.pos),
                    path: src.to_owned(),
                    message,
                })?
            }
            None => {
                if let Some(c) = el.elements().next() {
                    return Err(LoadError::invalid(c.pos, "<script> holds text only"));
                }
                el.text()
            }
        };
        Ok(Script {
            source: source.into(),
            pos: el.pos,
        })
    }

    fn invoke(&mut self, el: &Element) -> Result<Invoke, LoadError> {
        check_attrs(
            el,
            &[
                "type",
                "typeexpr",
                "src",
                "srcexpr",
                "id",
                "idlocation",
                "namelist",
                "autoforward",
            ],
        )?;
        if el.attr("id").is_some() && el.attr("idlocation").is_some() {
            return Err(LoadError::invalid(
                el.pos,
                "<invoke> has either id or idlocation",
            ));
        }
        let autoforward = match el.attr("autoforward").unwrap_or("false") {
            "true" => true,
            "false" => false,
            other => {
                return Err(LoadError::invalid(
                    el.pos,
                    format!("autoforward must be true or false, not {other:?}"),
                ))
            }
        };
        let mut params = Vec::new();
        let mut content = None;
        let mut finalize = Vec::new();
        for c in el.elements() {
            match c.name.as_str() {
                "param" => params.push(param(c)?),
                "finalize" => {
                    check_attrs(c, &[])?;
                    finalize = self.block(c)?;
                }
                "content" => {
                    check_attrs(c, &["expr"])?;
                    if content.is_some() {
                        return Err(LoadError::invalid(c.pos, "a second <content>"));
                    }
                    content = Some(if let Some(e) = c.attr("expr") {
                        InvokeContent::Expr(e.to_owned())
                    } else if let Some(doc) = c.elements().next() {
                        let sub = Builder::new(self.src, self.base.as_deref()).document(doc)?;
                        InvokeContent::Document(Arc::new(sub))
                    } else {
                        let text = c.text();
                        let sub = load_str(&text, self.base.as_deref()).map_err(|e| {
                            LoadError::invalid(c.pos, format!("inline document: {e}"))
                        })?;
                        InvokeContent::Document(Arc::new(sub))
                    });
                }
                other => {
                    return Err(LoadError::invalid(
                        c.pos,
                        format!("<{other}> is not allowed in <invoke>"),
                    ))
                }
            }
        }
        let src = value_or_expr(el, "src", "srcexpr")?;
        if src.is_some() && content.is_some() {
            return Err(LoadError::invalid(
                el.pos,
                "<invoke> has either src/srcexpr or <content>",
            ));
        }
        let namelist = el.attr("namelist").map(split_ids).unwrap_or_default();
        if !namelist.is_empty() && !params.is_empty() {
            return Err(LoadError::invalid(
                el.pos,
                "<invoke> has either namelist or <param>s",
            ));
        }
        Ok(Invoke {
            type_: value_or_expr(el, "type", "typeexpr")?,
            src,
            id: el.attr("id").map(str::to_owned),
            idlocation: el.attr("idlocation").map(str::to_owned),
            namelist,
            autoforward,
            params,
            content,
            finalize,
            pos: el.pos,
        })
    }
}

fn is_descendant(states: &[State], s: StateId, ancestor: StateId) -> bool {
    let mut p = states[s].parent;
    while let Some(x) = p {
        if x == ancestor {
            return true;
        }
        p = states[x].parent;
    }
    false
}

fn param(el: &Element) -> Result<Param, LoadError> {
    check_attrs(el, &["name", "expr", "location"])?;
    no_children(el)?;
    let name = required(el, "name")?.to_owned();
    let expr = match (el.attr("expr"), el.attr("location")) {
        (Some(e), None) | (None, Some(e)) => e.to_owned(),
        _ => {
            return Err(LoadError::invalid(
                el.pos,
                "<param> needs exactly one of expr and location",
            ))
        }
    };
    Ok(Param { name, expr })
}

fn value_or_expr(el: &Element, attr: &str, expr: &str) -> Result<Option<ValueOrExpr>, LoadError> {
    match (el.attr(attr), el.attr(expr)) {
        (Some(_), Some(_)) => Err(LoadError::invalid(
            el.pos,
            format!("<{}> has either {attr} or {expr}, not both", el.name),
        )),
        (Some(v), None) => Ok(Some(ValueOrExpr::Value(v.to_owned()))),
        (None, Some(e)) => Ok(Some(ValueOrExpr::Expr(e.to_owned()))),
        (None, None) => Ok(None),
    }
}

fn required<'e>(el: &'e Element, attr: &str) -> Result<&'e str, LoadError> {
    el.attr(attr).ok_or_else(|| {
        LoadError::invalid(el.pos, format!("<{}> needs a {attr} attribute", el.name))
    })
}

fn check_attrs(el: &Element, allowed: &[&str]) -> Result<(), LoadError> {
    for (k, _) in &el.attrs {
        if !allowed.contains(&k.as_str()) {
            return Err(LoadError::invalid(
                el.pos,
                format!("<{}> has no attribute {k:?}", el.name),
            ));
        }
    }
    Ok(())
}

fn no_children(el: &Element) -> Result<(), LoadError> {
    if let Some(c) = el.children.iter().find(|n| !is_blank(n)) {
        let pos = match c {
            Node::Element(e) => e.pos,
            Node::Text(_) => el.pos,
        };
        return Err(LoadError::invalid(
            pos,
            format!("<{}> must be empty", el.name),
        ));
    }
    Ok(())
}

fn is_blank(n: &Node) -> bool {
    matches!(n, Node::Text(t) if t.trim().is_empty())
}

fn split_ids(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

/// Parses a CSS2 time (`"1s"`, `".5s"`, `"200ms"`) into milliseconds.
pub(crate) fn parse_delay(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1000.0)
    } else if let Some(n) = s.strip_suffix("min") {
        (n, 60_000.0)
    } else {
        return None;
    };
    let n = num.trim();
    if n.is_empty() || !n.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let v: f64 = n.parse().ok()?;
    Some(v * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays() {
        assert_eq!(parse_delay("1s"), Some(1000.0));
        assert_eq!(parse_delay(".5s"), Some(500.0));
        assert_eq!(parse_delay("200ms"), Some(200.0));
        assert_eq!(parse_delay("0s"), Some(0.0));
        assert_eq!(parse_delay("s"), None);
        assert_eq!(parse_delay("-1s"), None);
        assert_eq!(parse_delay("1"), None);
    }

    #[test]
    fn document_order_and_initial() {
        let d = load_str(
            "<scxml initial='b'><state id='a'><state id='a1'/></state><parallel id='b'><state id='b1'/><state id='b2'/></parallel></scxml>",
            None,
        )
        .unwrap();
        let ids: Vec<_> = d.states.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids[1..], ["a", "a1", "b", "b1", "b2"]);
        let t = d.states[0].initial.unwrap();
        assert_eq!(d.transitions[t].targets, vec![3]);
        let t = d.states[1].initial.unwrap();
        assert_eq!(d.transitions[t].targets, vec![2]);
        assert!(d.is_parallel(3) && d.is_atomic(2) && d.is_compound(1));
    }

    #[test]
    fn invalid_documents_name_the_place() {
        let cases = [
            (
                "<scxml><state id='a'/><state id='a'/></scxml>",
                "duplicate state id",
            ),
            (
                "<scxml><state><foo/></state></scxml>",
                "<foo> is not allowed",
            ),
            (
                "<scxml><state><onentry><bar/></onentry></state></scxml>",
                "not executable content",
            ),
            (
                "<scxml><state><onentry><raise/></onentry></state></scxml>",
                "needs a event",
            ),
            ("<scxml datamodel='xpath'/>", "unsupported datamodel"),
            ("<root/>", "must be <scxml>"),
            ("<scxml initial='x'><state id='a'/></scxml>", "not a state"),
            (
                "<scxml><state id='a' initial='a'><state id='b'/></state></scxml>",
                "not a descendant",
            ),
            (
                "<scxml><state><onentry><send delay='soon'/></onentry></state></scxml>",
                "bad delay",
            ),
        ];
        for (src, msg) in cases {
            let e = load_str(src, None).unwrap_err();
            assert!(e.to_string().contains(msg), "{src}: {e}");
            assert!(e.position().is_some(), "{src}");
        }
    }
}
