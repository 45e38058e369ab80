/** @module config-schema – the config file's envelope schema (plugin and provider configs have their own). */
import { Type, type Static } from '@sinclair/typebox'
import { ROUTE_NAMES } from '../types/context.ts'

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

const Routes = Type.Array(Type.Union(ROUTE_NAMES.map(r => Type.Literal(r))), {
  description: 'Routes this entry applies to; default: the plugin\'s own default (usually all).', minItems: 1, uniqueItems: true,
})

const CIRCUIT_DOC = {
  failureThreshold: 'Consecutive failures (connect error, 5xx, no response headers within ttfbMs) that open a deployment\'s circuit.',
  coolDownMs: 'How long an open circuit refuses calls before it lets one trial call through.',
  trialTimeoutMs: 'How long that trial may stay unresolved before it is released and another call may try.',
  ttfbMs: 'An upstream that has sent no response headers this long after the attempt started counts a failure; a call cut sooner by its deadline, or after the headers came, does ' +
    'not. Set it above the longest healthy non-streamed generation (its headers come with the answer).',
}

/** Defaults for every deployment's circuit. */
const Circuit = Type.Object({
  failureThreshold: Type.Integer({ minimum: 1, default: 5, description: CIRCUIT_DOC.failureThreshold }),
  coolDownMs: Type.Integer({ minimum: 0, default: 30000, description: CIRCUIT_DOC.coolDownMs }),
  trialTimeoutMs: Type.Integer({ minimum: 1, default: 30000, description: CIRCUIT_DOC.trialTimeoutMs }),
  ttfbMs: Type.Integer({ minimum: 1, default: 60000, description: CIRCUIT_DOC.ttfbMs }),
}, { additionalProperties: false, default: {}, description: 'Circuit breaker defaults; a provider\'s or a model\'s own circuit overrides them.' })

/** A provider's or a model's own circuit thresholds; no defaults here, so an absent key falls through. */
const CircuitOverride = (description: string) => Type.Object({
  failureThreshold: Type.Optional(Type.Integer({ minimum: 1, description: CIRCUIT_DOC.failureThreshold })),
  coolDownMs: Type.Optional(Type.Integer({ minimum: 0, description: CIRCUIT_DOC.coolDownMs })),
  trialTimeoutMs: Type.Optional(Type.Integer({ minimum: 1, description: CIRCUIT_DOC.trialTimeoutMs })),
  ttfbMs: Type.Optional(Type.Integer({ minimum: 1, description: CIRCUIT_DOC.ttfbMs })),
}, { additionalProperties: false, description })

const AFFINITY_DOC = {
  enabled: 'Session affinity: a session (the client\'s session id, prompt_cache_key or metadata.user_id, else its prompt\'s stable prefix) keeps to one deployment among equal ' +
    'priorities, where its prompt cache lives.',
  ttlMs: 'How long a session stays pinned after its last call (the prompt caches\' lifetime; refreshed by each call).',
}

export const PipelineEntry = Type.Object({
  plugin: Type.String({ description: 'Built-in plugin name, or the name a custom module declares.', pattern: '^[a-z][a-z0-9-]*$' }),
  module: Type.Optional(Type.String({ description: 'Path of a custom plugin module (default export: definePlugin(...)), relative to the config file.' })),
  routes: Type.Optional(Routes),
  config: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'The plugin\'s own config, checked by its schema.' })),
}, { additionalProperties: false })

export const ProviderEntry = Type.Object({
  name: Type.String({ description: 'Instance name; what X-GW-Provider shows and deployments refer to.', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' }),
  adapter: Type.String({ description: 'Adapter name: a built-in adapter, or the name a custom module declares.' }),
  module: Type.Optional(Type.String({ description: 'Path of a custom adapter module (default export: defineProvider(...)), relative to the config file.' })),
  config: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'The adapter\'s own config, checked by its schema.' })),
  circuit: Type.Optional(CircuitOverride('Circuit thresholds for this provider\'s deployments, over the top-level circuit.')),
}, { additionalProperties: false })

const Price = Type.Object({
  input: Type.Number({ minimum: 0, description: 'Price per million input tokens.' }),
  cachedInput: Type.Optional(Type.Number({ minimum: 0, description: 'Price per million cached input tokens; absent: input rate.' })),
  cacheWrite: Type.Optional(Type.Number({ minimum: 0, description: 'Price per million cache-write input tokens (e.g. Anthropic, Bedrock, Vertex: 1.25× input for a ' +
    '5-minute cache, 2× for 1 hour); absent: input rate.' })),
  cacheWrite1h: Type.Optional(Type.Number({ minimum: 0, description: 'Price per million input tokens written to a one-hour cache (Anthropic, Bedrock, Vertex: 2× input); ' +
    'absent: the cacheWrite rate.' })),
  output: Type.Number({ minimum: 0, description: 'Price per million output tokens.' }),
  perUse: Type.Optional(Type.Record(Type.String({ pattern: '^[a-z][a-z0-9_]*$' }), Type.Number({ minimum: 0 }),
    { description: 'Price per 1000 uses of an upstream server tool, by feature name (web_search, web_fetch, code_interpreter, image_generation...). A server tool passes only when ' +
      'the model lists its feature in supported_parameters and has a price here (0: free per use); the uses the upstream reports are billed.' })),
  serviceTiers: Type.Optional(Type.Record(Type.String({ pattern: '^[a-z][a-z0-9_]*$' }), Type.Number({ minimum: 0 }),
    { description: 'Multiplier of the token cost per service_tier value (e.g. priority: 2, flex: 0.5). A service_tier other than auto / default / standard / standard_only passes ' +
      'only when the model lists service_tier in supported_parameters and the tier has a multiplier here.' })),
}, { additionalProperties: false })

export const ModelConfig = Type.Object({
  id: Type.String({ minLength: 1, description: 'Model id clients send, usually <vendor>/<model>.' }),
  name: Type.Optional(Type.String({ description: 'Display name; default: the id.' })),
  created: Type.Integer({ default: 1767225600, description: 'Unix seconds shown in the model object.' }),
  owned_by: Type.Optional(Type.String({ description: 'Shown in the model object; default: the id\'s vendor part.' })),
  context_length: Type.Integer({ minimum: 1, default: 128000, description: 'Maximum context window.' }),
  max_output_tokens: Type.Integer({ minimum: 1, default: 4096, description: 'Output cap used when a request gives none, and the ceiling requests are clamped to.' }),
  input_modalities: Type.Array(Type.String(), { default: ['text'], description: 'text, image, video...' }),
  output_modalities: Type.Array(Type.String(), { default: ['text'], description: 'text...' }),
  supported_parameters: Type.Array(Type.String(), {
    default: ['temperature', 'top_p', 'max_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'response_format', 'frequency_penalty', 'presence_penalty', 'user'],
    description: 'Request parameters forwarded upstream; standard parameters not listed are dropped.',
  }),
  default_parameters: Type.Object({}, { additionalProperties: true, default: {}, description: 'Defaults applied when the request omits them.' }),
  price: Type.Optional(Price),
  deprecated: Type.Boolean({ default: false, description: 'Hidden from lists and refused on calls.' }),
  circuit: Type.Optional(CircuitOverride('Circuit thresholds for this model\'s deployments, over its provider\'s and the top-level circuit.')),
  affinity: Type.Optional(Type.Object({
    enabled: Type.Optional(Type.Boolean({ description: AFFINITY_DOC.enabled })),
    ttlMs: Type.Optional(Type.Integer({ minimum: 1000, description: AFFINITY_DOC.ttlMs })),
  }, { additionalProperties: false, description: 'Session affinity for this model, over routing.affinity.' })),
  deployments: Type.Array(Type.Object({
    provider: Type.String({ description: 'A providers[].name.' }),
    model: Type.Optional(Type.String({ description: 'The upstream\'s model name; default: the id.' })),
    priority: Type.Integer({ default: 0, description: 'Lower is tried first.' }),
    weight: Type.Number({ exclusiveMinimum: 0, default: 1, description: 'Share among equal priorities.' }),
  }, { additionalProperties: false }), { minItems: 1, description: 'Ordered ways to serve the model.' }),
}, { additionalProperties: false })

/** The admin HTTP API's listener and keys (admin/ in the repository); absent: no admin listener. */
const AdminConfig = Type.Object({
  host: Type.String({ default: '127.0.0.1', description: 'Admin listen address; keep it private (loopback or an internal network).' }),
  port: Type.Integer({ minimum: 0, maximum: 65535, default: 8081, description: 'Admin listen port (0: any free port).' }),
  keys: Type.Array(Type.Object({
    id: Type.String({ minLength: 1, description: 'Names the key in logs.' }),
    key: Type.Optional(Type.String({ minLength: 16, description: 'The admin key in plain (use ${ENV}); held only as its hash.' })),
    hash: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$', description: 'sha256 hex of the admin key, instead of `key`.' })),
    revoked: Type.Boolean({ default: false, description: 'A revoked key is refused with 403.' }),
  }, { additionalProperties: false }), { minItems: 1, description: 'Admin keys (never client keys).' }),
}, { additionalProperties: false, description: 'The admin HTTP API; no admin listener unless this block is present.' })

export const GatewayConfigSchema = Type.Object({
  server: Type.Object({
    host: Type.String({ default: '127.0.0.1', description: 'Listen address (env HOST).' }),
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 8080, description: 'Listen port (env PORT).' }),
    bodyLimitBytes: Type.Integer({ minimum: 1, default: 67108864, description: 'Hard cap on any request body (env GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES).' }),
    shutdownGraceMs: Type.Integer({ minimum: 0, default: 30000, description: 'SIGTERM: how long in-flight calls may take to finish.' }),
    exemptProbesFromPlugins: Type.Boolean({ default: true,
      description: 'When true (the default), /healthz and /readyz skip every plugin, the IP limit included: a load balancer probing every second is never rate limited. false: ' +
        'probes go through the plugins whose routes include them. /metrics on the main listener is never exempt from the connect phase (the IP limit).' }),
    trustedProxies: Type.Array(Type.String(),
      { default: [], description: 'Addresses/CIDRs of proxies (load balancers) in front of the gateway whose X-Forwarded-For is believed: the client address is then the right-most ' +
        'hop that is not a trusted proxy, for plugins (ctx.ip, the IP limit) and the access log alike. Empty: the socket address is the client.' }),
    maxUpstreamBodyBytes: Type.Integer({ minimum: 1, default: 33554432, description: 'Largest non-streamed upstream answer read (bytes); past it the call fails with 502.' }),
    maxUpstreamEventBytes: Type.Integer({ minimum: 1, default: 8388608,
      description: 'Largest single event (or line) of an upstream stream (bytes); past it the call fails with 502 (an error event once streaming).' }),
    streamHoldMs: Type.Integer({ minimum: 0, default: 2000,
      description: 'A stream\'s first events (before any output) are kept back from the client at most this long: an upstream that fails before its first output (an ' +
        'error event, a stream that ends) then fails over to the next deployment, nothing sent or billed; an error event counts as an answer with the status it names ' +
        '(a refused request is the client\'s 400, with no failover). 0 sends every event at once.' }),
    headersTimeoutMs: Type.Integer({ minimum: 1, default: 30000, description: 'A request\'s headers must arrive whole within this (408, connection closed).' }),
    bodyTimeoutMs: Type.Integer({ minimum: 1, default: 120000,
      description: 'The whole request, headers and body, must arrive within this (408 in the route\'s body shape, connection closed). Not the response: see the timeout plugin.' }),
    keepAliveTimeoutMs: Type.Integer({ minimum: 1, default: 72000, description: 'An idle keep-alive connection is closed after this.' }),
    lingerMs: Type.Integer({ minimum: 0, default: 10000,
      description: 'After an error answered before the body was read (413, 401, 404...), how long the rest of the body is read and discarded so the client sees the answer; then the ' +
        'connection is closed.' }),
    lingerBytes: Type.Integer({ minimum: 0, default: 67108864, description: 'The same bound in bytes discarded.' }),
    maxJsonDepth: Type.Integer({ minimum: 1, maximum: 10000, default: 128, description: 'Deepest nesting of arrays and objects accepted in a JSON body (400 beyond).' }),
  }, { additionalProperties: false, default: {} }),
  logging: Type.Object({
    level: Type.Union(LEVELS.map(l => Type.Literal(l)), { default: 'info', description: 'pino level.' }),
    access: Type.Object({
      enabled: Type.Boolean({ default: true, description: 'One JSON access-log line per request, written when the call settles (streams and cut calls included).' }),
      level: Type.Union(LEVELS.filter(l => l !== 'silent').map(l => Type.Literal(l)), { default: 'info', description: 'pino level of the access-log line.' }),
      sampleRate: Type.Number({ minimum: 0, maximum: 1, default: 1, description: 'Share of successful (status < 400) calls logged; errors are always logged.' }),
    }, { additionalProperties: false, default: {} }),
  }, { additionalProperties: false, default: {} }),
  metrics: Type.Object({
    listen: Type.Union([Type.Literal('off'), Type.Literal('main'), Type.Literal('admin')],
      { default: 'off', description: 'Where Prometheus metrics are served: off (not collected at all), main (the inference listener), admin (the admin listener).' }),
    path: Type.String({ default: '/metrics', pattern: '^/', description: 'Path of the metrics endpoint.' }),
    prefix: Type.String({ default: 'gw_', pattern: '^[a-zA-Z_][a-zA-Z0-9_]*$', description: 'Prefix of every metric name.' }),
    maxOrganizations: Type.Integer({ minimum: 0, default: 100,
      description: 'Organizations that get a label of their own (those named in the config first, then the first seen); the rest count as "other".' }),
  }, { additionalProperties: false, default: {} }),
  tracing: Type.Object({
    propagate: Type.Boolean({ default: true, description: 'Accept a W3C traceparent, send one (same trace, child span) with every upstream request, answer with traceresponse.' }),
    otlp: Type.Object({
      url: Type.Optional(Type.String({ description: 'OTLP/HTTP traces endpoint (e.g. http://collector:4318/v1/traces). Absent: no export, and no OpenTelemetry module is loaded.' })),
      headers: Type.Record(Type.String(), Type.String(), { default: {}, description: 'Extra headers of the export requests (e.g. an API key).' }),
      serviceName: Type.String({ default: 'model-gateway', description: 'service.name of the exported spans.' }),
      sampleRatio: Type.Number({ minimum: 0, maximum: 1, default: 1,
        description: 'Share of new traces exported. An authenticated caller\'s traceparent decides for its own trace (its sampled flag); an unauthenticated caller\'s flag is not honoured: its ' +
          'call is sampled at this ratio.' }),
      maxSpansPerSecond: Type.Integer({ minimum: 1, default: 1000,
        description: 'Most spans exported per second (each call makes 2 or more); past it a call\'s spans are dropped whole, so no caller can flood the collector.' }),
    }, { additionalProperties: false, default: {} }),
  }, { additionalProperties: false, default: {} }),
  stores: Type.Object({
    kv: Type.Object({
      backend: Type.Union([Type.Literal('memory'), Type.Literal('redis')], { default: 'memory', description: 'Where windows, claims and circuit state live.' }),
      url: Type.Optional(Type.String({ description: 'redis:// URL (backend redis).' })),
      prefix: Type.String({ default: 'gw:', description: 'Prefix of every key.' }),
      maxKeys: Type.Integer({ minimum: 100, default: 100000,
        description: 'Memory backend: bound on IP-limit counters (and other evictable keys); the least recently used are evicted when full. Also the default of maxWindows and maxClaims.' }),
      maxWindows: Type.Optional(Type.Integer({ minimum: 1,
        description: 'Memory backend: bound on quota and spend windows (default: maxKeys). Never evicted before they expire; when full, a call needing a new window gets 503.' })),
      maxClaims: Type.Optional(Type.Integer({ minimum: 1,
        description: 'Memory backend: bound on idempotency claims (default: maxKeys). Never evicted before they expire; when full, a new claim gets 503.' })),
    }, { additionalProperties: false, default: {} }),
    ledger: Type.Object({
      backend: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')], { default: 'sqlite', description: 'Where keys, balances, prices and usage records live.' }),
      path: Type.String({ default: './data/gateway.db', description: 'SQLite file (backend sqlite); relative to the working directory.' }),
      url: Type.Optional(Type.String({ description: 'postgres:// URL (backend postgres).' })),
      schema: Type.Optional(Type.String({ description: 'PostgreSQL schema (default public).' })),
      reservations: Type.Union([Type.Literal('memory'), Type.Literal('file')],
        { default: 'memory', description: 'SQLite: where balance reservations are held. memory: in the gateway process (one process per file; the admin CLI may run beside it). ' +
          'file: in the file, for several processes sharing it.' }),
      checkpoints: Type.Union([Type.Literal('worker'), Type.Literal('inline')],
        { default: 'worker', description: 'SQLite: who copies the write-ahead log back into the file (a checkpoint, with its fsyncs). worker: a worker thread with its own ' +
          'connection, so the event loop never waits for the disk. inline: SQLite itself, inside a commit, every ~1000 pages (no thread, about 14 MB less memory).' }),
      holdMarginMs: Type.Integer({ minimum: 100, default: 30000,
        description: 'PostgreSQL: a balance hold expires this long after its call\'s deadline (the replica running the call renews it meanwhile); the holds of a replica that died ' +
          'stop counting after it.' }),
      holdSweepMs: Type.Integer({ minimum: 10, default: 5000,
        description: 'PostgreSQL: how often each replica renews its live holds and deletes expired ones (at most a third of holdMarginMs is used).' }),
      holdVacuumEvery: Type.Integer({ minimum: 0, default: 10000,
        description: 'PostgreSQL: after this many holds (or lease-slice grants and shrinks) made by a replica, its next sweep also VACUUMs the hold tables ' +
          '(every call leaves dead rows there, which slow every reserve until vacuumed; autovacuum clears them about once a minute when it is on). 0: never.' }),
      spool: Type.Object({
        path: Type.String({ default: './data/charge-spool.jsonl',
          description: 'Append-only file (relative to the working directory) where a charge the ledger would not take after its quick retries is kept (fsync\'d) and replayed until ' +
            'it commits. One gateway process per file; put it on another file system than a SQLite ledger.' }),
        maxCharges: Type.Integer({ minimum: 0, default: 1000, description: 'Admission fails closed (503) while the spool holds more charges than this (and while charges are failing).' }),
        retryMs: Type.Integer({ minimum: 10, default: 1000, description: 'How often the spool is replayed while it holds charges; also the Retry-After of the 503.' }),
      }, { additionalProperties: false, default: {} }),
    }, { additionalProperties: false, default: {} }),
  }, { additionalProperties: false, default: {} }),
  circuit: Circuit,
  routing: Type.Object({
    affinity: Type.Object({
      enabled: Type.Boolean({ default: true, description: AFFINITY_DOC.enabled }),
      ttlMs: Type.Integer({ minimum: 1000, default: 300000, description: AFFINITY_DOC.ttlMs }),
    }, { additionalProperties: false, default: {} }),
  }, { additionalProperties: false, default: {} }),
  providers: Type.Array(ProviderEntry, { default: [], description: 'Upstream provider instances.' }),
  models: Type.Array(ModelConfig, { default: [], description: 'The model catalog.' }),
  aliases: Type.Record(Type.String(), Type.String(), { default: {}, description: 'Extra model names mapped to catalog ids (e.g. names Claude Code sends).' }),
  pipeline: Type.Array(PipelineEntry, { default: [], description: 'Policy plugins; order inside a phase is this order.' }),
  admin: Type.Optional(AdminConfig),
}, { additionalProperties: false })

export type GatewayConfig = Static<typeof GatewayConfigSchema> & { readonly source: string, readonly baseDir: string }
export type AdminConfigT = Static<typeof AdminConfig>
export type ModelConfigT = Static<typeof ModelConfig>
export type PipelineEntryT = Static<typeof PipelineEntry>
export type ProviderEntryT = Static<typeof ProviderEntry>
