// Custom resources: the apiextensions-apiserver table convertor (registry/customresource/tableconvertor, 1.34).
// Columns are Name plus the version's additionalPrinterColumns; a version with none gets the default
// Age column (type date over .metadata.creationTimestamp). Values come from the column's JSONPath.

import { JSONPath } from 'jsonpath-plus';
import { humanDuration } from '../duration.js';
import { goFloat } from '../patch.js';
import { goJson } from '../status.js';
import { CREATION_DESC, NAME_COL, ZERO_TIME, col, nameOf } from './builtins.js';
import type { Printer, TableColumnDefinition } from './index.js';

type Getter = (obj: any) => unknown[];

// A plain field path (.a.b.c) is walked directly; anything else (filters, wildcards, brackets) goes to jsonpath-plus.
const SIMPLE_PATH = /^(\.[A-Za-z0-9_-]+)+$/;

function getterFor(jsonPath: string): Getter {
  if (SIMPLE_PATH.test(jsonPath)) {
    const keys = jsonPath.slice(1).split('.');
    return (obj) => {
      let v = obj;
      for (const k of keys) {
        if (v === null || typeof v !== 'object' || Array.isArray(v) || !Object.hasOwn(v, k)) return [];
        v = v[k];
      }
      return [v];
    };
  }
  const path = '$' + (jsonPath.startsWith('.') || jsonPath.startsWith('[') ? jsonPath : '.' + jsonPath);
  return (obj) => {
    try {
      return JSONPath({ path, json: obj, wrap: true, eval: 'safe' }) as unknown[];
    } catch {
      return [];
    }
  };
}

/** Go's json.Marshal of a decoded JSON value: map keys sorted, HTML characters escaped. */
function goMarshal(v: unknown): string {
  return goJson(sortKeys(v));
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    const o: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) o[k] = sortKeys((v as Record<string, unknown>)[k]);
    return o;
  }
  return v;
}

/** jsonpath PrintResults of one value: composites as JSON, scalars as fmt prints them, null as text/template does. */
function printValue(v: unknown): string {
  if (v === null || v === undefined) return '<no value>';
  if (typeof v === 'object') return goMarshal(v);
  if (typeof v === 'number') return Number.isInteger(v) && Math.abs(v) < 1e21 ? String(v) : goFloat(v);
  return String(v);
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** cellForJSONValue for the non-string column types. */
function typedCell(type: string, v: unknown, nowMs: number): unknown {
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'integer':
      return typeof v === 'number' ? Math.trunc(v) : null;
    case 'number':
      return typeof v === 'number' ? v : null;
    case 'boolean':
      return typeof v === 'boolean' ? v : null;
    case 'date': {
      if (typeof v !== 'string') return null;
      if (v === '' || v === 'null') return '<unknown>';
      if (!RFC3339.test(v)) return '<invalid>';
      const t = Date.parse(v);
      if (Number.isNaN(t)) return '<invalid>';
      return t === ZERO_TIME ? '<unknown>' : humanDuration(nowMs - t);
    }
  }
  return null;
}

function buildCrdPrinter(columns: any[]): Printer {
  const defs: TableColumnDefinition[] = [NAME_COL];
  const getters: Getter[] = [];
  const types: string[] = [];
  for (const c of columns) {
    const jsonPath = String(c?.jsonPath ?? '');
    defs.push(col(String(c?.name ?? ''), String(c?.type ?? ''),
      c?.description ? String(c.description) : `Custom resource definition column (in JSONPath format): ${jsonPath}`,
      Number(c?.priority ?? 0), String(c?.format ?? '')));
    getters.push(getterFor(jsonPath));
    types.push(String(c?.type ?? ''));
  }
  return {
    columns: defs,
    cells(obj, nowMs) {
      const cells: unknown[] = [nameOf(obj)];
      for (let i = 0; i < getters.length; i++) {
        const results = getters[i]!(obj);
        if (results.length === 0) {
          cells.push(null);
          continue;
        }
        const v = results[0];
        cells.push(types[i] === 'string' ? printValue(v) : typedCell(types[i]!, v, nowMs));
      }
      return cells;
    },
  };
}

const DEFAULT_COLUMNS = [{ name: 'Age', type: 'date', description: CREATION_DESC, jsonPath: '.metadata.creationTimestamp' }];
const DEFAULT_CRD_PRINTER = buildCrdPrinter(DEFAULT_COLUMNS);
const byColumns = new WeakMap<any[], Printer>();

/** The table printer for one served CRD version, given its additionalPrinterColumns. */
export function crdPrinter(additionalPrinterColumns: any[] | undefined): Printer {
  if (!additionalPrinterColumns || additionalPrinterColumns.length === 0) return DEFAULT_CRD_PRINTER;
  let p = byColumns.get(additionalPrinterColumns);
  if (!p) byColumns.set(additionalPrinterColumns, (p = buildCrdPrinter(additionalPrinterColumns)));
  return p;
}
