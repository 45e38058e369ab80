/**
 * @module test/helpers/agents – runs the real coding agents, headless, against a listening gateway:
 * Claude Code 2.1 (its native executable) in a temporary HOME, and Codex CLI (`codex exec`) with a
 * temporary CODEX_HOME whose config.toml names the gateway as a custom model provider
 * (`wire_api = "responses"`). Update checks, telemetry and analytics are off; `offline` points every
 * HTTP(S) proxy variable at a closed local port (only loopback is exempt), so a call to any other
 * host fails instead of reaching the internet.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Test } from 'tap'
import { AUTH_ENTRY, buildTestApp, listen, TEST_KEY } from './build-test-app.ts'
import { outcomeSpy } from '../../testing.ts'

// Claude Code 2.1 ships a native executable (its postinstall links the platform's binary here).
export const CLAUDE = resolve('test/node_modules/@anthropic-ai/claude-code/bin/claude.exe')
export const CODEX = resolve('test/node_modules/.bin/codex')

/** A finished agent run: its exit code (null when killed) and what it wrote. */
export interface AgentRun { code: number | null, out: string, err: string }

/** Spawns `cmd` and collects its output; a run still going after `timeoutMs` is killed. */
function run (cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd: string, timeoutMs: number): Promise<AgentRun> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', d => { out += d })
    child.stderr.on('data', d => { err += d })
    // A hung run fails the test instead of holding the suite (not a speed assertion).
    const guard = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('error', reject)
    child.on('close', code => { clearTimeout(guard); resolvePromise({ code, out, err }) })
  })
}

/** `env` with every HTTP(S) proxy variable on a closed local port, loopback exempt. */
export function offline (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  for (const v of ['HTTPS_PROXY', 'HTTP_PROXY', 'ALL_PROXY', 'https_proxy', 'http_proxy', 'all_proxy']) env[v] = 'http://127.0.0.1:9'
  env.NO_PROXY = env.no_proxy = '127.0.0.1,localhost'
  return env
}

export interface ClaudeOptions {
  /** Its HOME and working directory (a new temporary directory by default). */
  home?: string
  /** Proxy variables on a closed port (see `offline`). */
  offline?: boolean
  timeoutMs?: number
}

/**
 * Runs Claude Code with `args`; `env` (ANTHROPIC_BASE_URL, a key...) is added to PATH, HOME and the
 * switches that turn off its update checks, telemetry and other non-essential traffic.
 */
export function runClaude (args: string[], env: Record<string, string>, opts: ClaudeOptions = {}): Promise<AgentRun> {
  const home = opts.home ?? mkdtempSync(join(tmpdir(), 'gw-claude-'))
  const all: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: home, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', ...env }
  const done = run(CLAUDE, args, opts.offline === true ? offline(all) : all, home, opts.timeoutMs ?? 60_000)
  // A home made here is this run's alone: removed once Claude Code has exited.
  return opts.home !== undefined ? done : done.finally(() => rmSync(home, { recursive: true, force: true }))
}

/** Claude Code's `--output-format json` result (or stream-json's last line), parsed. */
export function claudeResult (out: string): any {
  try { return JSON.parse(out.trim().split('\n').at(-1) ?? '') } catch { return undefined }
}

export interface CodexSetup {
  /** The environment to run Codex in: HOME, CODEX_HOME, the gateway key, offline. */
  env: NodeJS.ProcessEnv
  /** An empty working directory. */
  work: string
}

/**
 * Makes `dir`/home a CODEX_HOME whose config.toml makes the gateway at `url` the model provider
 * `gw` (key in GW_TEST_KEY, no retries, update checks and analytics off), optionally with a
 * `model_reasoning_effort`, and `dir`/work an empty working directory.
 */
export function codexSetup (url: string, dir: string, opts: { reasoningEffort?: string } = {}): CodexSetup {
  const home = join(dir, 'home')
  const work = join(dir, 'work')
  mkdirSync(home)
  mkdirSync(work)
  writeFileSync(join(home, 'config.toml'), [
    'model_provider = "gw"',
    ...(opts.reasoningEffort ? [`model_reasoning_effort = "${opts.reasoningEffort}"`] : []),
    'check_for_update_on_startup = false',
    '[model_providers.gw]',
    'name = "model-gateway"',
    `base_url = "${url}/v1"`,
    'env_key = "GW_TEST_KEY"',
    'wire_api = "responses"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '[analytics]',
    'enabled = false',
    '',
  ].join('\n'))
  return { env: offline({ PATH: process.env.PATH, HOME: dir, CODEX_HOME: home, GW_TEST_KEY: TEST_KEY }), work }
}

/** Runs Codex CLI with `args` in `work`, under the `env` of `codexSetup`. */
export function runCodex (args: string[], env: NodeJS.ProcessEnv, work: string): Promise<AgentRun> {
  return run(CODEX, args, env, work, 120_000)
}

/** `codex exec`, non-interactive, with no sandbox and JSON events on stdout. */
export const CODEX_EXEC = ['exec', '--skip-git-repo-check', '--ephemeral', '--sandbox', 'danger-full-access', '--json']
/** The JSON events of a `codex exec --json` run. */
export const codexEvents = (r: AgentRun): any[] => r.out.split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l))
/** The text of the last agent message among `events`. */
export const lastMessage = (events: any[]): string | undefined => events.filter(e => e.type === 'item.completed' && e.item?.type === 'agent_message').at(-1)?.item?.text
/** Why a Codex test is skipped: the binary is missing (never on CI, where that is a failure). */
export const codexSkip: string | false = !existsSync(CODEX) && !process.env.CI ? `the Codex CLI binary is not installed (${CODEX})` : false

/** The parameters Claude Code sends: a standard parameter a model does not list is dropped, so a model it calls lists them (thinking included). */
const CLAUDE_PARAMETERS = ['max_tokens', 'tools', 'tool_choice', 'stream', 'stop_sequences', 'temperature', 'thinking', 'metadata']

/**
 * A listening gateway (auth, an outcome spy) serving `model` from one messages upstream at
 * `upstreamOrigin` (anthropic-compatible, upstream model `claude-up`), for Claude Code to call;
 * closed when `t` ends, the upstream with it (`closeUpstream`).
 */
export async function claudeCodeGateway (t: Test, upstreamOrigin: string, model: string, closeUpstream: () => Promise<void>): Promise<{ url: string, spy: ReturnType<typeof outcomeSpy> }> {
  const spy = outcomeSpy()
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY, { plugin: 'outcome-spy' }],
    plugins: [spy.plugin],
    doc: {
      providers: [{ name: 'anthropic', adapter: 'anthropic-compatible', config: { baseUrl: upstreamOrigin, apiKey: 'sk-ant-upstream' } }],
      models: [{ id: model, supported_parameters: CLAUDE_PARAMETERS, deployments: [{ provider: 'anthropic', model: 'claude-up' }] }],
    },
  })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await closeUpstream() })
  return { url, spy }
}
