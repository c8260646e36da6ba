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

use axum::extract::{Path, Query, State};
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
use crate::pages::{self, Opts};
use crate::persist::{self, Persister};
use crate::session::{self, Env, Refusal, SessionAddr, SessionMsg, View};
use crate::steps::{Page, Stage, Step, STEPS};
use crate::validate::{self, Errors};
use crate::words::{fill, Lang, Words};
use crate::{Addrs, Config, Error};

const COOKIE: &str = "turno_sid";
/// The language chosen on the page's switch.
const LANG_COOKIE: &str = "turno_lang";
/// The demo's workings shown (`on`).
const WORKINGS_COOKIE: &str = "turno_workings";
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
    // One route per page, from the table of steps.
    let pages = STEPS.iter().fold(Router::new(), |r, row| {
        r.route(
            &row.url(),
            get(
                move |st: State<Arc<Holder>>, headers: HeaderMap, q: Query<PageQuery>| {
                    step_page(st, headers, q, row)
                },
            ),
        )
    });
    pages
        .route("/", get(index))
        .route("/new", post(new_form))
        .route("/workings", post(workings_form))
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

/// Why a request was refused, worded per language on the page.
pub(crate) enum Why {
    /// A fixed sentence.
    Word(fn(&'static Words) -> &'static str),
    /// A sentence made elsewhere (the store's error), in English.
    Text(String),
    /// A form for another step.
    Stale { form: String, current: String },
    /// A page's forget-me while the payment is unsettled.
    ForgetWait,
    /// An event the page does not have.
    NoAction { step: String, event: String },
}

/// A refusal, as a status and a reason (and field errors).
pub(crate) struct Reject {
    pub(crate) status: StatusCode,
    pub(crate) why: Why,
    pub(crate) errors: Errors,
    pub(crate) view: Option<Box<View>>,
}

impl Reject {
    pub(crate) fn new(status: StatusCode, why: fn(&'static Words) -> &'static str) -> Self {
        Reject {
            status,
            why: Why::Word(why),
            errors: Errors::new(),
            view: None,
        }
    }

    pub(crate) fn text(status: StatusCode, message: impl Into<String>) -> Self {
        Reject {
            why: Why::Text(message.into()),
            ..Reject::new(status, |w| w.refused_title)
        }
    }

    /// The page's title and sentence.
    pub(crate) fn words(&self, lang: Lang) -> (&'static str, String) {
        let w = lang.words();
        let title = |name: &str| Step::named(name).map_or("", |r| lang.title(r.page));
        match &self.why {
            Why::Word(f) => (w.refused_title, f(w).to_string()),
            Why::Text(t) => (w.refused_title, t.clone()),
            Why::Stale { form, current } => {
                (w.stale_title, fill(w.stale, &[title(form), title(current)]))
            }
            Why::ForgetWait => (w.forget_wait_title, w.forget_wait.to_string()),
            Why::NoAction { .. } => (w.refused_title, w.no_action.to_string()),
        }
    }

    pub(crate) fn json(self) -> Response {
        let message = match &self.why {
            Why::NoAction { step, event } => {
                format!("The {step:?} page has no action {event:?}.")
            }
            _ => self.words(Lang::En).1,
        };
        (
            self.status,
            Json(
                json!({"error": message, "errors": self.errors, "step": self.view.map(|v| v.step)}),
            ),
        )
            .into_response()
    }
}

pub(crate) fn restarting() -> Reject {
    Reject::new(StatusCode::SERVICE_UNAVAILABLE, |w| w.restarting)
}

/// What a page's URL may carry: a language chosen on the switch, and the
/// step a navigation asked for and did not get.
#[derive(Deserialize, Default)]
pub(crate) struct PageQuery {
    pub(crate) lang: Option<String>,
    pub(crate) from: Option<String>,
    note: Option<String>,
}

fn cookie<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The page options of a request: the language cookie, else the
/// browser's languages; the workings switch's cookie.
pub(crate) fn opts(h: &HeaderMap) -> Opts {
    let lang = cookie(h, LANG_COOKIE)
        .and_then(Lang::from_code)
        .or_else(|| {
            h.get(header::ACCEPT_LANGUAGE)
                .and_then(|v| v.to_str().ok())
                .and_then(Lang::from_accept)
        })
        .unwrap_or(Lang::En);
    Opts {
        lang,
        workings: cookie(h, WORKINGS_COOKIE) == Some("on"),
    }
}

pub(crate) fn cookie_sid(h: &HeaderMap) -> Option<String> {
    cookie(h, COOKIE)
        .map(str::to_string)
        .filter(|v| ids::is_hex_id(v, 16))
}

pub(crate) fn set_cookie(sid: &str) -> String {
    format!("{COOKIE}={sid}; Path=/; HttpOnly; SameSite=Lax")
}

pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
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
            eprintln!("turno demo: the session store failed: {e}");
            Reject::new(StatusCode::SERVICE_UNAVAILABLE, |w| w.store_failed)
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
        .map_err(|e| Reject::text(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
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
        .map_err(|e| Reject::text(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
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

pub(crate) fn page(status: StatusCode, html: String, cookies: &[String]) -> Response {
    let mut r = (status, Html(html)).into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, "no-store".parse().expect("header"));
    // Everything the page uses is served from here (no CDN, no inline code).
    r.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        "default-src 'self'".parse().expect("header"),
    );
    with_cookies(r, cookies)
}

fn with_cookies(mut r: Response, cookies: &[String]) -> Response {
    for c in cookies {
        if let Ok(v) = c.parse() {
            r.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    r
}

pub(crate) fn reject_page(o: Opts, r: Reject) -> Response {
    let (title, message) = r.words(o.lang);
    page(
        r.status,
        pages::refusal(o, title, &message, r.view.as_deref()),
        &[],
    )
}

pub(crate) fn see(url: &str, cookies: &[String]) -> Response {
    with_cookies(
        (StatusCode::SEE_OTHER, [(header::LOCATION, url.to_string())]).into_response(),
        cookies,
    )
}

/// `/`: to the signup's current step, or to a new signup's first.
async fn index(
    State(h): State<Arc<Holder>>,
    headers: HeaderMap,
    Query(q): Query<PageQuery>,
) -> Response {
    let (o, cookies) = chosen(&headers, &q);
    let Some(app) = h.app() else {
        return reject_page(o, restarting());
    };
    match existing_or_new(&h, &app, &headers).await {
        Ok((v, mut set, note)) => {
            set.extend(cookies);
            let url = match note {
                Some(n) => format!("{}?note={n}", v.url),
                None => v.url,
            };
            see(&url, &set)
        }
        Err(r) => reject_page(o, r),
    }
}

/// The page options, with a language chosen on the switch (`?lang=`)
/// taken and remembered in its cookie.
pub(crate) fn chosen(headers: &HeaderMap, q: &PageQuery) -> (Opts, Vec<String>) {
    let mut o = opts(headers);
    let mut cookies = Vec::new();
    if let Some(lang) = q.lang.as_deref().and_then(Lang::from_code) {
        o.lang = lang;
        cookies.push(format!(
            "{LANG_COOKIE}={}; Path=/; SameSite=Lax; Max-Age=31536000",
            lang.code()
        ));
    }
    (o, cookies)
}

/// The cookie's signup, or a new one (its cookie to set, and the note
/// that an earlier one expired).
async fn existing_or_new(
    h: &Holder,
    app: &Arc<App>,
    headers: &HeaderMap,
) -> Result<(View, Vec<String>, Option<&'static str>), Reject> {
    let mut note = None;
    if let Some(sid) = cookie_sid(headers) {
        match session(h, app, &sid).await? {
            Some(a) => return Ok((view_of(&a).await?, Vec::new(), None)),
            None => note = Some("expired"),
        }
    }
    let (sid, a) = new_session(h, app)?;
    Ok((view_of(&a).await?, vec![set_cookie(&sid)], note))
}

/// A step's page. The session moves there when the chart allows it by a
/// move that sends nothing (the browser's Back and Forward follow the
/// chart); a step it does not allow leads to the current step, which says
/// why in words.
async fn step_page(
    State(h): State<Arc<Holder>>,
    headers: HeaderMap,
    Query(q): Query<PageQuery>,
    row: &'static Step,
) -> Response {
    let (o, cookies) = chosen(&headers, &q);
    let Some(app) = h.app() else {
        return reject_page(o, restarting());
    };
    let a = match cookie_sid(&headers) {
        Some(sid) => match session(&h, &app, &sid).await {
            Ok(Some(a)) => Some(a),
            Ok(None) => None,
            Err(r) => return reject_page(o, r),
        },
        None => None,
    };
    let Some(a) = a else {
        // No signup here: start one, at its first step.
        return match existing_or_new(&h, &app, &headers).await {
            Ok((v, mut set, note)) => {
                set.extend(cookies);
                let url = match note {
                    Some(n) => format!("{}?note={n}", v.url),
                    None => v.url,
                };
                see(&url, &set)
            }
            Err(r) => reject_page(o, r),
        };
    };
    let asked = turno::bridge::ask(
        &a,
        |reply| {
            ChartMsg::Ext(SessionMsg::Goto {
                step: row.name.to_string(),
                reply,
            })
        },
        ASK,
    )
    .await;
    let w = o.lang.words();
    match asked {
        Err(_) => reject_page(o, restarting()),
        Ok(Err(Refusal::NotOpen { current, .. } | Refusal::StaleStep { current, .. })) => {
            let url = Step::named(&current).map_or_else(|| "/".into(), Step::url);
            see(&format!("{url}?from={}", row.name), &cookies)
        }
        Ok(Ok(v)) => {
            let here = Step::named(&v.step).unwrap_or(row);
            let notice = match (q.from.as_deref().and_then(Step::named), q.note.as_deref()) {
                (Some(from), _) if from.name != v.step => {
                    let row = here;
                    let why = if row.finished {
                        w.not_open_done
                    } else if row.stage == Stage::Review && row.page != Page::Review {
                        w.not_open_sent
                    } else {
                        w.not_open_ahead
                    };
                    Some(fill(w.not_open, &[o.lang.title(from.page), why]))
                }
                (_, Some("expired")) => Some(w.expired_new.to_string()),
                _ => None,
            };
            page(
                StatusCode::OK,
                pages::step(o, &v, &Errors::new(), &BTreeMap::new(), notice.as_deref()),
                &cookies,
            )
        }
    }
}

/// "Sign up someone else" (the finished page): a new signup in this
/// browser, at its first step. Like every form, it must carry the
/// cookie's session id: another site cannot make the browser drop its
/// signup for a new one.
async fn new_form(
    State(h): State<Arc<Holder>>,
    headers: HeaderMap,
    Form(f): Form<SidForm>,
) -> Response {
    let o = opts(&headers);
    match cookie_sid(&headers) {
        None => return reject_page(o, Reject::new(StatusCode::FORBIDDEN, |w| w.no_session)),
        Some(sid) if sid != f.sid => {
            return reject_page(o, Reject::new(StatusCode::FORBIDDEN, |w| w.other_session))
        }
        Some(_) => {}
    }
    let Some(app) = h.app() else {
        return reject_page(o, restarting());
    };
    match new_session(&h, &app) {
        Ok((sid, a)) => match view_of(&a).await {
            Ok(v) => see(&v.url, &[set_cookie(&sid)]),
            Err(r) => reject_page(o, r),
        },
        Err(r) => reject_page(o, r),
    }
}

#[derive(Deserialize)]
pub(crate) struct WorkingsForm {
    back: String,
    show: String,
}

/// The demo operator's switch: shows or hides the statechart and the
/// fault panel (a cookie), and goes back to the page it was pressed on.
pub(crate) async fn workings_form(Form(f): Form<WorkingsForm>) -> Response {
    // Back to a page of the wizard only, never to another site.
    let back = if STEPS.iter().any(|r| r.url() == f.back) {
        f.back
    } else {
        "/".into()
    };
    let cookie = if f.show == "on" {
        format!("{WORKINGS_COOKIE}=on; Path=/; SameSite=Lax; Max-Age=31536000")
    } else {
        format!("{WORKINGS_COOKIE}=; Path=/; SameSite=Lax; Max-Age=0")
    };
    see(&back, &[cookie])
}

/// The events each page may send (the chart's answer,
/// [`machine::accepts`]), and how its fields become event data.
pub(crate) fn build_event(
    m: &Machine<Value>,
    step: &str,
    event: &str,
    form: &BTreeMap<String, String>,
    lang: Lang,
) -> Result<Event, Reject> {
    let page = Step::named(step).map(|r| r.page);
    if page.is_none() || !machine::accepts(m, step, event) {
        return Err(Reject {
            why: Why::NoAction {
                step: step.into(),
                event: event.into(),
            },
            ..Reject::new(StatusCode::BAD_REQUEST, |w| w.no_action)
        });
    }
    let invalid = |errors: Errors| Reject {
        errors,
        ..Reject::new(StatusCode::UNPROCESSABLE_ENTITY, |w| {
            w.fields_need_attention
        })
    };
    let data = match (page, event) {
        (Some(Page::Personal), "NEXT") => {
            json!({"personal": validate::personal_in(form, lang).map_err(invalid)?})
        }
        (Some(Page::Plan), "NEXT") => {
            json!({"plan": validate::plan_in(form, lang).map_err(invalid)?})
        }
        (Some(Page::Card), "NEXT") => {
            json!({"payment": validate::card_in(form, validate::today(), lang).map_err(invalid)?})
        }
        (Some(Page::Bank), "NEXT") => {
            json!({"payment": validate::bank_in(form, lang).map_err(invalid)?})
        }
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
        return Err(Reject::new(StatusCode::FORBIDDEN, |w| w.no_session));
    };
    if form.get("sid") != Some(&sid) {
        return Err(Reject::new(StatusCode::FORBIDDEN, |w| w.other_session));
    }
    let Some(a) = session(h, &app, &sid).await? else {
        return Err(Reject::new(StatusCode::GONE, |w| w.gone));
    };
    let step = form.get("step").cloned().unwrap_or_default();
    let event = form.get("event").cloned().unwrap_or_default();
    let lang = opts(headers).lang;
    let ev = build_event(&h.machine, &step, &event, form, lang).map_err(|mut r| {
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
        Err(
            Refusal::StaleStep { form, current }
            | Refusal::NotOpen {
                wanted: form,
                current,
            },
        ) => Err(Reject {
            why: Why::Stale { form, current },
            view: view_of(&a).await.ok().map(Box::new),
            ..Reject::new(StatusCode::CONFLICT, |w| w.stale_title)
        }),
    }
}

async fn event_form(
    State(h): State<Arc<Holder>>,
    headers: HeaderMap,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    let o = opts(&headers);
    match apply(&h, &headers, &form).await {
        Ok(v) => see(&v.url, &[]),
        Err(r) if r.status == StatusCode::UNPROCESSABLE_ENTITY => {
            let Some(app) = h.app() else {
                return reject_page(o, restarting());
            };
            let sid = cookie_sid(&headers).unwrap_or_default();
            let (_, message) = r.words(o.lang);
            match session(&h, &app, &sid).await {
                Ok(Some(a)) => match view_of(&a).await {
                    Ok(v) => page(
                        r.status,
                        pages::step(o, &v, &r.errors, &form, Some(&message)),
                        &[],
                    ),
                    Err(r) => reject_page(o, r),
                },
                _ => reject_page(o, r),
            }
        }
        Err(r) => reject_page(o, r),
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
        cookie_sid(headers).ok_or_else(|| Reject::new(StatusCode::FORBIDDEN, |w| w.no_session))?;
    match session(h, &app, &sid).await? {
        Some(a) => Ok((app, sid, a)),
        None => Err(Reject::new(StatusCode::GONE, |w| w.gone)),
    }
}

/// `GET /api/state?after=REV&wait=MS`: with `after`, a long poll.
#[derive(Deserialize)]
struct StateQuery {
    /// The step (`rev`) the page shows: the answer waits until the
    /// session has moved past it.
    after: Option<u64>,
    /// How long it waits at most, in ms ([`MAX_WAIT`] at most, and by
    /// default).
    wait: Option<u64>,
}

/// The longest a long poll of `/api/state` is held.
const MAX_WAIT: Duration = Duration::from_secs(20);

/// The session's view; with `after`, once the session has moved past that
/// step, or after `wait`, whichever comes first (the sending page hears
/// of the end of the submit at once, without polling).
async fn api_state(
    State(h): State<Arc<Holder>>,
    headers: HeaderMap,
    Query(q): Query<StateQuery>,
) -> Response {
    let (_, _, a) = match current(&h, &headers).await {
        Ok(found) => found,
        Err(r) => return r.json(),
    };
    let view = match q.after {
        None => view_of(&a).await,
        Some(after) => {
            let wait = q.wait.map_or(MAX_WAIT, Duration::from_millis).min(MAX_WAIT);
            let watch = |reply| ChartMsg::Ext(SessionMsg::Watch { after, wait, reply });
            turno::bridge::ask(&a, watch, wait + ASK)
                .await
                .map_err(|_| restarting())
        }
    };
    match view {
        Ok(v) => Json(v).into_response(),
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
pub(crate) struct FaultForm {
    pub(crate) sid: String,
    #[serde(default)]
    pub(crate) latency_ms: String,
    #[serde(default)]
    pub(crate) charge: String,
    #[serde(default)]
    pub(crate) lookup_down: Option<String>,
    #[serde(default)]
    crash: Option<String>,
}

async fn set_faults(h: &Holder, headers: &HeaderMap, sid: &str, f: Faults) -> Result<View, Reject> {
    let (_, cookie, a) = current(h, headers).await?;
    if cookie != sid {
        return Err(Reject::new(StatusCode::FORBIDDEN, |w| w.other_session));
    }
    f.check()
        .map_err(|m| Reject::text(StatusCode::UNPROCESSABLE_ENTITY, m))?;
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
    let o = opts(&headers);
    let Ok(latency_ms) = latency else {
        return reject_page(
            o,
            Reject::text(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!(
                    "Latency must be a number of milliseconds, not {:?}.",
                    f.latency_ms
                ),
            ),
        );
    };
    let faults = Faults {
        latency_ms,
        charge: f.charge,
        lookup_down: f.lookup_down.is_some(),
        crash: f.crash.is_some(),
    };
    match set_faults(&h, &headers, &f.sid, faults).await {
        Ok(v) => see(&v.url, &[]),
        Err(r) => reject_page(o, r),
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
            return Reject::text(StatusCode::UNPROCESSABLE_ENTITY, format!("faults: {e}")).json()
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

/// Whether a submit is unresolved at `step`: a charge may be in flight
/// or its outcome is being looked up by its key ([`Step::unresolved`]).
fn submit_unresolved(step: &str) -> bool {
    Step::named(step).is_some_and(|r| r.unresolved)
}

async fn forget_form(
    State(h): State<Arc<Holder>>,
    headers: HeaderMap,
    Form(f): Form<SidForm>,
) -> Response {
    let o = opts(&headers);
    let (app, sid, a) = match current(&h, &headers).await {
        Ok(x) => x,
        Err(r) => return reject_page(o, r),
    };
    if sid != f.sid {
        return reject_page(o, Reject::new(StatusCode::FORBIDDEN, |w| w.other_session));
    }
    let view = match view_of(&a).await {
        Ok(v) => v,
        Err(r) => return reject_page(o, r),
    };
    if submit_unresolved(&view.step) {
        return reject_page(
            o,
            Reject {
                why: Why::ForgetWait,
                view: Some(Box::new(view)),
                ..Reject::new(StatusCode::CONFLICT, |w| w.forget_wait)
            },
        );
    }
    let link = view.link;
    app.sessions.lock().expect("lock").remove(&sid);
    if let Some(sys) = app.system.lock().expect("lock").as_ref() {
        sys.stop(a.id());
    }
    let done = app.env.persister.forget(&sid, &link).await;
    let cleared = format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0");
    match done {
        Ok(Ok(())) => page(StatusCode::OK, pages::forgotten(o, &sid), &[cleared]),
        Ok(Err(e)) => {
            eprintln!("turno demo: could not forget a session: {e}");
            reject_page(
                o,
                Reject::new(StatusCode::SERVICE_UNAVAILABLE, |w| w.store_failed),
            )
        }
        Err(_) => reject_page(o, restarting()),
    }
}

async fn draft_link(
    State(h): State<Arc<Holder>>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Response {
    let o = opts(&headers);
    let Some(app) = h.app() else {
        return reject_page(o, restarting());
    };
    let invalid = || reject_page(o, Reject::new(StatusCode::NOT_FOUND, |w| w.bad_link));
    if !ids::is_hex_id(&token, 16) {
        return invalid();
    }
    let store = app.store.clone();
    let sid = match blocking(move || persist::resolve_link(&store, &token)).await {
        Ok(Some(sid)) if ids::is_hex_id(&sid, 16) => sid,
        Ok(_) => return invalid(),
        Err(e) => {
            return reject_page(
                o,
                Reject::text(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
            )
        }
    };
    match session(&h, &app, &sid).await {
        Ok(Some(_)) => see("/", &[set_cookie(&sid)]),
        Ok(None) => invalid(),
        Err(r) => reject_page(o, r),
    }
}

async fn api_chart(State(h): State<Arc<Holder>>) -> Json<Value> {
    Json(pages::chart_json(&h.machine))
}
