// A line chart (uPlot): one line per series over the range's buckets. Time ticks and the legend's
// time are in the console's language and the browser's time zone; a rate's axis runs from 0 to at
// most 100 %. The labels last drawn are kept on the figure (data-x-ticks, data-y-ticks, one per
// line) for the browser tests.
import { h } from 'preact'
import { useEffect, useRef } from 'preact/hooks'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { fmtDateTime, fmtTick, t } from './i18n.js'

/** Colours told apart by most people with colour-vision deficiency (Okabe–Ito); grey is for "other". */
export const COLOURS = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#000000']
export const OTHER_COLOUR = '#888888'

/** A day's key in local time, to show the date on the first tick of each day. */
const dayOf = ms => { const d = new Date(ms); return `${d.getFullYear()}-${d.getMonth()}-${d.getDate()}` }

/**
 * The y range of a rate (0 to 1): from 0 to a little above the largest rate, never past 1; when
 * every rate is 0 (or there is none) 0 to 1, not the default of a flat line (0 to 100, i.e. 10000 %).
 * @param {number | null} max
 */
export const rateRange = max => [0, max !== null && max > 0 ? Math.min(1, max * 1.2) : 1]

/**
 * `colour(name)` gives each series its colour (the same group keeps its colour in every chart).
 * @param {{ title: string, label: string, starts: number[], bucketMs: number, series: { names: string[], values: Array<Array<number | null>> }, format: (v: number) => string,
   colour: (name: string) => string, testid?: string, points?: boolean, rate?: boolean }} props
 * `points`: draw every value as a point (a rate's lone values between gaps stay visible); `rate`:
 * values are fractions of 1.
 */
export function LineChart ({ title, label, starts, bucketMs, series, format, colour, testid, points, rate }) {
  const ref = useRef()
  useEffect(() => {
    const el = ref.current
    const fig = el.parentElement
    const width = Math.max(240, Math.min(el.clientWidth || 600, 1100))
    const drawn = { x: [], y: [] }
    const opts = {
      width,
      height: 180,
      legend: { live: true },
      scales: { x: { time: true }, ...(rate ? { y: { range: (_u, _min, max) => rateRange(max) } } : {}) },
      series: [
        { label: t('time'), value: (_u, v) => v === null || v === undefined ? '—' : fmtDateTime(v * 1000) },
        ...series.names.map(name => ({
          label: name, stroke: colour(name), width: 2, spanGaps: false,
          points: { show: points || starts.length <= 31 },
          value: (_u, v) => v === null || v === undefined ? '—' : format(v),
        })),
      ],
      axes: [
        { values: (_u, ticks) => (drawn.x = ticks.map((s, i) => fmtTick(s * 1000, bucketMs, i === 0 || dayOf(s * 1000) !== dayOf(ticks[i - 1] * 1000)))), size: 50,
          space: bucketMs >= 86_400_000 ? 80 : 60 },
        { values: (_u, ticks) => (drawn.y = ticks.map(v => format(v))), size: 70 },
      ],
      hooks: { draw: [() => { fig.dataset.xTicks = drawn.x.join('\n'); fig.dataset.yTicks = drawn.y.join('\n') }] },
    }
    const data = [starts.map(s => s / 1000), ...series.values]
    const plot = new uPlot(opts, data, el)
    return () => plot.destroy()
  }, [starts, series, format, colour, points, rate, bucketMs])
  return h('figure', { class: 'chart', 'data-testid': testid, 'data-points': starts.length, 'data-series': series.names.join('\n') },
    h('figcaption', null, title),
    h('div', { ref, role: 'img', 'aria-label': label }))
}
