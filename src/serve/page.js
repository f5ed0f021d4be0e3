// The page `boardroom serve` serves at `/`: asks for the token once (kept
// in this tab's sessionStorage, sent as a header, never in a URL), starts
// runs, follows one live over server-sent events read with fetch (an
// EventSource cannot send a header), and steers it: the reply to the
// master's question, a follow-up, a decision about a tool call, stop.
// It also talks to the team's partner (a chat, polled), whose launched run
// is followed in the same run view.
// Model text is only ever set as textContent: it stays inert.
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const KEY = "boardroom.token";
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const k of kids) e.append(k instanceof Node ? k : String(k));
    return e;
  };

  // ---- the token and the API ----
  let token = sessionStorage.getItem(KEY) || "";
  async function api(method, path, body) {
    const headers = { Authorization: "Bearer " + token };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const r = await fetch(path, { method, headers, cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body) });
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    if (r.status === 401) { lock("The server refused the token."); }
    if (!r.ok) throw new Error((data && data.error) || ("HTTP " + r.status));
    return data;
  }
  function lock(why) {
    sessionStorage.removeItem(KEY); token = "";
    if (current) current.abort();
    if (chat) clearTimeout(chat.timer);
    chat = null;
    $("app").hidden = true; $("lock").hidden = false;
    $("token-error").textContent = why || "";
    document.body.dataset.phase = "locked";
  }
  async function unlock() {
    try {
      const t = await api("GET", "/v1/teams");
      const sel = $("team"); sel.replaceChildren();
      for (const name of t.teams) sel.append(el("option", { value: name }, name));
      sessionStorage.setItem(KEY, token);
      $("lock").hidden = true; $("app").hidden = false;
      document.body.dataset.phase = "ready";
      listRuns();
    } catch (e) {
      if (token) lock(e.message);
    }
  }
  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    token = $("token").value.trim(); $("token").value = "";
    unlock();
  });
  $("forget").addEventListener("click", () => lock(""));

  // ---- runs ----
  async function listRuns() {
    try {
      const list = (await api("GET", "/v1/runs")).runs || [];
      const ul = $("runs"); ul.replaceChildren();
      for (const r of list.slice().reverse()) {
        const li = el("li", { "data-id": r.id }, el("span", { class: "status" }, r.status || ""),
          String(r.task || r.id).slice(0, 60));
        li.addEventListener("click", () => watch(r.id));
        ul.append(li);
      }
    } catch (e) { /* the list is a convenience */ }
  }
  $("refresh").addEventListener("click", listRuns);
  $("start-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    $("start-error").textContent = "";
    const body = { task: $("task").value, team: $("team").value };
    const model = $("model").value.trim();
    if (model) body.model = model;
    try {
      const r = await api("POST", "/v1/runs", body);
      watch(r.id);
      listRuns();
    } catch (err) { $("start-error").textContent = err.message; }
  });

  // ---- one run, live ----
  let current = null;     // the AbortController of the open stream
  let run = null;         // what the page knows of the watched run
  function watch(id) {
    if (current) current.abort();
    run = { id, last: 0, members: new Map(), cards: new Map(), tokens: 0 };
    $("run").hidden = false; $("events-box").hidden = false;
    $("run-id").textContent = id; $("run-task").textContent = "";
    $("run-status").textContent = "running"; $("run-round").textContent = "0"; $("run-tokens").textContent = "0";
    $("members").replaceChildren(); $("approvals").replaceChildren(); $("log").replaceChildren();
    $("question").hidden = true; $("answer-box").hidden = true; $("message-form").hidden = true;
    $("stop").hidden = false;
    document.body.dataset.run = id;
    follow();
  }

  // Reads `/v1/runs/{id}/events` from after the last event seen, until
  // the server says `end` (nothing runs it) or the page moves on.
  async function follow() {
    if (current) current.abort();
    const me = run, ctl = new AbortController();
    current = ctl;
    setLive("live");
    try {
      const r = await fetch("/v1/runs/" + encodeURIComponent(me.id) + "/events", {
        headers: { Authorization: "Bearer " + token, "Last-Event-ID": String(me.last) },
        cache: "no-store", signal: ctl.signal });
      if (r.status === 401) { lock("The server refused the token."); return; }
      if (!r.ok) throw new Error("HTTP " + r.status);
      const reader = r.body.getReader(), dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, cut); buf = buf.slice(cut + 2);
          let id = null, name = "message", data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("id: ")) id = Number(line.slice(4));
            else if (line.startsWith("event: ")) name = line.slice(7);
            else if (line.startsWith("data: ")) data += line.slice(6);
          }
          if (me !== run) return;
          if (name === "end") { ended(); return; }
          if (id !== null) me.last = id;
          if (data) { try { apply(JSON.parse(data)); } catch (e) { /* a torn line */ } }
        }
      }
      if (me === run) setTimeout(() => { if (me === run) follow(); }, 1000);
    } catch (e) {
      if (ctl.signal.aborted || me !== run) return;
      setLive("disconnected: " + e.message);
      setTimeout(() => { if (me === run) follow(); }, 2000);
    }
  }
  function setLive(s) { $("live").textContent = s; }
  async function ended() {
    setLive("not running");
    $("stop").hidden = true;
    try {
      const s = await api("GET", "/v1/runs/" + encodeURIComponent(run.id));
      $("run-status").textContent = s.status;
      if (s.answer && $("answer").textContent === "") showAnswer(s.answer);
      if (s.status === "awaiting_approval") for (const p of s.approvals || []) card(p.call_id || p.id, p.tool, p.arguments, p.agent);
      if (s.status === "done" || s.status === "awaiting_user") showMessage(s.status === "awaiting_user" ? "reply" : "follow-up");
    } catch (e) { /* shown by the events already */ }
    document.body.dataset.phase = "ended";
    listRuns();
  }

  function apply(ev) {
    log(ev);
    if (ev.usage && ev.type === "turn_completed") {
      run.tokens += (ev.usage.prompt_tokens || 0) + (ev.usage.completion_tokens || 0);
      $("run-tokens").textContent = String(run.tokens);
    }
    if (ev.round !== undefined) $("run-round").textContent = String(ev.round);
    switch (ev.type) {
      case "run_started":
        $("run-task").textContent = ev.task || ""; $("run-status").textContent = "running";
        $("question").hidden = true; $("message-form").hidden = true; $("stop").hidden = false;
        document.body.dataset.phase = "live";
        break;
      case "task_assigned": member(ev.member, "working"); break;
      case "agent_message": if (ev.parent) member(ev.agent, "done"); break;
      case "approval_requested": card(ev.id, ev.tool, ev.arguments, ev.agent); break;
      case "approval_decided": decided(ev.id, ev.decision, ev.reason); break;
      case "awaiting_user":
        $("question-text").textContent = ev.question || ""; $("question").hidden = false;
        showMessage("reply");
        break;
      case "run_finished":
        $("run-status").textContent = ev.status;
        if (ev.answer && ev.status !== "awaiting_user") showAnswer(ev.answer);
        break;
    }
  }
  function member(name, status) {
    if (!name) return;
    let m = run.members.get(name);
    if (!m) { m = el("span", { "data-member": name }, name); run.members.set(name, m); $("members").append(m); }
    m.className = status; m.dataset.status = status;
  }
  function showAnswer(text) { $("answer").textContent = text; $("answer-box").hidden = false; }
  function showMessage(kind) {
    $("message-label").textContent = kind === "reply" ? "your reply to the question" : "a follow-up";
    $("message-form").hidden = false; $("message-form").dataset.kind = kind;
  }
  function log(ev) {
    const what = ev.type === "agent_message" || ev.type === "agent_delta" ? null : ev.type;
    if (ev.type === "agent_delta" || ev.type === "call_started" || ev.type === "call_ended") return;
    const head = el("div", {}, el("span", { class: "kind" }, ev.type),
      [ev.agent, ev.round !== undefined ? "round " + ev.round : "", ev.phase || ""].filter(Boolean).join(" · "));
    const row = el("div", { class: "ev", "data-type": ev.type }, head);
    const text = ev.text || ev.answer || ev.task || ev.question || (what === "approval_requested" ? ev.tool + " " + ev.arguments : "");
    if (text) row.append(el("pre", {}, String(text).slice(0, 4000)));
    append($("log"), row);
  }
  // Adds a row to a log, keeping it scrolled to the end if it was there.
  function append(box, row) {
    const stick = box.scrollTop + box.clientHeight >= box.scrollHeight - 8;
    box.append(row);
    if (stick) box.scrollTop = box.scrollHeight;
  }

  // ---- decisions about tool calls ----
  function card(call, tool, args, agent) {
    if (!call || run.cards.has(call)) return;
    const reason = el("input", { class: "reason", placeholder: "reason for a denial (optional)" });
    const yes = el("button", { class: "go approve", type: "button" }, "Approve");
    const no = el("button", { class: "deny", type: "button" }, "Deny");
    const said = el("div", { class: "said" });
    const c = el("div", { class: "card approval", "data-call": call, "data-state": "waiting" },
      el("b", {}, (agent || "an agent") + " asks to call " + tool), el("pre", {}, args || ""), reason, yes, " ", no, said);
    run.cards.set(call, c);
    $("approvals").append(c);
    const decide = async (decision) => {
      yes.disabled = no.disabled = true; said.textContent = "";
      const body = { decision };
      if (decision === "deny" && reason.value.trim()) body.reason = reason.value.trim();
      try {
        await api("POST", "/v1/runs/" + encodeURIComponent(run.id) + "/approvals/" + encodeURIComponent(call), body);
        if ($("live").textContent !== "live") follow();
      } catch (e) { said.textContent = e.message; said.className = "said error"; yes.disabled = no.disabled = false; }
    };
    yes.addEventListener("click", () => decide("approve"));
    no.addEventListener("click", () => decide("deny"));
  }
  function decided(call, decision, reason) {
    const c = run.cards.get(call);
    if (!c) return;
    c.className = "card approval decided"; c.dataset.state = decision;
    for (const b of c.querySelectorAll("button, input")) b.remove();
    c.querySelector(".said").textContent = decision + (reason ? ": " + reason : "");
  }

  // ---- messages and stop ----
  $("message-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    $("message-error").textContent = "";
    const text = $("message").value;
    if (!text.trim()) return;
    try {
      await api("POST", "/v1/runs/" + encodeURIComponent(run.id) + "/messages", { text });
      $("message").value = ""; $("message-form").hidden = true; $("answer-box").hidden = true; $("answer").textContent = "";
      follow();
    } catch (err) { $("message-error").textContent = err.message; }
  });
  $("stop").addEventListener("click", async () => {
    try { await api("POST", "/v1/runs/" + encodeURIComponent(run.id) + "/cancel"); } catch (e) { setLive(e.message); }
  });

  // ---- a chat with the partner ----
  // Each POST answers when the partner's turn ends; the page then reads
  // the events it has not seen (`?after=N`), and again every second while
  // the partner works or the run it launched is under way.
  let chat = null;        // { id, seen, timer, busy, again } of the open chat
  const chatPath = (c, tail) => "/v1/chats/" + encodeURIComponent(c.id) + (tail || "");
  async function chatPoll() {
    const me = chat;
    if (!me) return;
    if (me.busy) { me.again = true; return; }
    clearTimeout(me.timer); me.busy = true; me.again = false;
    try {
      const c = await api("GET", chatPath(me, "?after=" + me.seen));
      if (me !== chat) return;
      for (const ev of c.events || []) chatEvent(ev);
      me.seen += (c.events || []).length;
      chatState(c);
      if (c.state === "working" || c.running) me.timer = setTimeout(chatPoll, 1000);
    } catch (e) {
      if (me === chat) $("chat-error").textContent = e.message;
    } finally {
      me.busy = false;
      if (me.again && me === chat) chatPoll();
    }
  }
  function chatState(c) {
    const waiting = c.state === "awaiting_consent";
    $("chat").dataset.state = c.state;
    $("chat-state").textContent = "· " + c.state.replace("_", " ") + (c.running ? " · run " + c.running + " under way" : "");
    $("chat-question").textContent = waiting ? c.question || "" : "";
    $("chat-consent").hidden = !waiting;
    $("chat-yes").disabled = $("chat-no").disabled = false;
    $("chat-form").hidden = waiting || c.state === "closed";
    if (c.state === "closed") { chat = null; chatForm(); }
  }
  function chatForm() {
    $("chat-label").textContent = chat ? "your message" : "first message (starts a chat)";
    $("chat-close").hidden = !chat; $("chat-form").hidden = false;
  }
  const SAID = { user_message: "you", partner_message: "partner", consent_asked: "partner asks",
    consent: "you answered", run_launched: "team launched", report: "report", notice: "note" };
  function chatEvent(ev) {
    const row = el("div", { class: "ev", "data-type": ev.type }, el("span", { class: "kind" }, SAID[ev.type] || ev.type));
    const text = ev.type === "consent" ? (ev.granted ? "yes" : "no")
      : ev.type === "run_launched" ? "run " + ev.run_id + " (" + ev.modules + " work modules)"
      : ev.type === "report" ? "run " + ev.run_id + " finished (" + ev.path + ")\n\n" + (ev.text || "")
      : ev.text || ev.question || "";
    row.append(el("pre", {}, String(text)));
    if (ev.run_id) {
      const b = el("button", { class: "follow", type: "button", "data-run": ev.run_id }, "Follow this run");
      b.addEventListener("click", () => { watch(ev.run_id); listRuns(); });
      row.append(b);
    }
    append($("chat-log"), row);
  }
  // Sends to the chat: `POST path body`, then reads what it brought.
  async function chatSend(tail, body) {
    const me = chat;
    $("chat-error").textContent = ""; $("chat").dataset.state = "working";
    $("chat-state").textContent = "· working";
    try { await api("POST", chatPath(me, tail), body); } catch (e) { $("chat-error").textContent = e.message; }
    if (me === chat) chatPoll();
  }
  $("chat-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = $("chat-text").value;
    if (!text.trim()) return;
    $("chat-text").value = "";
    if (chat) { chatSend("/messages", { text }); return; }
    const body = { team: $("team").value, message: text };
    const model = $("model").value.trim();
    if (model) body.model = model;
    $("chat-error").textContent = ""; $("chat-log").replaceChildren();
    $("chat-state").textContent = "· starting";
    try {
      const c = await api("POST", "/v1/chats", body);
      chat = { id: c.id, seen: 0, timer: 0, busy: false, again: false };
      $("chat").dataset.id = c.id;
      chatForm(); chatPoll();
    } catch (err) { $("chat-error").textContent = err.message; $("chat-text").value = text; $("chat-state").textContent = ""; }
  });
  const consent = (granted) => { $("chat-yes").disabled = $("chat-no").disabled = true; chatSend("/consent", { granted }); };
  $("chat-yes").addEventListener("click", () => consent(true));
  $("chat-no").addEventListener("click", () => consent(false));
  $("chat-close").addEventListener("click", () => chatSend("/close"));
  chatForm();

  if (token) unlock();
})();
