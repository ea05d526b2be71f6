import { describe, expect, it } from 'vitest';
import {
  compileRules,
  defaultAdmissionRules,
  judgeScaleDown,
  objectReplicas,
  parseReplicasPath,
  protectionLabelOf,
  scaleFloor,
  scaleLimitFor,
  scaleReplicas,
} from '../../src/admission/rules.js';
import { breakGlassHint, refusal } from '../../src/admission/finding.js';

const half = { maxReductionPercent: 50, allowScaleToZero: false };

describe('judgeScaleDown (default: at most half at once, never to 0)', () => {
  it('from 10: 6 and 5 are allowed, 4, 1 and 0 are not', () => {
    expect(judgeScaleDown(10, 6, half)).toBeUndefined();
    expect(judgeScaleDown(10, 5, half)).toBeUndefined();
    expect(judgeScaleDown(10, 4, half)).toEqual({ kind: 'step', before: 10, after: 4, floor: 5 });
    expect(judgeScaleDown(10, 1, half)).toEqual({ kind: 'step', before: 10, after: 1, floor: 5 });
    expect(judgeScaleDown(10, 0, half)).toEqual({ kind: 'zero', before: 10, after: 0, floor: 5 });
  });

  it('growth and no change are never judged', () => {
    expect(judgeScaleDown(0, 0, half)).toBeUndefined();
    expect(judgeScaleDown(0, 50, half)).toBeUndefined();
    expect(judgeScaleDown(3, 3, half)).toBeUndefined();
  });

  it('odd counts round the allowed removal down', () => {
    // 3 -> half is 1.5: one replica may go.
    expect(judgeScaleDown(3, 2, half)).toBeUndefined();
    expect(judgeScaleDown(3, 1, half)?.kind).toBe('step');
    expect(judgeScaleDown(2, 1, half)).toBeUndefined();
    expect(judgeScaleDown(1, 0, half)?.kind).toBe('zero');
  });

  it('honours other percentages and allowScaleToZero', () => {
    expect(judgeScaleDown(10, 8, { maxReductionPercent: 20, allowScaleToZero: false })).toBeUndefined();
    expect(judgeScaleDown(10, 7, { maxReductionPercent: 20, allowScaleToZero: false })?.floor).toBe(8);
    expect(judgeScaleDown(10, 0, { maxReductionPercent: 100, allowScaleToZero: true })).toBeUndefined();
    expect(judgeScaleDown(10, 0, { maxReductionPercent: 100, allowScaleToZero: false })?.kind).toBe('zero');
    expect(judgeScaleDown(2, 0, { maxReductionPercent: 50, allowScaleToZero: true })?.kind).toBe('step');
  });

  it('scaleFloor never suggests 0 when 0 is not allowed', () => {
    expect(scaleFloor(1, half)).toBe(1);
    expect(scaleFloor(10, { maxReductionPercent: 100, allowScaleToZero: false })).toBe(1);
    expect(scaleFloor(10, { maxReductionPercent: 100, allowScaleToZero: true })).toBe(0);
  });
});

describe('replicas paths', () => {
  it('accepts CRD and kubectl spellings', () => {
    expect(parseReplicasPath('.spec.replicas')).toEqual(['spec', 'replicas']);
    expect(parseReplicasPath('spec.replicas')).toEqual(['spec', 'replicas']);
    expect(parseReplicasPath('{.spec.size}')).toEqual(['spec', 'size']);
  });

  it('refuses array indexes, wildcards and empty steps', () => {
    for (const p of ['', '.', '.spec..replicas', '.spec.items[0].replicas', '.spec.*', 'spec replicas']) {
      expect(() => parseReplicasPath(p), p).toThrow(/must be a field path/);
    }
  });

  it('reads replicas: unset object replicas count as 1, unset Scale replicas as 0, non-numbers are unknown', () => {
    const path = ['spec', 'replicas'];
    expect(objectReplicas({ spec: { replicas: 7 } }, path)).toBe(7);
    expect(objectReplicas({ spec: {} }, path)).toBe(1);
    expect(objectReplicas({ spec: { replicas: '7' } }, path)).toBeUndefined();
    expect(objectReplicas({ spec: { replicas: -1 } }, path)).toBeUndefined();
    expect(scaleReplicas({ spec: {} })).toBe(0);
    expect(scaleReplicas({ spec: { replicas: 3 } })).toBe(3);
  });
});

describe('compileRules', () => {
  it('indexes the default workloads by group and resource, any version', () => {
    const c = compileRules(defaultAdmissionRules());
    for (const [g, r] of [['apps', 'deployments'], ['apps', 'statefulsets'], ['apps.kruise.io', 'clonesets'], ['apps.kruise.io', 'statefulsets']]) {
      expect(scaleLimitFor(c, g!, r!), `${r}.${g}`).toMatchObject({ replicasPath: ['spec', 'replicas'], maxReductionPercent: 50, allowScaleToZero: false });
    }
    expect(scaleLimitFor(c, 'apps', 'replicasets')).toBeUndefined();
    expect(scaleLimitFor(c, '', 'deployments')).toBeUndefined();
  });

  it('takes per-resource overrides and CRDs with their own replicas path', () => {
    const rules = defaultAdmissionRules();
    rules.scaleDown.resources.push({ group: 'example.com', resource: 'widgets', replicasPath: '.spec.size', maxReductionPercent: 25, allowScaleToZero: true });
    const c = compileRules(rules);
    expect(scaleLimitFor(c, 'example.com', 'widgets')).toMatchObject({ replicasPath: ['spec', 'size'], maxReductionPercent: 25, allowScaleToZero: true });
  });

  it('refuses bad percentages and paths at start', () => {
    const r1 = defaultAdmissionRules();
    r1.scaleDown.maxReductionPercent = 150;
    expect(() => compileRules(r1)).toThrow(/0 to 100/);
    const r2 = defaultAdmissionRules();
    r2.scaleDown.resources = [{ group: 'x', resource: 'y', replicasPath: '.spec[0]' }];
    expect(() => compileRules(r2)).toThrow(/field path/);
  });

  it('disabled scale-down protection guards nothing', () => {
    const rules = defaultAdmissionRules();
    rules.scaleDown.enabled = false;
    expect(scaleLimitFor(compileRules(rules), 'apps', 'deployments')).toBeUndefined();
  });
});

describe('protection labels', () => {
  const labels = defaultAdmissionRules().deletionProtection.labels;
  it('matches either label, only with the value Always', () => {
    expect(protectionLabelOf({ 'fleetgate.io/deletion-protection': 'Always' }, labels)?.key).toBe('fleetgate.io/deletion-protection');
    expect(protectionLabelOf({ 'resourcetemplate.karmada.io/deletion-protected': 'Always' }, labels)?.key).toBe('resourcetemplate.karmada.io/deletion-protected');
    expect(protectionLabelOf({ 'fleetgate.io/deletion-protection': 'always' }, labels)).toBeUndefined();
    expect(protectionLabelOf({ 'fleetgate.io/deletion-protection': '' }, labels)).toBeUndefined();
    expect(protectionLabelOf(undefined, labels)).toBeUndefined();
  });
});

describe('refusals', () => {
  it('are 403 Forbidden in the admission form, naming the rule, the way out and the break-glass group', () => {
    const s = refusal(
      { rule: 'deletion-protection', resource: { group: 'apps', resource: 'deployments' }, name: 'web', reason: 'deletion protection: it is labelled a=Always', remedy: 'remove the label first' },
      ['fleet-admins'],
    ).status;
    expect(s).toMatchObject({ code: 403, reason: 'Forbidden', details: { name: 'web', group: 'apps', kind: 'deployments' } });
    expect(s.message).toBe('deployments.apps "web" is forbidden: deletion protection: it is labelled a=Always; remove the label first, or ask a member of the break-glass group "fleet-admins"');
  });

  it('collections have no name; the hint lists several groups and disappears with none', () => {
    const s = refusal({ rule: 'deletion-protection', resource: { group: '', resource: 'configmaps' }, name: '', reason: 'r', remedy: 'x' }, []).status;
    expect(s.message).toBe('configmaps is forbidden: r; x');
    expect(breakGlassHint(['a', 'b'])).toBe(', or ask a member of a break-glass group ("a", "b")');
  });
});
