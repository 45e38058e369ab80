/**
 * @module test/cli/gateway – the built `model-gateway` bin (package.json `bin`) as an operator runs
 * it: --help and mistakes start nothing (exit 0 / 2), --check prints what a config would serve
 * and exits 0, or exits 1 with the very message start-up prints for the same config, and creates
 * no ledger file; print-config --default is YAML that checks clean; --config serves that file.
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parse } from 'yaml'
import { embeddedDefault } from '../../core/config/default-config.ts'

// Each run is a fresh Node process loading the whole gateway: on two busy cores the file needs more than the default.
t.setTimeout(300_000)

const PKG = JSON.parse(readFileSync(resolve('package.json'), 'utf8')) as { bin: Record<string, string>, scripts: Record<string, string> }
const BIN = resolve(PKG.bin['model-gateway'] ?? 'missing')
const DEMO = 'sk-gw-demo-cli-test-0123456789'
const ADMIN = 'adm-cli-test-0123456789abcdef'
/** The environment without anything of the developer's that would change which config loads. */
const CLEAN = { ...process.env, GATEWAY_CONFIG: '', GATEWAY_DEMO_KEY: '', GATEWAY_ADMIN_KEY: '', GW_ADMIN_KEY: '', PORT: '', HOST: '', ADMIN_PORT: '', GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES: '' }

function dir (t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'gw-cli-'))
  t.teardown(() => rmSync(d, { recursive: true, force: true }))
  return d
}

interface Ran { status: number | null, stdout: string, stderr: string }

/** Runs the bin to its end in `cwd` (a gateway it wrongly started would be killed at the timeout: status null). */
function run (cwd: string, args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return new Promise(resolve => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...CLEAN, ...env }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', d => { stdout += d })
    child.stderr.setEncoding('utf8').on('data', d => { stderr += d })
    child.on('close', status => resolve({ status, stdout, stderr }))
  })
}

const GOOD = (ledgerPath: string): string => `
server: { port: 0 }
admin: { host: 127.0.0.1, port: 9181, keys: [{ id: ops, key: "\${ADMIN_KEY}" }] }
stores: { ledger: { backend: sqlite, path: ${JSON.stringify(ledgerPath)} } }
providers:
  - { name: echo, adapter: echo, config: { protocol: chat } }
  - name: azure
    adapter: azure-openai
    config: { resource: my-res, entra: { tenantId: t1, clientId: c1, clientSecret: "\${AZURE_SECRET}" } }
models:
  - { id: echo/one, deployments: [{ provider: echo, model: one }] }
  - { id: azure/gpt, deployments: [{ provider: azure, model: gpt-4o-prod }, { provider: echo, model: fallback, priority: 1 }] }
pipeline:
  - { plugin: ip-limit, config: { limit: 10, windowMs: 60000 } }
  - { plugin: auth, config: { keys: [{ key: "${DEMO}", id: k1, organization: acme }] } }
  - { plugin: balance, routes: [chat], config: { enforce: false } }
`

t.test('the bins are declared in package.json and built with a shebang', async t => {
  for (const [name, path] of Object.entries(PKG.bin)) {
    t.ok(existsSync(resolve(path)), `${name}: ${path} is built (npm run build)`)
    t.match(readFileSync(resolve(path), 'utf8').split('\n')[0], /^#!\/usr\/bin\/env node$/, `${name} starts with a shebang`)
  }
  t.same(Object.keys(PKG.bin).sort(), ['model-gateway', 'model-gateway-admin'])
  t.notMatch(PKG.scripts.admin, /build/, 'npm run admin runs the built code, without rebuilding')
})

t.test('--help prints the usage, exits 0 and starts nothing', async t => {
  const cwd = dir(t)
  for (const [flag, r] of await Promise.all(['--help', '-h'].map(async f => [f, await run(cwd, [f])] as const))) {
    t.equal(r.status, 0, `${flag}: exit 0 (${r.stderr})`)
    t.match(r.stdout, /^Usage: model-gateway \[--config FILE\] \[--check\]/)
    t.match(r.stdout, /--check/)
    t.match(r.stdout, /print-config --default/)
    t.equal(r.stderr, '')
  }
  t.same(readdirSync(cwd), [], 'no ./data, no ledger file')
})

t.test('a mistake on the command line: the usage on stderr, exit 2, nothing started', async t => {
  const cwd = dir(t)
  const cases: Array<[string[], RegExp]> = [
    [['--bogus'], /gateway: unknown option --bogus/],
    [['--port', '9'], /gateway: unknown option --port/],
    [['serve'], /gateway: unknown command "serve"/],
    [['--config'], /gateway: option --config needs a file/],
    [['--config', 'a.yaml', '--config', 'b.yaml'], /option --config given twice/],
    [['print-config'], /print-config needs --default/],
    [['--default'], /--default goes with print-config/],
    [['print-config', '--default', '--check'], /takes no other option/],
  ]
  const results = await Promise.all(cases.map(([args]) => run(cwd, args)))
  for (const [i, [args, re]] of cases.entries()) {
    const r = results[i]!
    t.equal(r.status, 2, `${args.join(' ')}: exit 2`)
    t.match(r.stderr, re, args.join(' '))
    t.match(r.stderr, /Usage: model-gateway/, 'with the usage')
    t.equal(r.stdout, '')
  }
  t.same(readdirSync(cwd), [])
})

t.test('--check on the embedded default: what it would serve, exit 0, no ledger file', async t => {
  const cwd = dir(t)
  const r = await run(cwd, ['--check'])
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout, /^config ok: embedded default\n/)
  t.match(r.stdout, /listeners\n {2}gateway +http:\/\/127\.0\.0\.1:8080\n {2}admin +http:\/\/127\.0\.0\.1:8081\n/)
  t.match(r.stdout, /providers\n {2}echo +echo +chat\n {2}echo-messages +echo +messages\n/)
  t.match(r.stdout, /models\n {2}echo\/echo-1 +echo:echo-1\n/)
  t.match(r.stdout, /\n {2}ip-limit +connect +all routes\n/)
  t.match(r.stdout, /\n {2}balance +admit +chat, messages, responses, count_tokens\n/)
  t.match(r.stdout, /stores\n {2}kv +memory\n {2}ledger +sqlite \.\/data\/gateway\.db\n/)
  t.notMatch(r.stdout, /sk-gw-demo|gw-admin-/, 'no key is printed')
  t.same(readdirSync(cwd), [], 'the SQLite file is not created')
})

t.test('--check on a file, named by --config or GATEWAY_CONFIG: the same summary, no ledger file, no listener', async t => {
  const cwd = dir(t)
  const ledger = join(cwd, 'ledger', 'gw.db')
  writeFileSync(join(cwd, 'gw.yaml'), GOOD(ledger))
  const env = { ADMIN_KEY: ADMIN, AZURE_SECRET: 'secret' }
  const r = await run(cwd, ['--check', '--config', 'gw.yaml'], env)
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, [
    `config ok: ${join(cwd, 'gw.yaml')}`,
    'listeners',
    '  gateway  http://127.0.0.1:0',
    '  admin    http://127.0.0.1:9181',
    'providers',
    '  echo   echo          chat',
    '  azure  azure-openai  chat',
    'models',
    '  echo/one   echo:one',
    '  azure/gpt  azure:gpt-4o-prod, echo:fallback',
    'aliases: 0',
    'pipeline',
    '  ip-limit  connect       all routes',
    '  auth      authenticate  chat, messages, responses, count_tokens, models, reserved',
    '  balance   admit         chat',
    'stores',
    '  kv      memory',
    `  ledger  sqlite ${ledger}`,
    '',
  ].join('\n'))
  t.notOk(existsSync(join(cwd, 'ledger')), 'the ledger directory is not even created')
  const [viaEnv, over] = await Promise.all([
    run(cwd, ['--check'], { ...env, GATEWAY_CONFIG: 'gw.yaml' }),
    run(cwd, ['--check', `--config=${join(cwd, 'gw.yaml')}`], { ...env, GATEWAY_CONFIG: 'missing.yaml' }),
  ])
  t.equal(viaEnv.status, 0)
  t.equal(viaEnv.stdout, r.stdout, 'GATEWAY_CONFIG names the same file')
  t.equal(over.status, 0, '--config=FILE, and it wins over GATEWAY_CONFIG')
  t.equal(over.stdout, r.stdout)
})

t.test('--check on a bad config: exit 1 with the message start-up prints for it', async t => {
  const env = { ADMIN_KEY: ADMIN, AZURE_SECRET: 'secret' }
  // [what, file text (undefined: no file), env, the message, also start the gateway on it]
  const cases: Array<[string, ((ledger: string) => string) | undefined, Record<string, string>, RegExp, boolean]> = [
    ['a missing file', undefined, env, /^gateway: Cannot read config file .*missing\.yaml: ENOENT/, false],
    ['a key the schema does not know', l => GOOD(l) + 'colour: blue\n', env, /^gateway: Invalid config in .*bad\.yaml at \/: must NOT have additional properties/, true],
    ['a variable not set', GOOD, { ADMIN_KEY: ADMIN }, /^gateway: Config file .*bad\.yaml at \/providers\/1\/config\/entra\/clientSecret refers to environment variable \$\{AZURE_SECRET\}, which is not set/, false],
    ['an unknown plugin', l => GOOD(l).replace('plugin: balance', 'plugin: balanse'), env, /^gateway: start-up failed: Unknown plugin "balanse" in .*bad\.yaml at \/pipeline\/2\/plugin; known plugins: /, true],
    ['a plugin config its schema refuses', l => GOOD(l).replace('limit: 10,', 'limit: -1,'), env, /^gateway: start-up failed: Invalid config for plugin "ip-limit" in .*bad\.yaml at \/pipeline\/0\/config\/limit/, false],
    ['an adapter refusing its config', l => GOOD(l).replace('entra: {', 'apiKey: k, entra: {'), env, /^gateway: start-up failed: provider azure: set either apiKey or entra\n$/, true],
    ['a model on an unknown provider', l => GOOD(l).replace('provider: echo, model: fallback', 'provider: nowhere, model: fallback'), env, /^gateway: start-up failed: .*nowhere/, false],
  ]
  await Promise.all(cases.map(async ([what, text, caseEnv, re, start]) => {
    const cwd = dir(t)
    const ledger = join(cwd, 'gw.db')
    const file = text === undefined ? 'missing.yaml' : 'bad.yaml'
    if (text !== undefined) writeFileSync(join(cwd, file), text(ledger))
    const checked = await run(cwd, ['--check', '--config', file], caseEnv)
    t.equal(checked.status, 1, `${what}: exit 1`)
    t.match(checked.stderr, re, what)
    t.equal(checked.stdout, '', `${what}: no summary`)
    t.notOk(existsSync(ledger), `${what}: no ledger file`)
    if (!start) return
    // Start-up on the same file fails with the same line (before it listens on anything).
    const started = await run(cwd, ['--config', file], caseEnv)
    t.equal(started.status, 1, `${what}: start-up fails too`)
    t.equal(started.stderr, checked.stderr, `${what}: with the same message`)
  }))
})

t.test('print-config --default: the embedded default as YAML, keys as ${...}; it checks clean with them set', async t => {
  const cwd = dir(t)
  const r = await run(cwd, ['print-config', '--default'])
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout, /^# model-gateway: the embedded default config/)
  t.same(parse(r.stdout), embeddedDefault('${GATEWAY_DEMO_KEY}', '${GATEWAY_ADMIN_KEY}'), 'the same document')
  writeFileSync(join(cwd, 'gateway.yaml'), r.stdout)
  const [checked, unset] = await Promise.all([
    run(cwd, ['--check', '--config', 'gateway.yaml'], { GATEWAY_DEMO_KEY: DEMO, GATEWAY_ADMIN_KEY: ADMIN }),
    run(cwd, ['--check', '--config', 'gateway.yaml']),
  ])
  t.equal(checked.status, 0, checked.stderr)
  t.match(checked.stdout, /models\n {2}echo\/echo-1 +echo:echo-1\n {2}echo\/echo-text +echo:echo-text\n {2}msgvendor\/echo-1 +echo-messages:echo-1\n/)
  t.equal(unset.status, 1)
  t.match(unset.stderr, /refers to environment variable \$\{GATEWAY_ADMIN_KEY\}, which is not set/)
  t.same(readdirSync(cwd).sort(), ['gateway.yaml'])
})

t.test('--config FILE serves that file (as GATEWAY_CONFIG would) until SIGTERM', async t => {
  const cwd = dir(t)
  writeFileSync(join(cwd, 'gw.yaml'), `
server: { port: 0 }
stores: { ledger: { backend: sqlite, path: ${JSON.stringify(join(cwd, 'gw.db'))}, spool: { path: ${JSON.stringify(join(cwd, 'spool.jsonl'))} } } }
providers: [{ name: echo, adapter: echo, config: { protocol: chat } }]
models: [{ id: echo/one, deployments: [{ provider: echo, model: one }] }]
pipeline: [{ plugin: auth, config: { keys: [{ key: "${DEMO}", id: k1 }] } }]
`)
  const child = spawn(process.execPath, [BIN, '--config', 'gw.yaml'], { cwd, env: CLEAN, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  child.stdout.on('data', d => { out += d })
  child.stderr.on('data', d => { out += d })
  const deadline = Date.now() + 20_000
  while (!/"msg":"gateway listening"/.test(out) && Date.now() < deadline && child.exitCode === null) await new Promise(r => setTimeout(r, 50))
  const line = out.split('\n').find(l => l.includes('"msg":"gateway listening"'))
  t.ok(line, `listening (${out.slice(0, 300)})`)
  const logged = JSON.parse(line ?? '{}') as { address?: string, config?: string }
  t.equal(logged.config, join(cwd, 'gw.yaml'), 'on the --config file')
  const chat = await fetch(`${logged.address}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${DEMO}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'echo/one', messages: [{ role: 'user', content: 'Hello' }] }),
  })
  t.equal(chat.status, 200)
  const exited = new Promise<number | null>(resolve => child.once('exit', code => resolve(code)))
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'SIGTERM: exit 0')
})
