// The flow control configuration: every *.yaml / *.yml file of one directory, each holding FlowSchemas and
// PriorityLevelConfigurations (flowcontrol.apiserver.k8s.io/v1; several per file with ---, or a List). The set is
// taken whole or not at all: one bad file rejects the new set and the last good one stays in force. The directory
// is watched (fs.watch) and also stat'ed periodically, since fs.watch misses changes on some file systems and
// ConfigMap volumes swap files by renaming a symlinked directory.

import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { formatFieldError } from '../api/status.js';
import { watchForChanges, type FileWatcher } from '../config/watch.js';
import { defaultAndValidateFlowSchema, defaultAndValidatePriorityLevel } from './validation.js';
import { FLOWCONTROL_API_VERSION, type FlowSchema, type PriorityLevelConfiguration } from './types.js';

export interface FlowControlObjects {
  flowSchemas: FlowSchema[];
  priorityLevels: PriorityLevelConfiguration[];
}

/** The default set shipped with fleetgate (config/flowcontrol next to package.json), from src/ or dist/src/. */
export function defaultFlowControlDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'config', 'flowcontrol');
    if (existsSync(join(dir, 'package.json')) && existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error('the default flow control configuration (config/flowcontrol) was not found next to fleetgate');
}

function isYamlFile(name: string): boolean {
  return !name.startsWith('.') && (name.endsWith('.yaml') || name.endsWith('.yml'));
}

async function yamlFiles(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).filter(isYamlFile).sort();
  return names.map((n) => join(dir, n));
}

/** Objects a file's documents hold, Lists flattened. */
function objectsOf(doc: unknown, where: string, errs: string[]): Record<string, any>[] {
  if (doc === null || doc === undefined) return [];
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    errs.push(`${where}: expected an object with apiVersion and kind`);
    return [];
  }
  const o = doc as Record<string, any>;
  if (typeof o.kind === 'string' && o.kind.endsWith('List')) {
    if (!Array.isArray(o.items)) {
      errs.push(`${where}: a ${o.kind} needs an items list`);
      return [];
    }
    return o.items.flatMap((item: unknown, i: number) => objectsOf(item, `${where} items[${i}]`, errs));
  }
  return [o];
}

/** Reads and validates every file of dir; throws one Error listing every problem found. */
export async function loadFlowControlDir(dir: string): Promise<FlowControlObjects> {
  const errs: string[] = [];
  const flowSchemas = new Map<string, { obj: FlowSchema; file: string }>();
  const priorityLevels = new Map<string, { obj: PriorityLevelConfiguration; file: string }>();
  const files = await yamlFiles(dir);
  for (const file of files) {
    const text = await readFile(file, 'utf8');
    const docs = parseAllDocuments(text);
    if (!Array.isArray(docs)) {
      errs.push(`${file}: not YAML documents`);
      continue;
    }
    docs.forEach((doc, di) => {
      if (doc.errors.length) {
        errs.push(`${file}: document ${di + 1}: ${doc.errors[0]!.message}`);
        return;
      }
      for (const o of objectsOf(doc.toJS(), `${file}: document ${di + 1}`, errs)) {
        const name = typeof o.metadata?.name === 'string' ? o.metadata.name : '';
        const where = `${file}: ${o.kind ?? 'object'} ${JSON.stringify(name)}`;
        if (o.apiVersion !== FLOWCONTROL_API_VERSION) {
          errs.push(`${where}: apiVersion ${JSON.stringify(o.apiVersion)} is not supported, use ${FLOWCONTROL_API_VERSION}`);
          continue;
        }
        if (o.kind === 'FlowSchema') {
          const r = defaultAndValidateFlowSchema(o);
          if (!r.value) errs.push(...r.errors.map((e) => `${where}: ${formatFieldError(e)}`));
          else if (flowSchemas.has(name)) errs.push(`${where}: also defined in ${flowSchemas.get(name)!.file}`);
          else flowSchemas.set(name, { obj: withUID(r.value), file });
        } else if (o.kind === 'PriorityLevelConfiguration') {
          const r = defaultAndValidatePriorityLevel(o);
          if (!r.value) errs.push(...r.errors.map((e) => `${where}: ${formatFieldError(e)}`));
          else if (priorityLevels.has(name)) errs.push(`${where}: also defined in ${priorityLevels.get(name)!.file}`);
          else priorityLevels.set(name, { obj: withUID(r.value), file });
        } else {
          errs.push(`${where}: kind ${JSON.stringify(o.kind)} is not supported, use FlowSchema or PriorityLevelConfiguration`);
        }
      }
    });
  }
  if (errs.length) throw new Error(errs.join('\n'));
  return { flowSchemas: [...flowSchemas.values()].map((v) => v.obj), priorityLevels: [...priorityLevels.values()].map((v) => v.obj) };
}

/**
 * The UID the response headers carry: metadata.uid when the file sets one, otherwise derived from kind and name,
 * so it is the same across restarts and across replicas of the gateway.
 */
export function withUID<T extends FlowSchema | PriorityLevelConfiguration>(obj: T): T {
  if (typeof obj.metadata.uid === 'string' && obj.metadata.uid !== '') return obj;
  return { ...obj, metadata: { ...obj.metadata, uid: stableUID(`${obj.kind}/${obj.metadata.name}`) } };
}

/** A name-based (version 5 layout) UUID in fleetgate's own namespace. */
export function stableUID(key: string): string {
  const b = createHash('sha1').update('fleetgate.io/flowcontrol/').update(key).digest();
  b[6] = (b[6]! & 0x0f) | 0x50;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.subarray(0, 16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export type DirWatcher = FileWatcher;

/**
 * Calls onChange (serialized, never overlapping) whenever the directory's YAML files change: on fs.watch events
 * (debounced) and when a periodic stat sees a different set of names, sizes or modification times.
 */
export function watchFlowControlDir(
  dir: string,
  intervalMs: number,
  onChange: () => Promise<void>,
  onError: (err: unknown) => void,
  initialSignature?: string,
): DirWatcher {
  return watchForChanges({ dir, intervalMs, signature: () => flowControlDirSignature(dir), initialSignature, onChange, onError });
}

/** What the directory's watcher compares: the YAML files' names, sizes and modification times. */
export async function flowControlDirSignature(dir: string): Promise<string> {
  const parts: string[] = [];
  for (const f of await yamlFiles(dir)) {
    const s = await stat(f);
    parts.push(`${f}:${s.size}:${s.mtimeMs}`);
  }
  return parts.join('|');
}
