/**
 * @module test/helpers/exports-pattern-hook – a module resolve hook that tap loads into every test process
 * (package.json `tap.node-arg`), after its TypeScript loader.
 *
 * tap's TypeScript loader resolves bare specifiers with its own copy of an old Node resolver, which only
 * knows `exports` patterns whose `*` ends the key ("./lib/*"), not "./lib/*.js". A package that imports a
 * deep file of such a package (e.g. `@langchain/openai` ≥ 1.5 importing
 * `openai/lib/responses/ResponseInputItems.js`) then fails to load under tap although Node loads it.
 * When that resolver fails on a bare specifier, this hook resolves it again with Node's own resolver, the
 * `require` one (`import.meta.resolve` is not available in the hooks thread): for a key such as "./lib/*.js"
 * both resolvers give the same file. When that fails too, the first error stands.
 */
import { createRequire, register } from 'node:module'
import { pathToFileURL } from 'node:url'
import { isMainThread } from 'node:worker_threads'

if (isMainThread) register(import.meta.url)

const bare = (specifier) => !/^(?:\.{0,2}\/|[a-zA-Z][a-zA-Z0-9+.-]*:)/.test(specifier)

export async function resolve (specifier, context, next) {
  try {
    return await next(specifier, context)
  } catch (err) {
    // The loader's error does not always keep its `code` on the way here: any failure on a bare
    // specifier gets the second resolution.
    if (!bare(specifier) || context.parentURL === undefined) throw err
    let path
    try { path = createRequire(context.parentURL).resolve(specifier) } catch { throw err }
    return { url: pathToFileURL(path).href, shortCircuit: true }
  }
}
