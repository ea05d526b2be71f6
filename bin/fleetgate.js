#!/usr/bin/env node
// The `fleetgate` command. It runs the compiled CLI in dist/, which `npm ci` (prepare) and `npm run build` produce.

let main;
try {
  ({ main } = await import('../dist/src/cli/main.js'));
} catch (err) {
  if (err?.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/src/cli/main.js')) {
    process.stderr.write('fleetgate: not built yet (dist/src/cli/main.js is missing); run npm run build\n');
    process.exit(1);
  }
  throw err;
}
process.exitCode = await main(process.argv.slice(2));
