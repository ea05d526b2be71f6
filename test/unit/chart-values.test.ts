// charts/fleetgate/values.yaml against its schema and its own comments, without helm: every value is documented
// and covered by values.schema.json, and the chart's defaults ride on the gateway's own defaults.
// (Rendering, linting and the real apiserver's verdict are in test/e2e/helm.test.ts.)

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isMap, parse, parseDocument, type YAMLMap } from 'yaml';
import { DEFAULTS } from '../../src/config/index.js';

const CHART = join(import.meta.dirname, '../../charts/fleetgate');
const valuesText = readFileSync(join(CHART, 'values.yaml'), 'utf8');
const values = parse(valuesText) as Record<string, any>;
const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as Record<string, any>;

type Schema = Record<string, any>;

function resolve(s: Schema): Schema {
  const ref = s.$ref as string | undefined;
  if (!ref) return s;
  return resolve(ref.replace(/^#\//, '').split('/').reduce((o: Schema, k) => o[k], schema));
}

/** Every path in values.yaml, with whether it is a leaf (a value rather than a group of values). */
function paths(v: unknown, prefix: string[] = []): Array<{ path: string[]; leaf: boolean }> {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || Object.keys(v).length === 0) return [{ path: prefix, leaf: true }];
  const here = prefix.length ? [{ path: prefix, leaf: false }] : [];
  return [...here, ...Object.entries(v).flatMap(([k, x]) => paths(x, [...prefix, k]))];
}

/** The schema node for path, or undefined where the schema does not describe it. */
function schemaAt(path: string[]): Schema | undefined {
  let s: Schema | undefined = resolve(schema);
  for (const k of path) {
    if (!s) return undefined;
    const next: Schema | undefined = s.properties?.[k] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined);
    s = next ? resolve(next) : undefined;
  }
  return s;
}

// Kubernetes' own fields (container resources, probe timings) and the gateway's configuration, which
// config/fleetgate.example.yaml documents field by field.
const documentedElsewhere = (path: string[]) => path[0] === 'config' || path.includes('resources') || (path[0] === 'probes' && path.length === 3);

describe('charts/fleetgate/values.yaml', () => {
  it('every value is in values.schema.json, and the schema names no value that does not exist', () => {
    const missing = paths(values)
      .filter(({ path }) => !path.includes('requests') && !path.includes('limits'))
      .filter(({ path }) => schemaAt(path) === undefined)
      .map(({ path }) => path.join('.'));
    expect(missing).toEqual([]);
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties).filter((k) => k !== 'global' && !(k in values))).toEqual([]);
  });

  it('every value has a comment', () => {
    const doc = parseDocument(valuesText);
    const undocumented: string[] = [];
    const walk = (node: unknown, prefix: string[]) => {
      if (!isMap(node)) return;
      (node as YAMLMap).items.forEach((pair, i) => {
        const key = pair.key as { value: unknown; commentBefore?: string | null };
        const path = [...prefix, String(key.value)];
        // The yaml library hangs a map's first comment on the map itself.
        const comment = key.commentBefore ?? (i === 0 ? (node as YAMLMap).commentBefore : undefined);
        const leaf = !isMap(pair.value) || (pair.value as YAMLMap).items.length === 0;
        if (leaf && !comment && !documentedElsewhere(path)) undocumented.push(path.join('.'));
        walk(pair.value, path);
      });
    };
    walk(doc.contents, []);
    expect(undocumented).toEqual([]);
  });

  it('the enums hold the values the templates switch on', () => {
    expect(schemaAt(['topology'])!.enum).toEqual(['single', 'split']);
    expect(schemaAt(['podAntiAffinity'])!.enum).toEqual(['soft', 'hard']);
    expect(schemaAt(['replicas'])!.type).toBe('integer');
    expect(values.topology).toBe('single');
    expect(values.replicas).toBeGreaterThanOrEqual(2);
    expect(values.cacheService.replicas).toBeGreaterThanOrEqual(2);
  });

  it('the configuration defaults are the gateway\'s own', () => {
    const c = values.config;
    expect(c.server.maxRequestBodyBytes).toBe(DEFAULTS.maxRequestBodyBytes);
    expect(c.server.requestTimeoutSeconds).toBe(DEFAULTS.requestTimeoutSeconds);
    expect(c.server.shutdownGracePeriodSeconds).toBe(DEFAULTS.shutdownGracePeriodSeconds);
    expect(c.controlPlane.timeoutSeconds).toBe(DEFAULTS.controlPlaneTimeoutSeconds);
    expect(c.cache).toMatchObject({ qps: DEFAULTS.memberQPS, burst: DEFAULTS.memberBurst, windowSize: DEFAULTS.cacheWindowSize });
    expect(c.logging.level).toBe(DEFAULTS.logLevel);
    // The audit log's emptyDir must hold the live file and every rotated one.
    const limit = /^(\d+)Gi$/.exec(values.auditLog.sizeLimit);
    expect(limit).not.toBeNull();
    expect(Number(limit![1]) * 2 ** 30).toBeGreaterThan(values.auditLog.maxSizeBytes * (values.auditLog.maxBackups + 1));
  });
});
