// The examples as users run them (test/out-of-tree/run.mjs): packed gateway installed in a folder
// outside the repo, each example loaded through `module:` by a listening gateway. `npm test` has
// built dist/ already (pretest), so the pack skips its own build.
import t from 'tap'
import { execFile } from 'node:child_process'

t.test('out-of-tree – the example plugin and adapter work from the installed package', async t => {
  const { code, output } = await new Promise<{ code: number | null, output: string }>(resolve => {
    const child = execFile(process.execPath, ['test/out-of-tree/run.mjs'], { env: { ...process.env, OUT_OF_TREE_NO_BUILD: '1' }, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => resolve({ code: err ? (child.exitCode ?? 1) : 0, output: stdout + stderr }))
  })
  t.equal(code, 0, output)
  t.match(output, /all passed/)
})
