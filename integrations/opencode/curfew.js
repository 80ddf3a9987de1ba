// Curfew inside OpenCode: a plugin that asks a Curfew server's verdict API
// before each model call and acts on the answer, with no proxy in between
// (OpenCode signed in to a subscription, or to any provider of its own).
//
// Install: copy this file to ~/.config/opencode/plugins/curfew.js (or a
// project's .opencode/plugins/), then `curfew login URL` (the key is stored in
// ~/.config/curfew/, mode 600), or set CURFEW_URL and CURFEW_TOKEN. CURFEW_POLICY
// (fail_open, the default, or fail_closed) says what an outage does.
//
// What it does, from OpenCode's plugin hooks (@opencode-ai/plugin):
// - chat.params, before every model call: off duty or asleep the call is
//   stopped with an error saying why and until when (nothing reaches the
//   provider); winding, the budget (maxOutputTokens) is clamped to the
//   verdict's, never raised. OpenCode's own helper agents (title, summary,
//   compaction) ask with that purpose, so the schedule's exemptions hold.
// - experimental.chat.system.transform: sleepy, the tired persona is added to
//   the system prompt.
// - tool.execute.before: a tool call is stopped when the verdict denies tools.
// - event: a session with a parent is a subagent's, and asks as one.
//
// Verdicts are kept in memory as a gateway keeps them: until the earlier of
// valid_until and max_age (never past valid_until). A model call answered
// from a kept verdict is reported to the decision ledger
// (POST /api/v1/decisions, batched about every second); one the server was
// asked for is recorded by the server. On an outage the policy answers and
// the user is told (a toast in the TUI, a line on stderr from `opencode run`,
// and OpenCode's log), never a silent pass.
//
// Only one export, the plugin: OpenCode runs every exported function of a
// plugin file as a plugin. Its second argument (the plugin's options) may
// carry env, fetch, now and headless, for tests.

import { readFileSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"

export const CurfewPlugin = async (input = {}, options = {}) => {
  const env = options.env ?? process.env
  const fetcher = options.fetch ?? globalThis.fetch
  const now = options.now ?? (() => Date.now() / 1000)
  const client = input.client
  const HELPERS = new Set(["title", "summary", "compaction"])
  const TIMEOUT_MS = 500
  const MAX_AGE = 60
  const MAX_TOKENS = 10_000_000
  const WORDS = { "on-duty": "working", winding: "sleepy", "off-duty": "off duty", "lights-out": "asleep" }

  const folder = join(env.XDG_CONFIG_HOME || join(env.HOME || homedir(), ".config"), "curfew")
  const stored = (name) => {
    try {
      return readFileSync(join(folder, name), "utf8").trim() || undefined
    } catch {
      return undefined
    }
  }
  const url = env.CURFEW_URL || stored("url")
  const token = env.CURFEW_TOKEN || stored("token")
  const policy = env.CURFEW_POLICY === "fail_closed" ? "fail_closed" : "fail_open"
  const root = url ? url.replace(/\/+$/, "").replace(/\/api\/v1$/, "") + "/api/v1" : undefined
  const headers = {
    Authorization: `Bearer ${token}`,
    "Content-Type": "application/json",
    "User-Agent": "curfew-opencode/1",
  }

  const subagents = new Set()
  const kept = new Map() // scope key -> {verdict, expires, recorded}
  const queue = []
  let flushing = null
  let retryAt = 0
  let told = null

  // Headless (`opencode run`) nothing shows a toast: the line goes to stderr,
  // which it prints; in the TUI, a toast (stderr would draw over the screen).
  const headless = options.headless ?? process.argv.slice(2).includes("run")
  const tell = async (message) => {
    if (told === message) return // said once per outage
    told = message
    if (headless) console.error(message)
    else {
      try {
        await client?.tui?.showToast?.({ body: { message, variant: "warning" } })
      } catch {}
    }
    try {
      await client?.app?.log?.({ body: { service: "curfew", level: "warn", message } })
    } catch {}
  }

  const policyVerdict = (why) => {
    const closed = policy === "fail_closed"
    return {
      state: closed ? "off-duty" : "on-duty",
      action: closed ? "short-circuit" : "pass",
      reply: null,
      max_tokens: null,
      persona: null,
      tools: closed ? "deny" : "allow",
      reason: `curfew server unavailable (${why}) · ${policy}`,
      valid_until: new Date(now() * 1000).toISOString(),
      origin: policy,
    }
  }

  const isVerdict = (v) =>
    v &&
    typeof v === "object" &&
    ["on-duty", "winding", "off-duty", "lights-out"].includes(v.state) &&
    ["pass", "clamp", "short-circuit"].includes(v.action) &&
    ["allow", "deny"].includes(v.tools) &&
    typeof v.reason === "string" &&
    !Number.isNaN(Date.parse(v.valid_until)) &&
    (v.max_tokens === null || Number.isInteger(v.max_tokens)) &&
    (v.max_age === null || Number.isInteger(v.max_age))

  const keyOf = (scope) => JSON.stringify([scope.sessionID ?? null, scope.purpose ?? null, !!scope.subagent])

  // The verdict for a scope: kept while fresh, else asked. {verdict, cached, trouble}.
  const verdict = async (scope, budget) => {
    if (!root || !token) {
      const why = `not set up (${!root ? "CURFEW_URL" : "CURFEW_TOKEN"}): run \`curfew login URL\``
      return { verdict: policyVerdict("not set up"), cached: false, trouble: `Curfew is ${why}` }
    }
    const key = keyOf(scope)
    const entry = kept.get(key)
    if (entry && now() < entry.expires) return { verdict: entry.verdict, cached: true, entry }
    const body = { subagent: !!scope.subagent }
    if (scope.sessionID) body.session_id = String(scope.sessionID).slice(0, 200)
    if (scope.purpose) body.purpose = scope.purpose
    if (Number.isInteger(budget) && budget >= 1) body.max_tokens = Math.min(budget, MAX_TOKENS)
    const fetchedAt = now() // before the request: a slow answer only shortens freshness
    let why
    try {
      const answer = await fetcher(`${root}/verdict`, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      })
      if (answer.status === 200) {
        const found = await answer.json()
        if (isVerdict(found)) {
          found.origin = "server"
          const age = Math.min(found.max_age ?? MAX_AGE, MAX_AGE)
          const expires = Math.min(Date.parse(found.valid_until) / 1000, fetchedAt + age)
          const made = { verdict: found, expires, recorded: true }
          kept.set(key, made)
          told = null
          return { verdict: found, cached: false, entry: made }
        }
        why = "answered, but not with a verdict"
      } else {
        why = answer.status === 401 || answer.status === 403 ? `refused the token (HTTP ${answer.status})` : `answered HTTP ${answer.status}`
      }
    } catch (error) {
      why = error?.name === "TimeoutError" ? `did not answer within ${TIMEOUT_MS} ms` : "is unreachable"
    }
    return { verdict: policyVerdict(why), cached: false, trouble: `Curfew server ${url} ${why}. Policy ${policy}` }
  }

  const until = (v) => {
    const at = new Date(v.valid_until)
    const pad = (n) => String(n).padStart(2, "0")
    return `${pad(at.getHours())}:${pad(at.getMinutes())}`
  }

  const blockReason = (v) => {
    if (v.origin === "fail_closed") return `Curfew could not be asked and its policy is fail_closed. (${v.reason})`
    const reply = (v.reply || "").trim()
    const said = reply.length > 1 ? ` ${reply}` : ""
    return `Curfew: your AI is ${WORDS[v.state] ?? v.state} until ${until(v)}.${said} (${v.reason})`
  }

  // -- the decisions made from a kept verdict, to the ledger ------------------

  const report = (v, scope, before) => {
    const budget = Number.isInteger(before) ? Math.min(before, MAX_TOKENS) : null
    let after = budget
    if (v.action === "clamp" && !v.dry_run && v.max_tokens !== null) after = budget === null ? v.max_tokens : Math.min(budget, v.max_tokens)
    if (v.action === "short-circuit" && !v.dry_run) after = 0
    const decision = {
      id: `opencode-${Math.random().toString(16).slice(2, 10)}${Date.now().toString(16)}`,
      at: new Date(now() * 1000).toISOString(),
      state: v.state,
      action: v.action,
      reason: v.reason.slice(0, 500),
      exempt: !!v.exempt,
      dry_run: !!v.dry_run,
      budget_before: budget,
      budget_after: after,
    }
    if (scope.sessionID) decision.session_id = String(scope.sessionID).slice(0, 200)
    if (scope.purpose) decision.purpose = scope.purpose
    queue.push(decision)
    if (queue.length > 20000) queue.splice(0, queue.length - 20000)
    if (!flushing) flushing = setTimeout(flush, 1000)
  }

  const flush = async () => {
    flushing = null
    if (!queue.length || now() < retryAt) {
      if (queue.length) flushing = setTimeout(flush, 1000)
      return
    }
    const batch = queue.slice(0, 200)
    let status = 0
    try {
      const answer = await fetcher(`${root}/decisions`, {
        method: "POST",
        headers,
        body: JSON.stringify({ decisions: batch }),
        signal: AbortSignal.timeout(5000),
      })
      status = answer.status
    } catch {}
    if (status === 0 || status === 429 || status >= 500) {
      retryAt = now() + 30 // kept, the same ids: stored once when sent again
    } else {
      queue.splice(0, batch.length) // taken, or refused for good
    }
    if (queue.length) flushing = setTimeout(flush, 1000)
  }

  const scopeOf = (sessionID, agent) => ({
    sessionID,
    subagent: subagents.has(sessionID),
    purpose: HELPERS.has(agent) ? agent : null,
  })

  return {
    event: async ({ event }) => {
      const info = event?.properties?.info
      if ((event?.type === "session.created" || event?.type === "session.updated") && info?.parentID) {
        subagents.add(info.id)
      }
    },

    "chat.params": async (input, output) => {
      const scope = scopeOf(input.sessionID, input.agent)
      const before = output.maxOutputTokens
      const asked = await verdict(scope, before)
      const v = asked.verdict
      if (asked.trouble) await tell(asked.trouble)
      if (asked.cached) {
        // One decision per model call: the first call after a fresh request
        // was recorded by the server; every later one is reported.
        if (asked.entry.recorded) asked.entry.recorded = false
        else report(v, scope, before)
      } else if (asked.entry) {
        asked.entry.recorded = false
      }
      if (v.action === "short-circuit") throw new Error(blockReason(v))
      if (v.max_tokens !== null && v.max_tokens !== undefined) {
        output.maxOutputTokens = Number.isInteger(before) ? Math.min(before, v.max_tokens) : v.max_tokens
      }
    },

    "experimental.chat.system.transform": async (input, output) => {
      const asked = await verdict(scopeOf(input.sessionID, null))
      const persona = asked.verdict.persona
      if (persona && Array.isArray(output.system) && !output.system.includes(persona)) output.system.push(persona)
    },

    "tool.execute.before": async (input) => {
      const asked = await verdict(scopeOf(input.sessionID, null))
      const v = asked.verdict
      if (v.action === "short-circuit") throw new Error(blockReason(v))
      if (v.tools === "deny") throw new Error(`Curfew: no tools while your AI is ${WORDS[v.state] ?? v.state} (${v.reason}).`)
    },

    dispose: async () => {
      retryAt = 0
      if (flushing) clearTimeout(flushing)
      await flush()
      if (flushing) clearTimeout(flushing)
      flushing = null
    },
  }
}
