// The Band playground: talk to agents on the local platform from a browser.
// Plain modern JavaScript, no build step: the human REST API with fetch and the
// live feed with EventSource, both authenticated by the user key the page was
// opened with (/playground?token=...), which is then kept for the tab and taken
// out of the address bar. Everything shown is built with textContent, never
// HTML strings, so message text cannot inject markup.
"use strict";

const TOKEN_KEY = "band-playground-token";
const TOKEN = takeToken();

// The key from the address (then removed from it: it would show in the history,
// in a screen share, in a copied link) or, on a reload, the one kept for the tab.
function takeToken() {
  const params = new URLSearchParams(location.search);
  const given = params.get("token");
  if (!given) return sessionStorage.getItem(TOKEN_KEY) || "";
  sessionStorage.setItem(TOKEN_KEY, given);
  params.delete("token");
  const rest = params.toString();
  history.replaceState(null, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
  return given;
}

const WRONG_KEY = "This key was refused: it is no user key of this platform (a mistyped one, "
  + "or one of an earlier run without --state). Open the playground with the link "
  + "band-trio dev --web or band-trio platform prints.";
const API = "/api/v1/me";
const TOKEN_RE = /@\[\[([^\[\]\s]+)\]\]/g;

const state = {
  me: null,
  rooms: [],
  roomId: null,
  participants: [],      // roster of the current room
  messages: new Map(),   // id -> element of the current room
  toolCalls: new Map(),  // tool_call_id -> card element awaiting its result
  agents: new Map(),     // agent id -> status row (agents/status)
  activity: new Map(),   // agent id -> agent_activity data in the current room
  attempts: new Map(),   // agent id -> the group of the cards of its running attempt
  source: null,
};

const $ = (id) => document.getElementById(id);

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

// ------------------------------------------------------------------ API

async function api(method, path, body) {
  const init = { method, headers: { "x-api-key": TOKEN } };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(API + path, init);
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    throw new Error(WRONG_KEY);
  }
  const text = await response.text();
  const doc = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const message = doc && doc.error ? doc.error.message : response.statusText;
    throw new Error(`${method} ${path}: ${response.status} ${message}`);
  }
  return doc;
}

async function listAll(path) {
  const rows = [];
  let cursor = null;
  for (;;) {
    const sep = path.includes("?") ? "&" : "?";
    const doc = await api("GET", `${path}${sep}limit=100${cursor ? "&cursor=" + encodeURIComponent(cursor) : ""}`);
    rows.push(...doc.data);
    const meta = doc.metadata || {};
    if (!meta.has_more || !meta.next_cursor) return rows;
    cursor = meta.next_cursor;
  }
}

function notice(text, sticky = false) {
  const box = $("notice");
  box.textContent = text;
  box.hidden = !text;
  // A refused key stays said: nothing works until the page is opened again.
  if (text && !sticky && text !== WRONG_KEY) setTimeout(() => { if (box.textContent === text) box.hidden = true; }, 6000);
}

function guarded(fn) {
  return async (...args) => {
    try { await fn(...args); } catch (err) { notice(err.message); }
  };
}

// ------------------------------------------------------------------ rooms

async function loadRooms() {
  state.rooms = await listAll("/chats");
  renderRooms();
  if (state.roomId && !state.rooms.some((r) => r.id === state.roomId)) {
    await selectRoom(null);
  } else if (!state.roomId && state.rooms.length) {
    await selectRoom(state.rooms[state.rooms.length - 1].id);
  }
}

function renderRooms() {
  const list = $("room-list");
  list.replaceChildren();
  if (!state.rooms.length) list.append(el("li", { class: "empty", text: "No rooms yet." }));
  for (const room of state.rooms) {
    const badge = el("span", { class: `badge ${room.work_status || ""}`, text: room.work_status === "idle" ? "" : (room.work_status || "") });
    const button = el("button", { type: "button", "data-room": room.id }, el("span", { text: room.title || "Untitled room" }), badge);
    button.setAttribute("aria-current", String(room.id === state.roomId));
    button.addEventListener("click", guarded(() => selectRoom(room.id)));
    list.append(el("li", {}, button));
  }
}

async function selectRoom(roomId) {
  state.roomId = roomId;
  state.messages.clear();
  state.toolCalls.clear();
  state.attempts.clear();
  state.activity.clear();
  $("messages").replaceChildren();
  const enabled = Boolean(roomId);
  for (const id of ["interrupt", "stop", "play", "send", "message-input", "invite-select", "invite-button"]) {
    $(id).disabled = !enabled;
  }
  renderRooms();
  if (!roomId) {
    $("room-title").textContent = "No room selected";
    $("participants").replaceChildren();
    $("agents").replaceChildren();
    renderWorking();
    return;
  }
  const room = state.rooms.find((r) => r.id === roomId);
  $("room-title").textContent = (room && room.title) || "Untitled room";
  await Promise.all([loadParticipants(), loadAgents()]);
  const messages = await listAll(`/chats/${roomId}/messages`);
  if (state.roomId !== roomId) return;
  for (const message of messages) renderMessage(message);
  // Messages the live feed brought while the list loaded are newer: keep them last.
  const listed = new Set(messages.map((m) => m.id));
  for (const item of [...$("messages").children]) {
    if (!listed.has(item.dataset.id)) $("messages").append(item);
  }
  scrollDown();
  $("message-input").focus();
}

async function loadParticipants() {
  const roomId = state.roomId;
  const doc = await api("GET", `/chats/${roomId}/participants`);
  if (state.roomId !== roomId) return;
  state.participants = doc.data;
  const box = $("participants");
  box.replaceChildren(...state.participants.map((p) =>
    el("span", { class: `chip ${p.type === "Agent" ? "agent" : ""}`, title: p.handle ? "@" + p.handle : "", text: p.name })));
  const peers = await api("GET", `/peers?not_in_chat=${encodeURIComponent(roomId)}&page_size=100`);
  const select = $("invite-select");
  select.replaceChildren(...peers.data.map((p) =>
    el("option", { value: p.id, text: `${p.name} (${p.type === "Agent" ? "agent" : "person"}) @${p.handle}` })));
  $("invite-button").disabled = !peers.data.length;
  if (!peers.data.length) select.append(el("option", { value: "", text: "Nobody else to invite" }));
}

// ------------------------------------------------------------------ agents

async function loadAgents() {
  const roomId = state.roomId;
  if (!roomId) return;
  const doc = await api("GET", `/agents/status?room_id=${encodeURIComponent(roomId)}`);
  if (state.roomId !== roomId) return;
  state.agents = new Map(doc.data.map((a) => [a.id, a]));
  renderAgents();
}

let agentsTimer = null;
function refreshAgentsSoon() {
  clearTimeout(agentsTimer);
  agentsTimer = setTimeout(guarded(loadAgents), 150);
}

function agentStatus(agent) {
  const live = state.activity.get(agent.id);
  const stopped = live ? live.stopped : agent.stopped_rooms.includes(state.roomId);
  const working = live ? live.status === "working" : agent.status === "working";
  if (stopped) return ["stopped", "Stopped in this room"];
  if (working) {
    const activity = live && live.activity;
    const what = activity && activity.name ? ` (${activity.kind}: ${activity.name})` : "";
    return ["working", "Working" + what];
  }
  return ["idle", "Idle"];
}

function renderAgents() {
  const list = $("agents");
  list.replaceChildren();
  if (!state.agents.size) list.append(el("li", { class: "empty", text: "No agents in this room." }));
  for (const agent of state.agents.values()) {
    const live = state.activity.get(agent.id);
    const connected = live ? live.connected : agent.connected;
    const [kind, label] = agentStatus(agent);
    const counts = agent.messages || {};
    const stat = (name, value) => el("span", { text: `${name}: ${value || 0}` });
    const buttons = el("div", { class: "buttons" });
    for (const action of ["interrupt", "stop", "play"]) {
      const button = el("button", { type: "button", class: "ctl", text: action, "data-action": action });
      button.addEventListener("click", guarded(() => control(action, agent.id)));
      buttons.append(button);
    }
    list.append(el("li", { class: "agent", "data-agent": agent.id, "data-status": kind },
      el("div", { class: "name" }, el("span", { class: `dot ${connected ? "on" : ""}`, title: connected ? "connected" : "not connected" }), agent.name),
      el("div", { class: "handle", text: "@" + agent.handle }),
      el("div", { class: `state ${kind}`, text: `${label}${connected ? "" : " · offline"}` }),
      el("div", { class: "stats" },
        stat("waiting", counts.delivered), stat("processing", counts.processing),
        stat("processed", counts.processed), stat("failed", counts.failed)),
      buttons));
  }
  renderWorking();
}

function renderWorking() {
  const names = [];
  for (const [agentId, live] of state.activity) {
    if (live.status === "working" && !live.stopped) {
      const agent = state.agents.get(agentId);
      names.push(agent ? agent.name : "An agent");
    }
  }
  const line = $("working");
  line.hidden = !names.length;
  line.textContent = names.length ? `${names.join(", ")} ${names.length > 1 ? "are" : "is"} working…` : "";
}

async function control(action, agentId) {
  if (!state.roomId) return;
  const body = agentId ? { action, agent_id: agentId } : { action };
  const doc = await api("POST", `/chats/${state.roomId}/control`, body);
  if (!doc.data.sent.length) notice("There is no agent in this room to " + action + ".");
  else if (action === "interrupt" && !doc.data.running.length) notice("Nothing to interrupt: no turn is running.");
  refreshAgentsSoon();
}

// ------------------------------------------------------------------ messages

function participantName(id) {
  const p = state.participants.find((x) => x.id === id);
  return p ? p.name : null;
}

function handleOf(id) {
  const p = state.participants.find((x) => x.id === id);
  if (p && p.handle) return p.handle;
  const agent = state.agents.get(id);
  return agent ? agent.handle : id;
}

// Text with the platform's @[[id]] tokens shown as @handle.
function richText(content) {
  const frag = document.createDocumentFragment();
  let last = 0;
  for (const match of content.matchAll(TOKEN_RE)) {
    frag.append(content.slice(last, match.index));
    frag.append(el("span", { class: "mention", text: "@" + handleOf(match[1]) }));
    last = match.index + match[0].length;
  }
  frag.append(content.slice(last));
  return frag;
}

function parseJson(text) {
  try {
    const value = JSON.parse(text);
    return value && typeof value === "object" ? value : null;
  } catch {
    return null;
  }
}

function pretty(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function timeOf(message) {
  const date = new Date(message.inserted_at);
  return isNaN(date) ? "" : date.toLocaleTimeString();
}

function kindOf(message) {
  const type = message.message_type;
  const meta = message.metadata || {};
  if (type === "task" && meta.band_usage) return "usage";
  if (type === "tool_call" || type === "tool_result") return "tool";
  return type || "text";
}

function renderMessage(message) {
  if (state.messages.has(message.id)) return;
  const kind = kindOf(message);
  const sender = message.sender_name || participantName(message.sender_id) || "?";
  const mine = state.me && message.sender_id === state.me.id;
  const item = el("li", { class: `msg ${kind}${mine ? " mine" : ""}`, "data-id": message.id, "data-type": message.message_type });
  const meta = el("div", { class: "meta" }, el("span", { text: sender }), el("span", { text: timeOf(message) }));
  const type = message.message_type;
  const data = message.metadata || {};
  if (kind === "text") {
    item.append(meta, el("div", { class: "body" }, richText(message.content)), el("div", { class: "delivery" }));
    renderDelivery(item, data.delivery_status || {});
  } else if (type === "tool_call") {
    const call = parseJson(message.content) || {};
    const card = el("div", { class: "card" },
      el("div", { class: "title", text: `Tool call · ${call.name || "?"}` }),
      el("div", { class: "label", text: "arguments" }),
      el("pre", { class: "args", text: pretty(call.args !== undefined ? call.args : message.content) }),
      el("div", { class: "pending", text: "running…" }));
    if (call.tool_call_id) state.toolCalls.set(call.tool_call_id, card);
    item.append(meta, card);
  } else if (type === "tool_result") {
    const result = parseJson(message.content) || {};
    const card = result.tool_call_id ? state.toolCalls.get(result.tool_call_id) : null;
    if (card) {
      attachResult(card, result, message.content);
      state.messages.set(message.id, card);
      return;
    }
    const own = el("div", { class: "card" }, el("div", { class: "title", text: `Tool result · ${result.name || "?"}` }));
    attachResult(own, result, message.content);
    item.append(meta, own);
  } else if (kind === "usage") {
    const u = data.band_usage;
    item.append(el("div", { class: "card", text: `${sender} · usage: ${u.input_tokens} in / ${u.output_tokens} out tokens` + (u.cache_read_tokens ? ` (${u.cache_read_tokens} cached)` : "") }));
  } else {
    const titles = { thought: "Thought", error: "Error", task: "Task", attention: "Needs attention" };
    const failure = data.failure;
    const card = el("div", { class: "card" },
      el("div", { class: "title", text: titles[type] || type }),
      el("div", { class: "body" }, richText(message.content)));
    if (failure && failure.code) card.append(el("div", { class: "label", text: `${failure.provider || ""} ${failure.code}`.trim() }));
    item.append(meta, card);
  }
  state.messages.set(message.id, item);
  // An agent's cards (thoughts, tool calls, errors) go in the group of its
  // running attempt; text messages stay in the conversation.
  const group = kind !== "text" ? state.attempts.get(message.sender_id) : null;
  (group ? group.querySelector(".cards") : $("messages")).append(item);
}

// A tool result longer than this is shown collapsed (expand on click).
const LONG_RESULT_CHARS = 400;
const LONG_RESULT_LINES = 8;

function attachResult(card, result, raw) {
  const pending = card.querySelector(".pending");
  if (pending) pending.remove();
  if (result.is_error) card.classList.add("is-error");
  const text = pretty(result.output !== undefined ? result.output : raw);
  const label = result.is_error ? "error" : "result";
  const pre = el("pre", { class: "result", text });
  const lines = text.split("\n").length;
  if (text.length <= LONG_RESULT_CHARS && lines <= LONG_RESULT_LINES) {
    card.append(el("div", { class: "label", text: label }), pre);
    return;
  }
  card.append(el("details", { class: "long-result" },
    el("summary", { class: "label", text: `${label} · ${lines} lines, ${text.length} characters (click to expand)` }),
    pre));
}

function renderDelivery(item, deliveries) {
  const line = item.querySelector(".delivery");
  if (!line) return;
  line.replaceChildren();
  for (const [agentId, delivery] of Object.entries(deliveries)) {
    const agent = state.agents.get(agentId);
    const name = agent ? agent.name : participantName(agentId) || "agent";
    const status = typeof delivery === "string" ? delivery : delivery.status;
    line.append(el("span", { class: status, "data-agent": agentId, text: `${name}: ${status} ` }));
  }
}

function agentName(agentId) {
  const agent = state.agents.get(agentId);
  return agent ? agent.name : participantName(agentId) || "Agent";
}

function note(text, kind) {
  const item = el("li", { class: `msg note ${kind}`, "data-type": kind, text });
  $("messages").append(item);
  return item;
}

// Each attempt of an agent at a message opens a numbered group that holds the
// cards it posts; its end (done, failed, interrupted) is written on it.
function onAttempt(data) {
  const name = agentName(data.agent_id);
  if (data.status === "processing") {
    const group = el("li", { class: "attempt", "data-agent": data.agent_id, "data-attempt": String(data.attempt) },
      el("div", { class: "attempt-title", text: `${name} · attempt ${data.attempt}` }),
      el("ol", { class: "cards" }));
    state.attempts.set(data.agent_id, group);
    $("messages").append(group);
    return;
  }
  const group = state.attempts.get(data.agent_id);
  state.attempts.delete(data.agent_id);
  const end = data.interrupted ? "interrupted" : data.status === "failed" ? "failed" : "done";
  if (group) {
    group.dataset.end = end;
    group.querySelector(".attempt-title").textContent += ` · ${end}`;
    if (!group.querySelector(".cards").children.length && end === "done") group.remove();
  }
  if (data.interrupted) note(`${name}: turn interrupted`, "interrupted");
  else if (data.status === "failed") note(`${name}: attempt ${data.attempt} failed`, "failed");
}

function onMessageStatus(data) {
  onAttempt(data);
  const item = state.messages.get(data.message_id);
  if (!item) return;
  const line = item.querySelector(".delivery");
  if (!line) return;
  const current = {};
  for (const span of line.querySelectorAll("span[data-agent]")) current[span.dataset.agent] = span.className;
  current[data.agent_id] = data.status;
  renderDelivery(item, current);
}

function scrollDown() {
  const list = $("messages");
  list.scrollTop = list.scrollHeight;
}

// ------------------------------------------------------------------ composing

function mentionable() {
  return state.participants.filter((p) => p.handle && (!state.me || p.id !== state.me.id));
}

// The terminal chat's rule (resolve_mentions in band_trio/devloop/chat.py):
// "@word" names the participant whose handle is word, else the only one whose
// handle ends with "/word"; letter case does not matter; a named participant's
// word is written as the full handle. tests/mention_cases.json holds both to it.
const MENTION_RE = /(?<![A-Za-z0-9_@])@([A-Za-z0-9_][A-Za-z0-9_.-]*(?:\/[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)?)/g;
const TRAILING_RE = /[.,;:!?]+$/;

function resolveHandle(word, candidates) {
  const wanted = word.replace(/^@/, "").replace(TRAILING_RE, "").toLowerCase();
  if (!wanted) return null;
  const exact = candidates.find((c) => c.handle.toLowerCase() === wanted);
  if (exact) return exact;
  const short = candidates.filter((c) => c.handle.toLowerCase().endsWith("/" + wanted));
  return short.length === 1 ? short[0] : null;
}

function resolveMentions(text, candidates) {
  const mentions = [];
  const content = text.replace(MENTION_RE, (whole, word) => {
    const stripped = word.replace(TRAILING_RE, "");
    const found = resolveHandle(stripped, candidates);
    if (!found) return whole;
    if (!mentions.includes(found.handle)) mentions.push(found.handle);
    return "@" + found.handle + word.slice(stripped.length);
  });
  return { content, mentions };
}

async function send(event) {
  event.preventDefault();
  const input = $("message-input");
  const text = input.value.trim();
  if (!text || !state.roomId) return;
  const resolved = resolveMentions(text, mentionable());
  let mentions = resolved.mentions;
  if (!mentions.length) {
    // Naming nobody: every agent in the room.
    mentions = state.participants.filter((p) => p.type === "Agent" && p.handle).map((p) => p.handle);
  }
  if (!mentions.length) {
    notice("Mention someone with @handle: there is no agent in this room.");
    return;
  }
  await api("POST", `/chats/${state.roomId}/messages`, {
    message: { content: resolved.content, mentions: mentions.map((handle) => ({ handle })) },
  });
  input.value = "";
  hideMenu();
}

let menuIndex = 0;
function currentWord() {
  const input = $("message-input");
  const upto = input.value.slice(0, input.selectionStart);
  const match = /(^|\s)@([\w./-]*)$/.exec(upto);
  return match ? { start: upto.length - match[2].length - 1, word: match[2] } : null;
}

function hideMenu() {
  $("mention-menu").hidden = true;
}

function showMenu() {
  const word = currentWord();
  const menu = $("mention-menu");
  if (!word) return hideMenu();
  const options = mentionable().filter((p) =>
    p.handle.toLowerCase().includes(word.word.toLowerCase()) || p.name.toLowerCase().startsWith(word.word.toLowerCase()));
  if (!options.length) return hideMenu();
  menuIndex = Math.min(menuIndex, options.length - 1);
  menu.replaceChildren(...options.map((p, i) => {
    const li = el("li", { role: "option", "data-handle": p.handle, text: `@${p.handle} — ${p.name}` });
    li.setAttribute("aria-selected", String(i === menuIndex));
    li.addEventListener("mousedown", (e) => { e.preventDefault(); complete(p.handle); });
    return li;
  }));
  menu.hidden = false;
}

function complete(handle) {
  const input = $("message-input");
  const word = currentWord();
  if (!word) return;
  const before = input.value.slice(0, word.start);
  const after = input.value.slice(input.selectionStart);
  input.value = `${before}@${handle} ${after}`;
  const caret = before.length + handle.length + 2;
  input.setSelectionRange(caret, caret);
  hideMenu();
}

function onKey(event) {
  const menu = $("mention-menu");
  if (!menu.hidden) {
    const items = [...menu.children];
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      menuIndex = (menuIndex + (event.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
      showMenu();
      return;
    }
    if (event.key === "Tab" || event.key === "Enter") {
      event.preventDefault();
      complete(items[menuIndex].dataset.handle);
      return;
    }
    if (event.key === "Escape") return hideMenu();
  }
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
}

// ------------------------------------------------------------------ live feed

function follow() {
  const source = new EventSource(`${API}/stream?token=${encodeURIComponent(TOKEN)}`);
  state.source = source;
  const live = $("live");
  source.onopen = () => { live.dataset.state = "open"; live.textContent = "live"; };
  source.onerror = () => { live.dataset.state = "error"; live.textContent = "reconnecting"; };
  const on = (type, handler) => source.addEventListener(type, (event) => {
    const doc = JSON.parse(event.data);
    guarded(handler)(doc.data, doc.room_id);
  });
  on("resync", async () => {
    // Events may have been missed: list everything again.
    const current = state.roomId;
    await loadRooms();
    if (current && state.roomId === current) await selectRoom(current);
  });
  on("message_created", (message, roomId) => {
    if (roomId === state.roomId) {
      renderMessage(message);
      scrollDown();
      if (message.sender_type === "Agent") refreshAgentsSoon();
    }
    touchRoom(roomId, message.inserted_at);
  });
  on("message_status", (data, roomId) => {
    if (roomId !== state.roomId) return;
    onMessageStatus(data);
    refreshAgentsSoon();
  });
  on("agent_activity", (data, roomId) => {
    const room = state.rooms.find((r) => r.id === roomId);
    if (roomId !== state.roomId) return;
    state.activity.set(data.agent_id, data);
    renderAgents();
    if (room) {
      room.work_status = [...state.activity.values()].some((a) => a.stopped) ? "stopped"
        : [...state.activity.values()].some((a) => a.status === "working") ? "working" : "idle";
      renderRooms();
    }
  });
  const roster = async (_data, roomId) => {
    if (roomId !== state.roomId) return;
    await Promise.all([loadParticipants(), loadAgents()]);
  };
  on("participant_added", roster);
  on("participant_removed", roster);
  on("room_added", loadRooms);
  on("room_removed", loadRooms);
  on("room_updated", loadRooms);
}

function touchRoom(roomId, at) {
  const room = state.rooms.find((r) => r.id === roomId);
  if (room) room.last_message_at = at;
}

// ------------------------------------------------------------------ start

async function start() {
  if (!TOKEN) {
    notice("Open the playground with your user key: /playground?token=<key>", true);
    return;
  }
  state.me = (await api("GET", "/profile")).data;
  $("me").textContent = `${[state.me.first_name, state.me.last_name].filter(Boolean).join(" ") || state.me.handle} · @${state.me.handle}`;
  $("composer").addEventListener("submit", guarded(send));
  $("message-input").addEventListener("keydown", onKey);
  $("message-input").addEventListener("input", showMenu);
  $("message-input").addEventListener("blur", hideMenu);
  for (const button of document.querySelectorAll(".room-actions .ctl")) {
    button.addEventListener("click", guarded(() => control(button.dataset.action)));
  }
  $("new-room").addEventListener("submit", guarded(async (event) => {
    event.preventDefault();
    const title = $("new-room-title").value.trim();
    const room = (await api("POST", "/chats", { chat: { title: title || null } })).data;
    $("new-room-title").value = "";
    await loadRooms();
    await selectRoom(room.id);
  }));
  $("invite").addEventListener("submit", guarded(async (event) => {
    event.preventDefault();
    const id = $("invite-select").value;
    if (!id || !state.roomId) return;
    await api("POST", `/chats/${state.roomId}/participants`, { participant: { participant_id: id } });
    await Promise.all([loadParticipants(), loadAgents()]);
  }));
  follow();
}

document.addEventListener("DOMContentLoaded", guarded(start));
