//! The wizard's HTTP side: routes, the session table, the crash and
//! restart of the server's state, and the checks that refuse forged and
//! replayed requests.
//!
//! **Sessions.** A session id is 128 bits from the OS CSPRNG, kept in an
//! `HttpOnly; SameSite=Lax` cookie: a link to the wizard followed from
//! another site (a draft link in a mail client, a link on another page) is
//! a top-level navigation, which carries a `Lax` cookie, so it finds the
//! user's signup instead of starting (and storing) a new one. Forged
//! requests are refused by the other half: every form carries the id too,
//! and a form whose id is not the cookie's is refused (403, "another
//! session"); a cross-site POST carries no `Lax` cookie at all. An id that
//! is not of the right shape is never looked up.
//!
//! **Stale steps and replays.** Every form says which step it was made for;
//! an event from a form of another step (an old tab, a replayed POST) is
//! refused with 409 and the current step, in the same actor turn that would
//! have applied it. `CONFIRM` is the exception on purpose: it goes to the
//! chart as it is, and the graph itself ignores it while sending.
//!
//! **Drafts.** The page saves its fields to `localStorage` at every change
//! (never the fields marked `data-volatile`: card number, one-time code);
//! the server saves the chart snapshot after every macrostep and a draft at
//! every completed step; a draft link (`/d/TOKEN`, its own unguessable
//! token) opens the same session in another browser. The browser's copy is
//! only a convenience for refilling fields: the step always comes from the
//! server, and every field is validated again when submitted.
//!
//! **Crash.** The fault panel's crash tears down the wizard's whole state
//! (the actor system with every session actor, the store handle, the
//! writer) right after a charge was sent, keeps answering 503 for
//! [`Config::restart_after`](crate::Config), then rebuilds it from the
//! SQLite file: sessions come back from their snapshots on first use.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use turno::{Props, System, ThreadedSystem};
use turno_chart::interpreter::ChartMsg;
use turno_chart::{Event, Machine};
use turno_gateway::http::HttpGateway;
use turno_store::{Store, Sweeper};

use crate::client::Faults;
use crate::ids;
use crate::machine;
use crate::pages;
use crate::persist::{self, Persister};
use crate::session::{self, Env, Refusal, SessionAddr, SessionMsg, View};
use crate::validate::{self, Errors};
use crate::{Addrs, Config, Error};

const COOKIE: &str = "turno_sid";
const ASK: Duration = Duration::from_secs(5);

type Sessions = Arc<Mutex<HashMap<String, SessionAddr>>>;

/// The server state a crash destroys.
struct App {
    system: Mutex<Option<ThreadedSystem>>,
    /// The sessions in memory; each leaves at its expiry (`Env::evict`).
    sessions: Sessions,
    store: Store,
    env: Arc<Env>,
    /// Deletes expired rows from `wizard.db` (they read as absent at once,
    /// and leave the file at the next sweep).
    _sweeper: Option<Sweeper>,
}

impl Drop for App {
    fn drop(&mut self) {
        if let Some(sys) = self.system.lock().expect("lock").take() {
            let _ = sys.shutdown_now(Duration::from_secs(2));
        }
    }
}

struct Holder {
    current: RwLock<Option<Arc<App>>>,
    config: Config,
    gateway: std::net::SocketAddr,
    machine: Arc<Machine<Value>>,
    crashes: std::sync::atomic::AtomicU64,
    me: Weak<Holder>,
}

impl Holder {
    fn app(&self) -> Option<Arc<App>> {
        self.current.read().expect("lock").clone()
    }

    fn build(&self) -> Result<Arc<App>, Error> {
        let path = self.config.data_dir.join("wizard.db");
        let store =
            Store::sqlite(&path).map_err(|e| Error::Store(path.display().to_string(), e))?;
        let me = self.me.clone();
        let handle = tokio::runtime::Handle::current();
        let crash: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
            if let Some(h) = me.upgrade() {
                handle.spawn(crash_and_restart(h));
            }
        });
        let sessions: Sessions = Arc::default();
        let evict: Arc<dyn Fn(&str) + Send + Sync> = Arc::new({
            let sessions = Arc::downgrade(&sessions);
            move |sid| {
                if let Some(s) = sessions.upgrade() {
                    s.lock().expect("lock").remove(sid);
                }
            }
        });
        let sweeper = Sweeper::spawn(store.clone(), self.config.sweep_every)
            .map_err(|e| Error::Spawn(format!("the sweeper thread: {e}")))?;
        let mut builder = ThreadedSystem::builder()
            .threads(2)
            .tokio(tokio::runtime::Handle::current());
        if let Some(trace) = &self.config.trace {
            builder = builder.trace(trace.sink());
        }
        let system = builder.build();
        let env = Arc::new(Env {
            gateway: self.gateway,
            persister: Persister::start(store.clone(), self.config.ttl),
            crash,
            ttl: self.config.ttl,
            evict,
            epoch_ms: turno_chart::persist::wall_epoch_ms(system.now()),
        });
        Ok(Arc::new(App {
            system: Mutex::new(Some(system)),
            sessions,
            store,
            env,
            _sweeper: Some(sweeper),
        }))
    }
}

async fn crash_and_restart(h: Arc<Holder>) {
    let old = h.current.write().expect("lock").take();
    h.crashes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // Dropping the last handle stops every actor at once, as a crash would
    // (joining threads: off the async workers).
    let _ = tokio::task::spawn_blocking(move || drop(old)).await;
    tokio::time::sleep(h.config.restart_after).await;
    match h.build() {
        Ok(app) => *h.current.write().expect("lock") = Some(app),
        Err(e) => eprintln!("turno demo: the wizard server could not restart: {e}"),
    }
}

/// A running wizard: the web server and the gateway.
pub struct Wizard {
    addrs: Addrs,
    holder: Arc<Holder>,
    gateway: HttpGateway,
    server: tokio::task::JoinHandle<()>,
}

impl Wizard {
    /// Starts the gateway and the wizard (inside a tokio runtime).
    pub async fn start(config: Config) -> Result<Wizard, Error> {
        std::fs::create_dir_all(&config.data_dir)
            .map_err(|e| Error::DataDir(config.data_dir.display().to_string(), e))?;
        let gateway =
            HttpGateway::start(&config.data_dir.join("gateway.db"), config.gateway_port).await?;
        let holder = Arc::new_cyclic(|me| Holder {
            current: RwLock::new(None),
            config: config.clone(),
            gateway: gateway.addr,
            machine: crate::machine::signup(),
            crashes: Default::default(),
            me: me.clone(),
        });
        let app = holder.build()?;
        *holder.current.write().expect("lock") = Some(app);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", config.port))
            .await
            .map_err(|e| Error::Bind(format!("127.0.0.1:{}", config.port), e))?;
        let wizard = listener
            .local_addr()
            .map_err(|e| Error::Bind("wizard".into(), e))?;
        let router = router(holder.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Ok(Wizard {
            addrs: Addrs {
                wizard,
                gateway: gateway.addr,
            },
            holder,
            gateway,
            server,
        })
    }

    /// The page to open.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addrs.wizard)
    }

    /// Where both services listen.
    pub fn addrs(&self) -> Addrs {
        self.addrs
    }

    /// Charges in the gateway's ledger.
    pub fn charges(&self) -> usize {
        self.gateway.charges()
    }

    /// How many sessions the server holds in memory now (each leaves at
    /// its expiry).
    pub fn live_sessions(&self) -> usize {
        self.holder
            .app()
            .map_or(0, |a| a.sessions.lock().expect("lock").len())
    }

    /// How many times the wizard server crashed (the fault panel).
    pub fn crashes(&self) -> u64 {
        self.holder
            .crashes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits for Ctrl-C.
    pub async fn until_ctrl_c(&self) {
        let _ = tokio::signal::ctrl_c().await;
    }
}

impl Drop for Wizard {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn router(h: Arc<Holder>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/event", post(event_form))
        .route("/faults", post(faults_form))
        .route("/forget", post(forget_form))
        .route("/d/{token}", get(draft_link))
        .route("/api/state", get(api_state))
        .route("/api/event", post(api_event))
        .route("/api/faults", post(api_faults))
        .route("/api/chart", get(api_chart))
        .route("/api/new", post(api_new))
        .route(
            "/assets/app.js",
            get(|| async { ([(header::CONTENT_TYPE, "text/javascript")], pages::APP_JS) }),
        )
        .route(
            "/assets/app.css",
            get(|| async { ([(header::CONTENT_TYPE, "text/css")], pages::APP_CSS) }),
        )
        .with_state(h)
}

/// A refusal, as a status and a message (and field errors).
struct Reject {
    status: StatusCode,
    message: String,
    errors: Errors,
    view: Option<Box<View>>,
}

impl Reject {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Reject {
            status,
            message: message.into(),
            errors: Errors::new(),
            view: None,
        }
    }
    fn json(self) -> Response {
        (
            self.status,
            Json(json!({"error": self.message, "errors": self.errors, "step": self.view.map(|v| v.step)})),
        )
            .into_response()
    }
}

fn restarting() -> Reject {
    Reject::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "The wizard server is restarting after a crash; this page retries by itself.",
    )
}

fn cookie_sid(h: &HeaderMap) -> Option<String> {
    h.get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
        .filter(|v| ids::is_hex_id(v, 16))
}

fn set_cookie(sid: &str) -> String {
    format!("{COOKIE}={sid}; Path=/; HttpOnly; SameSite=Lax")
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task")
}

/// The session's actor, restored from its snapshot when this server
/// instance has not seen it yet. None: no such session (or it expired).
async fn session(h: &Holder, app: &Arc<App>, sid: &str) -> Result<Option<SessionAddr>, Reject> {
    if let Some(a) = app.sessions.lock().expect("lock").get(sid) {
        return Ok(Some(a.clone()));
    }
    let (store, s) = (app.store.clone(), sid.to_string());
    let loaded = blocking(move || persist::load(&store, &s))
        .await
        .map_err(|e| {
            Reject::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the session store failed: {e}"),
            )
        })?;
    let Some(p) = loaded else { return Ok(None) };
    let mut sessions = app.sessions.lock().expect("lock");
    if let Some(a) = sessions.get(sid) {
        return Ok(Some(a.clone()));
    }
    let sys = app.system.lock().expect("lock");
    let sys = sys.as_ref().ok_or_else(restarting)?;
    let (m, env, s) = (h.machine.clone(), app.env.clone(), sid.to_string());
    let mut p = Some(p);
    // Top-level names are unique: one actor per session id, at
    // `/session-<id>`.
    let addr = sys
        .spawn(Props::new().name(format!("session-{sid}")), move || {
            let p = p.take().expect("a session actor is not restarted");
            session::restored(s.clone(), p, m.clone(), env.clone())
        })
        .map_err(|e| Reject::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    sessions.insert(sid.to_string(), addr.clone());
    Ok(Some(addr))
}

fn new_session(h: &Holder, app: &Arc<App>) -> Result<(String, SessionAddr), Reject> {
    let sid = ids::session_id();
    let link = ids::random_hex(16);
    app.env.persister.link(&sid, &link);
    let sys = app.system.lock().expect("lock");
    let sys = sys.as_ref().ok_or_else(restarting)?;
    let (m, env, s) = (h.machine.clone(), app.env.clone(), sid.clone());
    let addr = sys
        .spawn(Props::new().name(format!("session-{sid}")), move || {
            session::new_session(s.clone(), link.clone(), m.clone(), env.clone())
        })
        .map_err(|e| Reject::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    app.sessions
        .lock()
        .expect("lock")
        .insert(sid.clone(), addr.clone());
    Ok((sid, addr))
}

async fn view_of(a: &SessionAddr) -> Result<View, Reject> {
    turno::bridge::ask(a, |r| ChartMsg::Ext(SessionMsg::View(r)), ASK)
        .await
        .map_err(|_| restarting())
}

fn page(status: StatusCode, html: String, cookie: Option<String>) -> Response {
    let mut r = (status, Html(html)).into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, "no-store".parse().expect("header"));
    // Everything the page uses is served from here (no CDN, no inline code).
    r.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        "default-src 'self'".parse().expect("header"),
    );
    if let Some(c) = cookie {
        if let Ok(v) = c.parse() {
            r.headers_mut().insert(header::SET_COOKIE, v);
        }
    }
    r
}

fn reject_page(r: Reject) -> Response {
    let status = r.status;
    page(
        status,
        pages::refusal(status.as_u16(), &r.message, r.view.as_deref()),
        None,
    )
}

async fn index(State(h): State<Arc<Holder>>, headers: HeaderMap) -> Response {
    let Some(app) = h.app() else {
        return reject_page(restarting());
    };
    let mut notice = None;
    if let Some(sid) = cookie_sid(&headers) {
        match session(&h, &app, &sid).await {
            Err(r) => return reject_page(r),
            Ok(Some(a)) => {
                return match view_of(&a).await {
                    Ok(v) => page(
                        StatusCode::OK,
                        pages::step(&v, &Errors::new(), &BTreeMap::new(), None),
                        None,
                    ),
                    Err(r) => reject_page(r),
                }
            }
            Ok(None) => {
                notice =
                    Some("Your earlier signup has expired or was forgotten; this is a new one.");
            }
        }
    }
    match new_session(&h, &app) {
        Err(r) => reject_page(r),
        Ok((sid, a)) => match view_of(&a).await {
            Ok(v) => page(
                StatusCode::OK,
                pages::step(&v, &Errors::new(), &BTreeMap::new(), notice),
                Some(set_cookie(&sid)),
            ),
            Err(r) => reject_page(r),
        },
    }
}

/// The events each page may send (the chart's answer,
/// [`machine::accepts`]), and how its fields become event data.
fn build_event(
    m: &Machine<Value>,
    step: &str,
    event: &str,
    form: &BTreeMap<String, String>,
) -> Result<Event, Reject> {
    if !machine::accepts(m, step, event) {
        return Err(Reject::new(
            StatusCode::BAD_REQUEST,
            format!("The {step:?} page has no action {event:?}."),
        ));
    }
    let invalid = |errors: Errors| Reject {
        status: StatusCode::UNPROCESSABLE_ENTITY,
        message: "Some fields need your attention.".into(),
        errors,
        view: None,
    };
    let data = match (step, event) {
        ("personal", "NEXT") => json!({"personal": validate::personal(form).map_err(invalid)?}),
        ("plan", "NEXT") => json!({"plan": validate::plan(form).map_err(invalid)?}),
        ("payment.card", "NEXT") => {
            json!({"payment": validate::card(form, validate::today()).map_err(invalid)?})
        }
        ("payment.bank", "NEXT") => json!({"payment": validate::bank(form).map_err(invalid)?}),
        _ => Value::Null,
    };
    Ok(Event::with_data(event.to_string(), data))
}

/// Applies a page's event: the whole check chain, then one actor turn.
async fn apply(
    h: &Holder,
    headers: &HeaderMap,
    form: &BTreeMap<String, String>,
) -> Result<View, Reject> {
    let app = h.app().ok_or_else(restarting)?;
    let Some(sid) = cookie_sid(headers) else {
        return Err(Reject::new(
            StatusCode::FORBIDDEN,
            "No session: open the wizard's first page.",
        ));
    };
    if form.get("sid") != Some(&sid) {
        return Err(Reject::new(
            StatusCode::FORBIDDEN,
            "Refused: this form belongs to another session.",
        ));
    }
    let Some(a) = session(h, &app, &sid).await? else {
        return Err(Reject::new(
            StatusCode::GONE,
            "This signup has expired or was forgotten.",
        ));
    };
    let step = form.get("step").cloned().unwrap_or_default();
    let event = form.get("event").cloned().unwrap_or_default();
    let ev = build_event(&h.machine, &step, &event, form).map_err(|mut r| {
        r.view = None;
        r
    });
    let ev = match ev {
        Ok(e) => e,
        Err(mut r) => {
            r.view = view_of(&a).await.ok().map(Box::new);
            return Err(r);
        }
    };
    // CONFIRM goes to the graph as it is (see the module docs).
    let guard = (event != "CONFIRM").then_some(step);
    let answer = turno::bridge::ask(
        &a,
        |reply| {
            ChartMsg::Ext(SessionMsg::Event {
                event: ev,
                step: guard,
                reply,
            })
        },
        ASK,
    )
    .await
    .map_err(|_| restarting())?;
    match answer {
        Ok(v) => Ok(v),
        Err(Refusal::StaleStep { form, current }) => Err(Reject {
            status: StatusCode::CONFLICT,
            message: format!(
                "Refused: this form is for the {form:?} step, but your signup is at {current:?} (an old tab or a replayed request)."
            ),
            errors: Errors::new(),
            view: view_of(&a).await.ok().map(Box::new),
        }),
    }
}

fn see_other() -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response()
}

async fn event_form(
    State(h): State<Arc<Holder>>,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    match apply(&h, &headers, &form).await {
        Ok(_) => see_other(),
        Err(r) if r.status == StatusCode::UNPROCESSABLE_ENTITY => {
            let Some(app) = h.app() else {
                return reject_page(restarting());
            };
            let sid = cookie_sid(&headers).unwrap_or_default();
            match session(&h, &app, &sid).await {
                Ok(Some(a)) => match view_of(&a).await {
                    Ok(v) => page(
                        r.status,
                        pages::step(&v, &r.errors, &form, Some(&r.message)),
                        None,
                    ),
                    Err(r) => reject_page(r),
                },
                _ => reject_page(r),
            }
        }
        Err(r) => reject_page(r),
    }
}

async fn api_event(
    State(h): State<Arc<Holder>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
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
    match apply(&h, &headers, &form).await {
        Ok(v) => Json(v).into_response(),
        Err(r) => r.json(),
    }
}

async fn current(
    h: &Holder,
    headers: &HeaderMap,
) -> Result<(Arc<App>, String, SessionAddr), Reject> {
    let app = h.app().ok_or_else(restarting)?;
    let sid =
        cookie_sid(headers).ok_or_else(|| Reject::new(StatusCode::FORBIDDEN, "No session."))?;
    match session(h, &app, &sid).await? {
        Some(a) => Ok((app, sid, a)),
        None => Err(Reject::new(
            StatusCode::GONE,
            "This signup has expired or was forgotten.",
        )),
    }
}

async fn api_state(State(h): State<Arc<Holder>>, headers: HeaderMap) -> Response {
    match current(&h, &headers).await {
        Ok((_, _, a)) => match view_of(&a).await {
            Ok(v) => Json(v).into_response(),
            Err(r) => r.json(),
        },
        Err(r) => r.json(),
    }
}

/// A new session for an API client (the load test): the cookie comes back.
async fn api_new(State(h): State<Arc<Holder>>) -> Response {
    let Some(app) = h.app() else {
        return restarting().json();
    };
    match new_session(&h, &app) {
        Ok((sid, a)) => match view_of(&a).await {
            Ok(v) => {
                let mut r = Json(v).into_response();
                if let Ok(c) = set_cookie(&sid).parse() {
                    r.headers_mut().insert(header::SET_COOKIE, c);
                }
                r
            }
            Err(r) => r.json(),
        },
        Err(r) => r.json(),
    }
}

#[derive(Deserialize)]
struct FaultForm {
    sid: String,
    #[serde(default)]
    latency_ms: String,
    #[serde(default)]
    charge: String,
    #[serde(default)]
    lookup_down: Option<String>,
    #[serde(default)]
    crash: Option<String>,
}

async fn set_faults(h: &Holder, headers: &HeaderMap, sid: &str, f: Faults) -> Result<View, Reject> {
    let (_, cookie, a) = current(h, headers).await?;
    if cookie != sid {
        return Err(Reject::new(
            StatusCode::FORBIDDEN,
            "Refused: this form belongs to another session.",
        ));
    }
    f.check()
        .map_err(|m| Reject::new(StatusCode::UNPROCESSABLE_ENTITY, m))?;
    turno::bridge::ask(&a, |r| ChartMsg::Ext(SessionMsg::Faults(f, r)), ASK)
        .await
        .map_err(|_| restarting())
}

async fn faults_form(
    State(h): State<Arc<Holder>>,
    headers: HeaderMap,
    Form(f): Form<FaultForm>,
) -> Response {
    let latency = if f.latency_ms.trim().is_empty() {
        Ok(0)
    } else {
        f.latency_ms.trim().parse::<u64>()
    };
    let Ok(latency_ms) = latency else {
        return reject_page(Reject::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "Latency must be a number of milliseconds, not {:?}.",
                f.latency_ms
            ),
        ));
    };
    let faults = Faults {
        latency_ms,
        charge: f.charge,
        lookup_down: f.lookup_down.is_some(),
        crash: f.crash.is_some(),
    };
    match set_faults(&h, &headers, &f.sid, faults).await {
        Ok(_) => see_other(),
        Err(r) => reject_page(r),
    }
}

async fn api_faults(
    State(h): State<Arc<Holder>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let sid = body["sid"].as_str().unwrap_or("").to_string();
    let faults: Faults = match serde_json::from_value(body["faults"].clone()) {
        Ok(f) => f,
        Err(e) => {
            return Reject::new(StatusCode::UNPROCESSABLE_ENTITY, format!("faults: {e}")).json()
        }
    };
    match set_faults(&h, &headers, &sid, faults).await {
        Ok(v) => Json(v).into_response(),
        Err(r) => r.json(),
    }
}

#[derive(Deserialize)]
struct SidForm {
    sid: String,
}

/// Why "forget me" waits while a payment is unsettled.
const UNRESOLVED_FORGET: &str = "Not forgotten yet: your payment is still being settled, and \
     forgetting now would leave you not knowing whether you were charged. You can forget this \
     signup once this page says it is paid, failed or could not be confirmed.";

/// Whether a submit is unresolved at `step`: a charge may be in flight
/// (`sending`) or its outcome is being looked up by its key (`uncertain`).
fn submit_unresolved(step: &str) -> bool {
    matches!(step, "submit.sending" | "submit.uncertain")
}

async fn forget_form(
    State(h): State<Arc<Holder>>,
    headers: HeaderMap,
    Form(f): Form<SidForm>,
) -> Response {
    let (app, sid, a) = match current(&h, &headers).await {
        Ok(x) => x,
        Err(r) => return reject_page(r),
    };
    if sid != f.sid {
        return reject_page(Reject::new(
            StatusCode::FORBIDDEN,
            "Refused: this form belongs to another session.",
        ));
    }
    let view = match view_of(&a).await {
        Ok(v) => v,
        Err(r) => return reject_page(r),
    };
    if submit_unresolved(&view.step) {
        return reject_page(Reject {
            view: Some(Box::new(view)),
            ..Reject::new(StatusCode::CONFLICT, UNRESOLVED_FORGET)
        });
    }
    let link = view.link;
    app.sessions.lock().expect("lock").remove(&sid);
    if let Some(sys) = app.system.lock().expect("lock").as_ref() {
        sys.stop(a.id());
    }
    let done = app.env.persister.forget(&sid, &link).await;
    let cleared = format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0");
    match done {
        Ok(Ok(())) => page(StatusCode::OK, pages::forgotten(&sid), Some(cleared)),
        Ok(Err(e)) => reject_page(Reject::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("Could not forget: {e}"),
        )),
        Err(_) => reject_page(restarting()),
    }
}

async fn draft_link(State(h): State<Arc<Holder>>, Path(token): Path<String>) -> Response {
    let Some(app) = h.app() else {
        return reject_page(restarting());
    };
    let invalid = || {
        reject_page(Reject::new(
            StatusCode::NOT_FOUND,
            "This draft link is not valid: it was mistyped or altered, it expired, or its signup was forgotten.",
        ))
    };
    if !ids::is_hex_id(&token, 16) {
        return invalid();
    }
    let store = app.store.clone();
    let sid = match blocking(move || persist::resolve_link(&store, &token)).await {
        Ok(Some(sid)) if ids::is_hex_id(&sid, 16) => sid,
        Ok(_) => return invalid(),
        Err(e) => return reject_page(Reject::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())),
    };
    match session(&h, &app, &sid).await {
        Ok(Some(_)) => {
            let mut r = see_other();
            if let Ok(c) = set_cookie(&sid).parse() {
                r.headers_mut().insert(header::SET_COOKIE, c);
            }
            r
        }
        Ok(None) => invalid(),
        Err(r) => reject_page(r),
    }
}

async fn api_chart(State(h): State<Arc<Holder>>) -> Json<Value> {
    Json(pages::chart_json(&h.machine))
}
