// A line chart (uPlot): one line per series over the range's buckets.
import { h } from 'preact'
import { useEffect, useRef } from 'preact/hooks'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'

/** Colours told apart by most people with colour-vision deficiency (Okabe–Ito); grey is for "other". */
export const COLOURS = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#000000']
export const OTHER_COLOUR = '#888888'

/**
 * `colour(name)` gives each series its colour (the same group keeps its colour in every chart).
 * @param {{ title: string, label: string, starts: number[], series: { names: string[], values: Array<Array<number | null>> },
 *   format: (v: number) => string, colour: (name: string) => string, testid?: string, points?: boolean }} props
 * `points`: draw every value as a point (a rate's lone values between gaps stay visible).
 */
export function LineChart ({ title, label, starts, series, format, colour, testid, points }) {
  const ref = useRef()
  useEffect(() => {
    const el = ref.current
    const width = Math.max(240, Math.min(el.clientWidth || 600, 1100))
    const opts = {
      width,
      height: 180,
      legend: { live: true },
      scales: { x: { time: true } },
      series: [
        {},
        ...series.names.map(name => ({
          label: name, stroke: colour(name), width: 2, spanGaps: false,
          points: { show: points || starts.length <= 31 },
          value: (_u, v) => v === null || v === undefined ? '—' : format(v),
        })),
      ],
      axes: [{}, { values: (_u, ticks) => ticks.map(v => format(v)), size: 70 }],
    }
    const data = [starts.map(s => s / 1000), ...series.values]
    const plot = new uPlot(opts, data, el)
    return () => plot.destroy()
  }, [starts, series, format, colour, points])
  return h('figure', { class: 'chart', 'data-testid': testid, 'data-points': starts.length, 'data-series': series.names.join('\n') },
    h('figcaption', null, title),
    h('div', { ref, role: 'img', 'aria-label': label }))
}
