// The wizard's page script. It makes the page nicer; nothing depends on it
// for correctness: the server validates every field and owns the step.
//
// - Drafts: every change of a field is saved to localStorage under the
//   session, per step; fields marked data-volatile (card number, one-time
//   code) are never saved. On load, empty fields are refilled from it.
// - Live: /api/state is long-polled; the diagram's active states are re-marked,
//   and the page goes to the new step's URL when the session moves on by
//   itself (sending -> completed), replacing this history entry: the
//   browser's history holds the steps the user took, not the transient
//   ones.
"use strict";
(function () {
  const body = document.body;
  const forget = document.querySelector("[data-forget]");
  if (forget) {
    // "Forget me": this browser's copy goes too.
    for (const k of Object.keys(localStorage)) if (k.startsWith("turno-wizard:")) localStorage.removeItem(k);
    return;
  }
  const sid = body.dataset.sid, step = body.dataset.step;
  const banner = document.getElementById("banner");
  if (!sid) {
    // A restart page: come back when the server is up.
    if ("retry" in body.dataset) setTimeout(() => location.reload(), 700);
    return;
  }
  const key = "turno-wizard:" + sid;
  const load = () => { try { return JSON.parse(localStorage.getItem(key)) || { steps: {} }; } catch { return { steps: {} }; } };
  const form = document.getElementById("step-form");
  const saveable = (el) => el.name && el.type !== "hidden" && !("volatile" in el.dataset);
  if (form) {
    const draft = load();
    const mine = draft.steps[step] || {};
    for (const el of form.elements) {
      if (!saveable(el) || !(el.name in mine)) continue;
      if (el.type === "radio") { if (!form.querySelector(`input[name="${el.name}"]:checked`)) el.checked = el.value === mine[el.name]; }
      else if (el.value === "") el.value = mine[el.name];
    }
    const save = () => {
      const d = load();
      const fields = {};
      for (const el of form.elements) {
        if (!saveable(el)) continue;
        if (el.type === "radio") { if (el.checked) fields[el.name] = el.value; }
        else if (el.tagName !== "BUTTON") fields[el.name] = el.value;
      }
      d.steps[step] = fields;
      d.step = step;
      d.saved_at = Date.now();
      localStorage.setItem(key, JSON.stringify(d));
    };
    form.addEventListener("input", save);
    form.addEventListener("change", save);
  }
  const chart = document.getElementById("chart");
  // The transitions the session's last step took, as the chart reported
  // them (positions in its definition, the arrows' data-transition): a
  // self-transition, or one of two arrows that differ only by guard, is
  // the one marked. The page comes with them (data-taken); each answer of
  // /api/state brings them again.
  const mark = (active, taken) => {
    if (!chart) return;
    const on = new Set(active);
    for (const el of chart.querySelectorAll("[data-state]")) el.classList.toggle("active", on.has(el.dataset.state));
    const took = new Set(taken.map(String));
    for (const g of chart.querySelectorAll("[data-transition]")) g.classList.toggle("taken", took.has(g.dataset.transition));
    const legend = document.getElementById("active");
    if (legend) legend.textContent = "active: " + active.join(", ");
  };
  if (chart) mark([...chart.querySelectorAll("[data-state].active")].map((g) => g.dataset.state), (chart.dataset.taken || "").split(" ").filter(Boolean));
  const busy = "busy" in body.dataset;
  let down = false;
  // Once a form is submitted the page is leaving: a poll answered
  // meanwhile (410 after "forget me", a new step) must not reload over
  // the submission's own navigation.
  // So is a page the browser leaves by Back or Forward: the answer to its
  // poll (the session moved back because of that very navigation) must not
  // replace the history entry it leaves. A page restored from the
  // back-forward cache polls again.
  let leaving = false;
  document.addEventListener("submit", () => { leaving = true; }, true);
  addEventListener("beforeunload", () => { leaving = true; });
  addEventListener("pagehide", () => { leaving = true; });
  addEventListener("pageshow", (e) => { if (e.persisted) { leaving = false; poll(); } });
  // A long poll: the server answers once the session has moved past the
  // step this page shows (or after 20 s), so the sending page goes on the
  // moment the submit ends, with one request held instead of a poll loop.
  let rev = Number(body.dataset.rev);
  const poll = async () => {
    if (leaving) return;
    let pause = 0;
    try {
      // After a failure the first answer is wanted at once: it says the
      // server is back.
      const url = down ? "/api/state" : `/api/state?after=${rev}&wait=20000`;
      const r = await fetch(url, { cache: "no-store" });
      if (leaving) return;
      if (r.status === 503) throw new Error("restarting");
      const v = await r.json();
      if (leaving) return;
      if (!r.ok) {
        if (r.status === 410) { location.reload(); return; }
        pause = 1500;
      } else {
        if (v.step !== step) { location.replace(v.url); return; }
        if (down) { location.reload(); return; }
        rev = v.rev;
        mark(v.active, v.taken || []);
        banner.hidden = true;
      }
    } catch (e) {
      down = true;
      banner.hidden = false;
      banner.textContent = body.dataset.down;
      pause = busy ? 250 : 1500;
    }
    setTimeout(poll, pause);
  };
  poll();
})();
