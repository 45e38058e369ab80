// Makes the package's bin files (package.json "bin") executable once built. npm sets the mode only
// when it links a bin at install time, which on a fresh checkout comes before the build has written
// the file: `npx model-gateway` from the checkout would then find a file it may not run.
import { chmodSync, readFileSync } from 'node:fs'

const { bin } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
for (const file of Object.values(bin ?? {})) chmodSync(new URL(`../${file}`, import.meta.url), 0o755)
