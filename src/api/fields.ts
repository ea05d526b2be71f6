// Field selectors as k8s.io/apimachinery/pkg/fields parses and matches them, and the per-resource field label
// conversions (pkg/apis/*/v1/conversion.go) and selectable field sets (pkg/registry/*/strategy.go) that decide
// which fields a kube-apiserver lets you select on, with its exact error text.

import { intern } from './intern.js';
import { goQuote, newBadRequest, type StatusError } from './status.js';

export interface FieldRequirement {
  field: string;
  operator: '=' | '==' | '!=';
  value: string;
}

export interface FieldSelector {
  readonly requirements: readonly FieldRequirement[];
  readonly empty: boolean;
  matches(fields: Readonly<Record<string, string>>): boolean;
  /** RequiresExactMatch: the value the selector demands for `field`, if it demands one. */
  exact(field: string): string | undefined;
  toString(): string;
}

/** A selector the parser rejected; the message is apimachinery's. */
export class FieldSelectorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FieldSelectorError';
  }
}

class Selector implements FieldSelector {
  readonly empty: boolean;
  constructor(readonly requirements: readonly FieldRequirement[]) {
    this.empty = requirements.length === 0;
  }
  matches(fields: Readonly<Record<string, string>>): boolean {
    const rs = this.requirements;
    for (let i = 0; i < rs.length; i++) {
      const r = rs[i]!;
      // fields.Set.Get returns "" for a missing field.
      const v = fields[r.field] ?? '';
      if (r.operator === '!=' ? v === r.value : v !== r.value) return false;
    }
    return true;
  }
  exact(field: string): string | undefined {
    for (const r of this.requirements) if (r.operator !== '!=' && r.field === field) return r.value;
    return undefined;
  }
  toString(): string {
    return this.requirements.map((r) => `${r.field}${r.operator === '!=' ? '!=' : '='}${escapeValue(r.value)}`).join(',');
  }
}

const EVERYTHING: FieldSelector = new Selector([]);

export function everythingFields(): FieldSelector {
  return EVERYTHING;
}

/** fields.OneTermEqualSelector. */
export function oneTermEqualSelector(field: string, value: string): FieldSelector {
  return new Selector([{ field, operator: '=', value }]);
}

/** fields.EscapeValue: \ , and = are backslash-escaped in values. */
export function escapeValue(s: string): string {
  return s.replace(/[\\,=]/g, (c) => '\\' + c);
}

/** fields.UnescapeValue; Go prints an unescaped rune with %v, i.e. as its number. */
export function unescapeValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c === '\\' || c === ',' || c === '=') out += c;
      else throw new FieldSelectorError(`invalid field selector: invalid escape sequence: \\${c}`);
      inSlash = false;
      continue;
    }
    if (c === '\\') inSlash = true;
    else if (c === ',' || c === '=') throw new FieldSelectorError(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`);
    else out += c;
  }
  if (inSlash) throw new FieldSelectorError('invalid field selector: invalid escape sequence: \\');
  return out;
}

/** splitTerms: commas split terms unless backslash-escaped (the backslash stays in the term). */
function splitTerms(s: string): string[] {
  if (s.length === 0) return [];
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(s.slice(start));
  return terms;
}

const TERM_OPERATORS = ['!=', '==', '='] as const;

/** splitTerm: the first operator occurrence splits; the left side has no escaping. */
function splitTerm(term: string): [string, FieldRequirement['operator'], string] | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of TERM_OPERATORS) {
      if (term.startsWith(op, i)) return [term.slice(0, i), op, term.slice(i + op.length)];
    }
  }
  return undefined;
}

/** fields.ParseSelector: terms are sorted as raw strings (Go sorts before parsing). "" is Everything. */
export function parseFieldSelector(s: string): FieldSelector {
  const parts = splitTerms(s).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const reqs: FieldRequirement[] = [];
  for (const part of parts) {
    if (part === '') continue;
    const t = splitTerm(part);
    if (!t) throw new FieldSelectorError(`invalid selector: '${s}'; can't understand '${part}'`);
    reqs.push({ field: t[0], operator: t[1], value: unescapeValue(t[2]) });
  }
  return reqs.length === 0 ? EVERYTHING : new Selector(reqs);
}

// ---------------------------------------------------------------------------------------------------------------
// Field label conversion: which labels each kind accepts, and what they are renamed to before matching.

/** Returns the (possibly renamed) label, or throws Error with the apiserver's message. */
export type FieldLabelConversion = (label: string) => string;

function allowList(labels: readonly string[], message: (label: string) => string, renames: Record<string, string> = {}): FieldLabelConversion {
  const allowed = new Set(labels);
  return (label) => {
    if (Object.prototype.hasOwnProperty.call(renames, label)) return renames[label]!;
    if (allowed.has(label)) return label;
    throw new Error(message(label));
  };
}

const notSupported = (label: string) => `field label not supported: ${label}`;

/** runtime.DefaultMetaV1FieldSelectorConversion: built-in kinds with no conversion function of their own. */
const defaultMetaConversion: FieldLabelConversion = (label) => {
  if (label === 'metadata.name' || label === 'metadata.namespace') return label;
  throw new Error(`${goQuote(label)} is not a known field selector: only "metadata.name", "metadata.namespace"`);
};

const POD_CONVERSION = allowList(
  [
    'metadata.name',
    'metadata.namespace',
    'spec.nodeName',
    'spec.restartPolicy',
    'spec.schedulerName',
    'spec.serviceAccountName',
    'spec.hostNetwork',
    'status.phase',
    'status.podIP',
    'status.podIPs',
    'status.nominatedNodeName',
  ],
  notSupported,
  // Old v1 clients send spec.host.
  { 'spec.host': 'spec.nodeName' },
);

const CORE_EVENT_CONVERSION = allowList(
  [
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'source',
    'type',
    'metadata.namespace',
    'metadata.name',
  ],
  notSupported,
);

// events.k8s.io names map onto the core field set ToSelectableFields produces.
const EVENTS_V1_MAPPING: Record<string, string> = {
  reason: 'reason',
  'regarding.kind': 'involvedObject.kind',
  'regarding.namespace': 'involvedObject.namespace',
  'regarding.name': 'involvedObject.name',
  'regarding.uid': 'involvedObject.uid',
  'regarding.apiVersion': 'involvedObject.apiVersion',
  'regarding.resourceVersion': 'involvedObject.resourceVersion',
  'regarding.fieldPath': 'involvedObject.fieldPath',
  reportingController: 'reportingComponent',
  source: 'source',
  type: 'type',
  'metadata.namespace': 'metadata.namespace',
  'metadata.name': 'metadata.name',
};
const EVENTS_V1_CONVERSION: FieldLabelConversion = (label) => {
  if (Object.prototype.hasOwnProperty.call(EVENTS_V1_MAPPING, label)) return EVENTS_V1_MAPPING[label]!;
  throw new Error(notSupported(label));
};

const CONVERSIONS: Record<string, FieldLabelConversion> = {
  '/pods': POD_CONVERSION,
  '/nodes': allowList(['metadata.name', 'spec.unschedulable'], notSupported),
  '/replicationcontrollers': allowList(['metadata.name', 'metadata.namespace', 'status.replicas'], notSupported),
  '/events': CORE_EVENT_CONVERSION,
  '/namespaces': allowList(['status.phase', 'metadata.name'], notSupported),
  '/secrets': allowList(['type', 'metadata.namespace', 'metadata.name'], notSupported),
  '/services': allowList(['metadata.namespace', 'metadata.name', 'spec.clusterIP', 'spec.type'], notSupported),
  'events.k8s.io/events': EVENTS_V1_CONVERSION,
  'batch/jobs': allowList(
    ['metadata.name', 'metadata.namespace', 'status.successful'],
    (label) => `field label ${goQuote(label)} not supported for batchv1.Job`,
  ),
  'certificates.k8s.io/certificatesigningrequests': allowList(['metadata.name', 'spec.signerName'], notSupported),
};

/** Options for resources the built-in table does not know: custom resources served from a CRD. */
export interface CustomResourceFields {
  namespaced: boolean;
  /** spec.selectableFields jsonPaths without the leading dot, e.g. "spec.color". */
  selectableFields?: readonly string[];
}

/** The conversion a kube-apiserver applies for this resource (group "" is core). */
export function fieldLabelConversionFor(group: string, resource: string, crd?: CustomResourceFields): FieldLabelConversion {
  if (crd) {
    // apiextensions-apiserver's converter: name always, namespace only when namespaced, plus selectableFields.
    const extra = new Set(crd.selectableFields ?? []);
    return (label) => {
      if (label === 'metadata.name') return label;
      if (crd.namespaced && label === 'metadata.namespace') return label;
      if (extra.has(label)) return label;
      throw new Error(notSupported(label));
    };
  }
  return CONVERSIONS[`${group}/${resource}`] ?? defaultMetaConversion;
}

/**
 * Selector.Transform with the resource's conversion: renames fields (spec.host, regarding.*) and throws a 400
 * BadRequest carrying the conversion's message, as the list/watch/deletecollection handlers do.
 */
export function convertFieldSelector(
  sel: FieldSelector,
  group: string,
  _version: string,
  resource: string,
  crd?: CustomResourceFields,
): FieldSelector {
  if (sel.empty) return sel;
  const conv = fieldLabelConversionFor(group, resource, crd);
  let changed = false;
  const out: FieldRequirement[] = [];
  for (const r of sel.requirements) {
    let field: string;
    try {
      field = conv(r.field);
    } catch (e) {
      throw newBadRequest((e as Error).message);
    }
    if (field !== r.field) changed = true;
    out.push(field === r.field ? r : { ...r, field });
  }
  return changed ? new Selector(out) : sel;
}

/** Throws the kube-apiserver's 400 when a selector names a field the resource cannot be selected on. */
export function validateFieldSelector(
  sel: FieldSelector,
  group: string,
  version: string,
  resource: string,
  crd?: CustomResourceFields,
): void {
  convertFieldSelector(sel, group, version, resource, crd);
}

/** The 400 for an unparsable ?fieldSelector= (the parser's message, unchanged). */
export function badFieldSelector(err: unknown): StatusError {
  return newBadRequest(err instanceof Error ? err.message : String(err));
}

// ---------------------------------------------------------------------------------------------------------------
// Selectable field sets (ToSelectableFields). Objects are the JSON (v1) forms.

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** generic.ObjectMetaFieldsSet. */
export function objectMetaFields(obj: any, namespaced: boolean): Record<string, string> {
  const m = obj?.metadata ?? {};
  return namespaced ? { 'metadata.name': str(m.name), 'metadata.namespace': str(m.namespace) } : { 'metadata.name': str(m.name) };
}

/** pod.ToSelectableFields. status.podIPs is accepted by conversion but never populated, as upstream. */
export function podFields(pod: any): Record<string, string> {
  const spec = pod?.spec ?? {};
  const status = pod?.status ?? {};
  const meta = pod?.metadata ?? {};
  const podIPs = Array.isArray(status.podIPs) ? status.podIPs : [];
  // The internal Pod keeps hostNetwork under securityContext; in v1 JSON it is spec.hostNetwork.
  return podFieldSet(
    str(spec.nodeName),
    str(spec.restartPolicy),
    str(spec.schedulerName),
    str(spec.serviceAccountName),
    spec.hostNetwork === true,
    str(status.phase),
    podIPs.length > 0 ? str(podIPs[0]?.ip) : str(status.podIP),
    str(status.nominatedNodeName),
    str(meta.name),
    str(meta.namespace),
  );
}

/**
 * A pod's selectable fields from their values: podFields, and the cache's intake that reads them from the pod's
 * bytes (src/cache/intake.ts). One literal, so every pod's set shares one shape.
 */
export function podFieldSet(nodeName: string, restartPolicy: string, schedulerName: string, serviceAccountName: string, hostNetwork: boolean, phase: string, podIP: string, nominatedNodeName: string, name: string, namespace: string): Record<string, string> {
  // The shared values (SHARED_POD_FIELDS) interned as the set is made: every cached pod comes through here, and
  // shareValues' lookups by computed name cost V8 a generic property access each (~2,000 instructions a pod).
  return {
    'spec.nodeName': shared(nodeName),
    'spec.restartPolicy': shared(restartPolicy),
    'spec.schedulerName': shared(schedulerName),
    'spec.serviceAccountName': shared(serviceAccountName),
    'spec.hostNetwork': hostNetwork ? 'true' : 'false',
    'status.phase': shared(phase),
    'status.podIP': podIP,
    'status.nominatedNodeName': shared(nominatedNodeName),
    'metadata.name': name,
    'metadata.namespace': shared(namespace),
  };
}

function shared(v: string): string {
  return v === '' ? v : intern(v);
}

/**
 * Selectable fields whose values many objects share (a node, a namespace, a phase), kept once per process
 * (src/api/intern.ts) in the sets a cache holds. Names, uids and IPs are an object's own and left as they are.
 * podFieldSet interns the same pod fields as it makes a set.
 */
const SHARED_POD_FIELDS = ['spec.nodeName', 'spec.restartPolicy', 'spec.schedulerName', 'spec.serviceAccountName', 'status.phase', 'status.nominatedNodeName', 'metadata.namespace'];
const SHARED_EVENT_FIELDS = ['involvedObject.kind', 'involvedObject.namespace', 'involvedObject.apiVersion', 'involvedObject.fieldPath', 'reason', 'reportingComponent', 'source', 'type', 'metadata.namespace'];

function shareValues(f: Record<string, string>, names: readonly string[]): Record<string, string> {
  for (let i = 0; i < names.length; i++) {
    const v = f[names[i]!];
    if (v !== undefined && v !== '') f[names[i]!] = intern(v);
  }
  return f;
}

/** A pod's or an event's field set made elsewhere (an intake worker), its shared values made the process's own. */
export function shareFieldValues(f: Record<string, string>): Record<string, string> {
  return shareValues(f, 'spec.nodeName' in f ? SHARED_POD_FIELDS : SHARED_EVENT_FIELDS);
}

/**
 * event.ToSelectableFields over the internal Event, for both core/v1 (involvedObject, source, reportingComponent)
 * and events.k8s.io/v1 (regarding, deprecatedSource, reportingController) JSON.
 */
export function eventFields(ev: any): Record<string, string> {
  const ref = ev?.involvedObject ?? ev?.regarding ?? {};
  const reportingController = str(ev?.reportingComponent ?? ev?.reportingController);
  const component = str((ev?.source ?? ev?.deprecatedSource)?.component);
  const fields: Record<string, string> = {
    'involvedObject.kind': str(ref.kind),
    'involvedObject.namespace': str(ref.namespace),
    'involvedObject.name': str(ref.name),
    'involvedObject.uid': str(ref.uid),
    'involvedObject.apiVersion': str(ref.apiVersion),
    'involvedObject.resourceVersion': str(ref.resourceVersion),
    'involvedObject.fieldPath': str(ref.fieldPath),
    reason: str(ev?.reason),
    reportingComponent: reportingController,
    source: component !== '' ? component : reportingController,
    type: str(ev?.type),
    ...objectMetaFields(ev, true),
  };
  return shareValues(fields, SHARED_EVENT_FIELDS);
}

export function namespaceFields(ns: any): Record<string, string> {
  // "name" is a historical extra upstream keeps; conversion never lets a selector reach it.
  return { ...objectMetaFields(ns, false), 'status.phase': str(ns?.status?.phase), name: str(ns?.metadata?.name) };
}

export function secretFields(secret: any): Record<string, string> {
  return { ...objectMetaFields(secret, true), type: str(secret?.type) };
}

export function nodeFields(node: any): Record<string, string> {
  return { ...objectMetaFields(node, false), 'spec.unschedulable': node?.spec?.unschedulable === true ? 'true' : 'false' };
}

export function replicationControllerFields(rc: any): Record<string, string> {
  return { ...objectMetaFields(rc, true), 'status.replicas': String(rc?.status?.replicas ?? 0) };
}

export function serviceFields(svc: any): Record<string, string> {
  return { ...objectMetaFields(svc, true), 'spec.clusterIP': str(svc?.spec?.clusterIP), 'spec.type': str(svc?.spec?.type) };
}

export function jobFields(job: any): Record<string, string> {
  return { ...objectMetaFields(job, true), 'status.successful': String(job?.status?.succeeded ?? 0) };
}

export function certificateSigningRequestFields(csr: any): Record<string, string> {
  return { ...objectMetaFields(csr, false), 'spec.signerName': str(csr?.spec?.signerName) };
}

const metaOnly = (obj: any) => objectMetaFields(obj, true);

const SELECTABLE: Record<string, (obj: any) => Record<string, string>> = {
  '/pods': podFields,
  '/events': eventFields,
  'events.k8s.io/events': eventFields,
  '/namespaces': namespaceFields,
  '/secrets': secretFields,
  '/nodes': nodeFields,
  '/replicationcontrollers': replicationControllerFields,
  '/services': serviceFields,
  'batch/jobs': jobFields,
  'certificates.k8s.io/certificatesigningrequests': certificateSigningRequestFields,
};

/**
 * The field set objects of a resource are matched against. Everything else carries metadata only; a cluster-scoped
 * object's empty namespace behaves exactly like an absent one, so one function serves both scopes.
 */
export function selectableFieldsFor(group: string, resource: string): (obj: any) => Record<string, string> {
  return SELECTABLE[`${group}/${resource}`] ?? metaOnly;
}
