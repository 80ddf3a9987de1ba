// The OpenCode plugin's logic, with a fake Curfew server (no OpenCode, no network):
//   node --test integrations/opencode/
// (client/tests/test_opencode_plugin.py runs it in the client's suite.)

import assert from "node:assert/strict"
import { test } from "node:test"

import { CurfewPlugin } from "./curfew.js"

const UNTIL = Date.parse("2026-09-29T23:00:00+00:00") / 1000
const BASE = {
  schedule_state: "on-duty",
  reply: null,
  stream: null,
  max_tokens: null,
  persona: null,
  tools: "allow",
  reasoning_effort: null,
  progress: null,
  peak: false,
  exempt: false,
  dry_run: false,
  valid_until: "2026-09-29T23:00:00+00:00",
  max_age: 60,
  at: "2026-09-29T17:00:00+00:00",
  budget: null,
  override: null,
  override_until: null,
  debug_at: null,
  would: null,
}
const ASLEEP = { ...BASE, state: "lights-out", action: "short-circuit", reply: "Zzz… back at seven.", tools: "deny", reason: "2026-09-30 01:00 · lights out" }
const SLEEPY = { ...BASE, state: "winding", action: "clamp", max_tokens: 560, persona: "You are tired; keep answers short.", reason: "2026-09-30 00:30 · winding" }
const NO_TOOLS = { ...SLEEPY, tools: "deny" }
const WORKING = { ...BASE, state: "on-duty", action: "pass", reason: "2026-09-29 21:00 · on duty" }

function server(verdict, { status = 200, down = false } = {}) {
  const fake = { verdict, status, down, asked: [], reports: [], headers: [] }
  fake.fetch = async (url, init) => {
    fake.headers.push(init.headers)
    if (fake.down) throw new TypeError("fetch failed")
    const body = JSON.parse(init.body)
    if (url.endsWith("/api/v1/decisions")) {
      fake.reports.push(...body.decisions)
      return new Response(JSON.stringify({ received: body.decisions.length, stored: body.decisions.length }), { status: 200 })
    }
    assert.equal(url, "http://curfew.test/api/v1/verdict")
    fake.asked.push(body)
    if (fake.status !== 200) return new Response("<title>Server Error</title>", { status: fake.status })
    return new Response(JSON.stringify(fake.verdict), { status: 200 })
  }
  return fake
}

async function plugin(fake, { at = UNTIL - 3600, env = {}, toasts = [] } = {}) {
  const clock = { at }
  const client = { tui: { showToast: async ({ body }) => toasts.push(body.message) } }
  const hooks = await CurfewPlugin(
    { client },
    {
      env: { CURFEW_URL: "http://curfew.test", CURFEW_TOKEN: "cfw_plugin_token", HOME: "/nonexistent", ...env },
      fetch: fake.fetch,
      now: () => clock.at,
      headless: false,
    },
  )
  return { hooks, clock, toasts }
}

const params = (agent = "build", maxOutputTokens = 4096) => [
  { sessionID: "ses_1", agent, model: {}, provider: {}, message: {} },
  { temperature: 0, topP: 1, topK: 0, maxOutputTokens, options: {} },
]

test("off duty or asleep, a model call is stopped saying why and until when", async () => {
  const fake = server(ASLEEP)
  const { hooks } = await plugin(fake)
  const [input, output] = params()
  await assert.rejects(hooks["chat.params"](input, output), /Curfew: your AI is asleep until \d\d:\d\d\. Zzz… back at seven\./)
  assert.deepEqual(fake.asked, [{ subagent: false, session_id: "ses_1", max_tokens: 4096 }])
  assert.equal(fake.headers[0].Authorization, "Bearer cfw_plugin_token")
})

test("sleepy, the budget is clamped, never raised, and the persona added", async () => {
  const fake = server(SLEEPY)
  const { hooks } = await plugin(fake)
  const system = { system: ["You are OpenCode."] }
  await hooks["experimental.chat.system.transform"]({ sessionID: "ses_1", model: {} }, system)
  assert.deepEqual(system.system, ["You are OpenCode.", "You are tired; keep answers short."])
  const [input, output] = params()
  await hooks["chat.params"](input, output)
  assert.equal(output.maxOutputTokens, 560)
  const [, small] = params("build", 100)
  await hooks["chat.params"](input, small)
  assert.equal(small.maxOutputTokens, 100)
  const [, none] = params("build", undefined)
  await hooks["chat.params"](input, none)
  assert.equal(none.maxOutputTokens, 560)
})

test("working, nothing is changed", async () => {
  const { hooks } = await plugin(server(WORKING))
  const [input, output] = params()
  await hooks["chat.params"](input, output)
  assert.equal(output.maxOutputTokens, 4096)
  const system = { system: ["s"] }
  await hooks["experimental.chat.system.transform"]({ sessionID: "ses_1", model: {} }, system)
  assert.deepEqual(system.system, ["s"])
  await hooks["tool.execute.before"]({ tool: "bash", sessionID: "ses_1", callID: "c" }, { args: {} })
})

test("a tool call is stopped when the verdict denies tools", async () => {
  const { hooks } = await plugin(server(NO_TOOLS))
  await assert.rejects(
    hooks["tool.execute.before"]({ tool: "bash", sessionID: "ses_1", callID: "c" }, { args: {} }),
    /no tools while your AI is sleepy/,
  )
  const allowed = await plugin(server(SLEEPY))
  await allowed.hooks["tool.execute.before"]({ tool: "bash", sessionID: "ses_1", callID: "c" }, { args: {} })
})

test("OpenCode's helper agents ask with their purpose, subagent sessions as subagents", async () => {
  const fake = server(WORKING)
  const { hooks } = await plugin(fake)
  await hooks["chat.params"](...params("title"))
  await hooks.event({ event: { type: "session.created", properties: { info: { id: "ses_child", parentID: "ses_1" } } } })
  const [input, output] = params()
  await hooks["chat.params"]({ ...input, sessionID: "ses_child" }, output)
  assert.deepEqual(
    fake.asked.map((body) => [body.session_id, body.purpose ?? null, body.subagent]),
    [
      ["ses_1", "title", false],
      ["ses_child", null, true],
    ],
  )
})

test("a kept verdict answers until max_age, and its model calls are reported once each", async () => {
  const fake = server(SLEEPY)
  const { hooks, clock } = await plugin(fake)
  for (let n = 0; n < 3; n++) {
    await hooks["experimental.chat.system.transform"]({ sessionID: "ses_1", model: {} }, { system: [] })
    await hooks["chat.params"](...params())
    clock.at += 10
  }
  assert.equal(fake.asked.length, 1) // the server recorded the first call itself
  await hooks.dispose()
  assert.equal(fake.reports.length, 2)
  for (const report of fake.reports) {
    assert.match(report.id, /^opencode-[0-9a-f]+$/)
    assert.deepEqual(
      [report.state, report.action, report.session_id, report.budget_before, report.budget_after],
      ["winding", "clamp", "ses_1", 4096, 560],
    )
  }
  clock.at += 60 // past max_age
  await hooks["chat.params"](...params())
  assert.equal(fake.asked.length, 2)
})

test("a kept verdict is never used at or past its valid_until", async () => {
  const fake = server(ASLEEP)
  const { hooks, clock } = await plugin(fake, { at: UNTIL - 30 })
  await assert.rejects(hooks["chat.params"](...params()))
  clock.at = UNTIL - 0.001
  await assert.rejects(hooks["chat.params"](...params()))
  assert.equal(fake.asked.length, 1)
  fake.verdict = WORKING
  clock.at = UNTIL
  await hooks["chat.params"](...params())
  assert.equal(fake.asked.length, 2)
})

test("an outage passes by the default policy and says so, once", async () => {
  const fake = server(ASLEEP, { down: true })
  const toasts = []
  const { hooks } = await plugin(fake, { toasts })
  const [input, output] = params()
  await hooks["chat.params"](input, output)
  await hooks["chat.params"](...params())
  assert.equal(output.maxOutputTokens, 4096)
  assert.equal(toasts.length, 1)
  assert.match(toasts[0], /Curfew server http:\/\/curfew\.test is unreachable\. Policy fail_open/)
  assert.ok(!toasts[0].includes("cfw_plugin_token"))
})

test("an outage with fail_closed stops the call and says so", async () => {
  const toasts = []
  const { hooks } = await plugin(server(WORKING, { status: 500 }), { env: { CURFEW_POLICY: "fail_closed" }, toasts })
  await assert.rejects(hooks["chat.params"](...params()), /policy is fail_closed/)
  assert.match(toasts[0], /answered HTTP 500\. Policy fail_closed/)
})

test("not set up is said, not silent", async () => {
  const toasts = []
  const { hooks } = await plugin(server(ASLEEP), { env: { CURFEW_URL: "" }, toasts })
  await hooks["chat.params"](...params())
  assert.match(toasts[0], /curfew login URL/)
})

test("the file exports only the plugin (OpenCode runs every exported function)", async () => {
  const module = await import("./curfew.js")
  assert.deepEqual(Object.keys(module), ["CurfewPlugin"])
})

test("headless (opencode run), the outage is said on stderr", async () => {
  const said = []
  const original = console.error
  console.error = (line) => said.push(line)
  try {
    const fake = server(WORKING, { down: true })
    const hooks = await CurfewPlugin(
      {},
      { env: { CURFEW_URL: "http://curfew.test", CURFEW_TOKEN: "cfw_plugin_token" }, fetch: fake.fetch, headless: true },
    )
    await hooks["chat.params"](...params())
  } finally {
    console.error = original
  }
  assert.equal(said.length, 1)
  assert.match(said[0], /unreachable\. Policy fail_open/)
})
