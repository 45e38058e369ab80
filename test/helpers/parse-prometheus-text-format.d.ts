// The package ships no types: the shape the metrics tests read from it.
declare module 'parse-prometheus-text-format' {
  interface Sample { value?: string, labels?: Record<string, string>, buckets?: Record<string, string>, count?: string, sum?: string }
  interface Family { name: string, help: string, type: string, metrics: Sample[] }
  export default function parsePrometheusTextFormat (text: string): Family[]
}
