#!/usr/bin/env node
/**
 * @module scripts/test-clients-latest – runs the real-client tests against the newest release of
 * each client on the npm registry, so a client release that breaks the gateway shows the day it ships.
 *
 * The project is left untouched: its files (tracked and untracked, not ignored ones) are copied to
 * a temporary directory, the clients' devDependencies there are set to the registry's `latest`
 * versions (`npm view <pkg> version`), `npm install` runs there (the lock file is copied and updated
 * there, from npm's cache where it can), then the build, the type check (the wire-shape tests check
 * the gateway's types against the SDKs') and the real-client test files run in that copy.
 *
 * Usage: npm run test:clients-latest [-- --keep] [-- test files...]
 *   --keep   keep the temporary copy (its path is printed) to look into a failure
 * Exit status: tap's (0 when every test passed).
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** The real clients the suite drives, as the project's devDependencies name them. */
export const CLIENTS = [
  '@openai/codex',
  '@anthropic-ai/claude-code',
  '@openai/agents',
  'ai',
  '@ai-sdk/openai',
  '@ai-sdk/anthropic',
  '@langchain/openai',
  '@langchain/anthropic',
  '@langchain/core',
  'openai',
  '@anthropic-ai/sdk',
]

/** The test files that drive those clients. */
export const CLIENT_TESTS = [
  'test/e2e/real-clients.test.ts',
  'test/e2e/claude-code-thinking.test.ts',
  'test/e2e/codex-cli.test.ts',
  'test/e2e/codex-custom-tools.test.ts',
  'test/e2e/codex-reasoning.test.ts',
  'test/e2e/affinity-clients.test.ts',
  'test/e2e/claude-code-bedrock.test.ts',
  'test/e2e/claude-code-vertex.test.ts',
  'test/e2e/agents-sdk.test.ts',
  'test/e2e/openai-sdk.test.ts',
  'test/e2e/anthropic-sdk.test.ts',
  'test/e2e/responses-sdk.test.ts',
  'test/e2e/count-tokens-sdk.test.ts',
  'test/e2e/agent-routes.test.ts',
]

const args = process.argv.slice(2)
const keep = args.includes('--keep')
const files = args.filter(a => !a.startsWith('--'))
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

function run (cmd, argv, cwd) {
  console.log(`$ ${cmd} ${argv.join(' ')}`)
  const r = spawnSync(cmd, argv, { cwd, stdio: 'inherit' })
  if (r.error) throw r.error
  return r.status ?? 1
}

// The clients are the test package's dependencies (test/package.json), apart from the gateway's own.
const pkg = JSON.parse(readFileSync(join(root, 'test', 'package.json'), 'utf8'))
const latest = {}
for (const name of CLIENTS) {
  latest[name] = execFileSync(npm, ['view', name, 'version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
}

const dir = mkdtempSync(join(tmpdir(), 'gw-clients-latest-'))
let status = 1
try {
  // The working tree as git sees it: tracked and untracked files, without node_modules, dist and other ignored ones.
  const list = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' })
  for (const f of list.split('\0').filter(Boolean)) {
    try {
      mkdirSync(dirname(join(dir, f)), { recursive: true })
      cpSync(join(root, f), join(dir, f))
    } catch (err) {
      if (err.code !== 'ENOENT') throw err // deleted in the working tree, not yet in the index
    }
  }
  console.log(`  ${'client'.padEnd(26)} ${'pinned'.padEnd(12)} → latest`)
  for (const name of CLIENTS) {
    console.log(`  ${name.padEnd(26)} ${(pkg.dependencies[name] ?? '-').padEnd(12)} → ${latest[name]}`)
    pkg.dependencies[name] = latest[name]
  }
  writeFileSync(join(dir, 'test', 'package.json'), JSON.stringify(pkg, null, 2) + '\n')
  status = run(npm, ['install', '--no-audit', '--no-fund'], dir)
  if (status === 0) status = run(npm, ['run', '-s', 'test:install'], dir)
  if (status === 0) status = run(npm, ['run', '-s', 'build'], dir)
  if (status === 0) status = run(npm, ['run', '-s', 'typecheck'], dir)
  if (status === 0) status = run(npm, ['exec', '--', 'tap', '--disable-coverage', ...(files.length ? files : CLIENT_TESTS)], dir)
} finally {
  if (keep) console.log(`kept: ${dir}`)
  else rmSync(dir, { recursive: true, force: true })
}
console.log(status === 0 ? 'the real-client tests pass on the latest releases' : `FAILED (exit ${status}) on the latest releases`)
process.exit(status)
