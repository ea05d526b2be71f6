// The size of V8's young generation in a process that hosts the cache, as node was started with it.
//
// Under churn the cache's process allocates fan-out work (each change's events, frames and the watchers' queues) that
// dies within a second or two. With node's default semi-spaces (16 MiB) a young collection comes every ~0.5 s under
// 2,000 changes a second at 1M pods, so much of that work is still alive at two collections running and is promoted:
// the old generation grew ~3.5 MB/s, and V8 marked the ~0.6 GB heap once or twice in 30 s of churn (each mark a stall
// of the event loop; benchmark scenario 6). With 64 MiB semi-spaces it grew ~1.3 MB/s, about what the event window
// keeps on purpose, and no mark came in the same 30 s. V8 reads the size only when the heap is set up, so it cannot be
// changed from here: node must be given --max-semi-space-size (the image and the chart do). This only reports which
// size the process has, so that the log says so.

import { nodeFlag, type FlagSource } from './nodeflags.js';

/** What the image and the chart give node: MiB per semi-space (the young generation holds two). */
export const RECOMMENDED_SEMI_SPACE_MB = 64;

export interface YoungGeneration {
  /** MiB per semi-space node was given; undefined when V8 sizes it itself (16 MiB at most on 64-bit node 20). */
  semiSpaceMB: number | undefined;
  /** Where the size came from ('v8': node was not given one). */
  source: FlagSource | 'v8';
}

/** The young generation this process was started with (the command line wins over NODE_OPTIONS, as in node). */
export function youngGeneration(execArgv: readonly string[] = process.execArgv, nodeOptions: string | undefined = process.env.NODE_OPTIONS): YoungGeneration {
  const flag = nodeFlag('max-semi-space-size', execArgv, nodeOptions);
  const mb = Number(flag?.value);
  // 0 is V8's own choice; a value that is not a size is not taken (node refuses to start with one).
  if (!flag || !Number.isInteger(mb) || mb < 0) return { semiSpaceMB: undefined, source: 'v8' };
  return { semiSpaceMB: mb || undefined, source: flag.source };
}
