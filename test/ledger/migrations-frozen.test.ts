// Released ledger migrations are never edited: a database that already ran version N keeps what
// N's text made, so a change must be a new version. The text of every released version is pinned
// here by its SHA-256 (first 16 hex digits); a new version adds its line.
import t from 'tap'
import { createHash } from 'node:crypto'
import { POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS, type Migration } from '../../core/ledger/migrations.ts'

const RELEASED = {
  sqlite: [[1, '9333e48fec826ab2'], [2, 'e0a01483147512b6'], [3, 'b0c01d1c9761567d'], [4, 'f5e99867dc6f2e8c'], [5, '90b8e5abfcbf7d6b'], [6, 'b765d7564b9b5d8e']],
  postgres: [[1, '89ca978cc91563ff'], [2, 'e0a01483147512b6'], [3, 'd04bf993e2ba991c'], [4, '48c8c7be86ebc7c9'], [5, '550419375e17aae3'],
    [6, '9b1ac5943cc2d770'], [7, '0fd636640363be5a'], [8, '7b5e6c2ee07a6e9b'], [9, 'cf68d13bb9b7568e'], [10, '97d755382a58edd7']],
} as const

const digest = (m: Migration): string => createHash('sha256').update(m.sql).digest('hex').slice(0, 16)

for (const [dialect, list] of [['sqlite', SQLITE_MIGRATIONS], ['postgres', POSTGRES_MIGRATIONS]] as const) {
  t.test(`${dialect}: every released migration's text is unchanged, versions count up from 1`, async t => {
    t.same(list.map(m => m.version), list.map((_, i) => i + 1), 'versions 1, 2, 3, …')
    for (const [version, sha] of RELEASED[dialect]) {
      const m = list.find(x => x.version === version)
      t.ok(m, `version ${version} is still there`)
      if (m) t.equal(digest(m), sha, `version ${version} (${m.name}): its text as released`)
    }
    t.ok(list.length >= RELEASED[dialect].length, 'none removed')
  })
}
