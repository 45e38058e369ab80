// The `node` dev dependency (the Node 24 that npm scripts run on) unpacks a whole Node release:
// the binary and 67 MB of C headers under include/. Nothing here compiles against them (native
// addons come prebuilt; node-gyp, when it runs, takes its headers from its own cache or nodedir),
// so they are removed after each install to keep the quick start light. Runs as the root
// project's `dependencies` lifecycle script, which npm runs for the project itself only, never
// for a consumer of the packed library.
import { readdirSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const nested = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'node', 'node_modules')
let platforms = []
try { platforms = readdirSync(nested).filter((name) => name.startsWith('node-')) } catch {}
for (const name of platforms) rmSync(join(nested, name, 'include'), { recursive: true, force: true })
