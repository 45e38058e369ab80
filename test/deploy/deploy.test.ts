/**
 * @module test/deploy/deploy – the deployment files (Dockerfile, compose.yaml, deploy/) checked by what
 * runs here: no container runtime can pull or run images on these machines, so the image is checked
 * by its text, and the config every recipe uses is served for real by the built gateway against the
 * real Redis and PostgreSQL, as a replica of the compose or Kubernetes deployment would serve it.
 */
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseAllDocuments, parse } from 'yaml'
import { databaseUrl, randomId, redisUrl } from '../helpers/backends.ts'

const SERVER = resolve('dist/server.js')
const CONFIG = resolve('deploy/gateway.yaml')
const ADMIN_KEY = 'deploy-test-admin-key-0123456789'

interface Probe { httpGet: { path: string } }
interface Container { livenessProbe: Probe, readinessProbe: Probe, envFrom: unknown }
interface K8sDoc {
  kind: string
  data?: Record<string, string>
  stringData?: Record<string, string>
  spec?: {
    replicas?: number
    ports?: Array<{ targetPort: string }>
    template?: { spec: { securityContext: { runAsNonRoot: boolean }, containers: Container[] } }
  }
}
interface ComposeService { volumes: string[], environment: Record<string, string>, ports: string[] }

/** The `${NAME}` variables a config needs from the environment (those without a `:-` default). */
function requiredVariables (text: string): string[] {
  return [...text.matchAll(/\$\{([A-Z_][A-Z0-9_]*)\}/g)].map(m => m[1] as string)
}

t.test('Dockerfile: two stages, an unprivileged user, a data volume and a /readyz health check', async t => {
  const text = readFileSync('Dockerfile', 'utf8')
  const from = text.split('\n').filter(l => /^FROM\s/.test(l))
  t.equal(from.length, 2, 'a build stage and a runtime stage')
  t.match(text, /npm ci --omit=dev/, 'the runtime stage installs runtime dependencies only')
  t.match(text, /COPY --from=build \/src\/dist dist/, 'and takes the built code from the build stage')
  t.match(text, /^USER node$/m, 'runs as the image\'s unprivileged user')
  t.match(text, /^VOLUME \["\/app\/data"\]$/m, 'the embedded ledger\'s directory is a volume')
  t.match(text, /^HEALTHCHECK [\s\S]*\/readyz/m, 'the health check asks /readyz')
  t.match(text, /CMD \["node", "--max-semi-space-size=8", "dist\/server\.js"\]/, 'starts as npm start does')
  // Every path the build stage copies exists in the repository (a renamed directory breaks the build).
  for (const m of text.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
    for (const path of (m[1] as string).split(/\s+/)) t.ok(existsSync(path), `COPY source ${path} exists`)
  }
  const ignored = readFileSync('.dockerignore', 'utf8').split('\n')
  t.ok(ignored.includes('node_modules') && ignored.includes('dist'), 'the build context leaves out node_modules and dist')
})

t.test('compose.yaml: the gateway with Redis and PostgreSQL, on deploy/gateway.yaml', async t => {
  const compose = parse(readFileSync('compose.yaml', 'utf8')) as { services: Record<string, ComposeService> }
  t.same(Object.keys(compose.services).sort(), ['gateway', 'postgres', 'redis'])
  const gw = compose.services.gateway!
  t.ok(gw.volumes.includes('./deploy/gateway.yaml:/etc/model-gateway/gateway.yaml:ro'), 'mounts the scale-out config')
  t.equal(gw.environment.GATEWAY_CONFIG, '/etc/model-gateway/gateway.yaml')
  t.match(gw.environment.REDIS_URL, /^redis:\/\/redis:6379/)
  t.match(gw.environment.DATABASE_URL, /^postgres:\/\/\w+:\w+@postgres:5432\//)
  t.ok(gw.ports.includes('127.0.0.1:8081:8081'), 'the admin port is published on loopback only')
  for (const v of requiredVariables(readFileSync(CONFIG, 'utf8'))) t.ok(v in gw.environment, `compose sets ${v}`)
})

t.test('deploy/kubernetes.yaml: probes, a Secret for keys, the same config as deploy/gateway.yaml', async t => {
  const docs = parseAllDocuments(readFileSync('deploy/kubernetes.yaml', 'utf8')).map(d => d.toJS() as K8sDoc)
  const byKind = (kind: string): K8sDoc => docs.find(d => d.kind === kind) as K8sDoc
  t.same(docs.map(d => d.kind), ['Secret', 'ConfigMap', 'Deployment', 'Service'])
  t.equal(byKind('ConfigMap').data?.['gateway.yaml'], readFileSync(CONFIG, 'utf8'), 'the ConfigMap carries deploy/gateway.yaml unchanged')
  const pod = byKind('Deployment').spec!.template!.spec
  const c = pod.containers[0]!
  t.equal(c.livenessProbe.httpGet.path, '/healthz')
  t.equal(c.readinessProbe.httpGet.path, '/readyz')
  t.equal(pod.securityContext.runAsNonRoot, true)
  t.ok((byKind('Deployment').spec?.replicas ?? 0) >= 2, 'more than one replica: the scale-out config')
  const secret = byKind('Secret').stringData ?? {}
  for (const v of requiredVariables(readFileSync(CONFIG, 'utf8'))) t.ok(v in secret, `the Secret provides ${v}`)
  t.same(c.envFrom, [{ secretRef: { name: 'model-gateway' } }])
  t.same(byKind('Service').spec?.ports?.map(p => p.targetPort), ['http'], 'the Service exposes inference only, not the admin port')
})

t.test('deploy/model-gateway.service: systemd accepts the unit', async t => {
  const text = readFileSync('deploy/model-gateway.service', 'utf8')
  t.match(text, /^ExecReload=\/bin\/kill -HUP \$MAINPID$/m, 'reload is SIGHUP, which reloads the config')
  t.match(text, /^Environment=GATEWAY_CONFIG=\/etc\/model-gateway\/gateway\.yaml$/m)
  const verify = spawnSync('systemd-analyze', ['verify', 'deploy/model-gateway.service'], { encoding: 'utf8' })
  if (verify.error) {
    // systemd-analyze comes with Debian's systemd package, present on every machine of this project.
    t.fail(`systemd-analyze could not run: ${verify.error.message}`)
    return
  }
  t.equal(verify.status, 0, `systemd-analyze verify: ${verify.stderr}`)
})

t.test('deploy/gateway.yaml is served by the built gateway on the real Redis and PostgreSQL', async t => {
  if (!existsSync(SERVER)) {
    t.fail('dist/server.js is missing: run `npm run build` first (npm test does)')
    return
  }
  const redis = await redisUrl(t)
  const pgUrl = await databaseUrl(t)
  if (redis === undefined || pgUrl === undefined) return
  const cwd = mkdtempSync(join(tmpdir(), 'gw-deploy-'))
  const env = {
    ...process.env, GATEWAY_CONFIG: CONFIG, PORT: '0', ADMIN_PORT: '0', HOST: '127.0.0.1',
    REDIS_URL: redis, DATABASE_URL: pgUrl, GATEWAY_ADMIN_KEY: ADMIN_KEY,
    GATEWAY_KV_PREFIX: `deploy-${randomId()}:`, GATEWAY_PG_SCHEMA: `deploy_${randomId()}`,
  }
  const child = spawn(process.execPath, [SERVER], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  child.stdout.on('data', d => { out += d })
  child.stderr.on('data', d => { out += d })
  const deadline = Date.now() + 20_000
  while (!/"address":"http:\/\/[^"]+"[\s\S]*"address":"http:\/\/[^"]+"/.test(out) && Date.now() < deadline && child.exitCode === null) {
    await new Promise(r => setTimeout(r, 50))
  }
  const addresses = [...out.matchAll(/"address":"(http:\/\/[^"]+)"/g)].map(m => m[1] as string)
  t.equal(addresses.length, 2, `both listeners started (${out.slice(0, 800)})`)
  if (addresses.length < 2) return
  let inference: string | undefined
  let admin: string | undefined
  for (const base of addresses) {
    const res = await fetch(`${base}/admin/config`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })
    if (res.status === 200) admin = base
    else inference = base
  }
  t.ok(admin && inference, 'one inference and one admin listener')
  const ready = await fetch(`${inference}/readyz`)
  t.equal(ready.status, 200, `/readyz on Redis and PostgreSQL: ${await ready.text()}`)
  t.equal((await fetch(`${inference}/healthz`)).status, 200)
  const metrics = await fetch(`${admin}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })
  t.equal(metrics.status, 200, 'metrics are served on the admin listener')
  const models = await fetch(`${admin}/admin/config`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })
  const shown = JSON.stringify(await models.json())
  t.notMatch(shown, ADMIN_KEY, 'the admin key is masked in the config view')
  child.kill('SIGTERM')
  const code = await new Promise(r => child.on('exit', r))
  t.equal(code, 0, 'SIGTERM drains and exits 0')
})
