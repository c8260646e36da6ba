//! A node's pages: the single-node wizard's pages, steps and checks
//! ([`crate::web`], [`crate::pages`]) over the session home of
//! [`super::home`]. What differs: a page's view is the session's committed
//! snapshot read from the store; an event goes to the session's owner
//! node; the page names the node that served it and the owner; drafts and
//! their links and "forget me" are the single-node wizard's only.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use turno_chart::Event;

use super::home::{Answer, Home, Op, Seen};
use crate::client::{self, Faults};
use crate::ids;
use crate::pages::{self, Nodes, Opts};
use crate::session::{self, View};
use crate::steps::{Page, Stage, Step, STEPS};
use crate::validate::Errors;
use crate::web::{
    blocking, build_event, chosen, cookie_sid, opts, page, reject_page, restarting, see,
    set_cookie, workings_form, FaultForm, PageQuery, Reject, Why,
};
use crate::words::fill;

/// What a node's handlers share.
pub(crate) struct NodeState {
    pub home: Arc<Home>,
    /// The supervisor's control address (node faults).
    pub control: SocketAddr,
}

type St = State<Arc<NodeState>>;

/// The longest a state poll waits for the session to move.
const MAX_WAIT: Duration = Duration::from_secs(20);

pub(crate) fn router(n: Arc<NodeState>) -> Router {
    let pages = STEPS.iter().fold(Router::new(), |r, row| {
        r.route(
            &row.url(),
            get(move |st: St, headers: HeaderMap, q: Query<PageQuery>| {
                step_page(st, headers, q, row)
            }),
        )
    });
    pages
        .route("/", get(index))
        .route("/new", post(new_form))
        .route("/workings", post(workings_form))
        .route("/event", post(event_form))
        .route("/faults", post(faults_form))
        .route("/node-fault", post(node_fault_form))
        .route("/api/state", get(api_state))
        .route("/api/new", post(api_new))
        .route("/api/event", post(api_event))
        .route("/api/faults", post(api_faults))
        .route("/api/chart", get(api_chart))
        .route("/_node/health", get(|| async { "ok" }))
        .route(
            "/assets/app.js",
            get(|| async { ([(header::CONTENT_TYPE, "text/javascript")], pages::APP_JS) }),
        )
        .route(
            "/assets/app.css",
            get(|| async { ([(header::CONTENT_TYPE, "text/css")], pages::APP_CSS) }),
        )
        .with_state(n)
}

fn store_failed(e: &str) -> Reject {
    eprintln!("turno demo cluster: the store failed: {e}");
    Reject::new(StatusCode::SERVICE_UNAVAILABLE, |w| w.store_failed)
}

/// The session's committed state.
async fn seen(n: &NodeState, sid: &str) -> Result<Option<Seen>, Reject> {
    let (home, sid) = (n.home.clone(), sid.to_string());
    blocking(move || home.seen(&sid))
        .await
        .map_err(|e| store_failed(&e))
}

/// Routes `op` to the session's owner; a failure is a "restarting" page
/// (it retries by itself).
async fn route(n: &NodeState, op: Op) -> Result<Answer, Reject> {
    n.home.route(op).await.map_err(|why| {
        eprintln!("turno demo cluster: {}: {why}", n.home.name);
        restarting()
    })
}

/// A new session at its first step: its first event (one the chart has no
/// transition for) creates it on its owner.
async fn create(n: &NodeState) -> Result<(String, Seen), Reject> {
    let sid = ids::session_id();
    let op = Op {
        sid: sid.clone(),
        seq: 1,
        event: Event::new("START"),
        guard: None,
    };
    route(n, op).await?;
    match seen(n, &sid).await? {
        Some(s) => Ok((sid, s)),
        None => Err(store_failed("a new session was not stored")),
    }
}

fn render(
    n: &NodeState,
    o: Opts,
    s: &Seen,
    errors: &Errors,
    values: &BTreeMap<String, String>,
    notice: Option<&str>,
) -> String {
    let nodes = Nodes {
        served: &n.home.name,
        owner: s.owner.as_deref(),
    };
    pages::step_on(o, &s.view, errors, values, notice, Some(&nodes))
}

async fn index(State(n): St, headers: HeaderMap, Query(q): Query<PageQuery>) -> Response {
    let (o, cookies) = chosen(&headers, &q);
    match existing_or_new(&n, &headers).await {
        Ok((v, mut set)) => {
            set.extend(cookies);
            see(&v.url, &set)
        }
        Err(r) => reject_page(o, r),
    }
}

async fn existing_or_new(
    n: &NodeState,
    headers: &HeaderMap,
) -> Result<(View, Vec<String>), Reject> {
    if let Some(sid) = cookie_sid(headers) {
        if let Some(s) = seen(n, &sid).await? {
            return Ok((s.view, Vec::new()));
        }
    }
    let (sid, s) = create(n).await?;
    Ok((s.view, vec![set_cookie(&sid)]))
}

/// A step's page: the session moves there when the chart allows it by a
/// move that sends nothing, as on the single-node wizard.
async fn step_page(
    State(n): St,
    headers: HeaderMap,
    Query(q): Query<PageQuery>,
    row: &'static Step,
) -> Response {
    let (o, cookies) = chosen(&headers, &q);
    let found = match cookie_sid(&headers) {
        Some(sid) => match seen(&n, &sid).await {
            Ok(s) => s.map(|s| (sid, s)),
            Err(r) => return reject_page(o, r),
        },
        None => None,
    };
    let Some((sid, mut s)) = found else {
        return match existing_or_new(&n, &headers).await {
            Ok((v, mut set)) => {
                set.extend(cookies);
                see(&v.url, &set)
            }
            Err(r) => reject_page(o, r),
        };
    };
    if s.view.step != row.name {
        let current = s.view.step.clone();
        let not_open = |current: &str| {
            let url = Step::named(current).map_or_else(|| "/".into(), Step::url);
            see(&format!("{url}?from={}", row.name), &cookies)
        };
        let Some(event) = session::move_to(&n.home.machine, &s.snapshot, &current, row.name) else {
            return not_open(&current);
        };
        let op = Op {
            sid: sid.clone(),
            seq: s.applied + 1,
            event,
            guard: Some(current.clone()),
        };
        match route(&n, op).await {
            Ok(Answer::Applied { .. }) => {}
            Ok(Answer::Stale { current }) => return not_open(&current),
            Err(r) => return reject_page(o, r),
        }
        s = match seen(&n, &sid).await {
            Ok(Some(s)) => s,
            Ok(None) => return reject_page(o, store_failed("the session is gone")),
            Err(r) => return reject_page(o, r),
        };
        if s.view.step != row.name {
            return not_open(&s.view.step);
        }
    }
    let w = o.lang.words();
    let here = Step::named(&s.view.step).unwrap_or(row);
    let notice = match q.from.as_deref().and_then(Step::named) {
        Some(from) if from.name != s.view.step => {
            let why = if here.finished {
                w.not_open_done
            } else if here.stage == Stage::Review && here.page != Page::Review {
                w.not_open_sent
            } else {
                w.not_open_ahead
            };
            Some(fill(w.not_open, &[o.lang.title(from.page), why]))
        }
        _ => None,
    };
    let html = render(
        &n,
        o,
        &s,
        &Errors::new(),
        &BTreeMap::new(),
        notice.as_deref(),
    );
    page(StatusCode::OK, html, &cookies)
}

#[derive(Deserialize)]
struct SidForm {
    sid: String,
}

/// "Sign up someone else": a new signup in this browser.
async fn new_form(State(n): St, headers: HeaderMap, Form(f): Form<SidForm>) -> Response {
    let o = opts(&headers);
    match cookie_sid(&headers) {
        None => return reject_page(o, Reject::new(StatusCode::FORBIDDEN, |w| w.no_session)),
        Some(sid) if sid != f.sid => {
            return reject_page(o, Reject::new(StatusCode::FORBIDDEN, |w| w.other_session))
        }
        Some(_) => {}
    }
    match create(&n).await {
        Ok((sid, s)) => see(&s.view.url, &[set_cookie(&sid)]),
        Err(r) => reject_page(o, r),
    }
}

/// The cookie's session, checked against the form's id.
async fn current(
    n: &NodeState,
    headers: &HeaderMap,
    form_sid: Option<&String>,
) -> Result<(String, Seen), Reject> {
    let Some(sid) = cookie_sid(headers) else {
        return Err(Reject::new(StatusCode::FORBIDDEN, |w| w.no_session));
    };
    if form_sid.is_some_and(|f| *f != sid) {
        return Err(Reject::new(StatusCode::FORBIDDEN, |w| w.other_session));
    }
    match seen(n, &sid).await? {
        Some(s) => Ok((sid, s)),
        None => Err(Reject::new(StatusCode::GONE, |w| w.gone)),
    }
}

/// Applies a page's event at the session's owner; the view after it.
async fn apply(
    n: &NodeState,
    headers: &HeaderMap,
    form: &BTreeMap<String, String>,
) -> Result<Seen, Reject> {
    let Some(form_sid) = form.get("sid") else {
        return Err(Reject::new(StatusCode::FORBIDDEN, |w| w.other_session));
    };
    let (sid, s) = current(n, headers, Some(form_sid)).await?;
    let step = form.get("step").cloned().unwrap_or_default();
    let event = form.get("event").cloned().unwrap_or_default();
    let lang = opts(headers).lang;
    let ev = match build_event(&n.home.machine, &step, &event, form, lang) {
        Ok(e) => e,
        Err(mut r) => {
            r.view = Some(Box::new(s.view));
            return Err(r);
        }
    };
    // CONFIRM goes to the chart as it is: the graph ignores it while
    // sending.
    let guard = (event != "CONFIRM").then(|| step.clone());
    let op = Op {
        sid: sid.clone(),
        seq: s.applied + 1,
        event: ev,
        guard,
    };
    match route(n, op).await? {
        Answer::Applied { .. } => {}
        Answer::Stale { current } => {
            return Err(Reject {
                why: Why::Stale {
                    form: step,
                    current,
                },
                view: Some(Box::new(s.view)),
                ..Reject::new(StatusCode::CONFLICT, |w| w.stale_title)
            })
        }
    }
    match seen(n, &sid).await? {
        Some(s) => Ok(s),
        None => Err(Reject::new(StatusCode::GONE, |w| w.gone)),
    }
}

async fn event_form(
    State(n): St,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    let o = opts(&headers);
    match apply(&n, &headers, &form).await {
        Ok(s) => see(&s.view.url, &[]),
        Err(r) if r.status == StatusCode::UNPROCESSABLE_ENTITY => {
            let (_, message) = r.words(o.lang);
            match current(&n, &headers, None).await {
                Ok((_, s)) => page(
                    r.status,
                    render(&n, o, &s, &r.errors, &form, Some(&message)),
                    &[],
                ),
                Err(_) => reject_page(o, r),
            }
        }
        Err(r) => reject_page(o, r),
    }
}

async fn faults_form(State(n): St, headers: HeaderMap, Form(f): Form<FaultForm>) -> Response {
    let o = opts(&headers);
    let latency = if f.latency_ms.trim().is_empty() {
        Ok(0)
    } else {
        f.latency_ms.trim().parse::<u64>()
    };
    let Ok(latency_ms) = latency else {
        let message = format!(
            "Latency must be a number of milliseconds, not {:?}.",
            f.latency_ms
        );
        return reject_page(o, Reject::text(StatusCode::UNPROCESSABLE_ENTITY, message));
    };
    let faults = Faults {
        latency_ms,
        charge: f.charge,
        lookup_down: f.lookup_down.is_some(),
        crash: false,
    };
    if let Err(m) = faults.check() {
        return reject_page(o, Reject::text(StatusCode::UNPROCESSABLE_ENTITY, m));
    }
    let (sid, s) = match current(&n, &headers, Some(&f.sid)).await {
        Ok(x) => x,
        Err(r) => return reject_page(o, r),
    };
    let home = n.home.clone();
    match blocking(move || home.set_faults(&sid, &faults)).await {
        Ok(()) => see(&s.view.url, &[]),
        Err(e) => reject_page(o, store_failed(&e)),
    }
}

#[derive(Deserialize)]
struct NodeFaultForm {
    sid: String,
    action: String,
}

/// Kill, pause or partition the session's owner node: the supervisor
/// does it (it started the processes and holds their network paths).
async fn node_fault_form(
    State(n): St,
    headers: HeaderMap,
    Form(f): Form<NodeFaultForm>,
) -> Response {
    let o = opts(&headers);
    if !matches!(f.action.as_str(), "kill" | "pause" | "partition") {
        let m = format!(
            "Unknown node fault {:?}: use kill, pause or partition.",
            f.action
        );
        return reject_page(o, Reject::text(StatusCode::UNPROCESSABLE_ENTITY, m));
    }
    let (_, s) = match current(&n, &headers, Some(&f.sid)).await {
        Ok(x) => x,
        Err(r) => return reject_page(o, r),
    };
    let Some(owner) = s.owner.clone() else {
        let m = "No node owns this session right now (its lease ran out): try again in a moment.";
        return reject_page(o, Reject::text(StatusCode::CONFLICT, m));
    };
    let body = json!({"action": f.action, "node": owner});
    match client::post_json(n.control, "/fault", &body, Duration::from_secs(3)).await {
        Ok((200, _)) => see(&s.view.url, &[]),
        Ok((_, v)) => {
            let m = v["error"]
                .as_str()
                .unwrap_or("the supervisor refused")
                .to_string();
            reject_page(o, Reject::text(StatusCode::CONFLICT, m))
        }
        Err(e) => reject_page(
            o,
            Reject::text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("The supervisor could not be reached: {e}"),
            ),
        ),
    }
}

#[derive(Deserialize)]
struct StateQuery {
    after: Option<u64>,
    wait: Option<u64>,
}

/// The session's view, with the serving and owning nodes and the serving
/// node's counters (`fenced`: its writes refused; `forwarded`: page events
/// it sent to an owner over NATS; `served`: other nodes' events its host
/// took). With `after`,
/// it waits (up to `wait` ms) until the session's revision moved from it.
/// A session whose submit is unresolved is woken on its owner, so that a
/// submit whose owner died resumes on the node that took the shard over.
async fn api_state(State(n): St, headers: HeaderMap, Query(q): Query<StateQuery>) -> Response {
    let wait = q.wait.map_or(MAX_WAIT, Duration::from_millis).min(MAX_WAIT);
    let t0 = Instant::now();
    let mut woken = None::<Instant>;
    loop {
        let (sid, s) = match current(&n, &headers, None).await {
            Ok(x) => x,
            Err(r) => return r.json(),
        };
        let unresolved = Step::named(&s.view.step).is_some_and(|r| r.unresolved);
        if unresolved && woken.is_none_or(|w| w.elapsed() >= Duration::from_secs(1)) {
            woken = Some(Instant::now());
            n.home.wake(&sid, s.applied);
        }
        let moved = q.after.is_none_or(|a| a != s.view.rev);
        if moved || t0.elapsed() >= wait {
            let mut v = serde_json::to_value(&s.view).unwrap_or(Value::Null);
            v["served_by"] = json!(n.home.name);
            v["owner"] = json!(s.owner);
            let get =
                |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
            v["fenced"] = json!(get(&n.home.fenced));
            v["forwarded"] = json!(get(&n.home.routed[0]));
            v["served"] = json!(get(&n.home.routed[1]));
            return Json(v).into_response();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn api_chart(State(n): St) -> Json<Value> {
    Json(pages::chart_json(&n.home.machine))
}

/// A new session for an API client (the load test): the cookie comes back.
async fn api_new(State(n): St) -> Response {
    match create(&n).await {
        Ok((sid, s)) => {
            let mut r = Json(s.view).into_response();
            if let Ok(c) = set_cookie(&sid).parse() {
                r.headers_mut().insert(header::SET_COOKIE, c);
            }
            r
        }
        Err(r) => r.json(),
    }
}

/// A page's event as JSON (`{"sid", "step", "event", "fields"}`), as the
/// single-node wizard's `/api/event` takes it.
async fn api_event(State(n): St, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let mut form = BTreeMap::new();
    for k in ["sid", "step", "event"] {
        if let Some(v) = body[k].as_str() {
            form.insert(k.to_string(), v.to_string());
        }
    }
    if let Some(fields) = body["fields"].as_object() {
        for (k, v) in fields {
            if let Some(v) = v.as_str() {
                form.insert(k.clone(), v.to_string());
            }
        }
    }
    match apply(&n, &headers, &form).await {
        Ok(s) => Json(s.view).into_response(),
        Err(r) => r.json(),
    }
}

/// Faults for the session's next charge, as JSON (`{"sid", "faults"}`).
async fn api_faults(State(n): St, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let sid = body["sid"].as_str().unwrap_or("").to_string();
    let faults: Faults = match serde_json::from_value(body["faults"].clone()) {
        Ok(f) => f,
        Err(e) => {
            return Reject::text(StatusCode::UNPROCESSABLE_ENTITY, format!("faults: {e}")).json()
        }
    };
    if let Err(m) = faults.check() {
        return Reject::text(StatusCode::UNPROCESSABLE_ENTITY, m).json();
    }
    let (sid, s) = match current(&n, &headers, Some(&sid)).await {
        Ok(x) => x,
        Err(r) => return r.json(),
    };
    let home = n.home.clone();
    match blocking(move || home.set_faults(&sid, &faults)).await {
        Ok(()) => Json(s.view).into_response(),
        Err(e) => store_failed(&e).json(),
    }
}
