// The one check every entry point runs first (bin/kns.js imports it; the npm scripts run it):
// the service is TypeScript run through Node's type stripping, which needs Node 24. An older
// node would die on the first .ts file with ERR_UNKNOWN_FILE_EXTENSION; this says why in one
// line instead. Plain JavaScript with nothing newer than ES2015, so that any node can run it.
var major = Number(process.versions.node.split('.')[0])
if (major < 24) {
  process.stderr.write('kns needs Node.js 24 or newer (this is ' + process.version + '): install Node 24, or run `npm ci` ' +
    'with the dev dependencies so that npm scripts and npx use the project\'s pinned node.\n')
  process.exit(1)
}
