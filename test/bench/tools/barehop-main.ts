// A bare hop (test/bench/scenarios/barehop.ts) in a process of its own, for counting its instructions
// (request-instructions.ts): options as JSON in the file named by the first argument; prints "URL <url>" once it
// listens and runs until SIGTERM.

import { readFileSync } from 'node:fs';
import { startBareHop, type BareHopOptions } from '../scenarios/barehop.js';

const hop = await startBareHop(JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as BareHopOptions);
console.log(`URL ${hop.url}`);
process.once('SIGTERM', () => void hop.close().then(() => process.exit(0)));
