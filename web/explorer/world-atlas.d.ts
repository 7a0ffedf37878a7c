declare module 'world-atlas/land-110m.json' {
  import type { Topology } from 'topojson-specification'
  const topology: Topology
  export default topology
}
