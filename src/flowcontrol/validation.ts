// Defaulting and validation of FlowSchemas and PriorityLevelConfigurations as kube-apiserver applies them
// (k8s.io/api flowcontrol/v1 defaults, pkg/apis/flowcontrol/validation). The objects come from YAML files an
// operator edits, so every field is checked for shape too: a typo must be an error naming the field, not a
// request classified somewhere unexpected.

import { isValidPathSegmentName } from '../api/meta.js';
import {
  fieldForbidden,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  fieldTypeInvalid,
  type FieldError,
} from '../api/status.js';
import { NAME_EXEMPT, type FlowSchema, type PriorityLevelConfiguration } from './types.js';

const MAX_MATCHING_PRECEDENCE = 10000;
const DEFAULT_MATCHING_PRECEDENCE = 1000;
const DEFAULT_NOMINAL_CONCURRENCY_SHARES = 30;
const DEFAULT_QUEUES = 64;
const DEFAULT_HAND_SIZE = 8;
const DEFAULT_QUEUE_LENGTH_LIMIT = 50;
/** shufflesharding.ValidateParameters: a hand must be dealt from at most 60 bits of the flow's hash. */
const MAX_HASH_BITS = 60;

const DISTINGUISHER_METHODS = ['ByNamespace', 'ByUser'];
const SUBJECT_KINDS = ['Group', 'ServiceAccount', 'User'];
const PL_TYPES = ['Exempt', 'Limited'];
const LIMIT_RESPONSE_TYPES = ['Queue', 'Reject'];

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

function validateName(obj: Record<string, any>, errs: FieldError[]): void {
  const name = obj.metadata?.name;
  if (typeof name !== 'string' || name === '') {
    errs.push(fieldRequired('metadata.name', 'name or generateName is required'));
    return;
  }
  for (const msg of isValidPathSegmentName(name)) errs.push(fieldInvalid('metadata.name', name, msg));
}

/** A list of strings where the wildcard, if present, must be alone (ValidateFlowSchemaResourcePolicyRule). */
function validateWildcardList(list: unknown, field: string, wildcard: string, requiredMsg: string, what: string, errs: FieldError[]): void {
  if (list === undefined || list === null || (Array.isArray(list) && list.length === 0)) {
    errs.push(fieldRequired(field, requiredMsg));
    return;
  }
  if (!Array.isArray(list) || list.some((v) => typeof v !== 'string')) {
    errs.push(fieldTypeInvalid(field, list, 'must be a list of strings'));
    return;
  }
  if (list.length > 1 && list.includes(wildcard)) errs.push(fieldInvalid(field, list, `if '${wildcard}' is present, must not specify other ${what}`));
}

function validateSubject(s: unknown, field: string, errs: FieldError[]): void {
  if (!isObject(s)) {
    errs.push(fieldTypeInvalid(field, s, 'must be an object'));
    return;
  }
  switch (s.kind) {
    case 'User':
      if (!isObject(s.user)) errs.push(fieldRequired(`${field}.user`, "user is required when subject kind is 'User'"));
      else if (typeof s.user.name !== 'string' || s.user.name === '') errs.push(fieldRequired(`${field}.user.name`, 'username is required'));
      if (s.group !== undefined) errs.push(fieldForbidden(`${field}.group`, "group is forbidden when subject kind is not 'Group'"));
      if (s.serviceAccount !== undefined) errs.push(fieldForbidden(`${field}.serviceAccount`, "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"));
      return;
    case 'Group':
      if (!isObject(s.group)) errs.push(fieldRequired(`${field}.group`, "group is required when subject kind is 'Group'"));
      else if (typeof s.group.name !== 'string' || s.group.name === '') errs.push(fieldRequired(`${field}.group.name`, 'name is required'));
      if (s.user !== undefined) errs.push(fieldForbidden(`${field}.user`, "user is forbidden when subject kind is not 'User'"));
      if (s.serviceAccount !== undefined) errs.push(fieldForbidden(`${field}.serviceAccount`, "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"));
      return;
    case 'ServiceAccount':
      if (!isObject(s.serviceAccount)) {
        errs.push(fieldRequired(`${field}.serviceAccount`, "serviceAccount is required when subject kind is 'ServiceAccount'"));
      } else {
        if (typeof s.serviceAccount.name !== 'string' || s.serviceAccount.name === '') errs.push(fieldRequired(`${field}.serviceAccount.name`, 'name is required'));
        if (typeof s.serviceAccount.namespace !== 'string' || s.serviceAccount.namespace === '') errs.push(fieldRequired(`${field}.serviceAccount.namespace`, 'namespace is required'));
      }
      if (s.user !== undefined) errs.push(fieldForbidden(`${field}.user`, "user is forbidden when subject kind is not 'User'"));
      if (s.group !== undefined) errs.push(fieldForbidden(`${field}.group`, "group is forbidden when subject kind is not 'Group'"));
      return;
    default:
      errs.push(fieldNotSupported(`${field}.kind`, s.kind, SUBJECT_KINDS));
  }
}

function validateResourceRule(r: unknown, field: string, errs: FieldError[]): void {
  if (!isObject(r)) {
    errs.push(fieldTypeInvalid(field, r, 'must be an object'));
    return;
  }
  validateWildcardList(r.verbs, `${field}.verbs`, '*', 'verbs must contain at least one value', 'verbs', errs);
  validateWildcardList(r.apiGroups, `${field}.apiGroups`, '*', 'resource rules must supply at least one api group', 'api groups', errs);
  validateWildcardList(r.resources, `${field}.resources`, '*', 'resource rules must supply at least one resource', 'resources', errs);
  if (r.clusterScope !== undefined && typeof r.clusterScope !== 'boolean') errs.push(fieldTypeInvalid(`${field}.clusterScope`, r.clusterScope, 'must be a boolean'));
  const ns = r.namespaces;
  if (ns === undefined || ns === null || (Array.isArray(ns) && ns.length === 0)) {
    if (r.clusterScope !== true) errs.push(fieldRequired(`${field}.namespaces`, 'resource rules that are not cluster scoped must supply at least one namespace'));
  } else {
    validateWildcardList(ns, `${field}.namespaces`, '*', '', 'namespaces', errs);
  }
}

function validateNonResourceRule(r: unknown, field: string, errs: FieldError[]): void {
  if (!isObject(r)) {
    errs.push(fieldTypeInvalid(field, r, 'must be an object'));
    return;
  }
  validateWildcardList(r.verbs, `${field}.verbs`, '*', 'verbs must contain at least one value', 'verbs', errs);
  const before = errs.length;
  validateWildcardList(r.nonResourceURLs, `${field}.nonResourceURLs`, '*', 'nonResourceURLs must contain at least one value', 'non-resource URLs', errs);
  if (errs.length > before) return;
  (r.nonResourceURLs as string[]).forEach((u, i) => {
    if (u === '*') return;
    const f = `${field}.nonResourceURLs[${i}]`;
    if (!u.startsWith('/')) errs.push(fieldInvalid(f, u, 'must start with slash'));
    else if (u.indexOf('*') >= 0 && u.indexOf('*') !== u.length - 1) errs.push(fieldInvalid(f, u, 'wildcard can only be at the end'));
  });
}

function validateRules(rules: unknown, errs: FieldError[]): void {
  if (rules === undefined || rules === null) return;
  if (!Array.isArray(rules)) {
    errs.push(fieldTypeInvalid('spec.rules', rules, 'must be a list'));
    return;
  }
  rules.forEach((rule, i) => {
    const f = `spec.rules[${i}]`;
    if (!isObject(rule)) {
      errs.push(fieldTypeInvalid(f, rule, 'must be an object'));
      return;
    }
    if (!Array.isArray(rule.subjects) || rule.subjects.length === 0) errs.push(fieldRequired(`${f}.subjects`, 'subjects must contain at least one value'));
    else rule.subjects.forEach((s: unknown, j: number) => validateSubject(s, `${f}.subjects[${j}]`, errs));
    const rr = rule.resourceRules ?? [];
    const nr = rule.nonResourceRules ?? [];
    if (!Array.isArray(rr)) errs.push(fieldTypeInvalid(`${f}.resourceRules`, rr, 'must be a list'));
    if (!Array.isArray(nr)) errs.push(fieldTypeInvalid(`${f}.nonResourceRules`, nr, 'must be a list'));
    if (!Array.isArray(rr) || !Array.isArray(nr)) return;
    if (rr.length === 0 && nr.length === 0) errs.push(fieldRequired(f, 'at least one of resourceRules and nonResourceRules has to be non-empty'));
    rr.forEach((r: unknown, j: number) => validateResourceRule(r, `${f}.resourceRules[${j}]`, errs));
    nr.forEach((r: unknown, j: number) => validateNonResourceRule(r, `${f}.nonResourceRules[${j}]`, errs));
  });
}

/** Applies v1 defaults to a copy of obj and validates it; the copy is returned when there are no errors. */
export function defaultAndValidateFlowSchema(obj: unknown): { value?: FlowSchema; errors: FieldError[] } {
  const errs: FieldError[] = [];
  if (!isObject(obj)) return { errors: [fieldTypeInvalid('', obj, 'must be an object')] };
  const fs = structuredClone(obj);
  validateName(fs, errs);
  if (!isObject(fs.spec)) return { errors: [...errs, fieldRequired('spec', '')] };
  const spec = fs.spec;
  spec.matchingPrecedence ??= DEFAULT_MATCHING_PRECEDENCE;
  if (!isInt(spec.matchingPrecedence)) errs.push(fieldTypeInvalid('spec.matchingPrecedence', spec.matchingPrecedence, 'must be an integer'));
  else if (spec.matchingPrecedence <= 0) errs.push(fieldInvalid('spec.matchingPrecedence', spec.matchingPrecedence, 'must be a positive value'));
  else if (spec.matchingPrecedence > MAX_MATCHING_PRECEDENCE) errs.push(fieldInvalid('spec.matchingPrecedence', spec.matchingPrecedence, `must not be greater than ${MAX_MATCHING_PRECEDENCE}`));
  if (spec.distinguisherMethod !== undefined && spec.distinguisherMethod !== null) {
    if (!isObject(spec.distinguisherMethod) || !DISTINGUISHER_METHODS.includes(spec.distinguisherMethod.type)) {
      errs.push(fieldNotSupported('spec.distinguisherMethod.type', spec.distinguisherMethod?.type, DISTINGUISHER_METHODS));
    }
  } else {
    delete spec.distinguisherMethod;
  }
  const plName = spec.priorityLevelConfiguration?.name;
  if (typeof plName !== 'string' || plName === '') errs.push(fieldRequired('spec.priorityLevelConfiguration.name', 'must reference a priority level'));
  else for (const msg of isValidPathSegmentName(plName)) errs.push(fieldInvalid('spec.priorityLevelConfiguration.name', plName, msg));
  validateRules(spec.rules, errs);
  spec.rules ??= [];
  return errs.length ? { errors: errs } : { value: fs as FlowSchema, errors: [] };
}

function validateShares(cfg: Record<string, any>, field: string, defaultShares: number, errs: FieldError[]): void {
  cfg.nominalConcurrencyShares ??= defaultShares;
  if (!isInt(cfg.nominalConcurrencyShares)) errs.push(fieldTypeInvalid(`${field}.nominalConcurrencyShares`, cfg.nominalConcurrencyShares, 'must be an integer'));
  else if (cfg.nominalConcurrencyShares < 0) errs.push(fieldInvalid(`${field}.nominalConcurrencyShares`, cfg.nominalConcurrencyShares, 'must be a non-negative integer'));
  cfg.lendablePercent ??= 0;
  if (!isInt(cfg.lendablePercent) || cfg.lendablePercent < 0 || cfg.lendablePercent > 100) {
    errs.push(fieldInvalid(`${field}.lendablePercent`, cfg.lendablePercent, 'must be between 0 and 100, inclusive'));
  }
}

function validateQueuing(q: Record<string, any>, field: string, errs: FieldError[]): void {
  if (!q.queues) q.queues = DEFAULT_QUEUES;
  if (!q.handSize) q.handSize = DEFAULT_HAND_SIZE;
  if (!q.queueLengthLimit) q.queueLengthLimit = DEFAULT_QUEUE_LENGTH_LIMIT;
  let ok = true;
  for (const k of ['queueLengthLimit', 'queues', 'handSize']) {
    if (!isInt(q[k]) || q[k] <= 0) {
      errs.push(fieldInvalid(`${field}.${k}`, q[k], 'must be positive'));
      ok = false;
    }
  }
  if (!ok) return;
  if (q.handSize > q.queues) {
    errs.push(fieldInvalid(`${field}.handSize`, q.handSize, `should not be greater than queues (${q.queues})`));
  } else if (Math.log2(q.queues) * q.handSize > MAX_HASH_BITS) {
    errs.push(fieldInvalid(field, q, `required entropy bits of deckSize ${q.queues} and handSize ${q.handSize} should not be greater than ${MAX_HASH_BITS}`));
  }
}

/** Applies v1 defaults to a copy of obj and validates it; the copy is returned when there are no errors. */
export function defaultAndValidatePriorityLevel(obj: unknown): { value?: PriorityLevelConfiguration; errors: FieldError[] } {
  const errs: FieldError[] = [];
  if (!isObject(obj)) return { errors: [fieldTypeInvalid('', obj, 'must be an object')] };
  const pl = structuredClone(obj);
  validateName(pl, errs);
  if (!isObject(pl.spec)) return { errors: [...errs, fieldRequired('spec', '')] };
  const spec = pl.spec;
  if (!PL_TYPES.includes(spec.type)) {
    errs.push(fieldNotSupported('spec.type', spec.type, PL_TYPES));
    return { errors: errs };
  }
  if ((spec.type === 'Exempt') !== (pl.metadata?.name === NAME_EXEMPT)) errs.push(fieldInvalid('spec.type', spec.type, "type must be 'Exempt' if and only if name is 'exempt'"));
  if (spec.type === 'Exempt') {
    if (spec.limited !== undefined && spec.limited !== null) errs.push(fieldForbidden('spec.limited', 'must be nil if the type is not Limited'));
    if (spec.exempt === undefined || spec.exempt === null) spec.exempt = {};
    if (!isObject(spec.exempt)) errs.push(fieldTypeInvalid('spec.exempt', spec.exempt, 'must be an object'));
    else validateShares(spec.exempt, 'spec.exempt', 0, errs);
    return errs.length ? { errors: errs } : { value: pl as PriorityLevelConfiguration, errors: [] };
  }
  if (spec.exempt !== undefined && spec.exempt !== null) errs.push(fieldForbidden('spec.exempt', 'must be nil if the type is Limited'));
  if (!isObject(spec.limited)) {
    errs.push(fieldRequired('spec.limited', 'must not be empty when type is Limited'));
    return { errors: errs };
  }
  const limited = spec.limited;
  validateShares(limited, 'spec.limited', DEFAULT_NOMINAL_CONCURRENCY_SHARES, errs);
  if (limited.borrowingLimitPercent !== undefined && limited.borrowingLimitPercent !== null) {
    if (!isInt(limited.borrowingLimitPercent) || limited.borrowingLimitPercent < 0) {
      errs.push(fieldInvalid('spec.limited.borrowingLimitPercent', limited.borrowingLimitPercent, 'if specified, must be a non-negative integer'));
    }
  }
  const lr = limited.limitResponse;
  if (!isObject(lr) || !LIMIT_RESPONSE_TYPES.includes(lr.type)) {
    errs.push(fieldNotSupported('spec.limited.limitResponse.type', isObject(lr) ? lr.type : undefined, LIMIT_RESPONSE_TYPES));
  } else if (lr.type === 'Queue') {
    if (lr.queuing === undefined || lr.queuing === null) lr.queuing = {};
    if (!isObject(lr.queuing)) errs.push(fieldTypeInvalid('spec.limited.limitResponse.queuing', lr.queuing, 'must be an object'));
    else validateQueuing(lr.queuing, 'spec.limited.limitResponse.queuing', errs);
  } else if (lr.queuing !== undefined && lr.queuing !== null) {
    errs.push(fieldForbidden('spec.limited.limitResponse.queuing', 'must be nil if limited.limitResponse.type is not Limited'));
  }
  return errs.length ? { errors: errs } : { value: pl as PriorityLevelConfiguration, errors: [] };
}
