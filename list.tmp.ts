import { GOLDEN_CASES, GOLDEN_ANSWERS, GOLDEN_STREAMS } from './testing/golden.ts'
import { RESPONSES_GOLDEN_CASES, RESPONSES_GOLDEN_ANSWERS, RESPONSES_GOLDEN_STREAMS } from './testing/golden-responses.ts'
for (const c of [...GOLDEN_CASES.filter(g=>g.upstream==='messages'), ...RESPONSES_GOLDEN_CASES.filter(g=>g.upstream==='messages')]) console.log('REQ', c.name, JSON.stringify(c.expect).slice(0,400))
console.log(GOLDEN_ANSWERS.filter(g=>g.upstream==='messages').length, RESPONSES_GOLDEN_ANSWERS.filter(g=>g.upstream==='messages').length, GOLDEN_STREAMS.filter(g=>g.upstream==='messages').length, RESPONSES_GOLDEN_STREAMS.filter(g=>g.upstream==='messages').length)
for (const c of RESPONSES_GOLDEN_ANSWERS.filter(g=>g.upstream==='messages')) console.log('RANS', c.name)
for (const c of RESPONSES_GOLDEN_STREAMS.filter(g=>g.upstream==='messages')) console.log('RSTR', c.name)
