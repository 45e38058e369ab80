/** @module testing/outcome-spy – a policy plugin that records every settle it sees. */
import { definePlugin, Type, type Outcome } from '../index.ts'

export interface SpyRecord { requestId: string, route: string, outcome: Outcome }

/** Returns the plugin and the list it fills; add `{ plugin: 'outcome-spy' }` to the pipeline. */
export function outcomeSpy (): { plugin: ReturnType<typeof definePlugin>, seen: SpyRecord[], settled: (n: number, ms?: number) => Promise<void> } {
  const seen: SpyRecord[] = []
  const plugin = definePlugin({
    name: 'outcome-spy',
    phase: 'admit',
    configSchema: Type.Object({}),
    create () {
      return {
        onRequest () {},
        onSettle (ctx, outcome) { seen.push({ requestId: ctx.requestId, route: ctx.route,
          outcome: structuredClone({ ...outcome, error: outcome.error ? { code: outcome.error.code } : undefined }) as Outcome }) },
      }
    },
  })
  /** Waits (bounded) until `n` settles were seen. */
  async function settled (n: number, ms = 3000): Promise<void> {
    const end = Date.now() + ms
    while (seen.length < n && Date.now() < end) await new Promise(r => setTimeout(r, 10))
  }
  return { plugin, seen, settled }
}
