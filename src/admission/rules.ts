// What the gateway's admission protects, and the pure judgements it makes: which label makes an object
// undeletable, which resources have their replicas guarded, and whether a change of replicas is too big a step.
// The step (step.ts) asks the upstream for the facts; everything here decides on them without I/O.

/** A label that, carried with exactly this value, protects an object from deletion. */
export interface ProtectionLabel {
  key: string;
  value: string;
}

export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

export interface DeletionProtectionRules {
  enabled: boolean;
  labels: ProtectionLabel[];
  /**
   * What is looked through when a namespace is deleted. 'discovery': every namespaced resource the upstream serves
   * with list (events excepted), because deleting a namespace deletes all of them whether or not the gateway
   * exposes them; an explicit list is cheaper (two label-selected LISTs per resource and label) but trusts
   * that protected objects are only ever of those kinds.
   */
  namespaceContents: 'discovery' | GroupVersionResource[];
}

export interface ScaleDownRule {
  group: string;
  /** Plural resource name, any version: "deployments", "clonesets". */
  resource: string;
  /** JSON path of the desired replicas in the object, as a CRD's specReplicasPath: ".spec.replicas". */
  replicasPath: string;
  /** Overrides ScaleDownRules.maxReductionPercent for this resource. */
  maxReductionPercent?: number;
  /** Overrides ScaleDownRules.allowScaleToZero for this resource. */
  allowScaleToZero?: boolean;
}

export interface ScaleDownRules {
  enabled: boolean;
  /** The most one change may take away, in percent of the current replicas (default 50: at most half). */
  maxReductionPercent: number;
  /** Whether one change may take a workload from above 0 to 0 replicas (default false). */
  allowScaleToZero: boolean;
  resources: ScaleDownRule[];
}

export interface AdmissionRules {
  deletionProtection: DeletionProtectionRules;
  scaleDown: ScaleDownRules;
}

export const FLEETGATE_PROTECTION_LABEL: ProtectionLabel = { key: 'fleetgate.io/deletion-protection', value: 'Always' };
/** Karmada's own (karmada-webhook's resourcedeletionprotection), honoured so templates labelled for Karmada stay safe here. */
export const KARMADA_PROTECTION_LABEL: ProtectionLabel = { key: 'resourcetemplate.karmada.io/deletion-protected', value: 'Always' };

/** Deployment, StatefulSet, OpenKruise CloneSet and Advanced StatefulSet (apps.kruise.io v1beta1/v1alpha1). */
export const DEFAULT_SCALE_DOWN_RESOURCES: readonly ScaleDownRule[] = [
  { group: 'apps', resource: 'deployments', replicasPath: '.spec.replicas' },
  { group: 'apps', resource: 'statefulsets', replicasPath: '.spec.replicas' },
  { group: 'apps.kruise.io', resource: 'clonesets', replicasPath: '.spec.replicas' },
  { group: 'apps.kruise.io', resource: 'statefulsets', replicasPath: '.spec.replicas' },
];

export function defaultAdmissionRules(): AdmissionRules {
  return {
    deletionProtection: {
      enabled: true,
      labels: [{ ...FLEETGATE_PROTECTION_LABEL }, { ...KARMADA_PROTECTION_LABEL }],
      namespaceContents: 'discovery',
    },
    scaleDown: {
      enabled: true,
      maxReductionPercent: 50,
      allowScaleToZero: false,
      resources: DEFAULT_SCALE_DOWN_RESOURCES.map((r) => ({ ...r })),
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Compiled form: what the step looks up per request.

export interface ScaleLimit {
  replicasPath: readonly string[];
  /** The JSON path as configured, for messages. */
  replicasPathText: string;
  maxReductionPercent: number;
  allowScaleToZero: boolean;
}

export interface CompiledRules {
  deletion: { enabled: boolean; labels: readonly ProtectionLabel[]; namespaceContents: 'discovery' | readonly GroupVersionResource[] };
  /** group -> resource -> limit; two lookups and no string building per request. */
  scale: Map<string, Map<string, ScaleLimit>>;
}

/** Validates and indexes the rules; throws an Error naming the bad entry (configuration errors are fatal at start). */
export function compileRules(rules: AdmissionRules): CompiledRules {
  const dp = rules.deletionProtection;
  for (const l of dp.labels) {
    if (!l.key || typeof l.value !== 'string') throw new Error(`admission: a deletion protection label needs a key and a value (got ${JSON.stringify(l)})`);
  }
  const scale = new Map<string, Map<string, ScaleLimit>>();
  const sd = rules.scaleDown;
  checkPercent(sd.maxReductionPercent, 'scaleDown.maxReductionPercent');
  if (sd.enabled) {
    for (const r of sd.resources) {
      if (!r.resource) throw new Error(`admission: a scale-down rule needs a resource (got ${JSON.stringify(r)})`);
      const pct = r.maxReductionPercent ?? sd.maxReductionPercent;
      checkPercent(pct, `scaleDown rule for ${r.resource}${r.group ? '.' + r.group : ''}`);
      let byResource = scale.get(r.group);
      if (!byResource) scale.set(r.group, (byResource = new Map()));
      byResource.set(r.resource, {
        replicasPath: parseReplicasPath(r.replicasPath),
        replicasPathText: r.replicasPath,
        maxReductionPercent: pct,
        allowScaleToZero: r.allowScaleToZero ?? sd.allowScaleToZero,
      });
    }
  }
  return {
    deletion: { enabled: dp.enabled && dp.labels.length > 0, labels: dp.labels, namespaceContents: dp.namespaceContents },
    scale,
  };
}

function checkPercent(v: number, what: string): void {
  if (!Number.isInteger(v) || v < 0 || v > 100) throw new Error(`admission: ${what}: maxReductionPercent must be a whole number from 0 to 100 (got ${v})`);
}

export function scaleLimitFor(rules: CompiledRules, group: string, resource: string): ScaleLimit | undefined {
  return rules.scale.get(group)?.get(resource);
}

/**
 * ".spec.replicas" (a CRD's specReplicasPath), "spec.replicas" or kubectl's "{.spec.replicas}" as field names.
 * Array indexes are refused: replicas live at a fixed place in an object, never inside a list.
 */
export function parseReplicasPath(path: string): string[] {
  let p = path.trim();
  if (p.startsWith('{') && p.endsWith('}')) p = p.slice(1, -1);
  if (p.startsWith('.')) p = p.slice(1);
  const parts = p.split('.');
  if (p === '' || parts.some((s) => s === '' || /[[\]{}*\s]/.test(s))) {
    throw new Error(`admission: replicas path ${JSON.stringify(path)} must be a field path such as ".spec.replicas"`);
  }
  return parts;
}

/** The value at path; undefined when any step is missing or not an object. */
export function valueAt(obj: unknown, path: readonly string[]): unknown {
  let cur: any = obj;
  for (const k of path) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

/**
 * Desired replicas of an object. An unset field counts as 1, what the workloads' defaulting gives (the upstream
 * answers with defaults applied, so only a CRD without defaulting ever leaves it unset); anything but a whole
 * number is "unknown" and not judged.
 */
export function objectReplicas(obj: unknown, path: readonly string[]): number | undefined {
  const v = valueAt(obj, path);
  if (v === undefined || v === null) return 1;
  return Number.isInteger(v) && (v as number) >= 0 ? (v as number) : undefined;
}

/** autoscaling/v1 Scale spec.replicas: omitempty, so unset means 0. */
export function scaleReplicas(scale: unknown): number | undefined {
  const v = valueAt(scale, ['spec', 'replicas']);
  if (v === undefined || v === null) return 0;
  return Number.isInteger(v) && (v as number) >= 0 ? (v as number) : undefined;
}

export interface ScaleDownViolation {
  /** 'zero': from above 0 to 0; 'step': more than the allowed share at once. */
  kind: 'zero' | 'step';
  before: number;
  after: number;
  /** The fewest replicas one change may leave from `before`. */
  floor: number;
}

/** The fewest replicas a single change may leave: at most maxReductionPercent of them go. */
export function scaleFloor(before: number, limit: Pick<ScaleLimit, 'maxReductionPercent' | 'allowScaleToZero'>): number {
  const mayRemove = Math.floor((before * limit.maxReductionPercent) / 100);
  const floor = before - mayRemove;
  return !limit.allowScaleToZero && before > 0 ? Math.max(1, floor) : floor;
}

/** Judges one change of replicas; undefined when it is allowed (growth, no change, or a small enough step). */
export function judgeScaleDown(before: number, after: number, limit: Pick<ScaleLimit, 'maxReductionPercent' | 'allowScaleToZero'>): ScaleDownViolation | undefined {
  if (after >= before) return undefined;
  const floor = scaleFloor(before, limit);
  if (after === 0 && !limit.allowScaleToZero) return { kind: 'zero', before, after, floor };
  if (after < floor) return { kind: 'step', before, after, floor };
  return undefined;
}

/** The protection label an object's labels carry, if any. */
export function protectionLabelOf(labels: unknown, protection: readonly ProtectionLabel[]): ProtectionLabel | undefined {
  if (labels === null || typeof labels !== 'object') return undefined;
  const l = labels as Record<string, unknown>;
  for (const p of protection) if (l[p.key] === p.value) return p;
  return undefined;
}
