/**
 * The import rule of docs/architecture.md, checked over the import graph by
 * dependency-cruiser (`npm run check:layers`, part of `npm test`): imports only run down the
 * layers, and nothing imports in a circle.
 *
 *   cli -> http, sip -> service.ts, migrations.ts -> areas (identity, keys, approvals, caller, stats, events, swaps, camara)
 *       -> ledger -> db -> base (lib, contract, errors.ts, config.ts)
 *
 * Areas may use each other (without circles); the pages (web/) see only src/contract/.
 */
const AREAS = '^src/(identity|keys|accounts|approvals|caller|stats|events|swaps|camara)/'
const layer = {
  base: '^src/(lib/|contract/|errors\\.ts$|config\\.ts$)',
  db: '^src/db/',
  ledger: '^src/ledger/',
  areas: AREAS,
  service: '^src/(service|migrations)\\.ts$',
  http: '^src/(http|sip)/',
  cli: '^src/cli/',
}
const above = {
  base: [layer.db, layer.ledger, AREAS, layer.service, layer.http, layer.cli],
  db: [layer.ledger, AREAS, layer.service, layer.http, layer.cli],
  ledger: [AREAS, layer.service, layer.http, layer.cli],
  areas: [layer.service, layer.http, layer.cli],
  service: [layer.http, layer.cli],
  http: [layer.cli],
}

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle: modules that cannot be understood (or loaded) one before the other.',
      from: {},
      to: { circular: true },
    },
    ...Object.entries(above).map(([name, targets]) => ({
      name: `${name}-imports-upward`,
      severity: 'error',
      comment: `The ${name} layer imports a layer above it (docs/architecture.md: imports only run down).`,
      from: { path: layer[name] },
      to: { path: targets },
    })),
    {
      name: 'src-imports-tests-or-tools',
      severity: 'error',
      comment: 'The service never imports its tests, benchmarks or pages.',
      from: { path: '^src/' },
      to: { path: '^(test|bench|web)/' },
    },
    {
      name: 'pages-import-only-the-contract',
      severity: 'error',
      comment: 'The pages (web/) share code with the service only through the dependency-free src/contract/.',
      from: { path: '^web/' },
      to: { path: '^src/', pathNot: '^src/contract/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|data)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.json'] },
  },
}
