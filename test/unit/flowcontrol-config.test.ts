// The flow control configuration directory: the shipped defaults, validation an operator can act on, all-or-nothing
// reloads, and the watcher that notices edits.

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultFlowControlDir, loadFlowControlDir, stableUID } from '../../src/flowcontrol/config.js';
import { defaultAndValidateFlowSchema, defaultAndValidatePriorityLevel } from '../../src/flowcontrol/validation.js';
import { newFlowControl, type FlowControl } from '../../src/flowcontrol/filter.js';
import { formatFieldError } from '../../src/api/status.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleetgate-fc-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const pl = (name: string, spec: string) => `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: ${name}
spec:
${spec}
`;

const fs = (name: string, plName: string, precedence: number) => `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: ${name}
spec:
  matchingPrecedence: ${precedence}
  priorityLevelConfiguration:
    name: ${plName}
  distinguisherMethod:
    type: ByUser
  rules:
    - subjects:
        - kind: User
          user:
            name: alice
      resourceRules:
        - verbs: ["list"]
          apiGroups: [""]
          resources: ["pods"]
          namespaces: ["*"]
`;

const limitedQueue = `  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse:
      type: Queue
      queuing:
        queues: 16
        handSize: 4
        queueLengthLimit: 10
`;

function errorsOf(r: { errors: Parameters<typeof formatFieldError>[0][] }): string[] {
  return r.errors.map(formatFieldError);
}

describe('the shipped defaults', () => {
  it('load, with the mandatory objects, the gateway levels and stable UIDs', async () => {
    const d = defaultFlowControlDir();
    expect(d.endsWith(join('config', 'flowcontrol'))).toBe(true);
    const objs = await loadFlowControlDir(d);
    expect(objs.priorityLevels.map((p) => p.metadata.name).sort()).toEqual(['catch-all', 'exempt', 'global-default', 'leader-election', 'workload-high', 'workload-low']);
    expect(objs.flowSchemas.map((f) => f.metadata.name).sort()).toEqual([
      'catch-all',
      'exempt',
      'global-default',
      'kube-system-service-accounts',
      'probes',
      'service-accounts',
      'workload-leader-election',
    ]);
    const exempt = objs.flowSchemas.find((f) => f.metadata.name === 'exempt')!;
    expect(exempt.metadata.uid).toBe(stableUID('FlowSchema/exempt'));
    expect(exempt.metadata.uid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const again = await loadFlowControlDir(d);
    expect(again.flowSchemas.map((f) => f.metadata.uid)).toEqual(objs.flowSchemas.map((f) => f.metadata.uid));
  });
});

describe('validation', () => {
  it('applies the v1 defaults', () => {
    const f = defaultAndValidateFlowSchema({ metadata: { name: 'x' }, spec: { priorityLevelConfiguration: { name: 'p' } } });
    expect(f.errors).toEqual([]);
    expect(f.value!.spec.matchingPrecedence).toBe(1000);
    expect(f.value!.spec.rules).toEqual([]);
    const p = defaultAndValidatePriorityLevel({ metadata: { name: 'p' }, spec: { type: 'Limited', limited: { limitResponse: { type: 'Queue' } } } });
    expect(p.errors).toEqual([]);
    expect(p.value!.spec.limited).toEqual({ nominalConcurrencyShares: 30, lendablePercent: 0, limitResponse: { type: 'Queue', queuing: { queues: 64, handSize: 8, queueLengthLimit: 50 } } });
  });

  it('names the field and the rule broken', () => {
    expect(
      errorsOf(
        defaultAndValidateFlowSchema({
          metadata: { name: 'x' },
          spec: {
            matchingPrecedence: 0,
            priorityLevelConfiguration: { name: '' },
            distinguisherMethod: { type: 'ByGroup' },
            rules: [
              { subjects: [], resourceRules: [] },
              { subjects: [{ kind: 'User' }], resourceRules: [{ verbs: ['*', 'get'], apiGroups: [''], resources: ['pods'] }] },
              { subjects: [{ kind: 'Group', group: { name: 'g' } }], nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['healthz', '/a*b'] }] },
            ],
          },
        }),
      ),
    ).toEqual([
      'spec.matchingPrecedence: Invalid value: 0: must be a positive value',
      'spec.distinguisherMethod.type: Unsupported value: "ByGroup": supported values: "ByNamespace", "ByUser"',
      'spec.priorityLevelConfiguration.name: Required value: must reference a priority level',
      'spec.rules[0].subjects: Required value: subjects must contain at least one value',
      'spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty',
      "spec.rules[1].subjects[0].user: Required value: user is required when subject kind is 'User'",
      `spec.rules[1].resourceRules[0].verbs: Invalid value: ["*","get"]: if '*' is present, must not specify other verbs`,
      'spec.rules[1].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace',
      'spec.rules[2].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "healthz": must start with slash',
      'spec.rules[2].nonResourceRules[0].nonResourceURLs[1]: Invalid value: "/a*b": wildcard can only be at the end',
    ]);
    expect(
      errorsOf(
        defaultAndValidatePriorityLevel({
          metadata: { name: 'p' },
          spec: { type: 'Limited', limited: { nominalConcurrencyShares: -1, lendablePercent: 101, limitResponse: { type: 'Queue', queuing: { queues: 4, handSize: 5 } } } },
        }),
      ),
    ).toEqual([
      'spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer',
      'spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive',
      'spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)',
    ]);
    expect(errorsOf(defaultAndValidatePriorityLevel({ metadata: { name: 'p' }, spec: { type: 'Limited', limited: { limitResponse: { type: 'Queue', queuing: { queues: 1024, handSize: 8 } } } } }))[0]).toContain(
      'required entropy bits of deckSize 1024 and handSize 8 should not be greater than 60',
    );
    expect(errorsOf(defaultAndValidatePriorityLevel({ metadata: { name: 'exempt' }, spec: { type: 'Limited', limited: { limitResponse: { type: 'Reject' } } } }))).toEqual([
      `spec.type: Invalid value: "Limited": type must be 'Exempt' if and only if name is 'exempt'`,
    ]);
  });
});

describe('loading a directory', () => {
  it('reads every YAML file, several documents per file and Lists', async () => {
    await writeFile(join(dir, 'a.yaml'), pl('p1', limitedQueue) + '---\n' + fs('f1', 'p1', 100));
    await writeFile(
      join(dir, 'b.yml'),
      `apiVersion: v1
kind: List
items:
- ${pl('p2', limitedQueue).replace(/\n/g, '\n  ').trimEnd()}
`,
    );
    await writeFile(join(dir, 'notes.txt'), 'not yaml: [');
    const objs = await loadFlowControlDir(dir);
    expect(objs.priorityLevels.map((p) => p.metadata.name)).toEqual(['p1', 'p2']);
    expect(objs.flowSchemas.map((f) => f.metadata.name)).toEqual(['f1']);
  });

  it('rejects the whole set, listing each problem with its file', async () => {
    await writeFile(join(dir, 'a.yaml'), pl('p1', limitedQueue) + '---\n' + pl('p1', limitedQueue));
    await writeFile(join(dir, 'b.yaml'), fs('f1', 'p1', 20000) + '---\napiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: FlowSchema\nmetadata: {name: old}\n');
    await writeFile(join(dir, 'c.yaml'), 'key: [unclosed\n');
    const err = await loadFlowControlDir(dir).then(
      () => undefined,
      (e: Error) => e.message,
    );
    expect(err).toBeDefined();
    const lines = err!.split('\n');
    expect(lines[0]).toBe(`${join(dir, 'a.yaml')}: PriorityLevelConfiguration "p1": also defined in ${join(dir, 'a.yaml')}`);
    expect(lines[1]).toBe(`${join(dir, 'b.yaml')}: FlowSchema "f1": spec.matchingPrecedence: Invalid value: 20000: must not be greater than 10000`);
    expect(lines[2]).toBe(`${join(dir, 'b.yaml')}: FlowSchema "old": apiVersion "flowcontrol.apiserver.k8s.io/v1beta3" is not supported, use flowcontrol.apiserver.k8s.io/v1`);
    expect(lines[3]).toMatch(new RegExp(`^${join(dir, 'c.yaml')}: document 1: `));
  });
});

describe('reloading', () => {
  let fc: FlowControl | undefined;
  afterEach(() => fc?.close());

  async function until(pred: () => boolean, ms = 5000): Promise<void> {
    const end = Date.now() + ms;
    while (!pred()) {
      if (Date.now() > end) throw new Error('condition not met in time');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('picks up edits, keeps the last good set when a file turns bad, and refuses to start on a bad one', async () => {
    const logs: any[] = [];
    const log = pino({ level: 'info' }, { write: (s: string) => logs.push(JSON.parse(s)) });
    await writeFile(join(dir, 'levels.yaml'), pl('p1', limitedQueue) + '---\n' + fs('f1', 'p1', 100));
    fc = await newFlowControl({ configDir: dir, registry: new Registry(), log, reloadIntervalMs: 100, maxRequestsInflight: 40, maxMutatingRequestsInflight: 20 });
    const ctl = fc.controller;
    // exempt + catch-all are imagined: 10 + 5 shares (exempt has 0) share 60 seats.
    expect([...ctl.levels.keys()].sort()).toEqual(['catch-all', 'exempt', 'p1']);
    expect(ctl.levels.get('p1')!.nominalCL).toBe(40);
    expect(ctl.levels.get('catch-all')!.nominalCL).toBe(20);
    expect(ctl.flows.map((f) => f.name)).toEqual(['exempt', 'f1', 'catch-all']);

    await writeFile(join(dir, 'levels.yaml'), pl('p1', limitedQueue.replace('nominalConcurrencyShares: 10', 'nominalConcurrencyShares: 25')) + '---\n' + fs('f1', 'p1', 100));
    await until(() => ctl.levels.get('p1')!.nominalCL === 50);
    const qsBefore = ctl.levels.get('p1')!.qs;

    await writeFile(join(dir, 'levels.yaml'), (await readFile(join(dir, 'levels.yaml'), 'utf8')).replace('handSize: 4', 'handSize: 40'));
    await until(() => logs.some((l) => l.msg === 'flow control configuration rejected; keeping the last good one'));
    const rejected = logs.find((l) => l.msg === 'flow control configuration rejected; keeping the last good one');
    expect(rejected.err).toContain('spec.limited.limitResponse.queuing.handSize: Invalid value: 40: should not be greater than queues (16)');
    expect(ctl.levels.get('p1')!.nominalCL).toBe(50);
    expect(ctl.levels.get('p1')!.qs).toBe(qsBefore);

    await writeFile(join(dir, 'more.yaml'), fs('f0', 'p1', 50) + '---\n' + fs('dangling', 'nope', 60));
    await until(() => ctl.flows.some((f) => f.name === 'f0') || logs.filter((l) => l.msg === 'flow control configuration rejected; keeping the last good one').length > 1);
    // levels.yaml is still bad, so nothing changed.
    expect(ctl.flows.map((f) => f.name)).toEqual(['exempt', 'f1', 'catch-all']);
    await writeFile(join(dir, 'levels.yaml'), pl('p1', limitedQueue) + '---\n' + fs('f1', 'p1', 100));
    await until(() => ctl.flows.some((f) => f.name === 'f0'));
    expect(ctl.flows.map((f) => f.name)).toEqual(['exempt', 'f0', 'f1', 'catch-all']);
    expect(ctl.levels.get('p1')!.qs).toBe(qsBefore);
    expect(logs.some((l) => l.msg === 'flow schemas ignored: their priority level does not exist' && l.flowSchemas[0] === 'dangling')).toBe(true);

    await expect(newFlowControl({ configDir: join(dir, 'missing'), registry: new Registry(), log })).rejects.toThrow(/flow control configuration in .*missing is invalid/);
  });
});
