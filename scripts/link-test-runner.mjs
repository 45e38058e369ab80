// tap, the test runner, is a test-only package (test/package.json) so that the gateway's own
// `npm install` stays light. Its runner imports `tap` from the project root, and `npx tap` looks in
// the root's node_modules/.bin: both get a link into the test package. Run by `npm run test:install`
// (and so by `npm test`); a later root `npm install` may remove the links, the next test:install
// puts them back.
import { existsSync, lstatSync, mkdirSync, rmSync, symlinkSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const links = [
  [join(root, 'node_modules', 'tap'), join(root, 'test', 'node_modules', 'tap')],
  [join(root, 'node_modules', '.bin', 'tap'), join(root, 'test', 'node_modules', '.bin', 'tap')],
]
for (const [link, target] of links) {
  if (!existsSync(target)) {
    console.error(`link-test-runner: ${relative(root, target)} is missing (run npm run test:install)`)
    process.exit(1)
  }
  mkdirSync(dirname(link), { recursive: true })
  // lstat, not exists: a dangling link left by an earlier layout is replaced too.
  try { lstatSync(link); rmSync(link, { recursive: true, force: true }) } catch {}
  symlinkSync(relative(dirname(link), target), link)
}
