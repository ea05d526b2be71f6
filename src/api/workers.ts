// Worker threads that run one of our modules: the built .js, or under tsx and vitest the .ts source, with tsx
// registered in the thread (a worker does not inherit the loader of the thread that made it).

import { Worker } from 'node:worker_threads';

/** A worker running the module at ./<name>.js (or .ts) beside the caller's module (its import.meta.url). */
export function spawnModuleWorker(name: string, callerURL: string): Worker {
  const ts = callerURL.endsWith('.ts');
  const url = new URL(`./${name}${ts ? '.ts' : '.js'}`, callerURL);
  if (!ts) return new Worker(url);
  return new Worker(`import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(url.href)}); })`, { eval: true });
}
