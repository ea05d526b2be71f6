// metav1.Table and PartialObjectMetadata responses, and the Accept negotiation that asks for them
// (k8s.io/apiserver endpoints/handlers: response.go asTable/asPartialObjectMetadata, negotiation/negotiate.go,
// rest.go AllowsMediaTypeTransform). Everything is built as JSON text so lists can stream rows and reuse each
// object's pre-serialized JSON.

import type { Printer, TableColumnDefinition } from './printers/index.js';
import { jsonBytes, parseProjected, type Projection } from './projection.js';
import { fieldInvalid, formatFieldError, goEscape, goJson, newBadRequest } from './status.js';

export type IncludeObject = 'None' | 'Metadata' | 'Object';
export type MetaVersion = 'v1' | 'v1beta1';

export interface TableListMeta {
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
}

/** The PartialObjectMetadata the apiserver puts in a row or answers for as=PartialObjectMetadata: full metadata. */
export function partialObjectMetadataJson(obj: any, version: MetaVersion = 'v1'): string {
  return `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/${version}","metadata":${goJson(obj?.metadata ?? {})}}`;
}

/**
 * One Table row. `objJson` is the object's serialized form, used as-is for includeObject=Object (the versioned
 * object); Metadata (also what an empty includeObject means) embeds PartialObjectMetadata; None embeds null.
 */
export function tableRowJson(
  p: Printer,
  obj: any,
  objJson: string,
  include: IncludeObject,
  nowMs: number,
  version: MetaVersion = 'v1',
): string {
  let object: string;
  switch (include) {
    case 'Object':
      object = objJson;
      break;
    case 'None':
      object = 'null';
      break;
    default:
      object = partialObjectMetadataJson(obj, version);
  }
  return rowJson(p, obj, nowMs, object);
}

/**
 * One Table row from the object's stored JSON (text or UTF-8 bytes), the same bytes tableRowJson writes for the
 * parsed object. Only what the printer reads (Printer.reads) is parsed; PartialObjectMetadata embeds the metadata's
 * text as stored, which is what serializing it again would give: stored JSON is compact, as JSON.stringify or Go
 * writes it, and a parse keeps its key order.
 */
export function tableRowFromJson(
  p: Printer,
  json: string | Uint8Array,
  include: IncludeObject,
  nowMs: number,
  version: MetaVersion = 'v1',
): string {
  if (!p.reads) {
    const text = typeof json === 'string' ? json : jsonBytes(json).toString('utf8');
    return tableRowJson(p, JSON.parse(text), text, include, nowMs, version);
  }
  const reads = withMetadata(p.reads);
  if (include === 'Object') {
    const bytes = jsonBytes(json);
    return rowJson(p, parseProjected(bytes, reads), nowMs, typeof json === 'string' ? json : bytes.toString('utf8'));
  }
  if (include === 'None') return rowJson(p, parseProjected(json, reads), nowMs, 'null');
  const texts: Record<string, string> = {};
  const obj = parseProjected(json, reads, texts);
  const meta = texts.metadata;
  // Absent or null metadata serializes as {} (partialObjectMetadataJson's `?? {}`).
  const metaJson = meta === undefined || meta === 'null' ? '{}' : goEscape(meta);
  return rowJson(p, obj, nowMs, `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/${version}","metadata":${metaJson}}`);
}

const withMetadataCache = new WeakMap<Projection, Projection>();

/** The printer's projection with the whole metadata: every printer reads it, and PartialObjectMetadata embeds it. */
function withMetadata(reads: Projection): Projection {
  if (reads.metadata === true) return reads;
  let p = withMetadataCache.get(reads);
  if (!p) withMetadataCache.set(reads, (p = { ...reads, metadata: true }));
  return p;
}

// A string that goJson writes as it is, between quotes: nothing JSON.stringify or Go escapes, no lone surrogates.
const NEEDS_ESCAPE = /["\\\u0000-\u001f<>&\u2028\u2029\ud800-\udfff]/;
const NONE_JSON = goJson('<none>');

/** goJson(cells), without JSON.stringify's and the escape pass's cost for the plain strings most cells are. */
function cellsJson(cells: readonly unknown[]): string {
  let s = '[';
  for (let i = 0; i < cells.length; i++) {
    const v = cells[i];
    if (i > 0) s += ',';
    if (typeof v !== 'string') s += goJson(v ?? null);
    else if (v === '<none>') s += NONE_JSON;
    else if (!NEEDS_ESCAPE.test(v)) s += `"${v}"`;
    else s += goJson(v);
  }
  return s + ']';
}

/** A row's JSON around its embedded object (already JSON). */
function rowJson(p: Printer, obj: any, nowMs: number, object: string): string {
  let out = `{"cells":${cellsJson(p.cells(obj, nowMs))}`;
  const conditions = p.conditions?.(obj);
  if (conditions && conditions.length > 0) out += `,"conditions":${goJson(conditions)}`;
  return `${out},"object":${object}}`;
}

const columnsJsonCache = new WeakMap<TableColumnDefinition[], string>();

function columnsJson(columns: TableColumnDefinition[]): string {
  let s = columnsJsonCache.get(columns);
  if (s === undefined) {
    s = goJson(columns.map((c) => ({ name: c.name, type: c.type, format: c.format, description: c.description, priority: c.priority })));
    columnsJsonCache.set(columns, s);
  }
  return s;
}

/** ListMeta as Go marshals it: every field omitempty, the object itself always present. */
function listMetaJson(m: TableListMeta): string {
  const parts: string[] = [];
  if (m.resourceVersion) parts.push(`"resourceVersion":${goJson(m.resourceVersion)}`);
  if (m.continue) parts.push(`"continue":${goJson(m.continue)}`);
  if (m.remainingItemCount !== undefined && m.remainingItemCount !== null) parts.push(`"remainingItemCount":${m.remainingItemCount}`);
  return `{${parts.join(',')}}`;
}

/**
 * The Table around its rows: write `prefix`, the rows separated by commas, then `suffix`. columnDefinitions is
 * null with noHeaders (watch events after the first, TableOptions.NoHeaders). No trailing newline: a response body
 * adds one, as Go's json.Encoder does; a watch event embeds the Table as is.
 */
export function tableHeadJson(
  p: Printer,
  listMeta: TableListMeta,
  noHeaders = false,
  version: MetaVersion = 'v1',
): { prefix: string; suffix: string } {
  const cols = noHeaders ? 'null' : columnsJson(p.columns);
  return {
    prefix: `{"kind":"Table","apiVersion":"meta.k8s.io/${version}","metadata":${listMetaJson(listMeta)},"columnDefinitions":${cols},"rows":[`,
    suffix: ']}',
  };
}

export interface TableItem {
  obj: any;
  /** The object's JSON; only needed for includeObject=Object (defaults to JSON of obj). */
  json?: string;
}

/**
 * A whole Table for small results. For a single object (a GET) pass one item and the object's resourceVersion as
 * listMeta.resourceVersion, as the apiserver copies it from the object.
 */
export function tableJson(
  p: Printer,
  items: readonly TableItem[],
  listMeta: TableListMeta,
  include: IncludeObject,
  nowMs: number,
  opts: { noHeaders?: boolean; version?: MetaVersion } = {},
): string {
  const version = opts.version ?? 'v1';
  const { prefix, suffix } = tableHeadJson(p, listMeta, opts.noHeaders ?? false, version);
  let rows = '';
  for (let i = 0; i < items.length; i++) {
    const it = items[i]!;
    if (i > 0) rows += ',';
    rows += tableRowJson(p, it.obj, include === 'Object' ? (it.json ?? goJson(it.obj)) : '', include, nowMs, version);
  }
  return prefix + rows + suffix;
}

/**
 * ?includeObject= (TableOptions): empty means Metadata. Anything else throws the apiserver's 400
 * (ValidateTableOptions via optionsForTransform).
 */
export function parseIncludeObject(v: string | undefined | null): IncludeObject {
  if (v === undefined || v === null || v === '' || v === 'Metadata') return 'Metadata';
  if (v === 'None' || v === 'Object') return v;
  const err = fieldInvalid('includeObject', v, "must be 'Metadata', 'Object', 'None', or empty");
  throw newBadRequest(`Unable to convert to Table as requested: ${formatFieldError(err)}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Accept negotiation

export interface AcceptForTable {
  as: 'Table' | 'PartialObjectMetadata' | 'PartialObjectMetadataList' | null;
  version: MetaVersion;
  /** The chosen clause is JSON (or a wildcard); false when it named YAML or protobuf, which we answer in JSON. */
  json: boolean;
  /** false: nothing in Accept can be served; answer 406 (status.ts newNotAcceptable()). */
  acceptable: boolean;
}

interface Clause {
  type: string;
  subType: string;
  q: number;
  params: Map<string, string>;
}

// The serializers a built-in resource endpoint offers, in the apiserver's order (1.34, CBOR off).
const SERIALIZERS: readonly { type: string; subType: string; stream: boolean }[] = [
  { type: 'application', subType: 'json', stream: true },
  { type: 'application', subType: 'yaml', stream: false },
  { type: 'application', subType: 'vnd.kubernetes.protobuf', stream: true },
];

function trimSpaces(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && s.charCodeAt(a) === 32) a++;
  while (b > a && s.charCodeAt(b - 1) === 32) b--;
  return s.slice(a, b);
}

/** goautoneg.ParseAccept, including its quirks (only spaces trimmed; malformed clauses dropped). */
function parseAccept(header: string): Clause[] {
  const out: Clause[] = [];
  for (const rawPart of header.split(',')) {
    const part = trimSpaces(rawPart);
    const semi = part.indexOf(';');
    const mt = semi < 0 ? part : part.slice(0, semi);
    const slash = mt.indexOf('/');
    let type: string;
    let subType: string;
    if (slash < 0) {
      type = trimSpaces(mt);
      if (type !== '*') continue;
      subType = '*';
    } else {
      type = trimSpaces(mt.slice(0, slash));
      const rest = mt.slice(slash + 1);
      if (rest.includes('/')) continue;
      subType = trimSpaces(rest);
    }
    const params = new Map<string, string>();
    let q = 1;
    if (semi >= 0) {
      for (const p of part.slice(semi + 1).split(';')) {
        const eq = p.indexOf('=');
        if (eq < 0) continue;
        const value = p.slice(eq + 1);
        if (value.includes('=')) continue;
        const token = trimSpaces(p.slice(0, eq));
        if (token === 'q') {
          const f = parseFloat(value);
          q = Number.isNaN(f) ? 0 : Math.fround(f);
        } else {
          params.set(token, trimSpaces(value));
        }
      }
    }
    out.push({ type, subType, q, params });
  }
  // Go sorts with sort.Sort, which for short slices is an insertion sort: stable under this odd Less.
  const less = (a: Clause, b: Clause) =>
    a.q > b.q || (a.type !== '*' && b.type === '*') || (a.subType !== '*' && b.subType === '*');
  for (let i = 1; i < out.length; i++) {
    for (let j = i; j > 0 && less(out[j]!, out[j - 1]!); j--) {
      const t = out[j]!;
      out[j] = out[j - 1]!;
      out[j - 1] = t;
    }
  }
  return out;
}

const NOT_ACCEPTABLE: AcceptForTable = { as: null, version: 'v1', json: true, acceptable: false };

/**
 * Content negotiation for a resource GET/LIST/WATCH: which conversion (Table, PartialObjectMetadata(List)) the
 * client asked for, kubectl's `application/json;as=Table;v=v1;g=meta.k8s.io,...;v=v1beta1...,application/json`
 * included. Tables are only served as JSON/YAML; a protobuf clause for them is skipped, as the apiserver does.
 */
export function parseAcceptForTable(accept: string | undefined): AcceptForTable {
  if (accept === undefined || accept === '') return { as: null, version: 'v1', json: true, acceptable: true };
  for (const clause of parseAccept(accept)) {
    for (const s of SERIALIZERS) {
      const matches =
        (clause.type === s.type && (clause.subType === s.subType || clause.subType === '*')) ||
        (clause.type === '*' && clause.subType === '*');
      if (!matches) continue;
      const r = acceptClause(clause, s);
      if (r) return r;
    }
  }
  return NOT_ACCEPTABLE;
}

function acceptClause(clause: Clause, s: { subType: string; stream: boolean }): AcceptForTable | null {
  let kind: string | undefined;
  let group: string | undefined;
  let version: string | undefined;
  for (const [k, v] of clause.params) {
    switch (k) {
      case 'as':
        kind = v;
        break;
      case 'g':
        group = v;
        break;
      case 'v':
        version = v;
        break;
      case 'stream':
        if (v !== '' && (!s.stream || v !== 'watch')) return null;
        break;
      case 'sv':
        if (v !== '' && v !== 'v1') return null;
        break;
    }
  }
  const json = s.subType === 'json';
  const converts = kind !== undefined || group !== undefined || version !== undefined;
  if (!converts) return { as: null, version: 'v1', json, acceptable: true };
  if (group !== 'meta.k8s.io' || (version !== 'v1' && version !== 'v1beta1')) return null;
  switch (kind) {
    case 'Table':
      if (s.subType !== 'json' && s.subType !== 'yaml') return null;
      return { as: 'Table', version, json, acceptable: true };
    case 'PartialObjectMetadata':
    case 'PartialObjectMetadataList':
      return { as: kind, version, json, acceptable: true };
  }
  return null;
}
