// Flag parsing on top of node:util parseArgs, with our own one-line messages: parseArgs' strict errors are
// multi-line and name no alternatives, so it runs lenient and every token is checked here instead.

import { parseArgs } from 'node:util';

/** Wrong usage of the command line: one line on stderr, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export interface FlagSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  /** Placeholder for the value in help, e.g. DIR. */
  value?: string;
  help: string;
}

export type FlagSpecs = Record<string, FlagSpec>;

export interface Flags {
  /** Values of string flags in the order given. */
  strings: Map<string, string[]>;
  bools: Set<string>;
}

const HELP: FlagSpec = { type: 'boolean', help: 'show this help' };

/** Parses args against specs (plus --help/-h); cmd prefixes every message ("fleetgate certs init"). */
export function parseFlags(cmd: string, args: string[], specs: FlagSpecs): Flags {
  const all: FlagSpecs = { ...specs, help: HELP };
  const options = Object.fromEntries(
    Object.entries(all).map(([name, s]) => [name, { type: s.type, multiple: s.multiple ?? false, ...(name === 'help' ? { short: 'h' } : {}) }]),
  );
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  const flags: Flags = { strings: new Map(), bools: new Set() };
  const allowed = () => Object.keys(all).map((n) => `--${n}`).join(', ');
  let afterTerminator = false;
  for (const t of tokens) {
    if (t.kind === 'option-terminator') {
      afterTerminator = true;
      continue;
    }
    if (t.kind === 'positional') {
      throw new UsageError(`${cmd}: unexpected argument ${JSON.stringify(t.value)}${afterTerminator ? '' : '; this command takes flags only'} (allowed: ${allowed()})`);
    }
    const spec = Object.hasOwn(all, t.name) ? all[t.name] : undefined;
    if (!spec) {
      throw new UsageError(`${cmd}: unknown flag ${t.rawName}; allowed: ${allowed()}`);
    }
    if (spec.type === 'boolean') {
      if (t.inlineValue) throw new UsageError(`${cmd}: --${t.name} takes no value (got ${JSON.stringify(t.value)})`);
      flags.bools.add(t.name);
      continue;
    }
    // Like strict parseArgs: `--dir --force` is a forgotten value, not a directory named "--force".
    if (t.value === undefined || (!t.inlineValue && t.value.startsWith('-') && t.value !== '-')) {
      throw new UsageError(`${cmd}: --${t.name} needs a value (${spec.value ?? 'VALUE'})`);
    }
    const seen = flags.strings.get(t.name);
    if (seen && !spec.multiple) throw new UsageError(`${cmd}: --${t.name} is given more than once; give it once`);
    if (seen) seen.push(t.value);
    else flags.strings.set(t.name, [t.value]);
  }
  return flags;
}

export function optional(flags: Flags, name: string): string | undefined {
  return flags.strings.get(name)?.[0];
}

export function required(cmd: string, flags: Flags, name: string, what: string): string {
  const v = optional(flags, name);
  if (v === undefined || v === '') throw new UsageError(`${cmd}: --${name} is required (${what})`);
  return v;
}

export function all(flags: Flags, name: string): string[] {
  return flags.strings.get(name) ?? [];
}

/** A whole number flag in [min, max], or def when absent. */
export function intFlag(cmd: string, flags: Flags, name: string, min: number, max: number, what: string, def: number): number;
export function intFlag(cmd: string, flags: Flags, name: string, min: number, max: number, what: string): number | undefined;
export function intFlag(cmd: string, flags: Flags, name: string, min: number, max: number, what: string, def?: number): number | undefined {
  const v = optional(flags, name);
  if (v === undefined) return def;
  const n = /^\d+$/.test(v) ? Number(v) : NaN;
  if (!(n >= min && n <= max)) throw new UsageError(`${cmd}: --${name} ${JSON.stringify(v)} is not ${what}`);
  return n;
}

/** The Flags section of a command's help. */
export function flagHelp(specs: FlagSpecs): string {
  const rows = Object.entries({ ...specs, help: HELP }).map(([name, s]) => {
    const left = `${name === 'help' ? '-h, ' : ''}--${name}${s.type === 'string' ? ` ${s.value ?? 'VALUE'}` : ''}`;
    return [left, s.help] as const;
  });
  const width = Math.max(...rows.map(([l]) => l.length)) + 3;
  return rows.map(([l, h]) => `  ${l.padEnd(width)}${h}`).join('\n');
}
