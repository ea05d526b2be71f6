// Small readers for validating a parsed YAML tree by hand. Each problem becomes one line naming the field path,
// the value found and what is allowed; readers never throw, so one pass reports every problem in the file.

import { homedir } from 'node:os';
import { isAbsolute, resolve } from 'node:path';

export interface Walk {
  errors: string[];
  /** Directory relative paths resolve against: the config file's. */
  baseDir: string;
}

/** Reads one value; undefined means it was invalid and a problem was recorded. */
export type Reader<T> = (w: Walk, path: string, v: unknown) => T | undefined;

export function problem(w: Walk, path: string, msg: string): void {
  w.errors.push(path ? `config: ${path}: ${msg}` : `config: ${msg}`);
}

export function child(path: string, key: string): string {
  const k = /^[A-Za-z_][A-Za-z0-9_-]*$/.test(key) ? key : JSON.stringify(key);
  if (!path) return k;
  return k.startsWith('"') ? `${path}[${k}]` : `${path}.${k}`;
}

export function item(path: string, i: number): string {
  return `${path}[${i}]`;
}

/** A value as it appears in a message: scalars quoted the way YAML/JSON would print them, containers by kind. */
export function show(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return JSON.stringify(v.length > 80 ? `${v.slice(0, 77)}...` : v);
  return String(v);
}

function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A mapping with only the allowed keys. An absent or empty (null) section reads as {} so that `cache:` with nothing
 * under it is fine; undefined means the value was not a mapping at all.
 */
export function mapping(w: Walk, path: string, v: unknown, allowed: readonly string[]): Record<string, unknown> | undefined {
  if (v === undefined || v === null) return {};
  if (!isMapping(v)) {
    problem(w, path, `${show(v)} is not a mapping${allowed.length ? ` (fields: ${allowed.join(', ')})` : ''}`);
    return undefined;
  }
  for (const key of Object.keys(v)) {
    if (allowed.includes(key)) continue;
    const near = allowed.find((a) => closeTo(a, key));
    const hint = near ? `did you mean "${near}"? ` : '';
    problem(w, child(path, key), allowed.length ? `unknown field; ${hint}allowed: ${allowed.join(', ')}` : 'unknown field; this section takes no fields yet');
  }
  return v;
}

/** The value of an optional field, or def when it is absent or invalid (invalid is recorded). */
export function opt<T>(w: Walk, obj: Record<string, unknown>, path: string, key: string, read: Reader<T>, def: T): T {
  const v = obj[key];
  if (v === undefined) return def;
  return read(w, child(path, key), v) ?? def;
}

/** The value of a required field; what says what belongs there when it is missing. */
export function req<T>(w: Walk, obj: Record<string, unknown>, path: string, key: string, read: Reader<T>, what: string): T | undefined {
  const v = obj[key];
  if (v === undefined || v === null) {
    problem(w, child(path, key), `missing; ${what} is required`);
    return undefined;
  }
  return read(w, child(path, key), v);
}

export const bool: Reader<boolean> = (w, path, v) => {
  if (typeof v === 'boolean') return v;
  problem(w, path, `${show(v)} is not a boolean (true or false)`);
  return undefined;
};

export function text(opts: { empty?: boolean } = {}): Reader<string> {
  return (w, path, v) => {
    if (typeof v === 'string' && (opts.empty || v !== '')) return v;
    problem(w, path, `${show(v)} is not ${opts.empty ? 'a string' : 'a non-empty string'}`);
    return undefined;
  };
}

/** A whole number in [min, max]; what describes the allowed values ("a port number (1-65535)"). */
export function int(min: number, max: number, what: string): Reader<number> {
  return (w, path, v) => {
    if (typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max) return v;
    // A quoted number is the likeliest way to get here with a "right" value; say so rather than leave it a puzzle.
    const quoted = typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v)) ? '; write numbers without quotes' : '';
    problem(w, path, `${show(v)} is not ${what}${quoted}`);
    return undefined;
  };
}

export function oneOf<T extends string>(values: readonly T[]): Reader<T> {
  return (w, path, v) => {
    if (typeof v === 'string' && (values as readonly string[]).includes(v)) return v as T;
    problem(w, path, `${show(v)} is not one of ${values.join(', ')}`);
    return undefined;
  };
}

/** A file path, made absolute against the config file's directory; a leading ~/ is the user's home. */
export const filePath: Reader<string> = (w, path, v) => {
  if (typeof v !== 'string' || v === '') {
    problem(w, path, `${show(v)} is not a file path`);
    return undefined;
  }
  if (v === '~' || v.startsWith('~/')) return resolve(homedir(), v.slice(2));
  return isAbsolute(v) ? resolve(v) : resolve(w.baseDir, v);
};

/** A list of distinct non-empty strings; a list may not be empty unless allowEmpty. */
export function stringList(opts: { allowEmpty?: boolean; each?: Reader<string> } = {}): Reader<string[]> {
  const each = opts.each ?? text();
  return (w, path, v) => {
    if (!Array.isArray(v)) {
      problem(w, path, `${show(v)} is not a list of strings`);
      return undefined;
    }
    if (v.length === 0 && !opts.allowEmpty) {
      problem(w, path, 'is an empty list; at least one entry is required');
      return undefined;
    }
    const out: string[] = [];
    let ok = true;
    v.forEach((e, i) => {
      const s = each(w, item(path, i), e);
      if (s === undefined) ok = false;
      else if (out.includes(s)) {
        problem(w, item(path, i), `${show(s)} is listed twice`);
        ok = false;
      } else out.push(s);
    });
    return ok ? out : undefined;
  };
}

/** A mapping from strings to strings (YAML numbers and booleans are not silently turned into strings). */
export const stringMap: Reader<Record<string, string>> = (w, path, v) => {
  if (v === null) return {};
  if (!isMapping(v)) {
    problem(w, path, `${show(v)} is not a mapping of strings to strings`);
    return undefined;
  }
  const out: Record<string, string> = {};
  let ok = true;
  for (const [k, val] of Object.entries(v)) {
    if (typeof val === 'string') out[k] = val;
    else {
      problem(w, child(path, k), `${show(val)} is not a string${typeof val === 'number' || typeof val === 'boolean' ? '; quote it' : ''}`);
      ok = false;
    }
  }
  return ok ? out : undefined;
};

/** Edit distance at most 2 (and shorter than the word): a likely typo of a known field name. */
function closeTo(known: string, typed: string): boolean {
  const a = known.toLowerCase();
  const b = typed.toLowerCase();
  if (a === b) return true;
  if (Math.abs(a.length - b.length) > 2) return false;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]! <= Math.min(2, a.length - 1);
}
